"""DRAM bandwidth over the launch grid (``bandwidth``), read bandwidth over footprint
through the L1 and the L2 (``bandwidth_levels``), and the L2's where blocks on several SMs
read each line (``l2_bandwidth``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from gpumem.contracts.experiment import point_medians
from gpumem.contracts.series import Series
from gpumem.experiments.bandwidth_levels import SHAPE
from gpumem.figures.draw import (
    bytes_axis,
    finished,
    heatmap,
    legend,
    panels,
    plain_log,
    series_handles,
    size_label,
    style_handles,
    with_raw,
)


@finished
def dram_heatmaps(series: Sequence[Series]) -> Figure | None:
    """DRAM bandwidth over CTAs x threads, per kind, at the ILP and width of the best point."""
    data = with_raw(series, "bandwidth")
    if not data:
        return None
    kinds = [k for k in ("read", "write", "copy")
             if any(k in ds["kind"].values for _, ds in data)]
    fig, axs = panels(len(data), len(kinds), 4.4, 3.4)
    for i, (s, ds) in enumerate(data):
        med = point_medians(ds, "gbs")
        for j, kind in enumerate(kinds):
            ax = axs[i, j]
            if kind not in ds["kind"].values or not np.isfinite(med.sel(kind=kind).values).any():
                ax.set_axis_off()
                continue
            m = med.sel(kind=kind)
            best = m.where(m == m.max(), drop=True)
            at = {d: best[d].values[0].item() for d in ("ilp", "width") if d in best.dims}
            grid = m.sel(at).transpose("ctas", "threads")
            heatmap(ax, fig, grid.values, grid["ctas"].values, grid["threads"].values,
                     f"{s.legend}\n{kind}: ILP {at.get('ilp', '?')}, {at.get('width', '?')} B "
                     f"(best {float(m.max()):.0f} GB/s)", "CTAs", "threads per CTA", "GB/s")
    fig.suptitle("DRAM bandwidth (median of repeats) over CTAs x threads, at the best point's "
                 "ILP and width", fontsize=10)
    return fig



@finished
def bandwidth_levels(series: Sequence[Series]) -> Figure | None:
    """Read bandwidth over footprint through .ca (L1) and .cg (L2 only): level plateaus."""
    data = with_raw(series, "bandwidth_levels")
    if not data:
        return None
    fig, axs = panels(1, 1, 9.5, 4.4)
    ax = axs[0, 0]
    for s, ds in data:
        med = point_medians(ds, "gbs")  # each footprint at its best shape
        med = med.max([d for d in ("ctas", "ctas_per_sm", "threads", "ilp") if d in med.dims])
        for path, ls in (("ca", "-"), ("cg", "--")):
            if path in ds["path"].values:
                ax.plot(ds["footprint"].values, med.sel(path=path).values, ls=ls,
                        marker=".", color=s.colour, lw=1.4)
        l2 = float(ds.attrs.get("l2_bytes", 0) or 0)
        if l2:
            ax.axvline(l2, color=s.colour, ls=":", lw=1)
            ax.annotate(f"L2 {size_label(l2)}", (l2, 0.98), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=7, color=s.colour)
    bytes_axis(ax, "x")
    ax.set_yscale("log")
    plain_log(ax)
    ax.set_xlabel("footprint streamed by all SMs (log scale)")
    ax.set_ylabel("read bandwidth (GB/s, best kernel shape)")
    ax.set_title("Bandwidth over footprint: L1, L2 and DRAM plateaus")
    ax.grid(True, which="both", alpha=0.25)
    legend(ax, series_handles([s for s, _ in data])
            + style_handles({".ca (L1 and L2)": "-", ".cg (L2 only)": "--"}))
    return fig


@finished
def l2_bandwidth(series: Sequence[Series]) -> Figure | None:
    """L2 read bandwidth over footprint where several blocks read each line (``l2_bandwidth``),
    beside each block its own lines (``bandwidth_levels``' .cg) where the run has it."""
    data = with_raw(series, "l2_bandwidth")
    if not data:
        return None
    own = {s.legend: ds for s, ds in with_raw(series, "bandwidth_levels")}
    fig, axs = panels(1, 1, 9.5, 4.4)
    ax = axs[0, 0]
    styles = {1: "--", 8: "-", 32: ":"}
    for s, ds in data:
        med = point_medians(ds, "gbs").max(list(SHAPE))
        for share in ds["share"].values:
            ax.plot(ds["footprint"].values, med.sel(share=share).values,
                    ls=styles.get(int(share), "-."), marker=".", color=s.colour, lw=1.4)
        levels = own.get(s.legend)
        if levels is not None and "cg" in levels["path"].values:
            m = point_medians(levels, "gbs").sel(path="cg")
            m = m.max([d for d in ("ctas", "ctas_per_sm", "threads", "ilp") if d in m.dims])
            keep = levels["footprint"].values <= float(ds["footprint"].values.max())
            ax.plot(levels["footprint"].values[keep], m.values[keep], ls=styles[1],
                    marker=".", color=s.colour, lw=1.0, alpha=0.7)
    bytes_axis(ax, "x")
    ax.set_xlabel("footprint read by all SMs (log scale)")
    ax.set_ylabel("read bandwidth (GB/s, best kernel shape)")
    ax.set_title("L2 read bandwidth (.cg) by blocks reading each line")
    ax.grid(True, which="both", alpha=0.25)
    legend(ax, series_handles([s for s, _ in data])
           + style_handles({"1 block a line (bandwidth_levels)": "--",
                            "8 blocks a line: the slices": "-",
                            "32 at once: the coalescer merges": ":"}))
    return fig
