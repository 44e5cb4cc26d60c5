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

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from gpumem.chains import permutation_params, scatter_key, splitmix64
from gpumem.sim.config import (
    MAX_STATE_BYTES,
    CacheLevel,
    SimConfig,
    SimConfigError,
    TlbLevel,
    state_bytes,
)

POLICY_CODES = {"lru": 0, "fifo": 1, "random": 2, "weighted": 3}
INDEX_CODES = {"modulo": 0, "bits": 1, "xor": 2, "table": 3}
ORDER_CODES = {"sequential": 0, "random": 1, "pattern": 2, "scattered": 3}


# Columns of the per-level metadata table ``Hierarchy.meta``.
LINE_SHIFT, SECTOR_SHIFT, N_SETS, SET_BASE, IDX_KIND, IDX_OFF, IDX_LEN, POLICY, W_OFF, \
    TRANSLATE, PARTS, PART_OFF, PART_LEN, SMO_OFF, SMO_LEN, MOD_M, MOD_S, EQ_WAYS, WAY_BASE = range(19)
META_COLUMNS = 19


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
    A config built in Python without ``validate()`` is still held to the state bound."""
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
            m[PART_LEN] = len(lv.partition_masks)
            params.extend(int(x) for x in lv.partition_masks)
            m[SMO_OFF] = len(weights)
            m[SMO_LEN] = len(lv.sm_offsets)
            weights.extend(float(x) for x in lv.sm_offsets)
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
        p = {"modulo": [], "bits": lv.index.bits, "xor": lv.index.masks,
             "table": lv.index.table}[lv.index.function]
        m[IDX_KIND] = INDEX_CODES[lv.index.function]
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


def reset(h: Hierarchy) -> None:
    """Invalidate every line and TLB entry (a cold hierarchy)."""
    h.way[0::2] = -1
    h.way[1::2] = 0
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


# ---------------------------------------------------------------------------------------------
# Compiled kernel
#
# One function holds the whole per-access loop on purpose. Numba increments and decrements the
# reference count of every array passed to a function it does not inline, and that costs more
# than a cache lookup; so the lookup is written once, inside the loop, in a small state machine
# that visits "the next level to look up": the path's caches in order, with the TLB levels
# spliced in before the first physically tagged level (or before DRAM). Long chases run a
# variant generated per path instead (gpumem.sim.specialise): the same body, unrolled over the
# path's levels with their geometry as literals.
# ---------------------------------------------------------------------------------------------

_U = nb.uint64
CHUNK = 4096
PF_BYTES = 1 << 18  # levels with more way state than this get their sets prefetched
PF_DIST = 64        # ... this many accesses ahead
SPECIALISE_MIN = 100_000  # chases at least this long run a kernel specialised to their path


@intrinsic
def _mulhi(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(prod, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


def _make_scan(n: int):
    """An intrinsic that looks up a whole set of ``n`` ways at once with vector instructions
    (the host's SIMD compares, no branch per way).

    ``scan(way, j, block, limit)`` reads the ``n`` way records from ``way[j]`` (tag, word,
    tag, word ...) and returns ``f | e << 8 | v << 16``: ``f`` the way holding ``block``, ``e``
    the first invalid way (tag < 0), ``v`` the first way with the smallest word if that word
    is below ``limit`` (else 0): the LRU / FIFO victim of a full set, as the scalar scan finds
    it. ``f`` and ``e`` are ``n`` when there is no such way.
    """

    @intrinsic
    def scan(typingctx, arr, j, block, limit):
        sig = types.int64(arr, types.intp, types.int64, types.int64)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
            vn = ir.VectorType(i64, n)
            v2 = ir.VectorType(i64, 2 * n)
            rec = builder.load(builder.bitcast(ptr, v2.as_pointer()), align=8)
            undef2 = ir.Constant(v2, None)
            tags = builder.shuffle_vector(
                rec, undef2, ir.Constant(ir.VectorType(i32, n), [2 * i for i in range(n)]))
            words = builder.shuffle_vector(
                rec, undef2, ir.Constant(ir.VectorType(i32, n), [2 * i + 1 for i in range(n)]))

            def splat(x):
                one = builder.insert_element(ir.Constant(vn, None), x, ir.Constant(i32, 0))
                return builder.shuffle_vector(one, ir.Constant(vn, None),
                                              ir.Constant(ir.VectorType(i32, n), [0] * n))

            cttz = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i64, i1]), "llvm.cttz.i64")

            def first(mask):  # index of the first true lane, n if none
                bits = builder.zext(builder.bitcast(mask, ir.IntType(n)), i64)
                bits = builder.or_(bits, ir.Constant(i64, 1 << n))
                return builder.call(cttz, [bits, ir.Constant(i1, 1)])

            f = first(builder.icmp_signed("==", tags, splat(args[2])))
            e = first(builder.icmp_signed("<", tags, ir.Constant(vn, [0] * n)))
            smin = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [vn]), f"llvm.vector.reduce.smin.v{n}i64")
            mn = builder.call(smin, [words])
            v = first(builder.icmp_signed("==", words, splat(mn)))
            v = builder.select(builder.icmp_signed("<", mn, args[3]), v, ir.Constant(i64, 0))
            out = builder.or_(f, builder.shl(e, ir.Constant(i64, 8)))
            return builder.or_(out, builder.shl(v, ir.Constant(i64, 16)))

        return sig, codegen

    return scan


_scan4, _scan8, _scan16 = _make_scan(4), _make_scan(8), _make_scan(16)


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Ask the host CPU to bring ``arr[idx]``'s cache line in (llvm.prefetch, read, high
    locality); no effect on results."""
    sig = types.void(arr, types.intp)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(cache=True, inline="always")
def _parity(x):
    x ^= x >> 32
    x ^= x >> 16
    x ^= x >> 8
    x ^= x >> 4
    x ^= x >> 2
    x ^= x >> 1
    return x & 1


@nb.njit(cache=True, inline="always")
def _mix(z):
    """SplitMix64 output function."""
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


@nb.njit(cache=True, inline="always")
def _permute(x, bits, k0, k1, k2, k3, n):
    """The permutation of :func:`gpumem.chains.permute_vec`, one value at a time."""
    mask = (_U(1) << _U(bits)) - _U(1)
    sh = _U((bits + 1) // 2)
    v = _U(x)
    while True:
        v = (v ^ _U(k0)) & mask
        v = (v * _U(k1)) & mask
        v ^= v >> sh
        v = (v * _U(k2)) & mask
        v ^= v >> sh
        v = (v + _U(k3)) & mask
        if v < _U(n):
            return np.int64(v)


@nb.njit(cache=True)
def _chase(meta, set_ways, set_off, idx_param, weights, cost, far_cost, way, rng, clock, path, tlb_first, tlb_count, dram_latency, page_walk, sm, sm_count, base,
           footprint, stride, element, order, fp, pattern, warmup, record, overhead, jitter,
           outlier_rate, outlier_cycles, noise_seed, out_lat, out_idx, out_level, scalar):
    n_elem = footprint // element
    s_elem = stride // element
    n_lines = footprint // stride
    s_per_block = stride // element
    fp_half, fk0, fk1, fk2, fk3, fn = fp[0], fp[1], fp[2], fp[3], fp[4], fp[5]
    plen = path.shape[0]
    tlb_end = tlb_first + tlb_count
    noise = _U(noise_seed)
    cur = np.int64(0)  # element index of the current access (sequential order)
    t0 = clock[0]
    n_acc = warmup + record
    # byte offsets of the accesses, computed up to two chunks ahead in a ring of 2 * CHUNK
    chunk = np.empty(2 * CHUNK, np.int64)
    gen = np.int64(0)  # accesses computed so far
    # The big levels of this path (state past PF_BYTES, modulo-indexed, equal sets): while
    # access k is simulated, the host cache lines of the set that access k + PF_DIST will
    # look up there are prefetched, which hides the host's memory latency on random orders.
    # Only levels that did set scans in the last chunk take part (an L1-resident chase would
    # pay for prefetches it never uses).
    pf_cand = np.empty(meta.shape[0], np.int64)
    n_cand = 0
    for i in range(plen + tlb_count):
        lv = path[i] if i < plen else tlb_first + i - plen
        if (meta[lv, IDX_KIND] == 0 and meta[lv, EQ_WAYS] > 0 and meta[lv, N_SETS] > 1
                and meta[lv, N_SETS] * meta[lv, EQ_WAYS] * 16 > PF_BYTES):
            pf_cand[n_cand] = lv
            n_cand += 1
    pf = pf_cand.copy()
    n_pf = n_cand
    scans = np.zeros(meta.shape[0], np.int64)  # set scans per level in this chunk
    mru_block = np.full(meta.shape[0], -1, np.int64)  # last block each level looked up
    mru_way = np.zeros(meta.shape[0], np.int64)       # ... and where it sits
    pos_l = np.int64(0)  # (k + r) % n_lines, kept as a counter (no division per access)
    pos_p = np.int64(0)  # (k + r) % len(pattern)
    n_pat = pattern.shape[0]
    for k in range(warmup + record):
        now = t0 + k + 1
        if k % CHUNK == 0:  # compute chunks of the chain in a tight loop the compiler can vectorise
            for r in range(gen, min(k + 2 * CHUNK, n_acc)):
                if order == 0:
                    chunk[r & (2 * CHUNK - 1)] = cur * element
                    cur += s_elem
                    if cur >= n_elem:
                        cur -= n_elem
                elif order == 2:
                    chunk[r & (2 * CHUNK - 1)] = pattern[pos_p]
                    pos_p += 1
                    if pos_p == n_pat:
                        pos_p = 0
                elif order == 3:  # chains.scatter_vec, one block at a time
                    blk = pos_l
                    pos_l += 1
                    if pos_l == n_lines:
                        pos_l = 0
                    z = (_U(blk) + _U(fp[6])) * _U(0x9E3779B97F4A7C15)
                    z ^= z >> _U(29)
                    z *= _U(0xBF58476D1CE4E5B9)
                    z ^= z >> _U(32)
                    chunk[r & (2 * CHUNK - 1)] = blk * stride + np.int64(z % _U(s_per_block)) * element
                else:
                    chunk[r & (2 * CHUNK - 1)] = _permute(pos_l, fp_half, fk0, fk1, fk2, fk3, fn) * stride
                    pos_l += 1
                    if pos_l == n_lines:
                        pos_l = 0
            gen = min(k + 2 * CHUNK, n_acc)
            if k > 0:
                n_pf = 0
                for i in range(n_cand):
                    if scans[pf_cand[i]] >= CHUNK // 8:
                        pf[n_pf] = pf_cand[i]
                        n_pf += 1
                scans[:] = 0
        off = chunk[k & (2 * CHUNK - 1)]
        addr = base + off
        if n_pf > 0 and k + PF_DIST < n_acc:
            a2 = base + chunk[(k + PF_DIST) & (2 * CHUNK - 1)]
            for i in range(n_pf):
                lv = pf[i]
                b2 = a2 >> meta[lv, LINE_SHIFT]
                st = b2 - np.int64(_mulhi(_U(b2), _U(meta[lv, MOD_M])) >> _U(meta[lv, MOD_S])) \
                    * meta[lv, N_SETS]
                ew = meta[lv, EQ_WAYS]
                j0 = 2 * (meta[lv, WAY_BASE] + st * ew)
                for j in range(j0, j0 + 2 * ew, 8):  # one host cache line: 4 ways
                    _prefetch(way, j)

        # ---- one load ----
        pen = 0.0
        translated = False
        in_tlb = False
        p = 0
        t = tlb_first
        lat = 0.0
        lvl = plen
        while True:
            # choose the next level to look up
            if in_tlb:
                if t == tlb_end:  # every TLB level missed: the page walk is paid
                    in_tlb = False
                    translated = True
                    if tlb_count > 0:
                        pen += page_walk
                    continue
                lv = t
            else:
                if p == plen:
                    if translated:
                        lat = dram_latency + pen
                        lvl = plen
                        break
                    in_tlb = True
                    continue
                lv = path[p]
                if meta[lv, TRANSLATE] == 1 and not translated:
                    in_tlb = True
                    continue
            shift = meta[lv, LINE_SHIFT]
            sshift = meta[lv, SECTOR_SHIFT]
            block = addr >> shift
            sbit = np.int64(1) << ((addr >> sshift) & ((np.int64(1) << (shift - sshift)) - 1))
            pol = meta[lv, POLICY]
            hit = False
            if block == mru_block[lv]:
                # The block this level saw last is still where it was put: no set scan. Its
                # stamp is already the newest in its set, so LRU order needs no update.
                j = mru_way[lv]
                st_sect = way[j + 1]
                if st_sect & sbit:
                    hit = True
                else:  # sector miss: the line stays, the sector is fetched
                    way[j + 1] = st_sect | sbit
            else:
                kind = meta[lv, IDX_KIND]
                if kind == 0:  # block % sets, without a division
                    if meta[lv, MOD_S] < 0:
                        st = np.int64(0)
                    else:
                        st = block - np.int64(_mulhi(_U(block), _U(meta[lv, MOD_M]))
                                              >> _U(meta[lv, MOD_S])) * meta[lv, N_SETS]
                elif kind == 1:
                    st = 0
                    for j in range(meta[lv, IDX_LEN]):
                        st |= ((addr >> idx_param[meta[lv, IDX_OFF] + j]) & 1) << j
                elif kind == 2:
                    st = 0
                    for j in range(meta[lv, IDX_LEN]):
                        st |= _parity(addr & idx_param[meta[lv, IDX_OFF] + j]) << j
                else:
                    st = idx_param[meta[lv, IDX_OFF] + block % meta[lv, IDX_LEN]]
                sid = meta[lv, SET_BASE] + st
                scans[lv] += 1
                ways = meta[lv, EQ_WAYS]
                if ways > 0:  # equal sets: no look-up in set_off (a host cache miss on big levels)
                    base_w = meta[lv, WAY_BASE] + st * ways
                else:
                    base_w = set_off[sid]
                    ways = set_ways[sid]
                # lookup
                found = False
                empty = -1
                victim = 0  # oldest stamp so far: the LRU / FIFO victim, found in the same scan
                oldest = now << 32
                if not scalar and (ways == 16 or ways == 8 or ways == 4):  # a few SIMD ops
                    jb = 2 * base_w
                    if ways == 16:
                        res = _scan16(way, jb, block, oldest)
                    elif ways == 8:
                        res = _scan8(way, jb, block, oldest)
                    else:
                        res = _scan4(way, jb, block, oldest)
                    fw = res & 0xFF
                    if fw < ways:
                        found = True
                        j = jb + 2 * fw
                        st_sect = way[j + 1]
                        if pol == 0:
                            st_sect = (now << 32) | (st_sect & 0xFFFFFFFF)
                        if st_sect & sbit:
                            hit = True
                        else:  # sector miss: the line stays, the sector is fetched
                            st_sect |= sbit
                        way[j + 1] = st_sect
                    else:
                        e = (res >> 8) & 0xFF
                        if e < ways:
                            empty = e
                        victim = (res >> 16) & 0xFF
                else:
                    for w in range(ways):
                        j = 2 * (base_w + w)
                        tg = way[j]
                        if tg == block:
                            found = True
                            st_sect = way[j + 1]
                            if pol == 0:
                                st_sect = (now << 32) | (st_sect & 0xFFFFFFFF)
                            if st_sect & sbit:
                                hit = True
                            else:  # sector miss: the line stays, the sector is fetched
                                st_sect |= sbit
                            way[j + 1] = st_sect
                            break
                        if tg < 0:
                            if empty < 0:
                                empty = w
                        elif way[j + 1] < oldest:  # stamps in the high bits: compare whole words
                            oldest = way[j + 1]
                            victim = w
                # fill on miss
                if not found:
                    if empty >= 0:
                        victim = empty
                    elif pol <= 1:  # LRU, FIFO: the oldest stamp goes (found above)
                        pass
                    else:  # random or weighted: one draw from the level's stream
                        z = rng[lv] + _U(0x9E3779B97F4A7C15)
                        rng[lv] = z
                        z = _mix(z)
                        if pol == 2:
                            victim = np.int64(z % _U(ways))
                        else:  # weighted: way w goes with probability weights[w] / sum
                            wo = meta[lv, W_OFF]
                            total = 0.0
                            for w in range(ways):
                                total += weights[wo + w]
                            r = (z >> _U(11)) * (1.0 / 9007199254740992.0) * total
                            victim = ways - 1
                            acc = 0.0
                            for w in range(ways):
                                acc += weights[wo + w]
                                if r < acc:
                                    victim = w
                                    break
                    j = 2 * (base_w + victim)
                    way[j] = block
                    way[j + 1] = (now << 32) | sbit
                mru_block[lv] = block
                mru_way[lv] = j
            # advance
            if in_tlb:
                if hit:
                    in_tlb = False
                    translated = True
                else:
                    pen += cost[lv]
                    t += 1
            else:
                if hit:
                    c = cost[lv]
                    parts = meta[lv, PARTS]
                    if parts > 1:  # which partition is home, and is it this SM's?
                        home = 0
                        for j in range(meta[lv, PART_LEN]):
                            home |= _parity(addr & idx_param[meta[lv, PART_OFF] + j]) << j
                        if home != (sm * parts) // sm_count:
                            c = far_cost[lv]
                    if meta[lv, SMO_LEN] > 0:
                        c += weights[meta[lv, SMO_OFF] + sm % meta[lv, SMO_LEN]]
                    lat = c + pen
                    lvl = p
                    break
                p += 1

        # ---- record ----
        if k >= warmup:
            i = k - warmup
            tm = lat + overhead
            if jitter > 0.0:
                noise += _U(0x9E3779B97F4A7C15)
                u1 = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)
                noise += _U(0x9E3779B97F4A7C15)
                u2 = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)
                tm += jitter * np.sqrt(-2.0 * np.log(u1 + 1e-300)) * np.cos(6.283185307179586 * u2)
            if outlier_rate > 0.0:
                noise += _U(0x9E3779B97F4A7C15)
                if (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0) < outlier_rate:
                    # a mis-timed access: an exponential delay of mean outlier_cycles, as
                    # interrupts and preemptions give (heavy-tailed, rarely twice the same)
                    noise += _U(0x9E3779B97F4A7C15)
                    u = (_mix(noise) >> _U(11)) * (1.0 / 9007199254740992.0)
                    tm += -outlier_cycles * np.log(1.0 - u)
            out_lat[i] = np.floor(tm + 0.5)
            out_idx[i] = off // element
            out_level[i] = lvl
    clock[0] = t0 + warmup + record


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
    kernel generated for the path (:mod:`gpumem.sim.specialise`), about twice as fast and
    bit-identical to this module's generic one.
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
    from gpumem.sim import specialise

    if (not scalar and base >= 0 and warmup + record >= SPECIALISE_MIN
            and specialise.worth_it(h, path_ids, tlb_first, tlb_count, warmup + record)):
        specialise.run(h, path_ids, tlb_first, tlb_count, dram_latency=dram_latency,
                       page_walk=page_walk, sm=sm, sm_count=max(1, sm_count), args=args)
    else:
        _chase(*h, path_ids, np.int64(tlb_first), np.int64(tlb_count), float(dram_latency),
               float(page_walk), np.int64(sm), np.int64(max(1, sm_count)), *args, bool(scalar))
    return out_lat, out_idx, out_level
