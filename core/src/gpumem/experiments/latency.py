"""``latency``: the single-thread pointer-chase latency ladder.

One thread chases a chain over a growing footprint, from 2 KB to 8 GB (or half the device's
memory), and times every access. Two chain orders:

* ``sequential`` (stride 128 B): each access a new line, LRU-friendly, so every cache level
  shows as a flat plateau ending sharply at its capacity; TLBs mostly hit (16 K accesses per
  2 MB page), so the last plateau is DRAM latency;
* ``random`` (one access per 128 B block, in a seeded random cyclic order): the same levels,
  and at footprints past the TLB reach every access also misses the TLBs, giving the DRAM
  latency with a TLB miss.

After the geometric first pass the knees between plateaus are bisected down to one stride
(:meth:`LatencyLadder.refine`), so capacities are exact, not grid-bound.

Where a cache is hashed on physical addresses, its capacity as one chain sees it depends on
which pages the chain got: an H200's near L2 partition ended at 26.1-28.0 MB in four
processes and at 33.2 MB in a fifth, and within one process at 25.5-29.3 MB behind pads of
different sizes. So each sequential footprint from an eighth of the L2 to twice it is chased
on ``PLACEMENTS`` placements (:data:`gpumem.contracts.device.PLACEMENT_PADS`), a quarter of its
record
on each: a knee is where the first placement leaves the level, and the half crossing where
half the accesses of all of them have, whatever the process was given.

Findings: ``lat.l1``, ``lat.l2``, ``lat.l2_far``, ``lat.dram``, ``lat.dram_tlb_miss`` (cycles,
each with an ``_ns`` twin), ``l1d.size``, ``l2.size``, ``l2.near_size``, ``l2.partitions``, and
each capacity read at its half crossing (``l1d.size_at_half``, ...): stabler run to run, so a
shrunk cache fails there where its knee's interval leaves the run undecided.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import numpy as np
import xarray as xr

from gpumem.analysis.plateaus import (
    PLATEAU_TOL,
    Plateau,
    find_plateaus,
    half_crossing,
    knee_bracket,
    miss_fractions,
)
from gpumem.contracts.device import PLACEMENT_PADS, ChaseRequest, Device
from gpumem.contracts.errors import PointSkipped, ProbeUnsupported
from gpumem.contracts.estimates import least_draw_sd, order_interval, student_t_975
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, Var
from gpumem.contracts.findings import Finding, unresolved
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.figures import LATENCY

STRIDE = 128
#: A level spans at least this factor of footprints. The bisected knees put many points into
#: the transition after the near L2 (an H200's 28.5-31.1 MB, where the median of mixed near
#: and far accesses sits at 470-480 cycles): on GPU-126aafaa one run read that 9 % span as a
#: level and the far L2 as ending at 32.6 MB (the card's other runs: 56.8-60.8 MB). Real levels
#: span far more (the far L2 32-59 MB, factor 1.8); refinement still bisects every knee.
LEVEL_SPAN = 1.15
#: Fewest points a plateau's core (:func:`_core`) must hold to be pooled alone.
CORE_POINTS = 3
#: An L2 plateau whose knee is at this share of the device's L2 size or more is the whole L2
#: (an H200's near partition ends at 0.41 of it; Accel-Sim's unpartitioned QV100 at 1.03).
WHOLE_L2 = 0.75
ELEMENT = 4
MIN_FOOTPRINT = 2 << 10
MAX_FOOTPRINT = 8 << 30
LARGE_PAGE = 2 << 20  # the large page of every GPU dissected so far (Mei & Chu; Hopper)
HALF_RESOLUTION = 0.01  # the half crossing is bisected to 1 % (a point's share is +-1.5 %)
PLACEMENTS = len(PLACEMENT_PADS)  # allocations a footprint near the L2's knees is chased on
#: Loads in flight of the one-thread warm-up (``ChaseRequest.warm_ilp``). A dependent walk
#: of each chase's warm-up pass was some 11 of the 13-14 s the ladder took on an H200 (the
#: footprints around the L2's knees, each warmed on four placements: 0.5-1 s a footprint);
#: with the addresses following from the position the same lines are touched in the same
#: order, eight at a time, in the chase's own kernel (a separate warm-up kernel left an
#: H100's L1 empty: l1d.size read 32 KB), the recorded lines' warm-up accesses still
#: dependent (eight in flight, those lines read 2 cycles slower from an H100's L2).
WARM_ILP = 8
#: A knee among placed footprints is bisected to 0.5 %, not one stride: where the first of the
#: placements leaves a hashed level moves by more than that from process to process (an H200's
#: near L2: 24.7-27.8 MB over three), and stride-exact bisection there cost 15 s a run.
PLACED_RESOLUTION = 0.005
#: Parts of an unplaced record whose half crossings say how well the pooled one is known
#: (:func:`_part_halves`).
HALF_PARTS = 4
#: On a slow device (``RunContext.slow``): accesses timed per chase, and how far knees are
#: bisected (each round of a 60 MB knee costs Accel-Sim's H200 config about 3 minutes).
SLOW_RECORD, SLOW_RESOLUTION = 64, 0.01
#: On a slow device whose L2 puts lines into sets at random (``DeviceInfo.extra``'s
#: ``l2_random_sets``: Accel-Sim's TITAN X draws each line's slice), accesses timed at a
#: sequential footprint from half the L2 to twice it, kept as their mean
#: (:meth:`LatencyLadder.measure`). Its misses ramp over that range, and the share of recorded
#: lines that miss is a sample of its sets: 64 lines fall into about 41 of TITAN X's 1,536 and
#: put the half crossing at 0.98 +- 0.06 of the capacity, 1,024 at 0.974 +- 0.017
#: (tests/data/accelsim/runs/README.md). About 5 s a point on that config, 30 s on QV100's:
#: only where the device says its sets are drawn.
RAMP_RECORD = 1024
#: A single L2 whose misses ramp (:func:`_l2_ramp`): points whose miss share lies between
#: RAMP_EDGE and 1 - RAMP_EDGE span at least a factor RAMP_SPAN of footprints and a rise of
#: RAMP_RISE in the share. A modulo-indexed LRU cache of W >= 4 ways goes from no misses to all
#: within a factor 1 + 1/W (1.25 at W = 4, 1.06 at 16): it stays a knee. TITAN X's random
#: slices: 5 % to 95 % from 0.58 to 1.42 of the capacity (a factor 2.4).
RAMP_EDGE, RAMP_SPAN, RAMP_RISE = 0.05, 1.25, 0.5


def _round(x: float) -> int:
    return max(STRIDE, int(round(x / STRIDE)) * STRIDE)


def footprint_grid(lo: int, hi: int, per_octave: float) -> tuple[int, ...]:
    n = int(np.floor(np.log2(hi / lo) * per_octave + 1e-9))
    values = sorted({_round(lo * 2 ** (k / per_octave)) for k in range(n + 1)} | {_round(hi)})
    return tuple(v for v in values if v <= hi)


class LatencyLadder(Experiment):
    name = "latency"
    summary = "pointer-chase latency ladder over footprint: L1, L2 near/far, DRAM, TLB miss"
    probes = ("pointer_chase",)
    version = "3"  # 2: sequential footprints from L2/8 to 2 L2 chased on PLACEMENTS allocations
    #: 3: the warm-up walked with WARM_ILP loads in flight (one thread, chain order); no
    #: finding moved (64 chases on an H100 against dependent passes: tests/data/h100-s26)
    changed_in = {"3": ()}
    findings = ("lat.l1", "lat.l1_ns", "lat.l2", "lat.l2_ns", "lat.l2_far", "lat.l2_far_ns",
                "lat.dram", "lat.dram_ns", "lat.dram_tlb_miss", "lat.dram_tlb_miss_ns",
                "l1d.size", "l2.near_size", "l2.size", "l2.partitions", "l1d.size_at_half",
                "l2.near_size_at_half", "l2.size_at_half")
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017; gpu-benches gpu-latency (RRZE)")

    #: Bisection of a knee stops when its bracket is this narrow (relative) or one stride.
    knee_resolution = 0.0

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, (
            ReportFigure("latency_ladder",
                         "Median latency per footprint (sequential: solid, with its 10-90 % band; "
                         "random order: dashed), knees and levels marked.",
                         "gpumem.experiments.figures.latency:latency_ladder"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        l2 = max(dev.l2_bytes, 1 << 20)
        mem_cap = max(dev.memory_bytes // 2, 64 << 20)
        if ctx.quick:  # past a Maxwell's 130 MB L2-TLB reach: the TLB-miss DRAM level
            hi = min(max(8 * l2, 512 << 20), mem_cap)
            per_octave, record = 1, 256
        else:
            hi = min(max(MAX_FOOTPRINT, 4 * l2), mem_cap)
            per_octave, record = 2, 1024
        warm_cap = max(4 * l2 // STRIDE, 1 << 16)
        attrs: dict[str, Any] = {}
        if ctx.slow:
            # a cycle-level simulator (Accel-Sim: about 0.1 s per L2 access of one thread):
            # one point per octave, to past the L2 TLB's reach as --quick; a deterministic
            # device's mean of 64 accesses is as good as of 1024; its addresses map to the
            # same sets on every allocation, so one placement; knees bisected to 1 %, and
            # random chains only where they decide lat.dram_tlb_miss (see measure); around
            # the L2's size RAMP_RECORD accesses, one mean, where the L2's sets are drawn
            hi = min(max(8 * l2, 512 << 20), mem_cap)
            per_octave, record = 1, SLOW_RECORD
            attrs = {"placements": 1, "knee_resolution": SLOW_RESOLUTION,
                     "random_from": 2 * l2}
            if dev.extra.get("l2_random_sets"):
                attrs |= {"ramp_record": RAMP_RECORD, "ramp_from": l2 // 2, "ramp_to": 2 * l2}
        return Plan(
            axes=[
                Axis("order", ("sequential", "random"), "1", "chain order"),
                Axis("footprint", footprint_grid(MIN_FOOTPRINT, hi, per_octave), "byte",
                     "bytes spanned by the chain"),
            ],
            variables=[
                Var("latency", ("access",), "cycle",
                    "cycles per access as read by the device timer, timer overhead included"),
                Var("index", ("access",), "1", "element index read by each access", "int64"),
                Var("timer_overhead", (), "cycle", "cycles the timer itself adds per access"),
                Var("end_ok", (), "1", "chase ended on the element the chain predicts", "int8"),
            ],
            inner={"access": np.arange(record)},
            attrs={"stride": STRIDE, "element": ELEMENT, "record": record,
                   "warmup_cap": warm_cap, "l2_bytes": l2, "path": "ca", "seed": ctx.seed,
                   "placements": PLACEMENTS, "placed_from": l2 // 8, "placed_to": 2 * l2,
                   "warm_ilp": WARM_ILP, **attrs},
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        footprint = int(point["footprint"])
        plan_attrs = self.plan(ctx).attrs
        record = int(plan_attrs["record"])
        if point["order"] == "random" and footprint <= plan_attrs.get("random_from", 0):
            raise PointSkipped(f"on a slow device random chains run only past "
                               f"{plan_attrs['random_from']} B, where they decide "
                               f"lat.dram_tlb_miss; the sequential ones give every other "
                               f"finding")
        lines = footprint // STRIDE
        if footprint <= 2 * int(plan_attrs["l2_bytes"]):  # a cache may hold it: one full pass
            # walked by one thread: a pass walked by 1024 (ChaseRequest.warm_threads, the
            # recorded lines first) left an H200's L2 in another state at its knees (59 MB
            # sequential: a median of 546-581 cycles against 684-698 after one thread, on each
            # placement; benchmarks/warm_parallel_check.py), though not l2_sm_map's map
            warmup = int(min(lines, plan_attrs["warmup_cap"]))
        else:  # DRAM-resident: warm only the TLBs, 16 accesses per 2 MB page (a random order
            # touches every page after about ln(pages) per page); a full pass of an 8 GB
            # chain cost 0.7 s per point on an H200 and changed nothing
            warmup = int(min(lines, max(8192, 16 * (footprint // LARGE_PAGE))))
        req = ChaseRequest(footprint=footprint, stride=STRIDE, record=record, warmup=warmup,
                           order=str(point["order"]), path="ca", element=ELEMENT,
                           seed=ctx.seed ^ zlib.crc32(str(footprint).encode()),
                           warm_ilp=int(plan_attrs.get("warm_ilp", 1)))
        if (point["order"] == "sequential" and "ramp_record" in plan_attrs
                and plan_attrs["ramp_from"] < footprint < plan_attrs["ramp_to"]):
            # a slow device around its L2's size: the mean of RAMP_RECORD accesses, in the
            # first column as a device that reports one mean per chase gives it (more
            # accesses than the plan's record would not fit; the mean is what the L2's miss
            # share is read from where its misses ramp, see _l2_ramp)
            req = replace(req, record=int(plan_attrs["ramp_record"]), fine_grained=False)
            res = device.pointer_chase(req)
            lat = np.full(record, np.nan)
            lat[0] = float(np.mean(res.latency))
            return {"latency": lat, "index": np.full(record, -1, np.int64),
                    "timer_overhead": res.timer_overhead, "end_ok": int(res.end_ok)}
        placements = int(plan_attrs["placements"])
        placed = (point["order"] == "sequential" and placements > 1
                  and record % placements == 0
                  and plan_attrs["placed_from"] < footprint <= plan_attrs["placed_to"])
        try:
            if placed:
                parts = [device.pointer_chase(replace(req, record=record // placements,
                                                      placement=k))
                         for k in range(placements)]
                return {"latency": np.concatenate([r.latency for r in parts]),
                        "index": np.concatenate([r.index for r in parts]),
                        "timer_overhead": float(np.median([r.timer_overhead for r in parts])),
                        "end_ok": int(all(r.end_ok for r in parts))}
            res = device.pointer_chase(req)
        except ProbeUnsupported:
            # A device that reports one mean per chase (Accel-Sim counts cycles per kernel):
            # the mean goes in the first access, the rest stay NaN, which the analysis skips.
            res = device.pointer_chase(replace(req, fine_grained=False))
            lat = np.full(record, np.nan)
            lat[0] = float(np.mean(res.latency))
            return {"latency": lat, "index": np.full(record, -1, np.int64),
                    "timer_overhead": res.timer_overhead, "end_ok": int(res.end_ok)}
        return {"latency": res.latency, "index": res.index,
                "timer_overhead": res.timer_overhead, "end_ok": int(res.end_ok)}

    # ---- refinement ------------------------------------------------------------------
    def _knee_resolution(self, attrs: Mapping[str, Any], at: float) -> float:
        """How narrow (relative) a knee's bracket starting at ``at`` is bisected."""
        lo = float(attrs.get("plan_placed_from", 0))  # absent before version 2: none placed
        hi = float(attrs.get("plan_placed_to", 0))
        placed = int(attrs.get("plan_placements", 1)) > 1
        return max(self.knee_resolution, float(attrs.get("plan_knee_resolution", 0)),
                   PLACED_RESOLUTION if placed and lo < at <= hi else 0)

    def refine_bound(self, ctx: RunContext) -> int:
        """Bisection rounds of a knee: from a grid step (an octave on a slow device, half
        of one otherwise) down to the knee resolution, or one stride of the largest
        footprint; the half crossings, to 1 %, bisect in the same rounds."""
        attrs = self.plan(ctx).attrs
        step = 1.0 if ctx.slow else 2 ** 0.5 - 1
        finest = max(float(attrs.get("knee_resolution", 0)), HALF_RESOLUTION if ctx.slow
                     else STRIDE / MAX_FOOTPRINT)
        return int(np.ceil(np.log2(step / finest)))

    def refine(self, raw: xr.Dataset, ctx: RunContext) -> dict[str, list] | None:
        x, samples = _curve(raw, "sequential")
        meds = _median(samples)
        levels = find_plateaus(x, meds)
        l2_bytes = float(raw.attrs.get("l2_bytes", raw.attrs.get("plan_l2_bytes", 0)) or 0) \
            or float("inf")  # the plan's: the device's, 1 MiB at least
        ramp = _l2_ramp(x, samples, find_plateaus(x, meds, min_span=LEVEL_SPAN), l2_bytes)

        def in_ramp(lo: float, hi: float) -> bool:
            # a single L2's ramp is read at its half crossing alone: the knees of the means'
            # plateaus along it (each a step of the rising share) are no capacities
            return ramp is not None and lo >= ramp.start_x and hi <= ramp.end_x

        new: set[int] = {v for v in _split_level_points(x, meds, levels)
                         if not in_ramp(v, v)}
        rounds: list[tuple[tuple[float, float], float]] = []
        if ramp is not None:
            rounds.append(((ramp.lo, ramp.hi), HALF_RESOLUTION))
        for lower, upper in pairwise(levels):
            br = knee_bracket(x, samples, lower, upper.latency)
            if br is None or in_ramp(*br):
                continue
            brackets = [(br, self._knee_resolution(raw.attrs, br[0]))]
            half = half_crossing(x, samples, lower, upper)
            if half is not None and not in_ramp(*half[:2]):
                brackets.append((half[:2], HALF_RESOLUTION))
            rounds.extend(brackets)
        for (lo, hi), resolution in rounds:
            if hi - lo <= STRIDE or (hi - lo) / lo <= resolution:
                continue
            mid = _round((lo + hi) / 2)
            if lo < mid < hi:
                new.add(mid)
        return {"footprint": sorted(new)} if new else None

    # ---- analysis --------------------------------------------------------------------
    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        clock_mhz = float(raw.attrs.get("clock_mhz", 0) or 0)
        l2_bytes = float(raw.attrs.get("l2_bytes", 0) or 0) or float("inf")
        x, samples = _curve(raw, "sequential")
        levels = find_plateaus(x, _median(samples), min_span=LEVEL_SPAN)
        out: list[Finding] = []
        if not levels:
            return out

        def lat(name: str, p: Plateau | float, method: str, conf: float | None = None,
                pooled: np.ndarray | None = None) -> None:
            v = p.latency if isinstance(p, Plateau) else float(p)
            if conf is not None:
                c = conf
            elif isinstance(p, Plateau):
                c = _confidence(p)
            else:
                raise TypeError(f"{name}: a latency given as a number needs its confidence")
            if pooled is None and isinstance(p, Plateau):
                pooled = samples[_core(x, p)]
            iv = None
            if pooled is not None and np.isfinite(pooled).sum() >= 3:
                # the median of every access of the plateau's points pooled: a point's own
                # median follows the near/far mix of its lines (an H200's far plateau: 502-513
                # over five runs), the pooled one the level (509-512)
                every = pooled[np.isfinite(pooled)]
                v = float(np.median(every))
                lo, hi = order_interval(every)
                iv = (round(lo, 2), round(hi, 2))
            out.append(Finding(f"lat.{name}", round(v, 2), "cycle", c, method, interval=iv))
            if clock_mhz > 0:
                k = 1e3 / clock_mhz
                out.append(Finding(f"lat.{name}_ns", round(v * k, 3), "ns", c,
                                   method + f"; cycles / {clock_mhz:g} MHz",
                                   interval=(round(iv[0] * k, 3), round(iv[1] * k, 3))
                                   if iv else None))

        caps: list[tuple[float, float] | None] = []
        halves: list[tuple[float, float, float] | None] = []
        for lower, upper in pairwise(levels):
            caps.append(knee_bracket(x, samples, lower, upper.latency))
            halves.append(half_crossing(x, samples, lower, upper))
        caps.append(None)
        halves.append(None)

        def capacity(name: str, k: int, method: str) -> list[Finding]:
            """The level's capacity at its knee, then (where its accesses cross half) at
            its half crossing."""
            cap = caps[k]
            res = self._knee_resolution(raw.attrs, cap[0]) if cap else 0.0
            placed = _placement_knees(x, samples, levels[k], levels[k + 1].latency, raw.attrs,
                                      cap) if cap else []
            half = halves[k]
            found = [_capacity(name, cap, method, half[2] if half else None, res, placed)]
            if half is not None:
                parts = _part_halves(x, samples, levels[k], levels[k + 1], raw.attrs)
                found.append(_half_size(name + "_at_half", half, parts, method))
            return found

        method = "latency ladder, sequential chase, stride 128 B"
        i = 0
        cap0 = caps[0]
        if cap0 is not None and cap0[0] < l2_bytes / 4:
            lat("l1", levels[0], method + ", first plateau")
            out.extend(capacity("l1d.size", 0, "first knee of the " + method))
            i = 1
        l2_levels = []
        ramp = _l2_ramp(x, samples, levels, l2_bytes)
        if ramp is not None and ramp.l2 == i:
            # one L2 whose misses ramp: the plateaus of means along the ramp are no levels
            l2_levels, i = [i], ramp.dram
        else:
            ramp = None
        while ramp is None and i < len(levels) and (cap := caps[i]) is not None and \
                cap[0] <= 1.5 * l2_bytes:
            l2_levels.append(i)
            i += 1
        mixed = ""
        if len(l2_levels) >= 2 and (cap := caps[l2_levels[0]]) is not None and \
                cap[0] >= WHOLE_L2 * l2_bytes:
            # the first L2 plateau already ends at the L2's size: a later one ending within
            # 1.5 sizes is lines missing in some sets only (sets overflowing one by one:
            # Accel-Sim's TITAN X, whose 24 L2 slices take lines at random, 201 cycles from
            # 2.9 to 3.5 MB between its L2's 132 and its DRAM's 245), no far partition; the
            # DRAM is the plateau after it
            p = levels[l2_levels[1]]
            mixed = (f"; a plateau at {p.latency:.0f} cycles from {int(p.first_x)} to "
                     f"{int(p.last_x)} B after it is no further level (the L2 knee is at the "
                     f"device's L2 size, {int(l2_bytes)} B): some sets overflow before others")
            l2_levels = l2_levels[:1]
        if l2_levels:
            lat("l2", levels[l2_levels[0]], method + ", plateau ending near the L2 size")
            if len(l2_levels) >= 2:
                far = l2_levels[1]
                lat("l2_far", levels[far], method + ", second L2 plateau")
                out.extend(capacity("l2.near_size", l2_levels[0],
                                    "knee between the near and far L2 plateaus"))
                out.extend(capacity("l2.size", far, "knee of the far L2 plateau"))
            elif ramp is not None:
                out.append(_ramp_size("l2.size", ramp, method))
            else:
                out.extend(capacity("l2.size", l2_levels[0], "knee of the L2 plateau" + mixed))
            out.append(Finding("l2.partitions", min(len(l2_levels), 2), "1",
                               0.9, "distinct L2 latency plateaus"))
        reached = float(x.max())
        if i < len(levels) and (levels[i].last_x > l2_bytes or
                                (l2_bytes == float("inf") and i > 0)):
            lat("dram", levels[i], method + ", first plateau past the L2")
        else:
            # named only from evidence: a plateau that ends within the L2 is no DRAM level (a
            # ladder cut short, as a slow simulator's: Accel-Sim reached 64 KiB and its L1
            # plateau once came out as lat.dram at confidence 1.0)
            if i < len(levels):
                p = levels[i]
                name = "l1" if i == 0 else "l2" if not l2_levels else ""
                if name:
                    out.append(unresolved(
                        f"lat.{name}", "cycle", [round(p.latency, 2)], method,
                        f"one plateau from {int(p.first_x)} to {int(p.last_x)} B with no "
                        f"knee after it: the ladder ended there, so no capacity shows which "
                        f"level serves it (the candidate is its latency)"))
            within = (f"within the L2 ({int(l2_bytes)} B)" if l2_bytes != float("inf")
                      else "and the L2's size is unknown")
            out.append(unresolved("lat.dram", "cycle", [], method,
                                  f"not reached: no plateau past the L2; the ladder's largest "
                                  f"footprint is {int(reached)} B, {within}"))
        xr_, sr = _curve(raw, "random")
        if xr_.size and xr_.max() > 2 * l2_bytes:
            # every random chase from a quarter of the largest footprint up (and past twice
            # the L2): one access's latency spreads over -27 % to +250 % of the median on an
            # H200, and a median of 1024 accesses moved by 2 % from run to run
            meds = _median(sr)
            end = meds[int(np.argmax(xr_))]
            top = (xr_ >= xr_.max() / 4) & (xr_ > 2 * l2_bytes) & \
                (np.abs(meds - end) <= 0.03 * abs(end))  # on the last point's plateau
            last = sr[top]
            last = last[np.isfinite(last)]
            if last.size:
                v = float(np.median(last))
                lo, hi = order_interval(last)
                conf = float(np.clip(1 - 20 * (hi - lo) / v, 0, 1))
                lat("dram_tlb_miss", v, f"random chases from {int(xr_[top].min())} to "
                    f"{int(xr_.max())} B, every access pooled", conf, pooled=last)
        return out


