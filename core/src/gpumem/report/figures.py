"""The report's figures: one function per figure, drawn from the raw datasets.

Each function takes every series of the report and returns a matplotlib ``Figure`` (or
``None`` when no series has anything to draw). Series lacking the experiment are left out;
the page says why (:mod:`gpumem.report.sections`). Curves of several series share one axes,
one colour per series; what cannot be overlaid (heatmaps, the scatter of one chase) gets one
panel per series in the same colour.

No pyplot: figures are plain ``matplotlib.figure.Figure`` objects drawn by the Agg canvas,
so nothing depends on a display or changes matplotlib's global backend. :func:`save` writes
PNG and SVG without timestamps, so the same data give the same files.

Every figure function passes its figure through :func:`finish` (the ``@finished``
decorator): an autoscaled axis whose view spans less than :data:`MIN_REL_SPAN` of its
magnitude is widened (:func:`pad_flat_axis`; ratios use :func:`ratio_axis`, which keeps 1.0
and 5 % either side in view), legends list each label once, and long titles and axis labels
are wrapped to their panel under constrained layout, so nothing is cut.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import matplotlib
import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import LEVEL_OF_PATH
from gpumem.experiment import median_over_repeats
from gpumem.report.runs import Series

PNG_DPI = 100
PANEL_W, PANEL_H = 5.2, 3.4        # inches per panel
ORDER_STYLE = {"coalesced": "-", "warp": "--", "thread": ":"}


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


def _bytes_axis(ax, axis: str = "x") -> None:
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    a.set_major_locator(LogLocator(base=4, numticks=30))
    a.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    a.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _panels(nrows: int, ncols: int, w: float = PANEL_W, h: float = PANEL_H
            ) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(w * ncols, h * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def chase_list(ds: xr.Dataset) -> list[Chase]:
    """The chases of a chase log, without their events (cheap: a search logs a few hundred
    chases but millions of events); :func:`with_events` adds them to the few drawn."""
    pattern = ds["pattern"].values
    paired = ds["paired"].values if "paired" in ds else np.zeros(ds.sizes["chase"], np.int8)
    v = {k: ds[k].values for k in ("path", "stage", "footprint", "stride", "order", "warmup",
                                   "record", "timer_overhead", "median_latency",
                                   "event_threshold", "seed")}
    return [Chase(i, str(v["path"][i]), str(v["stage"][i]), int(v["footprint"][i]),
                  int(v["stride"][i]), str(v["order"][i]), int(v["warmup"][i]),
                  int(v["record"][i]), float(v["timer_overhead"][i]),
                  float(v["median_latency"][i]), float(v["event_threshold"][i]),
                  tuple(int(p) for p in pattern[i][pattern[i] >= 0]), int(v["seed"][i]),
                  paired=bool(paired[i]))
            for i in range(ds.sizes["chase"])]


def with_events(ds: xr.Dataset, c: Chase | None) -> Chase | None:
    """``c`` with its stored events (in record order)."""
    if c is None:
        return None
    sel = np.nonzero(ds["event_chase"].values == c.number)[0]
    sel = sel[np.argsort(ds["event_access"].values[sel], kind="stable")]
    return replace(c, ev_access=ds["event_access"].values[sel],
                   ev_index=ds["event_index"].values[sel],
                   ev_latency=ds["event_latency"].values[sel].astype(float))


def _with(series: Sequence[Series], experiment: str) -> list[tuple[Series, xr.Dataset]]:
    out = []
    for s in series:
        ds = s.raw(experiment)
        if ds is not None:
            out.append((s, ds))
    return out


def _ok(ds: xr.Dataset, var: str) -> xr.DataArray:
    """``var`` with failed or skipped points masked (NaN)."""
    da = ds[var]
    return da.where(ds["point_status"] == 0) if "point_status" in ds else da




def _log_if_spread(ax, values: list[float], axis: str = "y", factor: float = 4.0) -> None:
    """Log scale when the series differ by more than ``factor`` (a GTX 980 beside an H200)."""
    vals = [v for v in values if np.isfinite(v) and v > 0]
    if len(vals) >= 2 and max(vals) / min(vals) > factor:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def _plain(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:g}"


def plain_log(ax, axis: str = "y") -> None:
    """Plain numbers on a log axis (4,500 rather than 4.5 x 10^3); where it spans less than
    two decades, the 2, 3 and 5 multiples are labelled too."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    if a.get_scale() != "log":
        return
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    few = lo > 0 and np.log10(hi / lo) < 2
    a.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
    a.set_minor_formatter(FuncFormatter(
        lambda v, _: _plain(v) if few and f"{v:.0e}"[0] in "235" else ""))


def unique_handles(handles: Sequence, labels: Sequence[str] | None = None
                   ) -> tuple[list, list[str]]:
    """``handles`` (and their labels) without repeats: the first handle of each label."""
    labels = [h.get_label() for h in handles] if labels is None else list(labels)
    seen: dict[str, object] = {}
    for h, lab in zip(handles, labels, strict=True):
        if lab and not lab.startswith("_") and lab not in seen:
            seen[lab] = h
    return list(seen.values()), list(seen)


def _legend(ax, handles: list, **kw) -> None:
    handles, labels = unique_handles(handles)
    if handles:
        ax.legend(handles=handles, labels=labels, fontsize=7, framealpha=0.85,
                  handlelength=3.2, **kw)


def _fig_legend(fig: Figure, handles: list) -> None:
    """One legend below all panels (where it hides no curve)."""
    handles, labels = unique_handles(handles)
    if handles:
        fig.legend(handles=handles, labels=labels, loc="outside lower center",
                   ncols=min(4, len(handles)), fontsize=7, frameon=False, handlelength=3.2)


