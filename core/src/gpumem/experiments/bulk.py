"""``bulk_copy``: HBM -> shared memory with the TMA's 1-D bulk copies (sm_90+), over chunk size
x copies in flight x blocks per SM.

One thread per block issues ``cp.async.bulk`` copies of ``chunk`` bytes into ``stages``
shared-memory buffers and waits on their mbarriers; the copy engine moves the data. The
bytes each SM has in flight (blocks x stages x chunk) set the bandwidth by Little's law until
HBM saturates, so the sweep shows both the ceiling and how much must be in flight to reach
it, with no warp issuing a single load. The buffer is eight L2 capacities; each run reads it
for about :data:`~gpumem.experiments.bandwidth.RUN_S` (at least once, at most 2 GiB), sized
like ``bandwidth``'s runs by probes of the point; ten runs per point (three with --quick).
Version 1 read the buffer once per run, 110 us on an H200 at 4.3 TB/s, so the launch and the
ramp of a grid of one-thread blocks were a few percent of each run: two runs of one GPU job
read 4303.6 and 4020.9 GB/s (issue 31).

Findings: ``bw.dram_read_bulk`` (GB/s, best median), ``bw.dram_read_bulk_fraction`` (of the
device's theoretical peak), ``bulk.inflight_per_sm`` (fewest bytes in flight per SM within
5 % of the best), ``bulk.latency_estimate`` (cycles: bytes in flight over rate at the lowest
concurrency, Little's law).

Any device with the ``bulk_copy`` probe runs it (the TMA exists from compute capability 9.0:
Hopper, Blackwell); others skip it with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import BulkRequest, Device
from gpumem.contracts.estimates import (
    Estimate,
    argmax_at,
    constant,
    estimate_at,
    finding,
    threshold_span,
)
from gpumem.contracts.experiment import (
    Axis,
    Experiment,
    Plan,
    RunContext,
    Var,
    point_medians,
    repeat_count,
    repeat_seed,
)
from gpumem.contracts.findings import Finding, worst_precision
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.bandwidth import RUN_S, WORK, sized_work
from gpumem.experiments.figures import BULK_COPY

CHUNKS = (1024, 4096, 16384, 32768)
STAGES = (1, 2, 4, 8)
CTAS_PER_SM = (1, 2, 4)


def _footprint(ctx: RunContext) -> int:
    info = ctx.device
    want = max(8 * info.l2_bytes, 64 << 20)
    return min(want, max(info.memory_bytes // 4, 1 << 20)) // 32768 * 32768


class BulkCopy(Experiment):
    name = "bulk_copy"
    summary = "TMA bulk copies HBM -> shared memory over chunk x stages x blocks per SM"
    probes = ("bulk_copy",)
    version = "2"  # 2: runs sized in time (about RUN_S), not one pass
    runs_first = True  # DRAM bandwidth: before the chases free GiBs
    findings = ("bw.dram_read_bulk", "bw.dram_read_bulk_fraction", "bulk.inflight_per_sm",
                "bulk.latency_estimate")
    references = ("NVIDIA Hopper tuning guide, 'Tensor Memory Accelerator'; PTX ISA, "
                  "cp.async.bulk; Manjunath & Ramachandra, Concurrency Response of Plain Global "
                  "Loads on the NVIDIA H100 (2026), for the plain-load and cp.async side")

    def presentation(self) -> Presentation:
        return Presentation(BULK_COPY, (
            ReportFigure("bulk_copy",
                         "Bandwidth over bytes in flight per SM, one marker per blocks per SM "
                         "(median of repeats).",
                         "gpumem.experiments.figures.bulk:bulk_copy"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        chunks: tuple[int, ...] = CHUNKS
        stages: tuple[int, ...] = STAGES
        ctas: tuple[int, ...] = CTAS_PER_SM
        if ctx.quick:
            chunks, stages, ctas = (1024, 16384), (1, 4), (1, 2)
        footprint = _footprint(ctx)
        # a cycle-level simulator pays per request: one pass, as version 1 read
        work, sized = (footprint, 0) if ctx.slow else (max(footprint, WORK), 1)
        return Plan(
            axes=[Axis("chunk", chunks, "byte", "bytes per bulk copy"),
                  Axis("stages", stages, "1", "copies in flight per block"),
                  Axis("ctas_per_sm", ctas, "1", "blocks per SM (one issuing thread each)")],
            variables=[Var("gbs", (), "GB/s", "bytes copied per second"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"footprint": footprint, "work_bytes": work, "sized_runs": sized,
                   "run_seconds": RUN_S},
            repeats=repeat_count(ctx),
        )

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """The request of the point's timed runs: at least one pass over the buffer, sized
        for RUN_S at the rate probe runs show (:func:`~gpumem.experiments.bandwidth.
        sized_work`)."""
        attrs = self.plan(ctx).attrs
        footprint = int(attrs["footprint"])
        req = BulkRequest(footprint=footprint, chunk=int(point["chunk"]),
                          stages=int(point["stages"]), ctas_per_sm=int(point["ctas_per_sm"]),
                          work=footprint, seed=repeat_seed(ctx, 0))
        if int(attrs.get("sized_runs", 0)):
            req = replace(req, work=sized_work(
                lambda work: device.bulk_copy(replace(req, work=work)), footprint,
                float(attrs["run_seconds"]), footprint, int(attrs["work_bytes"])))
        return {"request": req}

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        res = device.bulk_copy(replace(point["request"], seed=ctx.run_seed))
        return {"gbs": res.gbs, "seconds": res.seconds}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        gbs = point_medians(raw, "gbs")
        if not np.isfinite(gbs.values).any():
            return []
        where = {d: int(v) for d, v in argmax_at(gbs).items()}
        est = estimate_at(raw, "gbs", where)
        best = est.value
        peak = float(raw.attrs.get("peak_bandwidth_gbs", 0) or 0)
        # a version 1 file (no plan_run_seconds): one 110 us pass per run on an H200, its launch
        # a few percent of it, so its figure is a lower bound (version 2 read 4603 GB/s
        # where version 1 read 4319 on the reference cards), at most the peak
        v1 = "plan_run_seconds" not in raw.attrs and peak > best
        note = ("bulk_copy version 1 read the buffer once per run (110 us on an H200, the "
                "launch a few percent of it): a lower bound (version 2's runs last 0.5 ms)"
                if v1 else "")
        if v1:
            est = Estimate(est.value, est.lo, max(est.hi, peak), est.precision)
        method = (f"best median over chunk x stages x blocks per SM "
                  f"({where['chunk']} B x {where['stages']} x {where['ctas_per_sm']}; "
                  f"{est.precision.repeats} runs), "
                  f"{int(raw.attrs.get('plan_footprint', 0)) >> 20} MB read "
                  + ("for about 0.5 ms per run" if int(raw.attrs.get("plan_sized_runs", 0))
                     else "once per run"))
        out = [finding("bw.dram_read_bulk", est, "GB/s", 1.0, method, digits=1, note=note)]
        if peak > 0:
            out.append(finding("bw.dram_read_bulk_fraction", est.scaled(1 / peak), "1", 1.0,
                               f"bw.dram_read_bulk / the theoretical peak {peak:.0f} GB/s",
                               digits=4, note=note))
        inflight = (gbs["chunk"] * gbs["stages"] * gbs["ctas_per_sm"]).transpose(*gbs.dims)
        pts = sorted(((int(b), float(v), dict(zip(gbs.dims, idx, strict=True)))
                      for idx, b, v in zip(np.ndindex(gbs.shape), inflight.values.ravel(),
                                           gbs.values.ravel(), strict=True)
                      if np.isfinite(v)), key=lambda t: (t[0], t[1]))
        at_pt = [(b, v, estimate_at(raw, "gbs",
                                    {str(d): gbs[d].values[i] for d, i in ix.items()}))
                 for b, v, ix in pts]
        enough = [b for b, v, _e in at_pt if v >= 0.95 * best]
        if enough:
            # the data cannot tell apart the sizes whose interval straddles 95 % of the best's:
            # from the first that may be within 5 % to the first that surely is
            lo, hi = threshold_span([(b, e) for b, _v, e in at_pt], 0.95, est, enough[0])
            out.append(Finding("bulk.inflight_per_sm", enough[0], "byte", 0.9,
                               "fewest bytes in flight per SM (blocks x stages x chunk) "
                               "within 5 % of the best",
                               interval=(lo, hi),
                               kind="measured",
                               note="interval: the sizes the runs cannot tell apart, from "
                                    "the first whose 95 % interval reaches 95 % of the best's "
                                    "to the first whose interval is above it",
                               precision=worst_precision([e.precision for _b, _v, e in at_pt
                                                          if lo <= _b <= hi])))
        clock = float(raw.attrs.get("clock_mhz", 0) or 0)
        sms = int(raw.attrs.get("sm_count", 0) or 0)
        low = at_pt[0]
        if clock > 0 and sms > 0 and low[1] < 0.5 * best:
            per_cycle = low[2].scaled(1e9 / (clock * 1e6))
            out.append(finding("bulk.latency_estimate", constant(sms * low[0]).over(per_cycle),
                               "cycle", 0.7,
                               f"Little's law at the lowest concurrency ({low[0]} B in flight "
                               f"per SM, {low[1]:.0f} GB/s): SMs x bytes in flight / bytes "
                               f"per cycle; a copy's whole round trip (issue, DRAM, mbarrier "
                               f"completion, the waiting thread's wake-up), not DRAM alone",
                               digits=1))
        return out
