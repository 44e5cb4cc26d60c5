"""Strings from files and plugins, made safe to print on a terminal.

A device name read from another tool's file or a plugin's error message is data, not
terminal control: printed raw, an ESC or OSC sequence could move the cursor, retitle the
window or open a disguised hyperlink. Used by the CLI (with rich, as plain ``Text``) and by
the core's own stderr warnings.
"""

from __future__ import annotations

import re

#: C0 and C1 control characters, DEL, and the Unicode bidirectional overrides and isolates:
#: what can move the cursor, open a hyperlink (OSC 8), retitle the terminal or reorder text.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(s: object) -> str:
    """``str(s)`` with every control character written out as visible text (ESC as
    ``\\x1b``), so that a string from a file or a plugin cannot drive the terminal."""
    return _CONTROL.sub(_visible, str(s))
