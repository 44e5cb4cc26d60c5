"""How long a plan will take on a slow device, said before it runs.

A cycle-level simulator runs a GPU thousands of times slower than the GPU itself (Accel-Sim
with an H200 config: about 2,000 simulated cycles per second while one thread waits on
memory), so a plan sized for hardware can run for days. Such a device declares itself slow
(``DeviceInfo.cycles_per_second``) and prices each probe call
(:meth:`~gpumem.device.Device.estimate_seconds`); experiments size their plans down
(``RunContext.slow``), and the runner prices every point of the plan here, before the first
one runs, by running the experiment's own :meth:`~gpumem.experiment.Experiment.measure` on a
stand-in device that only adds up prices. What the points cost on ``workers`` workers is the
longest-first schedule of their prices; refinement adds at most
:meth:`~gpumem.experiment.Experiment.refine_bound` rounds, each priced as the dearest point of
the first pass (the points it adds lie between points already priced). Measured against the
real Accel-Sim (``plugins/accelsim/README.md``), runs took about 0.5-2.3 times the estimate.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpumem.device import ChaseRequest, ChaseResult, Device, StreamRequest, StreamResult
from gpumem.errors import PointSkipped, ProbeUnsupported
from gpumem.experiment import Experiment, Plan, RunContext


def makespan(seconds: Sequence[float], workers: int) -> float:
    """Wall seconds ``workers`` take for jobs of ``seconds``, dearest first, each to the
    worker free soonest (within 4/3 of the best schedule)."""
    free = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(free, free[0] + s)
    return max(free)


@dataclass(frozen=True)
class Estimate:
    """The priced plan of one experiment: seconds per point of the first pass (skipped points
    cost nothing), refinement rounds at most, and the workers it will run on."""

    experiment: str
    seconds: tuple[float, ...]
    refine_rounds: int
    workers: int
    #: Why the experiment will be skipped as a whole (a probe the device lacks), or "".
    skipped: str = ""

    @property
    def cpu_s(self) -> float:
        return float(sum(self.seconds))

    @property
    def first_pass_s(self) -> float:
        return makespan(self.seconds, self.workers)

    @property
    def refine_s(self) -> float:
        """The refinement's bound: each round no longer than the dearest point."""
        return self.refine_rounds * max(self.seconds, default=0.0)

    @property
    def wall_s(self) -> float:
        return self.first_pass_s + self.refine_s

    def describe(self) -> str:
        if self.skipped:
            return f"{self.experiment}: will be skipped ({self.skipped})"
        if not any(self.seconds):
            return f"{self.experiment}: {len(self.seconds)} points, none of which runs here"
        more = (f", then at most {self.refine_rounds} refinement rounds of up to "
                f"{_span(max(self.seconds, default=0.0))}" if self.refine_rounds else "")
        return (f"{self.experiment}: {len(self.seconds)} points, {_span(self.cpu_s)} of "
                f"simulation; about {_span(self.first_pass_s)} on {self.workers} worker"
                f"{'s' if self.workers != 1 else ''}{more}: about {_span(self.wall_s)} in all")


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _Pricing(Device):
    """Stands in for a device while an experiment's ``measure`` runs: each probe call adds
    the device's price for it and answers with placeholder numbers of the right shape."""

    def __init__(self, device: Device) -> None:
        super().__init__(device.info, device.arch)
        self.device = device
        self.seconds = 0.0
        self.unknown = False

    @property
    def probes(self) -> frozenset[str]:
        return self.device.probes

    def _price(self, request: Any) -> None:
        s = self.device.estimate_seconds(request)
        if s is None:
            self.unknown = True
        else:
            self.seconds += s

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        self._price(request)
        return ChaseResult(latency=np.ones(request.record), index=np.zeros(request.record,
                                                                           np.int64),
                           timer_overhead=0.0)

    def stream(self, request: StreamRequest) -> StreamResult:
        self._price(request)
        return StreamResult(bytes=request.bytes_per_direction, seconds=1.0, cycles=1.0)


def estimate(experiment: Experiment, plan: Plan, device: Device, ctx: RunContext,
             workers: int) -> Estimate | None:
    """The price of the points of ``plan`` on ``device`` (see the module docstring), or
    ``None`` where it cannot be known before running: an adaptive experiment (its next probe
    depends on the last answer), or a probe the device does not price."""
    from gpumem.results.schema import points

    if type(experiment).sweep is not Experiment.sweep:
        return None
    seconds = []
    for point in points(plan.axes):
        pricing = _Pricing(device)
        try:
            experiment.measure(pricing, point, ctx)
        except ProbeUnsupported as e:  # the runner skips the whole experiment
            return Estimate(experiment.name, (), 0, workers, skipped=str(e))
        except PointSkipped:
            pass  # the point will not run: free
        except Exception:  # noqa: BLE001 - placeholder numbers it cannot take: unknown
            return None
        if pricing.unknown:
            return None
        seconds.append(pricing.seconds)
    return Estimate(experiment.name, tuple(seconds), experiment.refine_bound(ctx), workers)
