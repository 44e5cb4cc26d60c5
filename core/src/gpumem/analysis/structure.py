"""Cache and TLB structure from fine-grained chases (pure functions over logged chases).

The rules, after Mei & Chu (TPDS 2017, sec. 4), for an LRU-like cache of C bytes, b-byte
lines, S sets of W ways, chased with a cyclic chain:

* no access misses while N <= C (after one warm-up pass);
* with a 4-byte stride, one element past C overflows one set: its W + 1 lines each miss
  once per pass; the count of missing elements stays put until N = C + b + 4, where a
  second line (and set) starts: the jump gives b;
* with a b-byte stride and N = C + b, exactly one set's W + 1 lines miss: W; and S = C/(W b);
* the addresses of the lines that share a set show which address bits select it (bits
  constant within a set), including XOR-folded pairs (a_i ^ a_j constant);
* under LRU (and FIFO) every access to the overflowing set misses; fewer misses mean another
  policy, and replaying which line misses next tells which slot each miss evicted
  (per-slot weights: Fermi's favoured way);
* LRU and FIFO agree on cyclic chains; a pattern that re-touches one line before the set
  overflows tells them apart (LRU keeps it, FIFO evicts it).

Robustness: a miss must sit in the latency band of the next level, and a "real" overflow
needs one element to miss in at least two of eight passes (any policy guarantees that by
pigeonhole once a set overflows), so mis-timed accesses neither fake nor hide a miss.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from gpumem.analysis.chases import Chase

LEVEL_OF_PATH = {"ca": "l1d", "tex": "tex_l1", "nc": "ro"}
BAND = 1.35  # a miss lies within this factor of the next level's latency


def band(miss_latency: float) -> tuple[float, float]:
    return miss_latency / BAND, miss_latency * BAND


def miss_counts(chase: Chase, lo: float, hi: float) -> Counter:
    """Element index -> number of in-band events (misses) in the recorded passes."""
    m = chase.in_band(lo, hi)
    return Counter(chase.ev_index[m].tolist())


@dataclass(frozen=True)
class MissRule:
    """What counts as a miss: latency in [lo, hi), repeated at one element more often than
    mis-timed accesses (at ``noise``, the in-band rate of a chase that cannot miss) would
    repeat by chance anywhere in the chase (probability below ``alpha``)."""

    lo: float
    hi: float
    noise: float = 0.0
    alpha: float = 1e-3

    def min_repeats(self, chase: Chase, alpha: float | None = None) -> int:
        passes = max(1, chase.observed // max(1, chase.per_pass))
        r = min(max(self.noise, 1e-6), 0.2)
        elements = max(1, chase.per_pass)
        a = self.alpha if alpha is None else alpha
        pmf = (1 - r) ** passes          # P(count = 0), then the binomial recurrence
        cdf = pmf
        for k in range(1, passes + 1):  # smallest k with elements * P(count >= k) < alpha
            if elements * max(0.0, 1.0 - cdf) < a:
                return max(2, k)
            pmf *= (passes - k + 1) / k * r / (1 - r)
            cdf += pmf
        return passes + 1


#: A set overflow is *clear* when the most-missing element's count would arise from
#: mis-timings anywhere in the chase with probability below STRONG, and clearly absent when
#: even WEAK is not reached; in between, the search chases again and pools the evidence.
STRONG, WEAK = 1e-5, 0.05


def overflows(chase: Chase, rule: MissRule) -> bool:
    """True when some element misses more often than mis-timings can explain: a set
    overflows (its lines miss pass after pass, under any replacement policy)."""
    need = rule.min_repeats(chase)
    return any(n >= need for n in miss_counts(chase, rule.lo, rule.hi).values())


def overflow_decision(chases: Sequence[Chase], rule: MissRule) -> bool | None:
    """Does a set overflow, from one or more chases of one configuration (pooled)? ``None``
    when the evidence is neither clear nor clearly absent (see STRONG, WEAK)."""
    c = pooled(chases)
    top = max(miss_counts(c, rule.lo, rule.hi).values(), default=0)
    if top >= rule.min_repeats(c, STRONG):
        return True
    if top < rule.min_repeats(c, WEAK):
        return False
    return None


def passes_of(chase: Chase) -> int:
    """Whole passes over the footprint the chase recorded (after its warm-up)."""
    return chase.observed // max(1, chase.per_pass)


def undecidable(chases: Sequence[Chase], rule: MissRule) -> str | None:
    """Why chases of one configuration (pooled) cannot tell whether a set overflows, or
    ``None`` where they can: ``"passes"`` when they pass the footprint fewer than twice (a
    miss counts only when it repeats at one element, so one pass never shows an overflow,
    and its silence is no evidence), ``"accesses"`` when even an element missing in every
    pass would not reach the clear bound (too few passes for the mis-timing rate)."""
    c = pooled(chases)
    passes = passes_of(c)
    if passes < 2:
        return "passes"
    if passes < rule.min_repeats(c, STRONG):
        return "accesses"
    return None


def pooled(chases: Sequence[Chase]) -> Chase:
    """Repeated chases of one configuration as one longer chase: records add up and events
    follow one another (positions offset), so per-element counts and per-pass rates pool.
    Every chase must cover its whole record (events not cut) for the pool to be exact."""
    if len(chases) == 1:
        return chases[0]
    first = chases[0]
    offsets = np.cumsum([0] + [c.record for c in chases[:-1]])
    return replace(
        first, record=int(sum(c.record for c in chases)),
        ev_access=np.concatenate([c.ev_access[:np.searchsorted(c.ev_access, c.observed)] + o
                                  for c, o in zip(chases, offsets, strict=True)]),
        ev_index=np.concatenate([c.ev_index[:np.searchsorted(c.ev_access, c.observed)]
                                 for c in chases]),
        ev_latency=np.concatenate([c.ev_latency[:np.searchsorted(c.ev_access, c.observed)]
                                   for c in chases]),
        median=float(np.median([c.median for c in chases])))


def missing_elements(chase: Chase, rule: MissRule) -> set[int]:
    """Elements that really miss (see :func:`overflows`)."""
    need = rule.min_repeats(chase)
    return {e for e, n in miss_counts(chase, rule.lo, rule.hi).items() if n >= need}


def constant_bits(groups: Sequence[Sequence[int]], lo_bit: int, hi_bit: int
                  ) -> tuple[list[int], list[tuple[int, int]]]:
    """Address bits (and XOR-folded bit pairs) that select a set.

    ``groups``: byte addresses of lines known to share a set, one list per set. A bit in
    ``[lo_bit, hi_bit)`` is an index bit when it is constant within every group; a pair
    (i, j) of the other bits is an XOR-folded index bit when ``a_i ^ a_j`` is. More groups
    (sets) make a constant-by-chance bit less likely.
    """
    arrays = [np.asarray(g, dtype=np.int64) for g in groups if len(g) >= 2]
    if not arrays:
        return [], []

    def const_in_all(f) -> bool:
        return all(np.unique(f(g)).size == 1 for g in arrays)

    bits = range(lo_bit, hi_bit)
    plain = [b for b in bits if const_in_all(lambda g, b=b: (g >> b) & 1)]
    pairs = [(i, j) for i, j in combinations([b for b in bits if b not in plain], 2)
             if const_in_all(lambda g, i=i, j=j: ((g >> i) ^ (g >> j)) & 1)]
    return plain, _independent(pairs)


def _independent(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keep XOR pairs that use each bit once (a ^ b and b ^ c imply a ^ c: drop the third)."""
    used: set[int] = set()
    out = []
    for i, j in sorted(pairs, key=lambda p: (p[1] - p[0], p)):
        if i in used or j in used:
            continue
        used.update((i, j))
        out.append((i, j))
    return sorted(out)


