"""``tlb_structure``: page size and TLB levels from paired page-strided chases (Mei & Chu sec. 4).

One thread chases two elements per page through the L2-only path (``cg``): the first element
of the page, then the next word of the same sector. Both hit the L2 in the same slice, so
their latencies differ only by what the first pays alone: the TLB miss (the second finds the
translation the first brought). Every decision uses that pair difference (see
:mod:`gpumem.experiments.chaselog`, paired chases), not raw latencies: on an H200 the L2 hits
themselves spread over 280 (near) to 540 (far) cycles, more than a TLB miss costs. Successive
pages are shifted by one cache line, so they do not all fall into one L2 set.

1. ``base``: four pages at the large stride of step 2 (four translations: every TLB holds
   them), chased three times or more: the TLB-hit level of a pair difference, the spread of
   one pair, and how far a chase's median moves from one chase (one allocation) to the next
   on its own. (Four pages 64 KB apart sat 4 cycles above the large-stride hits in one H200
   run of five: the hit level is measured where it is used);
2. ``l1``: at a large stride (32 MB) the page count doubles, then is bisected, until the
   median rises: the first L1-TLB overflow gives its entries E1 (a fully associative LRU TLB
   with E1 + 1 pages misses on every access) and its miss penalty; the edge (E1 and E1 + 1
   pages) is chased again, fresh, and must reproduce;
3. ``page``: E1 + 1 pages at halving strides keep missing while each lies in its own
   translation; the smallest such stride S is what one entry maps (the page, or more where
   an entry covers several);
4. ``span``: a second probe of S at a quarter of it: 4 (E1 + 1) pages then share E1 + 1
   translations, and exactly the first page of each S-aligned span must miss (one in four).
   A different count or spacing of the missing pages makes ``tlb.page`` unresolved;
5. ``l2``: at stride S the page count doubles until pages also miss the next level (its
   penalty); bisection finds the first page count with repeated misses there (E2 = entries);
   adding pages one by one then overflows the sets one by one, and the pages that start
   missing together are one set: their count minus one is its ways (unequal sets included,
   Mei & Chu's 17 + 6 x 8).

Decisions, not single measurements: each step asks "has the median pair difference risen
past a threshold?" (or, per page, "does this page miss?") and answers only when the answer
clears the threshold by Z standard errors (the pairs' spread over their number, plus the
chase-to-chase movement the base chases showed). Otherwise the same chase is run again,
fresh, and the evidence pooled, up to MAX_CHASES; a question still open then ends the search
and its finding is reported unresolved, with the candidates. The analysis replays the same
algorithm over the stored chases (:class:`_Walk` with a stored source), so it reaches the
search's decisions exactly.

Findings: ``tlb.page``, ``tlb_l1.entries``, ``.ways``, ``.sets``, ``.reach``,
``.miss_penalty``; the same for ``tlb_l2`` (``.ways`` a list when sets are unequal);
``tlb.no_level_below`` / ``tlb_l2.no_level_below`` where no (further) level shows. A miss
penalty is the difference of two levels' grouped medians (:func:`grouped_median`), not of
their plain medians, which move by whole cycles between processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from gpumem.analysis.chases import Chase, chases_from_dataset
from gpumem.contracts.device import Device
from gpumem.contracts.experiment import Experiment, Plan, RunContext
from gpumem.contracts.finding_names import family
from gpumem.contracts.findings import Finding, unresolved
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.chaselog import ChaseLog
from gpumem.experiments.figures import TLB_STRUCTURE

MAX_STRIDE = 32 << 20
MIN_PAGE = 64 << 10
SHIFT = 128          # bytes added per page so that the accesses spread over L2 sets
LINES = 8            # lines per page, visited in turn (page 0..n line 0, page 0..n line 1, ...):
LINE_STEP = 4096 + 128  # a median over 8n lines, not n: with 2 pages one H200 run's pair
                     # medians sat at -5, another's at +1 (the lines' own offsets), while the
                     # TLB sees the same reuse distance (n - 1 other pages between visits)
MAX_RECORD = 4096    # accesses recorded per chase (as many passes as fit): a CUDA chase keeps
                     # them in shared memory, out of the L1 TLB's way
BASE_CHASES = 3      # fresh base chases: how far a median moves from chase to chase
MAX_CHASES = 8       # chases pooled into one decision at most (16 K pairs)
MAX_PAGES = 4096
ELEMENT_SPAN = 4 << 30   # 4-byte chain elements index at most 2^32 of them (16 GiB)
DELTA = 4.0          # cycles: the smallest miss penalty reported as a TLB level
Z = 4.0              # standard errors a chase-level decision must clear
Z_PAGE = 3.0         # ... and a page-level one (many pages: a few unclear ones are tolerated)
DRIFT_FLOOR = 0.5    # cycles: chase-to-chase movement of a median assumed at least
SKIPPED = "skipped"  # the device could not run the chase (footprint too large)


def _stride(page: int) -> int:
    return page + SHIFT


class TlbStructure(Experiment):
    name = "tlb_structure"
    summary = "page size, TLB levels: entries, sets (unequal too), ways, miss penalties"
    probes = ("pointer_chase",)
    version = "3"
    #: ``tlb.analysis``: a file of version 2, whose findings cannot be derived again
    findings = ("tlb.page", "tlb.no_level_below", "tlb.analysis",
                *family(("tlb_l1", "tlb_l2"), ("entries", "ways", "sets", "reach",
                                               "miss_penalty")),
                "tlb_l2.no_level_below")
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 4 (TLB)")

    def presentation(self) -> Presentation:
        return Presentation(TLB_STRUCTURE, (
            ReportFigure("tlb_pairs",
                         "Pair difference of each stored pair for three chases (TLB hits, one page "
                         "past the L1 TLB, the longest L2-TLB chase).",
                         "gpumem.experiments.figures.tlb_structure:tlb_pairs"),
            ReportFigure("tlb_ladder",
                         "Where each level was decided: every question of the search, its pooled "
                         "median pair difference above the level below with the margin it was "
                         "judged by (error bar), against the threshold (dashed); dotted: the "
                         "finding.",
                         "gpumem.experiments.figures.tlb_structure:tlb_ladder"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[], variables=[],
                    attrs={"max_stride": MAX_STRIDE, "shift": SHIFT, "max_record": MAX_RECORD,
                           "max_chases": MAX_CHASES, "delta": DELTA, "z": Z})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        log = ChaseLog(device, seed=ctx.seed, progress=progress)
        path = "cg" if "cg" in device.info.load_paths else "ca"
        _Walk(_LiveSource(log, path, device.info.memory_bytes)).run()
        return log.dataset()

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        chases = chases_from_dataset(raw)
        if chases and any(c.paired and np.isfinite(c.threshold) for c in chases):
            return [Finding(
                "tlb.analysis", "not re-derived", "", 0.0,
                "tlb_structure version 2 kept only the pairs above a threshold",
                note="this file was measured by an earlier gpumem (tlb_structure version "
                     "2); the present analysis needs every pair: its findings are the ones "
                     "stored with it (gpumem show), measure again for the new ones")]
        walk = _Walk(_StoredSource(chases))
        walk.run()
        return walk.findings


def paired_pattern(pages: int, stride: int, lines: int = LINES) -> tuple[int, ...]:
    """Byte offsets: for each of ``lines`` lines in turn, for each page, the line's first
    element and the word after it (the lines LINE_STEP apart, within 64 KB of the page's
    start)."""
    return tuple(o for j in range(lines) for i in range(pages)
                 for o in (i * stride + j * LINE_STEP, i * stride + j * LINE_STEP + 4))


def max_stride(memory: int) -> int:
    """Largest power of two <= 32 MB that lets 128 pages fit in the device's memory."""
    limit = min(MAX_STRIDE, max(memory // 128, MIN_PAGE))
    return 1 << (limit.bit_length() - 1)


def passes_for(pages: int) -> float:
    """Recorded passes of one chase over ``pages`` pages (LINES pairs each): MAX_RECORD
    accesses, or one pass where that is longer."""
    return max(1.0, MAX_RECORD / (2 * LINES * pages))


# ---------------------------------------------------------------------------------------------
# The statistics of pair differences (pure)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Noise:
    """What the base chases say about pair differences at a TLB hit: their ``level``
    (median) and its standard error ``level_se``, the robust ``sigma`` of one pair, and the
    ``drift`` of a chase's median from chase to chase beyond its own sampling error."""

    level: float
    sigma: float
    drift: float
    level_se: float = 0.0

    def se(self, pairs: int, chases: int) -> float:
        """Standard error of a median of ``pairs`` pairs pooled from ``chases`` chases."""
        return float(np.hypot(1.2533 * self.sigma / np.sqrt(max(1, pairs)),
                              self.drift / np.sqrt(max(1, chases))))

    def margin(self, pairs: int, chases: int, z: float = Z) -> float:
        return z * self.se(pairs, chases)


def base_noise(base: list[Chase]) -> Noise:
    diffs = np.concatenate([c.ev_latency for c in base])
    level = float(np.median(diffs))
    sigma = max(0.5, 1.4826 * float(np.median(np.abs(diffs - level))))
    meds = np.array([c.median for c in base])
    own = 1.2533 * sigma / np.sqrt(max(1, min(c.record // 2 for c in base)))
    spread = float(np.std(meds, ddof=1)) if meds.size >= 2 else 0.0
    drift = max(DRIFT_FLOOR, float(np.sqrt(max(0.0, spread ** 2 - own ** 2))))
    noise = Noise(level, sigma, drift)
    return Noise(level, sigma, drift, noise.se(diffs.size, len(base)))


def pooled_median(group: list[Chase]) -> float:
    return float(np.median(np.concatenate([c.ev_latency for c in group])))


def grouped_median(group: list[Chase]) -> float:
    """The pooled pair differences' median read as a continuous quantity: the lower edge of
    the one-cycle class holding the median plus the share of that class the median reaches
    (the grouped-data median; equal to the plain median for a distribution symmetric about
    it). Pair differences are whole cycles spread over some 15 values, so their plain median
    jumps a cycle when the spread shifts a little: on two H200s the L1-TLB miss penalty's
    plain median was 8, 9, 10 or 11 in eleven processes, and two of its intervals held
    neither the runs' mean nor each other; the grouped one was 8.8-10.5, and every interval
    held the mean (``tests/test_tlb_penalty.py``)."""
    x = np.concatenate([c.ev_latency for c in group]).astype(np.float64)
    m = float(np.median(x))
    below = int(np.count_nonzero(x < m - 0.5))
    within = int(np.count_nonzero(np.abs(x - m) <= 0.5))
    if not within:  # no pair within half a cycle of the median (mis-timed, spread values)
        return m
    return m - 0.5 + (x.size / 2 - below) / within


def rise(group: list[Chase], below: float, threshold: float, noise: Noise,
         below_se: float | None = None) -> bool | None:
    """Has the pooled median pair difference of ``group`` risen ``threshold`` above
    ``below`` (a level known to ``below_se``; default: the base level's)? ``None`` while
    the margin of error (Z standard errors of the difference) straddles the threshold."""
    d = pooled_median(group) - below
    se = noise.se(sum(c.record // 2 for c in group), len(group))
    m = Z * float(np.hypot(se, noise.level_se if below_se is None else below_se))
    if d - m >= threshold:
        return True
    if d + m < threshold:
        return False
    return None


def page_medians(group: list[Chase]) -> dict[int, tuple[float, int]]:
    """Page (its offset's page number at the chase's stride) -> (median pair difference,
    pairs), pooled over the group."""
    stride = group[0].stride
    pages = np.concatenate([c.ev_index * 4 // stride for c in group])
    diffs = np.concatenate([c.ev_latency for c in group])
    out = {}
    for p in np.unique(pages):
        d = diffs[pages == p]
        out[int(p)] = (float(np.median(d)), int(d.size))
    return out


def classify_pages(group: list[Chase], cut: float, noise: Noise
                   ) -> tuple[list[int], list[int], list[int]]:
    """(missing, hitting, unclear) pages: a page's median pair difference above ``cut`` by
    Z_PAGE of its standard errors, below it, or neither."""
    miss: list[int] = []
    hit: list[int] = []
    unclear: list[int] = []
    for p, (m, n) in sorted(page_medians(group).items()):
        e = noise.margin(n, len(group), Z_PAGE)
        (miss if m - e > cut else hit if m + e < cut else unclear).append(p)
    return miss, hit, unclear


# ---------------------------------------------------------------------------------------------
# Where chases come from: the device (search) or the stored file (analysis)
# ---------------------------------------------------------------------------------------------


class _StoredSource:
    """The chases of a stored run, by (stage, pages, stride), handed out in the order the
    search ran them: a question sees the chases the search had when it asked, and
    ``more()`` gives the next stored one (the search's repeat) or ``None``."""

    def __init__(self, chases: list[Chase]) -> None:
        self.by_key: dict[tuple[str, int, int], list[Chase]] = {}
        for c in sorted(chases, key=lambda c: c.number):
            self.by_key.setdefault((c.stage, c.footprint // c.stride, c.stride), []).append(c)
        self.issued: dict[tuple[str, int, int], int] = {}
        self.limit = max((c.footprint for c in chases), default=0)
        self.top = max((c.stride - SHIFT for c in chases if c.stage in ("base", "l1")),
                       default=MAX_STRIDE)

    def chases(self, stage: str, pages: int, stride: int) -> list[Chase]:
        key = (stage, pages, stride)
        return self.by_key.get(key, [])[:self.issued.get(key, 0)]

    def more(self, stage: str, pages: int, stride: int) -> Chase | None:
        key = (stage, pages, stride)
        stored = self.by_key.get(key, [])
        n = self.issued.get(key, 0)
        if n >= len(stored):
            return None
        self.issued[key] = n + 1
        return stored[n]

    def fits(self, pages: int, stride: int) -> bool:
        return True  # what was skipped is absent: more() says so


class _LiveSource(_StoredSource):
    """Chases run on the device as the walk asks for them (and kept in ``log``)."""

    def __init__(self, log: ChaseLog, path: str, memory: int) -> None:
        super().__init__([])
        self.log, self.path = log, path
        self.limit = min(memory // 2, ELEMENT_SPAN * 4)
        self.top = max_stride(memory)

    def chases(self, stage: str, pages: int, stride: int) -> list[Chase]:
        return self.by_key.get((stage, pages, stride), [])

    def more(self, stage: str, pages: int, stride: int) -> Chase | None:
        if not self.fits(pages, stride):
            return None
        passes = passes_for(pages)
        c = self.log.run(path=self.path, stage=stage, footprint=pages * stride, stride=stride,
                         passes=passes, order="pattern", pattern=paired_pattern(pages, stride),
                         paired=True, threshold=-np.inf)
        if c is not None:
            self.by_key.setdefault((stage, pages, stride), []).append(c)
        return c

    def fits(self, pages: int, stride: int) -> bool:
        return pages * stride <= self.limit


# ---------------------------------------------------------------------------------------------
# The algorithm: one walk for the search and the analysis
# ---------------------------------------------------------------------------------------------


def _mb(n: int) -> str:
    return f"{n / (1 << 20):g} MB"


@dataclass(frozen=True)
class Decision:
    """One question the walk answered (or left open), for the report's figure."""

    stage: str
    pages: int
    stride: int
    chases: int
    median: float     # pooled median pair difference
    margin: float     # Z standard errors of the difference it was judged by
    below: float      # the level it was compared with
    threshold: float  # cycles above ``below`` that count as a rise
    verdict: Any      # True (rose), False, None (open) or SKIPPED


def decisions(raw: xr.Dataset) -> list[Decision]:
    """The decisions of a stored search, replayed from its chases in the order taken."""
    chases = chases_from_dataset(raw)
    if not chases or any(c.paired and np.isfinite(c.threshold) for c in chases):
        return []
    walk = _Walk(_StoredSource(chases))
    walk.run()
    return walk.trace


class _Walk:
    def __init__(self, src: Any) -> None:
        self.src = src
        self.findings: list[Finding] = []
        self.trace: list[Decision] = []

    def decide(self, stage: str, pages: int, page: int, judge: Callable[[list[Chase]], Any],
               at_least: int = 1) -> Any:
        """``judge`` of the chases of (stage, pages, stride), chasing again (pooled) while it
        answers ``None``, up to MAX_CHASES; SKIPPED if the device cannot run the chase."""
        stride = _stride(page)
        while True:
            group = self.src.chases(stage, pages, stride)
            if len(group) >= at_least:
                v = judge(group)
                if v is not None or len(group) >= MAX_CHASES:
                    return v
            if self.src.more(stage, pages, stride) is None:
                return judge(group) if len(group) >= at_least else (
                    SKIPPED if not group else None)

    def rose(self, stage: str, pages: int, page: int, below: float, threshold: float,
             at_least: int = 1, below_se: float | None = None) -> bool | None | str:
        r = self.decide(stage, pages, page,
                        lambda g: rise(g, below, threshold, self.noise, below_se), at_least)
        g = self.src.chases(stage, pages, _stride(page))
        se = self.noise.se(sum(c.record // 2 for c in g), len(g)) if g else 0.0
        self.trace.append(Decision(
            stage, pages, _stride(page), len(g), pooled_median(g) if g else float("nan"),
            Z * float(np.hypot(se, self.noise.level_se if below_se is None else below_se)),
            below, threshold, r))
        return r

    def add(self, f: Finding) -> None:
        self.findings.append(f)

    def missing(self, group: list[Chase], cut: float) -> set[int] | None:
        """The pages of ``group`` that miss (above ``cut``), or ``None`` while any page is
        unclear."""
        miss, _hit, unclear = classify_pages(group, cut, self.noise)
        return None if unclear else set(miss)

    # ---- the steps -----------------------------------------------------------------------
    def run(self) -> None:
        # the TLB-hit level: BASE_CHASES chases, more (up to MAX_CHASES) while its standard
        # error is above a tenth of DELTA's Z margin
        self.top = self.src.top
        base_stride = _stride(self.top)
        while True:
            base = self.src.chases("base", 4, base_stride)
            if len(base) >= BASE_CHASES and (base_noise(base).level_se <= DELTA / (2 * Z)
                                             or len(base) >= MAX_CHASES):
                break
            if self.src.more("base", 4, base_stride) is None:
                break
        if len(base) < 2:
            return
        self.base = base
        self.noise = base_noise(base)
        n1 = self.l1()
        if n1 is None:
            return
        page = self.page(n1)
        if page is None:
            return
        self.l2(n1, page)

    def l1(self) -> int | None:
        """E1 + 1: the first page count at the top stride whose pairs all pay a miss."""
        t0, top = self.noise.level, self.top
        method = f"paired chases at a {_mb(top)} stride, page counts doubled then bisected"
        n, prev = 2, 1
        while True:
            r = self.rose("l1", n, top, t0, DELTA)
            if r is True:
                break
            if r is None:
                self.add(self._open("tlb_l1.entries", [prev, n - 1], method, n, top, t0, DELTA))
                return None
            if r == SKIPPED or 2 * n > MAX_PAGES:
                pages = prev if r == SKIPPED else n
                self.add(Finding(
                    "tlb.no_level_below", int(pages * _stride(top)), "byte", 0.9,
                    f"{method}: no median rose {DELTA:g} cycles above the TLB-hit level "
                    f"({t0:.1f}) up to {pages} pages",
                    note=f"any TLB level reaches further, or costs less than "
                         f"{DELTA + self.noise.margin(1 << 14, MAX_CHASES):.1f} cycles"))
                return None
            prev, n = n, 2 * n
        # (a miss at the top stride may cost more than the L1 TLB's penalty: the pages can
        # share a set of a next level too; the threshold stays DELTA)
        lo, hi = prev, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            r = self.rose("l1", mid, top, t0, DELTA)
            if r is None or r == SKIPPED:
                self.add(self._open("tlb_l1.entries", [lo, hi - 1], method, mid, top, t0,
                                    DELTA))
                return None
            lo, hi = (lo, mid) if r else (mid, hi)
        # the edge again, from fresh chases: both sides must reproduce
        edge_lo = self.rose("l1", lo, top, t0, DELTA, at_least=2)
        edge_hi = self.rose("l1", hi, top, t0, DELTA, at_least=2)
        if edge_lo is not False or edge_hi is not True:
            self.add(unresolved(
                "tlb_l1.entries", "1", [lo - 1, lo], method,
                f"the edge did not reproduce: {lo} pages {_word(edge_lo)}, {hi} pages "
                f"{_word(edge_hi)} on a second chase"))
            return None
        group = self.src.chases("l1", hi, _stride(top))
        miss, _hit, _unclear = classify_pages(group, t0 + DELTA, self.noise)
        e1 = hi - 1
        self.add(Finding("tlb_l1.entries", int(e1), "1", 0.95,
                         f"{method}: {hi} pages miss, {e1} do not (each side chased twice)"))
        if len(miss) >= 0.8 * hi:  # (nearly) every page misses at one overflow: one LRU set
            self.add(Finding("tlb_l1.ways", int(e1), "1", 0.8, "all pages miss at one overflow"))
            self.add(Finding("tlb_l1.sets", 1, "1", 0.8, "fully associative"))
        return hi

    def page(self, n1: int) -> int | None:
        """S: the smallest stride at which n1 pages keep missing; cross-checked at S/4."""
        t0, cut = self.noise.level, DELTA
        page = self.top
        while page // 2 >= MIN_PAGE:
            r = self.rose("page", n1, page // 2, t0, cut)
            if r is None:
                self.add(unresolved(
                    "tlb.page", "byte", [page // 2, page],
                    f"{n1} paired pages at halving strides",
                    f"at a {_mb(page // 2)} stride the pairs' median neither rose clearly "
                    f"past {cut:.1f} cycles nor stayed clearly below after {MAX_CHASES} "
                    f"chases"))
                return None
            if r is not True:
                break
            page //= 2
        method = (f"smallest stride at which {n1} pages each miss the L1 TLB: the span one "
                  f"entry maps (the MMU page, or more where entries cover several pages)")
        if not self.l1_miss_level(n1, page):
            return None
        check = self.span_check(n1, page)
        if check is None:
            self.add(Finding("tlb.page", int(page), "byte", 0.6, method,
                             note="not cross-checked (a quarter of it is below "
                                  f"{_mb(MIN_PAGE)} or could not be chased)"))
        elif check == page:
            self.add(Finding("tlb.page", int(page), "byte", 0.95,
                             method + f"; cross-checked at {_mb(page // 4)}: the first page "
                             f"of each {_mb(page)} span misses, the other three hit"))
        else:
            self.add(unresolved(
                "tlb.page", "byte", sorted({int(page), int(check)}), method,
                f"two probes disagree: {n1} pages stop missing below {_mb(page)}, but at "
                f"{_mb(page // 4)} the missing pages say {_mb(check) if check else 'none'}"))
            return None
        self.add(Finding("tlb_l1.reach", int((n1 - 1) * page), "byte", 0.9, "entries x page"))
        return page

    def span_check(self, n1: int, page: int) -> int | None:
        """At stride S/4, 4 n1 + 4 pages span n1 + 1 or more translations of S: exactly the
        first page of each must miss. Returns S when they do, the span the missing pages
        suggest otherwise (0: none missed), ``None`` when the probe cannot run or decide."""
        quarter = page // 4
        if quarter < MIN_PAGE:
            return None
        pages = 4 * n1 + 4
        cut = (self.noise.level + self.t1) / 2
        got = self.decide("span", pages, quarter, lambda g: self.missing(g, cut))
        if got is None or got == SKIPPED:
            return None
        miss = sorted(got)
        if len(miss) < 2:  # (nearly) nothing missed: fewer translations than entries
            return 2 * page
        gaps = np.diff(miss)
        if len(miss) >= n1 and float(np.median(gaps)) == 4 and gaps.max() <= 5:
            return page  # (the first gap may be short: the buffer need not start a span)
        return 1 << int(round(np.log2(float(np.median(gaps)) * quarter)))

    def l1_miss_level(self, n1: int, page: int) -> bool:
        """t1, the pair difference of an L1-TLB miss alone: 1.5 (E1 + 1) pages at stride S
        (every page misses the L1 TLB, no next level overflows yet: it holds more than twice
        the L1's entries wherever one was seen), chased until its standard error is a tenth
        of DELTA's margin (or MAX_CHASES). At E1 + 1 pages exactly, a few hits can remain (an
        H200 gave 7 cycles there once, 9-10 at 26 to 1023 pages)."""
        n1 = -(-3 * n1 // 2)

        def precise(g: list[Chase]) -> list[Chase] | None:
            se = self.noise.se(sum(c.record // 2 for c in g), len(g))
            return g if se <= DELTA / (2 * Z) else None

        if self.decide("l2", n1, page, precise) == SKIPPED:
            return False
        group = self.src.chases("l2", n1, _stride(page))
        self.t1 = pooled_median(group)
        self.t1_se = self.noise.se(sum(c.record // 2 for c in group), len(group))
        self.t1_group = group
        err = float(np.hypot(self.t1_se, self.noise.level_se))
        penalty = grouped_median(group) - grouped_median(self.base)
        self.add(Finding("tlb_l1.miss_penalty", round(penalty, 2), "cycle", 0.9,
                         f"grouped median pair difference with {n1} pages {_mb(page)} apart "
                         f"minus the TLB-hit level's (first access of a page minus the next "
                         f"word)",
                         interval=(round(penalty - 2 * err, 2), round(penalty + 2 * err, 2))))
        return True

    def l2(self, n1: int, page: int) -> None:
        """The next level at stride S: doubling, bisection (E2), sets one page at a time."""
        stride = _stride(page)
        t1 = self.t1
        method = f"paired chases at the {_mb(page)} page stride, past the L1 TLB"
        n, prev = 2 * n1, n1
        r: bool | str | None = None
        while True:
            if not self.src.fits(n, stride):
                r = SKIPPED
            else:
                r = self.rose("l2", n, page, t1, DELTA, below_se=self.t1_se)
            if r is True:
                break
            if r is None:
                self.add(self._open("tlb_l2.entries", [prev, n - 1], method, n, page, t1, DELTA))
                return
            if r == SKIPPED:
                fit = int(self.src.limit // stride)
                if prev < fit < n and self.src.fits(fit, stride):
                    r = self.rose("l2", fit, page, t1, DELTA, below_se=self.t1_se)
                    if r is True:
                        n = fit
                        break
                    if r is False:
                        prev = fit
                self.add(Finding(
                    "tlb_l2.no_level_below", int(prev * stride), "byte", 0.9,
                    f"{method}: no median rose {DELTA:g} cycles above the L1-TLB-miss level "
                    f"({t1:.1f}) up to {prev} pages of {_mb(page)}",
                    note=f"a second TLB level, if any, reaches further (the chase's 4-byte "
                         f"elements cap footprints at 16 GiB), or costs less than "
                         f"{DELTA + self.noise.margin(1 << 14, MAX_CHASES):.1f} cycles"))
                return
            if 2 * n > MAX_PAGES:
                self.add(Finding("tlb_l2.no_level_below", int(n * stride), "byte", 0.9,
                                 f"{method}: no median rose up to {n} pages"))
                return
            prev, n = n, 2 * n
        t2_group = self.src.chases("l2", n, stride)
        t2 = pooled_median(t2_group)
        mid2 = (t1 + t2) / 2

        def repeated(g: list[Chase]) -> bool | None:
            miss, _hit, unclear = classify_pages(g, mid2, self.noise)
            if len(miss) >= 2:
                return True
            return None if unclear else False

        lo, hi = n1, n
        while hi - lo > 1:  # first page count with a repeated L2-TLB miss
            mid = (lo + hi) // 2
            r = self.decide("l2", mid, page, repeated)
            if r is None or r == SKIPPED:
                self.add(self._open("tlb_l2.entries", [lo, hi - 1], method, mid, page, t1,
                                    mid2 - t1))
                return
            lo, hi = (lo, mid) if r else (mid, hi)
        e2 = hi - 1
        self.add(Finding("tlb_l2.miss_penalty",
                         round(grouped_median(t2_group) - grouped_median(self.t1_group), 2),
                         "cycle", 0.9, f"grouped median pair difference with {n} pages minus "
                                       f"the L1-miss level's"))
        # sets: add pages one at a time until every page misses
        groups: list[int] = []
        seen: set[int] = set()
        k, complete = hi, True
        while k <= min(MAX_PAGES, 4 * hi):
            got = self.decide("sets", k, page, lambda g: self.missing(g, mid2))
            if got is None or got == SKIPPED:
                complete = False
                break
            new = got - seen
            if len(new) >= 2:
                groups.append(len(new) - 1)
            seen |= got
            if len(got) >= k:
                break
            k += 1
        ways = sorted(groups, reverse=True)
        total = sum(ways)
        if groups and complete and total == e2:
            self.add(Finding("tlb_l2.entries", int(e2), "1", 0.95,
                             f"first page count with repeated L2-TLB misses is {hi}; its sets "
                             f"add up to it"))
            self.add(Finding("tlb_l2.sets", len(ways), "1", 0.9,
                             "groups of pages that start missing together, one page added "
                             "at a time"))
            self.add(Finding("tlb_l2.ways", ways if len(set(ways)) > 1 else int(ways[0]), "1",
                             0.9, "pages per group minus one"))
        else:
            self.add(Finding("tlb_l2.entries", int(e2), "1", 0.6,
                             f"first page count with repeated L2-TLB misses is {hi}",
                             note=f"the sets found ({ways}) do not add up to it" if groups
                             else "the sets could not be told apart"))
        self.add(Finding("tlb_l2.reach", int(e2 * page), "byte", 0.9, "entries x page"))

    def _open(self, name: str, between: list[int], method: str, pages: int, page: int,
              below: float, threshold: float) -> Finding:
        lo, hi = between
        return unresolved(
            name, "1", list(range(lo, hi + 1)) if hi - lo < 8 else [lo, hi], method,
            f"at {pages} pages of {_mb(page)} the pairs' median ({self._median(pages, page)}"
            f") neither rose clearly {threshold:.1f} cycles above {below:.1f} nor stayed "
            f"clearly below after {MAX_CHASES} chases (one pair spreads +-"
            f"{self.noise.sigma:.1f} cycles, a chase's median moves +-{self.noise.drift:.1f})")

    def _median(self, pages: int, page: int) -> str:
        stride = _stride(page)
        for stage in ("l1", "l2", "page"):
            g = self.src.chases(stage, pages, stride)
            if g:
                return f"{pooled_median(g):.1f} cycles"
        return "not measured"


def _word(r: Any) -> str:
    return {True: "rose", False: "did not rise", None: "was unclear"}.get(r, "was skipped")
