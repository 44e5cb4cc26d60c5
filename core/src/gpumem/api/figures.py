"""The drawing helpers an experiment's figures may use (part of the public API).

Loads matplotlib: import it inside a draw function, which only ``gpumem report`` calls. A
draw function takes every series of the report (:class:`Series`: a run's legend, colour, raw
datasets and findings) and returns a matplotlib ``Figure`` or ``None``; pass it through
:func:`finish` (or decorate it with :func:`finished`) so that flat axes, repeated legend
labels and long titles are handled as in every core figure. What each helper does is in
:mod:`gpumem.figures.draw`; :func:`load_runs` gives the series of run directories, for a
plugin's tests of its draw functions.
"""

from __future__ import annotations

from gpumem.contracts.series import Series
from gpumem.figures.draw import (
    MIN_REL_SPAN,
    PANEL_H,
    PANEL_W,
    bytes_axis,
    figure_legend,
    finish,
    finished,
    heatmap,
    legend,
    log_if_spread,
    masked,
    pad_flat_axis,
    panels,
    plain_log,
    plain_number,
    ratio_axis,
    series_handles,
    size_label,
    style_handles,
    unique_handles,
    with_raw,
)
from gpumem.report.runs import load_runs

__all__ = [
    "MIN_REL_SPAN", "PANEL_H", "PANEL_W", "Series", "bytes_axis", "figure_legend", "finish",
    "finished", "heatmap", "legend", "load_runs", "log_if_spread", "masked", "pad_flat_axis",
    "panels", "plain_log", "plain_number", "ratio_axis", "series_handles", "size_label",
    "style_handles", "unique_handles", "with_raw",
]
