"""``gpumem report``: a self-contained HTML page (figures as PNG and SVG) of one or more runs."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from gpumem.cli._app import app
from gpumem.cli._common import check_damage, plugins, require_paths


@app.command("report")
def report(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories (several: overlaid, one "
                                                    "colour per device and run)."),
    out: Path = typer.Option(..., "--out", "-o",
                             help="Folder for index.html and the figures (replaced if it "
                                  "holds a report; refused if it holds anything else)."),
) -> None:
    """Write OUT/index.html: devices and provenance, findings, and the figures of every
    experiment that has a presentation (latency ladder, structure chases, bandwidth, ILP,
    cp.async, bank conflicts, and those of installed plugins).
    Refused (exit 1, each damaged entry named) if a file fails its manifest checksum."""
    require_paths(run_dirs)  # missing: a usage error, exit 2 (see require_paths)
    # Refuse, rather than draw a damaged file as if it were data (a flipped byte can turn
    # numbers into NaN and still open): each damaged entry is named on stderr, exit 1.
    if check_damage(run_dirs):
        typer.echo("gpumem report: error: damaged results (listed above); no report written "
                   "(re-measure them: gpumem run ... --resume)", err=True)
        raise typer.Exit(1)
    from gpumem.report import build_report  # matplotlib loads only for this command

    start = time.perf_counter()
    page = build_report(run_dirs, out, experiments=plugins().experiments())
    figures = len(list(page.parent.glob("*.png")))
    typer.echo(f"report: {page}  ({figures} figure(s), {time.perf_counter() - start:.1f} s)")
