"""``gpumem analyze``: findings derived afresh from a stored raw results file.

A file of a run directory is first checked against its manifest entry: a damaged one is
named on stderr and not analysed (exit 1). Strings from the file print as text, never markup.
"""

from __future__ import annotations

from pathlib import Path

import typer

from gpumem.cli._app import app
from gpumem.cli._common import (
    FitTable,
    check_damage,
    plugins,
    print_json,
    require_paths,
    safe_text,
    stdout,
)
from gpumem.cli.show import FINDINGS_DROP, finding_cells, findings_table
from gpumem.interop.compare import analyze_file


@app.command("analyze")
def analyze(
    file: Path = typer.Argument(..., help="A raw results file (.nc), ours or converted."),
    experiment: str | None = typer.Option(None, "--experiment", "-e",
                                             help="Analysis to apply (default: the file's)."),
    arch: str | None = typer.Option(None, "--arch", "-a",
                                       help="Architecture for expected values "
                                            "(default: the file's)."),
    json_: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Re-run an experiment's analysis on FILE; print findings with confidence and method,
    then, for each unresolved or contended one, why (which chase is missing, what was seen)."""
    require_paths([file])  # missing: a usage error, exit 2 (see require_paths)
    if check_damage([file]):
        raise typer.Exit(1)
    name, findings = analyze_file(plugins(), file, experiment, arch)
    if json_:
        print_json({"file": str(file), "experiment": name,
                    "findings": {f.name: f.as_dict() for f in findings}})
        return
    t = findings_table(safe_text(f"{name}: {file}"))
    for f in findings:
        t.add_row(*finding_cells(f.name, f.as_dict()))
    out = stdout()
    out.print(FitTable(t, drop=FINDINGS_DROP))
    for f in findings:  # why the data could not decide, or whose work it measured beside
        if f.note and f.status in ("unresolved", "contended"):
            out.print(safe_text(f"{f.name} ({f.status}): {f.note}"))
