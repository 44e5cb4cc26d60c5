"""The L2 stages of ``cache_structure``, on the L2-only path ``cg``: the fill unit (a cold
stride-4 chase), the line (scattered chases at 1.5 L2 capacities) and the ways (lines one
capacity apart). Each stage is a ``*_chase(s)`` function that runs its chases (live walk
only) and a function of the chases that gives its finding (both walks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpumem.analysis.chases import Chase
from gpumem.contracts.findings import Finding
from gpumem.experiments.cache_structure.confidence import CLEAR, QUALIFIED
from gpumem.experiments.cache_structure.evict import (
    NEAR,
    evict_chases,
    evict_ways,
    near_threshold,
)
from gpumem.experiments.cache_structure.rules import (
    CHAIN_SPAN,
    L2_FILL_RECORD,
    L2_FILL_UNITS,
    L2_SCATTER_BLOCKS,
    L2_SCATTER_RECORD,
    L2_WAYS_MOST,
    L2_WAYS_PASSES,
    SCATTER_FACTOR,
    _scatter_shares,
    scatter_line,
)
from gpumem.experiments.chaselog import ChaseLog


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
    unit = max(score, key=score.__getitem__)
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
                   f">{margin:.0f} cycles "
                   f"({', '.join(f'{u} B {v:.0%}' for u, v in score.items())})")


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
    out = [Finding("l2.ways", int(w), "1", CLEAR if sure else QUALIFIED, how)]
    if isinstance(line, int) and line > 0 and l2_bytes % (w * line) == 0:
        out.append(Finding("l2.sets", int(l2_bytes // (w * line)), "1",
                           CLEAR if sure else QUALIFIED,
                           f"L2 capacity {int(l2_bytes)} B / ({w} ways x {line} B lines)"))
    return out




def l2_stages(src: Any, found: list[Finding]) -> list[Finding]:
    """The L2 stages in turn, after the load paths' (``found``: their findings): the fill
    unit, the line (unless a path dissected the L2 already: Kepler's ``ca``), the ways and
    sets (lines one capacity apart; under a hashed index, a minimal eviction set:
    :mod:`.evict`). ``src`` is the walk's source; a live one runs each stage's chases first."""
    run = src.live and "cg" in src.load_paths and src.l2_bytes > 0
    out: list[Finding] = []
    if run:
        _l2_fill_chase(src.log, src.l2_bytes, src.memory)
    fill = _l2_fill_unit([c for c in src.chases if c.stage == "l2fill"])
    if fill is not None:
        out.append(fill)
    if run:
        _l2_scatter_chases(src.log, src.l2_bytes, src.memory)
    if not any(f.name == "l2.line" for f in found + out):
        line = _l2_line([c for c in src.chases if c.stage in ("l2hit", "l2scatter")])
        if line is not None:
            out.append(line)
    if run:
        _l2_ways_chases(src.log, src.l2_bytes, src.memory)
    line_found = next((f.value for f in found + out if f.name == "l2.line"), None)
    if not any(f.name == "l2.ways" for f in found + out):
        out += _l2_ways(src.chases, src.l2_bytes, line_found)
    if not any(f.name == "l2.ways" for f in found + out):  # a hashed index: eviction sets
        out += _evicted_ways(src, run, line_found)
    return out


def _evicted_ways(src: Any, run: bool, line: Any) -> list[Finding]:
    """``l2.ways`` from a minimal eviction set (:mod:`.evict`): against the near level where
    the L2's hits come in two levels, else (or where that search finds no set) against DRAM."""
    got = l2_scatter_shares(src.chases)
    live = run and got is not None and isinstance(line, int)
    hit = [c for c in src.chases if c.stage == "l2hit"]
    near = near_threshold(hit[0].ev_latency, got[1]) if got is not None and hit else None
    if near is not None:
        if live:
            evict_chases(src.log, src.l2_bytes, src.memory, line, near, NEAR)
        first = evict_ways(src.chases, src.l2_bytes, line, NEAR)
        if any(f.name == "l2.ways" and f.resolved for f in first):
            return first
    if live:
        assert got is not None
        evict_chases(src.log, src.l2_bytes, src.memory, line, got[1])
    return evict_ways(src.chases, src.l2_bytes, line)
