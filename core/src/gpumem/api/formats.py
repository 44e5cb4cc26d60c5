"""The public API for file-format plugins (part of :mod:`gpumem.api`).

A format plugin reads another tool's files into gpumem's datasets (``gpumem import``) or
writes gpumem's results in another tool's form (``gpumem export``): it subclasses
:class:`Format`, returns :class:`Converted`, refuses bad input with :class:`FormatError`,
reads a run or file with :func:`load_source` (:func:`changed_findings`: which of its
findings an earlier version of their experiment measured) and writes with
:func:`write_text` (no symlink followed; :class:`OutputError` on failure). Text from a run
(a device's or folder's name) written into a file's comments goes through
:func:`escape_controls`: a newline in it would end the comment and make what follows
configuration. Its ``import_file`` and ``export_run`` are given the command's plugin set:
annotate it :class:`PluginSet` (what a format may ask of it: the architectures, the
experiments, expected values, a ``firstresult`` hook's answer).
"""

from __future__ import annotations

from gpumem.contracts.formats import Converted, Format, FormatError, PluginSet
from gpumem.interop.compare import (  # loading it hands Format.load_run its reader
    changed_findings,
    changed_summary,
    load_source,
)
from gpumem.printable import escape_controls
from gpumem.safe_write import OutputError, write_text

__all__ = ["changed_findings", "changed_summary", "Converted", "Format", "FormatError",
           "escape_controls", "load_source", "OutputError", "PluginSet", "write_text"]
