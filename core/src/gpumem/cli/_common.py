"""Helpers shared by the commands: consoles, the plugin set, JSON output, safe text, and
the damage check that every command reading a run directory makes first."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpumem.cli import _state
from gpumem.plugins import Plugins, get_plugins
from gpumem.printable import escape_controls

if TYPE_CHECKING:
    from gpumem.results.verify import Damage


def stdout() -> Console:
    """Tables on stdout; when piped, wide enough that names are never cut to '…' (160
    columns, or COLUMNS when it is set: tables then fit it, see :class:`FitTable`)."""
    probe = Console(file=sys.stdout)
    columns = os.environ.get("COLUMNS", "")
    piped = int(columns) if columns.isdigit() and int(columns) > 0 else max(probe.width, 160)
    return Console(file=sys.stdout, soft_wrap=True,
                   width=None if probe.is_terminal else piped)


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
                "unresolved": "magenta", "not modelled": "cyan"}


def fmt_value(v: object) -> str:
    """A finding's value for a table cell: '-' for none, floats to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


#: How a limit (``Expected.bound``) reads in a table: "at most 4,814.3".
BOUND_WORDS = {"max": "at most", "min": "at least"}


def fmt_expected(value: object, bound: str = "") -> str:
    """An expected value's cell: the value, or the limit it is ("at most 4,814.3")."""
    text = fmt_value(value)
    return f"{BOUND_WORDS[bound]} {text}" if bound in BOUND_WORDS and value is not None \
        else text


def fmt_finding(d: dict) -> str:
    """A finding's value cell from its ``as_dict()``: the value, or for an unresolved finding
    its candidates ("unresolved: 16777216 | 33554432")."""
    if "candidates" in d:
        return "unresolved: " + " | ".join(fmt_value(c) for c in d["candidates"])
    return fmt_value(d["value"])


#: the narrowest a wrapping column (value, method, source) is planned at before columns are
#: left out; a name column (no_wrap) always gets its full width
WRAP_MIN = 12


def name_column(table: Table, header: str, **kw: Any) -> None:
    """A column of names (findings, experiments, statuses): never wrapped, never cut."""
    table.add_column(header, no_wrap=True, overflow="ignore", **kw)


def text_column(table: Table, header: str, **kw: Any) -> None:
    """A column of values or prose that may wrap (and fold long words) in a narrow terminal."""
    table.add_column(header, overflow="fold", **kw)


class FitTable:
    """A table readable at any width (80 columns included): its no_wrap columns (finding and
    experiment names) keep their full width; when the table cannot fit with its wrapping
    columns at :data:`WRAP_MIN`, the columns named in ``drop`` (least important first) are
    left out, and the caption says which (``--json`` has everything)."""

    def __init__(self, table: Table, drop: Iterable[str] = ()) -> None:
        self.table = table
        self.drop = list(drop)

    def _need(self, console: Console, options: ConsoleOptions, columns: list) -> int:
        wide = options.update_width(10_000)
        total = len(columns) + 1 if self.table.box else 0          # vertical rules
        for c in columns:
            cells = [c.header, *c._cells]
            w = max((Measurement.get(console, wide, x).maximum for x in cells), default=1)
            total += (w if c.no_wrap else min(w, WRAP_MIN)) + 2      # padding (0, 1)
        return total

    def fitted(self, console: Console, options: ConsoleOptions) -> Table:
        columns = list(self.table.columns)
        left_out: list[str] = []
        for header in self.drop:
            if self._need(console, options, columns) <= options.max_width:
                break
            keep = [c for c in columns if str(c.header) != header]
            if len(keep) != len(columns):
                left_out.append(header)
                columns = keep
        if not left_out:
            return self.table
        t = copy.copy(self.table)
        t.columns = []
        for k, c in enumerate(columns):
            c = copy.copy(c)
            c._index = k
            t.columns.append(c)
        note = f"left out: {', '.join(left_out)} (see --json)"
        t.caption = Text(f"{t.caption}; {note}" if t.caption else note, style="dim")
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.fitted(console, options)
        need = self._need(console, options, table.columns)
        if need > options.max_width:
            # narrower than the names themselves: print wider than the terminal (it wraps
            # the lines) rather than cut a name
            yield from console.render(table, options.update_width(need))
        else:
            yield table


def require_paths(paths: Iterable[Path]) -> None:
    """Exit codes are one per class of error, in every command (run, show, compare, analyze,
    report, import, export): a path the user names that does not exist is a usage error
    (:class:`UsageError`, exit 2), like any other bad argument; a path that exists but does
    not hold what it should (damaged, corrupt, not a run directory) is exit 1; Ctrl-C 130."""
    from gpumem.errors import UsageError

    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{p}: no such file or directory")


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
    for col in ("run", "experiment", "finding"):
        name_column(t, col)
    for col in ("value", "expected", "source"):
        text_column(t, col)
    for label, exp, name, value, want, source in failing:
        t.add_row(safe_text(label), safe_text(exp), safe_text(name),
                  safe_text(fmt_value(value)), safe_text(fmt_value(want)),
                  safe_text(source))
    stdout().print(FitTable(t, drop=["source"]))
    stderr().print(escape_controls(
        f"gpumem: check failed: {len(failing)} finding(s) outside their expected values: "
        + ", ".join(f"{exp}/{name}" for _l, exp, name, *_ in failing)),
        highlight=False, markup=False)
