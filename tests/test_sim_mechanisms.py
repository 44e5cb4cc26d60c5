"""The simulator's mechanisms for what the H200 shows (issue 19, item 2), each with planted
ground truth: L2 lookups per cycle (the ILP drop by address order), plain loads bounded by
their destination registers against cp.async groups, the DRAM's knee, bulk copies (engine
rate, issue interval, their own DRAM ceiling), a hashed and a spread set index, and the distributed
shared memory's rate by cluster size. Defaults change nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gpumem.contracts.device import BulkRequest, DsmemRequest, StreamRequest
from gpumem.sim import CacheLevel, Dram, SharedMemory, SimConfig, Throughput, TlbLevel
from gpumem.sim.config import SPREAD_PAGE, SetIndex, SimConfigError
from gpumem.sim.throughput import bulk_model, dsmem_model, smooth_min, stream_model, warp_sectors

CLOCK = 1000.0  # MHz: 1 byte/cycle = 1 GB/s


def cfg(**kw) -> SimConfig:
    base = dict(
        name="m", arch="m", compute_capability="9.0", sm_count=4, clock_mhz=CLOCK,
        caches=[CacheLevel("l1d", 16384, 128, 4, 30.0, sector=32),
                CacheLevel("l2", 1 << 20, 128, 16, 200.0, sector=32, scope="gpu",
                           translate=True)],
        paths={"ca": ["l1d", "l2"], "cg": ["l2"]},
        tlbs=[TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0)],
        dram=Dram(500.0, bandwidth_gbs=400.0),
        throughput=Throughput(max_warps_per_sm=64, max_ctas_per_sm=16,
                              inflight_sectors_per_sm=1 << 20, sharpness=50.0),
        smem=SharedMemory(size=1 << 17, latency=20.0, remote_latency=200.0,
                          remote_bytes_per_cycle=16.0),
        memory_bytes=1 << 32)
    base.update(kw)
    return SimConfig(**base).validate()


def req(**kw) -> StreamRequest:
    return StreamRequest(**{"footprint": 1 << 28, "ctas": 4, "threads": 1024, "ilp": 1,
                            "width": 16, "path": "cg", "order": "coalesced", "kind": "read",
                            **kw})


def test_lines_per_instruction_by_order():
    """A warp's 16-B loads: coalesced, 4 lines an instruction; per-thread contiguous K = 8,
    each thread its own line (32), and the 8 instructions touch 32 lines between them."""
    assert warp_sectors("coalesced", 16, 8, 128) == (4, 32)
    assert warp_sectors("thread", 16, 8, 128) == (32, 32)
    assert warp_sectors("thread", 16, 2, 128) == (8, 8)


def test_l2_lookups_cap_per_thread_contiguous_loads_by_their_useful_bytes_per_request():
    """An L2-resident stream with R lookups per cycle: coalesced loads carry 128 useful bytes
    per request, per-thread contiguous K = 8 loads 16: the rate is R x that, not the DRAM's."""
    c = cfg()
    c.level("l2").requests_per_cycle = 2.0
    small = 1 << 18
    thread8 = stream_model(c, req(footprint=small, ilp=8, order="thread"))
    assert thread8.caps["l2.requests"] == pytest.approx(2.0 * 16)
    assert thread8.rate == pytest.approx(2.0 * 16, rel=0.01)
    coalesced = stream_model(c, req(footprint=small, ilp=8))
    assert coalesced.caps["l2.requests"] == pytest.approx(2.0 * 128)
    # past the L2, every line the L2 fills costs one more look-up: 32 fills per 256 requests
    hbm = stream_model(c, req(ilp=8, order="thread"))
    assert hbm.caps["l2.requests"] == pytest.approx(2.0 * 4096 / (256 + 32))
    c.level("l2").fill_lookups = 1.5
    hbm = stream_model(c, req(ilp=8, order="thread"))
    assert hbm.caps["l2.requests"] == pytest.approx(2.0 * 4096 / (256 + 48))


def test_no_lookup_limit_by_default():
    c = cfg()
    assert "l2.requests" not in stream_model(c, req(ilp=8, order="thread")).caps


