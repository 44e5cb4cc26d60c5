"""The series a draw function takes: :class:`gpumem.contracts.series.Series` (a contract,
beside the presentations that name the draw functions). Its names are given here too, the
same objects, for code that imported them from here."""

from __future__ import annotations

from gpumem.contracts.series import COLOURS, Series

__all__ = ["COLOURS", "Series"]
