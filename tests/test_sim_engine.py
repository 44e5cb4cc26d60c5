"""The simulation engine against planted ground truth (predicted hit/miss sequences)."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.contracts.device import ChaseRequest
from gpumem.sim import CacheLevel, Dram, SetIndex, SimConfig, Timer, TlbLevel
from gpumem.sim.device import SimDevice
from helpers import slow_beyond

L1_HIT, L2_HIT, DRAM = 30.0, 200.0, 500.0


def config(l1: CacheLevel | None = None, tlbs=None, timer=None) -> SimConfig:
    l1 = l1 or CacheLevel("l1d", 16384, 128, 4, L1_HIT)
    return SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=1, clock_mhz=1000.0,
        caches=[l1, CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu",
                               translate=True)],
        paths={"ca": ["l1d", "l2"], "cg": ["l2"]},
        tlbs=tlbs if tlbs is not None else [TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0)],
        dram=Dram(DRAM), timer=timer or Timer(),
    ).validate()


def chase(cfg, **kw):
    dev = SimDevice(cfg, cfg.arch)
    req = ChaseRequest(**{"record": 512, "element": 4, **kw})
    return dev.pointer_chase(req)


def test_lru_cache_holds_exactly_its_capacity():
    cfg = config()
    res = chase(cfg, footprint=16384, stride=128, warmup=128)
    assert (res.latency == L1_HIT).all()


def test_first_miss_at_capacity_plus_one_line_and_periodic_after():
    """N = C + b: one set holds ways + 1 lines, so exactly those miss, every pass (LRU)."""
    cfg = config()
    res = chase(cfg, footprint=16384 + 128, stride=128, warmup=129, record=129 * 3)
    misses = res.latency != L1_HIT
    lines = res.index * 4 // 128
    sets = lines % 32
    assert set(sets[misses]) == {0}
    assert misses.sum() == 5 * 3   # 5 lines of set 0, three passes
    assert (res.latency[misses] == L2_HIT).all()


def test_fifo_differs_from_lru_when_a_line_is_rehit():
    lru = config(CacheLevel("l1d", 512, 128, 4, L1_HIT))
    fifo = config(CacheLevel("l1d", 512, 128, 4, L1_HIT, policy="fifo"))
    # one set of 4 ways; pattern 0 1 2 3 0 4 0: LRU keeps 0 (re-hit), FIFO evicts it for 4
    res_lru = _pattern(lru, [0, 1, 2, 3, 0, 4, 0])
    res_fifo = _pattern(fifo, [0, 1, 2, 3, 0, 4, 0])
    assert res_lru[-1] == L1_HIT and res_fifo[-1] == L2_HIT


def _pattern(cfg, lines):
    from gpumem.sim import engine

    h, ids = engine.compile_hierarchy(cfg, 0)
    path = np.array([ids["l1d"], ids["l2"]], np.int64)
    out = []
    for ln in lines:  # one access each, state carried over (no reset between calls)
        lat, _, _ = engine.simulate_chase(
            h, path, 2, len(cfg.tlbs), DRAM, base=cfg.base_address + ln * 128, footprint=128,
            stride=128, element=4, order="sequential", seed=0, warmup=0, record=1,
            overhead=0, jitter=0, outlier_rate=0, outlier_cycles=0, noise_seed=0)
        out.append(float(lat[0]))
    return out


def test_bits_index_maps_128_byte_chunks_to_sets():
    """Texture-L1 style: 4 sets x 4 ways of 32 B lines, set = address bits 7-8, so each
    128-B chunk (4 lines) fills one set and chunks rotate through the sets."""
    tex = CacheLevel("l1d", 512, 32, 4, L1_HIT, index=SetIndex("bits", bits=[7, 8]))
    cfg = config(tex)
    ok = chase(cfg, footprint=512, stride=32, warmup=16)
    assert (ok.latency == L1_HIT).all()
    # one more line (line 16, chunk 4) lands in set 0: 5 lines in 4 ways, only set 0 misses
    res = chase(cfg, footprint=544, stride=32, warmup=17, record=17 * 2)
    sets = ((res.index * 4) >> 7) & 3
    missed = res.latency != L1_HIT
    assert set(sets[missed]) == {0} and missed.sum() == 5 * 2


def test_weighted_policy_prefers_its_heavy_way_and_is_deterministic():
    w = CacheLevel("l1d", 512, 128, 4, L1_HIT, policy="weighted", way_weights=[6, 1, 1, 1])
    cfg = config(w)
    a = chase(cfg, footprint=640, stride=128, warmup=5, record=4000)
    b = chase(cfg, footprint=640, stride=128, warmup=5, record=4000)
    assert np.array_equal(a.latency, b.latency)
    lru_misses = 4000  # LRU with 5 lines cycling in 4 ways misses every access
    assert 0 < (a.latency != L1_HIT).sum() < lru_misses


def test_sectors_fill_32_bytes_at_a_time():
    """L2 lines of 128 B in 32-B sectors: a cold pass at 32-B stride misses every sector
    (4 per line, not 1), a second pass hits them all."""
    cfg = config()
    cold = chase(cfg, footprint=2048, stride=32, warmup=0, record=64, path="cg")
    assert (cold.latency >= DRAM).all()
    warm = chase(cfg, footprint=2048, stride=32, warmup=64, record=64, path="cg")
    assert (warm.latency == L2_HIT).all()


def test_tlb_miss_penalty_past_reach():
    tlb = [TlbLevel("tlb_l1", 2 << 20, 4, 4, 10.0), TlbLevel("tlb_l2", 2 << 20, 8, 8, 50.0)]
    cfg = config(tlbs=tlb)
    cfg.memory_bytes = 1 << 30
    inside = chase(cfg, footprint=8 * (2 << 20), stride=2 << 20, warmup=8, record=64, path="cg")
    assert set(inside.latency) == {L2_HIT + 10.0}  # L1 TLB (4) misses, L2 TLB (8) holds all
    beyond = chase(cfg, footprint=9 * (2 << 20), stride=2 << 20, warmup=9, record=64, path="cg")
    assert set(beyond.latency) == {L2_HIT + 60.0}


def test_timer_overhead_jitter_and_outliers_are_seeded():
    cfg = config(timer=Timer(overhead=5, jitter=2.0, outlier_rate=0.05, outlier_cycles=1000))
    a = chase(cfg, footprint=4096, stride=128, warmup=32, record=2000, seed=3)
    b = chase(cfg, footprint=4096, stride=128, warmup=32, record=2000, seed=3)
    c = chase(cfg, footprint=4096, stride=128, warmup=32, record=2000, seed=4)
    assert np.array_equal(a.latency, b.latency) and not np.array_equal(a.latency, c.latency)
    assert a.timer_overhead == 5
    assert abs(np.median(a.latency) - (L1_HIT + 5)) <= 1
    assert 0.02 < (a.latency > 500).mean() < 0.08


def test_footprint_beyond_memory_is_skipped_not_crashed():
    from gpumem.contracts.errors import PointSkipped

    cfg = config()
    cfg.memory_bytes = 1 << 20
    with pytest.raises(PointSkipped, match="exceeds device memory"):
        chase(cfg, footprint=2 << 20, stride=128)


def test_unknown_path_is_unsupported():
    from gpumem.contracts.errors import ProbeUnsupported

    with pytest.raises(ProbeUnsupported, match="no 'tex' load path"):
        chase(config(), footprint=4096, stride=128, path="tex")


#: A sliced L2 (four slices by an XOR hash, two SM rows of latencies): the kernels' slice
#: branch in the engine tests.
SLICED = dict(slices=4, slice_masks=[0x1080, 0x20500],
              slice_latency=[[210.0, 250.0, 230.0, 290.0], [260.0, 205.0, 280.0, 225.0]])


def test_a_sliced_level_serves_each_line_at_its_slices_latency_from_each_sm():
    """Every L2 hit costs the SM's latency to the line's home slice: the slice the XOR
    masks give the line's address, the row of the SM (cyclic over SMs)."""
    from gpumem.contracts.xor_hash import parity

    l2 = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu", translate=True,
                    **SLICED)
    cfg = config()
    cfg.caches[1] = l2
    cfg.sm_count = 4
    cfg.validate()
    lines = np.random.default_rng(3).choice(4096, 256, replace=False) * 128
    pattern = tuple(int(x) for x in lines)
    for sm in range(4):
        res = chase(cfg, footprint=1 << 20, stride=128, order="pattern", pattern=pattern,
                    warmup=256, record=256, path="cg", sm=sm)
        addr = cfg.base_address + res.index * 4
        sl = parity(addr & 0x1080) | parity(addr & 0x20500) << 1
        assert np.array_equal(l2.slice_of(addr), sl)
        want = np.array(SLICED["slice_latency"][sm % 2])[sl]
        assert np.array_equal(res.latency, want)
        assert len(set(sl.tolist())) == 4


