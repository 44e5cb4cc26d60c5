"""Every use gpumem makes of another library's private members, one small shim each.

Nothing else in gpumem reads or writes a ``_name`` of atexit, rich, matplotlib or Numba
(ruff's SLF001 finds one that creeps back in). Each shim names the versions it was written
against and tested with (the ranges ``core/pyproject.toml`` pins where it pins one) and what
it falls back to if the private member goes away: never an exception that the public
member would not raise, at worst the small loss of polish the docstring names. Its module
imports nothing from gpumem, and the libraries only inside the shims (the CLI never pays
for matplotlib or Numba to import this).
"""

from __future__ import annotations

import atexit
import copy
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.text import Text
    from rich.table import Column


def run_atexit_handlers() -> None:
    """Run (and clear) the ``atexit`` handlers now, as a normal interpreter exit would: for
    an exit through ``os._exit``, which skips them. ``atexit._run_exitfuncs``: CPython
    3.11 ... 3.13 (tested with 3.11), no public equivalent. Without it: the handlers are
    not run (what ``os._exit`` alone does)."""
    run = getattr(atexit, "_run_exitfuncs", None)
    if callable(run):
        run()


def rich_column_at(column: Column, index: int) -> Column:
    """A copy of a rich table ``column`` that renders as the table's ``index``-th column
    (its padding: first, inner or last), for a table rebuilt with columns left out.
    ``Column._index``: rich 13 ... 15 (tested with 15.0), which ``Table.add_column`` sets
    and nothing public changes. Without it: the copy unchanged (a left-out column can leave
    the padding of the first or last column as an inner column's)."""
    out = copy.copy(column)
    if hasattr(out, "_index"):
        out._index = index  # noqa: SLF001 - this shim's one private member
    return out


class LegendLayout(NamedTuple):
    """Where a legend is and how it is laid out: what re-making it needs."""

    #: its ``loc`` as matplotlib holds it (a code of ``Legend.codes`` or a pair), or None
    loc: Any
    #: its columns
    ncols: int
    #: whether a figure legend was placed ``"outside ..."`` the axes (constrained layout)
    outside: bool


def legend_layout(legend: Legend) -> LegendLayout:
    """The ``loc``, column count and outside placement of a drawn ``legend``.
    ``Legend._loc``, ``._ncols`` and ``._outside_loc``: matplotlib 3.7 ... 3.11 (tested
    with 3.11.2; ``_outside_loc`` from 3.7), no public getters. Without them: no ``loc``
    (matplotlib's default, ``"best"``), one column, not outside."""
    return LegendLayout(loc=getattr(legend, "_loc", None),
                        ncols=int(getattr(legend, "_ncols", 1)),
                        outside=bool(getattr(legend, "_outside_loc", None)))


def axes_side_title(ax: Axes, where: str) -> Text | None:
    """The Text of the axes' ``"left"`` or ``"right"`` title (``ax.title`` is the centre
    one), to change its text and keep its font and place (``set_title`` resets both).
    ``Axes._left_title`` / ``._right_title``: matplotlib 3.7 ... 3.11 (tested with 3.11.2).
    Without them: None (that title is not wrapped)."""
    return getattr(ax, f"_{where}_title", None)


def figure_suptitle(fig: Figure) -> Text | None:
    """The Text of the figure's suptitle (``Figure.get_suptitle`` gives only its string),
    or None. ``Figure._suptitle``: matplotlib 3.7 ... 3.11 (tested with 3.11.2). Without
    it: None (the suptitle is not wrapped)."""
    return getattr(fig, "_suptitle", None)


def numba_cache_locator_base() -> type:
    """Numba's base class of cache locators, ``numba.core.caching._CacheLocator`` (a
    locator says where a function's cache files live and what stamps their source): Numba
    0.59 ... 0.68 (core/pyproject.toml pins ``numba>=0.59,<0.69``; tested with 0.68.1).
    Without it: ``object``, and a cache made with it fails to attach
    (:func:`attach_numba_cache` says why): kernels compile in memory, no disk cache."""
    from numba.core import caching

    base = getattr(caching, "_CacheLocator", object)
    return base if isinstance(base, type) else object


def numba_function_cache(locator: Callable[[Any, str], Any]) -> type:
    """A Numba ``FunctionCache`` class whose one locator is ``locator(py_func, py_file)``
    (Numba's own list of locators, and ``NUMBA_CACHE_LOCATOR_CLASSES``, never consulted).
    It replaces ``CacheImpl.__init__``, setting what that sets (``_lineno``, ``_locator``,
    ``_filename_base``), and ``FunctionCache._impl_class``: Numba 0.59 ... 0.68 (tested
    with 0.68.1). If Numba changes them, making or attaching the cache raises, and
    :func:`attach_numba_cache`'s caller compiles in memory instead."""
    from numba.core import caching

    class Impl(caching.CompileResultCacheImpl):
        def __init__(self, py_func: Any) -> None:  # noqa: D401 - Numba's, replaced
            py_file = inspect.getfile(py_func)
            self._lineno = py_func.__code__.co_firstlineno
            self._locator = locator(py_func, py_file)
            self._locator.ensure_cache_path()
            self._filename_base = self.get_filename_base(
                f"{Path(py_file).stem}.{py_func.__qualname__}", getattr(sys, "abiflags", ""))

    class Cache(caching.FunctionCache):
        _impl_class = Impl

    return Cache


def attach_numba_cache(dispatcher: Any, cache: object) -> None:
    """Make ``cache`` the disk cache of a Numba ``dispatcher`` (``@njit``'s function),
    as ``enable_caching`` does with Numba's own: ``Dispatcher._cache``, Numba 0.59 ... 0.68
    (tested with 0.68.1). Without it: AttributeError (the caller then compiles in
    memory)."""
    if not hasattr(dispatcher, "_cache"):
        raise AttributeError("this Numba's dispatcher has no _cache to replace")
    dispatcher._cache = cache  # noqa: SLF001 - this shim's one private member
