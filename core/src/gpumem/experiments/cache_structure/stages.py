"""The stages of one load path's walk (:mod:`.walk`), each a function of the walk ``w``.

A stage takes its chases (``w.live``: runs its search on the device; a stored walk finds
them in the log) and judges them; the judgement is the same function of the chases in both
walks, and the next stage searches from what it concluded. The ``_search_*`` functions are
the searches (live only), the others the judgements.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations, pairwise
from typing import Any

import numpy as np

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import (
    LEVEL_OF_PATH,
    band,
    format_bits,
    overflow_decision,
    replay_evictions,
    undecidable,
    uniform_enough,
    way_weights,
)
from gpumem.contracts.estimates import order_interval
from gpumem.contracts.findings import Finding, unresolved
from gpumem.experiments.cache_structure.ahead import bisection_guesses
from gpumem.experiments.cache_structure.confidence import (
    CLEAR,
    DOUBTFUL,
    MEASURED,
    QUALIFIED,
    READING,
    REPLAYED,
    SINGLE,
    SURE,
    UNCONFIRMED,
)
from gpumem.experiments.cache_structure.rules import (
    CALIBRATION_PASSES,
    FILL_PASSES,
    LINE_PASSES,
    LINE_PASSES_RANDOM,
    LINE_TOP,
    MAX_INDEX_BIT,
    POLICY_MISSES,
    RAMP,
    SCATTER_BLOCKS,
    SCATTER_FACTOR,
    SCATTER_MIN_BLOCKS,
    SCATTER_PASSES,
    SCATTER_RECORD,
    SETS_PASSES,
    SIZE_PASSES,
    SIZE_REPEATS,
    START,
    _clean_band,
    _components,
    _every_pass,
    _fifo_pattern,
    _fill_unit,
    _line_candidates,
    _line_extent,
    _line_gap,
    _miss_latency,
    _misses_per_pass,
    _passes_for,
    _pattern_miss_fraction,
    _scatter_finding,
    _scatter_shares,
    _second_set,
    _sector,
    _short_note,
    event_threshold,
    half_miss_bracket,
    half_miss_footprint,
    joins,
    miss_rule,
    overflowing_lines,
    scatter_line,
)
from gpumem.experiments.chaselog import ChaseLog

#: every access to an overflowing set misses (LRU or FIFO) from this share of them up
EVERY_ACCESS = 0.97


@dataclass
class Capacity:
    """What the capacity stage concluded: the capacity ``cap`` and the next footprint
    chased above it, whether the edge reproduced, the level's name (``l2`` where the
    capacity is half the L2 or more)."""

    cap: int
    nxt: int
    verified: bool
    level: str


@dataclass
class Geometry:
    """What the sets stage concluded: the line, the ways and the set that overflowed (its
    lines, in units of the line), and the jump of the line stage."""

    line: int
    ways: int
    lines: set[int]
    jump: int | None



# ---------------------------------------------------------------------------------------------
# Running chases ahead (live walk, where the device runs several at once)
# ---------------------------------------------------------------------------------------------


def _ahead(w: Any, steps: Sequence[tuple[Callable[[], Any], int]]) -> None:
    """Run the chases of these steps (each a call that chases, and the chases logged before
    it) together, where the device can."""
    a = w.src.ahead
    if a is not None and a.threads > 1:
        a.run_ahead([a.request_of(step, later) for step, later in steps])


def _ahead_bisection(w: Any, lo: int, hi: int, mid_of: Callable[[int, int], int],
                     until: Callable[[int, int], bool], cost: Callable[[int], int],
                     step_of: Callable[[int], Any]) -> None:
    """Before a step of the bisection of (lo, hi) whose probe ``m`` is ``step_of(m)``:
    unless its chase is held already, run the first probes of the bisection from here
    together, as many as the device runs at once."""
    a = w.src.ahead
    if a is None or a.threads < 2 or a.ready(a.request_of(lambda: step_of(mid_of(lo, hi)))):
        return
    _ahead(w, [(functools.partial(step_of, m), later) for m, later in
               bisection_guesses(lo, hi, mid_of, until, cost, a.threads)])


# ---------------------------------------------------------------------------------------------
# Stage 0: calibration (the hit latency, what counts as a miss)
# ---------------------------------------------------------------------------------------------


def calibrate(w: Any) -> bool:
    """A 512-B chase that cannot miss (every access kept: the hits' spread, the mis-timing
    rate), then footprints doubled until a tenth of the accesses miss: the next level's
    latency. Sets ``w.first`` and ``w.rule``; False where no miss was seen."""
    if w.live:
        first = w.src.log.run(path=w.path, stage="size", footprint=START, stride=32,
                              passes=CALIBRATION_PASSES)
        if first is None:
            return False
        w.threshold = event_threshold(first)
        n = 2 * START
        while n <= 2 * w.src.limit:
            c = w.chase("size", n, 32, SIZE_PASSES)
            if c is None:
                return False
            if _miss_latency(c) is not None:
                break
            n *= 2
        else:
            return False  # no cache level below the limit on this path
    size = sorted(w.of("size"), key=lambda c: c.number)
    if not size:
        return False
    first = size[0]
    # the next level's latency: the first chase of the doubling that missed (search order)
    jumped = [m for m in (_miss_latency(c) for c in size if c is not first) if m is not None]
    if not jumped:
        return False
    w.first, w.rule = first, miss_rule(first, jumped[0])
    return True


# ---------------------------------------------------------------------------------------------
# Stage 1: capacity (32-B stride, footprint bisected to 32 bytes)
# ---------------------------------------------------------------------------------------------


def _overflow_at(w: Any, footprint: int) -> bool | None:
    """Does a 32-B stride chase over ``footprint`` overflow a set? Chased again (up to
    SIZE_REPEATS times, evidence pooled) until the answer is clear; ``None`` if it never
    is, or the device skips the footprint."""
    group = [c for c in w.of("size") if c.footprint == footprint]
    while True:
        if group:
            d = overflow_decision(group, w.rule)
            if d is not None or len(group) >= SIZE_REPEATS:
                return d
        c = w.chase("size", footprint, 32, SIZE_PASSES)
        if c is None:
            return None
        group.append(c)


def _search_capacity(w: Any) -> bool:
    """The footprints of the doubling decided, then bisected to 32 B; the decisive pair
    chased once more (a capacity is sure only when both sides of its edge reproduce); then
    the chases past it. False where the search stopped short."""
    sizes = sorted({c.footprint for c in w.of("size")})
    decided = {f: _overflow_at(w, f) for f in sizes}
    below = [f for f, o in decided.items() if o is False]
    if not below:
        return False  # even the smallest footprints miss: no cache in front
    lo = max(below)
    above = [f for f, o in decided.items() if o and f > lo]
    if not above:
        return False
    hi = min(above)

    def mid_of(a: int, b: int) -> int:
        return (a + b) // 2 // 32 * 32

    def cost(f: int) -> int:  # a footprint chased already decides without a chase, mostly
        return 0 if w.last("size", f) is not None else 1

    while hi - lo > 32:
        mid = mid_of(lo, hi)
        _ahead_bisection(w, lo, hi, mid_of, lambda a, b: b - a <= 32, cost,
                         lambda f: _overflow_at(w, f))
        o = _overflow_at(w, mid)
        if o is None:
            return False  # the capacity stays between lo and hi: unresolved
        lo, hi = (lo, mid) if o else (mid, hi)
    cap = lo
    _ahead(w, [(lambda: w.chase("size", cap, 32, SIZE_PASSES), 0),
               (lambda: w.chase("size", hi, 32, SIZE_PASSES), 1)])
    for f in (cap, hi):
        if w.chase("size", f, 32, SIZE_PASSES) is None:
            return False
        _overflow_at(w, f)
    _search_past_capacity(w, cap, sizes)
    return True


def _search_past_capacity(w: Any, cap: int, doubled: list[int]) -> None:
    """A quarter past the capacity (does the miss share jump, as under LRU with a modulo
    index, or ramp?); twice and four times it (where half the accesses miss: below it a
    hashed index only begins to conflict); the fill chase at twice the larger of the two
    (every line misses once per pass: a 4-byte stride misses once per fill unit, Mei & Chu's
    stride method); the scattered chases from the half-miss footprint."""
    if 5 * cap // 4 // 32 * 32 not in doubled:
        w.chase("size", 5 * cap // 4 // 32 * 32, 32, SIZE_PASSES)
    for f in (2 * cap, 4 * cap):
        if f <= 2 * w.src.limit and w.last("size", f) is None:
            w.chase("size", f, 32, SIZE_PASSES)
    half = half_miss_footprint(w.of("size"), w.rule.lo)
    w.chase("fill", 2 * max(cap, half or 0) // 4 * 4, 4, FILL_PASSES)
    if half:
        scatter_chases(w.src.log, w.path, half, w.threshold)


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




def _capacity_edge(w: Any, groups: dict[int, list[Chase]]) -> Any:
    """The search's answer from the decisions at each footprint: (cap, next footprint,
    decisions, chases too short, undecided, unbracketed), or an unresolved finding."""
    rule, first, method = w.rule, w.first, w.method
    name = f"{LEVEL_OF_PATH[w.path]}.overflow_size"
    over = {f: overflow_decision(g, rule) for f, g in groups.items()}
    # chases too short to show an overflow: their silence is no evidence (issue 30)
    short = {f: why for f, g in groups.items() if (why := undecidable(g, rule))}
    for f in short:
        over[f] = None
    fs = sorted(over)
    ok = [f for f in fs if over[f] is False]
    if not ok:
        w.rule = None
        return unresolved(name, "byte", [], method, "not determinable: " + _short_note(
            short, sorted(short), rule, first) if short else
            f"even {fs[0]} B misses repeatedly (over {rule.lo:.0f} cycles, hits "
            f"{first.median:.0f}): no footprint was seen to fit, so no capacity")
    # the bisection ends on a footprint that does not overflow next to one (32 B above)
    # that does; where misses ramp, a few larger footprints may pass again
    edges = [a for a, b in pairwise(fs) if over[a] is False and over[b] and b - a <= 32]
    open_ = [f for f in fs if over[f] is None]
    undecided = bool(not edges and open_)
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
        return unresolved(name, "byte", [cap, nxt], method,
                          f"not determinable: the capacity lies between {cap} and {nxt} B; "
                          + _short_note(short, blocked, rule, first))
    return cap, nxt, over, short, undecided, unbracketed, bool(edges)


def _ramp(w: Any, size: list[Chase], cap: int) -> str:
    """An LRU cache with a modulo index misses nearly every access of a sequential chase a
    quarter past its capacity; a hashed index (or a policy that spares lines) ramps up
    instead, and the first repeated miss marks where conflicts begin, not the capacity.
    The note that says so, or ''."""
    rule = w.rule
    past = [c for c in size if c.footprint >= 1.2 * cap]  # the 1.25 C probe, rounded down
    if len(past) < 2:
        return ""

    def frac(c: Chase) -> float:
        return float(c.in_band(rule.lo, rule.hi).sum()) / max(1, c.observed)

    near, far = min(past, key=lambda c: c.footprint), max(past, key=lambda c: c.footprint)
    if far.footprint >= 1.5 * near.footprint and frac(near) < RAMP * frac(far):
        return (f"conflicts begin here, but misses ramp instead of jumping as under "
                f"LRU with a modulo index ({frac(near):.0%} of accesses at "
                f"{near.footprint} B, {frac(far):.0%} at {far.footprint} B): a hashed "
                f"index or a policy that spares lines, whose first conflicts move "
                f"with the allocation; not a capacity (the latency ladder's l1d.size "
                f"and this experiment's half_miss_size are)")
    return ""


def capacity(w: Any) -> Capacity | None:
    """Stage 1: the capacity C, the largest footprint with no repeated miss, its edge
    chased twice on each side. Its findings go to ``w.out``; returns a
    :class:`Capacity` where the next stages can search from it (a reproducible
    capacity, not where a hashed index's conflicts begin)."""
    went_on = _search_capacity(w) if w.live else True
    size = sorted(w.of("size"), key=lambda c: c.footprint)
    groups: dict[int, list[Chase]] = {}
    for c in size:
        groups.setdefault(c.footprint, []).append(c)
    edge = _capacity_edge(w, groups)
    if isinstance(edge, Finding):
        w.out.append(edge)
        return None
    cap, nxt, over, short, undecided, unbracketed, edged = edge
    level0, method = LEVEL_OF_PATH[w.path], w.method
    verified = edged and len(groups[cap]) >= 2 and len(groups[nxt]) >= 2
    ramp = _ramp(w, size, cap)
    level = "l2" if w.src.l2_bytes and cap >= w.src.l2_bytes / 2 else level0
    hit_medians = [c.median for c in size if c.footprint <= cap] or [w.first.median]
    lo, hi = order_interval(hit_medians)
    hit = Finding(f"{level}.hit_latency", round(w.first.median, 2), "cycle", MEASURED,
                  method + ", 512 B footprint (timer overhead removed)",
                  interval=(min(round(lo, 2), round(w.first.median, 2)),
                            max(round(hi, 2), round(w.first.median, 2))),
                  note=f"interval: of the median of the {len(hit_medians)} size chases that "
                       f"hit (footprints up to the capacity)")
    if ramp:  # not a capacity: where conflicts begin, which moves with the allocation
        w.out.append(hit)
        w.onset = Finding(f"{level}.conflict_onset", int(cap), "byte", READING,
                          method + ": largest footprint with no repeated miss (32-B stride)",
                          note=ramp, kind="measured", interval=(float(cap), float(nxt)))
        return None
    if undecided or unbracketed:
        open_ = [f for f in over if over[f] is None]
        between = [f for f in sorted(open_) if cap < f < nxt]
        why = (_short_note(short, [f for f in between if f in short], w.rule, w.first)
               if undecided and any(f in short for f in between) else
               f"chases at {', '.join(f'{f} B' for f in between) or 'them'} "
               f"neither showed a repeated miss clearly nor clearly none after "
               f"{max(len(groups[f]) for f in open_)} chases each (timer noise)"
               if undecided else
               "no two 'size' chases 32 B apart bracket the edge (the search's bisection "
               "chases are missing: a sweep, or a search cut short)")
        w.out.append(unresolved(f"{level0}.overflow_size", "byte", [cap, nxt], method,
                                f"not determinable to the byte: the capacity lies between "
                                f"{cap} and {nxt} B; {why}"))
        return None
    note = "" if all(over[f] for f in over if f > cap) else \
        "some footprints above the capacity did not overflow"
    conf = (QUALIFIED if note else SURE) if verified else UNCONFIRMED
    if not verified:
        note = (note + "; " if note else "") + \
            "the edge was not reproduced by a second pair of chases"
    w.out += [hit, Finding(f"{level}.overflow_size", int(cap), "byte", conf,
                           method + ": largest footprint with no repeated miss (32-B "
                           "stride), its edge chased twice on each side", note=note)]
    return Capacity(cap, nxt, verified, level) if went_on else None


# ---------------------------------------------------------------------------------------------
# Stage 2: line (4-B stride past C: the count of missing elements jumps at C + b + 4)
# ---------------------------------------------------------------------------------------------


def _line_step(w: Any, cap: int, k: int) -> Chase | None:
    """The line stage's chase k elements past the capacity."""
    return w.chase("line", cap + 4 * k, 4, w.line_passes)


def _search_line(w: Any, cap: Any) -> bool:
    """The chase at C + 4 (one set overflows: n1 misses per pass, and the sector gap), then
    the first footprint at which a second set overflows, bisected between C + 4 and
    C + 4 LINE_TOP (a line of up to MAX_LINE); its edge chased again on both sides. Under LRU
    or FIFO an overflowing set's lines miss in every pass; under a random policy they do not,
    and the next stages chase many more passes. False where the search stopped short."""
    rule, c0 = w.rule, cap.cap
    w.line_passes = LINE_PASSES if _every_pass(w.last("size", cap.nxt), rule) \
        else LINE_PASSES_RANDOM
    a = w.src.ahead
    if a is not None and a.threads >= 2:  # C + 4, the top and the first bisection probes
        guesses = bisection_guesses(1, LINE_TOP, lambda x, y: (x + y) // 2,
                                    lambda x, y: y - x <= 1, lambda _k: 1, a.threads - 2)
        _ahead(w, [(functools.partial(_line_step, w, c0, k), later) for k, later in
                   [(1, 0), (LINE_TOP, 1), *((k, 2 + n) for k, n in guesses)]])
    base = _line_step(w, c0, 1)
    if base is None:
        return False
    n1, sector = _misses_per_pass(base, rule), _sector(base, rule)
    lo_k, hi_k = 1, LINE_TOP
    c = _line_step(w, c0, hi_k)
    if c is None:
        return False
    if not _second_set(c, hi_k, n1, sector, rule):
        return True  # no second set within MAX_LINE: the judgement finds no jump
    while hi_k - lo_k > 1:
        mid = (lo_k + hi_k) // 2
        _ahead_bisection(w, lo_k, hi_k, lambda x, y: (x + y) // 2, lambda x, y: y - x <= 1,
                         lambda _k: 1, lambda k: _line_step(w, c0, k))
        c = _line_step(w, c0, mid)
        if c is None:
            return False
        lo_k, hi_k = (lo_k, mid) if _second_set(c, mid, n1, sector, rule) else (mid, hi_k)
    _ahead(w, [(lambda: _line_step(w, c0, hi_k - 1), 0), (lambda: _line_step(w, c0, hi_k), 1)])
    return all(_line_step(w, c0, k) is not None for k in (hi_k - 1, hi_k))


def _line_reading(w: Any, cap: int) -> tuple[list[Chase], float, int | None, int | None] | None:
    """(line chases by footprint, misses per pass at C + 4, sector gap, jump), or ``None``
    without the chase at C + 4."""
    rule = w.rule
    lines = sorted(w.of("line"), key=lambda c: c.footprint)
    if not lines or lines[0].footprint != cap + 4:
        return None
    n1 = _misses_per_pass(lines[0], rule)
    gap = _sector(lines[0], rule)
    jumps = [c.footprint for c in lines
             if _second_set(c, (c.footprint - cap) // 4, n1, gap, rule)]
    return lines, n1, gap, (min(jumps) - cap - 4 if jumps else None)


# ---------------------------------------------------------------------------------------------
# Stage 3: sets (line stride at C + b: one set overflows, W + 1 lines miss)
# ---------------------------------------------------------------------------------------------


def _search_sets(w: Any, cap: int, jump: int | None, gap: int | None) -> bool:
    """Candidates: the jump, then every power of two from large to small (a stride above
    the line touches too few lines to overflow a set; the first candidate that overflows
    exactly one set, W + 1 lines with C = S W b, is the line). The jump can mislead: with
    sets interleaved in chunks of lines (Fermi's texture L1) it is the chunk; under a
    random policy the counts wobble. Then the same chase long enough that every one of the
    set's W + 1 lines misses (about 16 misses per line). False where the search stopped."""
    rule = w.rule
    for line in _line_candidates(jump, gap):
        if cap % line:
            continue
        passes = SETS_PASSES if w.line_passes == LINE_PASSES else _passes_for(16)
        c = w.chase("sets", cap + line, line, passes)
        if c is None:
            return False
        ways = len(overflowing_lines(c, rule, line)) - 1
        if ways >= 1 and cap % (ways * line) == 0:
            break
    else:
        return False
    if _passes_for(ways) > SETS_PASSES:
        c = w.chase("sets", cap + line, line, _passes_for(ways))
        if c is None:
            return False
        ways = len(overflowing_lines(c, rule, line)) - 1
        if ways < 1 or cap % (ways * line):
            return False
    return True


def _sets_reading(w: Any, cap: int) -> tuple[set[int], int, int]:
    """(the overflowing set's lines, line, ways) from the 'sets' chases: the first at
    C + b overflowing one set, or a longer one at the same b in which more lines missed;
    line 0 where none did."""
    first: set[int] = set()
    line, ways = 0, 0
    for c in sorted(w.of("sets"), key=lambda c: c.number):
        if c.footprint == cap + c.stride and not first:
            cand = overflowing_lines(c, w.rule, c.stride)
            if len(cand) >= 2 and cap % ((len(cand) - 1) * c.stride) == 0:
                first, line, ways = cand, c.stride, len(cand) - 1
        elif line and c.stride == line and c.footprint == cap + line:
            cand = overflowing_lines(c, w.rule, line)
            if len(cand) - 1 >= ways and cap % ((len(cand) - 1) * line) == 0:
                first, ways = cand, len(cand) - 1  # the longer chase: every line missed
    return first, line, ways


def line_and_sets(w: Any, cap: Capacity) -> Geometry | None:
    """Stages 2 and 3: the line, sector, ways and sets (to ``w.out``). Returns a
    :class:`Geometry` where the next stages can search from it."""
    went_on = _search_line(w, cap) if w.live else True
    reading = _line_reading(w, cap.cap)
    if reading is None:
        return None
    lines, n1, gap, jump = reading
    went_on = went_on and (_search_sets(w, cap.cap, jump, gap) if w.live else True)
    first, line, ways = _sets_reading(w, cap.cap)
    if not line:
        return None
    geo = Geometry(line, ways, first, jump)
    _geometry_findings(w, cap, geo, lines, n1, gap)
    return geo if went_on else None


def _geometry_findings(w: Any, cap: Any, geo: Any, lines: list[Chase], n1: float,
                       gap: int | None) -> None:
    """The line is confirmed when the jump that gave it reproduced: at C + b + 4 every chase
    shows the second set, at C + b none does (a policy that spares lines can move one
    chase's count either way; a stride-b overflow alone cannot tell b from 2b, since a
    cache of b-byte lines seen at stride 2b looks like one of 2b-byte lines with half the
    sets). The geometry is sure when two decisions agree on the line (the count jump and
    the set overflow at line stride) on a reproduced capacity."""
    rule, c0, line, jump, method = w.rule, cap.cap, geo.line, geo.jump, w.method
    by_fp: dict[int, list[Chase]] = {}
    for c in lines:
        by_fp.setdefault(c.footprint, []).append(c)

    def second(c: Chase) -> bool:
        return _second_set(c, (c.footprint - c0) // 4, n1, gap, rule)

    edge_hi, edge_lo = by_fp.get(c0 + line + 4, []), by_fp.get(c0 + line, [])
    confirmed = (line == jump and len(edge_hi) >= 2 and len(edge_lo) >= 2
                 and all(map(second, edge_hi)) and not any(map(second, edge_lo)))
    extent = _line_extent(lines[0], rule, gap) if gap and gap < line \
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
    geo_conf = SURE if confirmed and exact and cap.verified else SINGLE
    level = cap.level
    w.geo_conf = geo_conf
    w.out += [
        Finding(f"{level}.line", int(line), "byte", geo_conf if exact else DOUBTFUL,
                f"{method}: {how}"),
        Finding(f"{level}.sector", int(min(gap, line) if gap else line), "byte",
                min(geo_conf, CLEAR if gap else QUALIFIED),
                method + ": spacing of missing elements within a missing line"),
        Finding(f"{level}.ways", int(geo.ways), "1", geo_conf,
                method + ": lines missing with one set overflowed, minus one"),
        Finding(f"{level}.sets", int(c0 // (geo.ways * line)), "1", geo_conf,
                "size / (ways x line)")]


# ---------------------------------------------------------------------------------------------
# Stage 4: index bits (conflict tests: does a line with one address bit flipped join the set?)
# ---------------------------------------------------------------------------------------------


def _conflict(w: Any, group: list[int], cand: int, ways: int) -> bool:
    """Does the line at ``cand`` fall into the set of ``group`` (W + 1 lines of one set)?
    W of them plus ``cand`` cycle: one set overflows only if ``cand`` joins it. Chased
    again (pooled) while neither clear nor clearly not."""
    if cand in group:  # the W + 1 lines of the set itself: an overflow, chased anyway
        pattern = (group[0], *(g for g in group[1:] if g != cand), cand)
    else:
        pattern = (group[0], *group[1:ways], cand)
    chased: list[Chase] = []
    while len(chased) < SIZE_REPEATS:
        c = w.chase("bits", max(pattern) + 64, 4, max(8, 2 * (ways + 2)), order="pattern",
                    pattern=pattern)
        if c is None:
            return False
        chased.append(c)
        d = overflow_decision(chased, w.rule)
        if d is not None:
            return d
    return joins(chased, w.rule)


def _search_index_bits(w: Any, geo: Any, sets: int) -> None:
    """x0 ^ 2^b joins x0's set unless bit b selects the set; two bits that each move x0 out
    but together keep it in are XOR-folded. (Where the sets are a power of two, more than
    one.)"""
    if sets & (sets - 1) or sets <= 1:
        return
    line = geo.line
    group = [g * line for g in sorted(geo.lines)]
    top = min(MAX_INDEX_BIT, max(w.src.limit, 1 << 20).bit_length() + 8)
    involved = [b for b in range(line.bit_length() - 1, top)
                if not _conflict(w, group, group[0] ^ (1 << b), geo.ways)]
    for i, j in combinations(involved, 2):
        _conflict(w, group, group[0] ^ (1 << i) ^ (1 << j), geo.ways)


def index_bits(w: Any, cap: Any, geo: Any) -> None:
    """Stage 4: the set-index functions (single bits, XOR-folded pairs) from the conflict
    tests, each mask's chases pooled; consistent when they number log2(sets)."""
    sets = cap.cap // (geo.ways * geo.line)
    if w.live:
        _search_index_bits(w, geo, sets)
    bits = w.of("bits")
    if not bits:
        return
    x0 = bits[0].pattern[0]
    tests: dict[int, list[Chase]] = {}
    for c in bits:
        tests.setdefault(c.pattern[-1] ^ x0, []).append(c)
    same = {m: joins(g, w.rule) for m, g in tests.items()}
    single = sorted(m.bit_length() - 1 for m in same if m & (m - 1) == 0)
    involved = [b for b in single if not same[1 << b]]
    links = [(i, j) for i, j in combinations(involved, 2) if same.get((1 << i) | (1 << j))]
    plain, folded = _components(involved, links)
    need = int(round(math.log2(sets)))
    consistent = len(plain) + len(folded) == need
    w.out.append(Finding(f"{cap.level}.index_bits", format_bits(plain, folded), "",
                         w.geo_conf if consistent else DOUBTFUL,
                         f"conflict tests: flipping each address bit {single[0]}-{single[-1]}"
                         f" of a line, and pairs of them, moves it out of its set or not",
                         note="" if consistent else f"{len(plain) + len(folded)} index "
                         f"functions found, {need} expected from {sets} sets"))


# ---------------------------------------------------------------------------------------------
# Stage 5: policy (the overflowing set's W + 1 lines cycled, long)
# ---------------------------------------------------------------------------------------------


def policy(w: Any, cap: Any, geo: Any) -> None:
    """Stage 5: LRU-like (every access misses) -> a pattern that re-touches one line tells
    LRU from FIFO; otherwise the misses are replayed to count which slot each evicted."""
    rule, line = w.rule, geo.line
    if w.live:
        pattern = tuple(x * line for x in sorted(geo.lines))
        pol = w.chase("policy", cap.cap + line, 4, 0, order="pattern", pattern=pattern,
                      record=max(POLICY_MISSES * 2, 200 * len(pattern)))
        if pol is not None and _pattern_miss_fraction(pol, rule.lo, rule.hi) >= EVERY_ACCESS \
                and line >= 12:
            w.chase("fifo", cap.cap + line, 4, 16, order="pattern",
                    pattern=_fifo_pattern(sorted(geo.lines), line))
    chases = w.of("policy")
    if not chases:
        return
    frac = _pattern_miss_fraction(chases[0], rule.lo, rule.hi)
    if frac < EVERY_ACCESS:
        _replayed_policy(w, cap.level, chases[0], frac, geo)
        return
    fifo = w.of("fifo")
    if not fifo:
        w.out.append(Finding(f"{cap.level}.policy", "lru", "", SINGLE,
                             "every access to an overflowing set misses (LRU or FIFO)"))
        return
    c = fifo[0]
    at = np.nonzero(c.elements() == c.pattern[-1] // 4)[0]
    missed = set(c.ev_access[c.in_band(rule.lo, rule.hi)].tolist())
    miss_rate = float(np.mean([a in missed for a in at])) if at.size else 0.5
    name = "fifo" if miss_rate > 0.5 else "lru"
    w.out.append(Finding(f"{cap.level}.policy", name, "", SURE,
                         f"every access to an overflowing set misses; a line touched "
                         f"again before the overflow "
                         f"{'misses' if name == 'fifo' else 'hits'} ({miss_rate:.0%})"))


def _replayed_policy(w: Any, level: str, pol: Chase, frac: float, geo: Any) -> None:
    """Misses for the replay: clean ones (within the spread of the bulk of misses) are taken
    as they are; others may be a miss or a mis-timed hit, and the replay decides. Uniform or
    not from the sure misses alone: a mistake there only smears the counts towards uniform,
    whereas the search, free to pick among labellings, would make a uniform policy look
    skewed."""
    rule = w.rule
    m = pol.in_band(rule.lo, rule.hi)
    order = np.argsort(pol.ev_access[m])
    lat = pol.ev_latency[m][order]
    own = pol.ev_latency[pol.in_band(rule.lo, rule.hi)]  # the policy chase's own misses: a
    clean = _clean_band(pol.ev_latency[pol.in_band(*band(float(np.median(own))))]
                        if own.size else own)  # clock that moved since the size stage
    sure = (lat >= clean[0]) & (lat <= clean[1])
    miss_lines = (pol.ev_index[m][order] * 4 // geo.line).tolist()
    plain = replay_evictions([x for x, ok in zip(miss_lines, sure, strict=True) if ok], geo.lines)
    if uniform_enough(plain):
        w.out.append(Finding(f"{level}.policy", "random", "", READING,
                             f"{frac:.0%} of accesses to an overflowing set miss; evictions "
                             f"spread evenly over the ways {plain}"))
        return
    counts = replay_evictions(miss_lines, geo.lines, sure=sure.tolist(),
                              positions=pol.ev_access[m][order].tolist())
    w.out += [Finding(f"{level}.policy", "non-lru", "", REPLAYED,
                      f"{frac:.0%} of accesses to an overflowing set miss; replayed "
                      f"evictions per way {counts}"),
              Finding(f"{level}.way_weights", way_weights(counts), "1", READING,
                      f"evictions per way ({sum(counts)} replayed) in units of a "
                      f"plain way's (the lower half's median), largest first")]


# ---------------------------------------------------------------------------------------------
# The path's closing findings: half-miss footprint, the scattered chases' line, the fill
# unit as the sector, and what could not be determined
# ---------------------------------------------------------------------------------------------


def closing(w: Any) -> list[Finding]:
    """The stages' findings and the path's closing ones. Where the overflow search found no
    line (a hashed index whose misses ramp), the scattered chases give the line and the
    stride method's fill unit stands in as the sector; where conflicts begin on a hashed
    cache moves with the allocation (an H200's read-only path: 93 to 131 KB over five runs):
    not a finding of its own, only a note."""
    out, rule, onset, method = list(w.out), w.rule, w.onset, w.method
    sizes = [f for f in out if f.name.endswith(".overflow_size")] + ([onset] if onset else [])
    level = sizes[0].name.rsplit(".", 1)[0] if sizes else ""
    if rule is not None and sizes:
        half = half_miss_bracket(w.of("size"), rule.lo)
        if half:
            out.append(Finding(
                f"{level}.half_miss_size", int(half[2]), "byte", READING, kind="measured",
                method=f"{method}: footprint at which a 32-B stride chase misses half as "
                f"often as it can (log-interpolated between the chases at {half[0]} and "
                f"{half[1]} B)",
                interval=(float(half[0]), float(half[1])),
                note="for a hashed index, whose misses ramp, a practical capacity" + (
                    f"; conflicts began at {onset.value} B in this run ({onset.note})"
                    if onset else "")))
    out = _scatter_line(w, out, level if sizes else None)
    size = next((f for f in out if f.name.endswith(".overflow_size") and f.resolved), None)
    if size is not None:
        out += _undetermined(w, out, size)
    if rule is not None and sizes and not any(f.name.endswith(".sector") for f in out):
        fill = _fill_unit(w.of("fill"), rule)
        if fill:
            out.append(Finding(f"{level}.sector", fill[0], "byte", SINGLE,
                               f"{method}{fill[1]}"))
    return out


def _scatter_line(w: Any, out: list[Finding], level: str | None) -> list[Finding]:
    """The scattered chases' line where the overflow search found none; where it found one,
    whether the two methods agree (said in its method)."""
    rule, scatter = w.rule, w.of("scatter")
    line_at = [i for i, f in enumerate(out) if f.name.endswith(".line")]
    if rule is None or not scatter:
        return out
    if level is not None and not line_at:
        found = _scatter_finding(level, w.path, scatter, rule.lo,
                                 note="ways and sets not inferred: no single set could be "
                                 "overflowed on its own (a hashed index or a policy that "
                                 "spares lines)")
        return out + [found] if found else out
    if line_at:
        i = line_at[0]
        other = scatter_line(_scatter_shares(scatter, rule.lo))
        if other is not None:
            word = "agree" if other[0] == out[i].value else f"disagree ({other[0]} B)"
            out[i] = replace(out[i], method=out[i].method + f"; scattered chases {word}")
    return out


def _undetermined(w: Any, out: list[Finding], size: Finding) -> list[Finding]:
    """A resolved capacity with no line, or no ways: unresolved findings that say what the
    log lacks."""
    level, method = size.name.rsplit(".", 1)[0], w.method
    mine = [c for c in w.src.chases if c.path == w.path]
    got: list[Finding] = []
    if not any(f.name.endswith(".line") for f in out):
        have = sorted({c.stage for c in mine})
        assert isinstance(size.value, (int, float))  # resolved: a byte count
        got.append(unresolved(
            f"{level}.line", "byte", [], method,
            f"not determinable: the line needs 'line' chases (4-B stride from C + 4 B, C the "
            f"size) and a 'sets' chase at C + b overflowing one set, or 'scatter' chases; "
            f"this log has stages {', '.join(have)}" + _line_gap(mine, int(size.value))))
    if not any(f.name.endswith(".ways") for f in out) and \
            not any("ways and sets not inferred" in f.note for f in out):
        got.append(unresolved(
            f"{level}.ways", "1", [], method,
            "not determinable: no 'sets' chase (line stride at C + b) overflowed exactly "
            "one set"))
    return got
