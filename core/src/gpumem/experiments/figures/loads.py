"""Load-level parallelism: the ILP sweep by address ordering (``ilp``) and cp.async
against plain loads (``cpasync``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from gpumem.contracts.experiment import median_over_repeats, point_medians
from gpumem.contracts.series import Series
from gpumem.figures.draw import (
    figure_legend,
    finished,
    log_if_spread,
    masked,
    panels,
    plain_log,
    ratio_axis,
    series_handles,
    size_label,
    style_handles,
    with_raw,
)

ORDER_STYLE = {"coalesced": "-", "warp": "--", "thread": ":"}


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
    data = [(s, ds, _ilp_footprints(ds)) for s, ds in with_raw(series, "ilp")]
    data = [d for d in data if d[2]]
    if not data:
        return None
    titles = []
    for _, _, picks in data:
        for t, _, _ in picks:
            if t not in titles:
                titles.append(t)
    fig, axs = panels(1, len(titles), 4.8, 3.8)
    peaks: dict[str, list[float]] = {t: [] for t in titles}
    for s, ds, picks in data:
        gbs = masked(ds, "gbs")
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
    for t, ax in zip(titles, axs[0], strict=False):
        log_if_spread(ax, peaks[t])
        plain_log(ax)
        ax.set_xlabel("independent loads per thread K", fontsize=8)
        ax.set_ylabel("read bandwidth (GB/s, median; band min-max)", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    figure_legend(fig, series_handles([s for s, _, _ in data])
                + style_handles({f"{o} ordering": ls for o, ls in ORDER_STYLE.items()}))
    fig.suptitle("ILP sweep at fixed work: bandwidth over K by address ordering", fontsize=10)
    return fig


@finished
def cpasync_speedup(series: Sequence[Series]) -> Figure | None:
    """cp.async over matched plain loads, over groups in flight, at both occupancies."""
    data = with_raw(series, "cpasync")
    if not data:
        return None
    fig, axs = panels(1, 2, 5.6, 3.8)
    ax, bx = axs[0]
    thread_styles: dict[str, str] = {}
    peaks: list[float] = []
    ratios: list[float] = []
    for s, ds in data:
        med = point_medians(ds, "gbs")
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
    log_if_spread(bx, peaks)
    plain_log(bx)
    bx.set_ylabel("read bandwidth (GB/s, median)", fontsize=8)
    bx.set_title("the two methods (filled: cp.async, open: plain)", fontsize=9)
    figure_legend(fig, series_handles([s for s, _ in data]) + style_handles(thread_styles))
    return fig
