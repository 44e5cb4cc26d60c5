"""Fine-grained chases as the structure searches log them (``cache_structure``,
``tlb_structure``): reading a chase log, and one chase drawn access by access.
"""

from __future__ import annotations

from dataclasses import replace
from typing import overload

import numpy as np
import xarray as xr

from gpumem.analysis.chases import Chase
from gpumem.contracts.series import Series


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


@overload
def with_events(ds: xr.Dataset, c: Chase) -> Chase: ...
@overload
def with_events(ds: xr.Dataset, c: None) -> None: ...
@overload
def with_events(ds: xr.Dataset, c: Chase | None) -> Chase | None: ...
def with_events(ds: xr.Dataset, c: Chase | None) -> Chase | None:
    """``c`` with its stored events (in record order)."""
    if c is None:
        return None
    sel = np.nonzero(ds["event_chase"].values == c.number)[0]
    sel = sel[np.argsort(ds["event_access"].values[sel], kind="stable")]
    return replace(c, ev_access=ds["event_access"].values[sel],
                   ev_index=ds["event_index"].values[sel],
                   ev_latency=ds["event_latency"].values[sel].astype(float))



def chase_panel(ax, s: Series, c: Chase | None, title: str, window: int | None = None,
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
