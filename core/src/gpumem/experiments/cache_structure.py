"""``cache_structure``: Mei & Chu's fine-grained P-chase, automated, per load path.

For each load path the device offers (``ca`` -> L1 data cache, ``tex`` -> texture L1, ``nc``
-> read-only cache) one single thread chases cyclic chains and every access is timed:

1. ``size``: 32-byte stride, footprint doubling from 1 KB until accesses miss, then bisected
   to 32 bytes: the capacity C is the largest footprint with no repeated miss;
2. ``line``: 4-byte stride just past C: the count of missing elements jumps at C + b + 4;
   the spacing of the missing elements inside a line gives the sector;
3. ``sets``: line stride at C + b (one set overflows: W + 1 lines miss, so W ways and
   S = C / (W b) sets), then C + 2b ... for more sets, whose lines show the index bits;
4. ``fifo``: where every access to the overflowing set misses (LRU-like), a pattern that
   re-touches one line tells LRU from FIFO; otherwise the misses are replayed to count which
   slot each one evicted (random, or non-LRU with per-way weights).

When the first level a path reaches is at least half the device's L2 (Kepler's global loads
bypass L1), its findings are named ``l2.*``. Analysis is recomputed from the stored chases
(:mod:`gpumem.experiments.chaselog`), so a stored run can be analysed again.

Findings per level (``l1d``, ``tex_l1``, ``ro``, ``l2``): ``.overflow_size``, ``.line``,
``.sector``, ``.ways``, ``.sets``, ``.index_bits``, ``.policy``, ``.way_weights``,
``.hit_latency`` (``.half_miss_size`` where misses ramp). ``overflow_size`` is the largest
footprint the fine-grained chase holds with no miss (Mei & Chu's first stage): the capacity
of a cache indexed modulo the sets, below it for a hashed one. It is not named ``.size``:
that name is the latency ladder's capacity, one meaning per name in a run.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import combinations
from typing import Any

import numpy as np
import xarray as xr

from gpumem.analysis.chases import Chase, chases_from_dataset
from gpumem.analysis.structure import (
    LEVEL_OF_PATH,
    MissRule,
    band,
    format_bits,
    miss_counts,
    missing_elements,
    overflow_decision,
    overflows,
    passes_of,
    pooled,
    replay_evictions,
    undecidable,
    uniform_enough,
    way_weights,
)
from gpumem.device import ChaseRequest, ChaseResult, Device
from gpumem.experiment import Experiment, Plan, RunContext
from gpumem.experiments.chaselog import ChaseLog
from gpumem.experiments.figures import CACHE_STRUCTURE
from gpumem.finding_names import family
from gpumem.findings import Finding, unresolved
from gpumem.presentation import Presentation, ReportFigure

MAX_CAPACITY = 4 << 20     # largest first-level cache searched for
START = 512                # smallest footprint: hit latency (no cache is smaller)
SIZE_PASSES = 24           # passes recorded per overflow test (pigeonhole: see analysis)
SIZE_REPEATS = 3           # chases at one footprint at most, where one does not decide
CALIBRATION_PASSES = 128   # the first chase (512 B: hits): the hits' spread, the mis-timing rate
LINE_PASSES = 24
LINE_PASSES_RANDOM = 128   # for policies under which a set's lines do not miss every pass
SETS_PASSES = 32
MAX_LINE = 1024
LINE_TOP = MAX_LINE // 4 + 1  # the line search's top: elements past the capacity
FILL_PASSES = 2
RAMP = 0.3                 # miss share at 1.25 C below this fraction of the share at >= 2 C
MAX_INDEX_BIT = 30         # highest address bit tested as a set-index bit
POLICY_MISSES = 5000       # misses replayed to estimate per-way eviction weights
L2_FILL_RECORD = 8192      # accesses of the cold L2 chase (32 KB at a 4-byte stride)
L2_FILL_UNITS = (8, 16, 32, 64, 128, 256)
SCATTER_BLOCKS = (16, 32, 64, 128, 256, 512, 1024)   # block sizes of the scattered chases
SCATTER_FACTOR = 1.5       # their footprint, in capacities
SCATTER_RECORD = 512       # at least this many accesses recorded per scattered chase
SCATTER_PASSES = 2
SCATTER_MIN_BLOCKS = 8     # fewer blocks per pass than this: too few lines to count
L2_SCATTER_BLOCKS = (32, 64, 128, 256, 512, 1024)
L2_SCATTER_RECORD = 16384  # accesses recorded per L2 chase, after one untimed pass
L2_WAYS_PASSES = 8         # passes recorded per chase of lines one L2 capacity apart
L2_WAYS_MOST = 512         # most such lines chased (ways searched up to this)
CHAIN_SPAN = 16 << 30      # 4-byte chain elements index at most 2^32 of them
AHEAD_RECORDS = 24 << 20   # recorded accesses of the chases held ahead at once (~17 B each)
#: What the analysis reports of each level (``LEVEL.NAME``), where the evidence allows.
LEVEL_FINDINGS = ("hit_latency", "overflow_size", "half_miss_size", "line", "sector", "ways",
                  "sets", "index_bits", "policy", "way_weights")


class CacheStructure(Experiment):
    name = "cache_structure"
    summary = "fine-grained P-chase: size, line, sector, sets, ways, index bits, policy"
    probes = ("pointer_chase",)
    version = "1"
    #: one family per level a path reaches (``l2`` where it is at least half the L2), the
    #: unresolved ones included; ``conflict_onset`` is kept only as a note, never reported
    findings = family((*LEVEL_OF_PATH.values(), "l2"), LEVEL_FINDINGS) + ("l2.fill_unit",)
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 4")

    def presentation(self) -> Presentation:
        return Presentation(CACHE_STRUCTURE, (
            ReportFigure("cache_overflow",
                         "Latency of each stored access at the capacity, just past it and a "
                         "quarter past it (horizontal line: the chase's median).",
                         "gpumem.experiments.figures.cache_structure:cache_overflow"),
            ReportFigure("cache_fill",
                         "Stride-4 chases: the L1 misses once per sector at twice its capacity; a "
                         "cold L2-only chase pays one DRAM fetch per fill unit.",
                         "gpumem.experiments.figures.cache_structure:cache_fill"),
            ReportFigure("cache_lines",
                         "Scattered chases, one access per block at 1.5 times the half-miss "
                         "footprint: the miss share stays on a plateau while the block is within a "
                         "line (dotted: the line found) and falls past it.",
                         "gpumem.experiments.figures.cache_structure:cache_lines"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        paths = [p for p in LEVEL_OF_PATH if p in ctx.device.load_paths]
        return Plan(axes=[], variables=[],
                    attrs={"paths": ",".join(paths), "max_capacity": MAX_CAPACITY,
                           "size_passes": SIZE_PASSES, "line_passes": LINE_PASSES,
                           "sets_passes": SETS_PASSES})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        log = ChaseLog(Ahead(device), seed=ctx.seed, progress=progress)
        limit = min(MAX_CAPACITY, max(device.info.memory_bytes // 8, 1 << 20))
        for path in LEVEL_OF_PATH:
            if path in device.info.load_paths:
                _Dissection(log, path, limit).run()
        if "cg" in device.info.load_paths and device.info.l2_bytes > 0:
            _l2_fill_chase(log, device.info.l2_bytes, device.info.memory_bytes)
            _l2_scatter_chases(log, device.info.l2_bytes, device.info.memory_bytes)
            _l2_ways_chases(log, device.info.l2_bytes, device.info.memory_bytes)
        return log.dataset()

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        chases = chases_from_dataset(raw)
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        out: list[Finding] = []
        for path in LEVEL_OF_PATH:
            mine = [c for c in chases if c.path == path]
            if mine:
                out += _analyse_path(path, mine, l2)
        fill = _l2_fill_unit([c for c in chases if c.stage == "l2fill"])
        if fill is not None:
            out.append(fill)
        if not any(f.name == "l2.line" for f in out):
            line = _l2_line([c for c in chases if c.stage in ("l2hit", "l2scatter")])
            if line is not None:
                out.append(line)
        if not any(f.name == "l2.ways" for f in out):  # Kepler's ca path dissected it already
            line_found = next((f.value for f in out if f.name == "l2.line"), None)
            out += _l2_ways(chases, l2, line_found)
        return out


# ---------------------------------------------------------------------------------------------
# The L2's fill unit: what one miss brings from DRAM
# ---------------------------------------------------------------------------------------------


def _l2_fill_chase(log: ChaseLog, l2_bytes: int, memory: int) -> None:
    """A cold chase through the L2-only path at a 4-byte stride. The chain fills a buffer of
    four L2 capacities front to back, so its first 32 KB were evicted long before the chase
    starts there; with no warm-up every access is either the miss that fetches a fill unit
    or a hit in the unit just fetched."""
    footprint = min(4 * l2_bytes, memory // 4) // 4096 * 4096
    if footprint < 2 * l2_bytes:
        return
    log.run(path="cg", stage="l2fill", footprint=footprint, stride=4, warmup=0,
            record=L2_FILL_RECORD)


def _l2_fill_unit(fills: list[Chase]) -> Finding | None:
    """``l2.fill_unit``: the block size u at which the first access of (nearly) every
    u-aligned block is the slowest of its block by a clear margin. Below the fill unit only
    some blocks start with a miss; above it the block holds further misses. Comparing within
    a block, not against a threshold, keeps near and far L2 hits (H100/H200: 280 vs 530
    cycles, DRAM 700) from being mistaken for misses."""
    if not fills:
        return None
    c = fills[0]
    if c.ev_access.size < c.record:  # the record must be complete (threshold -inf)
        return None
    lat = c.ev_latency[np.argsort(c.ev_access)]
    elem = c.ev_index[np.argsort(c.ev_access)]
    if not np.array_equal(elem, np.arange(elem.size) + elem[0]):
        return None
    margin = max(10.0, 0.05 * float(np.median(lat)))
    score = {}
    for unit in L2_FILL_UNITS:
        k = unit // 4
        first = (-int(elem[0])) % k  # the first access that starts a u-aligned block
        n = (lat.size - first) // k
        if n < 16:
            continue
        blocks = lat[first:first + n * k].reshape(n, k)
        score[unit] = float(np.mean(blocks[:, 0] > blocks[:, 1:].max(axis=1) + margin))
    if not score:
        return None
    unit = max(score, key=score.get)
    if score[unit] < 0.8:
        return None
    # The one rival that counts is twice the unit scoring too. Half the unit always scores
    # about half (every other block starts with the miss); twice the unit may score up to
    # about half without doubt on the unit, where the first fetch into a line costs more
    # than the next (the H200: 26 % of 128-B blocks, against 100 % of 64-B blocks).
    confidence = round(score[unit] * min(1.0, 2.0 * (1.0 - score.get(2 * unit, 0.0))), 2)
    return Finding("l2.fill_unit", int(unit), "byte", confidence,
                   f"cold stride-4 chase on path 'cg' over {c.footprint >> 20} MB (four L2 "
                   f"capacities, built front to back): the first access of "
                   f"{score[unit]:.0%} of {unit}-B blocks is the slowest of its block by "
                   f">{margin:.0f} cycles ({', '.join(f'{u} B {v:.0%}' for u, v in score.items())})")


def _l2_scatter_chases(log: ChaseLog, l2_bytes: int, memory: int) -> None:
    """The L2's line by scattered chases on the L2-only path at 1.5 L2 capacities, each
    recorded for L2_SCATTER_RECORD accesses after one untimed pass; first, a reference of
    L2 hits (three quarters of the capacity: past a near partition, so far hits are in it)
    to tell hits, near or far, from DRAM accesses."""
    footprint = int(SCATTER_FACTOR * l2_bytes)
    if footprint > memory // 4:
        return
    ref = 3 * l2_bytes // 4 // 32 * 32  # 32-B blocks: every line of it in play
    log.run(path="cg", stage="l2hit", footprint=ref, stride=32,
            record=min(L2_SCATTER_RECORD, ref // 32), order="scattered")
    for b in L2_SCATTER_BLOCKS:
        blocks = footprint // b
        log.run(path="cg", stage="l2scatter", footprint=blocks * b, stride=b,
                record=min(L2_SCATTER_RECORD, blocks), order="scattered")


def l2_scatter_shares(chases: list[Chase]
                      ) -> tuple[dict[int, float], float, float, float] | None:
    """(DRAM share by block, the cycles that split hits from DRAM accesses, the hits' 90th
    percentile, the slowest chase's median) of the L2 scattered chases, or ``None``."""
    hit = [c for c in chases if c.stage == "l2hit"]
    sweep = sorted((c for c in chases if c.stage == "l2scatter"), key=lambda c: c.stride)
    if not hit or len(sweep) < 3 or hit[0].ev_latency.size < hit[0].record:
        return None
    hit_hi = float(np.percentile(hit[0].ev_latency, 90))
    miss = max(float(np.median(c.ev_latency)) for c in sweep)
    if miss < 1.15 * hit_hi:  # an H200: far-partition hits reach 531 cycles, DRAM 617-700
        return None  # no chase is slower than hits: no DRAM in play
    miss_at = 0.5 * (hit_hi + miss)
    return _scatter_shares(sweep, miss_at), miss_at, hit_hi, miss


def scatter_shares_by_path(chases: list[Chase]) -> dict[str, dict[int, float]]:
    """Miss share by block size of every path's scattered chases (events are the misses:
    their threshold is the search's, 1.25 x the hit latency) and the L2's DRAM share."""
    out: dict[str, dict[int, float]] = {}
    for path in sorted({c.path for c in chases if c.stage == "scatter"}):
        mine = [c for c in chases if c.stage == "scatter" and c.path == path]
        out[path] = _scatter_shares(mine, max(c.threshold for c in mine))
    l2 = l2_scatter_shares(chases)
    if l2 is not None:
        out["l2"] = l2[0]
    return out


def _l2_line(chases: list[Chase]) -> Finding | None:
    """``l2.line`` from the L2 scattered chases: a DRAM access is one slower than the
    midpoint between the hits' 90th percentile and the largest median of the sweep (blocks
    within a line and at least the fill unit: every access goes to DRAM; below the fill unit
    some hit what the previous one fetched, as on the H200 with 64-B fills)."""
    got = l2_scatter_shares(chases)
    if got is None:
        return None
    shares, miss_at, hit_hi, miss = got
    sweep = sorted((c for c in chases if c.stage == "l2scatter"), key=lambda c: c.stride)
    found = scatter_line(shares)
    if found is None:
        return None
    line, conf = found
    return Finding(
        "l2.line", int(line), "byte", conf,
        f"scattered chases on path 'cg' over {sweep[0].footprint >> 20} MB (1.5 L2 "
        f"capacities): one access per block at a random element of it; the share of DRAM "
        f"accesses (over {miss_at:.0f} cycles: L2 hits reach {hit_hi:.0f}, DRAM "
        f"{miss:.0f}) stays on a plateau while the block is within a line and falls past it "
        f"({', '.join(f'{b} B {v:.0%}' for b, v in shares.items())})")


# ---------------------------------------------------------------------------------------------
# The L2's ways: lines one capacity apart share a set
# ---------------------------------------------------------------------------------------------


def _l2_ways_chases(log: ChaseLog, l2_bytes: int, memory: int) -> None:
    """Chases through the L2-only path of N lines one L2 capacity C apart. Under an index
    modulo the sets (C = S W b) they all fall in one set: N <= W hit, N = W + 1 miss on
    every access (LRU). Each chase is N accesses a pass, so the search costs a few thousand
    accesses where Mei & Chu's stride method would chase the whole L2 one access at a time.
    N doubles until half the accesses go to DRAM (the L2 scattered chases' threshold), then
    is bisected; the edge is chased again. A hashed index spreads the lines over the sets:
    misses then ramp instead of jumping, and the analysis reports no ways."""
    got = l2_scatter_shares(log.chases)
    if got is None:
        return
    miss_at = got[1]
    most = min(L2_WAYS_MOST, min(memory // 4, CHAIN_SPAN) // l2_bytes)

    def share(n: int) -> float | None:
        c = log.run(path="cg", stage="l2ways", footprint=n * l2_bytes, stride=l2_bytes,
                    passes=L2_WAYS_PASSES, threshold=miss_at)
        return None if c is None else c.ev_access.size / c.record

    n, lo = 2, 1
    while n <= most:
        got_share = share(n)
        if got_share is None:
            return
        if got_share >= 0.5:
            break
        lo, n = n, 2 * n
    else:
        return  # no set overflowed within the lines chased
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        s = share(mid)
        if s is None:
            return
        lo, hi = (mid, hi) if s < 0.5 else (lo, mid)
    for edge in (lo, hi):  # the decisive pair once more, from fresh chases
        if share(edge) is None:
            return


def _l2_ways(chases: list[Chase], l2_bytes: float, line: Any) -> list[Finding]:
    """``l2.ways`` (and ``l2.sets`` = C / (W b) with the line found) from the set-strided
    chases: W is the most lines one capacity apart that hit, W + 1 the fewest that miss; the
    edge must be a jump (at most 10 % misses below it, at least 90 % above, every chase of
    it agreeing), else the index is not modulo the sets and nothing is reported."""
    mine = [c for c in chases if c.stage == "l2ways" and c.stride > 0]
    if not mine or not l2_bytes:
        return []
    shares: dict[int, list[float]] = {}
    for c in mine:
        shares.setdefault(c.footprint // c.stride, []).append(c.ev_access.size / c.record)
    hit = [n for n, v in shares.items() if max(v) <= 0.1]
    if not hit:
        return []
    w = max(hit)
    over = shares.get(w + 1)
    if over is None or min(over) < 0.9 or any(max(v) > 0.1 for n, v in shares.items()
                                              if n < w):
        return []
    sure = len(shares[w]) >= 2 and len(over) >= 2
    seen = ", ".join(f"{n}: {max(v):.0%}" for n, v in sorted(shares.items()))
    how = (f"chases through 'cg' of N lines {int(l2_bytes)} B (one L2 capacity) apart: "
           f"{w} lines hit, {w + 1} miss on {min(over):.0%} of accesses (misses by N: {seen}); "
           f"an index modulo the sets puts them all in one set")
    out = [Finding("l2.ways", int(w), "1", 0.9 if sure else 0.7, how)]
    if isinstance(line, int) and line > 0 and l2_bytes % (w * line) == 0:
        out.append(Finding("l2.sets", int(l2_bytes // (w * line)), "1", 0.9 if sure else 0.7,
                           f"L2 capacity {int(l2_bytes)} B / ({w} ways x {line} B lines)"))
    return out


# ---------------------------------------------------------------------------------------------
# Chases run ahead: the next steps of a bisection, several at once
# ---------------------------------------------------------------------------------------------


class _Capture(Exception):  # noqa: N818 - not an error: carries the request a step would send
    def __init__(self, request: ChaseRequest) -> None:
        self.request = request


class Ahead:
    """The device as the search sees it: where the device can run several chases at once
    (``chase_threads`` > 1: the built-in simulator given threads), the chases the next steps
    of a bisection may ask for are run ahead, together; each step then takes its chase from
    here. A chase is a function of its request (seed included) on such a device, so the
    search sends, logs and decides on exactly the chases it would one at a time, and a
    guess it never asks for is dropped. Any other device (a GPU) runs each chase when asked,
    in the search's order, as before."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.threads = int(getattr(device, "chase_threads", 1) or 1)
        self._ready: dict[ChaseRequest, ChaseResult] = {}
        self._capturing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.device, name)

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        if self._capturing:
            raise _Capture(request)
        got = self._ready.pop(request, None)
        return got if got is not None else self.device.pointer_chase(request)

    def ready(self, request: ChaseRequest | None) -> bool:
        return request in self._ready

    def request_of(self, step: Callable[[], Any], later: int = 0) -> ChaseRequest | None:
        """The request ``step`` (a call that runs one chase through the log) would send if
        ``later`` chases were logged before it; None if it sends none."""
        if self.threads < 2:
            return None
        self._capturing = True
        try:
            step()
        except _Capture as c:
            return replace(c.request, seed=c.request.seed + later)
        finally:
            self._capturing = False
        return None

    def run_ahead(self, requests: Sequence[ChaseRequest | None]) -> None:
        """Run these chases together (those not held already), for the steps to take; what
        was held before is dropped (guesses the search went past)."""
        want = [r for r in dict.fromkeys(requests) if r is not None]
        todo = [r for r in want if r not in self._ready]
        if self.threads < 2 or len(todo) < 2:
            return
        self._ready = {r: self._ready[r] for r in want if r in self._ready}
        kept: list[ChaseRequest] = []
        total = 0
        for r in todo:  # the likeliest first: memory for at most AHEAD_RECORDS accesses
            total += r.record
            if kept and total > AHEAD_RECORDS:
                break
            kept.append(r)
        for r, res in zip(kept, self.device.pointer_chases(kept), strict=True):
            if isinstance(res, ChaseResult):
                self._ready[r] = res


def bisection_guesses(lo: int, hi: int, mid_of: Callable[[int, int], int],
                      until: Callable[[int, int], bool], cost: Callable[[int], int],
                      n: int) -> list[tuple[int, int]]:
    """The first ``n`` probes of a bisection of (lo, hi), nearest the root first, as
    (probe, chases logged before it): the probe at (lo, hi) is ``mid_of(lo, hi)``, then
    (lo, mid) or (mid, hi), until ``until(lo, hi)``; a probe logs ``cost(probe)`` chases."""
    out: list[tuple[int, int]] = []
    todo = deque([(lo, hi, 0)])
    while todo and len(out) < n:
        a, b, before = todo.popleft()
        if until(a, b):
            continue
        mid = mid_of(a, b)
        out.append((mid, before))
        after = before + cost(mid)
        todo.extend(((a, mid, after), (mid, b, after)))
    return out


# ---------------------------------------------------------------------------------------------
# The search (runs chases; decisions use the same helpers as the analysis)
# ---------------------------------------------------------------------------------------------


class _Dissection:
    def __init__(self, log: ChaseLog, path: str, limit: int) -> None:
        self.log, self.path, self.limit = log, path, limit
        self.ahead = log.device if isinstance(log.device, Ahead) else None

    def _ahead(self, steps: Sequence[tuple[Callable[[], Any], int]]) -> None:
        """Run the chases of these steps (each a call that chases, and the chases logged
        before it) together, where the device can."""
        a = self.ahead
        if a is not None and a.threads > 1:
            a.run_ahead([a.request_of(step, later) for step, later in steps])

    def _ahead_bisection(self, lo: int, hi: int, mid_of: Callable[[int, int], int],
                         until: Callable[[int, int], bool], cost: Callable[[int], int],
                         step_of: Callable[[int], Any]) -> None:
        """Before a step of the bisection of (lo, hi) whose probe ``m`` is ``step_of(m)``:
        unless its chase is held already, run the first probes of the bisection from here
        together, as many as the device runs at once."""
        a = self.ahead
        if a is None or a.threads < 2 or a.ready(a.request_of(lambda: step_of(mid_of(lo, hi)))):
            return
        self._ahead([(lambda m=m: step_of(m), later) for m, later in
                     bisection_guesses(lo, hi, mid_of, until, cost, a.threads)])

    def conflict(self, group: list[int], cand: int, ways: int) -> bool:
        """Does the line at ``cand`` fall into the set of ``group`` (W + 1 lines of one set)?
        W of them plus ``cand`` cycle: one set overflows only if ``cand`` joins it."""
        if cand in group:  # the W + 1 lines of the set itself: an overflow, chased anyway
            pattern = (group[0], *(g for g in group[1:] if g != cand), cand)
        else:
            pattern = (group[0], *group[1:ways], cand)
        chased: list[Chase] = []
        while len(chased) < SIZE_REPEATS:  # again (pooled) while neither clear nor clearly not
            c = self.log.run(path=self.path, stage="bits", footprint=max(pattern) + 64,
                             stride=4, passes=max(8, 2 * (ways + 2)), order="pattern",
                             pattern=pattern, threshold=self.threshold)
            if c is None:
                return False
            chased.append(c)
            d = overflow_decision(chased, self.rule)
            if d is not None:
                return d
        return overflows(pooled(chased), self.rule)

    def _size_chase(self, footprint: int) -> Chase | None:
        for c in reversed(self.log.chases):
            if c.path == self.path and c.stage == "size" and c.footprint == footprint:
                return c
        return None

    def _line_step(self, cap: int, k: int) -> Chase | None:
        """The line stage's chase k elements past the capacity."""
        return self.chase("line", cap + 4 * k, 4, self.line_passes)

    def _line_ahead(self, cap: int) -> None:
        """Where the device can: the chase at C + 4, the jump search's first chase and its
        first bisection probes, together (each needs only the capacity)."""
        a = self.ahead
        if a is None or a.threads < 2:
            return
        guesses = bisection_guesses(1, LINE_TOP, lambda x, y: (x + y) // 2,
                                    lambda x, y: y - x <= 1, lambda _k: 1, a.threads - 2)
        self._ahead([(lambda k=k: self._line_step(cap, k), later) for k, later in
                     [(1, 0), (LINE_TOP, 1), *((k, 2 + n) for k, n in guesses)]])

    def _jump(self, cap: int, n1: float, sector: int | None) -> int | None:
        lo_k, hi_k = 1, LINE_TOP
        c = self._line_step(cap, hi_k)
        if c is None or not _second_set(c, hi_k, n1, sector, self.rule):
            return None

        def step(k: int) -> Chase | None:
            return self._line_step(cap, k)

        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            self._ahead_bisection(lo_k, hi_k, lambda a, b: (a + b) // 2,
                                  lambda a, b: b - a <= 1, lambda _k: 1, step)
            c = step(mid)
            if c is None:
                return None
            if _second_set(c, mid, n1, sector, self.rule):
                hi_k = mid
            else:
                lo_k = mid
        # the edge once more, from fresh chases on both sides (the analysis confirms the line
        # only if they agree)
        self._ahead([(lambda: step(hi_k - 1), 0), (lambda: step(hi_k), 1)])
        for k in (hi_k - 1, hi_k):
            if step(k) is None:
                return None
        return 4 * (hi_k - 1)

    def _half_miss_footprint(self, cap: int) -> int | None:
        """Where a 32-B stride chase misses half as often as it can: the footprint the
        scattered chases scale from. Under a hashed index the first conflicts (``cap``) come
        long before that (the H200's L1: 127 KB against about 200 KB)."""
        for f in (2 * cap, 4 * cap):
            if f <= 2 * self.limit and self._size_chase(f) is None:
                self.chase("size", f, 32, SIZE_PASSES)
        size = [c for c in self.log.chases if c.path == self.path and c.stage == "size"]
        return half_miss_footprint(size, self.rule.lo)

    def chase(self, stage: str, footprint: int, stride: int, passes: float, **kw: Any
              ) -> Chase | None:
        return self.log.run(path=self.path, stage=stage, footprint=footprint, stride=stride,
                            passes=passes, threshold=self.threshold, **kw)

    def overflow_at(self, footprint: int) -> bool | None:
        """Does a 32-B stride chase over ``footprint`` overflow a set? Chased again (up to
        SIZE_REPEATS times, evidence pooled) until the answer is clear; ``None`` if it never
        is, or the device skips the footprint."""
        group = [c for c in self.log.chases if c.path == self.path and c.stage == "size"
                 and c.footprint == footprint]
        while True:
            if group:
                d = overflow_decision(group, self.rule)
                if d is not None or len(group) >= SIZE_REPEATS:
                    return d
            c = self.chase("size", footprint, 32, SIZE_PASSES)
            if c is None:
                return None
            group.append(c)

    def run(self) -> None:
        self.threshold = -np.inf
        first = self.log.run(path=self.path, stage="size", footprint=START, stride=32,
                             passes=CALIBRATION_PASSES)
        if first is None:
            return
        self.threshold = event_threshold(first)
        # 1. size: double until a tenth of the accesses miss, then bisect
        n, miss = 2 * START, None
        while n <= 2 * self.limit:
            c = self.chase("size", n, 32, SIZE_PASSES)
            if c is None:
                return
            miss = _miss_latency(c)
            if miss is not None:
                break
            n *= 2
        if miss is None:
            return  # no cache level below the limit on this path
        rule = self.rule = miss_rule(first, miss)
        sizes = sorted({ch.footprint for ch in self.log.chases
                        if ch.path == self.path and ch.stage == "size"})
        decided = {f: self.overflow_at(f) for f in sizes}
        below = [f for f, o in decided.items() if o is False]
        if not below:
            return  # even the smallest footprints miss: no cache in front (analysis says)
        lo = max(below)
        above = [f for f, o in decided.items() if o and f > lo]
        if not above:
            return
        hi = min(above)

        def mid_of(a: int, b: int) -> int:
            return (a + b) // 2 // 32 * 32

        def cost(f: int) -> int:  # a footprint chased already decides without a chase, mostly
            return 0 if self._size_chase(f) is not None else 1

        while hi - lo > 32:
            mid = mid_of(lo, hi)
            self._ahead_bisection(lo, hi, mid_of, lambda a, b: b - a <= 32, cost,
                                  self.overflow_at)
            o = self.overflow_at(mid)
            if o is None:
                return  # the capacity stays between lo and hi: unresolved (analysis)
            if o:
                hi = mid
            else:
                lo = mid
        cap = lo
        # the decisive pair once more, from fresh chases: a capacity is reported as sure only
        # when both sides of its edge reproduce (the analysis judges; a hashed index, whose
        # first conflicts move between allocations, goes on to the stages that need none)
        self._ahead([(lambda: self.chase("size", cap, 32, SIZE_PASSES), 0),
                     (lambda: self.chase("size", hi, 32, SIZE_PASSES), 1)])
        for f in (cap, hi):
            if self.chase("size", f, 32, SIZE_PASSES) is None:
                return
            self.overflow_at(f)
        # a quarter past the capacity: does the miss share jump (LRU, modulo) or ramp?
        if 5 * cap // 4 // 32 * 32 not in sizes:
            self.chase("size", 5 * cap // 4 // 32 * 32, 32, SIZE_PASSES)
        # where half the accesses miss; below it, a hashed index only begins to conflict
        half = self._half_miss_footprint(cap)
        # fill granularity, Mei & Chu's stride method: at twice the capacity (or of the
        # half-miss footprint, past which a hashed index misses) every line misses once per
        # pass, so a 4-byte stride misses once per fill unit
        self.chase("fill", 2 * max(cap, half or 0) // 4 * 4, 4, FILL_PASSES)
        if half:
            scatter_chases(self.log, self.path, half, self.threshold)
        # Under LRU or FIFO an overflowing set's lines miss in every pass; under a random
        # policy they do not, and the next stages need many more passes to see them all.
        self.line_passes = LINE_PASSES if _every_pass(hi_chase := self._size_chase(hi), rule) \
            else LINE_PASSES_RANDOM
        # 2. line: where the count of missing elements jumps (C + b + 4)
        self._line_ahead(cap)
        base = self._line_step(cap, 1)
        if base is None:
            return
        n1 = _misses_per_pass(base, rule)
        sector = _sector(base, rule)
        jump = self._jump(cap, n1, sector)
        # 3. sets: one set overflowed at line stride. Candidates: the jump, then every
        #    power of two from large to small (a stride above the line touches too few
        #    lines to overflow a set; the first candidate that overflows exactly one set,
        #    W + 1 lines with C = S W b, is the line). The jump can mislead: with sets
        #    interleaved in chunks of lines (Fermi's texture L1) it is the chunk; under a
        #    random policy the counts wobble.
        for line in _line_candidates(jump, sector):
            if cap % line:
                continue
            first_passes = SETS_PASSES if self.line_passes == LINE_PASSES else _passes_for(16)
            sets_chase = self.chase("sets", cap + line, line, first_passes)
            if sets_chase is None:
                return
            overflowing = {e * 4 // line for e in missing_elements(sets_chase, rule)}
            ways = len(overflowing) - 1
            if ways >= 1 and cap % (ways * line) == 0:
                break
        else:
            return
        # A random policy may spare some line of the set for many passes: chase long
        # enough that every one of its W + 1 lines misses (about 16 misses per line).
        passes = _passes_for(ways)
        if passes > SETS_PASSES:
            sets_chase = self.chase("sets", cap + line, line, passes)
            if sets_chase is None:
                return
            overflowing = {e * 4 // line for e in missing_elements(sets_chase, rule)}
            ways = len(overflowing) - 1
            if ways < 1 or cap % (ways * line):
                return
        n_sets = cap // (ways * line)
        # index bits, by conflict tests: x0 ^ 2^b joins x0's set unless bit b selects the
        # set; two bits that each move x0 out but together keep it in are XOR-folded
        if n_sets & (n_sets - 1) == 0 and n_sets > 1:
            group = [g * line for g in sorted(overflowing)]
            top = min(MAX_INDEX_BIT, max(self.limit, 1 << 20).bit_length() + 8)
            involved = [b for b in range(line.bit_length() - 1, top)
                        if not self.conflict(group, group[0] ^ (1 << b), ways)]
            for i, j in combinations(involved, 2):
                self.conflict(group, group[0] ^ (1 << i) ^ (1 << j), ways)
        # 4. policy: cycle through just that set's W + 1 lines, long; LRU-like (every access
        #    misses) -> tell LRU from FIFO; otherwise replay which slot each miss evicted
        pattern = tuple(x * line for x in sorted(overflowing))
        pol = self.chase("policy", cap + line, 4, 0, order="pattern", pattern=pattern,
                         record=max(POLICY_MISSES * 2, 200 * len(pattern)))
        if pol is not None and _pattern_miss_fraction(pol, rule.lo, rule.hi) >= 0.97 \
                and line >= 12:
            self.chase("fifo", cap + line, 4, 16, order="pattern",
                       pattern=_fifo_pattern(sorted(overflowing), line))


def half_miss_footprint(size: list[Chase], miss_at: float) -> int | None:
    """The footprint at which the miss share of sequential chases crosses half its largest
    value (interpolated on a log scale between the chases around it)."""
    got = half_miss_bracket(size, miss_at)
    return got[2] if got else None


def half_miss_bracket(size: list[Chase], miss_at: float) -> tuple[int, int, int] | None:
    """(chase below, chase above, interpolated footprint) of the half-miss crossing."""
    pts = sorted((c.footprint, float((c.ev_latency >= miss_at).sum()) / max(1, c.observed))
                 for c in size)
    top = max((v for _, v in pts), default=0.0)
    if top < 0.05:
        return None
    for (f0, v0), (f1, v1) in zip(pts, pts[1:]):
        if v0 < 0.5 * top <= v1:
            t = (0.5 * top - v0) / (v1 - v0)
            return f0, f1, int(round(f0 * (f1 / f0) ** t))
    return None


def scatter_chases(log: ChaseLog, path: str, half: int, threshold: float) -> None:
    """The line (allocation unit) by scattered chases: at F = 1.5 times the half-miss
    footprint, one access per block of b bytes keeps F / line lines in play while b <= line,
    and F / b above it."""
    for b in SCATTER_BLOCKS:
        footprint = int(SCATTER_FACTOR * half) // b * b
        if footprint // b >= SCATTER_MIN_BLOCKS:
            blocks = footprint // b
            log.run(path=path, stage="scatter", footprint=footprint, stride=b,
                    passes=max(SCATTER_PASSES, -(-SCATTER_RECORD // blocks)),
                    order="scattered", threshold=threshold)


def _line_gap(chases: list[Chase], cap: int) -> str:
    """What the line stage lacks, for a note: the chase at the size plus one element, enough
    passes, the jump's two sides, the 'sets' chase."""
    lines = [c for c in chases if c.stage == "line"]
    sets = [c for c in chases if c.stage == "sets"]
    if not lines and not sets:
        return ""
    if not any(c.footprint == cap + 4 for c in lines):
        return (f"; missing: a 'line' chase at C + 4 B = {cap + 4} B (the size plus one "
                f"element, 4-B stride), where the line stage starts")
    few = sorted({c.footprint for c in lines + sets if passes_of(c) < 2})
    if few:
        return (f"; the chases at {', '.join(f'{f} B' for f in few)} pass their footprint "
                f"fewer than twice after warm-up (passes >= 2 needed)")
    if not any(c.footprint == cap + c.stride for c in sets):
        return "; missing: a 'sets' chase at C + b with stride b (one set overflowed)"
    return "; no 'sets' chase at C + b overflowed exactly one set"


def _short_note(short: dict[int, str], fps: list[int], rule: MissRule, first: Chase) -> str:
    """Which 'size' chases could not decide, and what they lack (docs/results.md, "What each
    stage must hold")."""
    def at(kind: str) -> str:
        return ", ".join(f"{f} B" for f in fps if short.get(f) == kind)

    parts = []
    if at("passes"):
        parts.append(f"the 'size' chases at {at('passes')} pass their footprint fewer than "
                     f"twice after warm-up (record < 2 x footprint / stride; passes >= 2 "
                     f"needed, gpumem chases {SIZE_PASSES}): a miss counts only when it "
                     f"repeats at one element")
    if at("accesses"):
        parts.append(f"the 'size' chases at {at('accesses')} hold too few accesses for a "
                     f"decision: at the mis-timing rate the calibration chase allows "
                     f"({rule.noise:.2%}, from its {first.observed} accesses) even a miss in "
                     f"every pass would not be clear (chase more passes, or a longer "
                     f"calibration chase: gpumem's has {CALIBRATION_PASSES} passes)")
    return "; ".join(parts) or "chases too short to decide"


def _components(bits: list[int], links: list[tuple[int, int]]
                ) -> tuple[list[int], list[tuple[int, ...]]]:
    """Bits linked by XOR-folding, as set-index functions: single bits, and tuples."""
    parent = {b: b for b in bits}

    def find(b: int) -> int:
        while parent[b] != b:
            b = parent[b]
        return b

    for i, j in links:
        parent[find(i)] = find(j)
    comps: dict[int, list[int]] = {}
    for b in bits:
        comps.setdefault(find(b), []).append(b)
    plain = sorted(c[0] for c in comps.values() if len(c) == 1)
    folded = sorted(tuple(sorted(c)) for c in comps.values() if len(c) > 1)
    return plain, folded


def _line_candidates(jump: int | None, sector: int | None) -> list[int]:
    """The jump; then every power of two below it down to the sector spacing, largest first
    (a FIFO cache whose count jumped at twice its line: 128-byte lines jumped at 256, and
    the sector alone, next, read as a 32-byte line with four times the ways); when sets
    interleave in chunks (the chunk's lines look like sectors), the smaller spacing."""
    out = [jump] if jump and jump & (jump - 1) == 0 else []
    if not (sector and jump and sector < jump):
        return out
    below = [1 << k for k in range(jump.bit_length() - 1, 0, -1) if sector < 1 << k < jump]
    return out + below + [sector]


def _every_pass(c: Chase | None, rule: MissRule) -> bool:
    """Did some element of this (overflowing) chase miss in nearly every pass?"""
    if c is None:
        return True
    passes = max(1, c.observed // max(1, c.per_pass))
    counts = miss_counts(c, rule.lo, rule.hi)
    return bool(counts) and max(counts.values()) >= 0.9 * passes


def _passes_for(ways: int) -> int:
    return max(2 * SETS_PASSES, 32 * (ways + 1))


def _miss_latency(c: Chase) -> float | None:
    """The next level's latency, once at least a tenth of the accesses miss (with a 32-byte
    stride over 128-byte lines only a quarter can: the median would never move)."""
    if c.ev_latency.size >= 0.1 * c.observed:
        return float(np.median(c.ev_latency))
    return None


def _fifo_pattern(lines: list[int], line: int) -> tuple[int, ...]:
    """Lines x0..xW of one set: x0 .. x(W-1), x0 again (2nd element), xW, x0 (3rd element).

    LRU keeps x0 (touched again before xW arrives), so the last access hits; FIFO evicts x0
    (the oldest fill), so it misses."""
    first, *rest = lines
    w = len(rest)
    order = [first * line] + [x * line for x in rest[:w - 1]] + \
        [first * line + 4, rest[w - 1] * line, first * line + 8]
    return tuple(order)


def event_threshold(hit: Chase) -> float:
    """Cycles from which an access is an event (possibly a miss), from a chase that cannot
    miss (every access kept): a quarter above the hits' median, or six of their standard
    deviations (robust: 1.4826 median absolute deviations) where the timer jitters more."""
    lat = hit.ev_latency
    h = float(np.median(lat))
    sigma = 1.4826 * float(np.median(np.abs(lat - h)))
    return h + max(0.25 * abs(h), 6.0 * sigma, 2.0)


def miss_rule(hit: Chase, miss: float) -> MissRule:
    """What counts as a miss once the next level's latency ``miss`` is known: anything from
    the geometric mean of hit and miss latency (or the event threshold, if higher) up. No
    upper bound: a clock that slows mid-sweep moves the misses, and mis-timings are told
    from misses by repetition (an overflowing set's lines miss pass after pass), not by
    latency."""
    lo = max(event_threshold(hit), math.sqrt(max(hit.median, 1.0) * miss))
    return MissRule(lo, math.inf, _noise_rate(hit, lo, math.inf))


def _noise_rate(c: Chase, lo: float, hi: float) -> float:
    """In-band rate of a chase small enough never to miss: how often mis-timed accesses
    land where misses do (every access of that chase is kept). The upper end of its 95 %
    interval (k + 1 + 2 sqrt(k + 1) of n), not the count itself: with 0.5 % mis-timings a
    few hundred accesses may show none, and a rate taken too low lets chance repeats pass
    for conflicts."""
    k = float(c.in_band(lo, hi).sum())
    return (k + 1.0 + 2.0 * np.sqrt(k + 1.0)) / (c.observed + 1)


def _sector(c: Chase, rule: MissRule) -> int | None:
    """Fill granularity: the smallest gap between missing addresses, when it is below
    MAX_LINE (sectors of one line); ``None`` when each missing line shows one miss."""
    addrs = np.sort(np.fromiter(missing_elements(c, rule), dtype=np.int64)) * 4
    gaps = np.diff(addrs)
    gaps = gaps[(gaps > 0) & (gaps < MAX_LINE)]
    return int(gaps.min()) if gaps.size else None


def _line_extent(c: Chase, rule: MissRule, sector: int | None) -> int | None:
    """A second reading of the line, for sectored caches: at C + 4 (stride 4) an evicted
    line's sectors all miss again, so the missing elements come in runs one line long, one
    run per line of the overflowing set. The most common extent of runs (of two sectors or
    more), to a power of two; ``None`` without sectors (one miss per line, no run)."""
    if not sector:
        return None
    addrs = np.sort(np.fromiter(missing_elements(c, rule), dtype=np.int64)) * 4
    if addrs.size < 2:
        return None
    breaks = np.nonzero(np.diff(addrs) > sector)[0] + 1
    extents = [int(r[-1] - r[0]) + sector for r in np.split(addrs, breaks)
               if r.size >= 2 and r[-1] - r[0] >= sector]
    if not extents:
        return None
    common = Counter(extents).most_common(1)[0][0]
    return 1 << (int(common) - 1).bit_length()


def _misses_per_pass(c: Chase, rule: MissRule) -> float:
    """Misses per recorded pass, counting only elements that miss repeatedly (mis-timed
    accesses scatter over the footprint and almost never repeat at one element)."""
    passes = max(1, c.observed / max(1, c.per_pass))
    need = rule.min_repeats(c)
    counts = miss_counts(c, rule.lo, rule.hi)
    return float(sum(n for n in counts.values() if n >= need)) / passes


def _second_set(c: Chase, k: int, n1: float, sector: int | None, rule: MissRule) -> bool:
    """At footprint C + 4k: did a second set start overflowing? The misses per pass double
    then (under any policy, on average); within the first new line they only grow by at
    most one per new sector of that line."""
    own = -(-4 * k // sector) - 1 if sector else 0
    return _misses_per_pass(c, rule) > 1.5 * n1 + own


def _fill_unit(fills: list[Chase], rule: MissRule) -> tuple[int, str] | None:
    """(bytes, how) filled per miss, from a stride-4 chase well past the capacity: 4 bytes
    over the share of accesses that miss, rounded to a power of two."""
    if not fills:
        return None
    c = fills[0]
    share = float(c.in_band(rule.lo, rule.hi).sum()) / max(1, c.observed)
    if share <= 0:
        return None
    unit = 1 << max(2, int(round(math.log2(4 / share))))
    return unit, (f": stride-4 chase at {c.footprint} B (past the capacity), "
                  f"{share:.1%} of accesses miss, one per {unit} B (the fill unit: a sector, "
                  f"or the line where lines are not sectored)")


def _clean_band(miss_latencies: np.ndarray) -> tuple[float, float]:
    """Latencies that are surely misses: the central 98 % of the band's misses, widened by
    half its width and two cycles (timer jitter), so a hit plus a mis-timing rarely lands in
    it."""
    if miss_latencies.size == 0:
        return (math.inf, math.inf)
    lo, hi = np.percentile(miss_latencies, [1, 99])
    pad = 0.5 * (hi - lo) + 2.0
    return (float(lo - pad), float(hi + pad))


def _pattern_miss_fraction(c: Chase, lo: float, hi: float) -> float:
    return float(c.in_band(lo, hi).sum() / c.observed) if c.observed else 0.0


# ---------------------------------------------------------------------------------------------
# Analysis (pure: from the logged chases of one path)
# ---------------------------------------------------------------------------------------------


def scatter_line(shares: dict[int, float]) -> tuple[int, float] | None:
    """(line, confidence) from the miss share of scattered chases at 1.5 capacities, by block.

    Up to the line, one access per block keeps the same lines in play whatever the block
    (below the sector, accesses share sectors and the share drops): a plateau. Past it, each
    doubling halves the lines in play and the share falls off the plateau, though not to
    zero: random in-block offsets spread the lines unevenly over the sets (a direct-mapped
    cache still misses about half). The line is the largest block on the plateau."""
    if len(shares) < 3:
        return None
    top = max(shares.values())
    if top < 0.1:
        return None  # 1.5 capacities barely miss: no plateau to read
    line = max(b for b, v in shares.items() if v >= 0.85 * top)
    after = shares.get(2 * line)
    if after is None:
        return None  # still on the plateau at the largest block tried
    return line, (0.9 if after <= 0.6 * shares[line] else 0.5)


def _scatter_shares(chases: list[Chase], miss_at: float) -> dict[int, float]:
    return {c.stride: float((c.ev_latency >= miss_at).sum()) / max(1, c.observed)
            for c in sorted(chases, key=lambda c: c.stride)}


def _scatter_finding(level: str, path: str, chases: list[Chase], miss_at: float,
                     note: str = "") -> Finding | None:
    shares = _scatter_shares(chases, miss_at)
    found = scatter_line(shares)
    if found is None:
        return None
    line, conf = found
    fp = max(c.footprint for c in chases)
    return Finding(
        f"{level}.line", int(line), "byte", conf,
        f"scattered chases on path '{path}' over about {fp >> 10} KB (1.5 times the footprint "
        f"where half the accesses miss): one access per block, at a random element of it; "
        f"the miss share stays on a plateau while the block is within a "
        f"line and falls past it ({', '.join(f'{b} B {v:.0%}' for b, v in shares.items())})",
        note=note)


def _analyse_path(path: str, chases: list[Chase], l2_bytes: float) -> list[Finding]:
    """Findings of one load path; where the overflow search found no line (a hashed index
    whose misses ramp), the scattered chases give the line and the stride method's fill
    unit stands in as the sector."""
    out, rule = _overflow_findings(path, chases, l2_bytes)
    sizes = [f for f in out if f.name.endswith((".overflow_size", ".conflict_onset"))]
    # where conflicts begin on a hashed cache moves with the allocation (an H200's read-only
    # path: 93 to 131 KB over five runs): not a finding of its own, only a note
    onset = next((f for f in out if f.name.endswith(".conflict_onset")), None)
    out = [f for f in out if f is not onset]
    if rule is not None and sizes:
        level = sizes[0].name.rsplit(".", 1)[0]
        half = half_miss_bracket([c for c in chases if c.stage == "size"], rule.lo)
        if half:
            out.append(Finding(
                f"{level}.half_miss_size", int(half[2]), "byte", 0.8, kind="measured",
                method=f"fine-grained P-chase on path '{path}': footprint at which a 32-B "
                f"stride chase misses half as often as it can (log-interpolated between the "
                f"chases at {half[0]} and {half[1]} B)",
                interval=(float(half[0]), float(half[1])),
                note="for a hashed index, whose misses ramp, a practical capacity" + (
                    f"; conflicts began at {onset.value} B in this run ({onset.note})"
                    if onset else "")))
    scatter = [c for c in chases if c.stage == "scatter"]
    line_at = [i for i, f in enumerate(out) if f.name.endswith(".line")]
    if rule is not None and sizes and scatter and not line_at:
        level = sizes[0].name.rsplit(".", 1)[0]
        found = _scatter_finding(level, path, scatter, rule.lo,
                                 note="ways and sets not inferred: no single set could be "
                                 "overflowed on its own (a hashed index or a policy that "
                                 "spares lines)")
        if found:
            out.append(found)
    elif rule is not None and scatter and line_at:  # two methods: say whether they agree
        i = line_at[0]
        other = scatter_line(_scatter_shares(scatter, rule.lo))
        if other is not None:
            word = "agree" if other[0] == out[i].value else f"disagree ({other[0]} B)"
            out[i] = replace(out[i], method=out[i].method + f"; scattered chases {word}")
    size = next((f for f in out if f.name.endswith(".overflow_size") and f.resolved), None)
    if size is not None and not any(f.name.endswith(".line") for f in out):
        level = size.name.rsplit(".", 1)[0]
        have = sorted({c.stage for c in chases})
        out.append(unresolved(
            f"{level}.line", "byte", [], f"fine-grained P-chase on path '{path}'",
            f"not determinable: the line needs 'line' chases (4-B stride from C + 4 B, C the "
            f"size) and a 'sets' chase at C + b overflowing one set, or 'scatter' chases; "
            f"this log has stages {', '.join(have)}" + _line_gap(chases, int(size.value))))
    if size is not None and not any(f.name.endswith(".ways") for f in out) and \
            not any("ways and sets not inferred" in f.note for f in out):
        level = size.name.rsplit(".", 1)[0]
        out.append(unresolved(
            f"{level}.ways", "1", [], f"fine-grained P-chase on path '{path}'",
            "not determinable: no 'sets' chase (line stride at C + b) overflowed exactly "
            "one set"))
    if rule is not None and sizes and not any(f.name.endswith(".sector") for f in out):
        fill = _fill_unit([c for c in chases if c.stage == "fill"], rule)
        if fill:
            level = sizes[0].name.rsplit(".", 1)[0]
            out.append(Finding(f"{level}.sector", fill[0], "byte", 0.6,
                               f"fine-grained P-chase on path '{path}'{fill[1]}"))
    return out


def _overflow_findings(path: str, chases: list[Chase], l2_bytes: float
                       ) -> tuple[list[Finding], MissRule | None]:
    size = sorted((c for c in chases if c.stage == "size"), key=lambda c: c.footprint)
    if not size:
        return [], None
    first = min(size, key=lambda c: c.number)  # the calibration chase: every access kept
    hit = first.median
    # the next level's latency: the first chase of the doubling that missed (search order)
    jumped = [m for m in (_miss_latency(c) for c in sorted(size, key=lambda c: c.number)
                          if c is not first) if m is not None]
    if not jumped:
        return [], None
    rule = miss_rule(first, jumped[0])
    level0 = LEVEL_OF_PATH[path]
    method = f"fine-grained P-chase on path '{path}'"
    groups: dict[int, list[Chase]] = {}
    for c in size:
        groups.setdefault(c.footprint, []).append(c)
    over = {f: overflow_decision(g, rule) for f, g in groups.items()}
    # chases too short to show an overflow: their silence is no evidence (issue 30)
    short = {f: why for f, g in groups.items() if (why := undecidable(g, rule))}
    for f in short:
        over[f] = None
    fs = sorted(over)
    ok = [f for f in fs if over[f] is False]
    if not ok and short:
        return [unresolved(f"{level0}.overflow_size", "byte", [], method,
                           "not determinable: " + _short_note(short, sorted(short), rule,
                                                              first))], None
    if not ok:
        return [unresolved(f"{level0}.overflow_size", "byte", [], method,
                           f"even {fs[0]} B misses repeatedly (over {rule.lo:.0f} cycles, hits "
                           f"{hit:.0f}): no footprint was seen to fit, so no capacity")], None
    # the search's answer: the bisection ends on a footprint that does not overflow next to
    # one (32 B above) that does; where misses ramp, a few larger footprints may pass again
    edges = [a for a, b in zip(fs, fs[1:]) if over[a] is False and over[b] and b - a <= 32]
    open_ = [f for f in fs if over[f] is None]
    undecided = not edges and open_
    unbracketed = False
    if undecided:  # the bisection stopped on a footprint it could not decide
        cap = max(f for f in ok if f < min(open_)) if any(f < min(open_) for f in ok) \
            else ok[0]
        above = [f for f in fs if over[f] and f > cap]
        nxt = min(above) if above else max(fs)
    else:
        cap = min(edges) if edges else max(ok)
        nxt = min(f for f in fs if f > cap) if any(f > cap for f in fs) else cap
        unbracketed = not edges and nxt > cap  # the edge was never chased to 32 B
    blocked = [f for f in open_ if cap < f < nxt and f in short] if undecided else []
    if blocked:  # the edge lies among chases too short to decide: no capacity, no ramp
        return [unresolved(f"{level0}.overflow_size", "byte", [cap, nxt], method,
                           f"not determinable: the capacity lies between {cap} and {nxt} B; "
                           + _short_note(short, blocked, rule, first))], rule
    verified = bool(edges) and len(groups[cap]) >= 2 and len(groups[nxt]) >= 2
    if not all(over[f] for f in fs if f > cap):
        cap_note = "some footprints above the capacity did not overflow"
    else:
        cap_note = ""
    # An LRU cache with a modulo index misses nearly every access of a sequential chase a
    # quarter past its capacity; a hashed index (or a policy that spares lines) ramps up
    # instead, and the first repeated miss marks where conflicts begin, not the capacity.
    ramp = False
    past = [c for c in size if c.footprint >= 1.2 * cap]  # the 1.25 C probe, rounded down
    if len(past) >= 2:
        def frac(c: Chase) -> float:
            return float(c.in_band(rule.lo, rule.hi).sum()) / max(1, c.observed)

        near, far = min(past, key=lambda c: c.footprint), max(past, key=lambda c: c.footprint)
        if far.footprint >= 1.5 * near.footprint and frac(near) < RAMP * frac(far):
            ramp = True
            cap_note = (f"conflicts begin here, but misses ramp instead of jumping as under "
                        f"LRU with a modulo index ({frac(near):.0%} of accesses at "
                        f"{near.footprint} B, {frac(far):.0%} at {far.footprint} B): a hashed "
                        f"index or a policy that spares lines, whose first conflicts move "
                        f"with the allocation; not a capacity (the latency ladder's l1d.size "
                        f"and this experiment's half_miss_size are)")
    level = "l2" if l2_bytes and cap >= l2_bytes / 2 else level0
    out = [Finding(f"{level}.hit_latency", round(hit, 2), "cycle", 1.0,
                   method + ", 512 B footprint (timer overhead removed)")]
    if ramp:  # not a capacity: where conflicts begin, which moves with the allocation
        out.append(Finding(f"{level}.conflict_onset", int(cap), "byte", 0.8,
                           method + ": largest footprint with no repeated miss (32-B stride)",
                           note=cap_note, kind="measured",
                           interval=(float(cap), float(nxt))))
        return out, rule
    if undecided or unbracketed:
        between = [f for f in open_ if cap < f < nxt]
        why = (_short_note(short, [f for f in between if f in short], rule, first)
               if undecided and any(f in short for f in between) else
               f"chases at {', '.join(f'{f} B' for f in between) or 'them'} "
               f"neither showed a repeated miss clearly nor clearly none after "
               f"{max(len(groups[f]) for f in open_)} chases each (timer noise)"
               if undecided else
               "no two 'size' chases 32 B apart bracket the edge (the search's bisection "
               "chases are missing: a sweep, or a search cut short)")
        return [unresolved(f"{level0}.overflow_size", "byte", [cap, nxt], method,
                           f"not determinable to the byte: the capacity lies between {cap} "
                           f"and {nxt} B; {why}")], rule
    conf = (0.7 if cap_note else 0.95) if verified else 0.5
    if not verified:
        cap_note = (cap_note + "; " if cap_note else "") + \
            "the edge was not reproduced by a second pair of chases"
    out.append(Finding(f"{level}.overflow_size", int(cap), "byte", conf,
                       method + ": largest footprint with no repeated miss (32-B stride), its "
                       "edge chased twice on each side", note=cap_note))
    lines = sorted((c for c in chases if c.stage == "line"), key=lambda c: c.footprint)
    if not lines or lines[0].footprint != cap + 4:
        return out, rule
    n1 = _misses_per_pass(lines[0], rule)
    sector_gap = _sector(lines[0], rule)
    jumps = [c.footprint for c in lines
             if _second_set(c, (c.footprint - cap) // 4, n1, sector_gap, rule)]
    jump = min(jumps) - cap - 4 if jumps else None
    first: set[int] = set()
    line, ways, sets = 0, 0, []
    for c in sorted((c for c in chases if c.stage == "sets"), key=lambda c: c.number):
        if c.footprint == cap + c.stride and not first:
            cand = {e * 4 // c.stride for e in missing_elements(c, rule)}
            if len(cand) >= 2 and cap % ((len(cand) - 1) * c.stride) == 0:
                first, line, ways = cand, c.stride, len(cand) - 1
        elif line and c.stride == line and c.footprint == cap + line:
            cand = {e * 4 // line for e in missing_elements(c, rule)}
            if len(cand) - 1 >= ways and cap % ((len(cand) - 1) * line) == 0:
                first, ways = cand, len(cand) - 1  # the longer chase: every line missed
    if not line:
        return out, rule
    # The line is confirmed when the jump that gave it reproduced: at C + b + 4 every chase
    # shows the second set, at C + b none does (a policy that spares lines can move one
    # chase's count either way; a stride-b overflow alone cannot tell b from 2b, since a
    # cache of b-byte lines seen at stride 2b looks like one of 2b-byte lines with half the
    # sets).
    by_fp: dict[int, list[Chase]] = {}
    for c in lines:
        by_fp.setdefault(c.footprint, []).append(c)

    def second(c: Chase) -> bool:
        return _second_set(c, (c.footprint - cap) // 4, n1, sector_gap, rule)

    edge_hi, edge_lo = by_fp.get(cap + line + 4, []), by_fp.get(cap + line, [])
    confirmed = (line == jump and len(edge_hi) >= 2 and len(edge_lo) >= 2
                 and all(map(second, edge_hi)) and not any(map(second, edge_lo)))
    extent = _line_extent(lines[0], rule, sector_gap) if sector_gap and sector_gap < line \
        else None  # a gap as wide as the line is the set's spacing: no sectors
    if extent is not None and extent != line:
        confirmed = False  # the sectors that miss together span another size
    exact = (line & (line - 1)) == 0
    how = ("jump of the missing-element count at C + b + 4, and the largest stride at which "
           "one set overflows: both" if line == jump else
           f"the largest stride at which one set overflows (missing-element count jumps "
           f"at {jump} B)" if jump else "the largest stride at which one set overflows")
    how += ("; the jump reproduced by fresh chases on both sides" if confirmed else
            "; the jump not reproduced")
    # The geometry is sure when two decisions agree on the line (the count jump and the set
    # overflow at line stride) on a reproduced capacity; one alone can be moved by a policy
    # that spares lines (random replacement wobbles the counts).
    sure = confirmed and exact and verified
    geo = 0.95 if sure else 0.6
    out.append(Finding(f"{level}.line", int(line), "byte", geo if exact else 0.4,
                       f"{method}: {how}"))
    sector = min(sector_gap, line) if sector_gap else line
    out.append(Finding(f"{level}.sector", int(sector), "byte",
                       min(geo, 0.9 if sector_gap else 0.7),
                       method + ": spacing of missing elements within a missing line"))
    n_sets = cap // (ways * line)
    out.append(Finding(f"{level}.ways", int(ways), "1", geo,
                       method + ": lines missing with one set overflowed, minus one"))
    out.append(Finding(f"{level}.sets", int(n_sets), "1", geo, "size / (ways x line)"))
    bits = [c for c in chases if c.stage == "bits"]
    if bits:
        x0 = bits[0].pattern[0]
        tests: dict[int, list[Chase]] = {}
        for c in bits:
            tests.setdefault(c.pattern[-1] ^ x0, []).append(c)
        same = {m: bool(overflow_decision(g, rule)) if overflow_decision(g, rule) is not None
                else overflows(pooled(g), rule) for m, g in tests.items()}
        single = sorted(m.bit_length() - 1 for m in same if m & (m - 1) == 0)
        involved = [b for b in single if not same[1 << b]]
        links = [(i, j) for i, j in combinations(involved, 2) if same.get((1 << i) | (1 << j))]
        plain, folded = _components(involved, links)
        need = int(round(math.log2(n_sets)))
        consistent = len(plain) + len(folded) == need
        out.append(Finding(f"{level}.index_bits", format_bits(plain, folded), "",
                           geo if consistent else 0.4,
                           f"conflict tests: flipping each address bit {single[0]}-{single[-1]}"
                           f" of a line, and pairs of them, moves it out of its set or not",
                           note="" if consistent else f"{len(plain) + len(folded)} index "
                           f"functions found, {need} expected from {n_sets} sets"))
    policy = [c for c in chases if c.stage == "policy"]
    if not policy:
        return out, rule
    pol = policy[0]
    frac = _pattern_miss_fraction(pol, rule.lo, rule.hi)
    fifo = [c for c in chases if c.stage == "fifo"]
    if frac >= 0.97:
        if fifo:
            c = fifo[0]
            probe = c.pattern[-1] // 4
            at = np.nonzero(c.elements() == probe)[0]
            missed = set(c.ev_access[c.in_band(rule.lo, rule.hi)].tolist())
            miss_rate = float(np.mean([a in missed for a in at])) if at.size else 0.5
            name = "fifo" if miss_rate > 0.5 else "lru"
            out.append(Finding(f"{level}.policy", name, "", 0.95,
                               f"every access to an overflowing set misses; a line touched "
                               f"again before the overflow "
                               f"{'misses' if name == 'fifo' else 'hits'} ({miss_rate:.0%})"))
        else:
            out.append(Finding(f"{level}.policy", "lru", "", 0.6,
                               "every access to an overflowing set misses (LRU or FIFO)"))
        return out, rule
    # misses for the replay: clean ones (within the spread of the bulk of misses) are taken
    # as they are; others may be a miss or a mis-timed hit, and the replay decides
    m = pol.in_band(rule.lo, rule.hi)
    order = np.argsort(pol.ev_access[m])
    lat = pol.ev_latency[m][order]
    own = pol.ev_latency[pol.in_band(rule.lo, rule.hi)]  # the policy chase's own misses: a clock
    clean = _clean_band(pol.ev_latency[pol.in_band(*band(float(np.median(own))))]
                        if own.size else own)  # that moved since the size stage moves them
    sure = (lat >= clean[0]) & (lat <= clean[1])
    miss_lines = (pol.ev_index[m][order] * 4 // line).tolist()
    # uniform or not, from the sure misses alone: a mistake there only smears the counts
    # towards uniform, whereas the search below, free to pick among labellings, would
    # make a uniform policy look skewed
    plain = replay_evictions([x for x, ok in zip(miss_lines, sure) if ok], first)
    if uniform_enough(plain):
        out.append(Finding(f"{level}.policy", "random", "", 0.8,
                           f"{frac:.0%} of accesses to an overflowing set miss; evictions "
                           f"spread evenly over the ways {plain}"))
    else:
        counts = replay_evictions(miss_lines, first, sure=sure.tolist(),
                                  positions=pol.ev_access[m][order].tolist())
        out.append(Finding(f"{level}.policy", "non-lru", "", 0.85,
                           f"{frac:.0%} of accesses to an overflowing set miss; replayed "
                           f"evictions per way {counts}"))
        out.append(Finding(f"{level}.way_weights", way_weights(counts), "1", 0.8,
                           f"evictions per way ({sum(counts)} replayed) in units of a "
                           f"plain way's (the lower half's median), largest first"))
    return out, rule