#: The same four slices by a table over a 4 KB page's classes modulo one delta (16 classes):
#: a hash no XOR masks express.
TABLE_SLICED = dict(slices=4, slice_kernel=[0x880],
                    slice_table=[0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 0, 2, 3, 0, 2, 1],
                    slice_latency=SLICED["slice_latency"])


def test_a_table_sliced_level_serves_each_line_at_its_slices_latency_from_each_sm():
    """With a slice table, a line's slice is the table's entry for its class (its address
    within a page modulo the kernel's span), on every page alike: lines a kernel delta apart
    share a slice, and every hit costs the SM's latency to it."""
    from gpumem.contracts.xor_hash import class_index

    l2 = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu", translate=True,
                    **TABLE_SLICED)
    cfg = config()
    cfg.caches[1] = l2
    cfg.sm_count = 4
    cfg.validate()
    assert l2.slice_page_bits == 12
    lines = np.random.default_rng(3).choice(4096, 256, replace=False) * 128
    for sm in range(4):
        res = chase(cfg, footprint=1 << 20, stride=128, order="pattern",
                    pattern=tuple(int(x) for x in lines), warmup=256, record=256, path="cg",
                    sm=sm)
        addr = cfg.base_address + res.index * 4
        sl = l2.slice_of(addr, cfg.base_address)
        assert np.array_equal(res.latency, np.array(SLICED["slice_latency"][sm % 2])[sl])
        assert len(set(sl.tolist())) == 4
        # a kernel delta apart within a page: one slice
        assert np.array_equal(l2.slice_of(addr ^ 0x880, cfg.base_address), sl)
        # the first page as the table says; later pages shifted, not all alike
        table = np.array(TABLE_SLICED["slice_table"])
        first = res.index * 4 < 4096
        assert first.any() and np.array_equal(
            sl[first], table[class_index(addr[first], [0x880], 7, 12)])
        plain = table[class_index(addr, [0x880], 7, 12)]
        assert (sl != plain).mean() > 0.3
    # with the table's buffer named, a chain over a buffer of another size starts elsewhere
    homed = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu", translate=True,
                       slice_footprint=1 << 19, **TABLE_SLICED)
    cfg.caches[1] = homed
    cfg.validate()
    first = tuple(int(x) for x in np.arange(32) * 128)  # the first page's 32 lines
    seen = {}
    for fp in (1 << 19, 1 << 20):
        res = chase(cfg, footprint=fp, stride=128, order="pattern", pattern=first, warmup=32,
                    record=32, path="cg", sm=0)
        addr = cfg.base_address + res.index * 4
        sl = homed.slice_of(addr, cfg.base_address, fp)
        assert np.array_equal(res.latency, np.array(SLICED["slice_latency"][0])[sl])
        seen[fp] = sl
    assert np.array_equal(seen[1 << 19], table[class_index(addr, [0x880], 7, 12)])
    assert not np.array_equal(seen[1 << 20], seen[1 << 19])


