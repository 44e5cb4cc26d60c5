"""The engine's compact way state (issue 31, item 3) against a plain model of the caches.

The engine keeps one word per way (a truncated tag above the valid-sector mask), each LRU or
FIFO set in replacement order instead of time stamps, in int32 words while the tags it holds
fit and int64 words past that. The reference below keeps what the cache model says in the
plainest form (per set: full block numbers, a time stamp, a sector mask, in fixed ways),
independently of the engine's arrays, and every latency and level of random planted
configs must agree, over chases whose state carries over, in the generic kernel, the
one-way-at-a-time one and the specialised one, and across a switch to int64 words.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpumem.contracts.chains import chain_offsets
from gpumem.sim import CacheLevel, Dram, SetIndex, SimConfig, Timer, TlbLevel, engine, specialise
from helpers import slow_beyond

_GOLDEN = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1
DRAM, WALK = 700.0, 11.5


def _mix64(z: int) -> int:  # SplitMix64's output function (primitives._mix)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _parity(x: int) -> int:
    return bin(x).count("1") & 1


class _Level:
    """One level as the model describes it: sets of ways holding a block, a stamp and the
    valid sectors."""

    def __init__(self, lv: CacheLevel | TlbLevel, rng: int):
        self.lv, self.rng = lv, rng
        cache = isinstance(lv, CacheLevel)
        self.line = lv.line if cache else lv.page
        self.sector = lv.sector_size if cache else lv.page
        ways = lv.way_list
        self.sets = [[[-1, 0, 0] for _ in range(w)] for w in ways]
        f = lv.index.function
        self.table = lv.index.hashed_table(len(ways), sum(ways)) if f == "hashed" else \
            lv.index.table
        self.order = lv.index.spread_table(self.line) if f == "spread" else None

    def set_of(self, addr: int) -> int:
        block, idx, n = addr // self.line, self.lv.index, len(self.sets)
        if idx.function == "modulo":
            return block % n
        if idx.function == "bits":
            return sum(((addr >> b) & 1) << i for i, b in enumerate(idx.bits))
        if idx.function == "xor":
            return sum(_parity(addr & m) << i for i, m in enumerate(idx.masks))
        if idx.function == "spread":
            return int(idx.spread_sets(np.array([block]), self.line, n, self.order)[0])
        return self.table[block % len(self.table)]

    def access(self, addr: int, now: int) -> bool:
        block = addr // self.line
        sbit = 1 << ((addr % self.line) // self.sector)
        ways = self.sets[self.set_of(addr)]
        for w in ways:
            if w[0] == block:
                if self.lv.policy == "lru":
                    w[1] = now
                hit = bool(w[2] & sbit)
                w[2] |= sbit
                return hit
        empty = [i for i, w in enumerate(ways) if w[0] < 0]
        if empty:
            victim = empty[0]
        elif self.lv.policy in ("lru", "fifo"):
            victim = min(range(len(ways)), key=lambda i: ways[i][1])
        else:
            self.rng = (self.rng + _GOLDEN) & _M64
            z = _mix64(self.rng)
            if self.lv.policy == "random":
                victim = z % len(ways)
            else:
                weights = self.lv.way_weights[:len(ways)]
                rr = (z >> 11) * (1.0 / 9007199254740992.0) * _sum(weights)
                victim, acc = len(ways) - 1, 0.0
                for i, wt in enumerate(weights):
                    acc += wt
                    if rr < acc:
                        victim = i
                        break
        ways[victim] = [block, now, sbit]
        return False


def _sum(xs) -> float:
    t = 0.0
    for x in xs:
        t += x
    return t


def reference_chase(cfg: SimConfig, levels: dict[str, _Level], path: str, offsets, base: int,
                    sm: int, now: int) -> tuple[list[float], list[int]]:
    """Latency (rounded, no timer noise) and serving position of each access."""
    names = cfg.paths[path]
    tlbs = [levels[t.name] for t in cfg.tlbs]
    order: list[tuple[str, int]] = []
    for p, n in enumerate(names):
        if levels[n].lv.translate and tlbs:
            order += [("tlb", 0)]
            tlbs = []
        order.append((n, p))
    if tlbs:
        order.append(("tlb", 0))
    lats, where = [], []
    for k, off in enumerate(offsets):
        addr, pen, lat, lvl = base + int(off), 0.0, None, len(names)
        for name, p in order:
            if name == "tlb":
                for t in cfg.tlbs:
                    if levels[t.name].access(addr, now + k):
                        break
                    pen += t.miss_penalty
                else:
                    pen += WALK
                continue
            c = levels[name].lv
            if levels[name].access(addr, now + k):
                near, far = c.hit_latency, c.far_latency or c.hit_latency
                if c.sm_offsets:
                    near, far = (near + c.sm_offsets[sm % len(c.sm_offsets)],
                                 far + c.sm_offsets[sm % len(c.sm_offsets)])
                cost = near
                if c.partitions > 1:
                    home = sum(_parity(addr & m) << b for b, m in enumerate(c.home_masks))
                    mine = c.sm_partition[sm % len(c.sm_partition)] if c.sm_partition else \
                        (sm * c.partitions) // cfg.sm_count
                    cost = far if home != mine else near
                lat, lvl = cost + pen, p
                break
        if lat is None:
            lat = DRAM + pen
        lats.append(float(math.floor(lat + 0.5)))
        where.append(lvl)
    return lats, where


def _config(seed: int) -> SimConfig:
    """A random small hierarchy: every policy, index function, unequal sets, sectors, a
    partitioned level, TLB levels."""
    rng = np.random.default_rng(seed)
    caches = []
    n = int(rng.integers(1, 4))
    for c in range(n):
        line = int(rng.choice([32, 64, 128]))
        sector = line >> int(rng.integers(0, 5))  # up to 16 sectors
        if c == 0 and rng.random() < 0.25:
            sector = max(1, line // 32)  # more sectors than an int32 word has room for
        if rng.random() < 0.2:
            ways: int | list[int] = [int(x) for x in rng.choice([1, 3, 4, 8, 16], 6)]
            size = sum(ways) * line
            sets = 6
        else:
            ways = int(rng.choice([1, 2, 3, 4, 6, 8, 16, 24]))
            sets = int(rng.choice([1, 2, 4, 8, 3, 13]))
            size = sets * ways * line
        pol = str(rng.choice(["lru", "lru", "fifo", "random", "weighted"]))
        nw = max(ways) if isinstance(ways, list) else ways
        weights = [float(x) + 0.5 for x in rng.integers(0, 4, nw)] if pol == "weighted" else []
        fn = str(rng.choice(["modulo", "modulo", "hashed", "spread", "bits", "xor", "table"]))
        if fn in ("bits", "xor") and (isinstance(ways, list) or sets & (sets - 1)):
            fn = "table"  # address bits index a power of two of equal sets
        if sets == 1 and fn not in ("hashed", "spread"):
            fn = "modulo"
        shift = line.bit_length() - 1
        nb = sets.bit_length() - 1
        index = {"modulo": SetIndex(), "hashed": SetIndex("hashed", seed=seed),
                 "spread": SetIndex("spread", seed=seed),
                 "bits": SetIndex("bits", bits=[shift + 2 * i + 1 for i in range(nb)]),
                 "xor": SetIndex("xor", masks=[(0x2F1 << (shift + i)) | (1 << (shift + i))
                                               for i in range(nb)]),
                 "table": SetIndex("table", table=[*range(sets), *range(sets)][::-1])}[fn]
        gpu = c == n - 1
        part = dict(partitions=2, far_latency=290.0 + c, sm_offsets=[0.0, 2.5]) \
            if gpu and rng.random() < 0.4 else {}
        caches.append(CacheLevel(f"c{c}", size, line, ways, 30.0 + 100 * c, sector=sector,
                                 policy=pol, way_weights=weights, index=index,
                                 scope="gpu" if gpu else "sm", translate=gpu, **part))
    tlbs = [TlbLevel("t0", 4096, 4, 4, 9.25, policy=str(rng.choice(["lru", "fifo"]))),
            TlbLevel("t1", 4096 << int(rng.integers(0, 2)), 12, [8, 4], 41.0,
                     policy="random")][:int(rng.integers(0, 3))]
    names = [c.name for c in caches]
    return SimConfig(name="t", arch="t", compute_capability="9.0", sm_count=4,
                     clock_mhz=1000.0, caches=caches, paths={"ca": names, "cg": names[-1:]},
                     tlbs=tlbs, dram=Dram(DRAM), timer=Timer(overhead=0.0, jitter=0.0),
                     page_walk_latency=WALK, base_address=1 << 40).validate()


def _chases(seed: int, cfg: SimConfig):
    rng = np.random.default_rng(seed + 1)
    cap = sum(c.size for c in cfg.caches)
    for i in range(5):
        order = str(rng.choice(["sequential", "random", "scattered", "pattern"]))
        element = int(rng.choice([4, 8]))
        stride = element << int(rng.integers(0, 7))
        fp = max(stride, int(cap * rng.uniform(0.2, 2.5)) // stride * stride)
        pattern = ()
        if order == "pattern":
            pattern = tuple(int(x) * element for x in dict.fromkeys(
                rng.integers(0, fp // element, 60).tolist()))
        yield dict(footprint=fp, stride=stride, element=element, order=order, pattern=pattern,
                   path=str(rng.choice(list(cfg.paths))), seed=i, sm=int(rng.integers(4)),
                   warmup=int(rng.integers(0, 1500)), record=int(rng.integers(1, 1500)),
                   pad=int(rng.integers(0, 3)) << 20)


def _run(cfg: SimConfig, chases, mode: str, monkeypatch, far: int = 0):
    """Every chase on one hierarchy (state carried over), in ``mode``; the last of them
    ``far`` bytes further up. Returns latencies, levels and the word widths."""
    monkeypatch.setattr(engine, "SPECIALISE_MIN", 0 if mode == "specialised" else 1 << 62)
    monkeypatch.setattr(specialise, "COMPILE_AFTER", 0)
    h, ids = engine.compile_hierarchy(cfg, 3)
    out = []
    for i, c in enumerate(chases):
        base = cfg.base_address + c["pad"] + (far if i == len(chases) - 1 else 0)
        lat, idx, lvl = engine.simulate_chase(
            h, np.array([ids[n] for n in cfg.paths[c["path"]]], np.int64), len(cfg.caches),
            len(cfg.tlbs), DRAM, base=base, footprint=c["footprint"], stride=c["stride"],
            page_walk=WALK, sm=c["sm"], sm_count=4, element=c["element"], order=c["order"],
            seed=c["seed"], warmup=c["warmup"], record=c["record"], overhead=0.0, jitter=0.0,
            outlier_rate=0.0, outlier_cycles=0.0, noise_seed=i, pattern=c["pattern"],
            scalar=mode == "scalar")
        out.append((lat.tolist(), lvl.tolist(), idx.tolist(), h.way.dtype.itemsize))
    return out


def _reference(cfg: SimConfig, chases, far: int = 0):
    h, _ = engine.compile_hierarchy(cfg, 3)  # the same replacement streams' seeds
    levels = {lv.name: _Level(lv, int(h.rng[i]))
              for i, lv in enumerate([*cfg.caches, *cfg.tlbs])}
    out, now = [], 1
    for i, c in enumerate(chases):
        n = c["warmup"] + c["record"]
        offs = chain_offsets(c["footprint"], c["stride"], c["order"], c["seed"], n,
                             element=c["element"], pattern=c["pattern"])
        base = cfg.base_address + c["pad"] + (far if i == len(chases) - 1 else 0)
        lat, lvl = reference_chase(cfg, levels, c["path"], offs, base, c["sm"], now)
        now += n
        out.append((lat[c["warmup"]:], lvl[c["warmup"]:],
                    (offs[c["warmup"]:] // c["element"]).tolist()))
    return out


@pytest.mark.parametrize("seed", range(24))
def test_compact_state_is_the_plain_cache_model(seed, monkeypatch):
    cfg = _config(seed)
    chases = list(_chases(seed, cfg))
    want = _reference(cfg, chases)
    for mode in ("generic", "scalar"):
        got = _run(cfg, chases, mode, monkeypatch)
        for (lat, lvl, idx, _), (wlat, wlvl, widx) in zip(got, want, strict=True):
            assert idx == widx
            assert lvl == wlvl, mode
            assert lat == wlat, mode


@pytest.mark.parametrize("seed", slow_beyond([1, 6], keep=["1"]))
def test_specialised_kernel_keeps_the_plain_cache_model(seed, monkeypatch):
    cfg = _config(seed)
    chases = list(_chases(seed, cfg))
    for (lat, lvl, _, _), (wlat, wlvl, _) in zip(
            _run(cfg, chases, "specialised", monkeypatch), _reference(cfg, chases),
            strict=True):
        assert (lat, lvl) == (wlat, wlvl)


def _far_config(sectors: int) -> SimConfig:
    """An L1 indexed by address bits (its tags are whole block numbers) of 128-B lines, an
    L2 by modulo, a TLB: int32 words keep 31 - ``sectors`` tag bits."""
    return SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=4, clock_mhz=1000.0,
        caches=[CacheLevel("l1d", 4096, 128, 4, 30.0, sector=128 // sectors,
                           index=SetIndex("bits", bits=[7, 9, 11])),
                CacheLevel("l2", 1 << 16, 128, 16, 200.0, sector=32, scope="gpu",
                           translate=True)],
        paths={"ca": ["l1d", "l2"], "cg": ["l2"]},
        tlbs=[TlbLevel("t0", 4096, 8, 8, 9.0)], dram=Dram(DRAM),
        timer=Timer(overhead=0.0, jitter=0.0), page_walk_latency=WALK, base_address=1 << 40,
        memory_bytes=1 << 50).validate()


def test_far_apart_addresses_switch_to_wide_words_and_keep_the_state(monkeypatch):
    """A chase 64 GiB above the last ones (past what the L1's int32 tags tell apart: 2**27
    blocks of 128 B) switches the hierarchy to int64 words, carrying the lines it holds
    over; a reset goes back to int32 words. The results stay the plain model's."""
    cfg = _far_config(4)
    chases = [dict(footprint=2048, stride=128, element=4, order="sequential", pattern=(),
                   path="ca", seed=0, sm=1, warmup=16, record=64, pad=0),
              dict(footprint=1 << 15, stride=64, element=8, order="random", pattern=(),
                   path="ca", seed=1, sm=0, warmup=100, record=300, pad=0)]
    chases = [*chases, chases[0], dict(chases[1], seed=2)]
    far = 64 << 30
    for mode in ("generic", "scalar", "specialised"):
        got = _run(cfg, [*chases[:3], chases[2], chases[3]], mode, monkeypatch, far)
        assert [g[3] for g in got] == [4, 4, 4, 4, 8]
        want = _reference(cfg, [*chases[:3], chases[2], chases[3]], far)
        assert [g[:2] for g in got] == [w[:2] for w in want]
    # the lines held before the switch are found after it
    h, ids = engine.compile_hierarchy(cfg, 0)
    path = np.array([ids["l1d"], ids["l2"]], np.int64)

    def one(base):
        return engine.simulate_chase(
            h, path, 2, 1, DRAM, base=base, footprint=2048, stride=128, element=4,
            order="sequential", seed=0, warmup=0, record=16, overhead=0.0, jitter=0.0,
            outlier_rate=0.0, outlier_cycles=0.0, noise_seed=0)[2]

    one(cfg.base_address)
    assert h.way.dtype == np.int32
    one(cfg.base_address + far + 2048)  # L1 sets of their own (address bit 11)
    assert h.way.dtype == np.int64
    assert (one(cfg.base_address) == 0).all()  # L1 hits, across the switch
    engine.reset(h)
    assert h.way.dtype == np.int32 and not h.way.any() and h.span is None


