"""``cache_structure``'s constants and pure rules: what counts as a miss, per-chase readings
(misses per pass, sector gaps, line extents), the scattered chases' plateau, the notes that
say what a stored log lacks. Every stage of the walk (:mod:`.walk`) decides with these, on
live and on stored chases alike."""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

import numpy as np

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import (
    MissRule,
    miss_counts,
    missing_elements,
    overflow_decision,
    overflows,
    passes_of,
    pooled,
)
from gpumem.contracts.findings import Finding
from gpumem.experiments.cache_structure.confidence import CLEAR, UNCONFIRMED

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
    for (f0, v0), (f1, v1) in pairwise(pts):
        if v0 < 0.5 * top <= v1:
            t = (0.5 * top - v0) / (v1 - v0)
            return f0, f1, int(round(f0 * (f1 / f0) ** t))
    return None


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
    return line, (CLEAR if after <= 0.6 * shares[line] else UNCONFIRMED)


def _scatter_shares(chases: list[Chase], miss_at: float) -> dict[int, float]:
    return {c.stride: float((c.ev_latency >= miss_at).sum()) / max(1, c.observed)
            for c in sorted(chases, key=lambda c: c.stride)}


def joins(group: list[Chase], rule: MissRule) -> bool:
    """Do these chases of one conflict test (one pattern, pooled) overflow their set? Their
    decision where it is clear, else the pooled chase's plain reading."""
    d = overflow_decision(group, rule)
    return bool(d) if d is not None else overflows(pooled(group), rule)


def overflowing_lines(c: Chase, rule: MissRule, line: int) -> set[int]:
    """The lines (in units of ``line`` bytes) holding elements of ``c`` that miss
    repeatedly."""
    return {e * 4 // line for e in missing_elements(c, rule)}


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


