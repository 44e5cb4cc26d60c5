"""File formats other tools speak: what ``gpumem import FORMAT`` reads and ``gpumem export
FORMAT`` writes.

A format is contributed by a plugin (hook ``gpumem_register_formats``), so the accelsim plugin
owns Accel-Sim's config files and core owns none of them. An import turns another tool's file
into something gpumem runs or compares (a simulator config, a run directory); an export turns a
measured run into another tool's input. Either returns the files it wrote and the warnings a
user must read: whatever one side can express and the other cannot is said, never dropped in
silence.

A format is given the plugin set the command runs with; what it may ask of it is
:class:`PluginSet` (:class:`gpumem.plugin.registry.Plugins` is one). Core's own formats live in
:mod:`gpumem.interop`, and so does the reading of a run
(:func:`gpumem.interop.compare.load_source`): :meth:`Format.load_run` reads through the reader
that :mod:`gpumem.interop` hands in when it loads (:func:`reads_runs`), so this module imports
nothing above the contracts (``lint-imports`` checks it, type-checking imports included).
"""

from __future__ import annotations

import os
import stat
from abc import ABC
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gpumem.contracts.errors import GpumemError, OutputError, UsageError

if TYPE_CHECKING:
    from gpumem.contracts.architecture import Architecture
    from gpumem.contracts.device import DeviceInfo
    from gpumem.contracts.experiment import Experiment
    from gpumem.contracts.findings import Expected, Finding


class FormatError(GpumemError):
    """A file that does not follow its format (names the file, the place and the rule)."""


@dataclass
class Converted:
    """What an import or export wrote, and what it could not carry over."""

    paths: list[Path]
    warnings: list[str] = field(default_factory=list)


@runtime_checkable
class PluginSet(Protocol):
    """What a format (and the reading of runs it relies on) asks of the plugin set a command
    runs with: the registered architectures and experiments, every plugin's expected values,
    and the first answer of a ``firstresult`` hook (a base simulator config). The loaded
    :class:`gpumem.plugin.registry.Plugins` is one; a test may pass any object that has
    these four methods."""

    def architectures(self) -> Mapping[str, Architecture]:
        """The registered architectures by name."""
        ...

    def experiments(self) -> Mapping[str, type[Experiment]]:
        """The registered experiment classes by name."""
        ...

    def expected_values(self, arch: str, device: DeviceInfo) -> list[Expected]:
        """Every plugin's expected values for ``arch`` on ``device`` (a plugin that fails is
        named in a warning and left out)."""
        ...

    def first_result(self, hook: str, **kwargs: Any) -> Any:
        """The first plugin's answer to the ``firstresult`` hook ``hook`` (e.g.
        ``gpumem_simulator_config`` with ``arch=`` and ``simulator=``), ``None`` when none
        answers."""
        ...


@dataclass
class Source:
    """One column of a comparison: a run directory or a file, with its findings (what
    :meth:`Format.load_run` and :func:`gpumem.interop.compare.load_source` give)."""

    label: str
    arch: str
    device: DeviceInfo | None
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)  # (exp, name)
    #: experiment -> the version that measured it ("" where its file or entry does not say)
    versions: dict[str, str] = field(default_factory=dict)

    def value(self, experiment: str, name: str) -> Any:
        """The value of a resolved finding, or ``None`` (absent or unresolved)."""
        f = self.findings.get((experiment, name))
        return f.value if f is not None and f.resolved else None


class RunReader(Protocol):
    """How a run directory (or results file) is read into its one device's :class:`Source`,
    the findings derived afresh by ``reanalyze_with``'s analyses where given."""

    def __call__(self, target: Path, reanalyze_with: PluginSet | None = None) -> Source: ...


_run_reader: RunReader | None = None


def reads_runs(reader: RunReader) -> RunReader:
    """Hand in how :meth:`Format.load_run` reads a run. :mod:`gpumem.interop` does so when it
    loads (:func:`gpumem.interop.compare.load_source`): the reading lives above the contracts,
    so the contracts name it without importing it. Every format is defined in
    :mod:`gpumem.interop` or imports :mod:`gpumem.api.formats`, which loads it."""
    global _run_reader
    _run_reader = reader
    return reader


