"""The public API for file-format plugins (part of :mod:`gpumem.api`).

A format plugin reads another tool's files into gpumem's datasets (``gpumem import``) or
writes gpumem's results in another tool's form (``gpumem export``): it subclasses
:class:`Format`, returns :class:`Converted`, refuses bad input with :class:`FormatError`,
reads a run or file with :func:`load_source` and writes with :func:`write_text` (no symlink
followed; :class:`OutputError` on failure). Its ``import_file`` and ``export_run`` are given
the command's plugin set: annotate it :class:`PluginSet` (what a format may ask of it: the
architectures, the experiments, expected values, a ``firstresult`` hook's answer).
"""

from __future__ import annotations

from gpumem.contracts.formats import Converted, Format, FormatError, PluginSet
from gpumem.interop.compare import load_source  # loading it hands Format.load_run its reader
from gpumem.safe_write import OutputError, write_text

__all__ = ["Converted", "Format", "FormatError", "load_source", "OutputError", "PluginSet",
           "write_text"]
