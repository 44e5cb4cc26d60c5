"""``gpumem report``: one self-contained HTML page of one or more runs.

The page (``OUT/index.html``) reads top-down: a one-screen summary (devices, pass / undecided /
fail counts against the expected values, the headline numbers), then each experiment's
figures (PNG and SVG files beside it: latency ladder, chases of the structure searches,
bandwidth heatmaps, ILP sweep, cp.async, bank conflicts) with its own findings table under
them, and the devices' provenance last. Modules:

* :mod:`~gpumem.report.runs` reads run directories into series (one per device and run);
* :mod:`~gpumem.report.provenance` says what was measured on what, and throttled points;
* :mod:`~gpumem.figures.draw` holds the drawing helpers (matplotlib, Agg, no pyplot);
* :mod:`~gpumem.report.sections` says which figure goes where, and notes what is missing;
* :mod:`~gpumem.report.page` writes the HTML.

The report knows no experiment: what the page shows comes from the registered experiments'
``presentation()`` (:mod:`gpumem.contracts.presentation`): sections, figures, and the order of both.
The caller passes the registry in (``gpumem report`` passes the CLI's plugin set).

Ownership: the report writes only its own files into ``OUT`` (``index.html``, the figures,
and :data:`MANIFEST`, the list of the files it wrote with the SHA-256 of each) and never
deletes a folder. Run again on the same ``OUT`` it replaces its own files in place and
removes a file its previous list names, and this run no longer writes, only if it is still
what that report wrote: a name the report gives its files (``index.html``, ``NAME.png``,
``NAME.svg``), a regular file, with the SHA-256 recorded for it. A list planted or edited by
hand therefore removes nothing of the user's. Anything else in ``OUT`` is left alone. A
non-empty ``OUT`` that holds no gpumem report is refused (exit 2). A write that fails (a full
disk) is one line naming the file and the cause, exit 1. The figures and the page
are drawn into a hidden scratch folder inside ``OUT`` first and renamed into place file by
file (figures first, the page last), so a failed report leaves the previous page, and a
symlink planted at an output's name is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpumem import __version__
from gpumem.contracts.errors import UsageError
from gpumem.report.page import render
from gpumem.report.runs import load_runs
from gpumem.report.sections import _NAME, build_sections, page_sections
from gpumem.results.store import sha256_file
from gpumem.safe_write import WriteFailed, os_cause, replace_file, write_text

INDEX = "index.html"
#: The files the last report wrote into OUT, one name a line after a header that records the
#: SHA-256 of each: what a rerun may replace/remove.
MANIFEST = ".gpumem-report"
_HEADER = "# files written by gpumem report (replaced by the next)"
_SUMS = "; SHA-256 of each: "
_GENERATOR = b'<meta name="generator" content="gpumem'


def _regular(path: Path) -> bool:
    """``path`` is a regular file itself (a symlink never counts as the report's own)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _recorded(out: Path) -> dict[str, str | None] | None:
    """The names the previous report recorded in ``OUT/MANIFEST``, each with its recorded
    SHA-256 (None: none recorded, an older report or a hand-made line); None without a list.
    Only plain names inside ``OUT`` count, so an edited list cannot point anywhere else."""
    if not _regular(out / MANIFEST):
        return None
    try:
        lines = (out / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    sums: dict = {}
    if lines and _SUMS in lines[0]:
        try:
            sums = json.loads(lines[0].split(_SUMS, 1)[1])
        except ValueError:
            sums = {}
        sums = sums if isinstance(sums, dict) else {}
    return {n: (sums[n] if isinstance(sums.get(n), str) else None) for n in lines[1:]
            if n and n == Path(n).name and not n.startswith(".")}


def listing(out: Path) -> dict[str, str | None]:
    """The files the report in ``out`` wrote, name -> recorded SHA-256 (empty: no report)."""
    return _recorded(Path(out)) or {}


def write_listing(out: Path, files: Mapping[str, str | None]) -> None:
    """Write ``OUT/MANIFEST``: ``files`` (name -> SHA-256), one name a line, the checksums in
    the header line (the names stay one a line for people and scripts)."""
    sums = {n: h for n, h in files.items() if h}
    write_text(Path(out) / MANIFEST, _HEADER + _SUMS + json.dumps(sums, sort_keys=True) + "\n"
               + "".join(f"{n}\n" for n in files))


def _own_output(out: Path, name: str, sha: str | None) -> bool:
    """Whether ``OUT/name`` is a file an earlier report wrote and nobody changed since: a
    name the report gives its files, a regular file, its recorded SHA-256. A planted list
    (no checksums, or the user's file's name) makes nothing removable."""
    stem, dot, ext = name.rpartition(".")
    if not sha or not (name == INDEX or (dot and ext in ("png", "svg") and _NAME.match(stem))):
        return False
    if not _regular(out / name):
        return False
    try:
        return sha256_file(out / name) == sha
    except OSError:
        return False


def _is_report(out: Path) -> bool:
    """``out`` holds a gpumem report: a manifest, or (an older report) a page gpumem wrote."""
    if _recorded(out) is not None:
        return True
    if not _regular(out / INDEX):
        return False
    try:
        with open(out / INDEX, "rb") as f:
            return _GENERATOR in f.read(4096)
    except OSError:
        return False


def check_out(out: Path) -> None:
    """Raise UsageError unless ``out`` can become the report folder (creating nothing).

    An existing folder is written into only when it is empty or holds a gpumem report
    already, so a mistyped ``--out`` never touches someone's files (not even their own
    ``index.html``)."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"--out {out}: exists and is not a directory")
        if any(out.iterdir()) and not _is_report(out):
            raise UsageError(f"--out {out}: exists, is not empty and holds no gpumem report "
                             f"({INDEX} written by gpumem); choose another folder")
    elif out.is_symlink():
        raise UsageError(f"--out {out}: is a dangling symlink")
    parent = out.resolve().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: cannot create it ({parent} is not a writable directory)")


def build_report(targets: Sequence[Path], out: Path,
                 experiments: Mapping[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None) -> Path:
    """Write the report of the run directories ``targets`` to ``out``; returns the page.

    ``experiments``: the registered experiments (``Plugins.experiments()``), whose
    presentations make the page's sections; without them every finding is listed under
    "other findings". ``warn`` (default: stderr) hears of a presentation left out."""
    out = Path(out)
    check_out(out)
    specs = page_sections(experiments or {}, warn)
    order = [e for spec in specs for e in spec.experiments]
    series = load_runs([Path(t) for t in targets], order)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create it: {e.strerror or e}") from None
    previous = _recorded(out) or {}
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".gpumem-report-", suffix=".tmp", dir=out))
    except OSError as e:
        raise _write_failed(out, out, e) from None
    try:
        sections = build_sections(series, tmp, specs)
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        page = render(series, sections, __version__, generated)
        try:
            (tmp / INDEX).write_text(page, encoding="utf-8")
        except OSError as e:  # a failed write() names no file
            raise OSError(e.errno, e.strerror or str(e), str(tmp / INDEX)) from None
        names = sorted(p.name for p in tmp.iterdir() if p.is_file() and p.name != INDEX)
        names.append(INDEX)
        sums = {name: sha256_file(tmp / name) for name in names}
        for name in names:  # refuse before moving anything: a folder where a file goes
            if (out / name).is_dir() and not (out / name).is_symlink():
                raise UsageError(f"--out {out}: {name} is a directory; the report writes a "
                                 f"file there")
        for name in names:
            replace_file(tmp / name, out / name)
        write_listing(out, sums)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if still empty
        if isinstance(e, OSError):
            raise _write_failed(out, tmp, e) from None
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    for name, sha in previous.items():  # the previous report's own files this one lacks
        if name not in sums and _own_output(out, name, sha):
            with contextlib.suppress(OSError):
                (out / name).unlink()
    return out / INDEX


def _write_failed(out: Path, scratch: Path, e: OSError) -> WriteFailed:
    """One line for a write that failed (a full disk): the file as it would be named in
    ``out`` (not the scratch folder it was drawn in) and the cause."""
    where = Path(e.filename) if isinstance(e.filename, (str, os.PathLike)) else out
    if where.parent == scratch:
        where = out / where.name
    return WriteFailed(f"cannot write {where}: {os_cause(e)}; no report written "
                            f"({out} is as it was)")
