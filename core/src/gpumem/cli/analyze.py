"""``gpumem analyze``: findings derived afresh from a stored raw results file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from gpumem.cli import app
from gpumem.cli._common import fmt_finding, plugins, print_json, stdout
from gpumem.compare import analyze_file


@app.command("analyze")
def analyze(
    file: Path = typer.Argument(..., help="A raw results file (.nc), ours or converted."),
    experiment: Optional[str] = typer.Option(None, "--experiment", "-e",
                                             help="Analysis to apply (default: the file's)."),
    arch: Optional[str] = typer.Option(None, "--arch", "-a",
                                       help="Architecture for expected values "
                                            "(default: the file's)."),
    json_: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Re-run an experiment's analysis on FILE; print findings with confidence and method."""
    name, findings = analyze_file(plugins(), file, experiment, arch)
    if json_:
        print_json({"file": str(file), "experiment": name,
                    "findings": {f.name: f.as_dict() for f in findings}})
        return
    t = Table(title=f"{name}: {file}")
    for col in ("finding", "value", "units", "expected", "status", "confidence", "method"):
        t.add_column(col)
    for f in findings:
        d = f.as_dict()
        t.add_row(f.name, fmt_finding(d), f.units, "-" if d["expected"] is None
                  else str(d["expected"]), f.status, f"{f.confidence:.2f}", f.method)
    stdout().print(t)
