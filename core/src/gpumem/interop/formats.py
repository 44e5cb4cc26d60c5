"""File formats other tools speak: what ``gpumem import FORMAT`` reads and ``gpumem export
FORMAT`` writes.

A format is contributed by a plugin (hook ``gpumem_register_formats``), so the accelsim plugin
owns Accel-Sim's config files and core owns none of them. An import turns another tool's file
into something gpumem runs or compares (a simulator config, a run directory); an export turns a
measured run into another tool's input. Either returns the files it wrote and the warnings a
user must read: whatever one side can express and the other cannot is said, never dropped in
silence.
"""

from __future__ import annotations

import os
import stat
from abc import ABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpumem.contracts.errors import GpumemError, ResultsFileError, UsageError

if TYPE_CHECKING:
    from gpumem.interop.compare import Source
    from gpumem.plugin.registry import Plugins


class FormatError(GpumemError):
    """A file that does not follow its format (names the file, the place and the rule)."""


@dataclass
class Converted:
    """What an import or export wrote, and what it could not carry over."""

    paths: list[Path]
    warnings: list[str] = field(default_factory=list)


class Format(ABC):  # noqa: B024 - a subclass overrides import_file, export_run or both
    """A foreign file format. Override :meth:`import_file`, :meth:`export_run` or both."""

    name: str = ""
    summary: str = ""
    #: what an import produces, for ``gpumem list-plugins`` and help: "sim-config" or "run"
    imports: str = ""
    #: what an export produces, e.g. "gpgpusim.config + trace.config"
    exports: str = ""

    def import_file(self, source: Path, out: Path, *, arch: str | None = None,
                    plugins: Plugins) -> Converted:
        """Read ``source`` (the other tool's file) and write gpumem's equivalent at ``out``.
        ``plugins``: the registry the command runs with (architectures, expected values, base
        configs), passed in by the caller."""
        raise UsageError(f"format '{self.name}' cannot be imported")

    def export_run(self, run: Path, out: Path, *, arch: str | None = None,
                   target: str | None = None, plugins: Plugins) -> Converted:
        """Write the other tool's files for the measured run directory ``run`` into ``out``;
        ``target`` names the other tool's version where its formats differ."""
        raise UsageError(f"format '{self.name}' cannot be exported")

    # ---- helpers for the formats (reachable through gpumem.api.formats.Format) ----------

    @staticmethod
    def refuse_existing(path: Path) -> None:
        """An import or export writes a new file and never overwrites one (as ``gpumem import
        mt4g`` refuses an occupied ``--out``): anything at ``path`` is a usage error, exit 2.
        A symlink is the exception: it is replaced, its target never opened
        (:mod:`gpumem.safe_write`), so a link planted there cannot redirect the write."""
        from gpumem.safe_write import OutputError

        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as e:
            raise OutputError(f"--out {path}: cannot check it: {e.strerror or e}") from None
        if not stat.S_ISLNK(st.st_mode):
            raise OutputError(f"--out {path}: exists; gpumem does not overwrite it (remove it "
                              f"or choose another name)")

    @staticmethod
    def load_run(run: Path, *, reanalyze_with: Plugins | None = None) -> Source:
        """The run's one device and findings (:func:`gpumem.interop.compare.load_source`),
        refusing a damaged run: reading skips a results file it cannot open, and an export
        would then quietly take the packaged config's value where the file's finding belongs.
        Every
        entry is checked against the manifest first (missing, size, checksum, outside the
        run); a :class:`ResultsFileError` (exit 1) names the first damaged file."""
        from gpumem.interop.compare import load_source
        from gpumem.results.io import open_findings
        from gpumem.results.store import MANIFEST, RunStore, file_of
        from gpumem.results.verify import CHECKED, verify_target

        run = Path(run)
        damaged = verify_target(run)
        if not damaged and run.is_dir() and (run / MANIFEST).is_file():
            for e in RunStore(run).entries():  # no checksum recorded: the findings must open
                if e.status in CHECKED and e.data.get("file") and not e.data.get("sha256"):
                    try:
                        open_findings(file_of(run, e.data["file"]))
                    except ResultsFileError as err:
                        raise ResultsFileError(f"{run}: cannot export a damaged run: "
                                               f"{err}") from None
        if damaged:
            more = f" (and {len(damaged) - 1} more damaged)" if len(damaged) > 1 else ""
            raise ResultsFileError(f"{run}: cannot export a damaged run: {damaged[0]}{more}")
        return load_source(run, reanalyze_with=reanalyze_with)

    @staticmethod
    def shareable(path: Path | str) -> str:
        """How a written file names a local file or folder: its own name only. A config is
        meant to be shared; the user's home, run folder or checkout stay out of it."""
        p = Path(path)
        return (p.resolve() if p.name in ("", "..") else p).name or "/"

    @property
    def can_import(self) -> bool:
        return type(self).import_file is not Format.import_file

    @property
    def can_export(self) -> bool:
        return type(self).export_run is not Format.export_run
