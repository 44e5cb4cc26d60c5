"""Drawing helpers for the report's figures: the small set a figure of any plugin may use.

The report draws no figure of its own: each experiment's ``presentation()``
(:mod:`gpumem.contracts.presentation`) names draw functions, each taking every series of the report
(:class:`~gpumem.contracts.series.Series`) and returning a matplotlib ``Figure``, or ``None`` when
no series has anything to draw. Series lacking the experiment are left out; the page says why
(:mod:`gpumem.report.sections`). Curves of several series share one axes, one colour per
series (``s.colour``, ``s.legend``); what cannot be overlaid (heatmaps, the scatter of one
chase) gets one panel per series in the same colour.

No pyplot: figures are plain ``matplotlib.figure.Figure`` objects drawn by the Agg canvas
(:func:`panels` makes one), so nothing depends on a display or changes matplotlib's global
backend. :func:`save` writes PNG and SVG without timestamps, so the same data give the same
files.

Every figure function passes its figure through :func:`finish` (the ``@finished``
decorator): an autoscaled axis whose view spans less than :data:`MIN_REL_SPAN` of its
magnitude is widened (:func:`pad_flat_axis`; ratios use :func:`ratio_axis`, which keeps 1.0
and 5 % either side in view), legends list each label once, and long titles and axis labels
are wrapped to their panel under constrained layout, so nothing is cut.

The helpers a figure may use (kept stable, re-exported for plugins): data —
:func:`with_raw`, :func:`masked`; layout — :func:`panels`, :func:`finish`, :func:`finished`;
axes — :func:`bytes_axis`, :func:`size_label`, :func:`plain_log`, :func:`plain_number`,
:func:`log_if_spread`, :func:`pad_flat_axis`, :func:`ratio_axis`, :func:`heatmap`; legends —
:func:`legend`, :func:`figure_legend`, :func:`series_handles`, :func:`style_handles`,
:func:`unique_handles`. :func:`save` is the report's own.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator

from gpumem._compat import axes_side_title, figure_suptitle, legend_layout
from gpumem.contracts.series import Series

PNG_DPI = 100
PANEL_W, PANEL_H = 5.2, 3.4        # inches per panel


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def size_label(v: float) -> str:
    """Bytes as a short label: 2 KiB, 48 MiB, 8 GiB (binary units, as the footprints are)."""
    v = float(v)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            x = v / scale
            return f"{x:.0f} {unit}" if abs(x - round(x)) < 0.05 else f"{x:.3g} {unit}"
    return f"{v:.0f} B"


def bytes_axis(ax, axis: str = "x") -> None:
    """A log2 axis of byte counts labelled in binary units (:func:`size_label`)."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    a.set_major_locator(LogLocator(base=4, numticks=30))
    a.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    a.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def panels(nrows: int, ncols: int, w: float = PANEL_W, h: float = PANEL_H
           ) -> tuple[Figure, np.ndarray]:
    """A figure of ``nrows`` x ``ncols`` panels of ``w`` x ``h`` inches (constrained layout,
    Agg canvas); the axes always as a 2-D array."""
    fig = Figure(figsize=(w * ncols, h * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def with_raw(series: Sequence[Series], experiment: str) -> list[tuple[Series, xr.Dataset]]:
    """(series, raw dataset of ``experiment``) of every series that has it."""
    out = []
    for s in series:
        ds = s.raw(experiment)
        if ds is not None:
            out.append((s, ds))
    return out


def masked(ds: xr.Dataset, var: str) -> xr.DataArray:
    """``var`` with failed or skipped points masked (NaN)."""
    da = ds[var]
    return da.where(ds["point_status"] == 0) if "point_status" in ds else da


def log_if_spread(ax, values: list[float], axis: str = "y", factor: float = 4.0) -> None:
    """Log scale when the series differ by more than ``factor`` (a GTX 980 beside an H200)."""
    vals = [v for v in values if np.isfinite(v) and v > 0]
    if len(vals) >= 2 and max(vals) / min(vals) > factor:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def plain_number(v: float) -> str:
    """4,500 rather than 4.5e+03; small values as they are."""
    return f"{v:,.0f}" if v >= 10 else f"{v:g}"


def plain_log(ax, axis: str = "y") -> None:
    """Plain numbers on a log axis (4,500 rather than 4.5 x 10^3); where it spans less than
    two decades, the 2, 3 and 5 multiples are labelled too."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    if a.get_scale() != "log":
        return
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    few = lo > 0 and np.log10(hi / lo) < 2
    a.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    a.set_minor_formatter(FuncFormatter(
        lambda v, _: plain_number(v) if few and f"{v:.0e}"[0] in "235" else ""))


def unique_handles(handles: Sequence, labels: Sequence[str] | None = None
                   ) -> tuple[list, list[str]]:
    """``handles`` (and their labels) without repeats: the first handle of each label."""
    labels = [h.get_label() for h in handles] if labels is None else list(labels)
    seen: dict[str, object] = {}
    for h, lab in zip(handles, labels, strict=True):
        if lab and not lab.startswith("_") and lab not in seen:
            seen[lab] = h
    return list(seen.values()), list(seen)


def legend(ax, handles: list, **kw) -> None:
    """The legend of ``ax`` from ``handles``, each label once (small, translucent)."""
    handles, labels = unique_handles(handles)
    if handles:
        ax.legend(handles=handles, labels=labels, fontsize=7, framealpha=0.85,
                  handlelength=3.2, **kw)


def figure_legend(fig: Figure, handles: list) -> None:
    """One legend below all panels (where it hides no curve)."""
    handles, labels = unique_handles(handles)
    if handles:
        fig.legend(handles=handles, labels=labels, loc="outside lower center",
                   ncols=min(4, len(handles)), fontsize=7, frameon=False, handlelength=3.2)


def dedupe_legends(fig: Figure) -> None:
    """Every legend of ``fig`` (per axes and figure-wide) with each label once: a legend
    drawn from ``ax.legend()`` of several series would otherwise repeat a style's entry."""
    owners: list[Axes | Figure] = [a for a in fig.axes if a.get_legend() is not None]
    for owner in [*owners, fig]:
        legends = list(fig.legends) if isinstance(owner, Figure) else [owner.get_legend()]
        for leg in legends:
            if leg is None:
                continue
            handles = list(leg.legend_handles)  # matplotlib >= 3.7 (the pin)
            labels = [t.get_text() for t in leg.get_texts()]
            keep, kept_labels = unique_handles(handles, labels)
            if len(keep) == len(handles):
                continue
            layout = legend_layout(leg)
            kw: dict[str, Any] = dict(
                fontsize=leg.prop.get_size_in_points(), frameon=leg.get_frame_on(),
                handlelength=leg.handlelength, ncols=min(layout.ncols, len(keep)))
            if layout.loc is not None:
                kw["loc"] = layout.loc
            if isinstance(owner, Figure):
                names = {v: k for k, v in Legend.codes.items()}
                if layout.outside and layout.loc in names:
                    kw["loc"] = f"outside {names[layout.loc]}"  # e.g. outside lower center
                fig.legends.remove(leg)
                fig.legend(handles=keep, labels=kept_labels, **kw)
            else:
                owner.legend(handles=keep, labels=kept_labels, **kw)


def legend_labels(fig: Figure) -> list[list[str]]:
    """The labels of every legend of ``fig`` (tests: no label twice in one legend)."""
    legends = [leg for a in fig.axes if (leg := a.get_legend()) is not None]
    legends += list(fig.legends)
    return [[t.get_text() for t in leg.get_texts()] for leg in legends]


#: A linear axis whose view spans less than this share of its magnitude is widened to it,
#: so that noise of a fraction of a percent does not fill the panel like a cliff.
MIN_REL_SPAN = 0.10


def pad_flat_axis(ax, axis: str = "y", min_rel: float = MIN_REL_SPAN) -> bool:
    """Widen an autoscaled axis that spans less than ``min_rel`` of its magnitude (linear:
    ``hi - lo < min_rel * max(|lo|, |hi|)``; log: ``hi / lo < 1 + min_rel``) symmetrically
    about its middle. True when it was widened."""
    get = ax.get_ylim if axis == "y" else ax.get_xlim
    setl = ax.set_ylim if axis == "y" else ax.set_xlim
    scale = ax.get_yscale() if axis == "y" else ax.get_xscale()
    lo, hi = get()
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi < lo:
        return False
    if scale == "log":
        if lo <= 0 or hi / lo >= 1 + min_rel:
            return False
        mid = np.sqrt(lo * hi)
        half = np.sqrt(1 + min_rel)
        setl(mid / half, mid * half)
        return True
    if scale != "linear":
        return False
    mag = max(abs(lo), abs(hi))
    if mag == 0 or hi - lo >= min_rel * mag:
        return False
    mid, half = (lo + hi) / 2, min_rel * mag / 2  # same sign (a span < mag): no new sign
    setl(mid - half, mid + half)
    return True


def ratio_axis(ax, values: Sequence[float], ref: float = 1.0, margin: float = 0.05) -> None:
    """A ratio's y range: always ``ref`` (no change) inside, and at least ``margin`` x
    ``ref`` beyond the data on both sides, so a 0.25 % effect looks like one."""
    vals = [float(v) for v in np.ravel(np.asarray(values, dtype=float)) if np.isfinite(v)]
    lo = min([ref, *vals]) - margin * abs(ref)
    hi = max([ref, *vals]) + margin * abs(ref)
    span = hi - lo
    ax.set_ylim(lo - 0.02 * span, hi + 0.02 * span)


def _wrap(text: str, width_in: float, fontsize: float) -> str:
    """``text`` wrapped, line by line, to what fits ``width_in`` inches at ``fontsize``."""
    chars = max(12, int(width_in * 72 / (fontsize * 0.58)))
    return "\n".join(textwrap.fill(line, chars, break_long_words=False) if len(line) > chars
                     else line for line in text.split("\n"))


def wrap_texts(fig: Figure) -> None:
    """Wrap titles (panel and figure) and axis labels that would run past their panel."""
    fw, fh = fig.get_size_inches()
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison and not ax.get_title():
            continue
        pos = ax.get_position()  # 0.92: the labels the wrapping adds take a little room
        width, height = max(0.92 * pos.width * fw, 0.8), max(0.92 * pos.height * fh, 0.8)
        for where in ("center", "left", "right"):
            title = ax.get_title(where)
            if title:
                obj = ax.title if where == "center" else axes_side_title(ax, where)
                if obj is None:
                    continue
                wrapped = _wrap(title, width, float(obj.get_fontsize()))
                if wrapped != title:
                    obj.set_text(wrapped)
        for label, size in ((ax.xaxis.label, width), (ax.yaxis.label, height)):
            text = label.get_text()
            if text:
                wrapped = _wrap(text, size, float(label.get_fontsize()))
                if wrapped != text:
                    label.set_text(wrapped)
    sup = figure_suptitle(fig)
    if sup is not None and sup.get_text():
        sup.set_text(_wrap(sup.get_text(), fw * 0.95, float(sup.get_fontsize())))


def finish(fig: Figure | None) -> Figure | None:
    """What every figure gets before it is saved: near-flat autoscaled axes widened
    (:func:`pad_flat_axis`), legends without repeats, long titles and labels wrapped, and a
    layout engine so that nothing is cut (constrained, as :func:`panels` sets it)."""
    if fig is None:
        return None
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison or ax.images or hasattr(ax, "_colorbar"):
            continue
        if ax.get_autoscaley_on():
            pad_flat_axis(ax, "y")
    dedupe_legends(fig)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    engine = fig.get_layout_engine()
    if engine is not None and fig.canvas is not None:
        try:  # lay out once, so that the wrapping sees the panels' final sizes
            engine.execute(fig)
        except Exception:  # noqa: BLE001 - only a better estimate; the save lays out anew
            pass
    wrap_texts(fig)
    return fig


def finished(draw: Callable[[Sequence[Series]], Figure | None]
             ) -> Callable[[Sequence[Series]], Figure | None]:
    """Decorator: the figure ``draw`` returns, passed through :func:`finish`."""
    @functools.wraps(draw)
    def wrapper(series: Sequence[Series]) -> Figure | None:
        return finish(draw(series))
    return wrapper


def series_handles(series: Sequence[Series]) -> list[Line2D]:
    """Legend entries of the series: their colour and legend text."""
    return [Line2D([], [], color=s.colour, lw=2, label=s.legend) for s in series]


def style_handles(styles: dict[str, str], marker: str | None = None) -> list[Line2D]:
    """Legend entries of line styles (label -> linestyle), in grey: what the styles mean."""
    return [Line2D([], [], color="0.3", ls=ls, marker=marker, label=name)
            for name, ls in styles.items()]


def heatmap(ax, fig: Figure, values: np.ndarray, rows: Sequence | np.ndarray,
            cols: Sequence | np.ndarray,
            title: str, ylabel: str, xlabel: str, unit: str, cmap: str = "viridis") -> None:
    """``values`` (rows x cols) as a labelled heatmap with its colour bar; every cell shows
    its number, and a flat grid (the simulator) gets one colour rather than noise."""
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if hi - lo <= 1e-3 * max(abs(hi), 1e-9):  # a flat grid (the simulator): one colour
        lo, hi = hi * 0.9, hi * 1.1 if hi else 1.0
    im = ax.imshow(values, origin="lower", aspect="auto", cmap=cmap, vmin=lo, vmax=hi)
    ax.set_xticks(range(len(cols)), [str(c) for c in cols], fontsize=7)
    ax.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=7)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=8)
    mid = (lo + hi) / 2
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            if np.isfinite(v):
                ax.text(j, i, f"{v:.0f}" if abs(v) >= 10 else f"{v:.2g}", ha="center",
                        va="center", fontsize=6.5, color="white" if v < mid else "black")
    cb = fig.colorbar(im, ax=ax, shrink=0.9)
    cb.set_label(unit, fontsize=7)
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    cb.ax.tick_params(labelsize=7)


def save(fig: Figure, out_dir: Path, name: str) -> tuple[str, str]:
    """Write ``name``.png and ``name``.svg into ``out_dir``; returns the two file names. An
    OSError (a full disk) names the file it was writing (matplotlib's does not)."""
    png, svg = f"{name}.png", f"{name}.svg"
    with matplotlib.rc_context({"svg.hashsalt": "gpumem", "svg.fonttype": "path"}):
        for file, kw in ((png, {"dpi": PNG_DPI, "metadata": {"Software": None}}),
                         (svg, {"metadata": {"Date": None, "Creator": None}})):
            try:
                fig.savefig(out_dir / file, **kw)
            except OSError as e:
                if e.filename:
                    raise
                named = OSError(e.errno, e.strerror or str(e), str(out_dir / file))
                raise named from None
            fig.set_layout_engine("none")  # keep the layout just computed: half the work
    return png, svg

