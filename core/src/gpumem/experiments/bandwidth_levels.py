"""``bandwidth_levels``: read bandwidth over footprint, through L1 (``.ca``) and L2 (``.cg``).

Every SM streams its share of one buffer again and again (grid-strided 16-byte loads, fixed
work per run), so the bandwidth steps down where that share stops fitting a level: with
``.ca`` loads an L1 plateau while footprint / SMs fits the L1, then the L2 plateau, then DRAM;
with ``.cg`` loads the L2 plateau, then DRAM. The curves stay in the file; the findings take
each plateau's best median.

Findings: ``bw.l1`` (aggregate over all SMs, where ``.ca`` beats ``.cg`` by 1.3x: the L1
serves), ``bw.l2`` (``.cg``, footprint under half the L2), GB/s.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import xarray as xr

from gpumem.device import Device, StreamRequest
from gpumem.experiment import Axis, Experiment, Plan, RunContext, Var, repeat_count, repeated
from gpumem.experiments.figures import BANDWIDTH
from gpumem.experiments.latency import footprint_grid
from gpumem.findings import Finding
from gpumem.presentation import Presentation, ReportFigure

WORK = 8 << 30      # bytes per run: an L1-resident run at ~30 TB/s still lasts ~0.3 ms
THREADS = 512
ILP = 2         # 16 KB per SM in flight: enough for L2 latency x bandwidth on an H200
WIDTH = 16
L1_GAIN = 1.3       # .ca over .cg at one footprint: the L1 is serving


class BandwidthLevels(Experiment):
    name = "bandwidth_levels"
    summary = "read bandwidth over footprint through L1 (.ca) and L2 (.cg): level plateaus"
    probes = ("stream",)
    version = "2"
    findings = ("bw.l1", "bw.l2")
    references = "RRZE gpu-benches gpu-cache / gpu-l2-cache; Mei & Chu sec. 5"

    def presentation(self) -> Presentation:
        return Presentation(BANDWIDTH, (
            ReportFigure("bandwidth_levels",
                         "Read bandwidth over footprint, .ca (solid) and .cg (dashed), the better "
                         "of the two occupancies.",
                         "gpumem.experiments.figures.bandwidth:bandwidth_levels"),
        ), rank=2)

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        sms = max(1, dev.sm_count)
        l2 = max(dev.l2_bytes, 1 << 20)
        lo = sms * THREADS * ILP * WIDTH  # one chunk of the smaller grid (the larger skips)
        hi = min(8 * l2, max(dev.memory_bytes // 4, lo))
        grid = [f for f in footprint_grid(lo, hi, 1 if ctx.quick else 2) if f >= lo]
        ctas, work, repeats = (sms, 4 * sms), WORK, repeat_count(ctx)
        if ctx.slow:
            # a cycle-level simulator pays per memory request: only the footprints the two
            # findings read (up to half the L2), one occupancy, one pass after the warm-up,
            # once (it is deterministic)
            grid = [f for f in footprint_grid(lo, max(lo, l2 // 2), 1) if f >= lo]
            ctas, work, repeats = (sms,), 0, 1
        return Plan(
            axes=[Axis("path", tuple(p for p in ("ca", "cg") if p in dev.load_paths), "1",
                       "ca: loads cached in L1; cg: loads cached in L2 only"),
                  Axis("ctas", ctas, "1", "thread blocks: one per SM (small "
                       "shares fit small L1s) or four (more loads in flight)"),
                  Axis("footprint", tuple(grid), "byte", "buffer streamed by all SMs")],
            variables=[Var("gbs", ("repeat",), "GB/s", "bytes read per second, 10^9 byte/s"),
                       Var("seconds", ("repeat",), "s", "time of one timed run")],
            inner={"repeat": np.arange(repeats)},
            attrs={"threads": THREADS, "ilp": ILP, "width": WIDTH,
                   "work_bytes": work, "repeats": repeats,
                   "order": "coalesced"},
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        a = self.plan(ctx).attrs
        return repeated(int(a["repeats"]), lambda r: device.stream(StreamRequest(
            footprint=int(point["footprint"]), ctas=int(point["ctas"]), threads=THREADS, ilp=ILP,
            width=WIDTH, path=str(point["path"]), kind="read", work=int(a["work_bytes"]),
            seed=ctx.seed * 1000 + r)), gbs="gbs", seconds="seconds")

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        # per path and footprint, the better of the two occupancies
        med = raw["gbs"].median("repeat").where(raw["point_status"] == 0).max("ctas")
        sms = float(raw.attrs.get("sm_count", 0) or 1)
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        out: list[Finding] = []
        foot = raw["footprint"].values.astype(float)
        paths = [str(p) for p in raw["path"].values]

        def best(path: str, mask: np.ndarray, name: str, how: str) -> None:
            if path not in paths:
                return
            v = med.sel(path=path).values
            ok = mask & np.isfinite(v)
            if ok.any():
                i = int(np.nanargmax(np.where(ok, v, np.nan)))
                out.append(Finding(name, round(float(v[i]), 1), "GB/s", 0.9,
                                   f"best median read bandwidth {how} "
                                   f"(at {int(foot[i]) >> 10} KiB over {int(sms)} SMs)"))

        if "ca" in paths and "cg" in paths:  # L1 serves where .ca beats .cg clearly
            served = med.sel(path="ca").values >= L1_GAIN * med.sel(path="cg").values
            best("ca", served, "bw.l1", f".ca where it beats .cg by >= {L1_GAIN:g}x (the L1 "
                 f"serves)")
        if l2:
            best("cg", foot <= l2 / 2, "bw.l2", ".cg, footprint <= half the L2")
        return out
