"""How an experiment appears in ``gpumem report``: its section of the page and its figures.

The report is a generic renderer: it knows no experiment. Each experiment says what it
contributes through :meth:`gpumem.contracts.experiment.Experiment.presentation`, which returns a
:class:`Presentation` (or ``None``: its findings go to the page's "other findings"). The
page shows one section per :class:`ReportSection` that some registered experiment names,
in ``order``; within a section the experiments follow their ``rank`` (then their name),
each with its figures in the order given, then the findings of all of them. The same order
(sections, then rank; then the experiments of no section, sorted) lists the experiments in
the summary and in the provenance tables.

Kept free of matplotlib, so that ``gpumem run`` imports none: a ``presentation()`` names
its draw functions (``"module:function"``, imported when the report draws) or imports them
inside the method. A draw function takes every series of the report
(:class:`gpumem.contracts.series.Series`) and returns a matplotlib ``Figure``, or ``None`` when
there is nothing to draw; :mod:`gpumem.figures.draw` holds the helpers it may use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gpumem.contracts.series import Series


@dataclass(frozen=True)
class ReportSection:
    """A section of the page; several experiments may share one (they share its ``key``)."""

    key: str    # the HTML id of the section: letters, digits, '_' and '-'
    title: str
    intro: str  # one paragraph: what the figures show and how it was measured
    order: int  # sections are shown by ascending order (the core's: 100, 200, ... 900)


@dataclass(frozen=True)
class ReportFigure:
    """One figure: drawn from every series that has the experiment presenting it.

    ``draw`` is the draw function, or its ``"package.module:function"`` name, imported only
    when the report draws: an experiment then names its figures without importing them
    (no matplotlib for ``gpumem run``, and a figure module may use its experiment's helpers
    without the two importing each other)."""

    name: str  # file stem of its PNG and SVG: unique over the page
    caption: str
    draw: Callable[[Sequence[Series]], Figure | None] | str

    def drawer(self) -> Callable[[Sequence[Series]], Figure | None]:
        """The draw function, imported now if ``draw`` names it."""
        if not isinstance(self.draw, str):
            return self.draw
        module, _, attr = self.draw.partition(":")
        if not module or not attr:
            raise ValueError(f"figure '{self.name}': draw {self.draw!r} is not "
                             f"'package.module:function'")
        return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Presentation:
    """What one experiment contributes to the page: its figures, and that its findings are
    listed under ``section``; ``rank`` orders the experiments within a section."""

    section: ReportSection
    figures: tuple[ReportFigure, ...] = ()
    rank: int = 0


def presentation_of(experiment: Any) -> Presentation | None:
    """The presentation of a registered experiment (a class, as plugins register them, or an
    instance)."""
    obj = experiment() if isinstance(experiment, type) else experiment
    return obj.presentation()