def test_a_slice_map_is_checked_when_the_config_loads():
    from gpumem.sim.config import SimConfigError

    def bad(**kw):
        cfg = config()
        cfg.caches[1] = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, scope="gpu",
                                   **{**SLICED, **kw})
        with pytest.raises(SimConfigError) as e:
            cfg.validate()
        return str(e.value)

    assert "log2(slices) = 2 masks" in bad(slice_masks=[0x1080])
    assert "independent" in bad(slice_masks=[0x1080, 0x1080])
    assert "inside a line" in bad(slice_masks=[0x1080, 0x40])
    assert "one row per SM" in bad(slice_latency=[[1.0, 2.0]])
    assert "sm_offsets" in bad(sm_offsets=[1.0])
    assert "need slices > 1" in bad(slices=1)
    # a table in place of masks
    table = {k: v for k, v in TABLE_SLICED.items() if k != "slice_latency"}
    assert "not both" in bad(**table, slice_masks=[0x1080, 0x20500])
    assert "power of two" in bad(**{**table, "slice_table": [0, 1, 2]}, slice_masks=[])
    assert "every slice 0..3" in bad(**{**table, "slice_table": [0, 1] * 8}, slice_masks=[])
    assert "every slice 0..3" in bad(**{**table, "slice_table": [0, 1, 2, 4] * 4},
                                     slice_masks=[])
    assert "reduced basis" in bad(**{**table, "slice_kernel": [0x40]}, slice_masks=[])
    assert "reduced basis" in bad(**{**table, "slice_kernel": [0x880, 0x80]}, slice_masks=[])
    assert "reduced basis" in bad(**{**table, "slice_kernel": [1 << 13]}, slice_masks=[])
    assert "at most 2**27" in bad(**{**table, "slice_kernel": [0x880] + [1 << b for b in
                                                                        range(30, 12, -1)]},
                                  slice_masks=[])
    assert "only with slice_table" in bad(slice_footprint=1 << 20)
    assert "power of two" in bad(slices=3, slice_masks=[0x1080, 0x20500],
                                 slice_latency=[[1.0] * 3])


