"""The simulation engine: caches and TLBs as flat arrays, walked by Numba-compiled loops.

A :class:`SimConfig` compiles into a :class:`Hierarchy` of flat arrays (one record per cache or
TLB level, one per set, one per way) so the per-access loop runs as machine code: a pure-Python
loop would manage about a million accesses per second, this one well over twenty million.

Every random choice (replacement, timer jitter) comes from a SplitMix64 stream seeded from the
config seed, the request seed and the SM, so results never depend on which worker process
simulated them.
"""

from __future__ import annotations

import numpy as np

from gpumem.contracts.chains import permutation_params, scatter_key, splitmix64
from gpumem.sim import specialise
from gpumem.sim.config import (
    MAX_STATE_BYTES,
    CacheLevel,
    SimConfig,
    SimConfigError,
    TlbLevel,
    state_bytes,
)
from gpumem.sim.model import (
    EQ_WAYS,
    HOME_LEN,
    HOME_OFF,
    IDX_KIND,
    IDX_LEN,
    IDX_OFF,
    INDEX_CODES,
    LINE_SHIFT,
    META_COLUMNS,
    MOD_M,
    MOD_S,
    N_SETS,
    NARROW,
    ORDER_CODES,
    PART_LEN,
    PART_OFF,
    PARTS,
    POLICY,
    POLICY_CODES,
    SECTOR_SHIFT,
    SET_BASE,
    SLAT_OFF,
    SLAT_ROWS,
    SLICE_LEN,
    SLICE_N,
    SLICE_OFF,
    SLUT_BITS,
    SMO_LEN,
    SMO_OFF,
    TRANSLATE,
    W_OFF,
    WAY_BASE,
    WIDE,
    sectors,
    tag_mask,
)
from gpumem.sim.primitives import _permute  # noqa: F401 - tests check it against gpumem.contracts.chains

SPECIALISE_MIN = 100_000  # chases at least this long run a kernel specialised to their path


class Hierarchy:
    """Flat arrays describing all levels (caches first, then TLBs) and their state.

    Kept to a few arrays on purpose: the compiled loop unpacks them once, because fetching an
    array out of a tuple inside the loop costs a reference-count update per access.

    The way state is one word per way: ``(tag & mask) << sectors | valid-sector mask``, 0 for
    an invalid way (see :func:`gpumem.sim.model.tag_mask`), each set's ways in replacement
    order for LRU and FIFO (the most recent first: no time stamps) and in place for random
    and weighted. The words are int32 (16 ways in one host cache line: the simulator is
    bound by the host's memory on big caches) while the tags held fit, else int64
    (:func:`simulate_chase` switches, carrying the state over).
    """

    __slots__ = ("meta", "set_ways", "set_off", "idx_param", "weights", "cost", "far_cost",
                 "far_slow", "way", "rng", "clock", "_narrow", "_wide", "span", "_tags", "_n")

    def __init__(self, meta: np.ndarray, set_ways: np.ndarray, set_off: np.ndarray,
                 idx_param: np.ndarray, weights: np.ndarray, cost: np.ndarray,
                 far_cost: np.ndarray, far_slow: np.ndarray, n_words: int, rng: np.ndarray,
                 clock: np.ndarray):
        self.meta = meta              # int64[L, META_COLUMNS]
        self.set_ways = set_ways      # int64[S]  ways of each set
        self.set_off = set_off        # int64[S]  first way word of each set
        self.idx_param = idx_param    # int64[P]  bits, masks, tables; partition masks
        self.weights = weights        # float64[W] per-way eviction weights; SM offsets
        self.cost = cost              # float64[L] hit latency (cache) or miss penalty (TLB)
        self.far_cost = far_cost      # float64[L] hit latency in a far partition
        self.far_slow = far_slow      # float64[L, 2] share of far hits slow, their latency
        self.rng = rng                # uint64[L] replacement random stream per level
        self.clock = clock            # int64[1]  accesses so far
        #: per level: line shift, the divisor of its tags (sets for the modulo index, else
        #: 1) and sector bits, for the tag windows (:func:`_words_for`)
        rows = meta.tolist()
        self._tags = [(r[LINE_SHIFT], r[N_SETS] if r[IDX_KIND] == 0 else 1, sectors(r))
                      for r in rows]
        self._n = n_words
        self._narrow = (_zero_words(n_words, np.int32)
                        if max((t[2] for t in self._tags), default=1) <= MAX_NARROW_SECTORS
                        else None)
        self._wide: np.ndarray | None = None
        self.way = self._narrow if self._narrow is not None else self._wide_words()
        #: the lowest and highest address accessed since the state was cold (None: cold)
        self.span: tuple[int, int] | None = None

    @property
    def wbits(self) -> int:
        """The way words' bits: :data:`gpumem.sim.model.NARROW` or ``WIDE``."""
        return NARROW if self.way.dtype == np.int32 else WIDE

    def _wide_words(self) -> np.ndarray:
        if self._wide is None:
            self._wide = _zero_words(self._n, np.int64)
        return self._wide


