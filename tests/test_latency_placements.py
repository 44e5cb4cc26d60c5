"""The latency ladder chases footprints near the L2's knees on several allocations (issue 14).

An H200's near L2 partition ended at 26.1-28.0 MB in four processes and 33.2 MB in a fifth:
where a hashed cache's first set overflows depends on the physical pages one allocation got.
So ``latency`` chases each sequential footprint from L2/8 to 2 L2 on every placement of
:data:`gpumem.contracts.device.PLACEMENT_PADS`, a part of the record on each.
"""

from __future__ import annotations

import pytest
from gpumem.contracts.device import PLACEMENT_PADS, ChaseRequest
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.latency import PLACED_RESOLUTION, PLACEMENTS, LatencyLadder, _capacity
from gpumem.plugin.registry import get_plugins
from gpumem.sim.device import SimDevice


class Recording:
    """A device that remembers the chases it was asked for."""

    def __init__(self, dev):
        self.dev, self.requests = dev, []

    def pointer_chase(self, req):
        self.requests.append(req)
        return self.dev.pointer_chase(req)


@pytest.fixture(scope="module")
def hopper():
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    return SimDevice(cfg, "hopper")


def test_a_placement_outside_the_pads_is_refused():
    ChaseRequest(footprint=4096, stride=128, record=8, placement=PLACEMENTS - 1).validate()
    with pytest.raises(ValueError, match="placement"):
        ChaseRequest(footprint=4096, stride=128, record=8, placement=PLACEMENTS).validate()


def test_footprints_near_the_l2_knees_are_chased_on_every_placement(hopper):
    exp, ctx = LatencyLadder(), RunContext("hopper", hopper.info)
    attrs = exp.plan(ctx).attrs
    l2 = hopper.info.l2_bytes
    assert (attrs["placed_from"], attrs["placed_to"]) == (l2 // 8, 2 * l2)
    dev = Recording(hopper)
    out = exp.measure(dev, {"order": "sequential", "footprint": l2 // 2}, ctx)
    assert [r.placement for r in dev.requests] == list(range(PLACEMENTS))
    assert {r.record for r in dev.requests} == {attrs["record"] // PLACEMENTS}
    assert len(out["latency"]) == len(out["index"]) == attrs["record"]
    assert out["end_ok"] == 1
    # the L1, the random order and DRAM-resident footprints: one chase, placement 0
    for point in ({"order": "sequential", "footprint": 64 << 10},
                  {"order": "random", "footprint": l2 // 2},
                  {"order": "sequential", "footprint": 4 * l2}):
        dev.requests.clear()
        exp.measure(dev, point, ctx)
        assert [(r.placement, r.record) for r in dev.requests] == [(0, attrs["record"])]


def test_the_simulator_places_the_chain_behind_the_pad(hopper):
    """The same chain behind another pad is another set of addresses (a hashed cache in the
    simulator sees other sets), and still ends where the chain says."""
    for k in range(PLACEMENTS):
        res = hopper.pointer_chase(ChaseRequest(footprint=1 << 20, stride=128, record=64,
                                                warmup=64, placement=k))
        assert res.end_ok
    assert PLACEMENT_PADS[0] == 0 and len(set(PLACEMENT_PADS)) == PLACEMENTS


def test_a_placed_knee_is_bisected_to_half_a_percent_an_unplaced_one_to_a_stride():
    exp = LatencyLadder()
    placed = {"plan_placements": 4, "plan_placed_from": 1 << 20, "plan_placed_to": 1 << 30}
    assert exp._knee_resolution(placed, 30e6) == PLACED_RESOLUTION
    assert exp._knee_resolution(placed, 200e3) == 0.0     # the L1's knee
    assert exp._knee_resolution({}, 30e6) == 0.0          # a version-1 file: none placed
    # a bracket that narrow counts as resolved; the note keeps its width
    f = _capacity("l2.near_size", (27_525_248.0, 27_600_000.0), "m", None, PLACED_RESOLUTION)
    assert f.confidence == 1.0 and "between 27525248 and 27600000" in f.note
    assert _capacity("l2.near_size", (27_525_248.0, 27_600_000.0), "m").confidence < 0.9
