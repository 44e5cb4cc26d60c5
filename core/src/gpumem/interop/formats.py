"""File formats other tools speak: the contract is :mod:`gpumem.contracts.formats` (the
hook specifications name it, and plugins reach it through :mod:`gpumem.api.formats`). Its
names are given here too, the same objects, for code that imported them from here; core's own
formats are :mod:`gpumem.interop.importers` and :mod:`gpumem.interop.calibrate`.
"""

from __future__ import annotations

from gpumem.contracts.formats import Converted, Format, FormatError, PluginSet

__all__ = ["Converted", "Format", "FormatError", "PluginSet"]
