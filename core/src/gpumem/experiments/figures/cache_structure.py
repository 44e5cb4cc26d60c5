"""Figures of the ``cache_structure`` search: the size search, the fill chases, and the
scattered chases that show the line.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import LEVEL_OF_PATH
from gpumem.contracts.series import Series
from gpumem.experiments.cache_structure import scatter_shares_by_path
from gpumem.experiments.figures.chases import chase_list, chase_panel, with_events
from gpumem.figures.draw import figure_legend, finished, panels, series_handles, with_raw


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
    rows: list[tuple[Series, str, int, Chase | None, Chase | None, Chase | None]] = []
    for s, ds in with_raw(series, "cache_structure"):
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
        rows.append((s, path, cap, with_events(ds, at), with_events(ds, past),
                     with_events(ds, quarter)))
    if not rows:
        return None
    fig, axs = panels(len(rows), 3, 4.6, 3.3)
    for i, (s, path, cap, at, past, quarter) in enumerate(rows):
        name = f"{s.legend}, path '{path}'"
        chase_panel(axs[i, 0], s, at, f"{name}\nat the capacity ({cap} B)")
        chase_panel(axs[i, 1], s, past, f"{name}\njust past the capacity "
                     f"(+{past.footprint - cap if past else 0} B)")
        chase_panel(axs[i, 2], s, quarter, f"{name}\na quarter past the capacity")
    fig.suptitle("Cache size search: latency of each access (32-B stride), misses stand out",
                 fontsize=10)
    return fig


@finished
def cache_fill(series: Sequence[Series]) -> Figure | None:
    """Fill granularity: the L1 stride-4 chase at twice the capacity, and the cold L2 chase
    through the L2-only path (every access stored), first few hundred accesses."""
    rows = []
    for s, ds in with_raw(series, "cache_structure"):
        chases = chase_list(ds)
        path = _first_path(chases)
        fill = next((c for c in chases if c.stage == "fill" and c.path == path), None)
        l2 = next((c for c in chases if c.stage == "l2fill"), None)
        if fill is not None or l2 is not None:
            rows.append((s, path, with_events(ds, fill), with_events(ds, l2)))
    if not rows:
        return None
    fig, axs = panels(len(rows), 2, 6.2, 3.3)
    for i, (s, path, fill, l2) in enumerate(rows):
        level = LEVEL_OF_PATH.get(path or "", "l1d")
        sector = s.value("cache_structure", f"{level}.sector")
        chase_panel(axs[i, 0], s, fill, f"{s.legend}\n'{path}' fill chase at twice the "
                     f"capacity (grid: {int(sector) if sector else '?'}-B sectors)",
                     window=512, grid_every=int(sector) // 4 if sector else None)
        unit = s.value("cache_structure", "l2.fill_unit")
        phase = 0
        if l2 is not None and unit and l2.ev_index.size:
            first = int(l2.ev_index[0])
            phase = (-first) % (int(unit) // 4)
        chase_panel(axs[i, 1], s, l2, f"{s.legend}\ncold L2 chase, 4-B stride (grid: "
                     f"l2.fill_unit {int(unit) if unit else '?'} B)", window=256,
                     grid_every=int(unit) // 4 if unit else None, grid_phase=phase)
    fig.suptitle("Fill granularity: one miss per sector (L1) and per fill unit (L2)",
                 fontsize=10)
    return fig



@finished
def cache_lines(series: Sequence[Series]) -> Figure | None:
    """Miss share of the scattered chases over block size, one panel per level: a plateau
    up to the line, a fall past it."""
    data = []
    for s, ds in with_raw(series, "cache_structure"):
        wanted = [with_events(ds, c) for c in chase_list(ds)
                  if c.stage in ("scatter", "l2hit", "l2scatter")]
        shares = scatter_shares_by_path(wanted)
        if shares:
            data.append((s, shares))
    if not data:
        return None
    levels = sorted({k for _, sh in data for k in sh}, key=lambda k: (k == "l2", k))
    fig, axs = panels(1, len(levels), 3.6, 3.2)
    for ax, level in zip(axs[0], levels, strict=True):
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
    figure_legend(fig, series_handles([s for s, _ in data]))
    return fig
