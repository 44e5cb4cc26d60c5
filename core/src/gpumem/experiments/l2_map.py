"""``l2_sm_map``: which L2 lines each SM sees at near and at far latency.

A GPU whose L2 is split in partitions (the H100/H200: two) serves a line at near latency to
the SMs of the line's home partition and at far latency to the others, once the footprint is
too big for the near partition to keep copies (the latency ladder's middle plateau). The
same random chain over an L2-resident footprint beyond the near capacity is chased from every
SM (the kernel runs only on the block that lands on that SM, by ``%smid``); each recorded
access's latency and element are kept. The warm-up pass before each chase is walked by
1024 threads on the SM, the recorded lines first (``ChaseRequest.warm_threads``): on an H200
its chases agreed with a one-thread pass's as two one-thread passes agree, in 2 ms a pass
instead of 85 (``benchmarks/warm_parallel_check.py``). A latency single-SM ladders cannot
give (the H100 study: "single-SM latency cannot see the near/far structure") falls out: per
line and SM, near or far; SMs that agree on which lines are near share a partition.

Findings: ``l2.sm_partition`` (per SM: its partition group, -1 when unclear),
``l2.sm_groups`` (groups of SMs seen), ``l2.near_fraction`` (lines near to a typical SM),
``l2.far_latency`` and ``l2.near_latency`` (cycles, timer overhead removed),
``l2.far_slow_share`` and ``l2.far_slow_latency``: the accesses to lines an SM's group sees
far that are slower than every L2 hit's body, and their median latency. An H200's are about
10 % of its far accesses, at about 895 cycles (735-1040), while its near accesses almost
never are: the slow ones leave ``l2.near_fraction``'s count, which is why it reads 0.53 where
the partitions hold half the lines each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import ChaseRequest, Device
from gpumem.contracts.estimates import order_interval
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, Var
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation
from gpumem.experiments.figures import LATENCY

STRIDE = 128
RECORD = 2048
#: Threads of the warm-up pass (``ChaseRequest.warm_threads``): the recorded lines first, by
#: one thread, then the rest at once. One thread took 70 ms per SM on an H200 (9 of the
#: experiment's 12 s); version 1 warmed with one thread.
WARM_THREADS = 1024
AGREE = 0.75  # SMs agreeing on this fraction of lines (or disagreeing) share a partition


def _two_means(x: np.ndarray) -> tuple[float, float, float]:
    """1-D 2-means: (low centre, high centre, threshold between them)."""
    lo, hi = np.percentile(x, 10), np.percentile(x, 90)
    for _ in range(50):
        t = (lo + hi) / 2
        a, b = x[x < t], x[x >= t]
        if a.size == 0 or b.size == 0:
            break
        nlo, nhi = float(np.median(a)), float(np.median(b))
        if nlo == lo and nhi == hi:
            break
        lo, hi = nlo, nhi
    return float(lo), float(hi), float((lo + hi) / 2)


def _slow_far(lat: np.ndarray, body: np.ndarray, near: np.ndarray, group: np.ndarray,
              groups: int, method: str) -> list[Finding]:
    """``l2.far_slow_share`` and ``l2.far_slow_latency``. A line is far to a group of SMs
    when most of the group's L2-hit accesses to it (the body) were far; each SM's accesses to
    its group's far lines that left the body are its slow ones. The share is the median over
    SMs, its interval that of the median; the latency the median of every slow far access."""
    shares: list[float] = []
    slow: list[np.ndarray] = []
    for g in range(groups):
        rows = group == g
        hits = body[rows]
        far_line = (hits & ~near[rows]).sum(0) > (hits & near[rows]).sum(0)
        if not far_line.any():
            continue
        for i in np.flatnonzero(rows):
            shares.append(float(np.mean(~body[i][far_line])))
            slow.append(lat[i][far_line & ~body[i]])
    if not shares:
        return []
    where = (method + ": accesses to lines the SM's group sees far (most of the group's hits "
             "on them far) slower than the L2 hits' body (1.3 x their 75th percentile)")
    lo, hi = order_interval(np.asarray(shares))
    out = [Finding("l2.far_slow_share", round(float(np.median(shares)), 4), "1", 0.9,
                   where + ", their share, median over SMs", interval=(round(lo, 4), round(hi, 4)),
                   kind="measured", note="interval: of the median over SMs")]
    every = np.concatenate(slow)
    if every.size >= 10:
        a, b = order_interval(every)
        out.append(Finding("l2.far_slow_latency", round(float(np.median(every)), 1), "cycle",
                           0.9, where + f", their median latency ({every.size} accesses; "
                           f"10-90 %: {np.percentile(every, 10):.0f}-"
                           f"{np.percentile(every, 90):.0f})", interval=(a, b),
                           kind="measured", note="interval: of the median"))
    return out


class L2SmMap(Experiment):
    name = "l2_sm_map"
    summary = "per-SM L2 near/far map: the same chain chased from every SM"
    probes = ("pointer_chase",)
    version = "2"  # 2: the warm-up pass walked by WARM_THREADS threads
    #: version 2 changed how the chain is warmed, not what a finding means: on an H200 its
    #: chases agreed with a one-thread warm-up's access by access as two one-thread passes
    #: agree (0.955-1.000 on ten SMs), and its recorded findings are version 1's (16 runs on
    #: four cards against 5 on another: l2.near_fraction 0.525-0.533 against 0.527-0.533,
    #: which the share of slow far hits sets; far latency 530-553 cycles in both)
    changed_in = {"2": ()}
    findings = ("l2.sm_groups", "l2.sm_partition", "l2.sm_map_near_latency",
                "l2.sm_map_far_latency", "l2.near_fraction", "l2.far_slow_share",
                "l2.far_slow_latency")
    references = ("Manjunath & Ramachandra, Concurrency Response of Plain Global Loads on the "
                  "NVIDIA H100 (2026): a single SM's latency misses the L2 partitions; MT4G")

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, rank=2)  # findings only, under latency

    def plan(self, ctx: RunContext) -> Plan:
        sms = max(1, ctx.device.sm_count)
        if ctx.quick:
            sm_values = tuple(sorted({0, sms // 4, sms // 2, 3 * sms // 4, sms - 1}))
        else:
            sm_values = tuple(range(sms))
        l2 = max(ctx.device.l2_bytes, 1 << 20)
        footprint = (3 * l2 // 4) // STRIDE * STRIDE  # beyond one half, within the L2
        return Plan(
            axes=[Axis("sm", sm_values, "1", "SM the chase runs on (%smid)")],
            variables=[Var("latency", ("access",), "cycle",
                           "latency of each recorded access, timer overhead included"),
                       Var("element", ("access",), "1", "4-byte element each access read",
                           dtype="int64"),
                       Var("timer_overhead", (), "cycle", "median timer overhead"),
                       Var("ran_on", (), "1", "SM the kernel reported", dtype="int64")],
            inner={"access": np.arange(RECORD)},
            attrs={"footprint": footprint, "stride": STRIDE, "order": "random", "path": "cg",
                   "warmup": footprint // STRIDE, "record": RECORD,
                   "warm_threads": WARM_THREADS},
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        a = self.plan(ctx).attrs
        res = device.pointer_chase(ChaseRequest(
            footprint=int(a["footprint"]), stride=STRIDE, record=RECORD,
            warmup=int(a["warmup"]), order="random", path="cg", seed=ctx.seed,
            sm=int(point["sm"]), warm_threads=int(a["warm_threads"])))
        return {"latency": res.latency, "element": res.index,
                "timer_overhead": res.timer_overhead, "ran_on": res.sm}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        ok = (raw["point_status"] == 0).values
        if ok.sum() < 2:
            return []
        lat = (raw["latency"] - raw["timer_overhead"]).values[ok]
        sms = [int(s) for s in raw["sm"].values[ok]]
        # L2 hits only: DRAM misses and mis-timings (the slow tail) are left unclassified
        body = lat < 1.3 * np.percentile(lat, 75)
        lo, hi, t = _two_means(lat[body])
        near = lat < t
        method = (f"random chain over {int(raw.attrs.get('plan_footprint', 0)) >> 20} MiB at "
                  f"{STRIDE} B, chased from each SM; near/far split at {t:.0f} cycles")
        # SMs that agree on which lines are near share a group; a second group must see
        # the complement (its near lines are the first group's far ones)
        group = np.full(len(sms), -1)
        refs: list[int] = []

        def agree(i: int, j: int) -> float:
            both = body[i] & body[j]
            return float(np.mean(near[i][both] == near[j][both])) if both.any() else 0.5

        for i in range(len(sms)):
            for g, r in enumerate(refs):
                if agree(i, r) >= AGREE:
                    group[i] = g
                    break
            else:
                if all(agree(i, r) <= 1 - AGREE for r in refs):
                    refs.append(i)
                    group[i] = len(refs) - 1
        clear = group >= 0
        frac = float(np.median([near[i][body[i]].mean() for i in range(len(sms))]))
        if len(refs) < 2:  # every SM sees the same lines near: no per-SM structure
            return [Finding("l2.sm_groups", 1, "1", 0.6,
                            method + ": every SM sees the same lines fast and slow")]
        sizes = ", ".join(str(int((group == g).sum())) for g in range(len(refs)))
        hits = lat[body]
        shares = [near[i][body[i]].mean() for i in range(len(sms))]

        def span(x: np.ndarray, digits: int) -> tuple[float, float]:
            a, b = order_interval(x)
            step = 10.0 ** -digits
            return (np.floor(a / step) * step, np.ceil(b / step) * step)

        return [
            *_slow_far(lat, body, near, group, len(refs), method),
            Finding("l2.sm_map_near_latency", round(lo, 1), "cycle", 0.9,
                    method + ": median latency of the lines an SM sees near",
                    interval=span(hits[hits < t], 1), kind="measured",
                    note="interval: of the median of every SM's near accesses"),
            Finding("l2.sm_map_far_latency", round(hi, 1), "cycle", 0.9,
                    method + ": median latency of the lines it sees far",
                    interval=span(hits[hits >= t], 1), kind="measured",
                    note="interval: of the median of every SM's far accesses"),
            Finding("l2.near_fraction", round(frac, 3), "1", 0.9,
                    method + ": median over SMs of the lines seen near",
                    interval=span(np.asarray(shares), 3), kind="measured",
                    note="interval: of the median over SMs"),
            Finding("l2.sm_groups", len(refs), "1", 0.9 if clear.all() else 0.6,
                    method + f": groups of SMs with complementary near lines ({sizes} SMs"
                    f"{f', {int((~clear).sum())} unclear' if not clear.all() else ''})"),
            Finding("l2.sm_partition", [int(g) for g in group], "1", float(np.mean(clear)),
                    method + f": each SM's group (agreeing on >= {AGREE:.0%} of lines); "
                    f"-1: unclear", index=("sm", sms)),
        ]
