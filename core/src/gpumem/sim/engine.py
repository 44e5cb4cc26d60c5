"""The simulation engine: caches and TLBs as flat arrays, walked by Numba-compiled loops.

A :class:`SimConfig` compiles into a :class:`Hierarchy` of flat arrays (one record per cache or
TLB level, one per set, one per way) so the per-access loop runs as machine code: a pure-Python
loop would manage about a million accesses per second, this one well over twenty million.

Every random choice (replacement, timer jitter) comes from a SplitMix64 stream seeded from the
config seed, the request seed and the SM, so results never depend on which worker process
simulated them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpumem.chains import permutation_params, scatter_key, splitmix64
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
    ORDER_CODES,
    PART_LEN,
    PART_OFF,
    PARTS,
    POLICY,
    POLICY_CODES,
    SECTOR_SHIFT,
    SET_BASE,
    SMO_LEN,
    SMO_OFF,
    TRANSLATE,
    W_OFF,
    WAY_BASE,
)
from gpumem.sim.primitives import _permute  # noqa: F401 - tests check it against gpumem.chains

SPECIALISE_MIN = 100_000  # chases at least this long run a kernel specialised to their path


class Hierarchy(NamedTuple):
    """Flat arrays describing all levels (caches first, then TLBs) and their state.

    Kept to a few arrays on purpose: the compiled loop unpacks them once, because fetching an
    array out of a tuple inside the loop costs a reference-count update per access.
    """

    meta: np.ndarray       # int64[L, META_COLUMNS]
    set_ways: np.ndarray   # int64[S]  ways of each set
    set_off: np.ndarray    # int64[S]  first way record of each set
    idx_param: np.ndarray  # int64[P]  bits, masks, tables; partition masks
    weights: np.ndarray    # float64[W] per-way eviction weights; per-SM latency offsets
    cost: np.ndarray       # float64[L] hit latency (cache) or miss penalty (TLB)
    far_cost: np.ndarray   # float64[L] hit latency in a far partition
    way: np.ndarray        # int64[2T] per way: block number (-1 = invalid), then
    #                        (time stamp << 32) | valid-sector mask, side by side so that one
    #                        set's ways share a few host cache lines (the simulator is bound by
    #                        the host's memory latency on big caches)
    rng: np.ndarray        # uint64[L] replacement random stream per level
    clock: np.ndarray      # int64[1]  accesses so far: the LRU/FIFO time stamp


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
        else:
            m[LINE_SHIFT] = m[SECTOR_SHIFT] = _log2(lv.page)
            m[PARTS] = 1
            cost[i] = lv.miss_penalty
        ways = lv.way_list
        m[N_SETS] = len(ways)
        m[MOD_M], m[MOD_S] = _divider(len(ways))
        m[EQ_WAYS] = ways[0] if len(set(ways)) == 1 else 0
        m[WAY_BASE] = total_ways
        m[SET_BASE] = len(set_ways)
        for w in ways:
            set_ways.append(w)
            set_off.append(total_ways)
            total_ways += w
        fn = lv.index.function
        p = (lv.index.hashed_table(len(ways), sum(ways)) if fn == "hashed" else
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
        _empty_ways(total_ways), rng, np.zeros(1, np.int64),
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


def _empty_ways(n: int) -> np.ndarray:
    # aligned to the host's 64-byte cache lines: a set of 4k ways then spans k lines
    raw = np.zeros(2 * n + 8, np.int64)
    w = raw[(-raw.ctypes.data % 64) // 8:][:2 * n]
    w[0::2] = -1
    return w


#: One way record of a cold hierarchy (tag -1: invalid; no stamp, no sector) as 16 bytes.
_COLD_WAY = np.array([-1, 0], np.int64).view("V16")[0]


def reset(h: Hierarchy) -> None:
    """Invalidate every line and TLB entry (a cold hierarchy). The records are filled whole,
    16 bytes at a time: one pass over the state instead of two strided ones (about a third
    faster; a chase starts with one)."""
    h.way.view("V16").fill(_COLD_WAY)
    h.clock.fill(0)


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
    if int(h.clock[0]) + warmup + record >= 1 << 31:
        raise ValueError("the hierarchy's clock would overflow its 31-bit stamps: reset() it")
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
    specialised = (not scalar and base >= 0 and warmup + record >= SPECIALISE_MIN
                   and specialise.worth_it(h, path_ids, tlb_first, tlb_count, warmup + record))
    specialise.run(h, path_ids, tlb_first, tlb_count, specialised=specialised, scalar=scalar,
                   dram_latency=dram_latency, page_walk=page_walk, sm=sm,
                   sm_count=max(1, sm_count), args=args)
    return out_lat, out_idx, out_level