def test_a_share_of_far_hits_is_slow_and_no_near_hit_is():
    """A partitioned level with ``far_slow_share``: that share of the hits in another
    partition costs ``far_slow_latency`` (drawn per recorded access, from the chase's noise
    seed), every other far hit ``far_latency`` and every hit in the SM's own partition
    ``hit_latency``, the SM's offset added to each."""
    l2 = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu", translate=True,
                    partitions=2, partition_masks=[0x1540], far_latency=300.0,
                    sm_offsets=[0.0, 3.0], far_slow_share=0.25, far_slow_latency=700.0)
    cfg = config()
    cfg.caches[1] = l2
    cfg.sm_count = 2
    cfg.validate()
    draws = []
    for sm in (0, 1):
        res = chase(cfg, footprint=512 << 10, stride=128, order="random", warmup=4096,
                    record=4096, path="cg", sm=sm, seed=sm)
        off = 3.0 * sm
        home = np.array([bin(int(a) & 0x1540).count("1") & 1 for a in
                                           cfg.base_address + res.index * 4])
        near = home == sm  # sm_partition unset: SM s of 2 is near partition s
        assert set(res.latency[near].tolist()) == {L2_HIT + off}
        far = res.latency[~near]
        assert set(far.tolist()) == {300.0 + off, 700.0 + off}
        share = float(np.mean(far == 700.0 + off))
        assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / far.size), share
        draws.append(far == 700.0 + off)
    assert not np.array_equal(draws[0][:500], draws[1][:500])  # another seed, other draws


def test_slow_far_hits_are_checked_when_the_config_loads():
    from gpumem.sim.config import SimConfigError

    def bad(**kw):
        cfg = config()
        cfg.caches[1] = CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, scope="gpu", **kw)
        with pytest.raises(SimConfigError) as e:
            cfg.validate()
        return str(e.value)

    part = dict(partitions=2, far_latency=300.0)
    assert "only a partitioned level" in bad(far_slow_share=0.1, far_slow_latency=500.0)
    assert "go together" in bad(far_slow_share=0.1, **part)
    assert "go together" in bad(far_slow_latency=500.0, **part)
    assert ">= far_latency" in bad(far_slow_share=0.1, far_slow_latency=250.0, **part)
    assert "slice_latency" in bad(far_slow_share=0.1, far_slow_latency=500.0,
                                  **{**part, **SLICED})
    assert "must be in [0, 1)" in bad(far_slow_share=1.0, far_slow_latency=500.0, **part)


