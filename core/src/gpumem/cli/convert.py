"""``gpumem import`` and ``gpumem export``: other tools' files in and out (plugin formats)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gpumem.cli._app import app
from gpumem.cli._common import check_damage, escape_controls, plugins, require_paths
from gpumem.contracts.errors import ResultsFileError, UsageError
from gpumem.contracts.formats import Converted, Format


def _format(name: str, want: str) -> Format:
    formats = plugins().formats()
    able = sorted(n for n, f in formats.items()
                  if (f.can_import if want == "import" else f.can_export))
    if name not in formats:
        raise UsageError(f"unknown format '{name}' (formats that {want}: "
                         f"{', '.join(able) or 'none installed'})")
    fmt = formats[name]
    if not (fmt.can_import if want == "import" else fmt.can_export):
        raise UsageError(f"format '{name}' cannot be {want}ed (formats that {want}: "
                         f"{', '.join(able) or 'none'})")
    return fmt


def _report(done: Converted) -> None:
    for w in done.warnings:
        print(f"gpumem: warning: {escape_controls(w)}", file=sys.stderr)
    for p in done.paths:
        typer.echo(str(p))


@app.command("import")
def import_(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="Format name (gpumem list-plugins)."),
    source: Path = typer.Argument(..., help="The other tool's file."),
    out: Path = typer.Option(..., "--out", "-o", help="Where gpumem's equivalent goes."),
    arch: str | None = typer.Option(None, "--arch", "-a",
                                       help="Architecture the result belongs to."),
) -> None:
    """Read another tool's FILE (a simulator config, another tool's results) into gpumem."""
    f = _format(fmt, "import")
    require_paths([source])  # missing: a usage error, exit 2 (see require_paths)
    _report(f.import_file(source, out, arch=arch, plugins=plugins()))


@app.command("export")
def export(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="Format name (gpumem list-plugins)."),
    runs: list[Path] = typer.Argument(..., metavar="RUN",
                                      help="A gpumem run directory, or the manifest.json of "
                                           "a run kept as its manifest alone; for sim, "
                                           "several runs of one GPU model, pooled (each "
                                           "finding the median run's)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory for the written files."),
    arch: str | None = typer.Option(None, "--arch", "-a",
                                       help="Architecture whose base config fills the gaps "
                                            "(default: the run's)."),
    target: str | None = typer.Option(None, "--target",
                                         help="Version of the other tool to write for."),
) -> None:
    """Write another tool's input files from a measured run (e.g. an Accel-Sim config).
    Refused (exit 1, each damaged entry named) if any results file fails its manifest check."""
    f = _format(fmt, "export")
    require_paths(runs)  # missing: a usage error, exit 2 (see require_paths)
    from gpumem.results.kept import is_manifest_file

    for run in runs:
        if not run.is_dir() and not is_manifest_file(run):
            raise UsageError(f"{run}: not a directory (give a gpumem run directory, or the "
                             f"manifest.json of a run kept as its manifest alone)")
    if len({r.resolve() for r in runs}) < len(runs):
        raise UsageError("a run is given twice: each run counts once in a pool")
    # A format reads what it can and fills the rest from packaged values, so an export of a
    # damaged run would silently describe another GPU: verify the whole run first (missing,
    # size, checksum, a file outside the run), name each damaged entry, and write nothing.
    for run in runs:
        if check_damage([run]):
            raise ResultsFileError(f"{run}: damaged results (listed above); nothing exported "
                                   f"(the files would not describe the measured GPU; "
                                   f"re-measure them: gpumem run ... --resume --out {run})")
    _report(f.export_runs(list(runs), out, arch=arch, target=target, plugins=plugins()))
