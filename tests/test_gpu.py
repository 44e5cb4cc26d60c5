"""On a CUDA GPU (skipped elsewhere): the CUDA device's probes do what the contract says."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.contracts.chains import chain_array, permutation_params
from gpumem.contracts.device import BulkRequest, ChaseRequest, DsmemRequest
from gpumem.contracts.errors import DeviceUnavailable
from gpumem.plugin.registry import get_plugins

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_device():
    from gpumem.cuda.backend import CudaBackend

    backend = CudaBackend()
    found = backend.discover()
    if not found.devices:
        pytest.skip(f"no CUDA device: {found.message}")
    try:
        dev = backend.open(0, "hopper", get_plugins().kernel_lookup("hopper"))
    except DeviceUnavailable as e:
        pytest.skip(str(e))
    yield dev
    dev.close()


def test_device_properties_are_read(cuda_device):
    info = cuda_device.info
    assert info.sm_count > 0 and info.l2_bytes > 0 and info.memory_bytes > 0
    assert info.clock_mhz > 0 and "." in info.compute_capability


@pytest.mark.parametrize("order", ["sequential", "random", "scattered"])
def test_small_chase_hits_l1_and_ends_where_the_chain_says(cuda_device, order):
    res = cuda_device.pointer_chase(ChaseRequest(footprint=16384, stride=128, record=256,
                                                 warmup=128, order=order, seed=3))
    assert res.end_ok
    lat = res.latency - res.timer_overhead
    assert 10 <= np.median(lat) <= 80, np.median(lat)   # an L1 hit: tens of cycles
    assert res.timer_overhead < 40


def test_a_chase_behind_each_placement_pad_ends_where_the_chain_says(cuda_device):
    from gpumem.contracts.device import PLACEMENT_PADS

    for k in range(len(PLACEMENT_PADS)):
        res = cuda_device.pointer_chase(ChaseRequest(footprint=4 << 20, stride=128,
                                                     record=256, warmup=1 << 15, placement=k))
        assert res.end_ok, k


def test_large_chase_is_slower_than_small(cuda_device):
    small = cuda_device.pointer_chase(ChaseRequest(footprint=16384, stride=128, record=256,
                                                   warmup=128))
    big = cuda_device.pointer_chase(ChaseRequest(footprint=1 << 30, stride=128, record=256,
                                                 warmup=1024, order="random"))
    assert big.end_ok
    assert np.median(big.latency) > 5 * np.median(small.latency)


def test_device_built_random_chain_matches_numpy(cuda_device):
    import cupy as cp

    mod = cuda_device._module("pointer_chase")
    footprint, stride = 1 << 20, 32
    lines = footprint // stride
    arr = cp.zeros(footprint // 4, dtype=cp.uint32)
    bits, k0, k1, k2, k3, _ = permutation_params(lines, 5)
    mod.get_function("chain_random")(
        (64,), (256,), (arr, np.uint64(lines), np.uint64(stride // 4), np.int32(bits),
                        np.uint64(k0), np.uint64(k1), np.uint64(k2), np.uint64(k3)))
    assert (arr.get() == chain_array(footprint, stride, "random", 5)).all()


def test_device_built_scattered_chain_matches_numpy(cuda_device):
    import cupy as cp
    from gpumem.contracts.chains import scatter_key

    mod = cuda_device._module("pointer_chase")
    footprint, stride = 3 << 20, 512
    arr = cp.zeros(footprint // 4, dtype=cp.uint32)
    mod.get_function("chain_scattered")(
        (64,), (256,), (arr, np.uint64(footprint // stride), np.uint64(stride // 4),
                        np.uint64(scatter_key(5))))
    assert (arr.get() == chain_array(footprint, stride, "scattered", 5)).all()


def test_dsmem_remote_loads_are_slower_than_own_block_loads(cuda_device):
    if "dsmem" not in cuda_device.probes:
        pytest.skip("distributed shared memory needs sm_90")
    own = cuda_device.dsmem(DsmemRequest(cluster=2, distance=0))
    remote = cuda_device.dsmem(DsmemRequest(cluster=2, distance=1))
    assert 10 < own.latency < remote.latency < 2000, (own, remote)
    bw = cuda_device.dsmem(DsmemRequest(cluster=4, distance=1, kind="throughput", warps=32,
                                        ilp=4))
    assert 1 < bw.bytes_per_cycle <= 256, bw


def test_bulk_copies_move_what_they_report(cuda_device):
    if "bulk_copy" not in cuda_device.probes:
        pytest.skip("bulk copies need sm_90")
    small = cuda_device.bulk_copy(BulkRequest(footprint=256 << 20, chunk=1024, stages=1))
    big = cuda_device.bulk_copy(BulkRequest(footprint=256 << 20, chunk=16384, stages=4))
    assert small.bytes >= 256 << 20 and big.bytes >= 256 << 20
    # more bytes in flight per SM: more bandwidth (Little's law), never above the peak
    assert small.gbs < big.gbs <= 1.02 * cuda_device.info.peak_bandwidth_gbs, (small, big)


def test_provenance_has_clocks_and_throttle_reasons(cuda_device):
    cuda_device.pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16))
    prov = cuda_device.provenance()
    assert "nvml_sm_clock_mhz" in prov and "nvml_clock_event_reasons" in prov
    assert prov["kernel_carveout_ca_percent"] == 0  # the largest L1 was asked for


def test_stream_read_write_copy(cuda_device):
    from gpumem.contracts.device import StreamRequest

    sms = cuda_device.info.sm_count
    fp = 8 * cuda_device.info.l2_bytes
    res = {k: cuda_device.stream(StreamRequest(footprint=fp, ctas=4 * sms, threads=512, ilp=4,
                                               width=16, kind=k)).gbs
           for k in ("read", "write", "copy")}
    peak = cuda_device.info.peak_bandwidth_gbs
    for kind, gbs in res.items():
        assert 0.3 * peak < gbs <= 1.05 * peak, (kind, gbs, peak)
    low = cuda_device.stream(StreamRequest(footprint=fp, ctas=sms, threads=64, ilp=1)).gbs
    assert low < res["read"]  # less concurrency, less bandwidth


def test_async_copy_streams(cuda_device):
    from gpumem.contracts.device import StreamRequest

    sms = cuda_device.info.sm_count
    r = cuda_device.async_copy(StreamRequest(footprint=8 * cuda_device.info.l2_bytes,
                                             ctas=4 * sms, threads=256, ilp=4, width=16))
    assert r.gbs > 0.2 * cuda_device.info.peak_bandwidth_gbs


def test_smem_latency_grows_with_conflicts_and_throughput_is_sane(cuda_device):
    from gpumem.contracts.device import SmemRequest

    lat = {s: cuda_device.smem(SmemRequest(stride=s)).latency for s in (1, 2, 32)}
    assert 10 < lat[1] < 60 and lat[1] < lat[2] < lat[32]
    bpc = cuda_device.smem(SmemRequest(stride=1, warps=32, ilp=4, kind="throughput"))
    assert 32 < bpc.bytes_per_cycle <= 160


@pytest.fixture(scope="module")
def kepler_kernels_device():
    """The GPU driven with the kepler plugin's kernels (its texture path runs on any GPU
    from sm_30 on)."""
    from gpumem.cuda.backend import CudaBackend

    backend = CudaBackend()
    if not backend.discover().devices:
        pytest.skip("no CUDA device")
    dev = backend.open(0, "kepler", get_plugins().kernel_lookup("kepler"))
    yield dev
    dev.close()


def test_texture_path_chase(kepler_kernels_device):
    dev = kepler_kernels_device
    assert "tex" in dev.info.load_paths
    small = dev.pointer_chase(ChaseRequest(footprint=8192, stride=32, record=256, warmup=256,
                                           path="tex"))
    big = dev.pointer_chase(ChaseRequest(footprint=256 << 20, stride=128, record=256,
                                         warmup=256, order="random", path="tex", seed=5))
    assert small.end_ok and big.end_ok
    hit = np.median(small.latency - small.timer_overhead)
    miss = np.median(big.latency - big.timer_overhead)
    assert 10 <= hit <= 200 and miss > 3 * hit, (hit, miss)


def test_async_copy_moves_what_it_reports(cuda_device):
    """cp.async with 16 groups in flight cannot beat the HBM's theoretical peak (a first
    version counted 16 elements per iteration where the kernel moved one: '78 TB/s')."""
    from gpumem.contracts.device import StreamRequest

    if "async_copy" not in cuda_device.probes:
        pytest.skip("no cp.async")
    peak = cuda_device.info.peak_bandwidth_gbs or 1e9
    res = cuda_device.async_copy(StreamRequest(
        footprint=8 * cuda_device.info.l2_bytes, ctas=cuda_device.info.sm_count, threads=512,
        ilp=16, width=16, kind="read", work=1 << 30))
    assert 0.2 * peak < res.gbs <= 1.05 * peak, (res.gbs, peak)


def test_every_probe_asks_for_its_carveout(cuda_device):
    """Chases and streams ask for the largest L1, shared-memory probes for the largest
    shared side; the preference read back is recorded in the provenance."""
    from gpumem.contracts.device import SmemRequest, StreamRequest

    cuda_device.stream(StreamRequest(footprint=64 << 20, ctas=cuda_device.info.sm_count,
                                     threads=256, ilp=1, width=16, kind="read"))
    cuda_device.smem(SmemRequest(stride=1, warps=8, ilp=2, kind="throughput"))
    prov = cuda_device.provenance()
    assert prov["kernel_carveout_stream_percent"] in (0, -1)
    assert prov["kernel_carveout_smem_percent"] in (100, -1)


def test_stream_block_order_reads_the_l1_at_most_its_width(cuda_device):
    """Per-block slices that fit the L1 read faster through .ca than .cg, and never above
    128 bytes per clock per SM (Hopper's L1 width) at the device's clock."""
    from gpumem.contracts.device import StreamRequest

    sms = cuda_device.info.sm_count
    req = dict(footprint=sms * 2 * 32 * 1024, ctas=2 * sms, threads=256, ilp=8, width=16,
               order="block", work=4 << 30)
    ca = cuda_device.stream(StreamRequest(**req, path="ca"))
    cg = cuda_device.stream(StreamRequest(**req, path="cg"))
    assert ca.gbs > 1.5 * cg.gbs
    per_clk = ca.gbs * 1e9 / (cuda_device.info.clock_mhz * 1e6) / sms
    assert per_clk <= 128 * 1.02


@pytest.mark.parametrize("order", ["random", "sequential"])
@pytest.mark.parametrize(("path", "walk"), [("cg", {"warm_threads": 1024}),
                                            ("ca", {"warm_ilp": 8})])
def test_a_warm_up_walked_in_parallel_leaves_the_recorded_lines_as_one_thread(
        cuda_device, order, path, walk):
    """ChaseRequest.warm_threads (l2_sm_map's warm-up) and warm_ilp (the ladder's): the
    chase records the same lines, ends where the chain says, and sees them at the same level
    as after a one-thread dependent pass (an L2-resident footprint within the near
    partition: every line near after either; a warm-up that touched other lines would leave
    them in DRAM)."""
    fp = min(cuda_device.info.l2_bytes // 4, 8 << 20) // 128 * 128
    req = ChaseRequest(footprint=fp, stride=128, record=512, warmup=fp // 128, order=order,
                       path=path, seed=11, sm=1)
    one = cuda_device.pointer_chase(req)
    many = cuda_device.pointer_chase(ChaseRequest(**{**req.__dict__, **walk}))
    assert one.end_ok and many.end_ok and one.sm == many.sm == 1
    assert np.array_equal(one.index, many.index)
    a, b = (np.median(r.latency - r.timer_overhead) for r in (one, many))
    assert abs(a - b) <= 0.05 * a, (a, b)