def test_more_sectors_than_int32_words_hold_take_int64_words():
    h, _ = engine.compile_hierarchy(_far_config(32), 0)
    assert h.way.dtype == np.int64
    h, _ = engine.compile_hierarchy(_far_config(16), 0)
    assert h.way.dtype == np.int32


def test_addresses_no_word_can_tell_apart_are_refused():
    """32 sectors a line leave int64 words 31 tag bits: an L1 indexed by address bits tells
    apart 2**31 blocks of 128 B, so a chase 512 GiB away from the last one is refused (no
    in-tree config comes near), as is a negative address."""
    cfg = _far_config(32)
    h, ids = engine.compile_hierarchy(cfg, 0)
    kw = dict(footprint=4096, stride=128, element=4, order="sequential", seed=0, warmup=0,
              record=4, overhead=0.0, jitter=0.0, outlier_rate=0.0, outlier_cycles=0.0,
              noise_seed=0)
    path = np.array([ids["l1d"]], np.int64)
    engine.simulate_chase(h, path, 2, 1, DRAM, base=cfg.base_address, **kw)
    with pytest.raises(ValueError, match="too far apart"):
        engine.simulate_chase(h, path, 2, 1, DRAM, base=cfg.base_address + (512 << 30), **kw)
    engine.reset(h)
    engine.simulate_chase(h, path, 2, 1, DRAM, base=cfg.base_address + (512 << 30), **kw)
    with pytest.raises(ValueError, match="0 ... 2"):
        engine.simulate_chase(h, path, 2, 1, DRAM, base=-4096, **kw)


