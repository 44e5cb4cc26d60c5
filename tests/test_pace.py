"""Slow devices: plans sized for them, and priced before they run (gpumem.run.pace)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gpumem.contracts.device import ChaseResult, Device, DeviceInfo
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.cache_structure import CacheStructure
from gpumem.experiments.latency import SLOW_RECORD, LatencyLadder
from gpumem.results.schema import points
from gpumem.run.pace import Estimate, estimate, makespan

L2 = 60 << 20
INFO = DeviceInfo(kind="toy", name="toy", compute_capability="9.0", sm_count=132,
                  l2_bytes=L2, memory_bytes=80 << 30, clock_mhz=1980.0)
SLOW = replace(INFO, cycles_per_second=2000.0)


class PricedDevice(Device):
    """Prices a chase at one second per timed access plus a millisecond per warm-up access;
    refuses footprints past 1 GB as a device would."""

    @property
    def probes(self):
        return frozenset({"pointer_chase"})

    def estimate_seconds(self, request):
        if request.footprint > 1 << 30:
            raise PointSkipped("too large")
        return request.record + request.warmup / 1000

    def pointer_chase(self, request):
        return ChaseResult(np.ones(request.record), np.zeros(request.record, np.int64), 0.0)


def test_makespan_is_the_longest_first_schedule():
    assert makespan([3, 3, 2, 2, 2], 1) == 12
    assert makespan([3, 3, 2, 2, 2], 2) == 7  # longest first: 3+2+2 | 3+2
    assert makespan([3, 3, 2, 2, 2], 16) == 3
    assert makespan([], 4) == 0


def test_the_ladder_on_a_slow_device_is_what_decides_its_findings():
    fast = LatencyLadder().plan(RunContext("hopper", INFO))
    slow = LatencyLadder().plan(RunContext("hopper", SLOW))
    assert "knee_resolution" not in fast.attrs and fast.attrs["placements"] == 4
    assert slow.attrs["record"] == SLOW_RECORD == 64 and slow.attrs["placements"] == 1
    assert slow.attrs["knee_resolution"] == 0.01 and slow.attrs["random_from"] == 2 * L2
    fp = np.array(slow.axes[1].values)
    assert fp.max() == max(8 * L2, 512 << 20)
    assert np.all(np.diff(np.log2(fp)) <= 1.0001)  # an octave apart
    assert fp.size < len(fast.axes[1].values)
    assert LatencyLadder().refine_bound(RunContext("hopper", SLOW)) == 7  # 100 % -> 1 %


def test_the_estimate_prices_every_point_with_the_experiments_own_requests():
    exp, ctx = LatencyLadder(), RunContext("hopper", SLOW)
    plan = exp.plan(ctx)
    pts = points(plan.axes)
    est = estimate(exp, plan, PricedDevice(SLOW, "hopper"), ctx, workers=4)
    assert isinstance(est, Estimate) and len(est.seconds) == len(pts)
    for point, s in zip(pts, est.seconds, strict=True):
        f = int(point["footprint"])
        if point["order"] == "random" and f <= 2 * L2 or f > 1 << 30:
            assert s == 0  # skipped on this device: free
        else:
            warm = min(f // 128, 4 * L2 // 128) if f <= 2 * L2 else \
                min(f // 128, max(8192, 16 * (f // (2 << 20))))
            assert s == pytest.approx(64 + warm / 1000)
    assert est.first_pass_s == pytest.approx(makespan(est.seconds, 4))
    assert est.wall_s == pytest.approx(est.first_pass_s + 7 * max(est.seconds))
    assert "at most 7 refinement rounds" in est.describe() and "4 workers" in est.describe()


def test_what_cannot_be_priced_says_so():
    ctx = RunContext("hopper", SLOW)

    class Unpriced(PricedDevice):
        def estimate_seconds(self, request):
            return None

    exp = LatencyLadder()
    plan = exp.plan(ctx)
    assert estimate(exp, plan, Unpriced(SLOW, "hopper"), ctx, 2) is None
    adaptive = CacheStructure()  # its next probe depends on the last answer
    plan = adaptive.plan(ctx)
    assert estimate(adaptive, plan, PricedDevice(SLOW, "hopper"), ctx, 2) is None


def test_an_experiment_the_device_cannot_run_is_priced_as_skipped():
    from gpumem.contracts.errors import ProbeUnsupported

    class MeansOnly(PricedDevice):
        def estimate_seconds(self, request):
            if request.fine_grained:
                raise ProbeUnsupported("means only")
            return 1.0

    from gpumem.experiments.l2_map import L2SmMap

    exp, ctx = L2SmMap(), RunContext("hopper", SLOW)
    plan = exp.plan(ctx)
    est = estimate(exp, plan, MeansOnly(SLOW, "hopper"), ctx, 2)
    assert est.skipped == "means only" and est.wall_s == 0
    assert est.describe() == "l2_sm_map: will be skipped (means only)"