class Format(ABC):  # noqa: B024 - a subclass overrides import_file, export_run or both
    """A foreign file format. Override :meth:`import_file`, :meth:`export_run` or both."""

    name: str = ""
    summary: str = ""
    #: what an import produces, for ``gpumem list-plugins`` and help: "sim-config" or "run"
    imports: str = ""
    #: what an export produces, e.g. "gpgpusim.config + trace.config"
    exports: str = ""

    def import_file(self, source: Path, out: Path, *, arch: str | None = None,
                    plugins: PluginSet) -> Converted:
        """Read ``source`` (the other tool's file) and write gpumem's equivalent at ``out``.
        ``plugins``: the plugin set the command runs with (architectures, expected values,
        base configs: :class:`PluginSet`), passed in by the caller."""
        raise UsageError(f"format '{self.name}' cannot be imported")

    def export_run(self, run: Path, out: Path, *, arch: str | None = None,
                   target: str | None = None, plugins: PluginSet) -> Converted:
        """Write the other tool's files for the measured run directory ``run`` into ``out``;
        ``target`` names the other tool's version where its formats differ."""
        raise UsageError(f"format '{self.name}' cannot be exported")

    def export_runs(self, runs: list[Path], out: Path, *, arch: str | None = None,
                    target: str | None = None, plugins: PluginSet) -> Converted:
        """``gpumem export FORMAT RUN [RUN ...]``: one run is :meth:`export_run`'s; a format
        that can pool several runs of one GPU (``sim``) overrides this."""
        if len(runs) != 1:
            raise UsageError(f"format '{self.name}' exports one run at a time (several runs "
                             f"pooled: export sim)")
        return self.export_run(runs[0], out, arch=arch, target=target, plugins=plugins)

    # ---- helpers for the formats (reachable through gpumem.api.formats.Format) ----------

    @staticmethod
    def refuse_existing(path: Path) -> None:
        """An import or export writes a new file and never overwrites one (as ``gpumem import
        mt4g`` refuses an occupied ``--out``): anything at ``path`` is a usage error, exit 2.
        A symlink is the exception: it is replaced, its target never opened
        (:mod:`gpumem.safe_write`), so a link planted there cannot redirect the write."""
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
    def load_run(run: Path, *, reanalyze_with: PluginSet | None = None) -> Source:
        """The run's one device and findings (:func:`gpumem.interop.compare.load_source`),
        refusing a damaged run: reading skips a results file it cannot open, and an export
        would then quietly take the packaged config's value where the file's finding belongs.
        Every
        entry is checked against the manifest first (missing, size, checksum, outside the
        run); a :class:`ResultsFileError` (exit 1) names the first damaged file. The reading
        is :mod:`gpumem.interop`'s, handed in (:func:`reads_runs`)."""
        if _run_reader is None:  # cannot happen once gpumem.interop or gpumem.api is loaded
            raise RuntimeError("no run reader: import gpumem.interop (or gpumem.api.formats) "
                               "before calling Format.load_run")
        return _run_reader(run, reanalyze_with=reanalyze_with)

    @staticmethod
    def shareable(path: Path | str) -> str:
        """How a written file names a local file or folder: its own name only. A config is
        meant to be shared; the user's home, run folder or checkout stay out of it."""
        p = Path(path)
        p = p.resolve() if p.name in ("", "..") else p
        if p.name == "manifest.json":  # a run kept as its manifest: the run's name too
            return f"{p.resolve().parent.name}/{p.name}"
        return p.name or "/"

    @property
    def can_import(self) -> bool:
        return type(self).import_file is not Format.import_file

    @property
    def can_export(self) -> bool:
        return type(self).export_run is not Format.export_run


__all__ = ["Converted", "Format", "FormatError", "PluginSet", "RunReader", "Source",
           "reads_runs"]
