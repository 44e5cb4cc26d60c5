"""The public API for file-format plugins (part of :mod:`gpumem.api`).

A format plugin reads another tool's files into gpumem's datasets (``gpumem import``) or
writes gpumem's results in another tool's form (``gpumem export``): it subclasses
:class:`Format`, returns :class:`Converted`, refuses bad input with :class:`FormatError`,
reads a run or file with :func:`load_source` and writes with :func:`write_text` (no symlink
followed; :class:`OutputError` on failure).
"""

from __future__ import annotations

from gpumem.interop.compare import load_source
from gpumem.interop.formats import Converted, Format, FormatError
from gpumem.safe_write import OutputError, write_text

__all__ = ["Converted", "Format", "FormatError", "load_source", "OutputError", "write_text"]
