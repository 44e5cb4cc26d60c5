"""The L2's ways where its set index is hashed: a minimal eviction set (issue 44, item 5).

Lines one L2 capacity apart fall in one set only under an index modulo the sets
(:func:`.l2._l2_ways_chases`); a hashed index (an H200's L2, its slices homed by an XOR
hash) spreads them and the misses ramp, so that search reports no ways. This stage finds
lines that share a set without knowing the hash:

1. **Candidates.** Scattered chases (one random line of every ``EVICT_BLOCK_LINES``) over
   more and more lines, until some lines miss in both recorded passes: under a hash, random
   lines overflow a few sets long before the capacity, and the lines of an overflowing set
   miss pass after pass (LRU, FIFO; a random policy some of the time).
2. **Reduction.** The repeatedly missing lines, chased alone as a pattern, overflow the same
   sets; they are cut down by delta debugging (Zeller's ddmin, complements only): drop a
   chunk while what is left still overflows, refine the chunks when none can go. What
   remains is 1-minimal: it overflows and no line can be dropped. For a set-associative
   cache that is the W + 1 lines of one set, so W ways, whatever the hash, in slices or not
   (a set lives in one slice: these are the ways *per slice*).
3. **Confirmation.** The minimal set and each of it minus one line chased again, fresh.

The analysis (:func:`evict_ways`) reads only the logged pattern chases: the smallest pattern
that overflows while every one-line-smaller pattern of it was chased and did not.

**Two hit levels.** An L2 of two partitions (an H100's, an H200's) serves an SM's lines from
its near partition and keeps there a copy of what it reads from the far one: a line reaches
DRAM only once both levels have let it go, and the lines that overflow a far set are served
again from their near copies. A search for DRAM misses then finds lines that missed only
beside the others (an H200: 2 of 122,880; the simulated one: 18 of 254,872, none alone).
Where the L2's hits fall in two clusters with an empty gap between (an H200 at 3/4 of its
L2: under 320 cycles, then from 420; the simulated H200: 283, then 453-531;
:func:`near_threshold`), the search looks for lines that miss the *near* level instead (a
far hit is its miss), stage names ending ``_near``; the DRAM search runs only where that one
finds no set. The near level's sets are the L2's slices as an SM reaches them: the ways
found are the L2's ways per slice.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import MissRule, missing_elements
from gpumem.contracts.findings import Finding, unresolved
from gpumem.experiments.cache_structure.confidence import CLEAR, QUALIFIED
from gpumem.experiments.cache_structure.rules import CHAIN_SPAN, joins
from gpumem.experiments.chaselog import ChaseLog

EVICT_START = 8            # the first candidate chase: one line in this many of the L2's
EVICT_GROW = math.sqrt(2)  # lines chased grow by this factor until some miss repeatedly
EVICT_BLOCK_LINES = 4      # a candidate chase takes one random line of every 4
EVICT_MOST = 512           # most candidate lines reduced (more: fewer lines chased, bisected)
EVICT_PASSES = 3           # passes recorded per reduction test
EVICT_TESTS = 1200         # most reduction tests (a search that needs more reports nothing)
GROW, TEST, CONFIRM = "l2evict_grow", "l2evict", "l2evict_confirm"
#: The stage names' suffix of the search against the near level of a two-level L2.
NEAR = "_near"
#: Two hit clusters: each holds at least this share of the hits, and the empty gap between
#: them is at least NEAR_GAP of the lower cluster's top (an H200: 100 cycles over 320).
NEAR_SHARE, NEAR_GAP = 0.1, 0.15


def near_threshold(hits: Sequence[float], miss_at: float) -> float | None:
    """The cycles that split near-level hits from far-level ones among an L2's hits (the
    latencies of a chase of lines all in the L2, those under ``miss_at``): the middle of the
    widest empty gap with at least NEAR_SHARE of the hits on each side, if it is at least
    NEAR_GAP of the value below it; else ``None`` (one hit level)."""
    x = sorted(float(v) for v in hits if v < miss_at)
    n = len(x)
    if n < 20:
        return None
    lo_i, hi_i = math.ceil(NEAR_SHARE * n), math.floor((1 - NEAR_SHARE) * n)
    best, at = 0.0, None
    for i in range(max(1, lo_i), min(n, hi_i + 1)):
        gap = x[i] - x[i - 1]
        if gap > best:
            best, at = gap, i
    if at is None or best < NEAR_GAP * x[at - 1]:
        return None
    return 0.5 * (x[at - 1] + x[at])


def _rule(miss_at: float) -> MissRule:
    return MissRule(miss_at, math.inf)


def evict_chases(log: ChaseLog, l2_bytes: int, memory: int, line: int,
                 miss_at: float, suffix: str = "") -> None:
    """The live stage: candidates, reduction, confirmation (see the module's doc), a miss
    being an access over ``miss_at`` cycles (``suffix`` on the stages' names: :data:`NEAR`
    for the near level's search). Stops quietly where the device skips a footprint, no
    candidate overflows or the tests run out; the analysis then finds no minimal set."""
    if l2_bytes <= 0 or line <= 0:
        return
    tests = 0
    at = [0]  # the footprint of the candidates' chase: the pattern chases' too

    def misses(pattern: Sequence[int], stage: str = TEST + suffix) -> list[int] | None:
        """The pattern's elements (byte offsets) that missed repeatedly, if it overflows."""
        nonlocal tests
        if tests >= EVICT_TESTS:
            return None
        tests += 1
        c = log.run(path="cg", stage=stage, footprint=at[0], stride=line,
                    order="pattern", pattern=tuple(pattern), passes=EVICT_PASSES,
                    threshold=miss_at)
        if c is None or not joins([c], _rule(miss_at)):
            return None
        return [4 * e for e in missing_elements(c, _rule(miss_at))]

    for at[0], lines in _candidates(log, l2_bytes, memory, line, miss_at, GROW + suffix):
        if tests >= EVICT_TESTS:
            return
        if misses(lines) is not None:
            break
    else:
        return
    least = ddmin(lines, misses)
    if tests >= EVICT_TESTS or len(least) < 2:
        return
    misses(least, CONFIRM + suffix)
    for i in range(len(least)):
        misses(least[:i] + least[i + 1:], CONFIRM + suffix)


def _candidates(log: ChaseLog, l2_bytes: int, memory: int, line: int, miss_at: float,
                stage: str = GROW) -> Iterator[tuple[int, list[int]]]:
    """(footprint, byte offsets of the lines that missed in both passes) of scattered chases
    with such lines, at most EVICT_MOST of them (bisecting the lines chased when a step
    overshoots), growing the lines chased by EVICT_GROW after each: the caller takes the
    next where the last one's lines did not overflow chased alone (a stray miss, or lines
    that missed only beside the others), until the lines chased reach twice the L2's."""
    block = EVICT_BLOCK_LINES * line
    most_blocks = min(memory // 4, CHAIN_SPAN) // block
    rule = _rule(miss_at)

    def chase(blocks: int) -> list[int] | None:
        c = log.run(path="cg", stage=stage, footprint=blocks * block, stride=block,
                    order="scattered", passes=2, threshold=miss_at)
        return None if c is None else sorted(4 * e for e in missing_elements(c, rule))

    lo, n = 0, max(EVICT_BLOCK_LINES, l2_bytes // line // EVICT_START)
    while n <= min(2 * l2_bytes // line, most_blocks):
        got = chase(n)
        if got is None:
            return
        if got:
            best = _fewer(chase, lo, n, got)
            if best is not None:
                yield best[0] * block, best[1]
        lo, n = n, int(n * EVICT_GROW) + 1


def _fewer(chase: Callable[[int], list[int] | None], lo: int, hi: int, got: list[int]
           ) -> tuple[int, list[int]] | None:
    """(blocks, missing lines) with at most EVICT_MOST lines: bisecting the blocks chased
    between ``lo`` (none missed) and ``hi`` (``got`` missed), eight steps at most."""
    for _ in range(8):
        if len(got) <= EVICT_MOST:
            return hi, got
        mid = (lo + hi) // 2
        if mid <= lo:
            return None
        less = chase(mid)
        if less is None:
            return None
        if less:
            hi, got = mid, less
        else:
            lo = mid
    return (hi, got) if len(got) <= EVICT_MOST else None


def ddmin(items: list[int], misses: Callable[[list[int]], list[int] | None]) -> list[int]:
    """A 1-minimal sub-list of ``items`` that still overflows (``items`` must): Zeller's
    delta debugging on complements. ``misses(s)`` chases ``s`` and gives the items that
    missed pass after pass (``None``: ``s`` does not overflow). Chunks of the current list
    are dropped while the rest still overflows, and then only its missing items are kept
    (the whole sets that overflow: under LRU or FIFO every line of an overflowing set
    misses; where fewer did, they are chased once more and kept only if they overflow
    alone); when no chunk can go the chunks are halved, until single items: then no item
    can be dropped."""
    cur, n = list(items), 2
    while len(cur) >= 2:
        size = math.ceil(len(cur) / n)
        chunks = [cur[i:i + size] for i in range(0, len(cur), size)]
        for k in range(len(chunks)):
            rest = [x for j, c in enumerate(chunks) if j != k for x in c]
            missed = misses(rest)
            if missed is None:
                continue
            keep = [x for x in rest if x in set(missed)]
            if 2 <= len(keep) < len(rest) and misses(keep) is not None:
                rest = keep
            cur, n = rest, max(n - 1, 2)
            break
        else:
            if n >= len(cur):
                return cur
            n = min(2 * n, len(cur))
    return cur


def evict_ways(chases: list[Chase], l2_bytes: float, line: Any, suffix: str = ""
               ) -> list[Finding]:
    """``l2.ways`` (and ``l2.sets`` = C / (W b)) from the logged reduction: the smallest
    pattern that overflowed while each of it minus one line was chased and did not. Every
    chase of one pattern is pooled; CLEAR when the confirmation chased them all again.
    ``suffix``: the search's (:data:`NEAR`: against the near level of a two-level L2)."""
    test, confirm = TEST + suffix, CONFIRM + suffix
    mine = [c for c in chases if c.stage in (test, confirm) and c.pattern]
    grow = [c for c in chases if c.stage == GROW + suffix]
    if not isinstance(line, int) or line <= 0 or not (mine or grow):
        return []
    if not mine:
        return [_stopped(grow, [], line, suffix=suffix)]
    by_lines: dict[frozenset[int], list[Chase]] = defaultdict(list)
    for c in mine:
        by_lines[frozenset(o // line for o in c.pattern)].append(c)
    miss_at = max(c.threshold for c in mine)
    verdict = {k: joins(v, _rule(miss_at)) for k, v in by_lines.items()}
    minimal = [k for k, over in verdict.items() if over and len(k) >= 2
               and all(verdict.get(k - {x}) is False for x in k)]
    if not minimal:
        return [_stopped(grow, mine, line, verdict, suffix)]
    least = min(minimal, key=lambda k: (len(k), sorted(k)))
    w = len(least) - 1
    sure = all(any(c.stage == confirm for c in by_lines[k])
               for k in [least, *(least - {x} for x in least)])
    lines = ", ".join(f"0x{x * line:x}" for x in sorted(least))
    miss = (f"miss the near level of the L2 (over {miss_at:.0f} cycles: a far-partition hit "
            f"or DRAM)" if suffix == NEAR else "miss")
    how = (f"a minimal eviction set on path 'cg': {len(grow)} scattered chases of random "
           f"lines until some missed in both passes, those lines cut down by delta debugging "
           f"({sum(c.stage == test for c in mine)} pattern chases) to {w + 1} lines that "
           f"{miss} pass after pass while any {w} of them hit: one set's {w} ways and one "
           f"line more, whatever the hash (a set lives in one slice: the ways per slice)")
    note = f"the set's lines (byte offsets in the chased buffer): {lines}"
    conf = CLEAR if sure else QUALIFIED
    out = [Finding("l2.ways", w, "1", conf, how, note=note)]
    if l2_bytes and l2_bytes % (w * line) == 0:
        out.append(Finding("l2.sets", int(l2_bytes // (w * line)), "1", conf,
                           f"L2 capacity {int(l2_bytes)} B / ({w} ways x {line} B lines), "
                           f"the ways from a minimal eviction set (per slice: divide by the "
                           f"slices, l2_slices)"))
    return out


def _stopped(grow: list[Chase], tests: list[Chase], line: int,
             verdict: dict[frozenset[int], bool] | None = None, suffix: str = "") -> Finding:
    """``l2.ways`` unresolved, saying where the eviction search stopped: no random lines
    missed repeatedly, the lines that did would not overflow chased alone (their misses
    needed the other lines: no set overflowing on its own, or other physical pages under the
    new allocation), or the reduction ended with no set whose every smaller set hits."""
    most = max((c.footprint // max(1, c.stride) for c in grow), default=0)
    method = (f"a minimal eviction set on path 'cg' (scattered chases of random lines, up to "
              f"{most} lines a chase, then pattern chases of the lines that missed"
              + (", a miss being one of the L2's near level" if suffix == NEAR else "") + ")")
    missed = len(missing_elements(grow[-1], _rule(grow[-1].threshold))) if grow else 0
    if not tests and not missed:
        why = (f"{len(grow)} scattered chases, up to {most} random lines: no line missed in "
               f"both passes within the lines the search may chase")
    elif not tests:
        why = (f"{missed} lines missed in both passes of the last scattered chase, but were "
               f"never chased alone (the search was cut short)")
    elif len(tests) == 1 and not any((verdict or {}).values()):
        why = (f"the {len(tests[0].pattern)} lines that missed in both passes of a scattered "
               f"chase of {tests[0].footprint // (EVICT_BLOCK_LINES * line)} lines did not "
               f"miss again chased alone: their misses needed the other lines (no set "
               f"overflowing on its own), or the new allocation got other physical pages")
    else:
        why = (f"{len(tests)} pattern chases found no set of lines that misses while each "
               f"set of one line fewer hits")
    return unresolved("l2.ways", "1", [], method, why)
