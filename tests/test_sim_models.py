"""Planted ground truth for the simulator's bandwidth, shared-memory, partition and page-walk
models: the probe results equal the closed-form predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpumem.contracts.device import ChaseRequest, SmemRequest, StreamRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.sim import CacheLevel, Dram, SharedMemory, SimConfig, Throughput, TlbLevel
from gpumem.sim.device import SimDevice
from gpumem.sim.throughput import bank_conflict_ways, smooth_min, warp_sectors

CLOCK = 1000.0  # MHz: 1 byte/cycle = 1 GB/s


def cfg(**kw) -> SimConfig:
    base = dict(
        name="m", arch="m", compute_capability="9.0", sm_count=4, clock_mhz=CLOCK,
        caches=[CacheLevel("l1d", 16384, 128, 4, 30.0, sector=32),
                CacheLevel("l2", 1 << 20, 128, 16, 200.0, sector=32, scope="gpu",
                           translate=True, bandwidth=0.0)],
        paths={"ca": ["l1d", "l2"], "cg": ["l2"]},
        tlbs=[TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0)],
        dram=Dram(500.0, bandwidth_gbs=400.0),
        throughput=Throughput(max_warps_per_sm=64, max_ctas_per_sm=16,
                              inflight_sectors_per_sm=4096,
                              inflight_async_sectors_per_sm=8192,
                              sharpness=50.0),
        smem=SharedMemory(latency=20.0, conflict_cycles=3.0, modes=[4, 8]),
        memory_bytes=1 << 32)
    base.update(kw)
    return SimConfig(**base).validate()


def gbs(dev, **kw) -> float:
    return dev.stream(StreamRequest(**{"footprint": 1 << 28, "path": "cg", **kw})).gbs


def test_littles_law_then_the_dram_cap():
    """demand = SMs x min(warps x ILP x sectors, limit) x 32 B / latency; rate = smin(demand, cap)"""
    dev = SimDevice(cfg(), "m")
    for ctas, threads, ilp in [(1, 32, 1), (4, 64, 1), (4, 256, 2), (8, 1024, 8)]:
        warps = min(16, -(-ctas // 4)) * threads // 32
        inflight = min(warps * ilp * 4, 4096)        # 4-byte loads: 4 sectors per warp load
        demand = min(ctas, 4) * inflight * 32 / 500.0
        want = smooth_min(demand, 400.0, 50.0)         # bytes/cycle = GB/s at 1000 MHz
        assert gbs(dev, ctas=ctas, threads=threads, ilp=ilp) == pytest.approx(want, rel=1e-9)


def test_bandwidth_rises_with_concurrency_and_saturates_at_the_cap():
    dev = SimDevice(cfg(), "m")
    curve = [gbs(dev, ctas=c, threads=t, ilp=i) for c in (1, 2, 4) for t in (32, 128)
             for i in (1, 2)]
    assert curve[0] < curve[-1]
    assert all(b >= a * 0.999 for a, b in zip(curve[::2], curve[1::2], strict=False))  # more ILP never hurts
    top = gbs(dev, ctas=64, threads=1024, ilp=8)
    assert 0.98 * 400 <= top <= 400


def test_l2_resident_stream_uses_l2_latency_and_cap():
    c = cfg()
    c.level("l2").bandwidth = 100.0
    dev = SimDevice(c, "m")
    small = gbs(dev, footprint=1 << 19, ctas=64, threads=1024, ilp=8)
    assert small == pytest.approx(100.0, rel=0.01)     # L2 cap, not DRAM's 400
    low = gbs(dev, footprint=1 << 19, ctas=1, threads=32, ilp=1)
    assert low == pytest.approx(4 * 32 / 200.0, rel=1e-6)  # 4 sectors in flight, L2 latency


def test_per_thread_contiguous_wide_loads_waste_l2_sectors():
    assert warp_sectors("coalesced", 16, 4) == (16, 64)
    assert warp_sectors("thread", 16, 4) == (32, 64)   # each instruction spans 2 KB for 512 B
    c = cfg()
    c.level("l2").bandwidth = 100.0
    dev = SimDevice(c, "m")
    co = gbs(dev, footprint=1 << 19, ctas=64, threads=1024, ilp=4, width=16)
    th = gbs(dev, footprint=1 << 19, ctas=64, threads=1024, ilp=4, width=16, order="thread")
    assert th == pytest.approx(co / 2, rel=0.01)       # twice the L2 traffic for the same bytes


def test_async_copy_gets_more_in_flight():
    dev = SimDevice(cfg(throughput=Throughput(inflight_sectors_per_sm=64,
                                              inflight_async_sectors_per_sm=128)), "m")
    kw = dict(footprint=1 << 28, ctas=4, threads=256, ilp=4, width=16, path="cg")
    plain = dev.stream(StreamRequest(**kw)).gbs
    asyn = dev.async_copy(StreamRequest(**kw)).gbs
    assert asyn == pytest.approx(2 * plain, rel=1e-3)  # limit 128 vs 64 sectors per SM


def test_write_and_copy_are_capped_by_dram():
    c = cfg(dram=Dram(500.0, bandwidth_gbs=400.0, write_efficiency=0.5))
    dev = SimDevice(c, "m")
    assert gbs(dev, ctas=64, threads=1024, kind="write") == pytest.approx(200.0, rel=1e-6)
    copy = dev.stream(StreamRequest(footprint=1 << 28, ctas=64, threads=1024, ilp=8,
                                    kind="copy"))
    assert copy.bytes == 2 << 28
    assert copy.gbs == pytest.approx(400.0 / (0.5 + 0.5 / 0.5), rel=0.01)


def test_impossible_launches_are_skipped():
    dev = SimDevice(cfg(), "m")
    with pytest.raises(PointSkipped, match="exceed the limit"):
        gbs(dev, ctas=1, threads=2048)
    with pytest.raises(PointSkipped, match="shared memory per CTA"):
        dev.async_copy(StreamRequest(footprint=1 << 28, ctas=1, threads=1024, ilp=16,
                                     width=16))


@pytest.mark.parametrize("stride", range(0, 65, 2))
def test_bank_conflicts_follow_the_gcd_rule_and_broadcast(stride):
    want = 1 if stride == 0 else math.gcd(stride, 32)
    assert bank_conflict_ways(stride, 4, 4, 32) == want


def test_eight_byte_mode_and_the_latency_rule():
    dev = SimDevice(cfg(), "m")
    assert bank_conflict_ways(6, 4, 8, 32) == 1      # Kepler: stride 6 is conflict-free in 8 B
    assert bank_conflict_ways(4, 4, 8, 32) == 2
    r = dev.smem(SmemRequest(stride=32))
    assert r.latency == 20.0 + 3.0 * 31
    capped = SimDevice(cfg(smem=SharedMemory(latency=20.0, conflict_cycles=3.0,
                                             conflict_cap=8)), "m")
    assert capped.smem(SmemRequest(stride=32)).latency == 20.0 + 3.0 * 7
    with pytest.raises(PointSkipped, match="8-byte bank mode"):
        capped.smem(SmemRequest(stride=1, bank_mode=8))


def test_smem_throughput_littles_law_and_bank_limit():
    dev = SimDevice(cfg(), "m")
    one = dev.smem(SmemRequest(stride=1, warps=1, ilp=1, kind="throughput"))
    assert one.bytes_per_cycle == pytest.approx(128 / 20.0, rel=1e-3)
    many = dev.smem(SmemRequest(stride=1, warps=32, ilp=4, kind="throughput"))
    assert many.bytes_per_cycle == pytest.approx(128.0, rel=0.01)
    conflicted = dev.smem(SmemRequest(stride=2, warps=32, ilp=4, kind="throughput"))
    assert conflicted.bytes_per_cycle == pytest.approx(64.0, rel=0.01)


def test_mean_chase_is_the_mean_of_the_fine_grained_one():
    dev = SimDevice(cfg(), "m")
    kw = dict(footprint=1 << 16, stride=128, record=500, warmup=512, order="random", seed=2)
    fine = dev.pointer_chase(ChaseRequest(**kw))
    mean = dev.pointer_chase(ChaseRequest(**kw, fine_grained=False))
    assert mean.latency.shape == (1,) and mean.mean == pytest.approx(fine.mean)


def test_partitions_and_sm_offsets():
    """Two L2 partitions homed by address bit 7; SMs 0-1 are near partition 0, 2-3 near 1."""
    l2 = CacheLevel("l2", 1 << 20, 128, 16, 200.0, scope="gpu", translate=True, partitions=2,
                    partition_masks=[1 << 7], far_latency=300.0, sm_offsets=[0.0, 5.0])
    dev = SimDevice(cfg(caches=[l2], paths={"cg": ["l2"]}), "m")
    kw = dict(footprint=4096, stride=128, warmup=32, record=64, path="cg")
    sm0 = dev.pointer_chase(ChaseRequest(**kw, sm=0))
    lines = sm0.index * 4 // 128
    want0 = np.where(lines % 2 == 0, 200.0, 300.0)
    assert np.array_equal(sm0.latency, want0)
    sm3 = dev.pointer_chase(ChaseRequest(**kw, sm=3))
    assert np.array_equal(sm3.latency, np.where(lines % 2 == 1, 205.0, 305.0))


def test_page_walk_is_paid_when_every_tlb_misses():
    c = cfg(page_walk_latency=100.0)
    dev = SimDevice(c, "m")
    stride = (2 << 20) + 128  # a new page and a new L2 set each access
    res = dev.pointer_chase(ChaseRequest(footprint=40 * stride, stride=stride, warmup=40,
                                         record=40, path="cg"))
    assert set(res.latency) == {200.0 + 10.0 + 100.0}  # L2 hit, L1 TLB (16) miss + walk
