"""TMA bulk copies: bandwidth over the bytes each SM has in flight (``bulk_copy``)."""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D

from gpumem.contracts.experiment import point_medians
from gpumem.figures.draw import (
    bytes_axis,
    finish,
    legend,
    panels,
    plain_log,
    series_handles,
    with_raw,
)


def bulk_copy(series):
    """TMA bulk-copy bandwidth over the bytes each SM has in flight (Little's law)."""
    data = with_raw(series, "bulk_copy")
    if not data:
        return None
    fig, axs = panels(1, 1, 7.0, 4.0)
    ax = axs[0, 0]
    markers = {1: "o", 2: "s", 4: "^", 8: "D", 16: "v"}
    peaks = []
    for s, ds in data:
        med = point_medians(ds, "gbs")
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
    bytes_axis(ax)
    ax.set_yscale("log")
    plain_log(ax)
    ax.set_xlabel("bytes in flight per SM (blocks x stages x chunk)")
    ax.set_ylabel("HBM -> shared memory (GB/s, median)")
    ax.set_title("TMA bulk copies (dashed: theoretical peak)")
    ax.grid(True, alpha=0.3)
    legend(ax, series_handles([s for s, _ in data]) +
            [Line2D([], [], color="0.3", ls="none", marker=m, label=f"{c} block(s) per SM")
             for c, m in markers.items() if c in {int(x) for _, d in data
                                                  for x in d["ctas_per_sm"].values}],
            loc="lower right")
    return finish(fig)
