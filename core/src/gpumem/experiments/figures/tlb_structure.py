"""Figures of the ``tlb_structure`` search: paired chases, and where each level was
decided.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from gpumem.analysis.chases import Chase
from gpumem.contracts.series import Series
from gpumem.experiments.figures.chases import chase_list, chase_panel, with_events
from gpumem.experiments.tlb_structure import SHIFT, decisions
from gpumem.figures.draw import finished, legend, panels, series_handles, with_raw


def _pages(c: Chase) -> int:
    return c.footprint // max(1, c.stride)


@finished
def tlb_pairs(series: Sequence[Series]) -> Figure | None:
    """Pair differences (first access of a page minus the next word) of three chases: TLB
    hits, one page past the L1 TLB, and the longest L2-TLB chase."""
    rows = []
    for s, ds in with_raw(series, "tlb_structure"):
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
    fig, axs = panels(len(rows), 3, 4.6, 3.3)
    ylabel = "first minus second access (cycles)"
    for i, (s, base, past, l2) in enumerate(rows):
        chase_panel(axs[i, 0], s, base, f"{s.legend}\nTLB hits ({_pages(base)} pages)",
                     ylabel=ylabel)
        chase_panel(axs[i, 1], s, past, f"{s.legend}\nL1 TLB overflow "
                     f"({_pages(past) if past else 0} pages)", ylabel=ylabel)
        chase_panel(axs[i, 2], s, l2, f"{s.legend}\nlongest L2-TLB chase "
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
    data = [(s, decisions(ds)) for s, ds in with_raw(series, "tlb_structure")]
    data = [(s, d) for s, d in data if d]
    if not data:
        return None
    fig, axs = panels(1, 3, 4.6, 3.8)
    specs = ((("l1",), "pages touched (log scale)", "L1 TLB: pages at a large stride",
               "tlb_l1.entries", 1),
              (("page",), "stride (MB, log scale)", "page: E1 + 1 pages, halving strides",
               "tlb.page", 0),
              (("l2",), "pages touched (log scale)", "next level: pages at the page stride",
               "tlb_l2.entries", 1))
    for ax, (stages, xlabel, title, finding, plus) in zip(axs[0], specs, strict=True):
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
    legend(axs[0, 0], series_handles([s for s, _ in data]) + [
        Line2D([], [], color="0.3", marker="o", ls="none", label="rose (a level reached)"),
        Line2D([], [], mfc="white", mec="0.3", marker="o", ls="none", label="did not rise"),
        Line2D([], [], color="crimson", marker="x", ls="none", label="open (unresolved)"),
        Line2D([], [], color="0.3", ls="--", label="threshold")], loc="upper left")
    fig.suptitle("TLB decisions: each point is one question, judged with its margin (error bar)",
                 fontsize=10)
    return fig
