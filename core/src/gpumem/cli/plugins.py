"""``gpumem list-plugins``: each plugin, its distribution, status and contributions.

Names and error messages come from third-party code: they print as text, never markup.
"""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from gpumem.cli._app import app
from gpumem.cli._common import print_json, safe_text, stdout
from gpumem.plugins import KINDS, get_plugins


@app.command("list-plugins")
def list_plugins(json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List plugins: name, distribution, version, status, error, contributions."""
    ps = get_plugins(strict=False)  # list failures first; --strict decides the exit code
    records = [r.as_dict() for r in ps.records]
    if json_:
        print_json(records)
    else:
        table = Table(title="gpumem plugins", show_lines=False)
        for col in ("plugin", "distribution", "version", "status", *KINDS):
            table.add_column(col)
        for r in records:
            table.add_row(safe_text(r["name"]), safe_text(r["distribution"]),
                          safe_text(r["version"]),
                          safe_text(r["status"], "" if r["status"] == "ok" else "red"),
                          *(safe_text(", ".join(r["contributes"][k])) for k in KINDS))
        out = stdout()
        out.print(table)
        for r in records:
            if r["error"]:
                out.print(Text.assemble(safe_text(r["name"], "red"), ": ",
                                        safe_text(r["error"])))
    if ps.failures and _strict():
        raise typer.Exit(1)


def _strict() -> bool:
    from gpumem.cli import _state
    from gpumem.plugins import strict_from_env

    return _state.strict or strict_from_env()
