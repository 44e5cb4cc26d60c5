"""Honest estimates on a slow simulator (issue 31, item 4): the plan priced is the one that
runs (``--quick`` included), a point over ``GPUMEM_ACCELSIM_MAX_WARP_INSTS`` is a skipped
point that costs nothing, and while an experiment runs the estimate is revised from the time
its finished points took (``gpumem.run.pace.Revision``).

Runs the fake ``accel-sim.out`` of tests/fixtures/fake_accelsim (see test_accelsim_device.py).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpumem.contracts.device import ChaseRequest, Device, StreamRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, Var
from gpumem.experiments.latency import LatencyLadder
from gpumem.results.schema import points
from gpumem.run.pace import Estimate, Revision, estimate, makespan, price_run
from gpumem.run.request import Reporter
from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.device import AccelSimDevice, AccelSimSetup
from gpumem_accelsim.traces import (
    chase_trace,
    chase_warp_insts,
    stream_trace,
    stream_warp_insts,
)

DATA = Path(__file__).parent / "data" / "accelsim"
QV100 = DATA / "SM7_QV100"
FAKE = Path(__file__).parent / "fixtures" / "fake_accelsim" / "accel-sim.out"
#: A pace like the H200 config's on one core (plugins/accelsim/README.md).
PACE = "2200,1500,1.45,4100"


@pytest.fixture
def fake(fake_accelsim, monkeypatch) -> Path:
    """The fake Accel-Sim (conftest), a slow pace declared, no trace-size limit."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", PACE)
    monkeypatch.delenv("GPUMEM_ACCELSIM_MAX_WARP_INSTS", raising=False)
    return fake_accelsim


def _device(limit: int | None = None) -> AccelSimDevice:
    import os

    setup = AccelSimSetup(AccelSimConfig.load(QV100), os.environ["GPUMEM_ACCELSIM"],
                          **({"max_warp_insts": limit} if limit else {}))
    return AccelSimDevice(setup, "hopper")


# ---- the size limit, counted before a trace is written ------------------------------------

def test_the_counted_size_is_the_written_size(tmp_path):
    """The limit is checked on a count made without writing the trace, which the price
    uses too: it must be the size the generators write, for every shape of warm-up."""
    for warm, record, l1, l2, ctas in itertools.product(
            (0, 1, 32, 33, 700), (1, 8, 64), (None, 0, 40, 3000), (None, 0, 64), (1, 80)):
        req = ChaseRequest(1 << 20, 128, record, warmup=warm, fine_grained=False)
        ts = chase_trace(tmp_path / "c", req, warm_ctas=ctas, l1_window=l1, l2_window=l2,
                         max_warp_insts=1 << 30)
        assert chase_warp_insts(req, warm_ctas=ctas, l1_window=l1, l2_window=l2) == \
            ts.warp_insts, (warm, record, l1, l2, ctas)
    for kind, ilp, warm in itertools.product(("read", "write", "copy"), (1, 4), (True, False)):
        req = StreamRequest(1 << 20, 7, 100, ilp, 16, kind=kind)
        ts = stream_trace(tmp_path / "s", req, warmup=warm, max_warp_insts=1 << 30)
        assert stream_warp_insts(req, warmup=warm) == ts.warp_insts


def test_a_call_over_the_limit_is_priced_as_the_skipped_point_it_is(fake):
    """What the probe refuses for its size, the price refuses with the same words (the
    estimate counts such a point as free: it is not simulated)."""
    big = ChaseRequest(8 << 20, 128, 64, warmup=65536, path="ca", fine_grained=False)
    small = ChaseRequest(4096, 128, 64, warmup=32, path="ca", fine_grained=False)
    capped = _device(limit=2000)
    with pytest.raises(PointSkipped, match="too long to simulate.*over the limit of 2000"):
        capped.estimate_seconds(big)
    with pytest.raises(PointSkipped, match="too long to simulate.*over the limit of 2000"):
        capped.pointer_chase(big)
    assert capped.runs == 0  # refused before the simulator started
    assert capped.estimate_seconds(small) == _device().estimate_seconds(small) > 0
    stream = StreamRequest(16 << 20, 80, 256, 1, 16)
    assert _device().estimate_seconds(stream) > 0
    with pytest.raises(PointSkipped, match="stream too long to simulate"):
        capped.estimate_seconds(stream)


