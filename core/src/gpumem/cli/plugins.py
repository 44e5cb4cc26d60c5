"""``gpumem list-plugins``: each plugin, its distribution, status and contributions.

Names and error messages come from third-party code: they print as text, never markup.
"""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from gpumem.cli._app import app
from gpumem.cli._common import FitTable, name_column, print_json, safe_text, stdout, text_column
from gpumem.plugin.registry import KINDS, get_plugins


@app.command("list-plugins")
def list_plugins(json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List plugins: name, distribution, version, status, error, contributions."""
    ps = get_plugins(strict=False)  # list failures first; --strict decides the exit code
    records = [r.as_dict() for r in ps.records]
    if json_:
        print_json(records)
    else:
        out = stdout()
        out.print(plugins_table(records))
        for r in records:
            if r["error"]:
                out.print(Text.assemble(safe_text(r["name"], "red"), ": ",
                                        safe_text(r["error"])))
    if ps.failures and _strict():
        raise typer.Exit(1)


def plugins_table(records: list[dict]) -> FitTable:
    """One row per plugin: its name and distribution never cut (at 80 columns too), what it
    contributes in one wrapping column ("experiments: latency, ...; simulators: sim"); the
    version is left out first where the names need the room (``--json`` has it)."""
    table = Table(title="gpumem plugins", show_lines=False)
    name_column(table, "plugin")
    name_column(table, "distribution")
    text_column(table, "version")
    name_column(table, "status")
    text_column(table, "contributes")
    for r in records:
        what = "; ".join(f"{k}: {', '.join(r['contributes'][k])}" for k in KINDS
                         if r["contributes"].get(k))
        table.add_row(safe_text(r["name"]), safe_text(r["distribution"]),
                      safe_text(r["version"]),
                      safe_text(r["status"], "" if r["status"] == "ok" else "red"),
                      safe_text(what or "-"))
    return FitTable(table, drop=["version", "distribution"])


def _strict() -> bool:
    from gpumem.cli import _state
    from gpumem.plugin.registry import strict_from_env

    return _state.strict or strict_from_env()
