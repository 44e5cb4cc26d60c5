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

from abc import ABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpumem.errors import GpumemError, UsageError

if TYPE_CHECKING:
    from gpumem.plugins import Plugins


class FormatError(GpumemError):
    """A file that does not follow its format (names the file, the place and the rule)."""


@dataclass
class Converted:
    """What an import or export wrote, and what it could not carry over."""

    paths: list[Path]
    warnings: list[str] = field(default_factory=list)


class Format(ABC):
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

    @property
    def can_import(self) -> bool:
        return type(self).import_file is not Format.import_file

    @property
    def can_export(self) -> bool:
        return type(self).export_run is not Format.export_run
