"""Check the results files of a run directory against what its manifest recorded.

A results file that is deleted, truncated, or altered by one flipped byte may still open,
and may then hold NaN where numbers were: only the checksum the manifest recorded when the
file was written tells. So every command that reads a run (``gpumem show``, ``compare``,
``analyze``, ``report``) verifies first and names what is damaged, instead of silently
dropping or showing it.

Checked: every entry whose status is ``complete`` or ``failed`` and that names a file (the
entries those commands read). For each: the file exists, its size equals the recorded one
(where the manifest records one: ``size`` or ``bytes``), its SHA-256 equals ``sha256``, and,
for an entry without a recorded checksum, that it opens at all. A ``file`` that leads out of
the run directory (``../``, an absolute path, a symlink) is damage too: a manifest is data,
and what it names is read only inside the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpumem.contracts.errors import ResultsFileError
from gpumem.results.io import open_raw
from gpumem.results.store import MANIFEST, OutsideRun, RunStore, file_of, sha256_file

#: Entry statuses whose file the reading commands use.
CHECKED = ("complete", "failed")
#: What can be wrong with an entry's file.
REASONS = ("missing", "size", "checksum", "unreadable", "outside")
_SIZE_KEYS = ("size", "bytes")


@dataclass(frozen=True)
class Damage:
    """One damaged manifest entry: its key, its file and why (one of :data:`REASONS`)."""

    key: str
    path: Path
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}: {self.detail} (entry {self.key})"

    def as_dict(self) -> dict[str, str]:
        return {"entry": self.key, "file": str(self.path), "reason": self.reason,
                "detail": self.detail}


def verify_entry(root: Path, key: str, data: Any) -> Damage | None:
    """The damage of one manifest entry of the run directory ``root``, or ``None`` (intact,
    or an entry that names no file to check)."""
    if not isinstance(data, dict) or data.get("status") not in CHECKED or not data.get("file"):
        return None
    path = Path(root) / str(data["file"])
    try:
        path = file_of(root, data["file"])  # the one way to an entry's file
    except OutsideRun:
        return Damage(key, path, "outside", "the manifest names a file outside the run "
                      "directory; it is not read")
    except ResultsFileError as e:  # not a name (RunStore.read refuses such a manifest)
        return Damage(key, path, "unreadable", str(e))
    try:
        if not path.is_file():
            return Damage(key, path, "missing", "the results file is gone")
        size = next((data[k] for k in _SIZE_KEYS if isinstance(data.get(k), int)), None)
        actual = path.stat().st_size
        if size is not None and actual != size:
            return Damage(key, path, "size", f"{actual} bytes, the manifest recorded {size}")
        want = data.get("sha256")
        if want:
            if sha256_file(path) != want:
                return Damage(key, path, "checksum",
                              f"SHA-256 differs from the manifest's ({actual} bytes): the "
                              f"file changed after it was written")
            return None
    except OSError as e:
        return Damage(key, path, "unreadable", f"{type(e).__name__}: {e.strerror or e}")
    try:
        open_raw(path)  # no checksum recorded: at least it must open
    except ResultsFileError as e:
        return Damage(key, path, "unreadable", str(e).removeprefix(f"{path}: "))
    return None


def verify_run(root: Path) -> list[Damage]:
    """Every damaged entry of the run directory ``root`` (ResultsFileError if its manifest
    cannot be read)."""
    manifest = RunStore(Path(root)).read()
    entries = manifest.get("entries", {})
    if not isinstance(entries, dict):
        raise ResultsFileError(f"{Path(root) / MANIFEST}: not a gpumem run manifest")
    return [d for key, data in sorted(entries.items())
            if (d := verify_entry(Path(root), key, data)) is not None]


def owning_run(path: Path) -> Path | None:
    """The run directory a results file lies in (``RUN/<device>/<file>.nc``), or ``None``."""
    root = Path(path).resolve().parent.parent
    return root if (root / MANIFEST).is_file() else None


def verify_file(path: Path) -> list[Damage]:
    """The damage of the manifest entries that name the results file ``path`` (none for a
    file that is in no run directory: nothing was recorded to check it against)."""
    root = owning_run(path)
    if root is None:
        return []
    target = Path(path).resolve()
    entries = RunStore(root).read().get("entries", {})
    if not isinstance(entries, dict):
        return []
    return [d for key, data in sorted(entries.items())
            if isinstance(data, dict) and isinstance(data.get("file"), str) and data["file"]
            and _names(root, data["file"], target)
            and (d := verify_entry(root, key, data)) is not None]


def _names(root: Path, name: str, target: Path) -> bool:
    """Whether the manifest name ``name`` of run ``root`` leads to the file ``target``."""
    try:
        return (root / name).resolve() == target
    except (OSError, RuntimeError, ValueError):
        return False


def verify_target(target: Path) -> list[Damage]:
    """What a reading command should check for ``target``: a run directory (one with a
    manifest) or a results file; nothing for a manifest file named alone
    (:mod:`gpumem.results.kept`) or anything else (the command's own error)."""
    from gpumem.results.kept import is_manifest_file

    target = Path(target)
    if is_manifest_file(target):
        return []  # a run kept as its manifest: the findings it records, checked as read
    if target.is_dir():
        return verify_run(target) if (target / MANIFEST).is_file() else []
    if target.is_file():
        return verify_file(target)
    return []
