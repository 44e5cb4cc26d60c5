"""Shared memory: latency over stride (bank conflicts), and throughput over warps x ILP.

``smem_latency`` follows Mei & Chu sec. 6.2: one warp, thread t starts at word t * stride,
dependent loads; strides 0..64 words in every bank mode the device offers. The conflict
degree of a power-of-two stride s is gcd(s, banks), so the latency at s = 1, 2, 4, ... 32
gives the conflict-latency curve, the stride after which latency stops growing gives the
number of banks, and whether stride 2 conflicts gives the bank width.

``smem_bandwidth`` follows sec. 6.1: warps x ILP independent loads per SM, bytes per cycle.

Every point is timed ten times (issue 5: median, min and max per point); findings use medians.

Findings: ``lat.smem``, ``smem.conflict_latency`` (indexed by ways), ``smem.banks``,
``smem.bank_width``; ``bw.smem`` (GB/s per SM), ``smem.peak_warps``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import Device, SmemRequest
from gpumem.contracts.estimates import (
    Estimate,
    argmax_at,
    estimate_at,
    finding,
    list_finding,
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
)
from gpumem.contracts.findings import Finding, worst_precision
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.figures import BANDWIDTH, BANK_CONFLICTS

STRIDES = (0, 1, *range(2, 65, 2))


class SmemLatency(Experiment):
    name = "smem_latency"
    summary = "shared-memory latency over stride: bank conflicts, banks, bank width"
    probes = ("smem",)
    version = "2"
    findings = ("lat.smem", "smem.banks", "smem.bank_width", "smem.conflict_latency")
    references = "Mei & Chu, IEEE TPDS 28(1), 2017, sec. 6.2 (shared_bankconflict.cu)"

    def presentation(self) -> Presentation:
        return Presentation(BANK_CONFLICTS, (
            ReportFigure("bank_conflicts",
                         "Latency over stride per bank mode (median, band min-max); n-way "
                         "conflicts labelled from smem.conflict_latency.",
                         "gpumem.experiments.figures.smem:bank_conflicts"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        modes = tuple(ctx.device.smem_bank_modes) or (4,)
        strides = (0, 1, 2, 4, 8, 16, 32, 64) if ctx.quick else STRIDES
        return Plan(
            axes=[Axis("bank_mode", modes, "byte", "bank width the run is configured for"),
                  Axis("stride", strides, "1", "words between neighbouring threads")],
            variables=[Var("latency", (), "cycle", "cycles per access, timer overhead removed")],
            attrs={"width": 4, "iterations": 64},
            repeats=repeat_count(ctx),
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        return {"latency": device.smem(SmemRequest(
            stride=int(point["stride"]), bank_mode=int(point["bank_mode"]),
            seed=ctx.run_seed)).latency}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        default = int(raw["bank_mode"].values[0])  # devices list their default mode first
        lat = point_medians(raw, "latency").sel(bank_mode=default)
        by_stride = {int(s): float(v) for s, v in zip(lat["stride"].values, lat.values, strict=True)
                     if np.isfinite(v)}
        out: list[Finding] = []
        if 1 not in by_stride:
            return out
        base = by_stride[1]
        method = "one warp, thread t at word t*stride, dependent loads"

        def at_stride(stride: int) -> Estimate:
            return estimate_at(raw, "latency", {"bank_mode": default, "stride": stride})

        out.append(finding("lat.smem", at_stride(1), "cycle", 1.0,
                           method + ", stride 1 (no conflict)"))
        # 4-byte words per bank word: 1 with 4-byte banks, 2 with 8-byte banks (stride 2
        # then puts two threads in one bank word: no conflict)
        per = 2 if 2 in by_stride and by_stride[2] <= base * 1.02 else 1
        if 2 in by_stride:
            out.append(Finding("smem.bank_width", 4 * per, "byte", 0.9,
                               f"stride 2 {'does not conflict' if per == 2 else 'conflicts'}"
                               f" in the {default}-byte mode"))
        ways = [n for n in (1, 2, 4, 8, 16, 32, 64) if n * per in by_stride]
        # (ways holds 1: stride ``per`` was measured, 1 always and 2 where per is 2)
        banks = next((n for n, m in pairwise(ways)
                      if by_stride[m * per] <= by_stride[n * per] * 1.02), ways[-1])
        resolved = banks < ways[-1]
        out.append(Finding("smem.banks", int(banks), "1", 1.0 if resolved else 0.3,
                           "largest power-of-two conflict degree that still adds latency"))
        ways = [n for n in ways if n <= banks]
        out.append(list_finding("smem.conflict_latency", [at_stride(n * per) for n in ways],
                                "cycle", 1.0,
                                method + f"; n-way conflict at stride {per}n (n <= banks)",
                                index=("ways", ways), digits=2))
        return out


class SmemBandwidth(Experiment):
    name = "smem_bandwidth"
    summary = "shared-memory throughput per SM over warps x ILP"
    probes = ("smem",)
    version = "2"
    findings = ("bw.smem", "smem.peak_warps", "smem.warp_rate_by_ilp")
    references = "Mei & Chu, IEEE TPDS 28(1), 2017, sec. 6.1 (shared_bandwidth.cu)"

    def presentation(self) -> Presentation:
        return Presentation(BANDWIDTH, (
            ReportFigure("smem_heatmaps",
                         "Shared-memory bytes per SM cycle over warps x ILP (median).",
                         "gpumem.experiments.figures.smem:smem_heatmaps"),
        ), rank=1)

    def plan(self, ctx: RunContext) -> Plan:
        max_warps = int(ctx.device.extra.get("max_warps_per_sm", 64) or 64)
        warps = tuple(w for w in (1, 2, 4, 8, 16, 24, 32, 48, 64) if w <= max_warps)
        ilps: tuple[int, ...] = (1, 2, 4, 6, 8)
        if ctx.quick:
            warps, ilps = tuple(w for w in (1, 8, 16, 32) if w <= max_warps), (1, 4)
        return Plan(
            axes=[Axis("warps", warps, "1", "active warps per SM"),
                  Axis("ilp", ilps, "1", "independent loads per thread per iteration")],
            variables=[Var("bytes_per_cycle", (), "byte/cycle", "bytes loaded per SM cycle")],
            attrs={"width": 4, "stride": 1},
            repeats=repeat_count(ctx),
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        return {"bytes_per_cycle": device.smem(SmemRequest(
            stride=1, warps=int(point["warps"]), ilp=int(point["ilp"]), kind="throughput",
            seed=ctx.run_seed)).bytes_per_cycle}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        bpc = point_medians(raw, "bytes_per_cycle")
        if not np.isfinite(bpc.values).any():
            return []
        best_at = argmax_at(bpc)
        top = estimate_at(raw, "bytes_per_cycle", best_at)
        peak = float(bpc.max())
        clock = float(raw.attrs.get("clock_mhz", 0) or 0)
        out = []
        best = bpc.max("ilp")
        at = [int(w) for w, v in zip(best["warps"].values, best.values, strict=True)
              if v >= 0.98 * peak]
        if clock > 0:
            out.append(finding("bw.smem", top.scaled(clock / 1e3), "GB/s", 1.0,
                               f"best of warps x ILP: {peak:.1f} B/cycle per SM x "
                               f"{clock:g} MHz (per SM)"))
        if at:
            # per warp count, its best ILP's runs: the counts the data cannot tell apart
            # from being within 2 % of the peak, up to the first surely within it
            ests = {int(w): estimate_at(raw, "bytes_per_cycle",
                                        argmax_at(bpc.sel(warps=w)) | {"warps": w})
                    for w, v in zip(best["warps"].values, best.values, strict=True)
                    if np.isfinite(v)}
            lo, hi = threshold_span(list(ests.items()), 0.98, top, at[0])
            out.append(Finding("smem.peak_warps", at[0], "1", 0.9,
                               "fewest warps per SM within 2 % of the peak",
                               interval=(lo, hi), kind="measured",
                               precision=worst_precision([e.precision for e in ests.values()]),
                               note="interval: the warp counts the runs cannot tell apart "
                                    "from the first within 2 % of the peak"))
        if 1 in bpc["warps"].values:
            # one warp alone, by ILP: what a warp issues, before the SM's banks limit it (an
            # H200's: 20.5 B/cycle at ILP 1 to 29.9 at 8, far above ILP x 128 B per 27-cycle
            # latency: a warp's loop iterations overlap, so issue, not latency, bounds it)
            one = bpc.sel(warps=1)
            ilps = [int(i) for i, v in zip(one["ilp"].values, one.values, strict=True)
                    if np.isfinite(v)]
            if len(ilps) >= 2:
                out.append(list_finding(
                    "smem.warp_rate_by_ilp",
                    [estimate_at(raw, "bytes_per_cycle", {"warps": 1, "ilp": i})
                     for i in ilps], "byte/cycle", 1.0,
                    "one warp per SM, bytes per cycle at each ILP", index=("ilp", ilps),
                    digits=2))
        return out
