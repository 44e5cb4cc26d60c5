"""Helpers shared by the commands: consoles, the plugin set, JSON output, safe text, and
the damage check that every command reading a run directory makes first."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpumem.cli import _state
from gpumem.plugins import Plugins, get_plugins
from gpumem.printable import escape_controls

if TYPE_CHECKING:
    from gpumem.results.verify import Damage


def stdout() -> Console:
    """Tables on stdout; when piped, wide enough that names are never cut to '…'."""
    probe = Console(file=sys.stdout)
    return Console(file=sys.stdout, soft_wrap=True,
                   width=None if probe.is_terminal else max(probe.width, 160))


def stderr() -> Console:
    return Console(file=sys.stderr, soft_wrap=True)


def safe_text(s: object, style: str = "") -> Text:
    """A string from a file, a manifest or a plugin, ready for rich: a :class:`Text` (never
    parsed as markup, so ``[/red]`` or ``[link=...]`` print as typed) with control
    characters escaped. Use it for every data-derived table cell, title and message."""
    return Text(escape_controls(s), style=style)


def plugins() -> Plugins:
    return get_plugins(strict=_state.strict)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim",
                "unresolved": "magenta"}


def fmt_value(v: object) -> str:
    """A finding's value for a table cell: '-' for none, floats to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def fmt_finding(d: dict) -> str:
    """A finding's value cell from its ``as_dict()``: the value, or for an unresolved finding
    its candidates ("unresolved: 16777216 | 33554432")."""
    if "candidates" in d:
        return "unresolved: " + " | ".join(fmt_value(c) for c in d["candidates"])
    return fmt_value(d["value"])


def check_damage(targets: Iterable[Path]) -> list[Damage]:
    """Verify the run directories (or the results files in one) that ``targets`` name against
    their manifests; print one line per damaged entry on stderr and return the damage.

    A checksum is the only thing that catches a byte flip that still opens (data turned to
    NaN), so every command that reads a run calls this before it reads."""
    from gpumem.results.verify import verify_target

    damage = [d for t in targets for d in verify_target(Path(t))]
    for d in damage:
        print(f"gpumem: damaged: {escape_controls(d)}", file=sys.stderr)
    return damage


def print_check(failing: list[tuple[str, str, str, object, object, str]]) -> None:
    """``--check``: the findings that fail their expected values, printed last (a table on
    stdout: label, experiment, finding, value, expected, source) and counted on stderr. The
    caller exits 1 when there are any: a GPU fleet's CI then fails on a card that is not
    what it should be."""
    if not failing:
        stderr().print("gpumem: check: every finding with an expected value passes or warns",
                       highlight=False, markup=False)
        return
    t = Table(title=f"failing expectations ({len(failing)})")
    for col in ("run", "experiment", "finding", "value", "expected", "source"):
        t.add_column(col)
    for label, exp, name, value, want, source in failing:
        t.add_row(safe_text(label), safe_text(exp), safe_text(name),
                  safe_text(fmt_value(value)), safe_text(fmt_value(want)),
                  safe_text(source))
    stdout().print(t)
    stderr().print(escape_controls(
        f"gpumem: check failed: {len(failing)} finding(s) outside their expected values: "
        + ", ".join(f"{exp}/{name}" for _l, exp, name, *_ in failing)),
        highlight=False, markup=False)
