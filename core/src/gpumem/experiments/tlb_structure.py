"""``tlb_structure``: page size and TLB levels from page-strided chases (Mei & Chu sec. 4).

One thread chases two elements per page through the L2-only path (``cg``): the first element
of the page, then the next word of the same sector. Both hit the L2 in the same slice, so
their latencies differ only by what the first pays alone: the TLB miss (the second finds the
translation the first brought). Every decision uses that pair difference (see
:mod:`gpumem.experiments.chaselog`, paired chases), not raw latencies: on an H200 the L2 hits
themselves spread over 280 (near) to 540 (far) cycles, and a median of one access per page
moved with the near/far mix of the lines chosen by more than a TLB miss costs. Successive
pages are shifted by one cache line, so they do not all fall into one L2 set.

1. ``l1``: at a large stride (32 MB) the footprint grows until the median latency rises: the
   first L1-TLB overflow gives its entries E1 (a fully associative LRU TLB with E1 + 1 pages
   misses on every access) and its miss penalty;
2. ``page``: E1 + 1 accesses at halving strides keep missing while each access is on its own
   page; the smallest such stride is the page size;
3. ``l2``: with one access per page the footprint grows until (nearly) every access also
   misses the L2 TLB (its penalty); bisection finds the first page count with repeated
   L2-TLB misses (E2 = entries); adding pages one by one then overflows the sets one by one,
   and the pages that start missing together are one set: their count minus one is its
   ways, unequal sets included (Mei & Chu's 17 + 6 x 8).

Findings: ``tlb.page``, ``tlb_l1.entries``, ``.ways``, ``.sets``, ``.reach``,
``.miss_penalty``; the same for ``tlb_l2`` (``.ways`` a list when sets are unequal).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr

from gpumem.analysis.structure import miss_counts
from gpumem.device import Device
from gpumem.experiment import Experiment, Plan, RunContext
from gpumem.experiments.chaselog import Chase, ChaseLog, chases_from_dataset
from gpumem.findings import Finding

MAX_STRIDE = 32 << 20
MIN_PAGE = 64 << 10
SHIFT = 128          # bytes added per page so that the accesses spread over L2 sets
PASSES = 8
MIN_PAIRS = 2 * PASSES   # pairs in the smallest chase a median is taken of (2 pages)
RISE_SHARE = 0.8         # share of a paired chase's pairs that must pay a new level's cost
MAX_PAGES = 4096
DELTA = 2.5          # cycles: a median this much above the level below is a new level (at
                     # least; more where the hit latency itself spreads, see rise_threshold)


def _stride(page: int) -> int:
    return page + SHIFT


class TlbStructure(Experiment):
    name = "tlb_structure"
    summary = "page size, TLB levels: entries, sets (unequal too), ways, miss penalties"
    probes = ("pointer_chase",)
    version = "2"
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 4 (TLB)")

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[], variables=[],
                    attrs={"max_stride": MAX_STRIDE, "shift": SHIFT, "passes": PASSES})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        log = ChaseLog(device, seed=ctx.seed, progress=progress)
        path = "cg" if "cg" in device.info.load_paths else "ca"
        _TlbSearch(log, path, device.info.memory_bytes).run()
        return log.dataset()


    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        return _analyse(chases_from_dataset(raw))


def paired_pattern(pages: int, stride: int) -> tuple[int, ...]:
    """Byte offsets: for each page, its first element and the word after it."""
    return tuple(o for i in range(pages) for o in (i * stride, i * stride + 4))


def max_stride(memory: int) -> int:
    """Largest power of two <= 32 MB that lets 128 pages fit in the device's memory."""
    limit = min(MAX_STRIDE, max(memory // 128, MIN_PAGE))
    return 1 << (limit.bit_length() - 1)


class _TlbSearch:
    def __init__(self, log: ChaseLog, path: str, memory: int) -> None:
        self.log, self.path, self.memory = log, path, memory
        self.threshold = -np.inf
        self.top = max_stride(memory)

    def chase(self, stage: str, pages: int, page: int, passes: int = PASSES,
              threshold: float | None = None) -> Chase | None:
        stride = _stride(page)
        if pages * stride > self.memory // 2:
            return None
        return self.log.run(path=self.path, stage=stage, footprint=pages * stride,
                            stride=stride, passes=passes, order="pattern",
                            pattern=paired_pattern(pages, stride), paired=True,
                            threshold=self.threshold if threshold is None else threshold)

    def run(self) -> None:
        base = self.chase("base", 4, 64 << 10, passes=64, threshold=-np.inf)
        if base is None:
            return
        t0 = base.median
        self.delta = rise_threshold(base)
        self.base = base
        self.threshold = t0 + self.delta
        # 1. L1 TLB at a stride above any page size
        n1 = self._first_rise("l1", self.top, 2, t0)
        if n1 is None:
            return
        # 2. page size: the smallest stride at which n1 accesses still all miss
        page = self.top
        while page // 2 >= MIN_PAGE:
            c = self.chase("page", n1, page // 2)
            if c is None or not rose(c, t0, self.delta, self.base):
                break
            page //= 2
        # 3. L2 TLB at the page stride
        t1_chase = self.chase("l2", n1 + 1, page)
        if t1_chase is None:
            return
        t1 = t1_chase.median
        n2 = self._first_rise("l2", page, n1 + 2, t1)
        if n2 is None:
            return
        top = max((c for c in self.log.chases if c.stage == "l2"), key=_pages)
        thr2 = (t1 + top.median) / 2
        lo, hi = n1 + 1, n2
        while hi - lo > 1:  # first page count with a repeated L2-TLB miss
            mid = (lo + hi) // 2
            c = self.chase("l2", mid, page)
            if c is None:
                return
            if any(n >= 2 for n in _misses(c, thr2).values()):
                hi = mid
            else:
                lo = mid
        # sets: add pages one at a time until every page misses
        k = hi
        while k <= min(MAX_PAGES, 4 * hi):
            c = self.chase("sets", k, page)
            if c is None or len(_misses(c, thr2)) >= k:
                break
            k += 1

    def _first_rise(self, stage: str, page: int, start: int, below: float) -> int | None:
        """Smallest page count whose median rises ``delta`` above ``below`` (doubling, then
        bisecting)."""
        n, prev = start, start - 1
        while n <= MAX_PAGES:
            c = self.chase(stage, n, page)
            if c is None:
                return None
            if rose(c, below, self.delta, self.base):
                break
            prev, n = n, n * 2
        else:
            return None
        lo, hi = prev, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            c = self.chase(stage, mid, page)
            if c is None:
                return None
            if rose(c, below, self.delta, self.base):
                hi = mid
            else:
                lo = mid
        return hi


def rise_threshold(base: Chase) -> float:
    """Cycles a median must rise to mark a new TLB level.

    Paired chases (version 2): three standard errors of the difference of two medians of
    pair differences, each over at least MIN_PAIRS pairs whose spread is the base chase's
    (an H200's clock64 reads spread a TLB-hit pair difference over +-10 cycles, while the
    medians of 16 pairs move by about 2), and at least DELTA. Raw latencies (version 1 runs):
    three median absolute deviations plus 1 % of the median, since there the medians moved
    with the lines' L2 placement, not by chance."""
    lat = base.ev_latency
    if lat.size < 8:
        return DELTA
    mad = float(np.median(np.abs(lat - np.median(lat))))
    if base.paired:
        sigma = 1.4826 * mad                     # normal-consistent spread of one pair
        se_median = 1.2533 * sigma / np.sqrt(MIN_PAIRS)
        return max(DELTA, 3.0 * np.sqrt(2.0) * se_median)
    return max(DELTA, 3.0 * mad + 0.01 * abs(float(np.median(lat))))


def rose(c: Chase, below: float, delta: float, base: Chase | None = None) -> bool:
    """Has ``c`` risen a level above ``below``? Its median is ``delta`` higher and, for paired
    chases, nearly every pair pays the new cost: an LRU TLB one page past its capacity
    misses on every access, while a chase at exactly the capacity can see a few misses (on
    the H200 a quarter to half of the pairs at 16 pages, with medians 1-2 cycles up) where
    something else holds an entry now and then.

    "Nearly every pair" is RISE_SHARE of the share that would clear ``below + delta`` if
    every pair paid: the base chase's pair differences shifted up to ``c``'s median. The
    pairs' own spread decides that share (one H200 of four spread them over +-5 cycles with
    a 9-cycle miss: 70 % of pairs cleared the bar at every footprint past the capacity).
    Without ``base``, the share is taken against all pairs."""
    if c.median < below + delta:
        return False
    if not c.paired:
        return True
    pairs = max(1, c.record // 2)
    full = 1.0
    if base is not None and base.paired and base.ev_latency.size >= base.record // 2:
        shifted = base.ev_latency - base.median + c.median
        full = float(np.mean(shifted >= below + delta))
    return int((c.ev_latency >= below + delta).sum()) >= RISE_SHARE * full * pairs


def _misses(c: Chase, thr: float) -> dict[int, int]:
    """Element -> number of accesses at or above ``thr`` (repeated = a real miss)."""
    return {e: n for e, n in miss_counts(c, thr, np.inf).items() if n >= 2}


def _pages(c: Chase) -> int:
    return c.footprint // c.stride


def _analyse(chases: list[Chase]) -> list[Finding]:
    base = [c for c in chases if c.stage == "base"]
    if not base:
        return []
    t0 = base[0].median
    delta = rise_threshold(base[0])
    out: list[Finding] = []
    l1 = sorted((c for c in chases if c.stage == "l1"), key=_pages)
    risen = [c for c in l1 if rose(c, t0, delta, base[0])]
    if not risen:
        if l1:
            top = max(l1, key=lambda c: c.footprint)
            out.append(Finding(
                "tlb.no_level_below", int(top.footprint), "byte", 0.8,
                f"no median rose {delta:.1f} cycles above the TLB-hit value ({t0:.0f}) up "
                f"to {_pages(top)} pages at a {top.stride >> 20} MB stride: any TLB level "
                f"reaches further, or costs less than the hit latencies spread"))
        return out
    n1 = _pages(risen[0])
    e1 = n1 - 1
    page_chases = sorted((c for c in chases if c.stage == "page"), key=lambda c: -c.stride)
    page = risen[0].stride - SHIFT
    for c in page_chases:
        if not rose(c, t0, delta, base[0]):
            break
        page = c.stride - SHIFT
    out.append(Finding("tlb.page", int(page), "byte", 0.9,
                       f"smallest stride at which {n1} accesses each miss the L1 TLB: the "
                       f"span one entry maps (the MMU page, or more where entries cover "
                       f"several pages)"))
    l2 = sorted((c for c in chases if c.stage == "l2"), key=_pages)
    if not l2:
        return out
    t1 = l2[0].median
    e1_miss = [e for e in _misses(risen[0], t0 + delta)]
    out += [Finding("tlb_l1.entries", int(e1), "1", 1.0,
                    f"{n1} pages at a {(risen[0].stride - SHIFT) >> 20} MB stride miss, {e1} "
                    f"do not"),
            Finding("tlb_l1.miss_penalty", round(t1 - t0, 2), "cycle", 0.9,
                    "median with one page past the L1 TLB minus the TLB-hit median "
                    "(pair differences: first access of a page minus the next word)")]
    if len(e1_miss) >= n1 - 1:  # every page misses: one LRU set holds them all
        out += [Finding("tlb_l1.ways", int(e1), "1", 0.8, "all pages miss at one overflow"),
                Finding("tlb_l1.sets", 1, "1", 0.8, "fully associative")]
    out.append(Finding("tlb_l1.reach", int(e1 * page), "byte", 0.9, "entries x page"))
    risen2 = [c for c in l2 if rose(c, t1, delta, base[0])]
    if not risen2:
        top = max(l2, key=lambda c: c.footprint)
        out.append(Finding(
            "tlb_l2.no_level_below", int(top.footprint), "byte", 0.8,
            f"no median rose {delta:.1f} cycles above the L1-TLB-miss value ({t1:.0f}) up to "
            f"{_pages(top)} pages of {int(page) >> 20} MB: a second TLB level, if any, "
            f"reaches further (the chase's 4-byte elements cap footprints at 16 GiB)"))
        return out
    t2 = max(l2, key=_pages).median  # the longest chase: (nearly) every access misses
    thr2 = (t1 + t2) / 2
    repeated = [c for c in l2 + [c for c in chases if c.stage == "sets"] if _misses(c, thr2)]
    if not repeated:
        return out
    first = min(_pages(c) for c in repeated)
    e2 = first - 1
    out.append(Finding("tlb_l2.miss_penalty", round(t2 - t1, 2), "cycle", 0.9,
                       "median once most pages miss the L2 TLB minus the L1-miss median"))
    steps = sorted((c for c in chases if c.stage == "sets"), key=_pages)
    groups: list[int] = []
    seen: set[int] = set()
    for c in steps:
        now = set(_misses(c, thr2))
        new = now - seen
        if len(new) >= 2:
            groups.append(len(new) - 1)
        seen |= now
    if groups:
        ways = sorted(groups, reverse=True)
        total = sum(ways)
        complete = total == e2
        out += [Finding("tlb_l2.entries", int(e2), "1", 1.0 if complete else 0.6,
                        f"first page count with repeated L2-TLB misses is {first}"),
                Finding("tlb_l2.sets", len(ways), "1", 0.9 if complete else 0.4,
                        "groups of pages that start missing together, one page added at a time",
                        note="" if complete else f"ways add up to {total}, not {e2}"),
                Finding("tlb_l2.ways", ways if len(set(ways)) > 1 else int(ways[0]), "1",
                        0.9 if complete else 0.4, "pages per group minus one")]
    else:
        out.append(Finding("tlb_l2.entries", int(e2), "1", 0.8,
                           f"first page count with repeated L2-TLB misses is {first}"))
    out.append(Finding("tlb_l2.reach", int(e2 * page), "byte", 0.9, "entries x page"))
    return out