def dedupe_legends(fig: Figure) -> None:
    """Every legend of ``fig`` (per axes and figure-wide) with each label once: a legend
    drawn from ``ax.legend()`` of several series would otherwise repeat a style's entry."""
    owners = [a for a in fig.axes if a.get_legend() is not None]
    for owner in [*owners, fig]:
        legends = [owner.get_legend()] if owner is not fig else list(fig.legends)
        for leg in legends:
            if leg is None:
                continue
            handles = getattr(leg, "legend_handles", None)
            handles = list(handles if handles is not None else leg.legendHandles)
            labels = [t.get_text() for t in leg.get_texts()]
            keep, kept_labels = unique_handles(handles, labels)
            if len(keep) == len(handles):
                continue
            kw = dict(loc=leg._loc, fontsize=leg._fontsize, frameon=leg.get_frame_on(),
                      handlelength=leg.handlelength, ncols=min(leg._ncols, len(keep)))
            if owner is fig:
                names = {v: k for k, v in Legend.codes.items()}
                if getattr(leg, "_outside_loc", None) and leg._loc in names:
                    kw["loc"] = f"outside {names[leg._loc]}"  # e.g. outside lower center
                fig.legends.remove(leg)
                fig.legend(handles=keep, labels=kept_labels, **kw)
            else:
                owner.legend(handles=keep, labels=kept_labels, **kw)


def legend_labels(fig: Figure) -> list[list[str]]:
    """The labels of every legend of ``fig`` (tests: no label twice in one legend)."""
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
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
                obj = ax.title if where == "center" else getattr(ax, f"_{where}_title")
                wrapped = _wrap(title, width, obj.get_fontsize())
                if wrapped != title:
                    obj.set_text(wrapped)
        for label, size in ((ax.xaxis.label, width), (ax.yaxis.label, height)):
            text = label.get_text()
            if text:
                wrapped = _wrap(text, size, label.get_fontsize())
                if wrapped != text:
                    label.set_text(wrapped)
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text():
        sup.set_text(_wrap(sup.get_text(), fw * 0.95, sup.get_fontsize()))


def finish(fig: Figure | None) -> Figure | None:
    """What every figure gets before it is saved: near-flat autoscaled axes widened
    (:func:`pad_flat_axis`), legends without repeats, long titles and labels wrapped, and a
    layout engine so that nothing is cut (constrained, as :func:`_panels` sets it)."""
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


def _series_handles(series: Sequence[Series]) -> list[Line2D]:
    return [Line2D([], [], color=s.colour, lw=2, label=s.legend) for s in series]


def _style_handles(styles: dict[str, str], marker: str | None = None) -> list[Line2D]:
    return [Line2D([], [], color="0.3", ls=ls, marker=marker, label=name)
            for name, ls in styles.items()]


def save(fig: Figure, out_dir: Path, name: str) -> tuple[str, str]:
    """Write ``name``.png and ``name``.svg into ``out_dir``; returns the two file names."""
    png, svg = f"{name}.png", f"{name}.svg"
    with matplotlib.rc_context({"svg.hashsalt": "gpumem", "svg.fonttype": "path"}):
        fig.savefig(out_dir / png, dpi=PNG_DPI, metadata={"Software": None})
        fig.set_layout_engine("none")  # keep the layout just computed: half the work
        fig.savefig(out_dir / svg, metadata={"Date": None, "Creator": None})
    return png, svg


# ---------------------------------------------------------------------------------------------
# latency ladder
# ---------------------------------------------------------------------------------------------

_LEVELS = (("lat.l1", "L1"), ("lat.l2", "L2"), ("lat.l2_far", "L2 far"),
           ("lat.dram", "DRAM"), ("lat.dram_tlb_miss", "DRAM + TLB miss"))
_KNEES = (("l1d.size", "L1"), ("l2.near_size", "L2 near"), ("l2.size", "L2"))
_REACH = (("tlb_l1.reach", "L1 TLB reach"), ("tlb_l2.reach", "L2 TLB reach"))


def _ladder_curve(ds: xr.Dataset, order: str) -> tuple[np.ndarray, np.ndarray]:
    """(footprints, per-access latency without timer overhead) of one chain order."""
    if "order" not in ds.dims or order not in ds["order"].values:
        return np.array([]), np.empty((0, 0))
    sel = ds.sel(order=order)
    lat = (sel["latency"] - sel["timer_overhead"]).transpose("footprint", "access")
    ok = sel["point_status"].values == 0 if "point_status" in sel else \
        np.ones(sel.sizes["footprint"], bool)
    return sel["footprint"].values.astype(float)[ok], lat.values.astype(float)[ok]