#: Levels with more sectors a line than this keep too few tag bits in an int32 word to be
#: worth it: a hierarchy that has one uses int64 words throughout.
MAX_NARROW_SECTORS = 16
WORD_ALIGN = 16  # each level's first way word on a 64-byte boundary (int32 words)


def _log2(x: int) -> int:
    return int(x).bit_length() - 1


def compile_hierarchy(cfg: SimConfig, seed: int) -> tuple[Hierarchy, dict[str, int]]:
    """Flatten ``cfg``'s caches and TLBs; return the arrays and a level-name -> id map.
    A config built in Python without ``validate()`` is still held to the state bound, and
    refused if a level still declares a near copy (``validate()`` splits it in two)."""
    near = next((c.name for c in cfg.caches if c.near_size), None)
    if near is not None:  # its paths name one level where the engine needs two
        raise SimConfigError(f"cache[{near}].near_size: a near copy runs as two levels, "
                             f"which SimConfig.validate() writes: validate the config first")
    need, biggest = state_bytes(cfg)
    if need > MAX_STATE_BYTES:
        raise SimConfigError(f"{biggest}: the caches and TLBs would need {need >> 20} MiB of "
                             f"simulator state, more than the {MAX_STATE_BYTES >> 20} MiB limit")
    levels: list[CacheLevel | TlbLevel] = [*cfg.caches, *cfg.tlbs]
    meta = np.zeros((len(levels), META_COLUMNS), np.int64)
    cost = np.zeros(len(levels), np.float64)
    far_cost = np.zeros(len(levels), np.float64)
    far_slow = np.zeros((len(levels), 2), np.float64)
    set_ways: list[int] = []
    set_off: list[int] = []
    params: list[int] = []
    weights: list[float] = []
    total_ways = 0
    for i, lv in enumerate(levels):
        m = meta[i]
        if isinstance(lv, CacheLevel):
            m[LINE_SHIFT] = _log2(lv.line)
            m[SECTOR_SHIFT] = _log2(lv.sector_size)
            m[TRANSLATE] = 1 if lv.translate else 0
            cost[i] = lv.hit_latency
            far_cost[i] = lv.far_latency or lv.hit_latency
            far_slow[i] = (lv.far_slow_share, lv.far_slow_latency)
            m[PARTS] = lv.partitions
            m[PART_OFF] = len(params)
            m[PART_LEN] = len(lv.home_masks)  # the given masks, else the balanced default
            params.extend(int(x) for x in lv.home_masks)
            m[SMO_OFF] = len(weights)
            m[SMO_LEN] = len(lv.sm_offsets)
            weights.extend(float(x) for x in lv.sm_offsets)
            m[HOME_OFF] = len(params)
            m[HOME_LEN] = len(lv.sm_partition)
            params.extend(int(x) for x in lv.sm_partition)
            m[SLICE_OFF] = len(params)
            m[SLICE_LEN] = len(lv.slice_masks)
            m[SLICE_N] = lv.slices if lv.slices > 1 else 0
            params.extend(int(x) for x in lv.slice_masks)
            if lv.slice_table:  # the table, then the page the hierarchy's buffers start in
                lut = lv.slice_lines()
                m[SLUT_BITS] = lut.size.bit_length() - 1
                params.extend(lut.tolist())
                params.append(cfg.base_address >> lv.slice_page_bits)
                params.append(lv.slice_footprint or -1)
            m[SLAT_OFF] = len(weights)
            m[SLAT_ROWS] = len(lv.slice_latency)
            weights.extend(float(x) for row in lv.slice_latency for x in row)
        else:
            m[LINE_SHIFT] = m[SECTOR_SHIFT] = _log2(lv.page)
            m[PARTS] = 1
            cost[i] = lv.miss_penalty
        ways = lv.way_list
        m[N_SETS] = len(ways)
        m[MOD_M], m[MOD_S] = _divider(len(ways))
        m[EQ_WAYS] = ways[0] if len(set(ways)) == 1 else 0
        total_ways += -total_ways % WORD_ALIGN  # a 16-way set in one host line
        m[WAY_BASE] = total_ways
        m[SET_BASE] = len(set_ways)
        for w in ways:
            set_ways.append(w)
            set_off.append(total_ways)
            total_ways += w
        fn = lv.index.function
        p = (lv.index.hashed_table(len(ways), sum(ways)) if fn == "hashed" else
             lv.index.spread_table(1 << int(m[LINE_SHIFT])).tolist() if fn == "spread" else
             {"modulo": [], "bits": lv.index.bits, "xor": lv.index.masks,
              "table": lv.index.table}[fn])
        m[IDX_KIND] = INDEX_CODES["table" if fn == "hashed" else fn]
        m[IDX_OFF] = len(params)
        m[IDX_LEN] = len(p)
        params.extend(int(x) for x in p)
        m[POLICY] = POLICY_CODES[lv.policy]
        m[W_OFF] = len(weights)
        weights.extend(lv.way_weights or [1.0] * max(ways))
    rng = np.array([stream_seed(seed, 1000 + i) for i in range(len(levels))], dtype=np.uint64)
    h = Hierarchy(
        meta, np.array(set_ways, np.int64), np.array(set_off, np.int64),
        np.array(params or [0], np.int64), np.array(weights, np.float64), cost, far_cost,
        far_slow, total_ways, rng, np.zeros(1, np.int64),
    )
    return h, {lv.name: i for i, lv in enumerate(levels)}


