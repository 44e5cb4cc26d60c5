"""The latency ladder (experiment ``latency``): the chase over growing footprints,
knees and levels labelled from its findings, TLB reach from ``tlb_structure``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from gpumem.contracts.series import Series
from gpumem.figures.draw import (
    bytes_axis,
    finished,
    legend,
    panels,
    series_handles,
    size_label,
    style_handles,
    with_raw,
)

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
    """Median latency over footprint, sequential and random chains, knees, half crossings
    and levels marked."""
    data = with_raw(series, "latency")
    if not data:
        return None
    fig, axs = panels(1, 1, 11.5, 5.6)
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
            h = s.value("latency", name + "_at_half")
            if h:  # where half the accesses have left the level: what a rerun reproduces
                ax.axvline(h, color=s.colour, ls=(0, (1, 4)), lw=1, alpha=0.7)
                ax.annotate(f"{text} half {size_label(h)}", (h, 0.99 - 0.2 * (i % 4)),
                            xycoords=("data", "axes fraction"), rotation=90, va="top",
                            ha="left", fontsize=7, color=s.colour, alpha=0.8)
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
    bytes_axis(ax, "x")
    ax.set_xlabel("footprint (bytes spanned by the chain; log scale)")
    ax.set_ylabel("latency per access (cycles, timer overhead removed)")
    ax.set_title("Latency ladder: median per footprint, 10-90 % band (sequential)")
    ax.grid(True, which="major", alpha=0.3)
    legend(ax, series_handles([s for s, _ in data])
            + style_handles({"sequential, stride 128 B": "-", "random order": "--"}),
            loc="center left")
    return fig