def test_plain_loads_in_flight_are_bounded_per_thread_cp_async_groups_are_not():
    """loads_per_thread = 2: plain loads keep 2 per thread in flight whatever K; cp.async
    keeps its K groups, so at low occupancy it overtakes plain loads by K / 2."""
    c = cfg(throughput=Throughput(max_warps_per_sm=64, max_ctas_per_sm=16,
                                  inflight_sectors_per_sm=1 << 20, sharpness=50.0,
                                  loads_per_thread=2.0))
    for k in (1, 4, 16):
        plain = stream_model(c, req(threads=128, ilp=k))
        assert plain.inflight_sectors_per_sm == 4 * 2 * 16  # 4 warps x 2 loads x 16 sectors
        copy = stream_model(c, req(threads=128, ilp=k), asynchronous=True)
        assert copy.inflight_sectors_per_sm == 4 * k * 16
        assert copy.demand / plain.demand == pytest.approx(k / 2)


def test_async_latency_lengthens_a_cp_async_round_trip_only():
    base = cfg()
    slow = dataclasses.replace(base, throughput=dataclasses.replace(base.throughput,
                                                                    async_latency=100.0))
    r = req(threads=128, ilp=2)
    assert stream_model(slow, r).latency_cycles == stream_model(base, r).latency_cycles
    assert stream_model(slow, r, asynchronous=True).latency_cycles == pytest.approx(
        stream_model(base, r, asynchronous=True).latency_cycles + 100.0)


def test_the_dram_knee_has_its_own_sharpness():
    """dram.sharpness bends demand against the DRAM's rate only; the other caps keep the
    throughput section's."""
    soft = cfg(dram=Dram(500.0, bandwidth_gbs=400.0, sharpness=2.0))
    m = stream_model(soft, req(threads=128, ilp=4))
    assert m.rate == pytest.approx(smooth_min(m.demand, 400.0, 2.0), rel=1e-9)
    assert stream_model(cfg(), req(threads=128, ilp=4)).rate == pytest.approx(
        smooth_min(m.demand, 400.0, 50.0), rel=1e-9)


def test_bulk_copies_engine_rate_issue_interval_and_their_own_ceiling():
    c = cfg(throughput=Throughput(max_warps_per_sm=64, max_ctas_per_sm=16, sharpness=50.0,
                                  bulk_latency=1000.0, bulk_bytes_per_cycle=32.0,
                                  bulk_issue_cycles=500.0),
            dram=Dram(500.0, bandwidth_gbs=400.0, efficiency=0.9, bulk_efficiency=0.5))
    one = bulk_model(c, BulkRequest(footprint=1 << 26, chunk=1024, stages=1))
    assert one == pytest.approx(4 * 1024 / (1000.0 + 1024 / 32.0), rel=0.01)  # Little
    many = bulk_model(c, BulkRequest(footprint=1 << 26, chunk=1024, stages=8))
    assert many == pytest.approx(4 * 1024 / 500.0, rel=0.02)  # one copy per 500 cycles
    full = bulk_model(c, BulkRequest(footprint=1 << 26, chunk=16384, stages=4, ctas_per_sm=2))
    assert full == pytest.approx(400.0 * 0.5, rel=0.01)  # bulk_efficiency, not efficiency


def test_bulk_copies_bend_at_their_own_knee():
    """dram.bulk_sharpness bends bulk copies' demand against the DRAM's rate, in place of
    dram.sharpness, which the loads keep."""
    def with_knees(**knees: float):
        return cfg(throughput=Throughput(max_warps_per_sm=64, max_ctas_per_sm=16,
                                         sharpness=50.0, bulk_latency=1000.0),
                   dram=Dram(500.0, bandwidth_gbs=400.0, bulk_efficiency=0.5, **knees))
    bulk = BulkRequest(footprint=1 << 26, chunk=16384, stages=2)
    demand = 4 * 2 * 16384 / 1000.0
    both = with_knees(sharpness=2.0)
    own = with_knees(sharpness=2.0, bulk_sharpness=8.0)
    assert bulk_model(both, bulk) == pytest.approx(smooth_min(demand, 200.0, 2.0), rel=1e-9)
    assert bulk_model(own, bulk) == pytest.approx(smooth_min(demand, 200.0, 8.0), rel=1e-9)
    assert stream_model(own, req(threads=128, ilp=4)).rate == \
        stream_model(both, req(threads=128, ilp=4)).rate