def format_bits(plain: Iterable[int], pairs: Iterable[tuple[int, ...]] = ()) -> str:
    """``[7, 8]`` -> ``"7-8"``; ``[9, 10, 11], [(7, 13)]`` -> ``"9-11, 7^13"``."""
    plain = sorted(plain)
    runs: list[str] = []
    i = 0
    while i < len(plain):
        j = i
        while j + 1 < len(plain) and plain[j + 1] == plain[j] + 1:
            j += 1
        runs.append(f"{plain[i]}-{plain[j]}" if j > i else f"{plain[i]}")
        i = j + 1
    runs += ["^".join(str(b) for b in p) for p in sorted(pairs)]
    return ", ".join(runs)


def replay_evictions(miss_lines: Sequence[int], set_lines: Iterable[int],
                     sure: Sequence[bool] | None = None,
                     positions: Sequence[int] | None = None, beam: int = 32) -> list[int]:
    """Evictions per slot, replaying the misses of one overflowing set (W + 1 lines cycling
    through W ways; ``set_lines`` are those W + 1 lines).

    Exactly one line is absent at any time, and the next miss is the first access to it: so
    the line evicted by miss i is the line of miss i + 1, and the line filled by miss i takes
    that line's slot. At the first miss the W other lines are resident; slots are labelled in
    their order.

    One wrong event (a mis-timed hit taken for a miss, a mis-timed miss dropped) swaps two
    lines' labels for the rest of the replay, smearing the counts. So events that are not
    ``sure`` are decided by a beam search: each is tried as a miss and as a hit. A hypothesis
    scores the Dirichlet-multinomial likelihood of its eviction counts (which favours the
    labelling that stays consistent with a fixed per-way choice), and, given the access
    ``positions``, is all but ruled out when two of its misses lie more than W accesses
    apart (the evicted line is always among the next W accesses). ``sure`` defaults to all.
    """
    seq = list(miss_lines)
    flags = [True] * len(seq) if sure is None else list(sure)
    pos = list(range(len(seq))) if positions is None else [int(x) for x in positions]
    lines = sorted(set(set_lines))
    ways = len(lines) - 1
    if ways < 1:
        return [0] * max(ways, 0)
    start = next((i for i, (x, ok) in enumerate(zip(seq, flags, strict=True))
                  if ok and x in lines), None)
    if start is None:
        return [0] * ways
    slot0 = {line: i for i, line in enumerate(x for x in lines if x != seq[start])}
    skip = math.log(ways)  # a hit skips one eviction factor, worth 1/W on average
    # hypothesis: (score, absent line, slot map, counts, total, position of its last miss)
    hyps = [(0.0, seq[start], slot0, [0] * ways, 0, pos[start])]
    for nxt, ok, at in zip(seq[start + 1:], flags[start + 1:], pos[start + 1:], strict=True):
        grown = []
        for score, cur, slot, counts, total, last in hyps:
            late = 20.0 if at - last > ways else 0.0  # a miss between went unseen
            if nxt != cur and nxt in slot:
                s = slot[nxt]
                new_slot = dict(slot)
                del new_slot[nxt]
                new_slot[cur] = s
                new_counts = list(counts)
                new_counts[s] += 1
                gain = math.log((counts[s] + 1) / (total + ways))
                grown.append((score + gain - late, nxt, new_slot, new_counts, total + 1, at))
                if not ok:
                    grown.append((score - skip, cur, slot, counts, total, last))
            else:  # a repeated or out-of-set record: nothing to learn from it
                grown.append((score, cur, slot, counts, total, last))
        grown.sort(key=lambda h: h[0], reverse=True)
        seen: set = set()
        hyps = []
        for h in grown:
            key = (h[1], h[5], tuple(sorted(h[2].items())))
            if key not in seen:
                seen.add(key)
                hyps.append(h)
                if len(hyps) == beam:
                    break
    return hyps[0][3]


def way_weights(counts: Sequence[int]) -> list[float]:
    """Eviction counts as weights, largest first, in half units of a plain way's count.

    A plain way's count is the median of the lower half: the least count alone is a low order
    statistic, which with 16 ways sits some 10 % under the typical way and makes every other
    way look favoured."""
    c = np.sort(np.asarray(counts, dtype=float))[::-1]
    if c.size == 0:
        return []
    base = float(np.median(c[c.size // 2:]))
    if base <= 0:
        return [float(x) for x in c]
    return [round(float(x) * 2) / 2 for x in c / base]


def uniform_enough(counts: Sequence[int]) -> bool:
    """Chi-square test at about 1 % that eviction counts are uniform over the slots."""
    c = np.asarray(counts, dtype=float)
    n = c.sum()
    if n < 5 * c.size:
        return True
    exp = n / c.size
    chi2 = float(((c - exp) ** 2 / exp).sum())
    dof = c.size - 1
    return chi2 < dof + 3.0 * np.sqrt(2.0 * dof)  # about the 99th percentile for dof >= 3