def _curve(raw: xr.Dataset, order: str) -> tuple[np.ndarray, np.ndarray]:
    """(footprints, per-access latency minus timer overhead) of one order, ok points only."""
    if "order" not in raw.dims or order not in raw["order"].values:
        return np.array([]), np.empty((0, 0))
    sel = raw.sel(order=order)
    lat = (sel["latency"] - sel["timer_overhead"]).transpose("footprint", "access")
    ok = sel["point_status"].values == 0
    x = sel["footprint"].values.astype(float)
    return x[ok], lat.values.astype(float)[ok]


@dataclass(frozen=True)
class _Ramp:
    """A single L2 whose misses ramp (:func:`_l2_ramp`)."""

    l2: int            # index of the L2 plateau in the levels
    dram: int          # index of the DRAM plateau
    lo: float          # the measured footprints around the miss share's half crossing
    hi: float
    x: float           # the half crossing, interpolated
    first: float       # the smallest and largest footprints with a share inside the ramp
    last: float
    start_x: float     # the L2 plateau's first footprint, the DRAM plateau's first
    end_x: float


def _l2_ramp(x: np.ndarray, samples: np.ndarray, levels: list[Plateau], l2_bytes: float
             ) -> _Ramp | None:
    """The single L2's ramp of misses, if its misses ramp; else ``None``.

    The L2 is the first plateau past any L1 knee (below a quarter of the L2 size), the DRAM
    the first plateau after it that ends past twice the L2 size. A point's miss share is the
    share of its accesses at or above the geometric mean of the two levels; for a point that
    holds one mean (a device that reports one per chase), where the mean lies between them.
    The misses ramp where the points of shares between RAMP_EDGE and 1 - RAMP_EDGE span a
    factor RAMP_SPAN of footprints and a rise of RAMP_RISE: sets overflow one by one over a
    range (an L2 that places lines in sets at random, as Accel-Sim's TITAN X draws each
    line's slice), not all within one capacity's 1 + 1/W. Plateaus between the two levels
    are allowed only where their points are means (a mean sits on any step of a ramp; the
    median of a point's accesses flips from the L2's latency to the DRAM's at half, so
    per-access data shows a ramp as no level between: a level there is a far L2 partition).
    """
    if len(levels) < 2 or not np.isfinite(l2_bytes):
        return None
    first = 0
    if (br := knee_bracket(x, samples, levels[0], levels[1].latency)) is not None and \
            br[0] < l2_bytes / 4:
        first = 1
    dram = next((j for j in range(first + 1, len(levels))
                 if levels[j].last_x > 2 * l2_bytes), None)
    if first >= len(levels) or dram is None:
        return None
    p, d = levels[first], levels[dram]
    if d.latency <= p.latency:
        return None
    order = np.argsort(x, kind="stable")
    xs, rows = x[order], samples[order]
    keep = (xs >= p.first_x) & (xs <= d.last_x)
    xs, rows = xs[keep], rows[keep]
    finite = np.isfinite(rows).sum(axis=1)
    means = (finite == 1) & (rows.shape[1] > 1)
    between = (xs > p.last_x) & (xs < d.first_x)
    if dram > first + 1 and not np.all(means[between]):
        return None
    with np.errstate(all="ignore"):
        mean = np.nanmean(np.where(np.isfinite(rows), rows, np.nan), axis=1)
    share = np.where(means, np.clip((mean - p.latency) / (d.latency - p.latency), 0, 1),
                     miss_fractions(rows, float(np.sqrt(p.latency * d.latency))))
    inside = (share > RAMP_EDGE) & (share < 1 - RAMP_EDGE)
    if not inside.any():
        return None
    lo_x, hi_x = float(xs[inside].min()), float(xs[inside].max())
    if hi_x < RAMP_SPAN * lo_x or np.ptp(share[inside]) < RAMP_RISE:
        return None
    on_p = xs <= p.last_x
    on_d = xs >= d.first_x
    base, full = float(np.nanmedian(share[on_p])), float(np.nanmedian(share[on_d]))
    if full - base < RAMP_RISE:
        return None
    target = base + 0.5 * (full - base)
    for i in range(1, xs.size):
        if share[i - 1] < target <= share[i]:
            t = (target - share[i - 1]) / (share[i] - share[i - 1])
            half = float(xs[i - 1] * (xs[i] / xs[i - 1]) ** t)
            return _Ramp(first, dram, float(xs[i - 1]), float(xs[i]), half, lo_x, hi_x,
                         p.first_x, d.first_x)
    return None


