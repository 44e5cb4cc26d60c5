"""The driver clears memory gpumem gives back (cudaFree), and DRAM reads some 18 % slower
while it does (an H100: about 3 ms a GiB, benchmarks/dram_scrub.py; ``ilp``'s first repeats
after a footprint change read 11-15 % slow in 17 of 19 committed whole runs). CudaDevice
notes each release and a timed DRAM-resident stream waits the clearing out; nothing else
waits. Checked here with a stand-in for CuPy's pool and events, and a clock."""

from __future__ import annotations

import pytest
from gpumem.cuda import device as cuda_device
from gpumem.cuda.device import CLEAR_BYTES_PER_S, CudaDevice


class Pool:
    def __init__(self) -> None:
        self.cached, self.released = 0, []

    def free_bytes(self) -> int:
        return self.cached

    def free_all_blocks(self) -> None:
        self.released.append(self.cached)
        self.cached = 0


class Event:
    def record(self) -> None:
        pass

    def synchronize(self) -> None:
        pass


class FakeCupy:
    def __init__(self) -> None:
        self.pool = Pool()
        self.cuda = type("cuda", (), {"Event": Event,
                                      "get_elapsed_time": staticmethod(lambda a, b: 2.0)})

    def get_default_memory_pool(self) -> Pool:
        return self.pool


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    slept = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s
    monkeypatch.setattr(cuda_device.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(cuda_device.time, "sleep", sleep)
    return now, slept


def device() -> CudaDevice:
    dev = CudaDevice.__new__(CudaDevice)
    dev.cp, dev._warm, dev._cleared_at = FakeCupy(), set(), 0.0
    dev.clearing_waits, dev.clearing_wait_s = 0, 0.0
    return dev


def test_a_dram_stream_after_a_release_waits_for_the_clearing(clock):
    now, slept = clock
    dev = device()
    dev.cp.pool.cached = 3 << 30  # a footprint's buffers, back in the pool
    dev._release()
    assert dev.cp.pool.released == [3 << 30]
    launches = []
    assert dev._time(lambda: launches.append(now[0]), "k", dram=True) == 0.002
    want = (3 << 30) / CLEAR_BYTES_PER_S
    assert slept == [pytest.approx(want)] and dev.clearing_waits == 1
    assert dev.clearing_wait_s == pytest.approx(want)
    assert launches == [100.0, pytest.approx(100.0 + want)]  # warm-up at once, timed after


def test_nothing_waits_without_a_release_or_for_a_cache_resident_stream(clock):
    _now, slept = clock
    dev = device()
    dev._release()  # nothing in the pool: nothing to clear
    dev._time(lambda: None, "k", dram=True)
    dev.cp.pool.cached = 1 << 30
    dev._release()
    dev._time(lambda: None, "k", dram=False)
    assert slept == [] and dev.clearing_waits == 0


def test_releases_queue_and_time_already_past_counts(clock):
    now, slept = clock
    dev = device()
    for _ in range(2):
        dev.cp.pool.cached = 1 << 30
        dev._release()
    one = (1 << 30) / CLEAR_BYTES_PER_S
    now[0] += one / 2  # half the first clearing went by in other work
    dev._time(lambda: None, "k", dram=True)
    assert slept == [pytest.approx(1.5 * one)]
    dev._time(lambda: None, "k", dram=True)  # cleared: no second wait
    assert len(slept) == 1


def test_each_point_records_the_wait_so_far(clock):
    dev = device()
    dev.nvml = type("Nvml", (), {"quick": staticmethod(lambda: {"sm_clock_mhz": 1980.0})})()
    assert dev.point_state() == {"sm_clock_mhz": 1980.0, "clearing_wait_s": 0.0}
    dev.cp.pool.cached = 3 << 30
    dev._release()
    dev._time(lambda: None, "k", dram=True)
    assert dev.point_state()["clearing_wait_s"] == pytest.approx((3 << 30) / CLEAR_BYTES_PER_S,
                                                                  abs=1e-6)
