"""How long a plan will take on a slow device, said before it runs.

A cycle-level simulator runs a GPU thousands of times slower than the GPU itself (Accel-Sim
with an H200 config: about 2,000 simulated cycles per second while one thread waits on
memory), so a plan sized for hardware can run for days. Such a device declares itself slow
(``DeviceInfo.cycles_per_second``) and prices each probe call
(:meth:`~gpumem.contracts.device.Device.estimate_seconds`); experiments size their plans down
(``RunContext.slow``), and the runner prices every point of the plan here, before the first
one runs, by running the experiment's own :meth:`~gpumem.contracts.experiment.Experiment.measure`
on a
stand-in device that only adds up prices. What the points cost on ``workers`` workers is the
longest-first schedule of their prices; refinement adds at most
:meth:`~gpumem.contracts.experiment.Experiment.refine_bound` rounds, each priced as the dearest
point of
the first pass (the points it adds lie between points already priced). A point the device
refuses (``PointSkipped``: a trace over Accel-Sim's size limit, say) is not run, so it costs
nothing; the plan priced is the one that runs (``--quick`` included). Measured against the
real Accel-Sim (``plugins/accelsim/README.md``), runs took about 0.5-2.3 times the estimate,
so while an experiment runs :class:`Revision` says what is left, scaled by how long its
finished points took against their prices.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpumem.contracts.device import ChaseRequest, ChaseResult, Device, StreamRequest, StreamResult
from gpumem.contracts.errors import PointSkipped, ProbeUnsupported
from gpumem.contracts.experiment import Experiment, Plan, RunContext, measure_point

if TYPE_CHECKING:
    from gpumem.results.store import RunStore
    from gpumem.run.request import Reporter


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
    #: Points the device refuses (``PointSkipped``), among ``seconds`` at no cost.
    skipped_points: int = 0

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
        refused = f" ({self.skipped_points} skipped here)" if self.skipped_points else ""
        return (f"{self.experiment}: {len(self.seconds)} points{refused}, {_span(self.cpu_s)} of "
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


def _price(experiment: Experiment, point: Mapping[str, Any], device: Device,
           ctx: RunContext) -> tuple[float | None, bool]:
    """(seconds, refused) of one point: see :func:`price_point`."""
    pricing = _Pricing(device)
    try:
        measure_point(experiment, pricing, point, ctx)  # each repeat the plan declares
    except ProbeUnsupported:
        raise
    except PointSkipped:
        return 0.0, True
    except Exception:  # noqa: BLE001 - placeholder numbers it cannot take: unknown
        return None, False
    return (None if pricing.unknown else pricing.seconds), False


def price_point(experiment: Experiment, point: Mapping[str, Any], device: Device,
                ctx: RunContext) -> float | None:
    """Seconds ``point`` of ``experiment`` will take on ``device``: 0 for a point the device
    refuses (it will not run), ``None`` where a call cannot be priced or the placeholder
    numbers upset ``measure``. Raises ``ProbeUnsupported`` (the runner skips the whole
    experiment)."""
    return _price(experiment, point, device, ctx)[0]


def estimate(experiment: Experiment, plan: Plan, device: Device, ctx: RunContext,
             workers: int) -> Estimate | None:
    """The price of the points of ``plan`` on ``device`` (see the module docstring), or
    ``None`` where it cannot be known before running: an adaptive experiment (its next probe
    depends on the last answer), or a probe the device does not price."""
    from gpumem.results.schema import points

    if type(experiment).sweep is not Experiment.sweep:
        return None
    ctx = ctx.with_repeats(plan)
    seconds, refused = [], 0
    for point in points(plan.axes):
        try:
            s, skipped = _price(experiment, point, device, ctx)
        except ProbeUnsupported as e:  # the runner skips the whole experiment
            return Estimate(experiment.name, (), 0, workers, skipped=str(e))
        if s is None:
            return None
        refused += skipped
        seconds.append(s)
    return Estimate(experiment.name, tuple(seconds), experiment.refine_bound(ctx), workers,
                    skipped_points=refused)


#: Seconds at least between two revised estimates of a running experiment (the first comes
#: with its first finished point that has a price).
REVISE_EVERY_S = 20.0


class Revision:
    """What is left of a priced experiment while it runs, revised from its finished points:
    the wall time since its first point started, over what their prices say it should have
    taken on the same workers, times the price of what is still to run (the points not yet
    finished, and the refinement rounds still allowed at the dearest point each).

    Points are taken to finish in the order they were priced (the runner's order; a Dask
    cluster's may differ a little), so each finished point takes the next price. A worker's
    point half done counts as not started, so with several workers the ratio is a little
    high until the last points.
    """

    def __init__(self, priced: Estimate, clock: Callable[[], float] = time.monotonic) -> None:
        self.priced = priced
        self.clock = clock
        self.started = clock()
        self.todo = list(priced.seconds)
        self.done: list[float] = []
        self.rounds_left = priced.refine_rounds
        self.dearest = max(priced.seconds, default=0.0)
        self._said: float | None = None

    def point_done(self) -> None:
        if self.todo:
            self.done.append(self.todo.pop(0))

    def points_added(self, prices: Sequence[float] | None, count: int) -> None:
        """A refinement round of ``count`` points, priced (``None``: each at the dearest
        point of the first pass): it takes the place of one round of the bound."""
        self.rounds_left = max(0, self.rounds_left - 1)
        self.todo.extend(prices if prices is not None else [self.dearest] * count)

    def ratio(self) -> float | None:
        """Wall time taken over wall time priced, of the finished points (``None`` until one
        with a price has finished)."""
        priced = makespan(self.done, self.priced.workers)
        return (self.clock() - self.started) / priced if priced > 0 else None

    def left_s(self) -> float | None:
        """Seconds the points queued now will take at the pace so far (refinement rounds
        not yet queued apart: most stop well before the bound, so adding the bound's rounds
        overstated what was left many times over, issue 45)."""
        r = self.ratio()
        if r is None:
            return None
        return r * makespan(self.todo, self.priced.workers)

    def round_s(self) -> float | None:
        """Seconds one more refinement round may take at the pace so far (the dearest point
        of the first pass), or None."""
        r = self.ratio()
        return None if r is None else r * self.dearest

    def line(self) -> str:
        """The revised estimate in words when one is due (the first, then one every
        :data:`REVISE_EVERY_S` seconds, none once nothing is left), else ""."""
        now = self.clock()
        if not self.todo and not self.rounds_left:
            return ""
        if self._said is not None and now - self._said < REVISE_EVERY_S:
            return ""
        r, left = self.ratio(), self.left_s()
        if r is None or left is None:
            return ""
        self._said = now
        n = len(self.done)
        rounds = self.rounds_left
        more = (f", then up to {rounds} refinement round{'s' if rounds != 1 else ''} if the "
                f"data ask for {'them' if rounds != 1 else 'it'} (about "
                f"{_span(self.round_s() or 0.0)} each)") if rounds else ""
        return (f"{self.priced.experiment}: about {_span(left)} left for the points queued"
                f"{more}, revised from {n} finished point{'s' if n != 1 else ''}: they took "
                f"{_times(r)} times their estimated time")


def _times(ratio: float) -> str:
    return f"{ratio:.2g}" if ratio < 10 else f"{ratio:,.0f}"


def price_run(store: RunStore | None, device: Device, classes: Sequence[type[Experiment]],
              ctx: RunContext, workers: int, resume: bool, reporter: Reporter
              ) -> dict[str, Estimate]:
    """On a slow device, what each experiment still to run will take, said before the first
    point runs (one line each, and the total); empty on a fast device."""
    if not ctx.slow:
        return {}
    out: dict[str, Estimate] = {}
    unknown = []
    for cls in classes:
        exp = cls()
        if set(exp.probes) - set(device.probes):
            reporter.notice(f"estimate: {exp.name}: skipped (the device has no "
                            f"{', '.join(sorted(set(exp.probes) - set(device.probes)))} "
                            f"probe)")
            continue
        plan = exp.plan(ctx)
        if store is not None and resume and store.is_complete(
                store.entry_key(device.info.key, exp.name, plan.params_hash(exp)))[0]:
            continue
        est = estimate(exp, plan, device, ctx, workers)
        if est is None:
            unknown.append(exp.name)
            continue
        reporter.notice("estimate: " + est.describe())
        if not est.skipped:
            out[exp.name] = est
    if out:
        total = sum(e.wall_s for e in out.values())
        reporter.notice(f"estimate: {device.info.kind} simulates about "
                        f"{device.info.cycles_per_second:,.0f} cycles/s per worker; "
                        f"{len(out)} experiment(s) priced, about {total / 3600:.1f} h in all"
                        + (f"; not priced (their next probe depends on the last answer, or "
                           f"the device cannot price it): {', '.join(unknown)}"
                           if unknown else ""))
    return out