def _median(samples: np.ndarray) -> np.ndarray:
    if samples.size == 0:
        return np.array([])
    with np.errstate(all="ignore"):
        return np.nanmedian(samples, axis=1)


def _split_level_points(x: np.ndarray, meds: np.ndarray, levels: list[Plateau]
                        ) -> list[int]:
    """Footprints to add where a level may hide between grid points that no plateau took.

    Two neighbouring points on no plateau, a grid step apart and within twice the plateau
    tolerance of each other, may be one level that the greedy plateaus split: an H200's far
    L2 (32-59 MB) holds two first-pass points whose accesses split between two far distances
    (modes near 455 and 535 cycles), so each point's median lands on either side (489-513
    over 14 committed runs; 490 and 532 in one run on GPU-a67156e5, 2026-12-03, which then
    had no far-L2 plateau, no far knee bisected, and ``l2.size`` came out as the near L2's
    27.2 MB). The geometric middles of the gaps around them give that level more points. A
    single point between plateaus is a knee's transition, which the knee bisection handles;
    gaps narrower than :data:`LEVEL_SPAN` cannot hold a level."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], meds[order]
    on = np.zeros(xs.size, bool)
    for p in levels:
        on |= (xs >= p.first_x) & (xs <= p.last_x)
    tol = np.log1p(2 * PLATEAU_TOL)
    measured = {int(v) for v in xs}
    new: set[int] = set()
    for i in range(xs.size - 1):
        a, b = i, i + 1
        if (on[a] or on[b] or not (np.isfinite(ys[a]) and np.isfinite(ys[b]))
                or xs[b] < LEVEL_SPAN * xs[a] or abs(np.log(ys[b] / ys[a])) > tol):
            continue
        for lo, hi in ((a - 1, a), (a, b), (b, b + 1)):
            if 0 <= lo and hi < xs.size and xs[hi] >= LEVEL_SPAN * xs[lo]:
                new.add(_round(float(np.sqrt(xs[lo] * xs[hi]))))
    return sorted(new - measured)


def _core(x: np.ndarray, p: Plateau) -> np.ndarray:
    """The plateau's points away from both knees: the middle half of its span on a log
    scale (all its points where that holds none). Next to a knee a point still holds some
    accesses of the level before (an L1 remnant at 256 KB) or already some of the next (far
    lines near the near partition's end): an H200's near-L2 latency pooled over the whole
    plateau moved 279-287 cycles over ten runs, over its core 284-286. A core of fewer than
    :data:`CORE_POINTS` points is too few accesses for a level whose lines mix two latencies
    (an H200's far L2, 32-59 MB, holds one grid point in its core: the pooled median of that one
    point's near/far mix gave 492-513 cycles over 14 runs on four cards), so the whole plateau
    is pooled then (510-519 over the same runs)."""
    k = (p.last_x / p.first_x) ** 0.25 if p.first_x > 0 else 1.0
    core = (x >= p.first_x * k) & (x <= p.last_x / k)
    return core if core.sum() >= CORE_POINTS else (x >= p.first_x) & (x <= p.last_x)


def _confidence(p: Plateau) -> float:
    return float(np.clip((1 - 5 * p.spread) * min(1.0, p.count / 3), 0, 1))


def _half_confidence(lo: float, hi: float) -> float:
    """A half crossing's confidence: 1 once bisected to :data:`HALF_RESOLUTION` (or one
    stride), less the wider its bracket still is."""
    if hi - lo <= max(STRIDE, HALF_RESOLUTION * lo):
        return 1.0
    return float(np.clip(HALF_RESOLUTION * lo / (hi - lo), 0.05, 0.95))


def _ramp_size(name: str, ramp: _Ramp, method: str) -> Finding:
    """The size of a single L2 whose misses ramp (:func:`_l2_ramp`): the half crossing of its
    miss share, where half the accesses miss, not the knee, where the first does.

    Where lines go to sets at random, a set holds a binomial number of a footprint's lines,
    and an LRU set misses on all of them once it holds more than its ways: the sets overflow
    one by one, from the fullest (about half the capacity on Accel-Sim's TITAN X, 16 ways)
    to the emptiest (1.7 of it). The knee is the fullest of the sets the recorded lines
    sample, so it falls as the sample grows (0.56 +- 0.08 of the capacity with 64 lines,
    0.42 +- 0.05 with 1,024); the half crossing is where the middle set overflows, which
    sits at the capacity whatever the sample (C (1 - 1/(3W)) for W ways; 0.974 +- 0.017 with
    1,024 recorded lines over draws of the slices: tests/data/accelsim/runs/README.md)."""
    lo, hi = ramp.lo, ramp.hi
    conf = _half_confidence(lo, hi)
    note = (f"misses ramp: {int(RAMP_EDGE * 100)}-{int(100 - RAMP_EDGE * 100)} % of the "
            f"accesses miss from {int(ramp.first)} to {int(ramp.last)} B, half between "
            f"{int(lo)} and {int(hi)} B")
    return Finding(name, _round(ramp.x), "byte", conf,
                   "half crossing of the miss share, " + method + ": the L2's misses ramp "
                   "(its sets overflow one by one over a range of footprints, as where lines "
                   "go to sets at random), so its size is where half the accesses miss (the "
                   "middle set overflows), not the knee where the first does; a point that "
                   "holds one mean counts as its place between the L2 and DRAM levels",
                   note=note, interval=(lo, hi), kind="measured")


def _placement_knees(x: np.ndarray, samples: np.ndarray, lower: Plateau, high: float,
                     attrs: Mapping[str, Any], knee: tuple[float, float]) -> list[float]:
    """Where each placement's own chase leaves ``lower`` (the last footprint on it), for a
    knee among the placed footprints: the pooled knee is where the first of them leaves, and
    on a hashed cache that moves with the physical pages the chase was given (an H200's near
    L2, four placements of one process: 23.7, 26.9, 29.3 and 31.1 MB). ``[]`` where the
    footprints around the knee ran on one placement.

    Each placement's level ends where its own medians leave it (:func:`_part_level`): the
    pooled plateau runs as far as most placements stay on it, and a placement that left early
    has most of that plateau's points past its knee, so their share of slow accesses is no
    baseline (one H200 ladder: a placement left the far L2 at 59.1 MB of a plateau that ran
    to 62.2, half its points 50 % slow; against that baseline it "left" at 6 GB, and
    ``l2.size``'s interval read 128 B-6.8 GB). Past the placed footprints a part is a run of
    one chase's accesses, no placement's, so a knee found there is none."""
    placements = int(attrs.get("plan_placements", 1))
    placed_from = float(attrs.get("plan_placed_from", 0))
    placed_to = float(attrs.get("plan_placed_to", 0))
    if placements < 2 or not placed_from < knee[0] <= placed_to:
        return []
    out = []
    for part in _record_parts(samples, placements):
        br = knee_bracket(x, part, _part_level(x, part, lower), high)
        if br is not None and placed_from < br[0] and br[1] <= placed_to:
            out.append(br[0])
    return out


def _part_level(x: np.ndarray, part: np.ndarray, lower: Plateau) -> Plateau:
    """``lower`` cut where one part of the record leaves it: before the first of its
    footprints whose median, and the next one's, lie above the level by more than the plateau
    tolerance (only its end moves: :func:`knee_bracket` reads a level's span and latency).
    ``lower`` itself where the part stays on it."""
    order = np.argsort(x)
    xs, meds = x[order], _median(part[order])
    on = (xs >= lower.first_x) & (xs <= lower.last_x)
    idx = np.nonzero(on)[0]
    high = meds > lower.latency * (1 + PLATEAU_TOL)
    for a, b in pairwise(idx):
        if high[a] and high[b] and a > idx[0]:
            return replace(lower, last_x=float(xs[a - 1]))
    return lower


def _record_parts(samples: np.ndarray, parts: int) -> list[np.ndarray]:
    """The record's columns in ``parts`` equal runs (a placement's each, where placed)."""
    width = samples.shape[1] // parts
    return [samples[:, k * width:(k + 1) * width] for k in range(parts)] if width else []


def _part_halves(x: np.ndarray, samples: np.ndarray, lower: Plateau, upper: Plateau,
                 attrs: Mapping[str, Any]) -> list[float]:
    """The half crossing of each part of the record, split as its placements split it (a
    quarter each; below the placed footprints, as an L1's, four runs of one chase's
    accesses), or into :data:`HALF_PARTS` where none was placed. How far they scatter is how
    well the pooled crossing is known: a process given other pages reads another (an H200's
    far L2: 60.6-62.7 MB over fourteen processes on four cards, its four placements in one
    process 57.9-61.9)."""
    parts = int(attrs.get("plan_placements", 1))
    parts = parts if parts > 1 else HALF_PARTS
    if samples.shape[1] // parts < 2:
        return []
    out = []
    for part in _record_parts(samples, parts):
        if np.isfinite(part).any(axis=1).mean() < 0.5:  # a record of one mean a point
            continue
        h = half_crossing(x, part, lower, upper)
        if h is not None:
            out.append(h[2])
    return out


def _half_size(name: str, half: tuple[float, float, float], parts: list[float],
               method: str) -> Finding:
    """A level's size read at its half crossing: the footprint where half the accesses that
    will leave it have (``LEVEL.size_at_half``), beside the knee where the first do. On a
    hashed cache the knee moves with the pages a process is given and the crossing, set by the
    bulk of the accesses, much less: over the fourteen committed H200 ladders of four cards
    the far L2's knee read 56.5-60.8 MB and its crossing 60.6-62.7, the L1's 201-218 KB and
    235-239 KB. So a shrunk cache shows here first. The interval is the bisected bracket and
    the crossing +- t x the standard error of the parts' crossings (:func:`_part_halves`;
    Student's t for P - 1 degrees of freedom): it held a rerun's crossing for 37 of 40 pairs
    of runs of one card at the L1, 36 at the far L2 and 31 at the near L2
    (tests/test_latency_knees.py)."""
    lo, hi, v = half
    bottom, top = lo, hi
    note = f"half the accesses have left the level between {int(lo)} and {int(hi)} B"
    if len(parts) >= 2:
        se = student_t_975(len(parts) - 1) * float(np.std(parts, ddof=1)) / np.sqrt(len(parts))
        bottom, top = min(lo, v - se), max(hi, v + se)
        note += (f"; {len(parts)} parts of the record crossed at "
                 f"{', '.join(str(int(p)) for p in sorted(parts))} B")
    return Finding(name, int(v), "byte", _half_confidence(lo, hi),
                   "latency ladder, sequential chase: where half the accesses have left the "
                   "level, log-interpolated (its knee: " + method + ")",
                   note=note, interval=(float(int(max(bottom, STRIDE))), float(int(top))),
                   kind="measured")


def _capacity(name: str, bracket: tuple[float, float] | None, method: str,
              half: float | None = None, resolution: float = 0.0,
              placed: list[float] | None = None) -> Finding:
    """A capacity from a knee: the last footprint on the level (exact for a cache that
    overflows set by set, as LRU with a modulo index does). Its interval runs to where half
    the accesses have left the level: on a hashed cache the knee moves with where the first
    conflicts fall (an H200's near L2, placements pooled: 25.9-29.1 MB over three processes),
    the half crossing much less (31.28-31.37 MB); but on a modulo-indexed W-way cache the half
    crossing lies C / (2W + 1) past the capacity C, so the knee is the value. A measured
    quantity.

    Where the footprints were chased on several placements (``placed``: where each left the
    level), the knee is the first of them to leave, and a rerun's first lands elsewhere: an
    H200's near-L2 knee read 26.1-29.9 MB over four processes of one card, each with an
    interval to its half crossing that held 19 of the 40 other runs' knees. So the interval
    also spans every placement's knee and the knee +- t x the spread the first of them has
    (:func:`least_draw_sd` x the placements' standard deviation, t Student's 97.5 % point
    for that standard deviation's P - 1 degrees of freedom: 3.18 for four): on those runs
    37 of 40 near-L2 intervals and 31 of 40 far ones held another run's knee
    (tests/test_latency_knees.py), as a 95 % interval of a value that strays as much as a
    rerun's should hold about four in five."""
    lo, hi = bracket  # type: ignore[misc]  # optional in the signature; callers pass a knee
    resolved = hi - lo <= max(STRIDE, resolution * lo)  # bisected as far as it is meant to
    conf = 1.0 if resolved else float(np.clip(STRIDE / (hi - lo), 0.05, 0.95))
    note = "" if hi - lo <= STRIDE else f"capacity between {int(lo)} and {int(hi)} B"
    top = max(hi, half) if half is not None else hi
    if half is not None and half > 1.02 * hi:
        note = (note + "; " if note else "") + \
            f"misses ramp: half the accesses have left the level at {int(half)} B"
    bottom = lo
    if placed and len(placed) >= 2 and max(placed) - min(placed) > STRIDE:
        wander = student_t_975(len(placed) - 1) * least_draw_sd(len(placed)) * \
            float(np.std(placed, ddof=1))
        bottom = min(min(placed), lo - wander)
        top = max(top, max(placed), lo + wander)
        note = (note + "; " if note else "") + \
            (f"the {len(placed)} placements left the level at "
             f"{', '.join(str(int(v)) for v in sorted(placed))} B (a hashed level's first "
             f"conflicts move with the physical pages): a rerun's knee strays over the interval")
    return Finding(name, int(lo), "byte", conf, method, note=note,
                   interval=(float(int(max(bottom, STRIDE))), float(int(top))),
                   kind="measured")
