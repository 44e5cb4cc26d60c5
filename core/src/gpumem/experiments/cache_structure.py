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

Findings per level (``l1d``, ``tex_l1``, ``ro``, ``l2``): ``.size``, ``.line``, ``.sector``,
``.ways``, ``.sets``, ``.index_bits``, ``.policy``, ``.way_weights``, ``.hit_latency``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import xarray as xr

from gpumem.analysis.structure import (
    LEVEL_OF_PATH,
    band,
    constant_bits,
    format_bits,
    miss_counts,
    missing_elements,
    overflows,
    replay_evictions,
    uniform_enough,
    way_weights,
)
from gpumem.device import Device
from gpumem.experiment import Experiment, Plan, RunContext
from gpumem.experiments.chaselog import Chase, ChaseLog, chases_from_dataset
from gpumem.findings import Finding

MAX_CAPACITY = 4 << 20     # largest first-level cache searched for
SIZE_PASSES = 8            # passes recorded per overflow test (pigeonhole: see analysis)
LINE_PASSES = 16
SETS_PASSES = 32
MAX_LINE = 1024
EXTRA_SETS = 8             # sets overflowed one by one for the index bits
POLICY_MISSES = 5000       # misses replayed to estimate per-way eviction weights


class CacheStructure(Experiment):
    name = "cache_structure"
    summary = "fine-grained P-chase: size, line, sector, sets, ways, index bits, policy"
    probes = ("pointer_chase",)
    version = "1"
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 4")

    def plan(self, ctx: RunContext) -> Plan:
        paths = [p for p in LEVEL_OF_PATH if p in ctx.device.load_paths]
        return Plan(axes=[], variables=[],
                    attrs={"paths": ",".join(paths), "max_capacity": MAX_CAPACITY,
                           "size_passes": SIZE_PASSES, "line_passes": LINE_PASSES,
                           "sets_passes": SETS_PASSES})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        log = ChaseLog(device, seed=ctx.seed, progress=progress)
        limit = min(MAX_CAPACITY, max(device.info.memory_bytes // 8, 1 << 20))
        for path in LEVEL_OF_PATH:
            if path in device.info.load_paths:
                _Dissection(log, path, limit).run()
        return log.dataset()

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        chases = chases_from_dataset(raw)
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        out: list[Finding] = []
        for path in LEVEL_OF_PATH:
            mine = [c for c in chases if c.path == path]
            if mine:
                out += _analyse_path(path, mine, l2)
        return out


# ---------------------------------------------------------------------------------------------
# The search (runs chases; decisions use the same helpers as the analysis)
# ---------------------------------------------------------------------------------------------


class _Dissection:
    def __init__(self, log: ChaseLog, path: str, limit: int) -> None:
        self.log, self.path, self.limit = log, path, limit

    def chase(self, stage: str, footprint: int, stride: int, passes: float, **kw: Any
              ) -> Chase | None:
        return self.log.run(path=self.path, stage=stage, footprint=footprint, stride=stride,
                            passes=passes, threshold=self.threshold, **kw)

    def run(self) -> None:
        self.threshold = -np.inf
        first = self.log.run(path=self.path, stage="size", footprint=1024, stride=32,
                             passes=SIZE_PASSES)
        if first is None:
            return
        hit = first.median
        self.threshold = hit * 1.25
        # 1. size: double until a tenth of the accesses miss, then bisect
        n, miss = 2048, None
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
        lo_b, hi_b = band(miss)
        sizes = {ch.footprint: overflows(ch, lo_b, hi_b)
                 for ch in self.log.chases if ch.path == self.path and ch.stage == "size"}
        lo = max(f for f, o in sizes.items() if not o)
        hi = min(f for f, o in sizes.items() if o and f > lo)
        while hi - lo > 32:
            mid = (lo + hi) // 2 // 32 * 32
            c = self.chase("size", mid, 32, SIZE_PASSES)
            if c is None:
                return
            if overflows(c, lo_b, hi_b):
                hi = mid
            else:
                lo = mid
        cap = lo
        # 2. line: where the count of missing elements jumps
        base = self.chase("line", cap + 4, 4, LINE_PASSES)
        if base is None:
            return
        n1 = len(missing_elements(base, lo_b, hi_b))
        sector = _sector(base, lo_b, hi_b)
        lo_k, hi_k = 1, MAX_LINE // 4 + 1
        c = self.chase("line", cap + 4 * hi_k, 4, LINE_PASSES)
        if c is None or not _second_set(c, hi_k, n1, sector, lo_b, hi_b):
            return
        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            c = self.chase("line", cap + 4 * mid, 4, LINE_PASSES)
            if c is None:
                return
            if _second_set(c, mid, n1, sector, lo_b, hi_b):
                hi_k = mid
            else:
                lo_k = mid
        jump = 4 * (hi_k - 1)
        # 3. sets: one set overflowed at line stride. The jump is the line - unless the
        #    sets are interleaved in chunks of several lines (Fermi's texture L1: 128-byte
        #    chunks of 32-byte lines), in which case the chunk's lines look like sectors and
        #    a chunk-stride chase overflows nothing: then the line is the smaller spacing.
        for line in [jump] + ([sector] if sector and sector < jump else []):
            if line <= 0 or cap % line:
                continue
            sets_chase = self.chase("sets", cap + line, line, SETS_PASSES)
            if sets_chase is None:
                return
            overflowing = {e * 4 // line for e in missing_elements(sets_chase, lo_b, hi_b)}
            ways = len(overflowing) - 1
            if ways >= 1 and cap % (ways * line) == 0:
                break
        else:
            return
        n_sets = cap // (ways * line)
        for j in range(2, min(EXTRA_SETS, n_sets) + 1):
            self.chase("sets", cap + j * line, line, SETS_PASSES)
        # 4. policy: cycle through just that set's W + 1 lines, long; LRU-like (every access
        #    misses) -> tell LRU from FIFO; otherwise replay which slot each miss evicted
        pattern = tuple(x * line for x in sorted(overflowing))
        pol = self.chase("policy", cap + line, 4, 0, order="pattern", pattern=pattern,
                         record=max(POLICY_MISSES * 2, 200 * len(pattern)))
        if pol is not None and _pattern_miss_fraction(pol, lo_b, hi_b) >= 0.97 and line >= 12:
            self.chase("fifo", cap + line, 4, 16, order="pattern",
                       pattern=_fifo_pattern(sorted(overflowing), line))


def _miss_latency(c: Chase) -> float | None:
    """The next level's latency, once at least a tenth of the accesses miss (with a 32-byte
    stride over 128-byte lines only a quarter can: the median would never move)."""
    if c.ev_latency.size >= 0.1 * c.record:
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


def _sector(c: Chase, lo: float, hi: float) -> int | None:
    """Fill granularity: the smallest gap between missing addresses, when it is below
    MAX_LINE (sectors of one line); ``None`` when each missing line shows one miss."""
    addrs = np.sort(np.fromiter(missing_elements(c, lo, hi), dtype=np.int64)) * 4
    gaps = np.diff(addrs)
    gaps = gaps[(gaps > 0) & (gaps < MAX_LINE)]
    return int(gaps.min()) if gaps.size else None


def _second_set(c: Chase, k: int, n1: int, sector: int | None, lo: float, hi: float) -> bool:
    """At footprint C + 4k: did a second set start overflowing? Within the first new line
    the count of missing elements only grows by one per new sector of that line."""
    own = -(-4 * k // sector) - 1 if sector else 0
    return len(missing_elements(c, lo, hi)) > n1 + own


def _pattern_miss_fraction(c: Chase, lo: float, hi: float) -> float:
    return float(c.in_band(lo, hi).sum() / c.record) if c.record else 0.0


# ---------------------------------------------------------------------------------------------
# Analysis (pure: from the logged chases of one path)
# ---------------------------------------------------------------------------------------------


def _analyse_path(path: str, chases: list[Chase], l2_bytes: float) -> list[Finding]:
    size = sorted((c for c in chases if c.stage == "size"), key=lambda c: c.footprint)
    if not size:
        return []
    hit = size[0].median
    jumped = [m for m in (_miss_latency(c) for c in size[1:]) if m is not None]
    if not jumped:
        return []
    lo_b, hi_b = band(jumped[0])
    ok = [c.footprint for c in size if not overflows(c, lo_b, hi_b)]
    if not ok:
        return []
    cap = max(ok)
    if not all(overflows(c, lo_b, hi_b) for c in size if c.footprint > cap):
        cap_note = "some footprints above the capacity did not overflow"
    else:
        cap_note = ""
    level = "l2" if l2_bytes and cap >= l2_bytes / 2 else LEVEL_OF_PATH[path]
    method = f"fine-grained P-chase on path '{path}'"
    out = [Finding(f"{level}.hit_latency", round(hit, 2), "cycle", 1.0,
                   method + ", 1 KB footprint (timer overhead removed)"),
           Finding(f"{level}.size", int(cap), "byte", 0.7 if cap_note else 1.0,
                   method + ": largest footprint with no repeated miss (32-B stride)",
                   note=cap_note)]
    lines = sorted((c for c in chases if c.stage == "line"), key=lambda c: c.footprint)
    if not lines or lines[0].footprint != cap + 4:
        return out
    n1 = len(missing_elements(lines[0], lo_b, hi_b))
    sector_gap = _sector(lines[0], lo_b, hi_b)
    jumps = [c.footprint for c in lines
             if _second_set(c, (c.footprint - cap) // 4, n1, sector_gap, lo_b, hi_b)]
    if not jumps:
        return out
    jump = min(jumps) - cap - 4
    first: set[int] = set()
    line, ways, sets = 0, 0, []
    for c in sorted((c for c in chases if c.stage == "sets"), key=lambda c: c.footprint):
        if c.footprint == cap + c.stride and not first:
            cand = {e * 4 // c.stride for e in missing_elements(c, lo_b, hi_b)}
            if len(cand) >= 2 and cap % ((len(cand) - 1) * c.stride) == 0:
                first, line, ways = cand, c.stride, len(cand) - 1
        if line and c.stride == line:
            sets.append(c)
    if not line:
        return out
    exact = (line & (line - 1)) == 0
    how = ("jump of the missing-element count at C + b + 4" if line == jump else
           f"sets interleave in {jump}-B chunks; a set overflows at a {line}-B stride")
    out.append(Finding(f"{level}.line", int(line), "byte", 1.0 if exact else 0.5,
                       f"{method}: {how}"))
    sector = min(sector_gap, line) if sector_gap else line
    out.append(Finding(f"{level}.sector", int(sector), "byte", 0.9 if sector_gap else 0.7,
                       method + ": spacing of missing elements within a missing line"))
    n_sets = cap // (ways * line)
    out.append(Finding(f"{level}.ways", int(ways), "1", 1.0,
                       method + ": lines missing with one set overflowed, minus one"))
    out.append(Finding(f"{level}.sets", int(n_sets), "1", 1.0, "size / (ways x line)"))
    groups, seen = [sorted(first)], set(first)
    for c in sets[1:]:
        now = {e * 4 // line for e in missing_elements(c, lo_b, hi_b)}
        new = sorted(now - seen)
        if len(new) >= 2:
            groups.append(new)
        seen |= now
    lo_bit = int(math.log2(line))
    hi_bit = int(max(c.footprint for c in sets) - 1).bit_length()
    plain, pairs = constant_bits([[x * line for x in g] for g in groups], lo_bit, hi_bit)
    need = int(round(math.log2(n_sets))) if n_sets > 0 else 0
    consistent = len(plain) + len(pairs) == need
    out.append(Finding(f"{level}.index_bits", format_bits(plain, pairs), "", 
                       0.9 if consistent else 0.4,
                       f"address bits constant within each of {len(groups)} overflowing sets",
                       note="" if consistent else f"{len(plain) + len(pairs)} bits found, "
                       f"{need} expected from {n_sets} sets"))
    policy = [c for c in chases if c.stage == "policy"]
    if not policy:
        return out
    pol = policy[0]
    frac = _pattern_miss_fraction(pol, lo_b, hi_b)
    fifo = [c for c in chases if c.stage == "fifo"]
    if frac >= 0.97:
        if fifo:
            c = fifo[0]
            probe = c.pattern[-1] // 4
            at = np.nonzero(c.elements() == probe)[0]
            missed = set(c.ev_access[c.in_band(lo_b, hi_b)].tolist())
            miss_rate = float(np.mean([a in missed for a in at])) if at.size else 0.5
            name = "fifo" if miss_rate > 0.5 else "lru"
            out.append(Finding(f"{level}.policy", name, "", 0.95,
                               f"every access to an overflowing set misses; a line touched "
                               f"again before the overflow "
                               f"{'misses' if name == 'fifo' else 'hits'} ({miss_rate:.0%})"))
        else:
            out.append(Finding(f"{level}.policy", "lru", "", 0.6,
                               "every access to an overflowing set misses (LRU or FIFO)"))
        return out
    # misses for the replay: in the band, or so slow that they are misses plus a mis-timing
    # (a hit plus a mis-timing rarely gets that far); a dropped or invented miss would
    # derail the slot bookkeeping from there on
    miss_lat = math.sqrt(lo_b * hi_b)
    m = pol.in_band(lo_b, hi_b) | (pol.ev_latency >= 2 * miss_lat)
    order = np.argsort(pol.ev_access[m])
    miss_lines = (pol.ev_index[m][order] * 4 // line).tolist()
    counts = replay_evictions(miss_lines, first)
    if uniform_enough(counts):
        out.append(Finding(f"{level}.policy", "random", "", 0.8,
                           f"{frac:.0%} of accesses to an overflowing set miss; evictions "
                           f"spread evenly over the ways {counts}"))
    else:
        out.append(Finding(f"{level}.policy", "non-lru", "", 0.9,
                           f"{frac:.0%} of accesses to an overflowing set miss; replayed "
                           f"evictions per way {counts}"))
        out.append(Finding(f"{level}.way_weights", way_weights(counts), "1", 0.8,
                           f"evictions per way ({sum(counts)} replayed) relative to the least "
                           f"evicted, largest first"))
    return out
