"""A single L2 whose misses ramp is read at the half crossing of its miss share (issue 45).

Accel-Sim's TITAN X draws each line's L2 slice at random, so a (slice, set) holds a binomial
number of a footprint's lines and the sets overflow one by one: misses ramp from about half
the capacity to 1.7 of it (tests/data/accelsim/runs/README.md). The knee is the fullest of
the sets the recorded lines sample; the half crossing, where the middle set overflows, is
the capacity. Synthetic ladders below: that ramp (a set of W = 16 ways holds 1 + Poisson(16 f)
lines at a footprint of f capacities), as one mean per point (Accel-Sim) and per access; a
modulo-indexed cache, whose misses all come within 1 + 1/W of its size (its knee stays the
reading); and an L2 of two partitions (its far plateau stays a level).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.latency import RAMP_RECORD, SLOW_RECORD, LatencyLadder, footprint_grid

C = 3 << 20
L2, DRAM = 131.89, 244.89
WAYS = 16


def _random_sets(f: float) -> float:
    """Share of lines whose set holds more than WAYS lines at ``f`` capacities."""
    lam = WAYS * f
    return 1.0 - sum(math.exp(-lam) * lam ** k / math.factorial(k) for k in range(WAYS))


def _modulo(f: float) -> float:
    """Share of lines that miss in a modulo-indexed LRU cache of WAYS ways at ``f``."""
    d = max(0.0, f - 1.0)
    return min(1.0, (WAYS + 1) * d / f)


#: where the random sets' share crosses half (1 + Poisson(16 f) > 16 for half the lines)
HALF = next(f for f in np.arange(0.5, 1.5, 1e-4) if _random_sets(f) >= 0.5)


def _ladder(share, footprints, *, means: bool, width: int = 64) -> xr.Dataset:
    rng = np.random.default_rng(1)
    lat = np.full((len(footprints), width), np.nan)
    for i, fp in enumerate(footprints):
        s = share(fp / C) if fp > C / 4 else 0.0
        if fp > 4 * C:
            s = 1.0
        if means:
            lat[i, 0] = L2 + s * (DRAM - L2)
        else:
            lat[i] = np.where(rng.random(width) < s, DRAM, L2)
    ds = xr.Dataset(
        {"latency": (("order", "footprint", "access"), lat[None]),
         "timer_overhead": (("order", "footprint"), np.zeros((1, len(footprints)))),
         "point_status": (("order", "footprint"), np.zeros((1, len(footprints)), np.int8))},
        coords={"order": ["sequential"], "footprint": np.array(footprints, np.int64),
                "access": np.arange(width)},
        attrs={"l2_bytes": C, "clock_mhz": 1417.0})
    return ds


def _dense(lo: float, hi: float, step: float = 1.02) -> list[int]:
    grid = set(footprint_grid(2048, 512 << 20, 1))
    f = lo
    while f <= hi:
        grid.add(int(round(f * C / 128)) * 128)
        f *= step
    return sorted(grid)


def _found(raw: xr.Dataset) -> dict:
    return {f.name: f for f in LatencyLadder().analyze(raw)}


@pytest.mark.parametrize("means", [True, False], ids=["one mean a point", "per access"])
def test_a_ramp_is_read_at_its_half_crossing(means):
    raw = _ladder(_random_sets, _dense(0.3, 2.2), means=means, width=64 if means else 1024)
    f = _found(raw)
    size = f["l2.size"]
    assert size.value == pytest.approx(HALF * C, rel=0.03 if means else 0.05)
    assert "half crossing of the miss share" in size.method and "misses ramp" in size.note
    assert size.interval[0] <= size.value <= size.interval[1]
    assert f["l2.partitions"].value == 1
    assert "lat.l2_far" not in f and "l2.near_size" not in f
    assert f["lat.l2"].value == pytest.approx(L2) and f["lat.dram"].value == pytest.approx(DRAM)


@pytest.mark.parametrize("means", [True, False], ids=["one mean a point", "per access"])
def test_a_modulo_cache_keeps_its_knee(means):
    """Every set overflows within 1 + 1/16 of the size: no ramp, the knee is the value (of
    means, where the mean passes the geometric middle of the two levels, as before)."""
    raw = _ladder(_modulo, _dense(0.9, 1.3, 1.005), means=means, width=64 if means else 1024)
    size = _found(raw)["l2.size"]
    assert "knee" in size.method and "half crossing" not in size.method
    assert 0.99 * C <= size.value < (1 + 1 / WAYS) * C
    if not means:
        assert size.value == pytest.approx(C, rel=0.01)


@pytest.mark.parametrize("means", [True, False], ids=["one mean a point", "per access"])
def test_a_far_partition_stays_a_level(means):
    """A near L2 ending at 0.45 of the size, a far one at the size: two levels, as before."""
    near, far, dram = 285.0, 510.0, 800.0
    fps = _dense(0.2, 2.5, 1.03)
    width = 64 if means else 256
    lat = np.full((len(fps), width), np.nan)
    for i, fp in enumerate(fps):
        v = near if fp <= 0.45 * C else far if fp <= C else dram
        if means:
            lat[i, 0] = v
        else:
            lat[i] = v + np.random.default_rng(i).normal(0, 3, width)
    raw = _ladder(_random_sets, fps, means=means, width=width)
    raw["latency"].values[0] = lat
    f = _found(raw)
    assert f["l2.partitions"].value == 2 and "lat.l2_far" in f
    assert "half crossing" not in f["l2.size"].method


def test_refinement_bisects_the_ramps_half_crossing_only():
    """On a slow device a ramp's refinement bisects its half crossing, not the knees of the
    plateaus its means make along it (each a step of the rising share: on the real build they
    cost 13 minutes a ladder, 10 s a point)."""
    first = list(footprint_grid(2048, 512 << 20, 1)) + [C]
    raw = _ladder(_random_sets, sorted(set(first)), means=True)
    info = DeviceInfo(kind="toy", name="toy", compute_capability="6.1", sm_count=28,
                      l2_bytes=C, memory_bytes=64 << 30, clock_mhz=1417.0,
                      cycles_per_second=1e5, extra={"l2_random_sets": 1})
    exp, ctx = LatencyLadder(), RunContext("sm_61", info)
    plan = exp.plan(ctx)
    raw.attrs.update({f"plan_{k}": v for k, v in plan.attrs.items()})
    have = set(first)
    for _ in range(12):
        new = (exp.refine(raw, ctx) or {}).get("footprint", [])
        if not new:
            break
        assert len(new) == 1  # the half crossing's bracket, halved
        have |= set(new)
        raw = _ladder(_random_sets, sorted(have), means=True)
        raw.attrs.update({f"plan_{k}": v for k, v in plan.attrs.items()})
    assert not new
    size = _found(raw)["l2.size"]
    assert size.value == pytest.approx(HALF * C, rel=0.02)
    assert size.confidence == 1.0 and size.interval[1] / size.interval[0] - 1 <= 0.01


@pytest.mark.parametrize("random_sets", [True, False])
def test_a_slow_device_records_more_lines_around_a_random_l2_only(random_sets):
    """A slow device whose L2 draws each line's set (Accel-Sim's random partition indexing)
    times RAMP_RECORD accesses, as one mean, around the L2's size (half to twice it); every
    other point, and every point of another slow device, SLOW_RECORD as before (a QV100
    ladder took 30 s a point with 1,024)."""
    from gpumem.contracts.device import ChaseResult, Device

    class Recorder(Device):
        requests: list = []

        @property
        def probes(self):
            return frozenset({"pointer_chase"})

        def pointer_chase(self, request):
            self.requests.append(request)
            n = request.record
            return ChaseResult(np.full(n, 7.0), np.zeros(n, np.int64), 0.0)

    info = DeviceInfo(kind="toy", name="toy", compute_capability="6.1", sm_count=28,
                      l2_bytes=C, memory_bytes=64 << 30, clock_mhz=1417.0,
                      cycles_per_second=1e5, extra={"l2_random_sets": 1} if random_sets else {})
    exp, ctx = LatencyLadder(), RunContext("sm_61", info)
    assert ("ramp_record" in exp.plan(ctx).attrs) == random_sets
    dev = Recorder(info, "sm_61")
    for fp, order, record in ((C // 2, "sequential", SLOW_RECORD),
                              (C // 2 + 128, "sequential", RAMP_RECORD),
                              (2 * C - 128, "sequential", RAMP_RECORD),
                              (2 * C, "sequential", SLOW_RECORD)):
        dev.requests.clear()
        out = exp.measure(dev, {"order": order, "footprint": fp}, ctx)
        (req,) = dev.requests
        record = record if random_sets else SLOW_RECORD
        assert req.record == record, fp
        assert len(out["latency"]) == SLOW_RECORD  # the plan's width
        if record == RAMP_RECORD:
            assert not req.fine_grained and out["latency"][0] == 7.0
            assert np.isnan(out["latency"][1:]).all()