def _planted_configs():
    gpu = dict(scope="gpu", translate=True)
    tlbs = [TlbLevel("tlb_l1", 64 << 10, 16, 16, 10.0),
            TlbLevel("tlb_l2", 64 << 10, 64, 8, 40.0, policy="random")]
    yield "lru", [CacheLevel("l1d", 16384, 128, 4, L1_HIT, sector=32),
                  CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, **gpu)], tlbs
    yield "fifo_random", [CacheLevel("l1d", 16384, 128, 8, L1_HIT, policy="fifo"),
                          CacheLevel("l2", 1 << 20, 64, 8, L2_HIT, policy="random", **gpu)], tlbs
    yield "weighted_parts", [
        CacheLevel("l1d", 8192, 128, 4, L1_HIT, policy="weighted", way_weights=[5, 1, 2, 1]),
        CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, partitions=2,
                   partition_masks=[0x1540], far_latency=300.0, sm_offsets=[0.0, 3.0],
                   far_slow_share=0.2, far_slow_latency=450.0, **gpu)
    ], tlbs
    yield "xor_table_unequal", [
        CacheLevel("l1d", 16384, 128, 4, L1_HIT,
                   index=SetIndex("xor", masks=[0x880, 0x1100, 0x2200, 0x4400, 0x8800])),
        CacheLevel("l2", 52 * 128 * 128, 128, [16, 8, 12, 16] * 128, L2_HIT, **gpu),
    ], [TlbLevel("tlb_l1", 64 << 10, 24, [4, 8, 12], 7.0, policy="fifo",
                 index=SetIndex("table", table=[2, 0, 1, 1, 0]))]
    yield "bits", [CacheLevel("l1d", 512, 32, 4, L1_HIT, index=SetIndex("bits", bits=[7, 8])),
                   CacheLevel("l2", 1 << 19, 128, 32, L2_HIT, **gpu)], tlbs
    yield "sliced", [CacheLevel("l1d", 16384, 128, 4, L1_HIT, sector=32),
                     CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, partitions=2,
                                partition_masks=[0x1080], far_latency=300.0, **SLICED, **gpu)
                     ], tlbs
    yield "table_sliced", [CacheLevel("l1d", 16384, 128, 4, L1_HIT, sector=32),
                           CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32,
                                      slice_footprint=3 << 20, **TABLE_SLICED, **gpu)], tlbs


@pytest.mark.parametrize("name,caches,tlbs", list(_planted_configs()),
                         ids=[c[0] for c in _planted_configs()])
