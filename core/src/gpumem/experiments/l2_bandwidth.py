"""``l2_bandwidth``: L2 read bandwidth where blocks on several SMs read the same lines.

``bandwidth_levels`` reads the L2 with each block re-reading its own slice (``bw.l2``): what
one SM's lines get. RRZE gpu-benches' gpu-l2-cache spreads its re-reads over blocks on other
SMs, and on an H200 it read 11.87 TB/s at 1.5 MB where ``bw.l2`` read 9.0 (issue 44). Two
mechanisms of an H100/H200's L2 lie between them, both measured with Nsight Compute
(benchmarks/l2_reference.py, benchmarks/README.md):

* a line read by SMs of both partitions is served from a copy near each, so eight blocks a
  slice (``StreamRequest.share``) read 9.5-10.2 TB/s on two H200s, 2-4.5 % of the sectors
  merged before the slices on an H100 and an H200 (``bw.l2_shared``, nearly the slices' own
  rate);
* where many blocks ask for a line at once, the L2's request coalescer merges their requests
  before the slices: at 16-32 blocks a slice the SMs received 17-27 TB/s, 45 % of the
  sectors merged on an H100 (``bw.l2_coalesced``: what the SMs receive, not what the slices
  serve). gpu-l2-cache's 11.87 TB/s at 1.5 MB is of this kind: 22.5 % of its sectors were
  merged on an H200 (GPU-cb0e3c21), its slices serving 9.35 TB/s.

Lines read by one SM each cannot be placed to beat ``bw.l2``: where each SM read only the lines
its own partition holds, three H100s read half of what lines of both partitions give (3.5-4.0
against 6.3-7.3 TB/s), as for the other partition's lines alone or one side's SMs alone
(benchmarks/l2_near_peak.py): the rate follows the (SM side, partition) pairs in use.

Each share is read over the footprints up to half the L2 (every two octaves) and kernel
shapes, with 16-byte ``.cg`` loads in order ``block``, runs sized to last
:data:`~gpumem.experiments.bandwidth_levels.RUN_S` as ``bandwidth_levels``' are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import xarray as xr

from gpumem.contracts.contention import SCATTER_BY, SCATTER_INHERENT
from gpumem.contracts.device import Device, StreamRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.estimates import argmax_at, estimate_at, finding
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
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.bandwidth import sized_work
from gpumem.experiments.bandwidth_levels import (
    MAX_WORK,
    PROBE_WORK,
    RUN_S,
    WIDTH,
    shape_axes,
    smallest_footprint,
    timed_stream,
)
from gpumem.experiments.figures import BANDWIDTH
from gpumem.experiments.latency import footprint_grid

#: Blocks reading each slice: the slices' own rate (near copies; few merges) and the
#: coalescer's (many readers of a line at once).
SHARED, COALESCED = 8, 32
CTAS_PER_SM, THREADS, ILPS = (1, 2, 4, 8), (512, 1024), (2, 8)
QUICK = ((2,), (512,), (8,))
#: What each share's finding is and says.
FINDINGS = {
    SHARED: ("bw.l2_shared", f"each line read by {SHARED} blocks on other SMs (the grid's "
             f"blocks read ctas / {SHARED} slices), as gpu-l2-cache spreads its re-reads: "
             "served by the L2's slices, from a copy near each partition that reads a line"),
    COALESCED: ("bw.l2_coalesced", f"each line read by {COALESCED} blocks at once: the L2's "
                "request coalescer merges requests for a line in flight, so this is what the "
                "SMs receive, part of it never read from a slice (on an H100, Nsight Compute: "
                "18 % of the sectors at 32 blocks a line and one kernel shape, 45 % at 16 "
                "and another)"),
}


class L2Bandwidth(Experiment):
    name = "l2_bandwidth"
    summary = ("L2 read bandwidth (.cg) where blocks on several SMs read each line: near "
               "copies (8 a line) and the request coalescer (32)")
    probes = ("stream",)
    version = "1"
    findings = tuple(name for name, _how in FINDINGS.values())
    references = ("RRZE gpu-benches gpu-l2-cache; Luo et al., Benchmarking and Dissecting "
                  "the Nvidia Hopper GPU Architecture (arXiv 2402.13499)")

    def presentation(self) -> Presentation:
        return Presentation(BANDWIDTH, (
            ReportFigure("l2_bandwidth",
                         "L2 read bandwidth over footprint where 8 and 32 blocks read each "
                         "line, each at its best kernel shape.",
                         "gpumem.experiments.figures.bandwidth:l2_bandwidth"),
        ), rank=3)

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        l2 = max(dev.l2_bytes, 1 << 20)
        lo = smallest_footprint(dev)
        grid = footprint_grid(lo, max(lo, l2 // 2), 0.5)  # every two octaves, and L2 / 2
        shapes = QUICK if ctx.quick else (CTAS_PER_SM, THREADS, ILPS)
        return Plan(
            axes=[Axis("share", (SHARED, COALESCED), "1", "blocks that read each slice (on "
                       "other SMs)"),
                  *shape_axes(shapes),
                  Axis("footprint", tuple(grid), "byte", "buffer read by all blocks, each "
                       "slice by share of them")],
            variables=[Var("gbs", (), "GB/s", "bytes read per second, 10^9 byte/s"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"width": WIDTH, "order": "block", "path": "cg",
                   "work_bytes": MAX_WORK, "run_seconds": RUN_S,
                   # the coalescer merges more or less from repeat to repeat: no evidence
                   SCATTER_BY: "share", SCATTER_INHERENT: [COALESCED]},
            repeats=repeat_count(ctx),
        )

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """The point's request, its bytes sized for RUN_S by probe runs."""
        if ctx.slow:
            raise PointSkipped("a cycle-level simulator's stream traces have no blocks "
                               "sharing slices (order 'block')")
        fp = int(point["footprint"])
        req = StreamRequest(
            footprint=fp, ctas=int(point["ctas_per_sm"]) * max(1, ctx.device.sm_count),
            threads=int(point["threads"]), ilp=int(point["ilp"]), width=WIDTH, path="cg",
            kind="read", order="block", share=int(point["share"]), work=0,
            seed=repeat_seed(ctx, 0))
        return {"request": replace(req, work=sized_work(
            lambda work: device.stream(replace(req, work=work)), max(fp, PROBE_WORK), RUN_S,
            fp, MAX_WORK))}

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        return timed_stream(device, point, ctx)

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        med = point_medians(raw, "gbs")
        out: list[Finding] = []
        for share, (name, how) in FINDINGS.items():
            if share not in raw["share"].values:
                continue
            sub = med.sel(share=share)
            if not bool(sub.notnull().any()):
                continue
            at = {**argmax_at(sub), "share": share}
            est = estimate_at(raw, "gbs", at)
            shape = (f"{at['ctas_per_sm']} blocks/SM x {at['threads']} threads, {at['ilp']} "
                     f"loads in flight, {int(at['footprint']) >> 10} KiB")
            out.append(finding(name, est, "GB/s", 0.9,
                               f"best median .cg read bandwidth with {how}; over kernel shapes "
                               f"and footprints up to half the L2 (at {shape}; "
                               f"{est.precision.repeats} runs)", digits=1))
        return out
