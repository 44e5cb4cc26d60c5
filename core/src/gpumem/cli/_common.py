"""Helpers shared by the commands: consoles, the plugin set, JSON output, safe text, and
the damage check that every command reading a run directory makes first."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpumem._compat import rich_column_at
from gpumem.cells import (  # the cells' text, for the commands that import it from here
    BOUND_WORDS,  # noqa: F401
    fmt_band,
    fmt_expected,  # noqa: F401
    fmt_finding,  # noqa: F401
    fmt_interval,
    fmt_precision,  # noqa: F401
    fmt_value,
)
from gpumem.cli import _state
from gpumem.plugin.registry import Plugins, get_plugins
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


#: ``warn``: a status files written before the band rule may carry (shown as stored)
STATUS_STYLE = {"pass": "green", "undecided": "yellow", "fail": "red",
                "contended": "bold red", "warn": "yellow", "n/a": "dim",
                "unresolved": "magenta", "not modelled": "cyan"}


#: the narrowest a wrapping column (value, method, source) is planned at before columns are
#: left out; a name column (no_wrap) always gets its full width
WRAP_MIN = 12


def name_column(table: Table, header: str | Text, **kw: Any) -> None:
    """A column of names (findings, experiments, statuses): never wrapped, never cut."""
    table.add_column(header, no_wrap=True, overflow="ignore", **kw)


def text_column(table: Table, header: str | Text, **kw: Any) -> None:
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
            cells = [c.header, *c.cells]
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
        t.columns.extend(rich_column_at(c, k) for k, c in enumerate(columns))
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


class FirstFit:
    """The first of several layouts of one table (:class:`FitTable`) that fits the width
    (with its own columns left out as it says), else the last: a run's findings with an
    experiment column where there is room, grouped under experiment rows where there is
    not."""

    def __init__(self, *layouts: FitTable) -> None:
        self.layouts = layouts

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for layout in self.layouts[:-1]:
            table = layout.fitted(console, options)
            if layout._need(console, options, table.columns) <= options.max_width:
                yield table
                return
        yield self.layouts[-1]


def require_paths(paths: Iterable[Path]) -> None:
    """Exit codes are one per class of error, in every command (run, show, compare, analyze,
    report, import, export): a path the user names that does not exist is a usage error
    (:class:`UsageError`, exit 2), like any other bad argument; a path that exists but does
    not hold what it should (damaged, corrupt, not a run directory) is exit 1; Ctrl-C 130."""
    from gpumem.contracts.errors import UsageError

    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{p}: no such file or directory")


def check_damage(targets: Iterable[Path]) -> list[Damage]:
    """Verify the run directories (or the results files in one) that ``targets`` name against
    their manifests; print one line per damaged entry on stderr and return the damage.

    A checksum is the only thing that catches a byte flip that still opens (data turned to
    NaN), so every command that reads a run calls this before it reads."""
    from gpumem.results.verify import verify_target

    damage = []
    for t in targets:
        found = verify_target(Path(t))
        for d in found:
            print(f"gpumem: damaged: {escape_controls(d)}", file=sys.stderr)
        if (found and Path(t).is_dir() and all(d.reason == "missing" for d in found)
                and not any(Path(t).rglob("*.nc"))):
            print(f"gpumem: note: {escape_controls(t)}: none of its results files is there; "
                  f"a run kept as its manifest alone is read by naming "
                  f"{escape_controls(Path(t) / 'manifest.json')}", file=sys.stderr)
        damage += found
    return damage


class CheckRow(NamedTuple):
    """A finding ``--check`` reports: one that fails (``fail``, ``contended``) or that the
    data cannot decide (``undecided``), with what it was judged by."""

    run: str
    experiment: str
    finding: str
    value: object
    expected: object
    source: str
    status: str = "fail"
    band: object = None
    interval: object = None
    note: str = ""

    @property
    def reason(self) -> str:
        """Why a contended finding is: its note after "contended: " (what was seen)."""
        if self.status != "contended":
            return ""
        head, sep, rest = self.note.partition("contended: ")
        return (rest if sep else self.note).strip() or "another process used the GPU"


#: the statuses --check exits 1 on (``undecided`` is counted, and does not fail)
CHECK_FAILS = ("fail", "contended")


def check_rows(rows: Iterable[CheckRow]) -> list[CheckRow]:
    """The rows of ``--check`` that matter: failing, contended and undecided ones."""
    return [r for r in rows if r.status in (*CHECK_FAILS, "undecided")]


def print_check(rows: list[CheckRow]) -> bool:
    """``--check``: the findings that fail their expected band or were contended, printed last
    (a table on stdout: run, experiment, finding, value, band, interval, status, and the
    expected value's source or what contended the GPU), and counted by status on stderr,
    undecided ones too (they do not fail the check: the data cannot say). Returns whether
    the check failed: the caller exits 1 (a GPU fleet's CI then fails on a card that is not
    what it should be, or that another process shared)."""
    failing = [r for r in rows if r.status in CHECK_FAILS]
    undecided = [r for r in rows if r.status == "undecided"]

    def names(rs: list[CheckRow]) -> str:
        return ", ".join(f"{r.experiment}/{r.finding}" for r in rs)

    maybe = (f"{len(undecided)} undecided: the data cannot say ({names(undecided)})"
             if undecided else "")
    if not failing:
        stderr().print(escape_controls(
            "gpumem: check: every finding with an expected value lies in its band or cannot "
            "be decided" + (f"; {maybe}" if maybe else "")
            if undecided else
            "gpumem: check: every finding with an expected value lies in its band"),
            highlight=False, markup=False)
        return False
    t = Table(title=f"failing expectations ({len(failing)})")
    for col in ("run", "experiment", "finding"):
        name_column(t, col)
    for col in ("value", "band", "interval"):
        text_column(t, col)
    name_column(t, "status")
    text_column(t, "source or reason")
    for r in failing:
        t.add_row(safe_text(r.run), safe_text(r.experiment), safe_text(r.finding),
                  safe_text(fmt_value(r.value)), safe_text(fmt_band(r.band, r.expected)),
                  safe_text(fmt_interval(r.interval)),
                  safe_text(r.status, STATUS_STYLE.get(r.status, "")),
                  safe_text(r.reason if r.status == "contended" else r.source))
    stdout().print(FitTable(t, drop=["source or reason", "interval", "run", "experiment"]))
    fails = [r for r in failing if r.status == "fail"]
    contended = [r for r in failing if r.status == "contended"]
    parts = []
    if fails:
        parts.append(f"{len(fails)} fail ({names(fails)})")
    if contended:
        seen = list(dict.fromkeys(r.reason for r in contended))
        parts.append(f"{len(contended)} contended (another process on the GPU: "
                     f"{'; '.join(seen[:3])}{'; ...' if len(seen) > 3 else ''}: "
                     f"{names(contended)})")
    if maybe:
        parts.append(maybe)
    stderr().print(escape_controls("gpumem: check failed: " + ", ".join(parts)),
                   highlight=False, markup=False)
    return True