def test_simd_set_scans_match_the_one_way_at_a_time_reference(name, caches, tlbs):
    """The kernel looks sets of 4, 8 and 16 ways up with vector compares and prefetches big
    levels' sets ahead; ``scalar=True`` scans one way at a time as the kernel always did. Every
    latency, index, level, the final way state and the replacement streams must agree, over
    cold and carried-over state, all orders and several footprints."""
    from gpumem.sim import engine

    cfg = SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=4, clock_mhz=1000.0,
        caches=caches, paths={"ca": ["l1d", "l2"], "cg": ["l2"]}, tlbs=tlbs, dram=Dram(DRAM),
        timer=Timer(overhead=3.0, jitter=1.0, outlier_rate=0.01, outlier_cycles=100.0),
    ).validate()
    runs = []
    for scalar in (False, True):
        h, ids = engine.compile_hierarchy(cfg, 1)
        outs = []
        for i, (fp, order, stride, path) in enumerate([
                (12 << 10, "sequential", 32, "ca"), (3 << 20, "random", 128, "ca"),
                (3 << 20, "random", 64, "cg"), (1 << 20, "scattered", 256, "ca"),
                (2 << 20, "pattern", 128, "ca"), (64 << 20, "random", 128, "ca"),
                (16 << 10, "sequential", 128, "ca")]):
            pattern = ()
            if order == "pattern":
                pattern = tuple(int(x) * 4 for x in dict.fromkeys(
                    np.random.default_rng(i).integers(0, fp // 4, 300).tolist()))
            engine.reseed(h, 1, i)
            outs.append(engine.simulate_chase(
                h, np.array([ids[n] for n in cfg.paths[path]], np.int64), len(cfg.caches),
                len(cfg.tlbs), DRAM, base=cfg.base_address, footprint=fp, stride=stride,
                page_walk=4.0, sm=i % 4, sm_count=4, element=4, order=order, seed=i,
                warmup=20000, record=3000, overhead=3.0, jitter=1.0, outlier_rate=0.01,
                outlier_cycles=100.0, noise_seed=i, pattern=pattern, scalar=scalar))
            outs.append((h.way.copy(), h.rng.copy(), h.clock.copy()))
        runs.append(outs)
    for fast, ref in zip(*runs, strict=True):
        for a, b in zip(fast, ref, strict=True):
            assert np.array_equal(a, b)


def _specialised_configs():
    yield from _planted_configs()
    yield "lru_no_tlb", [CacheLevel("l1d", 16384, 128, 4, L1_HIT, sector=32),
                         CacheLevel("l2", 1 << 20, 128, 16, L2_HIT, sector=32, scope="gpu",
                                    translate=True)], []
    yield "scalar_ways_fifo", [  # 3-, 6- and 96-way sets take the one-way-at-a-time scan
        CacheLevel("l1d", 96 * 32 * 4, 32, 96, L1_HIT, policy="fifo",
                   index=SetIndex("bits", bits=[5, 6])),
        CacheLevel("l2", 3 * 128 * 1024, 128, 3, L2_HIT, policy="random", scope="gpu",
                   translate=True),
    ], [TlbLevel("tlb_l1", 64 << 10, 12, 6, 9.0, policy="weighted",
                 way_weights=[1, 4, 1, 2, 1, 1])]


@pytest.mark.parametrize("name,caches,tlbs", slow_beyond(
    _specialised_configs(), keep=["lru", "bits"], ids=[c[0] for c in _specialised_configs()]))
def test_path_specialised_kernel_matches_the_generic_one(name, caches, tlbs, monkeypatch):
    """Long chases run a kernel generated for their path (levels unrolled, each level's
    geometry, policy and index function as literals). Every latency, index, level, the final
    way state, replacement streams and clock must equal the generic kernel's and the scalar
    reference's, over all orders, both paths, several SMs and state carried over calls."""
    from gpumem.sim import engine, specialise

    cfg = SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=4, clock_mhz=1000.0,
        caches=caches, paths={"ca": ["l1d", "l2"], "cg": ["l2"]}, tlbs=tlbs, dram=Dram(DRAM),
        timer=Timer(overhead=3.0, jitter=1.0, outlier_rate=0.01, outlier_cycles=100.0),
    ).validate()
    chases = [(12 << 10, "sequential", 32, "ca"), (3 << 20, "random", 128, "ca"),
              (3 << 20, "random", 64, "cg"), (1 << 20, "scattered", 256, "ca"),
              (2 << 20, "pattern", 128, "ca"), (64 << 20, "random", 128, "ca"),
              (16 << 10, "sequential", 128, "cg"), (1 << 30, "sequential", 4096, "ca")]
    runs = []
    for mode in ("specialised", "generic", "scalar"):
        monkeypatch.setattr(engine, "SPECIALISE_MIN", 0 if mode == "specialised" else 1 << 62)
        monkeypatch.setattr(specialise, "COMPILE_AFTER", 0)
        h, ids = engine.compile_hierarchy(cfg, 1)
        outs = []
        for i, (fp, order, stride, path) in enumerate(chases):
            pattern = ()
            if order == "pattern":
                pattern = tuple(int(x) * 4 for x in dict.fromkeys(
                    np.random.default_rng(i).integers(0, fp // 4, 300).tolist()))
            engine.reseed(h, 1, i)
            path_ids = np.array([ids[n] for n in cfg.paths[path]], np.int64)
            outs.append(engine.simulate_chase(
                h, path_ids, len(cfg.caches), len(cfg.tlbs), DRAM, base=cfg.base_address,
                footprint=fp, stride=stride, page_walk=4.0, sm=i % 4, sm_count=4,
                element=8 if i % 3 == 2 else 4, order=order, seed=i, warmup=20000,
                record=3000, overhead=3.0, jitter=1.0, outlier_rate=0.01,
                outlier_cycles=100.0, noise_seed=i, pattern=pattern,
                scalar=mode == "scalar"))
            outs.append((h.way.copy(), h.rng.copy(), h.clock.copy()))
            if mode == "specialised":  # it did run the generated kernel
                assert specialise.key_of(h, path_ids, len(cfg.caches),
                                         len(cfg.tlbs)) in specialise._CACHE
        runs.append(outs)
    for spec, generic, scalar in zip(*runs, strict=True):
        for a, b, c in zip(spec, generic, scalar, strict=True):
            assert np.array_equal(a, b) and np.array_equal(a, c)


def test_division_free_set_index_is_exact():
    from gpumem.sim.engine import _divider

    rng = np.random.default_rng(0)
    for d in (2, 3, 7, 64, 512, 15360, 30720, 1000003, (1 << 32) - 1):
        m, s = _divider(d)
        m &= (1 << 64) - 1
        for n in [0, 1, d - 1, d, d + 1, (1 << 63) - 1, (1 << 63) - d,
                  *(int(x) >> int(b) for x, b in zip(rng.integers(0, 1 << 63, 500, dtype=np.int64),
                                                     rng.integers(0, 62, 500), strict=True))]:
            assert ((n * m) >> 64) >> s == n // d
    assert _divider(1) == (0, -1)


def test_both_kernels_are_written_by_the_same_model_fragments(monkeypatch):
    """The cache model (set index, scans, victim, fill, hit latency, chain, timer noise) is
    written once, in gpumem.sim.model: the generic kernel and every path's kernel are that
    module's output, built from the same fragments, and no other sim module holds a kernel."""
    import ast
    from pathlib import Path

    from gpumem.sim import engine, model, specialise

    fragments = ("set_index", "lookup", "hit_latency", "_touch", "_fill", "_draw", "_pick",
                 "_scan_simd", "_scan_scalar", "_chain_chunk", "_record")
    used: set[str] = set()

    def spy(name, fn):
        def called(*args, **kwargs):
            used.add(name)
            return fn(*args, **kwargs)
        return called

    for name in fragments:
        monkeypatch.setattr(model, name, spy(name, getattr(model, name)))
    generic = model.source()
    assert used == set(fragments)
    by_spec: set[str] = set()
    for _, caches, tlbs in _specialised_configs():
        cfg = SimConfig(name="t", arch="t", compute_capability="9.0", sm_count=4,
                        clock_mhz=1000.0, caches=caches, paths={"ca": ["l1d", "l2"]},
                        tlbs=tlbs, dram=Dram(DRAM)).validate()
        h, ids = engine.compile_hierarchy(cfg, 1)
        key = specialise.key_of(h, np.array([ids["l1d"], ids["l2"]]), 2, len(cfg.tlbs))
        used.clear()
        assert specialise._source(key)[1] == model.source(*key)
        by_spec |= used
    assert by_spec == set(fragments)
    assert specialise._source(specialise.GENERIC)[1] == generic
    for mod in (engine, specialise):  # no Numba-compiled function outside the generated source
        tree = ast.parse(Path(mod.__file__).read_text())
        decorated = [ast.unparse(d) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                     for d in f.decorator_list]
        assert not [d for d in decorated if "njit" in d or "jit" in d], mod.__name__


def test_no_import_cycle_between_sim_modules():
    """engine -> specialise -> model; the generated kernels import only primitives. Lazy
    imports inside functions count: a cycle there still makes module state depend on the
    order of first use."""
    import ast
    from pathlib import Path

    import gpumem.sim
    from gpumem.sim import model

    folder = Path(gpumem.sim.__file__).parent
    sources = {p.stem: p.read_text() for p in folder.glob("*.py")}
    sources["<generated>"] = model.source()
    graph: dict[str, set[str]] = {}
    for name, text in sources.items():
        deps = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            for m in mods:
                if m.startswith("gpumem.sim.") and m.split(".")[2] in sources:
                    deps.add(m.split(".")[2])
    assert graph["<generated>"] == {"primitives"}
    assert graph["model"] == set() and graph["primitives"] == set()
    assert "engine" not in graph["specialise"]

    def visit(node: str, stack: list[str]) -> None:
        assert node not in stack, " -> ".join(stack + [node])
        for dep in graph.get(node, ()):
            visit(dep, stack + [node])

    for name in graph:
        visit(name, [])
