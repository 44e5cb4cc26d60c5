"""One sweep point run on a device, its failure turned into data.

Shared by the in-process runner and the executors that farm points out (Dask workers), so
that a point means the same wherever it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpumem.contracts.device import Device
from gpumem.contracts.errors import PointSkipped, ProbeUnsupported
from gpumem.contracts.experiment import Experiment, RunContext, measure_point
from gpumem.results.schema import (
    POINT_COUNTS,
    POINT_FAILED,
    POINT_OK,
    POINT_SKIPPED,
    POINT_STATE,
)

#: A point's status (``POINT_OK``, ``POINT_SKIPPED``, ``POINT_FAILED``), why, and its values.
PointResult = tuple[int, str, Mapping[str, Any]]


@dataclass(frozen=True)
class Unsupported:
    """A point the device cannot run at all (``ProbeUnsupported``): not a point's result but
    the whole experiment's, skipped. A point run in another process sends this back, since
    the exception itself is the runner's to raise."""

    why: str


#: What a point run in a worker process or on a cluster sends back.
PointOutcome = PointResult | Unsupported


def point_outcome(experiment: Experiment, device: Device, point: Mapping[str, Any],
                  ctx: RunContext) -> PointOutcome:
    """:func:`run_point`, with a device that cannot run the point said as :class:`Unsupported`."""
    try:
        return run_point(experiment, device, point, ctx)
    except ProbeUnsupported as e:
        return Unsupported(str(e))


def result_of(outcome: PointOutcome) -> PointResult:
    """The point's result; raises ``ProbeUnsupported`` where the device could not run it."""
    if isinstance(outcome, Unsupported):
        raise ProbeUnsupported(outcome.why)
    return outcome


def run_point(experiment: Experiment, device: Device, point: Mapping[str, Any],
              ctx: RunContext) -> PointResult:
    """One point, with its failure turned into data (ProbeUnsupported and Ctrl-C propagate):
    each timed run its plan declares (:func:`gpumem.contracts.experiment.measure_point`), one failed
    run failing the point. The device's point state (clocks, throttling) before and after
    goes with the values, and what the point added to the device's counters with any
    result."""
    counted = device.point_counters()
    status, reason, values = _measure(experiment, device, point, ctx)
    if counted:
        now = device.point_counters()
        values = {**values, POINT_COUNTS: {k: now[k] - v for k, v in counted.items()
                                           if k in now}}
    return status, reason, values


def _measure(experiment: Experiment, device: Device, point: Mapping[str, Any],
             ctx: RunContext) -> PointResult:
    try:
        before = device.point_state()
        values = measure_point(experiment, device, point, ctx)
        if before:
            after = device.point_state()
            values = {**values, POINT_STATE: {
                **{f"{k}_before": v for k, v in before.items()},
                **{f"{k}_after": v for k, v in after.items()}}}
        return POINT_OK, "", values
    except PointSkipped as e:
        return POINT_SKIPPED, e.reason, {}
    except (ProbeUnsupported, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - recorded per point, the sweep goes on
        return POINT_FAILED, f"{type(e).__name__}: {e}", {}
