"""The ``l2_slices`` figure: each SM's L2 hit latency to each group of lines (slice)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from gpumem.contracts.series import Series
from gpumem.experiments.l2_slices import SliceMap, slice_map
from gpumem.figures.draw import finished, heatmap, panels, with_raw

#: Up to this many cells a map shows each cell's number (the simulator's few slices).
NUMBERED_CELLS = 400


@finished
def slice_latency_map(series: Sequence[Series]) -> Figure | None:
    """One panel per series: SMs across, groups of lines (slices) up, each cell the median L2
    hit latency of the group's lines from that SM; groups ordered by partition, then by
    their mean latency, so each partition's slices form a band."""
    return _map_of(series, "l2_slices")


@finished
def hash_latency_map(series: Sequence[Series]) -> Figure | None:
    """:func:`slice_latency_map` of ``l2_hash`` (every line of one page)."""
    return _map_of(series, "l2_hash")


def _map_of(series: Sequence[Series], experiment: str) -> Figure | None:
    maps: list[tuple[Series, SliceMap]] = []
    for s, ds in with_raw(series, experiment):
        m = slice_map(ds)
        if m is not None and m.profile.size:
            maps.append((s, m))
    if not maps:
        return None
    fig, axs = panels(len(maps), 1, 7.5, 4.2)
    for ax, (s, m) in zip(axs[:, 0], maps, strict=True):
        order = np.lexsort((np.nanmean(m.profile, axis=1), m.partitions))
        values = m.profile[order]
        rows = [f"{k} (p{m.partitions[k]})" if m.partitions[k] >= 0 else f"{k} (p?)"
                for k in order]
        title = (f"{s.legend}: {m.grouping.count} groups of lines from {len(m.sms)} SMs"
                 + (f", hash of {len(m.fit.masks)} bits" if m.fit.found and m.fit.masks else ""))
        if values.size <= NUMBERED_CELLS:
            heatmap(ax, fig, values, rows, m.sms, title, "group (partition)", "SM", "cycles")
            continue
        im = ax.imshow(values, origin="lower", aspect="auto", cmap="viridis",
                       interpolation="nearest")
        step = max(1, len(m.sms) // 16)
        ax.set_xticks(range(0, len(m.sms), step), [str(x) for x in m.sms[::step]], fontsize=7)
        ax.set_xlabel("SM", fontsize=8)
        ax.set_ylabel("group of lines (slice), by partition", fontsize=8)
        ax.set_title(title, fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.9).set_label("L2 hit latency (cycles)", fontsize=7)
    return fig
