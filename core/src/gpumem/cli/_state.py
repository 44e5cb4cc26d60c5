"""Process-wide CLI state set by the root callback (global options)."""

from __future__ import annotations

strict: bool = False
argv: list[str] = ["gpumem"]
