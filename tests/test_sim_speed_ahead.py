"""Chases run ahead, several at once (issue 31, item 3): the simulator's ``pointer_chases``
and cache_structure's ``Ahead`` must leave every result exactly as one chase at a time gives
it, and a device that cannot run chases at once must see the search's own order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gpumem.contracts.device import ChaseRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.cache_structure import PART_SEEDS, Ahead, CacheStructure, bisection_guesses
from gpumem.plugin.registry import get_plugins
from gpumem.sim.device import SimDevice


def _device(arch: str, threads: int, **timer) -> SimDevice:
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    if timer:
        cfg = replace(cfg, timer=replace(cfg.timer, **timer))
    dev = SimDevice(cfg, arch)
    dev.threads = threads
    return dev


REQUESTS = [
    ChaseRequest(footprint=64 << 10, stride=128, record=2000, warmup=512, seed=3),
    ChaseRequest(footprint=8 << 20, stride=128, record=3000, warmup=70_000, seed=4,
                 order="random", path="cg"),
    ChaseRequest(footprint=4096, stride=4, record=500, order="pattern", seed=5,
                 pattern=(0, 1024, 2048, 3072)),
    ChaseRequest(footprint=1 << 20, stride=32, record=4000, warmup=100, seed=6, sm=7),
]


def test_chases_at_once_are_the_chases_one_at_a_time():
    one = _device("hopper", 1)
    many = _device("hopper", 3)
    at_once = many.pointer_chases(REQUESTS + [replace(REQUESTS[0], sm=10_000)])
    assert isinstance(at_once[-1], PointSkipped)  # refused, not raised
    for req, got in zip(REQUESTS, at_once[:-1], strict=True):
        want = one.pointer_chase(req)
        assert np.array_equal(got.latency, want.latency)
        assert np.array_equal(got.index, want.index)
    # the device's own hierarchy is untouched: a chase after them is the same as before
    assert np.array_equal(many.pointer_chase(REQUESTS[1]).latency,
                          one.pointer_chase(REQUESTS[1]).latency)


def test_a_clock_step_keeps_chases_one_at_a_time():
    """With a clock step a chase's result depends on the chases before it: no running ahead."""
    assert _device("hopper", 8).chase_threads == 8
    assert _device("hopper", 8, clock_step_after=5, clock_step_factor=1.5).chase_threads == 1


def test_bisection_guesses_follow_the_bisection():
    got = bisection_guesses(0, 16, lambda a, b: (a + b) // 2, lambda a, b: b - a <= 1,
                            lambda _m: 1, 7)
    assert got == [(8, 0), (4, 1), (12, 1), (2, 2), (6, 2), (10, 2), (14, 2)]
    # a probe that logs no chase (decided already) moves its subtree's guesses up
    got = bisection_guesses(0, 16, lambda a, b: (a + b) // 2, lambda a, b: b - a <= 1,
                            lambda m: 0 if m == 8 else 1, 3)
    assert got == [(8, 0), (4, 0), (12, 0)]


class _Gpu:
    """A device that runs one chase at a time (no ``chase_threads``): logs what it is sent."""

    def __init__(self, dev: SimDevice) -> None:
        self.dev, self.sent = dev, []
        self.info = dev.info

    def pointer_chase(self, req: ChaseRequest):
        self.sent.append(req)
        return self.dev.pointer_chase(req)


@pytest.mark.parametrize("threads", [2, 5])
def test_cache_structure_runs_ahead_with_the_same_chases_and_findings(threads):
    """The search on a simulator given threads logs the chases, and finds what it finds,
    exactly as one chase at a time; and on a device without threads the chases it sends are
    those it logs, in order (nothing run ahead)."""
    exp = CacheStructure()
    gpu = _Gpu(_device("fermi", 1))
    ctx = RunContext("fermi", gpu.info)
    serial = exp.sweep(gpu, ctx, lambda n: None)
    # each part of the search (a load path's walk, the L2's chases) takes consecutive seeds
    # from its own base, the parts in turn: nothing sent that was not logged, in order
    seeds = [r.seed for r in gpu.sent]
    bases = sorted({s // PART_SEEDS for s in seeds})
    assert bases == list(range(len(exp.sweep_parts(ctx))))
    assert seeds == [b * PART_SEEDS + i for b in bases
                     for i in range(sum(s // PART_SEEDS == b for s in seeds))]
    assert len(gpu.sent) == serial.sizes["chase"]
    dev = _device("fermi", threads)
    ahead = exp.sweep(dev, ctx, lambda n: None)
    assert ahead.identical(serial)
    assert [(f.name, f.value) for f in exp.analyze(ahead)] == \
        [(f.name, f.value) for f in exp.analyze(serial)]


def test_ahead_drops_guesses_the_search_went_past():
    dev = _device("hopper", 4)
    a = Ahead(dev)
    a.run_ahead(REQUESTS[:2])
    assert a.ready(REQUESTS[0]) and a.ready(REQUESTS[1])
    a.run_ahead([REQUESTS[1], *REQUESTS[2:]])
    assert not a.ready(REQUESTS[0]) and all(a.ready(r) for r in REQUESTS[1:])
    got = a.pointer_chase(REQUESTS[2])  # taken once, then gone
    assert not a.ready(REQUESTS[2])
    assert np.array_equal(got.latency, _device("hopper", 1).pointer_chase(REQUESTS[2]).latency)