@finished
def latency_ladder(series: Sequence[Series]) -> Figure | None:
    """Median latency over footprint, sequential and random chains, knees and levels marked."""
    data = _with(series, "latency")
    if not data:
        return None
    fig, axs = _panels(1, 1, 11.5, 5.6)
    ax = axs[0, 0]
    xmax = 0.0
    for s, ds in data:
        for order, ls in (("sequential", "-"), ("random", "--")):
            x, samples = _ladder_curve(ds, order)
            if x.size == 0:
                continue
            with np.errstate(all="ignore"):
                med = np.nanmedian(samples, axis=1)
                lo, hi = np.nanpercentile(samples, [10, 90], axis=1)
            ax.plot(x, med, ls=ls, color=s.colour, lw=1.6 if ls == "-" else 1.2,
                    marker="." if ls == "-" else None, ms=3)
            if order == "sequential":
                ax.fill_between(x, lo, hi, color=s.colour, alpha=0.12, lw=0)
            xmax = max(xmax, float(x.max()))
    ymax = ax.get_ylim()[1]
    xmin = min(float(ds["footprint"].values.min()) for _, ds in data)
    for i, (s, _) in enumerate(data):  # labels of later series stacked, not on top
        for name, text in _KNEES:
            v = s.value("latency", name)
            if v:
                ax.axvline(v, color=s.colour, ls=":", lw=1)
                ax.annotate(f"{text} knee {size_label(v)}", (v, 0.99 - 0.2 * (i % 4)),
                            xycoords=("data", "axes fraction"), rotation=90, va="top",
                            ha="right", fontsize=7, color=s.colour)
        for name, text in _REACH:
            v = s.value("tlb_structure", name)
            if v and v <= 2 * xmax:
                ax.axvline(v, color=s.colour, ls="-.", lw=0.9, alpha=0.8)
                ax.annotate(f"{text} {size_label(v)}", (v, 0.01 + 0.2 * (i % 4)),
                            xycoords=("data", "axes fraction"), rotation=90, va="bottom",
                            ha="right", fontsize=7, color=s.colour)
        starts = {"lat.l1": xmin, "lat.l2": s.value("latency", "l1d.size"),
                  "lat.l2_far": s.value("latency", "l2.near_size"),
                  "lat.dram": s.value("latency", "l2.size"), "lat.dram_tlb_miss": xmax}
        for name, text in _LEVELS:
            v = s.value("latency", name)
            if v is None:
                continue
            at = starts.get(name) or xmin
            ha = "right" if name == "lat.dram_tlb_miss" else "left"
            ax.annotate(f"{text} {v:.0f}", (at * (1.15 if ha == "left" else 1), v),
                        xytext=(0, 4 + 11 * (i % 4)), textcoords="offset points", fontsize=8,
                        color=s.colour, ha=ha, va="bottom", fontweight="bold")
            ax.plot([at], [v], marker="_", ms=14, color=s.colour, mew=2)
    ax.set_ylim(0, max(ymax, ax.get_ylim()[1]) * 1.05)
    _bytes_axis(ax, "x")
    ax.set_xlabel("footprint (bytes spanned by the chain; log scale)")
    ax.set_ylabel("latency per access (cycles, timer overhead removed)")
    ax.set_title("Latency ladder: median per footprint, 10-90 % band (sequential)")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, _series_handles([s for s, _ in data])
            + _style_handles({"sequential, stride 128 B": "-", "random order": "--"}),
            loc="center left")
    return fig


# ---------------------------------------------------------------------------------------------
# fine-grained chases (cache_structure, tlb_structure)
# ---------------------------------------------------------------------------------------------


def _chase_panel(ax, s: Series, c: Chase | None, title: str, window: int | None = None,
                 grid_every: int | None = None, grid_phase: int = 0, ylabel: str = "") -> None:
    """Latency (or pair difference) of each stored access of one chase, by access index."""
    if c is None:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"{s.label}: no such chase", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
        return
    acc, lat = c.ev_access, c.ev_latency
    n = c.record if window is None else min(window, c.record)
    keep = acc < n
    acc, lat = acc[keep], lat[keep]
    all_kept = not np.isfinite(c.threshold)
    if lat.size:
        top = max(float(np.percentile(lat, 99.5)) * 1.15,
                  (c.threshold if np.isfinite(c.threshold) else 0) * 1.3, c.median * 1.3)
        bottom = min(0.0, float(np.percentile(lat, 0.5)) * 1.15)
    else:
        top, bottom = max(c.median, c.threshold if np.isfinite(c.threshold) else 0) * 1.5, 0
    above = int((lat > top).sum())
    what = "pairs" if c.paired else "accesses"
    ax.plot(acc, np.minimum(lat, top), ls="none", marker="o", mew=0, color=s.colour,
            ms=1.6 if lat.size > 2000 else 3, rasterized=True)
    if np.isfinite(c.threshold):
        ax.axhline(c.threshold, color="0.45", ls="--", lw=0.8)
        ax.annotate(f"event threshold {c.threshold:.0f}: {what} below it are not stored",
                    (0.01, c.threshold), xycoords=("axes fraction", "data"), xytext=(0, -2),
                    textcoords="offset points", fontsize=6.5, color="0.35", va="top",
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8))
    ax.axhline(c.median, color=s.colour, lw=0.8, alpha=0.7)
    ax.annotate(f"median {c.median:.0f}", (0.99, c.median), xycoords=("axes fraction", "data"),
                xytext=(0, 2), textcoords="offset points", fontsize=6.5, color=s.colour,
                ha="right", va="bottom",
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8))
    if grid_every:
        for x in range(grid_phase, n, grid_every):
            ax.axvline(x, color="0.85", lw=0.5, zorder=0)
    ax.set_xlim(-0.5, n)
    ax.set_ylim(bottom, top)
    shown = f"{keep.sum()} of {n // 2 if c.paired else n} {what}" if not all_kept else \
        f"all {keep.sum()} {what}"
    notes = [f"{above} off scale"] if above else []
    if c.observed < c.record:
        notes.append(f"log cut after {c.observed}")
    ax.set_title(f"{title}\n{c.footprint} B, stride {c.stride} B, '{c.path}': {shown}"
                 + (f" ({', '.join(notes)})" if notes else ""), fontsize=8)
    ax.set_xlabel("access index in the record" + (" (first of the pair)" if c.paired else ""),
                  fontsize=8)
    ax.set_ylabel(ylabel or "latency (cycles)", fontsize=8)
    ax.tick_params(labelsize=7)