def _hopper() -> SimConfig:
    from gpumem.plugin.registry import get_plugins

    return get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")


@pytest.mark.parametrize("seed", range(6))
def test_reset_clears_every_set_the_chases_filled(seed, monkeypatch):
    """reset() clears, in a big state, only the sets of the blocks the chases since the last
    reset could reach (a run of sets of each modulo-indexed level, wrapping round): after
    short chases starting anywhere, at the end of a level's sets too, and long ones, no way
    word is left; and levels were cleared in part, across their last set too."""
    monkeypatch.setattr(engine, "SMALL_STATE", 0)  # the planted states are small
    cfg = _hopper() if seed < 3 else _config(seed)
    h, ids = engine.compile_hierarchy(cfg, seed)
    levels = [lv for lv in [*cfg.caches, *cfg.tlbs] if lv.index.function == "modulo"
              and len(lv.way_list) > 1]
    rng = np.random.default_rng(seed)
    partial = wrapped = 0
    for i in range(16):
        pad = int(rng.integers(0, 1 << 16)) * 128
        if levels:  # the chase's first set, the level's last few every other time
            lv = levels[int(rng.integers(len(levels)))]
            line, sets = (lv.line if isinstance(lv, CacheLevel) else lv.page), len(lv.way_list)
            start = sets - int(rng.integers(1, 8)) if i % 2 else int(rng.integers(sets))
            pad = (start - cfg.base_address // line) % sets * line
        path = list(cfg.paths)[i % len(cfg.paths)]
        engine.simulate_chase(
            h, np.array([ids[n] for n in cfg.paths[path]], np.int64), len(cfg.caches),
            len(cfg.tlbs), DRAM, base=cfg.base_address + pad,
            footprint=int(rng.choice([2048, 64 << 10, 1 << 20, 48 << 20])), stride=128,
            element=4, order=str(rng.choice(["sequential", "random"])), seed=i,
            warmup=int(rng.integers(0, 3000)), record=500, overhead=0.0, jitter=0.0,
            outlier_rate=0.0, outlier_cycles=0.0, noise_seed=0)
        assert h.way.any()
        ranges = engine._dirty_words(h, *h.span)
        partial += sum(b - a for a, b in ranges) < h.way.size
        wrapped += len(ranges) > len(cfg.caches) + len(cfg.tlbs)
        if i % 4 != 1:
            engine.reset(h)
            assert not h.way.any()
            assert h._narrow is None or not h._narrow.any()
    if seed < 3:  # hopper's levels are big enough to be cleared in part
        assert partial > 0 and wrapped > 0
