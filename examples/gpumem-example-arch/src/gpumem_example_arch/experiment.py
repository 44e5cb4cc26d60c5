"""``path_latency``: the hit latency of each load path at an L1-resident footprint.

A Volta SM serves global (``ca``), read-only (``nc``) and texture (``tex``) loads from one
unified L1, so the first two should cost the same and the texture pipeline its own extra
cycles (MT4G on a V100: 30, 30 and 68). A 1 KB chase per path answers that in a second.
"""

from __future__ import annotations

import numpy as np
from gpumem import Axis, ChaseRequest, Experiment, Finding, Plan, Var

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