def _size_finding(s: Series, path: str) -> int | None:
    for f in s.findings("cache_structure"):
        if f.name.endswith(".overflow_size") and f"path '{path}'" in f.method \
                and isinstance(f.value, (int, float)):
            return int(f.value)
    v = s.value("cache_structure", f"{LEVEL_OF_PATH.get(path, path)}.overflow_size")
    return int(v) if v else None


def _first_path(chases: list[Chase]) -> str | None:
    paths = [c.path for c in chases if c.stage == "size"]
    for p in LEVEL_OF_PATH:
        if p in paths:
            return p
    return paths[0] if paths else None


@finished
def cache_overflow(series: Sequence[Series]) -> Figure | None:
    """The size search of the first load path (the L1): the chase at the capacity, the one
    just past it, and the one a quarter past it."""
    rows = []
    for s, ds in _with(series, "cache_structure"):
        chases = chase_list(ds)
        path = _first_path(chases)
        cap = _size_finding(s, path) if path else None
        if path is None or cap is None:
            continue
        size = sorted((c for c in chases if c.path == path and c.stage == "size"),
                      key=lambda c: c.footprint)
        at = max((c for c in size if c.footprint <= cap), key=lambda c: c.footprint,
                 default=None)
        past = min((c for c in size if c.footprint > cap), key=lambda c: c.footprint,
                   default=None)
        quarter = min((c for c in size if c.footprint >= 1.2 * cap and c is not past),
                      key=lambda c: c.footprint, default=None)
        rows.append((s, path, cap, *(with_events(ds, c) for c in (at, past, quarter))))
    if not rows:
        return None
    fig, axs = _panels(len(rows), 3, 4.6, 3.3)
    for i, (s, path, cap, at, past, quarter) in enumerate(rows):
        name = f"{s.legend}, path '{path}'"
        _chase_panel(axs[i, 0], s, at, f"{name}\nat the capacity ({cap} B)")
        _chase_panel(axs[i, 1], s, past, f"{name}\njust past the capacity "
                     f"(+{past.footprint - cap if past else 0} B)")
        _chase_panel(axs[i, 2], s, quarter, f"{name}\na quarter past the capacity")
    fig.suptitle("Cache size search: latency of each access (32-B stride), misses stand out",
                 fontsize=10)
    return fig


