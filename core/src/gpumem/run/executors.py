"""Sweep points on a Dask cluster (``gpumem run --executor dask --scheduler ADDRESS``).

Points are independent and each is seeded by its own key, so where a point runs does not change
its result: a cluster run writes the same datasets and findings as a local one. A task opens
the device on its worker from the device's ``reopen_spec()`` (once per worker process and
device) and returns the point's values; the client collects results as they finish, so a
worker that dies mid-run loses only the points it was running, which Dask runs again elsewhere
(``distributed.scheduler.allowed-failures`` times); if the device's spec, scattered to the
workers once, is lost with it, the points waiting on it are submitted again with the spec
scattered anew. Devices that cannot be reopened elsewhere
(a CUDA GPU is in this machine) keep their points here.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Callable, Mapping
from typing import Any

from gpumem.contracts.errors import UsageError
from gpumem.contracts.experiment import Experiment, RunContext
from gpumem.results.schema import point_key
from gpumem.run.point import PointOutcome, PointResult, point_outcome, result_of

_devices: dict[str, Any] = {}   # per worker process: spec digest -> open device
#: Times the device's spec may be lost with a killed worker before a run gives up.
SPEC_LOSSES = 3
#: Seconds between tries of a broadcast that met a closed connection (a worker just killed).
SCATTER_WAIT_S = 1.0


def connect(address: str | None) -> Any:
    """A ``distributed.Client`` for ``address`` (``tcp://host:8786``, or a scheduler file).
    Not made dask's default scheduler: that setting outlives the client and would send
    xarray's own computations (writing netCDF) to a cluster that is gone."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--executor dask needs Dask: pip install 'gpumem-dissect[dask]'") from None
    if not address:
        raise UsageError("--executor dask needs --scheduler ADDRESS (tcp://HOST:8786, or a "
                         "scheduler JSON file from 'dask scheduler --scheduler-file')")
    try:
        if address.endswith(".json"):
            return Client(scheduler_file=address, timeout="20s", set_as_default=False)
        return Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"--scheduler {address}: cannot connect: {e}") from None


def _device(spec: dict[str, Any]) -> Any:
    digest = hashlib.sha256(pickle.dumps(spec)).hexdigest()
    dev = _devices.get(digest)
    if dev is None:
        from gpumem.plugin.registry import load_plugins

        plugins = load_plugins(warn=lambda _m: None)
        sim = plugins.simulators()[spec["simulator"]]
        dev = _devices[digest] = sim.create_device(spec["arch"], spec["config"],
                                                   seed=spec["seed"])
    return dev


def cluster_point(spec: dict[str, Any], cls: type[Experiment], point: Mapping[str, Any],
                  ctx: RunContext) -> PointOutcome:
    """One point on a worker (the task Dask runs)."""
    return point_outcome(cls(), _device(spec), point, ctx)


class DaskPoints:
    """Submits an experiment's points to the cluster and collects them as they finish."""

    def __init__(self, client: Any, spec: dict[str, Any]) -> None:
        self.client, self.spec = client, spec
        self._spec_future = self._scatter()

    def _scatter(self) -> Any:
        """The device's spec on every worker. A broadcast that reaches a worker as it is
        killed fails on a closed connection (CI: "CommClosedError: in <TCP (closed)
        ConnectionPool.scatter ...>: Stream is closed", the run lost) until the scheduler
        has dropped it: tried again, up to :data:`SPEC_LOSSES` times, a second apart."""
        for _ in range(SPEC_LOSSES):
            try:
                return self.client.scatter(self.spec, broadcast=True)
            except OSError:  # distributed's CommClosedError is one
                time.sleep(SCATTER_WAIT_S)
        return self.client.scatter(self.spec, broadcast=True)  # the last try's error is the run's

    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        """Every point's result. A point whose task was cancelled because the device's
        spec went with a killed worker (scattered data Dask cannot recompute: seen in CI,
        "Removing worker ... caused the cluster to lose scattered data") is submitted
        again with the spec scattered anew, up to :data:`SPEC_LOSSES` times."""
        from concurrent.futures import CancelledError

        from distributed import as_completed

        cls = type(experiment)
        results: dict[tuple, PointResult] = {}
        submitted = 0
        for attempt in range(SPEC_LOSSES + 1):
            if attempt:  # the spec was lost with a worker: scatter it again
                self._spec_future = self._scatter()
            futures: dict[Any, tuple] = {}  # distributed's Future -> the point's key
            for p in pts:
                if point_key(p) in results:
                    continue
                f = self.client.submit(cluster_point, self._spec_future, cls, p, ctx,
                                       pure=False, key=f"gpumem-{experiment.name}-"
                                       f"{_key_text(p)}-{id(self):x}-{submitted}")
                submitted += 1
                futures[f] = point_key(p)
            if not futures:
                break
            try:
                for fut in as_completed(list(futures), loop=self.client.loop):
                    try:
                        out = fut.result()
                    except CancelledError:  # its spec was lost: submitted again below
                        continue
                    results[futures[fut]] = result_of(out)
                    on_done()
            except BaseException:
                self.client.cancel(list(futures))
                raise
        missing = len({point_key(p) for p in pts} - results.keys())
        if missing:
            raise RuntimeError(f"{missing} point(s) of {experiment.name} were cancelled on the "
                               f"cluster {SPEC_LOSSES + 1} times (their device's spec was "
                               f"lost with a worker each time)")
        return results

    def close(self) -> None:
        self.client.close()


def _key_text(point: Mapping[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in point.items())[:80]