def test_the_remote_rate_by_cluster_size():
    c = cfg(smem=SharedMemory(size=1 << 17, latency=20.0, remote_latency=200.0,
                              remote_bytes_per_cycle=16.0,
                              remote_rate_by_cluster=[16.0, 12.0, 14.0]))
    rates = [dsmem_model(c, DsmemRequest(cluster=n, distance=1, kind="throughput",
                                         warps=32, ilp=8))[1] for n in (2, 4, 8)]
    assert rates == pytest.approx([16.0, 12.0, 14.0], rel=0.01)
    with pytest.raises(SimConfigError, match="remote_rate_by_cluster"):
        cfg(smem=SharedMemory(remote_latency=200.0, remote_bytes_per_cycle=16.0,
                              remote_rate_by_cluster=[1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(SimConfigError, match="remote_latency_by_rank"):
        cfg(smem=SharedMemory(remote_latency=200.0, remote_bytes_per_cycle=16.0,
                              remote_latency_by_rank=[200.0] * 8))  # ranks 1-7 only


def test_a_hashed_index_is_balanced_deterministic_and_round_trips_through_toml():
    idx = SetIndex("hashed", seed=3)
    table = idx.hashed_table(421, 1684)
    assert len(table) == 8192 and table == SetIndex("hashed", seed=3).hashed_table(421, 1684)
    counts = [table.count(s) for s in range(421)]
    assert max(counts) - min(counts) <= 1               # every set equally often
    assert table != SetIndex("hashed", seed=4).hashed_table(421, 1684)
    c = cfg()
    c.level("l1d").index = idx
    again = SimConfig.from_toml(c.to_toml())
    assert again.level("l1d").index == idx


def test_a_hashed_l1_overflows_before_its_capacity(tmp_path):
    """Balls in bins: a sequential footprint of 90 % of a 4-way hashed cache already misses
    in the sets the hash loads most; a modulo cache holds it all."""
    from gpumem.contracts.device import ChaseRequest
    from gpumem.sim.device import SimDevice

    def misses(function: str) -> float:
        c = cfg()
        c.level("l1d").index = SetIndex(function)
        dev = SimDevice(c, "m")
        r = dev.pointer_chase(ChaseRequest(footprint=int(16384 * 0.9) // 128 * 128, stride=128,
                                           path="ca", warmup=1024, record=1024))
        return float((r.latency > 100).mean())
    assert misses("modulo") == 0.0
    assert misses("hashed") > 0.05


def test_a_spread_index_scrambles_each_pages_lines_and_round_trips():
    idx = SetIndex("spread", seed=5)
    order = idx.spread_table(128)
    assert sorted(order) == list(range(SPREAD_PAGE // 128))   # a permutation of a page
    assert (order[:64] != range(64)).any()
    assert (order == SetIndex("spread", seed=5).spread_table(128)).all()
    assert (order != SetIndex("spread", seed=6).spread_table(128)).any()
    c = cfg()
    c.level("l2").index = idx
    assert SimConfig.from_toml(c.to_toml()).level("l2").index == idx
    with pytest.raises(SimConfigError, match="spread"):
        cfg(tlbs=[TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0, index=SetIndex("spread"))])


def test_a_spread_l2_overflows_set_by_set_where_modulo_drops_every_recorded_line():
    """Planted: a 16 MB, 16-way L2 (8,192 sets, eight 2 MB pages of lines) chased
    sequentially e lines past its capacity. Indexed modulo, the e extra lines load the sets
    of the chase's first e lines, the very lines a record of the next lap times: all of them
    miss at once. Spread, a line's set is its page's start plus its place in the page's
    scrambled order, modulo the sets: the extra lines overload the sets of their places, and
    a recorded line misses exactly where its own set is one of them, so the record's misses
    rise with e (an H200's L2: half its accesses leave 2-6 % past the knee)."""
    from gpumem.contracts.device import ChaseRequest
    from gpumem.sim.device import SimDevice

    size = 16 << 20

    def record(function: str, extra: int) -> np.ndarray:
        c = cfg(caches=[CacheLevel("l1d", 16384, 128, 4, 30.0, sector=32),
                        CacheLevel("l2", size, 128, 16, 200.0, sector=32, scope="gpu",
                                   translate=True, index=SetIndex(function))])
        lines = size // 128 + extra
        r = SimDevice(c, "m").pointer_chase(ChaseRequest(
            footprint=lines * 128, stride=128, path="cg", warmup=lines, record=1024))
        return np.asarray(r.latency) > 350  # the L2 hits in 200 cycles, DRAM in 500

    idx, sets = SetIndex("spread"), size // 128 // 16
    assert not record("spread", 0).any() and not record("modulo", 0).any()
    shares = []
    for extra in (1310, 3932, 6553, 13107):  # 1, 3, 5 and 10 % past the capacity
        assert record("modulo", extra).all()
        missed = record("spread", extra)
        base = (1 << 40) // 128  # the simulated buffer's first line
        mine = idx.spread_sets(np.arange(base, base + 1024), 128, sets)
        extra_sets = idx.spread_sets(np.arange(base + 16 * sets, base + 16 * sets + extra),
                                     128, sets)
        assert (missed == np.isin(mine, extra_sets)).all()
        shares.append(missed.mean())
    assert shares[0] < 0.25 < shares[1] < 0.55 < shares[2] < 0.8 < shares[3]


def test_a_loop_iterations_cycles_are_shared_by_its_k_plain_loads():
    """iteration_cycles g: a plain load's round trip grows by g / K (the fold and branch of
    an iteration of K loads); writes are posted and cp.async copies pay async_latency."""
    base = cfg()
    looped = dataclasses.replace(base, throughput=dataclasses.replace(
        base.throughput, iteration_cycles=160.0))
    for k in (1, 2, 8):
        r = req(threads=128, ilp=k)
        assert stream_model(looped, r).latency_cycles == pytest.approx(
            stream_model(base, r).latency_cycles + 160.0 / k)
        assert stream_model(looped, r, asynchronous=True).latency_cycles == \
            stream_model(base, r, asynchronous=True).latency_cycles


def test_a_warp_that_overlaps_its_loop_iterations_is_bounded_by_what_it_issues():
    """smem.load_issue_cycles / iteration_cycles: one warp's throughput rate is ILP x 128 B
    over the cycles it spends issuing them (an H200's warp: 20.5 B/cycle at ILP 1, four times
    what ILP loads per 27-cycle latency allow), the SM's banks capping many warps; without
    them, ILP loads in flight per latency, as before."""
    from gpumem.contracts.device import SmemRequest
    from gpumem.sim.throughput import smem_model

    plain = SharedMemory(size=1 << 17, latency=27.0, sharpness=50.0)
    issuing = dataclasses.replace(plain, load_issue_cycles=4.0, iteration_cycles=2.0)
    one = [SmemRequest(stride=1, warps=1, ilp=i, kind="throughput") for i in (1, 2, 8)]
    assert [smem_model(cfg(smem=issuing), r)[1] for r in one] == pytest.approx(
        [128 / 6.0, 256 / 10.0, 1024 / 34.0], rel=1e-3)
    assert [smem_model(cfg(smem=plain), r)[1] for r in one] == pytest.approx(
        [128 / 27.0, 256 / 27.0, 1024 / 27.0], rel=1e-3)
    many = SmemRequest(stride=1, warps=64, ilp=8, kind="throughput")
    assert smem_model(cfg(smem=issuing), many)[1] == pytest.approx(128.0, rel=1e-3)
    latency = SmemRequest(stride=1, warps=1, ilp=1, kind="latency")
    assert smem_model(cfg(smem=issuing), latency)[0] == 27.0