def test_the_limit_bounds_the_estimate(fake):
    """The latency ladder under a limit: the points whose traces fit cost what they cost
    without it, the rest nothing; every point priced runs a trace within the limit."""
    exp = LatencyLadder()
    full_dev, limit = _device(), 1000
    capped_dev = _device(limit=limit)
    ctx = RunContext("hopper", full_dev.info, quick=True)
    plan = exp.plan(ctx)
    full = estimate(exp, plan, full_dev, ctx, 1)
    capped = estimate(exp, plan, capped_dev, ctx, 1)
    assert isinstance(full, Estimate) and isinstance(capped, Estimate)
    sizes: list[int] = []

    class Sizing(Device):  # says each call's trace size, as the device counts it
        probes = full_dev.probes

        def pointer_chase(self, request):
            l1, l2 = full_dev._warm_windows(request)
            sizes.append(chase_warp_insts(request, warm_ctas=full_dev.info.sm_count,
                                          l1_window=l1, l2_window=l2))
            raise PointSkipped("sized")

    fits = []
    for point in points(plan.axes):
        sizes.clear()
        try:
            exp.measure(Sizing(full_dev.info, "hopper"), point, ctx)
        except PointSkipped:
            pass
        fits.append(bool(sizes) and max(sizes) <= limit)
    # the limit cuts the ladder short: points that would run do not
    assert any(fits) and any(not ok and f > 0 for ok, f in zip(fits, full.seconds, strict=True))
    for ok, f, c in zip(fits, full.seconds, capped.seconds, strict=True):
        assert c == (f if ok else 0.0)
    assert capped.cpu_s < full.cpu_s and capped.wall_s < full.wall_s
    newly = sum(1 for ok, f in zip(fits, full.seconds, strict=True) if not ok and f > 0)
    assert capped.skipped_points == full.skipped_points + newly
    assert f"({capped.skipped_points} skipped here)" in capped.describe()


def test_the_cli_prices_the_limited_run(fake, cli, monkeypatch):
    """``gpumem run --quick --estimate`` with the limit set says less than without, and how
    many points will be skipped."""
    args = ("run", "--arch", "hopper", "latency", "--quick", "--device", "accelsim",
            "--sim-config", str(QV100 / "gpgpusim.config"), "--estimate")
    res = cli(*args)
    assert res.code == 0, res.err
    full = re.search(r"estimate: latency: \d+ points \((\d+) skipped here\), (.*?) of",
                     res.err)
    monkeypatch.setenv("GPUMEM_ACCELSIM_MAX_WARP_INSTS", "1000")
    res = cli(*args)
    capped = re.search(r"estimate: latency: \d+ points \((\d+) skipped here\), (.*?) of",
                       res.err)
    assert full and capped, res.err
    assert int(capped[1]) > int(full[1]) and capped[2] != full[2]


# ---- --quick: the quick plan is what is priced --------------------------------------------

