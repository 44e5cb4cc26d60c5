"""Shared memory: throughput over warps x ILP (``smem_bandwidth``) and bank conflicts
(``smem_latency``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from gpumem.contracts.experiment import median_over_repeats, point_medians
from gpumem.contracts.series import Series
from gpumem.figures.draw import (
    finished,
    heatmap,
    legend,
    masked,
    panels,
    series_handles,
    style_handles,
    with_raw,
)


@finished
def smem_heatmaps(series: Sequence[Series]) -> Figure | None:
    """Shared-memory throughput per SM over warps x ILP."""
    data = with_raw(series, "smem_bandwidth")
    if not data:
        return None
    fig, axs = panels(1, len(data), 5.0, 3.6)
    for j, (s, ds) in enumerate(data):
        m = point_medians(ds, "bytes_per_cycle").transpose("warps", "ilp")
        heatmap(axs[0, j], fig, m.values, m["warps"].values, m["ilp"].values,
                 f"{s.legend}\npeak {float(np.nanmax(m.values)):.1f} B/cycle per SM",
                 "active warps per SM", "independent loads per thread (ILP)",
                 "bytes per SM cycle", cmap="magma")
    fig.suptitle("Shared-memory throughput over warps x ILP", fontsize=10)
    return fig



@finished
def bank_conflicts(series: Sequence[Series]) -> Figure | None:
    """Shared-memory latency over stride (words between neighbouring threads), per bank mode."""
    data = with_raw(series, "smem_latency")
    if not data:
        return None
    fig, axs = panels(1, 1, 9.5, 4.2)
    ax = axs[0, 0]
    mode_styles: dict[str, str] = {}
    labelled: set[int] = set()
    for s, ds in data:
        lat = masked(ds, "latency")
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
            for ways, v in zip(f.index[1], f.value, strict=True):
                if v is not None and ways > 1 and ways * per not in labelled:
                    labelled.add(ways * per)
                    ax.annotate(f"{ways}-way", (ways * per, v), xytext=(3, -9),
                                textcoords="offset points", fontsize=7, color=s.colour)
    ax.set_xlabel("stride (4-byte words between neighbouring threads)")
    ax.set_ylabel("latency per access (cycles, median; band min-max)")
    ax.set_title("Bank conflicts: one warp, thread t at word t x stride")
    ax.set_xticks([0, 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64])
    ax.grid(True, alpha=0.3)
    legend(ax, series_handles([s for s, _ in data]) + style_handles(mode_styles),
            loc="upper left")
    return fig
