"""``path_latency``: the hit latency of each load path at an L1-resident footprint.

A Volta SM serves global (``ca``), read-only (``nc``) and texture (``tex``) loads from one
unified L1, so the first two should cost the same and the texture pipeline its own extra
cycles (MT4G on a V100: 30, 30 and 68). A 1 KB chase per path answers that in a second.
``gpumem report`` shows it in a section of its own, with one figure (``presentation``).
"""

from __future__ import annotations

import numpy as np
from gpumem.api import (
    Axis,
    ChaseRequest,
    Experiment,
    Finding,
    Plan,
    Presentation,
    ReportFigure,
    ReportSection,
    Var,
)

FOOTPRINT = 1024  # bytes: fits any L1
STRIDE = 128  # bytes between chased elements: a new line each access
LEVEL = {"ca": "l1d", "nc": "ro", "tex": "tex_l1"}  # finding prefixes of docs/findings.md


def _record(ctx) -> int:
    """Timed accesses per path; plan() and measure() must agree on it."""
    return 64 if ctx.quick else 256


class PathLatency(Experiment):
    name = "path_latency"
    summary = "hit latency of each load path (ca, nc, tex) at a 1 KB footprint"
    archs = ("gv100",)  # None would add it to every architecture's 'all'
    probes = ("pointer_chase",)
    version = "1"  # bump when a change makes old results incomparable
    # every finding name analyze() can report; expected values are checked against them
    findings = ("l1d.hit_latency", "ro.hit_latency", "tex_l1.hit_latency")
    # in_all = False would leave it out of 'all' (too long for a routine run: run by name);
    # runs_first = True runs it before the others (DRAM bandwidth, before the chases free GiBs)

    def plan(self, ctx):
        paths = tuple(p for p in LEVEL if p in ctx.device.load_paths)
        return Plan(
            axes=[Axis("path", paths, "1", "load path")],
            variables=[Var("latency", ("access",), "cycle", "cycles per access, timer included"),
                       Var("timer_overhead", (), "cycle", "cycles the timer adds per access")],
            inner={"access": np.arange(_record(ctx))},
            attrs={"footprint": FOOTPRINT, "stride": STRIDE},
        )

    def measure(self, device, point, ctx):
        res = device.pointer_chase(ChaseRequest(
            footprint=FOOTPRINT, stride=STRIDE, record=_record(ctx),
            warmup=2 * FOOTPRINT // STRIDE, path=str(point["path"])))
        return {"latency": res.latency, "timer_overhead": res.timer_overhead}

    def analyze(self, raw):
        """Pure: reads only the dataset, so a stored file can be analysed again later."""
        out = []
        for path in raw["path"].values:
            cycles = (raw["latency"] - raw["timer_overhead"]).sel(path=path).values
            cycles = cycles[np.isfinite(cycles)]  # a failed point leaves NaN
            if cycles.size == 0:
                continue
            median = float(np.median(cycles))
            near = float(np.mean(np.abs(cycles - median) <= 0.1 * median))
            out.append(Finding(f"{LEVEL[str(path)]}.hit_latency", round(median), "cycle",
                               confidence=near,
                               method=f"median of a {FOOTPRINT} B chase on path '{path}'"))
        return out

    def presentation(self):
        """Its section of ``gpumem report`` and its figure (drawn by the function below)."""
        section = ReportSection(
            "load_paths", "Load paths (example plugin)",
            "One 1 KB chase per load path: global (ca), read-only (nc) and texture (tex) "
            "loads served by the same L1.", order=1000)  # after core's sections (100-900)
        return Presentation(section, (ReportFigure(
            "path_latency", "Cycles per access on each load path, timer overhead removed "
            "(dot: median, bar: 10-90 % of the accesses).", draw_path_latency),))


def draw_path_latency(series):
    """The figure, from every report series (run and device) that has path_latency data.
    The helpers load matplotlib: imported here, so that ``gpumem run`` loads none."""
    from gpumem.api.figures import finish, legend, panels, series_handles, with_raw

    data = with_raw(series, "path_latency")  # [(series, raw dataset)]
    if not data:
        return None
    paths = [p for p in LEVEL if any(p in raw["path"].values for _, raw in data)]
    fig, axs = panels(1, 1)
    ax = axs[0, 0]
    for i, (s, raw) in enumerate(data):
        cycles = (raw["latency"] - raw["timer_overhead"]).transpose("path", "access")
        x = [paths.index(str(p)) + 0.1 * i for p in raw["path"].values]
        lo, med, hi = np.nanpercentile(cycles.values, [10, 50, 90], axis=1)
        ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o", color=s.colour, capsize=3)
    ax.set_xticks(range(len(paths)), paths)
    ax.set_xlabel("load path")
    ax.set_ylabel("cycles per access")
    ax.set_title("Hit latency of each load path")
    ax.grid(True, alpha=0.3)
    legend(ax, series_handles([s for s, _ in data]))
    return finish(fig)  # what every report figure gets: no cut labels, no repeated legend