@finished
def cache_fill(series: Sequence[Series]) -> Figure | None:
    """Fill granularity: the L1 stride-4 chase at twice the capacity, and the cold L2 chase
    through the L2-only path (every access stored), first few hundred accesses."""
    rows = []
    for s, ds in _with(series, "cache_structure"):
        chases = chase_list(ds)
        path = _first_path(chases)
        fill = next((c for c in chases if c.stage == "fill" and c.path == path), None)
        l2 = next((c for c in chases if c.stage == "l2fill"), None)
        if fill is not None or l2 is not None:
            rows.append((s, path, with_events(ds, fill), with_events(ds, l2)))
    if not rows:
        return None
    fig, axs = _panels(len(rows), 2, 6.2, 3.3)
    for i, (s, path, fill, l2) in enumerate(rows):
        level = LEVEL_OF_PATH.get(path or "", "l1d")
        sector = s.value("cache_structure", f"{level}.sector")
        _chase_panel(axs[i, 0], s, fill, f"{s.legend}\n'{path}' fill chase at twice the "
                     f"capacity (grid: {int(sector) if sector else '?'}-B sectors)",
                     window=512, grid_every=int(sector) // 4 if sector else None)
        unit = s.value("cache_structure", "l2.fill_unit")
        phase = 0
        if l2 is not None and unit and l2.ev_index.size:
            first = int(l2.ev_index[0])
            phase = (-first) % (int(unit) // 4)
        _chase_panel(axs[i, 1], s, l2, f"{s.legend}\ncold L2 chase, 4-B stride (grid: "
                     f"l2.fill_unit {int(unit) if unit else '?'} B)", window=256,
                     grid_every=int(unit) // 4 if unit else None, grid_phase=phase)
    fig.suptitle("Fill granularity: one miss per sector (L1) and per fill unit (L2)",
                 fontsize=10)
    return fig


def _pages(c: Chase) -> int:
    return c.footprint // max(1, c.stride)


@finished
def tlb_pairs(series: Sequence[Series]) -> Figure | None:
    """Pair differences (first access of a page minus the next word) of three chases: TLB
    hits, one page past the L1 TLB, and the longest L2-TLB chase."""
    rows = []
    for s, ds in _with(series, "tlb_structure"):
        chases = chase_list(ds)
        base = next((c for c in chases if c.stage == "base"), None)
        if base is None:
            continue
        l1 = sorted((c for c in chases if c.stage == "l1"), key=_pages)
        entries = s.value("tlb_structure", "tlb_l1.entries")
        past = next((c for c in l1 if entries and _pages(c) == int(entries) + 1), None)
        if past is None and l1:
            past = l1[-1]
        l2 = max((c for c in chases if c.stage in ("l2", "sets")), key=_pages, default=None)
        rows.append((s, with_events(ds, base), with_events(ds, past), with_events(ds, l2)))
    if not rows:
        return None
    fig, axs = _panels(len(rows), 3, 4.6, 3.3)
    ylabel = "first minus second access (cycles)"
    for i, (s, base, past, l2) in enumerate(rows):
        _chase_panel(axs[i, 0], s, base, f"{s.legend}\nTLB hits ({_pages(base)} pages)",
                     ylabel=ylabel)
        _chase_panel(axs[i, 1], s, past, f"{s.legend}\nL1 TLB overflow "
                     f"({_pages(past) if past else 0} pages)", ylabel=ylabel)
        _chase_panel(axs[i, 2], s, l2, f"{s.legend}\nlongest L2-TLB chase "
                     f"({_pages(l2) if l2 else 0} pages)", ylabel=ylabel)
    fig.suptitle("TLB chases: pair differences cancel the L2 hit, leaving the TLB miss",
                 fontsize=10)
    return fig


@finished
def tlb_ladder(series: Sequence[Series]) -> Figure | None:
    """Where each TLB level was decided: every question of the search (replayed from the
    stored chases), its pooled median pair difference with the margin it was judged by,
    against the threshold; filled marks rose, open marks did not, crosses stayed open. Panels:
    the L1 TLB (pages at a large stride), the page (a fixed page count at halving strides),
    the next level (pages at the page stride)."""
    from gpumem.experiments.tlb_structure import SHIFT, decisions

    data = [(s, decisions(ds)) for s, ds in _with(series, "tlb_structure")]
    data = [(s, d) for s, d in data if d]
    if not data:
        return None
    fig, axs = _panels(1, 3, 4.6, 3.8)
    panels = ((("l1",), "pages touched (log scale)", "L1 TLB: pages at a large stride",
               "tlb_l1.entries", 1),
              (("page",), "stride (MB, log scale)", "page: E1 + 1 pages, halving strides",
               "tlb.page", 0),
              (("l2",), "pages touched (log scale)", "next level: pages at the page stride",
               "tlb_l2.entries", 1))
    for ax, (stages, xlabel, title, finding, plus) in zip(axs[0], panels, strict=True):
        for s, trace in data:
            pts = [d for d in trace if d.stage in stages and np.isfinite(d.median)]
            if not pts:
                continue
            xs = [d.pages if stages != ("page",) else (d.stride - SHIFT) / (1 << 20)
                  for d in pts]
            ys = [d.median - d.below for d in pts]
            ax.errorbar(xs, ys, yerr=[d.margin for d in pts], fmt="none", ecolor=s.colour,
                        alpha=0.5, lw=1)
            for x, y, d in zip(xs, ys, pts, strict=True):
                if d.verdict is True:
                    ax.plot(x, y, "o", color=s.colour, ms=5)
                elif d.verdict is False:
                    ax.plot(x, y, "o", mfc="white", mec=s.colour, ms=5)
                else:
                    ax.plot(x, y, "x", color="crimson", ms=7, mew=2)
            ax.axhline(pts[0].threshold, color=s.colour, ls="--", lw=0.8)
            v = s.value("tlb_structure", finding)
            if v:
                at = v / (1 << 20) if finding == "tlb.page" else v + plus
                ax.axvline(at, color=s.colour, ls=":", lw=1)
                ax.annotate(f"{finding} = {int(v) >> 20 if finding == 'tlb.page' else int(v)}"
                            f"{' MB' if finding == 'tlb.page' else ''}", (at, 0.98),
                            xycoords=("data", "axes fraction"), rotation=90, va="top",
                            ha="right", fontsize=7, color=s.colour)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("median pair difference above the level below (cycles)")
        ax.set_title(title, fontsize=9)
        ax.grid(True, alpha=0.3)
    _legend(axs[0, 0], _series_handles([s for s, _ in data]) + [
        Line2D([], [], color="0.3", marker="o", ls="none", label="rose (a level reached)"),
        Line2D([], [], mfc="white", mec="0.3", marker="o", ls="none", label="did not rise"),
        Line2D([], [], color="crimson", marker="x", ls="none", label="open (unresolved)"),
        Line2D([], [], color="0.3", ls="--", label="threshold")], loc="upper left")
    fig.suptitle("TLB decisions: each point is one question, judged with its margin (error bar)",
                 fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# bandwidth
# ---------------------------------------------------------------------------------------------


def _heatmap(ax, fig: Figure, values: np.ndarray, rows: Sequence, cols: Sequence,
             title: str, ylabel: str, xlabel: str, unit: str, cmap: str = "viridis") -> None:
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
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
    cb.ax.tick_params(labelsize=7)


@finished
def dram_heatmaps(series: Sequence[Series]) -> Figure | None:
    """DRAM bandwidth over CTAs x threads, per kind, at the ILP and width of the best point."""
    data = _with(series, "bandwidth")
    if not data:
        return None
    kinds = [k for k in ("read", "write", "copy")
             if any(k in ds["kind"].values for _, ds in data)]
    fig, axs = _panels(len(data), len(kinds), 4.4, 3.4)
    for i, (s, ds) in enumerate(data):
        med = median_over_repeats(_ok(ds, "gbs"))
        for j, kind in enumerate(kinds):
            ax = axs[i, j]
            if kind not in ds["kind"].values or not np.isfinite(med.sel(kind=kind).values).any():
                ax.set_axis_off()
                continue
            m = med.sel(kind=kind)
            best = m.where(m == m.max(), drop=True)
            at = {d: best[d].values[0].item() for d in ("ilp", "width") if d in best.dims}
            grid = m.sel(at).transpose("ctas", "threads")
            _heatmap(ax, fig, grid.values, grid["ctas"].values, grid["threads"].values,
                     f"{s.legend}\n{kind}: ILP {at.get('ilp', '?')}, {at.get('width', '?')} B "
                     f"(best {float(m.max()):.0f} GB/s)", "CTAs", "threads per CTA", "GB/s")
    fig.suptitle("DRAM bandwidth (median of repeats) over CTAs x threads, at the best point's "
                 "ILP and width", fontsize=10)
    return fig


@finished
def smem_heatmaps(series: Sequence[Series]) -> Figure | None:
    """Shared-memory throughput per SM over warps x ILP."""
    data = _with(series, "smem_bandwidth")
    if not data:
        return None
    fig, axs = _panels(1, len(data), 5.0, 3.6)
    for j, (s, ds) in enumerate(data):
        m = median_over_repeats(_ok(ds, "bytes_per_cycle")).transpose("warps", "ilp")
        _heatmap(axs[0, j], fig, m.values, m["warps"].values, m["ilp"].values,
                 f"{s.legend}\npeak {float(np.nanmax(m.values)):.1f} B/cycle per SM",
                 "active warps per SM", "independent loads per thread (ILP)",
                 "bytes per SM cycle", cmap="magma")
    fig.suptitle("Shared-memory throughput over warps x ILP", fontsize=10)
    return fig


@finished
def bandwidth_levels(series: Sequence[Series]) -> Figure | None:
    """Read bandwidth over footprint through .ca (L1) and .cg (L2 only): level plateaus."""
    data = _with(series, "bandwidth_levels")
    if not data:
        return None
    fig, axs = _panels(1, 1, 9.5, 4.4)
    ax = axs[0, 0]
    for s, ds in data:
        med = median_over_repeats(_ok(ds, "gbs")).max("ctas")
        for path, ls in (("ca", "-"), ("cg", "--")):
            if path in ds["path"].values:
                ax.plot(ds["footprint"].values, med.sel(path=path).values, ls=ls,
                        marker=".", color=s.colour, lw=1.4)
        l2 = float(ds.attrs.get("l2_bytes", 0) or 0)
        if l2:
            ax.axvline(l2, color=s.colour, ls=":", lw=1)
            ax.annotate(f"L2 {size_label(l2)}", (l2, 0.98), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=7, color=s.colour)
    _bytes_axis(ax, "x")
    ax.set_yscale("log")
    plain_log(ax)
    ax.set_xlabel("footprint streamed by all SMs (log scale)")
    ax.set_ylabel("read bandwidth (GB/s, best of the two occupancies)")
    ax.set_title("Bandwidth over footprint: L1, L2 and DRAM plateaus")
    ax.grid(True, which="both", alpha=0.25)
    _legend(ax, _series_handles([s for s, _ in data])
            + _style_handles({".ca (L1 and L2)": "-", ".cg (L2 only)": "--"}))
    return fig


# ---------------------------------------------------------------------------------------------
# ILP, cp.async, bank conflicts
# ---------------------------------------------------------------------------------------------


def _ilp_footprints(ds: xr.Dataset) -> list[tuple[str, int, int]]:
    """(panel title, footprint, reverse) as the analysis picks them: the largest L2-resident
    footprint, and the HBM footprint nearest eight L2s, forward and backward."""
    l2 = float(ds.attrs.get("l2_bytes", 0) or 0)
    foot = [int(f) for f in ds["footprint"].values]
    resident = [f for f in foot if l2 and f <= l2 / 2]
    hbm = [f for f in foot if not l2 or f >= 4 * l2]
    out = []
    if resident:
        out.append(("L2-resident", max(resident), 0))
    if hbm:
        f = min(hbm, key=lambda x: abs(x - 8 * l2)) if l2 else hbm[0]
        out.append(("DRAM-resident", f, 0))
        if 1 in ds["reverse"].values:
            out.append(("DRAM-resident, chunks walked backwards", f, 1))
    return out


@finished
def ilp_sweep(series: Sequence[Series]) -> Figure | None:
    """Bandwidth over K (independent loads per thread, fixed work) by address ordering."""
    data = [(s, ds, _ilp_footprints(ds)) for s, ds in _with(series, "ilp")]
    data = [d for d in data if d[2]]
    if not data:
        return None
    titles = []
    for _, _, picks in data:
        for t, _, _ in picks:
            if t not in titles:
                titles.append(t)
    fig, axs = _panels(1, len(titles), 4.8, 3.8)
    peaks: dict[str, list[float]] = {t: [] for t in titles}
    for s, ds, picks in data:
        gbs = _ok(ds, "gbs")
        med = median_over_repeats(gbs)
        lo = gbs.min("repeat") if "repeat" in gbs.dims else med
        hi = gbs.max("repeat") if "repeat" in gbs.dims else med
        for title, f, rev in picks:
            ax = axs[0, titles.index(title)]
            for order in ds["order"].values:
                sel = dict(footprint=f, order=order, reverse=rev)
                k = ds["ilp"].values
                y = med.sel(sel).values
                ax.plot(k, y, ls=ORDER_STYLE.get(str(order), "-."), marker="o", ms=3,
                        color=s.colour, lw=1.4)
                ax.fill_between(k, lo.sel(sel).values, hi.sel(sel).values, color=s.colour,
                                alpha=0.1, lw=0)
                peaks[title].append(float(np.nanmax(y)) if np.isfinite(y).any() else np.nan)
            ax.set_title(f"{title}\n" + ", ".join(dict.fromkeys(
                size_label(f2) for s2, d2, p2 in data for t2, f2, r2 in p2 if t2 == title)),
                fontsize=8)
    for t, ax in zip(titles, axs[0]):
        _log_if_spread(ax, peaks[t])
        plain_log(ax)
        ax.set_xlabel("independent loads per thread K", fontsize=8)
        ax.set_ylabel("read bandwidth (GB/s, median; band min-max)", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    _fig_legend(fig, _series_handles([s for s, _, _ in data])
                + _style_handles({f"{o} ordering": ls for o, ls in ORDER_STYLE.items()}))
    fig.suptitle("ILP sweep at fixed work: bandwidth over K by address ordering", fontsize=10)
    return fig


@finished
def cpasync_speedup(series: Sequence[Series]) -> Figure | None:
    """cp.async over matched plain loads, over groups in flight, at both occupancies."""
    data = _with(series, "cpasync")
    if not data:
        return None
    fig, axs = _panels(1, 2, 5.6, 3.8)
    ax, bx = axs[0]
    thread_styles: dict[str, str] = {}
    peaks: list[float] = []
    ratios: list[float] = []
    for s, ds in data:
        med = median_over_repeats(_ok(ds, "gbs"))
        threads = sorted(int(t) for t in ds["threads"].values)
        for t in threads:
            ls = "-" if t == threads[-1] else "--"
            thread_styles[f"{t} threads per CTA"] = ls
            g = ds["groups"].values
            ratio = med.sel({"method": "cpasync", "threads": t}) / \
                med.sel({"method": "plain", "threads": t})
            ax.plot(g, ratio.values, ls=ls, marker="o", ms=4, color=s.colour)
            ratios += [float(v) for v in np.ravel(ratio.values)]
            for method, marker in (("plain", "s"), ("cpasync", "o")):
                y = med.sel({"method": method, "threads": t}).values
                bx.plot(g, y, ls=ls, marker=marker, ms=4, color=s.colour,
                        mfc="white" if method == "plain" else s.colour)
                peaks.append(float(np.nanmax(y)) if np.isfinite(y).any() else np.nan)
    ax.axhline(1.0, color="0.4", lw=0.8)
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        a.set_xlabel("groups (independent loads) in flight per thread", fontsize=8)
        a.grid(True, alpha=0.3)
        a.tick_params(labelsize=7)
    ratio_axis(ax, ratios)  # 1.0 (no change) in view, at least 5 % around the data
    ax.set_ylabel("speed-up: cp.async / plain loads", fontsize=8)
    ax.set_title("cp.async speed-up over groups", fontsize=9)
    _log_if_spread(bx, peaks)
    plain_log(bx)
    bx.set_ylabel("read bandwidth (GB/s, median)", fontsize=8)
    bx.set_title("the two methods (filled: cp.async, open: plain)", fontsize=9)
    _fig_legend(fig, _series_handles([s for s, _ in data]) + _style_handles(thread_styles))
    return fig


@finished
def bank_conflicts(series: Sequence[Series]) -> Figure | None:
    """Shared-memory latency over stride (words between neighbouring threads), per bank mode."""
    data = _with(series, "smem_latency")
    if not data:
        return None
    fig, axs = _panels(1, 1, 9.5, 4.2)
    ax = axs[0, 0]
    mode_styles: dict[str, str] = {}
    labelled: set[int] = set()
    for s, ds in data:
        lat = _ok(ds, "latency")
        med = median_over_repeats(lat)
        for i, mode in enumerate(ds["bank_mode"].values):
            ls = ("-", "--", ":")[i % 3]
            mode_styles[f"{int(mode)}-byte bank mode"] = ls
            x = ds["stride"].values
            ax.plot(x, med.sel(bank_mode=mode).values, ls=ls, marker="o", ms=3,
                    color=s.colour, lw=1.3)
            if "repeat" in lat.dims:
                ax.fill_between(x, lat.sel(bank_mode=mode).min("repeat").values,
                                lat.sel(bank_mode=mode).max("repeat").values,
                                color=s.colour, alpha=0.12, lw=0)
        f = s.finding("smem_latency", "smem.conflict_latency")
        width = s.value("smem_latency", "smem.bank_width") or 4
        if f is not None and f.index and isinstance(f.value, list):
            per = 2 if width == 8 else 1
            for ways, v in zip(f.index[1], f.value):
                if v is not None and ways > 1 and ways * per not in labelled:
                    labelled.add(ways * per)
                    ax.annotate(f"{ways}-way", (ways * per, v), xytext=(3, -9),
                                textcoords="offset points", fontsize=7, color=s.colour)
    ax.set_xlabel("stride (4-byte words between neighbouring threads)")
    ax.set_ylabel("latency per access (cycles, median; band min-max)")
    ax.set_title("Bank conflicts: one warp, thread t at word t x stride")
    ax.set_xticks([0, 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64])
    ax.grid(True, alpha=0.3)
    _legend(ax, _series_handles([s for s, _ in data]) + _style_handles(mode_styles),
            loc="upper left")
    return fig


@finished
def cache_lines(series: Sequence[Series]) -> Figure | None:
    """Miss share of the scattered chases over block size, one panel per level: a plateau
    up to the line, a fall past it."""
    from gpumem.experiments.cache_structure import scatter_shares_by_path

    data = []
    for s, ds in _with(series, "cache_structure"):
        wanted = [with_events(ds, c) for c in chase_list(ds)
                  if c.stage in ("scatter", "l2hit", "l2scatter")]
        shares = scatter_shares_by_path(wanted)
        if shares:
            data.append((s, shares))
    if not data:
        return None
    levels = sorted({k for _, sh in data for k in sh}, key=lambda k: (k == "l2", k))
    fig, axs = _panels(1, len(levels), 3.6, 3.2)
    for ax, level in zip(axs[0], levels):
        for s, sh in data:
            if level not in sh:
                continue
            x = sorted(sh[level])
            ax.plot(x, [100 * sh[level][b] for b in x], marker="o", ms=4, color=s.colour)
            line = s.value("cache_structure", f"{LEVEL_OF_PATH.get(level, level)}.line")
            if line:
                ax.axvline(line, color=s.colour, ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_ylim(-3, 105)
        ax.set_xlabel("block (bytes; one access per block)", fontsize=8)
        ax.set_title("L2 (.cg), DRAM share" if level == "l2" else
                     f"path '{level}' ({LEVEL_OF_PATH.get(level, level)})", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    axs[0][0].set_ylabel("accesses that miss (%)", fontsize=8)
    _fig_legend(fig, _series_handles([s for s, _ in data]))
    return fig


@finished
def bulk_copy(series: Sequence[Series]) -> Figure | None:
    """TMA bulk-copy bandwidth over the bytes each SM has in flight (Little's law)."""
    data = _with(series, "bulk_copy")
    if not data:
        return None
    fig, axs = _panels(1, 1, 7.0, 4.0)
    ax = axs[0, 0]
    markers = {1: "o", 2: "s", 4: "^", 8: "D", 16: "v"}
    peaks = []
    for s, ds in data:
        med = median_over_repeats(_ok(ds, "gbs"))
        for c in ds["ctas_per_sm"].values:
            xs, ys = [], []
            for chunk in ds["chunk"].values:
                for st in ds["stages"].values:
                    v = float(med.sel(chunk=chunk, stages=st, ctas_per_sm=c))
                    if np.isfinite(v):
                        xs.append(int(chunk) * int(st) * int(c))
                        ys.append(v)
            order = np.argsort(xs)
            ax.plot(np.array(xs)[order], np.array(ys)[order], ls="none",
                    marker=markers.get(int(c), "o"), ms=4, color=s.colour, alpha=0.8)
            peaks += ys
        peak = float(ds.attrs.get("peak_bandwidth_gbs", 0) or 0)
        if peak:
            ax.axhline(peak, color=s.colour, ls="--", lw=0.8)
    ax.set_xscale("log", base=2)
    _bytes_axis(ax)
    ax.set_yscale("log")
    plain_log(ax)
    ax.set_xlabel("bytes in flight per SM (blocks x stages x chunk)")
    ax.set_ylabel("HBM -> shared memory (GB/s, median)")
    ax.set_title("TMA bulk copies (dashed: theoretical peak)")
    ax.grid(True, alpha=0.3)
    _legend(ax, _series_handles([s for s, _ in data]) +
            [Line2D([], [], color="0.3", ls="none", marker=m, label=f"{c} block(s) per SM")
             for c, m in markers.items() if c in {int(x) for _, d in data
                                                  for x in d["ctas_per_sm"].values}],
            loc="lower right")
    return fig


@finished
def dsmem(series: Sequence[Series]) -> Figure | None:
    """Distributed shared memory: latency by rank distance; throughput over warps."""
    lat = _with(series, "dsmem_latency")
    bw = _with(series, "dsmem_bandwidth")
    if not lat and not bw:
        return None
    fig, axs = _panels(1, 2, 5.0, 3.6)
    ax, bx = axs[0]
    for s, ds in lat:
        med = median_over_repeats(_ok(ds, "latency"))
        for c in ds["cluster"].values:
            row = med.sel(cluster=c)
            ok = np.isfinite(row.values)
            ax.plot(row["distance"].values[ok], row.values[ok], marker="o", ms=4,
                    color=s.colour, alpha=0.4 + 0.6 * (int(c) == int(ds["cluster"].max())))
    ax.set_xlabel("rank distance (0: own block)", fontsize=8)
    ax.set_ylabel("cycles per dependent load (median)", fontsize=8)
    ax.set_title("latency, clusters of 2-8 (darkest: largest)", fontsize=9)
    styles = {"own block": "-", "next block": "--"}
    for s, ds in bw:
        med = median_over_repeats(_ok(ds, "bytes_per_cycle")).max("ilp", skipna=True)
        for dist, ls in ((0, "-"), (1, "--")):
            y = med.sel(distance=dist).max("cluster", skipna=True)
            bx.plot(y["warps"].values, y.values, ls=ls, marker="o", ms=4, color=s.colour)
    bx.set_xscale("log", base=2)
    bx.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bx.set_xlabel("warps per block (one block per SM)", fontsize=8)
    bx.set_ylabel("bytes per SM cycle (best ILP, median)", fontsize=8)
    bx.set_title("throughput: own vs next block", fontsize=9)
    for a in (ax, bx):
        a.grid(True, alpha=0.3)
        a.tick_params(labelsize=7)
    _fig_legend(fig, _series_handles([s for s, _ in lat or bw]) + _style_handles(styles))
    return fig


#: name -> (function, experiment it draws); the page's sections refer to these names.
FIGURES: dict[str, tuple[Callable[[Sequence[Series]], Figure | None], str]] = {
    "latency_ladder": (latency_ladder, "latency"),
    "cache_overflow": (cache_overflow, "cache_structure"),
    "cache_fill": (cache_fill, "cache_structure"),
    "tlb_pairs": (tlb_pairs, "tlb_structure"),
    "tlb_ladder": (tlb_ladder, "tlb_structure"),
    "dram_heatmaps": (dram_heatmaps, "bandwidth"),
    "smem_heatmaps": (smem_heatmaps, "smem_bandwidth"),
    "bandwidth_levels": (bandwidth_levels, "bandwidth_levels"),
    "ilp_sweep": (ilp_sweep, "ilp"),
    "cpasync_speedup": (cpasync_speedup, "cpasync"),
    "bank_conflicts": (bank_conflicts, "smem_latency"),
    "cache_lines": (cache_lines, "cache_structure"),
    "bulk_copy": (bulk_copy, "bulk_copy"),
    "dsmem": (dsmem, "dsmem_latency"),
}