def _divider(d: int) -> tuple[int, int]:
    """Multiplier and shift that divide any 0 <= n < 2**63 by ``d`` exactly:
    ``n // d == mulhi(n, m) >> s`` (Granlund and Montgomery 1994, theorem 4.2, with
    ``m = ceil(2**(63 + l) / d)``, ``l = ceil(log2 d)``). ``m`` is stored as the int64 of the
    same bits; ``d = 1`` gives (0, -1): the kernel does not divide then."""
    if d == 1:
        return 0, -1
    lg = (d - 1).bit_length()
    m = -(-(1 << (63 + lg)) // d)
    assert m < 1 << 64
    return (m - (1 << 64) if m >= 1 << 63 else m), lg - 1


def _zero_words(n: int, dtype) -> np.ndarray:
    """``n`` invalid way words, aligned to the host's 64-byte cache lines."""
    size = np.dtype(dtype).itemsize
    raw = np.zeros(n + 64 // size, dtype)
    return raw[(-raw.ctypes.data % 64) // size:][:n]


def reset(h: Hierarchy) -> None:
    """Invalidate every line and TLB entry (a cold hierarchy, in int32 words if it can).

    Only the sets the chases since the last reset can have filled are cleared where the
    state is big (a short chase on hopper's 2.7 MB would spend as long clearing as chasing):
    a level indexed by block modulo sets was touched only in the sets of the blocks of the
    addresses :attr:`Hierarchy.span` covers, a run of sets (wrapping round); other levels
    are cleared whole."""
    words = h._narrow if h._narrow is not None else h.way
    if h.span is not None:
        if words.nbytes <= SMALL_STATE:
            words.fill(0)
        else:
            for a, b in _dirty_words(h, *h.span):
                words[a:b] = 0
    h.way = words
    h.span = None
    h.clock.fill(0)


SMALL_STATE = 1 << 18  # bytes of way state cleared whole: quicker than working out where


def _dirty_words(h: Hierarchy, lo: int, hi: int) -> list[tuple[int, int]]:
    """Ranges of way words that chases on addresses ``lo ... hi`` can have filled."""
    out = []
    for (shift, _, _), row in zip(h._tags, h.meta.tolist(), strict=True):
        first, sets = row[SET_BASE], row[N_SETS]
        start, end = int(h.set_off[first]), int(h.set_off[first + sets - 1]
                                                 + h.set_ways[first + sets - 1])
        blocks = (hi >> shift) - (lo >> shift) + 1
        if row[IDX_KIND] != 0 or blocks >= sets:
            out.append((start, end))
            continue
        a = (lo >> shift) % sets  # the sets a + 0, 1, ... blocks - 1 (mod sets)
        b = a + blocks
        out.append((int(h.set_off[first + a]), int(h.set_off[first + b]) if b < sets else end))
        if b > sets:
            out.append((start, int(h.set_off[first + b - sets])))
    return out


def _words_for(h: Hierarchy, lo: int, hi: int) -> None:
    """Make ``h.way`` words whose tags tell apart every line of addresses ``lo ... hi`` and
    of those accessed since the state was cold: int32 where they do, else int64 (the state
    carried over). Raises ValueError where not even int64 words would (addresses far apart,
    more than 16 sectors a line: beyond any in-tree config)."""
    if lo < 0 or hi >= 1 << 62:
        raise ValueError(f"addresses {lo:#x} ... {hi:#x}: the engine's addresses lie in "
                         f"0 ... 2**62")
    span = (lo, hi) if h.span is None else (min(lo, h.span[0]), max(hi, h.span[1]))
    if h.way.dtype == np.int32 and not _fits(h, span, NARROW):
        wide = h._wide_words()
        if h.span is None:
            wide.fill(0)
        else:
            _widen(h, wide)
        h.way = wide
    if h.way.dtype == np.int64 and not _fits(h, span, WIDE):
        raise ValueError(f"addresses {span[0]:#x} ... {span[1]:#x} are too far apart for the "
                         f"simulator's tags (since the last reset)")
    h.span = span


def _fits(h: Hierarchy, span: tuple[int, int], wbits: int) -> bool:
    """Do the tags of every address in ``span`` fit ``wbits``-bit way words, in every level
    (a window of at most ``tag_mask + 1`` consecutive tags)?"""
    lo, hi = span
    for (shift, div, _), row in zip(h._tags, h.meta, strict=True):
        if ((hi >> shift) // div) - ((lo >> shift) // div) > tag_mask(row, wbits):
            return False
    return True


def _widen(h: Hierarchy, wide: np.ndarray) -> None:
    """``wide`` = ``h``'s int32 words as int64 words: each truncated tag made whole again from
    the window it lies in (the one :data:`Hierarchy.span` gives), then truncated to the wide
    mask. The same lines, in the same places."""
    narrow, span = h._narrow, h.span
    assert narrow is not None and span is not None  # called on int32 words with a span
    wide.fill(0)
    for (shift, div, sec), row in zip(h._tags, h.meta, strict=True):
        first = int(row[SET_BASE])
        last = first + int(row[N_SETS]) - 1
        a, b = int(h.set_off[first]), int(h.set_off[last] + h.set_ways[last])
        w = narrow[a:b].astype(np.int64)
        tm_n, tm_w = tag_mask(row, NARROW), tag_mask(row, WIDE)
        q_lo = (span[0] >> shift) // div
        q = q_lo + (((w >> sec) - q_lo) & tm_n)
        wide[a:b] = np.where(w != 0, ((q & tm_w) << sec) | (w & ((1 << sec) - 1)), 0)


def stream_seed(*parts: int) -> int:
    """A 64-bit seed mixed from integers (config seed, request seed, SM, level ...)."""
    x = 0x243F6A8885A308D3
    for p in parts:
        x = splitmix64(x ^ (int(p) & ((1 << 64) - 1)))
    return x or 1


def reseed(h: Hierarchy, *parts: int) -> None:
    """Give every level's replacement stream a seed derived from ``parts`` and its level id."""
    for i in range(h.rng.shape[0]):
        h.rng[i] = stream_seed(*parts, 1000 + i)


def simulate_chase(h: Hierarchy, path_ids: np.ndarray, tlb_first: int, tlb_count: int,
                   dram_latency: float, *, base: int, footprint: int, stride: int,
                   page_walk: float = 0.0, sm: int = 0, sm_count: int = 1,
                   element: int, order: str, seed: int, warmup: int, record: int,
                   overhead: float, jitter: float, outlier_rate: float,
                   outlier_cycles: float, noise_seed: int, pattern: tuple[int, ...] = (),
                   scalar: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run one pointer chase on ``h`` (its state carries over: call :func:`reset` for a cold
    start). Returns per recorded access: latency in cycles including the timer overhead, the
    element index read, and the position in the path that served it (``len(path)`` = DRAM).
    ``scalar=True`` looks sets up one way at a time instead of with SIMD compares (a reference
    for tests: the results are the same).

    Long chases (``SPECIALISE_MIN`` accesses or more) on a path that has run enough accesses
    in this process to pay for a compile (or whose kernel is in Numba's disk cache) run a
    kernel generated for the path, about twice as fast and bit-identical to the generic one
    (both come from :mod:`gpumem.sim.model`; :mod:`gpumem.sim.specialise` compiles and runs
    them).
    """
    if warmup + record > 0:
        lo, hi = (min(pattern), max(pattern)) if order == "pattern" else (0, footprint - 1)
        _words_for(h, base + lo, base + hi)
    out_lat = np.empty(record, np.float64)
    out_idx = np.empty(record, np.int64)
    out_level = np.empty(record, np.int8)
    n_lines = max(1, footprint // stride)
    fp = np.array([*permutation_params(n_lines, seed), scatter_key(seed)], dtype=np.int64)
    args = (np.int64(base), np.int64(footprint), np.int64(stride), np.int64(element),
            np.int64(ORDER_CODES[order]), fp,
            np.asarray(pattern or (0,), dtype=np.int64), np.int64(warmup), np.int64(record),
            float(overhead), float(jitter), float(outlier_rate), float(outlier_cycles),
            np.uint64(stream_seed(noise_seed)), out_lat, out_idx, out_level)
    specialised = (not scalar and warmup + record >= SPECIALISE_MIN
                   and specialise.worth_it(h, path_ids, tlb_first, tlb_count, warmup + record))
    specialise.run(h, path_ids, tlb_first, tlb_count, specialised=specialised, scalar=scalar,
                   dram_latency=dram_latency, page_walk=page_walk, sm=sm,
                   sm_count=max(1, sm_count), args=args)
    return out_lat, out_idx, out_level
