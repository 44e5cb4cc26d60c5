"""Distributed shared memory (``dsmem_latency``, ``dsmem_bandwidth``): latency by rank
distance, throughput of the own against the next block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from gpumem.contracts.experiment import point_medians
from gpumem.contracts.series import Series
from gpumem.figures.draw import (
    figure_legend,
    finished,
    panels,
    series_handles,
    style_handles,
    with_raw,
)


@finished
def dsmem(series: Sequence[Series]) -> Figure | None:
    """Distributed shared memory: latency by rank distance; throughput over warps."""
    lat = with_raw(series, "dsmem_latency")
    bw = with_raw(series, "dsmem_bandwidth")
    if not lat and not bw:
        return None
    fig, axs = panels(1, 2, 5.0, 3.6)
    ax, bx = axs[0]
    for s, ds in lat:
        med = point_medians(ds, "latency")
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
        med = point_medians(ds, "bytes_per_cycle").max("ilp", skipna=True)
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
    figure_legend(fig, series_handles([s for s, _ in lat or bw]) + style_handles(styles))
    return fig
