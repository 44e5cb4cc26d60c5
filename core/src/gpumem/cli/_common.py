"""Helpers shared by the commands: consoles, the plugin set, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from gpumem.cli import _state
from gpumem.plugins import Plugins, get_plugins


def stdout() -> Console:
    """Tables on stdout; when piped, wide enough that names are never cut to '…'."""
    probe = Console(file=sys.stdout)
    return Console(file=sys.stdout, soft_wrap=True,
                   width=None if probe.is_terminal else max(probe.width, 160))


def stderr() -> Console:
    return Console(file=sys.stderr, soft_wrap=True)


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