class Ladder(Experiment):
    """Mean chases over footprints: eight, or three with ``--quick``."""

    name = "toy_ladder"
    probes = ("pointer_chase",)

    def plan(self, ctx: RunContext) -> Plan:
        sizes = (4096, 1 << 20, 8 << 20) if ctx.quick else tuple(4096 << k for k in range(0, 16, 2))
        return Plan(axes=[Axis("footprint", sizes, "byte")],
                    variables=[Var("latency", (), "cycle", "mean cycles per access")])

    @staticmethod
    def request(point: Mapping[str, Any]) -> ChaseRequest:
        fp = int(point["footprint"])
        return ChaseRequest(fp, 128, 64, warmup=fp // 128, path="ca", fine_grained=False)

    def measure(self, device, point, ctx):
        return {"latency": float(np.mean(device.pointer_chase(self.request(point)).latency))}

    def analyze(self, raw):
        return []


def test_the_quick_plan_is_priced_not_the_full_one(fake):
    dev = _device()
    said = {}
    for quick in (False, True):
        ctx = RunContext("hopper", dev.info, quick=quick)
        (est,) = price_run(None, dev, [Ladder], ctx, 1, False, Reporter()).values()
        plan = Ladder().plan(ctx)
        assert len(est.seconds) == len(points(plan.axes))
        assert est.cpu_s == pytest.approx(sum(dev.estimate_seconds(Ladder.request(p))
                                              for p in points(plan.axes)))
        said[quick] = est
    assert 0 < said[True].cpu_s < said[False].cpu_s


# ---- revised while it runs ----------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_revision_follows_the_measured_pace(monkeypatch):
    """Points priced 4 s that take 8: from the first finished point on, what is left is the
    true remainder (twice the price), not the first estimate."""
    monkeypatch.setattr("gpumem.run.pace.REVISE_EVERY_S", 0.0)
    clock = Clock()
    rev = Revision(Estimate("x", (4.0,) * 6, 0, 1), clock)
    assert rev.line() == ""  # nothing finished yet
    for k in range(1, 6):
        clock.t += 8
        rev.point_done()
        assert rev.ratio() == pytest.approx(2.0)
        assert rev.left_s() == pytest.approx(8.0 * (6 - k))  # first said: 4 s each
        line = rev.line()
        assert f"about {8 * (6 - k)} s left" in line and "2 times" in line
        assert f"revised from {k} finished point{'s' if k > 1 else ''}:" in line
    clock.t += 8
    rev.point_done()
    assert rev.line() == ""  # nothing left to say


def test_the_revision_on_workers_and_through_refinement(monkeypatch):
    monkeypatch.setattr("gpumem.run.pace.REVISE_EVERY_S", 0.0)
    clock = Clock()
    rev = Revision(Estimate("x", (30.0, 10.0, 10.0, 10.0), 2, 2), clock)
    clock.t += 30  # two workers: the 30 s point and two 10 s ones, at the price
    for _ in range(3):
        rev.point_done()
    assert rev.ratio() == pytest.approx(30 / makespan([30, 10, 10], 2)) == 1.0
    # the point queued; the bound's two rounds said apart (most refinements stop sooner)
    assert rev.left_s() == pytest.approx(10) and rev.round_s() == pytest.approx(30)
    assert "then up to 2 refinement rounds if the data ask for them (about 30 s each)" \
        in rev.line()
    rev.point_done()
    rev.points_added([5.0, 5.0], 2)  # a round priced: it replaces one of the bound
    assert rev.left_s() == pytest.approx(5)
    assert "about 5 s left for the points queued, then up to 1 refinement round" in rev.line()
    rev.points_added(None, 3)  # not priced: each at the dearest point
    assert rev.left_s() == pytest.approx(makespan([5, 5, 30, 30, 30], 2))


def test_revisions_are_spaced(monkeypatch):
    monkeypatch.setattr("gpumem.run.pace.REVISE_EVERY_S", 60.0)
    clock = Clock()
    rev = Revision(Estimate("x", (10.0,) * 20, 0, 1), clock)
    said = []
    for _ in range(19):
        clock.t += 15
        rev.point_done()
        said.append(bool(rev.line()))
    assert said[0] and sum(said) == 1 + (19 * 15 - 15) // 60  # the first, then each minute
    free = Revision(Estimate("x", (0.0, 0.0, 10.0), 0, 1), clock)
    free.point_done()
    assert free.ratio() is None and free.line() == ""  # nothing priced has finished


def test_a_run_revises_its_estimate_from_its_points(fake, cli, tmp_path, monkeypatch):
    """On the fake, every simulation sleeps 0.3 s where the declared pace prices a point at
    a few hundredths: the revisions say how much slower the points ran, and what is left
    grows from the first estimate toward that pace."""
    monkeypatch.setattr("gpumem.run.pace.REVISE_EVERY_S", 0.0)
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "1000000,1000000,0.01")
    monkeypatch.setenv("GPUMEM_ACCELSIM_MAX_WARP_INSTS", "300")  # a few points run
    monkeypatch.setenv("FAKE_ACCELSIM_SLEEP", "0.3")
    res = cli("run", "--arch", "hopper", "latency", "--quick", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    lines = [ln for ln in res.err.splitlines() if "revised from" in ln]
    assert lines and "revised from 1 finished point:" in lines[0]
    ratios = [float(re.search(r"took ([\d.,e+]+) times", ln)[1].replace(",", ""))
              for ln in lines]
    assert min(ratios) > 3  # 0.3 s of sleep against a price of at most 0.06 s
    first = re.search(r"about (\d+) s in all", res.err)
    left = re.search(r"about (\d+) s left", lines[0])
    assert first and left and int(left[1]) > int(first[1])
