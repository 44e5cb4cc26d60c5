"""The runner: resolve a request, run its experiments on one device, keep every result.

``gpumem run`` is a thin wrapper over :func:`run`. The order of work is deliberate:

1. resolve everything the user typed (architecture, experiments, device, output folder) and
   raise :class:`~gpumem.contracts.errors.UsageError` for anything wrong *before* writing a byte;
2. open the device and the run store;
3. per experiment: plan the sweep, skip it if ``--resume`` finds it complete and intact, run
   its points (in worker processes with ``--workers N`` where the device allows), let it
   refine, assemble the raw dataset, analyse it, attach expected values, write the file
   atomically, and only then mark it complete in the manifest. A failing experiment is
   recorded and the next one runs; Ctrl-C marks the running one interrupted and keeps the
   rest.

Faults leave the manifest truthful: SIGTERM is handled like Ctrl-C (exit 143 instead of
130); an experiment's entry is ended as interrupted or failed by the process that started it,
never by another; a results file that cannot be written (disk full) fails its entry and stops
the run with one line (exit 1); worker processes leave Ctrl-C to this one.

With ``--workers N`` (N > 1) on a simulator whose every probe is a function of its request
alone (``Device.independent_probes``: the built-in one, unless a configured clock step counts
the chases), the experiments run at once (:func:`_run_concurrently`): one thread each in
this process, their points sharing the one pool of worker processes, and each adaptive search
(``Experiment.sweep``) run whole in a worker process of its own. The run then takes about as
long as its longest experiment instead of the sum of all. Nothing measured changes: every
point and search gives what it gives alone (the same files, byte for byte but for dates and
wall times, as with one worker). Threads write the results one at a time. Ctrl-C stops the
experiments still measuring (marked interrupted); those measured finish their analysis and
write, and are kept; a second Ctrl-C stops waiting for them. ``GPUMEM_SEQUENTIAL=1`` runs
the experiments one after another, as with one worker.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import multiprocessing as mp
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpumem.contracts.contention import ATTR as CONTENTION_ATTR
from gpumem.contracts.contention import CONTENDED, Watch, assess, mark, wait_until_free
from gpumem.contracts.device import Device, DeviceInfo
from gpumem.contracts.errors import (
    GpumemError,
    Interrupted,
    ProbeUnsupported,
    UsageError,
)
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, analyse
from gpumem.contracts.findings import Expected, Finding, evaluate, not_modelled, to_dataset
from gpumem.contracts.generic import AUTO
from gpumem.plugin.registry import Plugins, load_plugins
from gpumem.results.schema import (
    POINT_FAILED,
    POINT_OK,
    POINT_SKIPPED,
    assemble,
    attr_safe,
    global_attrs,
    now_iso,
    point_key,
    point_totals,
    points,
)
from gpumem.results.store import ResultsWriteError, RunStore
from gpumem.run.pace import Estimate, Revision, estimate, price_point
from gpumem.run.point import PointResult, run_point
from gpumem.run.resolve import (
    choose_arch,
    default_out,
    latest_run,
    open_device,
    resolve_arch,
    resolve_device,
    resolve_experiments,
)

DEFAULT_RESULTS_ROOT = Path("gpumem-results")
MAX_REFINE_ROUNDS = 32


@dataclass
class RunRequest:
    """What the user asked for (the CLI's options, parsed)."""

    arch: str = AUTO
    experiments: Sequence[str] = ("all",)
    device: str = "auto"
    out: Path | None = None
    resume: bool = False
    quick: bool = False
    workers: int = 1
    sim_config: Path | None = None
    seed: int = 0
    argv: Sequence[str] = ()
    executor: str = "local"          # "local" (this process, or --workers) or "dask"
    scheduler: str | None = None     # the Dask scheduler's address, for executor "dask"
    exclusive: float | None = None   # seconds to wait for no other process on the GPU


@dataclass
class Outcome:
    """How one experiment ended: complete, failed, skipped, resumed or interrupted."""

    experiment: str
    status: str
    file: Path | None = None
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    wall_s: float = 0.0
    points: int = 0
    contention: str = ""   # what was seen of other work on the GPU (gpumem.contracts.contention)


@dataclass
class RunReport:
    run_dir: Path
    device: DeviceInfo
    arch: str
    outcomes: list[Outcome] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("failed", "interrupted")]


class Reporter:
    """Progress callbacks; the CLI supplies a rich display, tests and libraries this no-op."""

    def notice(self, message: str) -> None: ...
    def experiment_started(self, name: str, total: int) -> None: ...
    def points_added(self, name: str, count: int) -> None: ...
    def point_done(self, name: str) -> None: ...
    def experiment_finished(self, outcome: Outcome) -> None: ...


def with_arch(plugins: Plugins, req: RunRequest) -> tuple[RunRequest, str]:
    """``req`` with ``--arch auto`` resolved (``--device auto`` to the device it chose), and
    the line saying which architecture and why ("" where ``--arch`` named one)."""
    if req.arch != AUTO:
        return req, ""
    choice, device = choose_arch(plugins, req.device, req.sim_config)
    return replace(req, arch=choice.arch.name, device=device), choice.why


# ---------------------------------------------------------------------------------------------
# Points
# ---------------------------------------------------------------------------------------------

_worker_device: Device | None = None
_worker_stop: Any = None       # in a worker: the runner's stop flag (a multiprocessing Event)
_worker_progress: Any = None   # in a worker: where an adaptive search reports its probes

#: ``GPUMEM_SEQUENTIAL=1``: run the experiments one after another even with ``--workers``.
SEQUENTIAL_ENV = "GPUMEM_SEQUENTIAL"
#: ``GPUMEM_TIMELINE=FILE``: write when each experiment started, finished measuring and
#: ended (seconds since the epoch, JSON) to FILE at the end of the run (benchmarks/bench_sim.py).
TIMELINE_ENV = "GPUMEM_TIMELINE"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that the same clean-up runs (exit 143)."""


class RunStopped(KeyboardInterrupt):
    """Raised in an experiment's thread when the run stops under it for another reason than
    a signal (a results file that cannot be written): it ends as interrupted, saying why."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _worker_init(spec: dict[str, Any], stop: Any = None, progress: Any = None) -> None:
    """Open, once per worker process, the device described by ``Device.reopen_spec()``.
    Ctrl-C reaches the whole process group: workers ignore it (the parent cancels their
    work and reports once, instead of one traceback per worker). ``stop`` and ``progress``:
    the runner's stop flag and the queue an adaptive search run here reports to."""
    global _worker_device, _worker_stop, _worker_progress
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _worker_stop, _worker_progress = stop, progress
    plugins = load_plugins(warn=lambda _m: None)
    sim = plugins.simulators()[spec["simulator"]]
    _worker_device = sim.create_device(spec["arch"], spec["config"], seed=spec["seed"])


def _worker_ready() -> None:
    """A task that does nothing: its answer says the workers have started."""


def _worker_point(cls: type[Experiment], point: Mapping[str, Any], ctx: RunContext) -> PointResult:
    assert _worker_device is not None
    try:
        return run_point(cls(), _worker_device, point, ctx)
    except ProbeUnsupported as e:
        return POINT_SKIPPED, f"unsupported: {e}", {}


def _worker_points(cls: type[Experiment], pts: Sequence[Mapping[str, Any]], ctx: RunContext
                   ) -> list[PointResult]:
    """Several points in a row (one task: fewer round trips for short points); the first the
    device cannot run at all ends the task."""
    out = []
    for p in pts:
        out.append(_worker_point(cls, p, ctx))
        if out[-1][0] == POINT_SKIPPED and out[-1][1].startswith("unsupported: "):
            break
    return out


def _chunks(pts: list[dict[str, Any]], workers: int, slow: bool) -> list[list[dict[str, Any]]]:
    """The points in tasks of consecutive points: about four tasks per worker, of at most
    32 points (one point each on a slow device, whose points take minutes)."""
    size = 1 if slow else max(1, min(32, len(pts) // (4 * max(1, workers))))
    return [pts[i:i + size] for i in range(0, len(pts), size)]


class _SweepStopped(Exception):  # noqa: N818 - not an error: the run stopped
    """In a worker: the run stopped; the adaptive search ends at its next probe."""


def _worker_sweep(cls: type[Experiment], ctx: RunContext, part: str | None = None
                  ) -> tuple[str, Any, int]:
    """An adaptive experiment's whole search (``Experiment.sweep``), or one ``part`` of it
    (``Experiment.sweep_part``), on this worker's device: ("ok", raw dataset, probes),
    ("unsupported", why, probes) or ("stopped", "", probes). Each probe is reported on the
    progress queue as it ends (``probes`` of them); the search stops at the next probe once
    the run stops."""
    assert _worker_device is not None
    exp = cls()
    said = [0]

    def progress(n: int) -> None:
        if _worker_progress is not None:
            _worker_progress.put((exp.name, n))
            said[0] += n
        if _worker_stop is not None and _worker_stop.is_set():
            raise _SweepStopped()

    try:
        raw = exp.sweep(_worker_device, ctx, progress) if part is None else \
            exp.sweep_part(_worker_device, ctx, progress, part)
        return "ok", raw, said[0]
    except ProbeUnsupported as e:
        return "unsupported", str(e), said[0]
    except _SweepStopped:
        return "stopped", "", said[0]
    except Exception as e:
        if not _picklable(e):  # it must reach the runner: said in words instead
            raise RuntimeError(f"{type(e).__name__}: {e}") from None
        raise


class PointRunner:
    """Runs points in this process, in a pool of worker processes, or on a Dask cluster (same
    results every way: every point is independent and seeded by its own key).

    Several experiments' threads may share it (:func:`_run_concurrently`, which sets
    ``concurrent``): their points then share the pool, an adaptive search runs whole in a
    worker (:meth:`sweep`), a thread waiting on the pool gives up as soon as
    :meth:`request_stop` is called, and the device of this process serves one thread at a
    time."""

    def __init__(self, device: Device, workers: int, client: Any = None,
                 reporter: Reporter | None = None) -> None:
        self.device = device
        self.pool: ProcessPoolExecutor | None = None
        self.cluster: Any = None
        self.where = "local"
        self.concurrent = False
        self.stop = threading.Event()
        self._stopped: Future = Future()  # done once the run stops: what threads wait beside
        self._stop_error: Callable[[], BaseException] = KeyboardInterrupt
        self._local = threading.RLock()  # this process's device: one thread at a time
        self._mp_stop: Any = None
        self._progress: Any = None
        self._listener: threading.Thread | None = None
        self._heard: dict[str, int] = {}  # probes the listener passed on, by experiment
        self._hearing = threading.Condition()
        self._dispatch: _Dispatcher | None = None
        self.priority: dict[str, tuple] = {}
        self.workers = workers
        #: called with an experiment's name once its points or search are done (the rest is
        #: analysis and writing): experiments run at once start the next grid then
        self.on_measured: Callable[[str], None] | None = None
        spec = device.reopen_spec() if workers > 1 or client is not None else None
        if client is not None:
            if spec is None:
                (reporter or Reporter()).notice(
                    f"{device.info.key} cannot be reopened on cluster workers; its points run "
                    f"here")
                client.close()
            else:
                from gpumem.run.executors import DaskPoints

                self.cluster = DaskPoints(client, spec)
                self.where = f"dask {getattr(client.scheduler, 'address', '?')}"
        elif spec is not None:
            method = "fork" if "fork" in mp.get_all_start_methods() and \
                device.source == "simulated" else "spawn"
            mpc = mp.get_context(method)
            self._mp_stop, self._progress = mpc.Event(), mpc.SimpleQueue()
            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mpc,
                                            initializer=_worker_init,
                                            initargs=(spec, self._mp_stop, self._progress))
            self.where = f"local, {workers} worker processes"

    # ---- the pool, shared by threads ------------------------------------------------------
    def _submit(self, tasks: Sequence[tuple[Callable[..., Any], tuple]], name: str = ""
                ) -> list[Future]:
        """Submit ``(fn, args)`` tasks of experiment ``name``: to the pool, or with
        experiments running at once in the order of their priority (:class:`_Dispatcher`).
        Workers start inside ``pool.submit``: SIGINT stays blocked until they ignore it."""
        assert self.pool is not None
        if self._dispatch is not None:
            first = self.priority.get(name, (len(self.priority),))
            return [self._dispatch.submit(first, fn, *args) for fn, args in tasks]
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) \
            if threading.current_thread() is threading.main_thread() else None
        try:
            return [self.pool.submit(fn, *args) for fn, args in tasks]
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _result(self, fut: Future) -> Any:
        """``fut.result()``; shared by threads, it raises the stop error as soon as the run
        stops (the main thread itself gets Ctrl-C where it waits)."""
        if not self.concurrent:
            return fut.result()
        if not fut.done():  # no polling: each look would take the GIL from the busy threads
            wait([fut, self._stopped], return_when=FIRST_COMPLETED)
        self.check()
        return fut.result()

    def measured(self, name: str) -> None:
        """Experiment ``name`` has measured everything (see :attr:`on_measured`)."""
        if self.on_measured is not None:
            self.on_measured(name)

    def check(self) -> None:
        """Raise the stop error if the run stops (see :meth:`request_stop`)."""
        if self.stop.is_set():
            raise self._stop_error()

    def request_stop(self, error: Callable[[], BaseException]) -> None:
        """Stop the run: the threads waiting here raise ``error()``, queued points are
        dropped and adaptive searches in workers end at their next probe."""
        self._stop_error = error
        self.stop.set()
        if not self._stopped.done():
            self._stopped.set_result(None)
        if self._mp_stop is not None:
            self._mp_stop.set()

    def start(self, priority: Mapping[str, tuple] | None = None) -> None:
        """Experiments are about to run at once: start the worker processes now, before any
        other thread of this process exists (a fork copies only the calling thread, and a
        lock another thread held would stay held in the worker), then hand tasks to the pool
        by ``priority`` (experiment name -> sort key; FIFO within one experiment)."""
        if self.pool is None:
            return
        self._submit([(_worker_ready, ())])  # a fork pool forks every worker inside it
        self.priority = dict(priority or {})
        self._dispatch = _Dispatcher(self.pool, 2 * self.workers)

    def listen(self, on_progress: Callable[[str, int], None]) -> None:
        """Pass the progress of adaptive searches run in workers (experiment name, probes)
        to ``on_progress``, from a thread of this process, until :meth:`close`."""
        if self._progress is None or self._listener is not None:
            return
        q = self._progress

        def loop() -> None:
            while True:
                try:
                    item = q.get()
                except (EOFError, OSError):
                    return
                if item is None:
                    return
                try:
                    on_progress(*item)
                except Exception:  # noqa: BLE001 - a display's bug must not stop the run
                    pass
                with self._hearing:
                    self._heard[item[0]] = self._heard.get(item[0], 0) + item[1]
                    self._hearing.notify_all()

        self._listener = threading.Thread(target=loop, name="gpumem-progress", daemon=True)
        self._listener.start()

    def sweeps_remotely(self, experiment: Experiment) -> bool:
        """Does :meth:`sweep` run this adaptive experiment in a worker?"""
        return self.concurrent and self.pool is not None and _picklable(type(experiment))

    def sweep(self, experiment: Experiment, ctx: RunContext) -> Any:
        """The raw dataset of an adaptive experiment's search, run whole in a worker, or,
        where it declares parts (``Experiment.sweep_parts``), each part in a worker of its
        own, at once, then joined in the parts' order."""
        parts: Sequence[str | None] = experiment.sweep_parts(ctx) or (None,)
        cls = type(experiment)
        futs = self._submit([(_worker_sweep, (cls, ctx, p)) for p in parts], experiment.name)
        try:
            done = [self._result(f) for f in futs]
        except BaseException:
            for f in futs:
                f.cancel()
            raise
        said = sum(d[2] for d in done)
        if self._listener is not None:  # its progress shown before it ends (5 s at most)
            with self._hearing:
                self._hearing.wait_for(lambda: self._heard.get(experiment.name, 0) >= said,
                                       timeout=5)
        for kind, got, _ in done:
            if kind == "unsupported":
                raise ProbeUnsupported(got)
            if kind == "stopped":
                raise self._stop_error()
        if parts == (None,):
            return done[0][1]
        return experiment.join_parts([d[1] for d in done])

    # ---- points -----------------------------------------------------------------------
    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        results: dict[tuple, PointResult] = {}
        cls = type(experiment)
        if self.cluster is not None and _picklable(cls):
            return self.cluster.run(experiment, pts, ctx, on_done)
        if self.pool is not None and _picklable(cls):
            chunks = _chunks(pts, self.workers, ctx.slow)
            futures = self._submit([(_worker_points, (cls, c, ctx)) for c in chunks],
                                   experiment.name)
            try:
                for chunk, fut in zip(chunks, futures, strict=True):
                    for p, res in zip(chunk, self._result(fut), strict=False):  # may end early
                        if res[1].startswith("unsupported: ") and res[0] == POINT_SKIPPED:
                            raise ProbeUnsupported(res[1][len("unsupported: "):])
                        results[point_key(p)] = res
                        on_done()
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
            return results
        with self._local if self.concurrent else contextlib.nullcontext():
            for p in pts:
                if self.concurrent:
                    self.check()
                results[point_key(p)] = run_point(experiment, self.device, p, ctx)
                on_done()
        return results

    def close(self) -> None:
        if self._dispatch is not None:  # what it still holds is dropped
            self._dispatch.close()
            self._dispatch = None
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        if self._listener is not None:  # every worker is gone: what they said is queued
            self._progress.put(None)
            self._listener.join(timeout=5)
            self._listener = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


class _Dispatcher:
    """Hands tasks to a process pool in the order of their priority (then of submission),
    keeping at most ``limit`` in the pool at a time, from a thread of its own: with
    experiments running at once, an earlier experiment's points run before a later one's
    (they end about in the order they would one at a time) and an adaptive search or a
    refinement round does not queue behind a long grid. The futures it returns are its own,
    completed from the pool's; one cancelled before it reaches the pool never runs."""

    def __init__(self, pool: ProcessPoolExecutor, limit: int) -> None:
        self.pool, self.limit = pool, max(1, limit)
        self._heap: list[tuple[tuple, int, Future, Callable[..., Any], tuple]] = []
        self._seq = 0
        self._inflight = 0
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="gpumem-dispatch",
                                        daemon=True)
        self._thread.start()

    def submit(self, priority: tuple, fn: Callable[..., Any], *args: Any) -> Future:
        fut: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            heapq.heappush(self._heap, (priority, self._seq, fut, fn, args))
            self._seq += 1
            self._cond.notify_all()
        return fut

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or self._inflight >= self.limit):
                    self._cond.wait()
                if self._closed:
                    return
                _p, _n, fut, fn, args = heapq.heappop(self._heap)
                if not fut.set_running_or_notify_cancel():
                    continue  # cancelled while it waited here
                self._inflight += 1
            try:
                real = self.pool.submit(fn, *args)
            except BaseException as e:  # noqa: BLE001 - the pool is shut down or broken
                self._finished()
                fut.set_exception(e)
                continue
            real.add_done_callback(lambda r, fut=fut: self._copy(r, fut))

    def _finished(self) -> None:
        with self._cond:
            self._inflight -= 1
            self._cond.notify_all()

    def _copy(self, real: Future, fut: Future) -> None:
        self._finished()
        if real.cancelled():
            fut.set_exception(CancelledError())
        elif real.exception() is not None:
            fut.set_exception(real.exception())
        else:
            fut.set_result(real.result())

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for _p, _n, fut, _fn, _args in self._heap:
                fut.cancel()
            self._heap.clear()
            self._cond.notify_all()
        self._thread.join(timeout=5)


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
        return True
    except Exception:  # noqa: BLE001
        return False


# ---------------------------------------------------------------------------------------------
# Experiments
# ---------------------------------------------------------------------------------------------


def expected_values(plugins: Plugins, arch: str, device: DeviceInfo) -> list[Expected]:
    return plugins.expected_values(arch, device)


def _extend(axes: list[Axis], extra: Mapping[str, Sequence[Any]]) -> tuple[list[Axis], list[dict]]:
    """Add refinement values to axes; return the new axes and the points that are new."""
    new_axes = []
    for a in axes:
        add = [v for v in extra.get(a.name, ()) if v not in a.values]
        vals = tuple(sorted(set(a.values) | set(add))) if add else a.values
        new_axes.append(Axis(a.name, vals, a.units, a.long_name))
    old = {point_key(p) for p in points(axes)}
    fresh = [p for p in points(new_axes) if point_key(p) not in old]
    return new_axes, fresh


def _adaptive(exp: Experiment, device: Device, ctx: RunContext, reporter: Reporter,
              watch: Watch | None = None, runner: PointRunner | None = None) -> Any:
    """Run an experiment that drives its own search (``Experiment.sweep``), or return None.
    It has no grid points to read the device beside: ``watch`` looks for other processes
    as it reports progress. Where ``runner`` runs experiments at once, the search runs in
    one of its workers (:meth:`PointRunner.sweep`; a simulator's watch only looks when
    forced, so there is nothing to look for there)."""
    if type(exp).sweep is Experiment.sweep:
        return None
    reporter.experiment_started(exp.name, 0)
    if runner is not None and runner.sweeps_remotely(exp):
        raw = runner.sweep(exp, ctx)
    else:
        raw = _sweep_here(exp, device, ctx, reporter, watch, runner)
    if raw is not None and "point_status" not in raw:
        raw["point_status"] = ((), np.int8(POINT_OK), {"long_name": "outcome", "units": "1"})
    return raw


def _sweep_here(exp: Experiment, device: Device, ctx: RunContext, reporter: Reporter,
                watch: Watch | None, runner: PointRunner | None) -> Any:
    """An adaptive search on this process's device (with experiments running at once: one
    at a time, and it stops at its next probe once the run stops)."""
    shared = runner is not None and runner.concurrent

    def progress(n: int) -> None:
        if watch is not None:
            watch.sample()
        for _ in range(n):
            reporter.point_done(exp.name)
        if shared:
            runner.check()

    with runner._local if shared else contextlib.nullcontext():
        return exp.sweep(device, ctx, progress)


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


def estimate_run(req: RunRequest, *, plugins: Plugins, reporter: Reporter
                 ) -> dict[str, Estimate]:
    """``gpumem run --estimate``: open the device, price what ``req`` would run on
    ``req.workers`` workers (:func:`price_run`), and run nothing."""
    req, why = with_arch(plugins, req)
    if why:
        reporter.notice(why)
    arch_obj = resolve_arch(plugins, req.arch)
    classes = resolve_experiments(plugins, req.arch, req.experiments)
    if not classes:
        raise UsageError(f"no experiment applies to '{req.arch}'")
    device = open_device(plugins, resolve_device(plugins, arch_obj, req.device,
                                                 req.sim_config), req.arch, req.seed)
    try:
        ctx = RunContext(req.arch, device.info, req.quick, req.seed)
        if not ctx.slow:
            reporter.notice(f"estimate: {device.info.key} is not a slow device (it declares "
                            f"no simulated cycles per second): its plans are not priced")
        return price_run(None, device, classes, ctx, req.workers, False, reporter)
    finally:
        device.close()


def run_experiment(plugins: Plugins, store: RunStore, device: Device, cls: type[Experiment],
                   ctx: RunContext, expected: list[Expected], runner: PointRunner,
                   reporter: Reporter, resume: bool, argv: Sequence[str],
                   priced: Estimate | None = None) -> Outcome:
    exp = cls()
    t0 = time.monotonic()
    _mark("start", cls.name)
    plan: Plan = exp.plan(ctx)
    ctx = ctx.with_repeats(plan)  # each point timed as often as the plan declares
    phash = plan.params_hash(exp)
    key = store.entry_key(device.info.key, exp.name, phash)
    if resume:
        ok, _why = store.is_complete(key)
        if ok:
            entry = store.entry(key)
            assert entry is not None
            from gpumem.contracts.findings import from_dataset
            from gpumem.results.io import open_findings

            path = store.path_of(entry.data)  # inside the run: is_complete checked it
            return Outcome(exp.name, "resumed", path, from_dataset(open_findings(path)))
    missing = set(exp.probes) - set(device.probes)
    if missing:
        reason = device.lacks(missing)
        store.set_entry(key, device=device.info.key, experiment=exp.name, params_hash=phash,
                        status="skipped", error=reason)
        return Outcome(exp.name, "skipped", error=reason)
    try:
        # inside the try: a Ctrl-C held while the claim is written is delivered as it ends,
        # and must find the handler that releases the entry (release touches only an entry
        # this process owns and left running, so an earlier failure changes nothing)
        store.claim(key, device=device.info.key, experiment=exp.name, params_hash=phash,
                    arch=ctx.arch)
        return _measure_and_keep(plugins, store, device, exp, plan, key, ctx, expected,
                                 runner, reporter, argv, t0, priced)
    except ProbeUnsupported as e:
        _release(store, key, "skipped", str(e))
        return Outcome(exp.name, "skipped", error=str(e), wall_s=time.monotonic() - t0)
    except Terminated:
        _release(store, key, "interrupted", "terminated (SIGTERM)")
        raise
    except KeyboardInterrupt as e:
        _release(store, key, "interrupted",
                 e.why if isinstance(e, RunStopped) else "interrupted (Ctrl-C)")
        raise
    except (ResultsWriteError, UsageError) as e:  # cannot keep results: the run stops
        _release(store, key, "failed", str(e))
        raise
    except Exception as e:  # noqa: BLE001 - this experiment's bug; the next one runs
        error = f"{type(e).__name__}: {e}"
        _release(store, key, "failed", error)
        return Outcome(exp.name, "failed", error=error, wall_s=time.monotonic() - t0)


def _release(store: RunStore, key: str, status: str, error: str) -> None:
    """End this run's entry; if even the manifest cannot be written (disk full), leave it:
    the entry names this process, and the next run into the folder marks it stale."""
    try:
        store.release(key, status, error)
    except (GpumemError, OSError):
        pass


def _with_point_totals(before: Mapping[str, Any], after: dict[str, Any],
                       totals: Mapping[str, float]) -> dict[str, Any]:
    """``after`` with each counter the points added to (:func:`point_totals`) at least
    ``before`` plus their sum: points run in worker processes counted there, where this
    process's device, whose own count is ``after``, saw none of them."""
    out = dict(after)
    for k, added in totals.items():
        v = before.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        best = max(float(out.get(k, v)), v + added)
        out[k] = int(round(best)) if isinstance(v, int) else round(best, 3)
    return out


def _prices(exp: Experiment, pts: Sequence[Mapping[str, Any]], device: Device,
            ctx: RunContext) -> list[float] | None:
    """The prices of refinement points (:func:`gpumem.run.pace.price_point`), ``None`` if one
    cannot be priced."""
    out = []
    for p in pts:
        try:
            s = price_point(exp, p, device, ctx)
        except ProbeUnsupported:
            return None
        if s is None:
            return None
        out.append(s)
    return out


def _measure_and_keep(plugins: Plugins, store: RunStore, device: Device, exp: Experiment,
                      plan: Plan, key: str, ctx: RunContext, expected: list[Expected],
                      runner: PointRunner, reporter: Reporter, argv: Sequence[str],
                      t0: float, priced: Estimate | None = None) -> Outcome:
    """Measure, analyse and write one claimed experiment (its caller ends the entry on
    any exception)."""
    phash = key.rsplit("/", 1)[1]
    axes = list(plan.axes)
    pts = points(axes)
    before = device.provenance()
    watch = Watch(device.neighbours, timed=device.source != "simulated")
    watch.sample(force=True)
    results: dict[tuple, Any] = {}
    raw = _adaptive(exp, device, ctx, reporter, watch, runner)
    if raw is None:
        reporter.experiment_started(exp.name, len(pts))
        revision = Revision(priced) if priced is not None and not priced.skipped else None

        def point_done() -> None:
            reporter.point_done(exp.name)
            if revision is not None:  # on a slow device: what is left, from the pace so far
                revision.point_done()
                if line := revision.line():
                    reporter.notice("estimate: " + line)

        results = runner.run(exp, pts, ctx, point_done)
        for _round in range(MAX_REFINE_ROUNDS):
            raw = assemble(plan, axes, results)
            extra = exp.refine(raw, ctx)
            if not extra:
                break
            axes, fresh = _extend(axes, extra)
            if not fresh:
                break
            reporter.points_added(exp.name, len(fresh))
            if revision is not None:
                revision.points_added(_prices(exp, fresh, device, ctx), len(fresh))
            _mark("round", exp.name)
            results.update(runner.run(exp, fresh, ctx, point_done))
        raw = assemble(plan, axes, results)
    _mark("measured", exp.name)
    runner.measured(exp.name)
    for k, v in plan.attrs.items():
        raw.attrs.setdefault(f"plan_{k}", attr_safe(v))
    watch.sample(force=True)
    raw.attrs.update(watch.attrs())
    after = device.provenance()
    if results:
        after = _with_point_totals(before, after, point_totals(results))
    owner = plugins.owner("experiments", exp.name)
    attrs = global_attrs(
        experiment=exp.name, experiment_version=exp.version, summary=exp.summary,
        arch=ctx.arch, device=device.info, source=device.source, plugin=owner.name,
        plugin_version=owner.version, params_hash=phash, argv=argv,
        provenance={**{f"before_{k}": v for k, v in before.items()},
                    **{f"after_{k}": v for k, v in after.items()}},
        references=str(getattr(exp, "references", "")),
        extra={"gpumem_sim_config": device.config.to_toml()} if hasattr(device, "config")
        and hasattr(device.config, "to_toml") else None,
    )
    raw.attrs.update(attrs)
    raw.attrs["gpumem_executor"] = runner.where
    if priced is not None:  # what was said up front, to hold against the wall_s it took
        raw.attrs["gpumem_estimate_s"] = round(priced.wall_s, 1)
        raw.attrs["gpumem_estimate_first_pass_s"] = round(priced.first_pass_s, 1)
    throttled = int((raw["point_throttled"] == 1).sum()) if "point_throttled" in raw else 0
    raw.attrs["gpumem_throttled_points"] = throttled
    if throttled:
        reporter.notice(f"{exp.name}: {throttled} point(s) ran while a throttling clock-event "
                        f"reason was active (flagged in point_throttled)")
    n_points = int(raw["point_status"].size)
    bad = int((raw["point_status"] == POINT_FAILED).sum())
    error = f"{bad} of {n_points} points failed" if bad else ""
    unmodelled = device.unmodelled()
    if unmodelled:  # kept, so that an analysis of the file again marks the same findings
        raw.attrs["gpumem_unmodelled"] = json.dumps(unmodelled, sort_keys=True)
    contention = assess(raw, str(raw.attrs.get("after_neighbours_seen", "")))
    reason = contention.reason()
    raw.attrs[CONTENTION_ATTR] = reason  # kept: a later analysis marks the same findings
    try:
        findings = mark(not_modelled(evaluate(analyse(exp, raw), expected), unmodelled),
                        reason)
    except Exception as e:  # noqa: BLE001 - keep the raw data, report the analysis bug
        findings = []
        error = f"analysis failed: {type(e).__name__}: {e}"
        raw.attrs["gpumem_analysis_error"] = traceback.format_exc(limit=5)
    fds = to_dataset(findings)
    fds.attrs.update({k: raw.attrs[k] for k in ("gpumem_experiment", "device_key",
                                                  "gpumem_arch", "date_created")})
    status = "failed" if error else "complete"
    path, _sha = store.write(device.info.key, exp.name, phash, raw, fds, key=key, fields=dict(
        status=status, finished=now_iso(), wall_s=round(time.monotonic() - t0, 3), error=error,
        points=n_points, throttled_points=throttled, experiment_version=exp.version,
        **({"contention": reason} if reason else {}),
        findings={f.name: f.as_dict() for f in findings}))
    return Outcome(exp.name, status, path, findings, error, time.monotonic() - t0, n_points,
                   reason)


# ---------------------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------------------


def _mine(store: RunStore) -> list[dict[str, Any]]:
    """The manifest entries with a results file this process wrote (raises GpumemError
    where the manifest cannot be read)."""
    return [e.data for e in store.entries()
            if e.data.get("owner") == store.owner and e.data.get("file")]


def _written(store: RunStore) -> set[str]:
    """The experiments this process wrote a results file for."""
    try:
        return {str(d.get("experiment")) for d in _mine(store) if d.get("status") == "complete"}
    except GpumemError:
        return set()


def _kept(store: RunStore, report: RunReport) -> int:
    """Experiments with a file: resumed ones, and those this process wrote (an interrupt
    that waited for a write lands after the experiment was recorded)."""
    try:
        mine = len(_mine(store))
    except GpumemError:
        mine = sum(1 for o in report.outcomes if o.file and o.status != "resumed")
    return mine + sum(1 for o in report.outcomes if o.status == "resumed")


def contention_line(report: RunReport) -> str:
    """One line naming what was seen of other work on the GPU during the run, and what it
    means for the findings ("" when nothing was)."""
    hit = [o for o in report.outcomes if o.contention]
    if not hit:
        return ""
    marked = sum(1 for o in hit for f in o.findings if f.status == CONTENDED)
    what = " | ".join(f"{o.experiment}: {o.contention}" for o in hit)
    return (f"contended: {what}; {marked} finding(s) marked contended, neither pass nor fail "
            f"(measure on a free GPU: --exclusive SECONDS waits for one)")


def run(req: RunRequest, *, plugins: Plugins, reporter: Reporter | None = None,
        results_root: Path = DEFAULT_RESULTS_ROOT) -> RunReport:
    """Run ``req``; see the module docstring for the order of work. SIGTERM is handled
    like Ctrl-C, as :class:`~gpumem.contracts.errors.Interrupted` with exit code 143."""
    try:
        with sigterm_as_interrupt():
            return _run(req, plugins=plugins, reporter=reporter, results_root=results_root)
    except Terminated:
        err = Interrupted("terminated (SIGTERM) before any experiment ran")
        err.exit_code = 143
        raise err from None


def _run(req: RunRequest, *, plugins: Plugins, reporter: Reporter | None,
         results_root: Path) -> RunReport:
    _mark("run")
    reporter = reporter or Reporter()
    if req.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {req.workers}")
    if req.executor not in ("local", "dask"):
        raise UsageError(f"--executor must be 'local' or 'dask', got {req.executor!r}")
    if req.executor == "dask" and req.workers != 1:
        raise UsageError("--workers is for local execution; the Dask cluster has its own "
                         "workers")
    if req.executor == "local" and req.scheduler:
        raise UsageError("--scheduler applies to --executor dask")
    req, why = with_arch(plugins, req)
    arch_obj = resolve_arch(plugins, req.arch)
    classes = resolve_experiments(plugins, req.arch, req.experiments)
    if not classes:
        raise UsageError(f"no experiment applies to '{req.arch}'")
    if req.out is not None:
        RunStore.check_writable(req.out)
    choice = resolve_device(plugins, arch_obj, req.device, req.sim_config)
    client = None
    if req.executor == "dask":
        from gpumem.run.executors import connect

        client = connect(req.scheduler)  # a wrong address fails before anything is written
    try:
        device = open_device(plugins, choice, req.arch, req.seed)
    except BaseException:
        if client is not None:
            client.close()
        raise
    try:
        if req.exclusive is not None:  # before a byte is written
            wait_until_free(device.neighbours, req.exclusive, reporter.notice)
        out = req.out
        if out is None:
            if req.resume:
                out = latest_run(results_root, req.arch, device.info.key)
                if out is None:
                    raise UsageError(f"--resume: no earlier run of '{req.arch}' on "
                                     f"{device.info.key} under {results_root}/ (give --out)")
            else:
                out = default_out(results_root, req.arch, device.info.key)
        store = RunStore.open(out)
        store.check_no_symlink(store.root / device.info.key)  # before measuring anything
        report = RunReport(out, device.info, req.arch)
        for notice in [n for n in (why, choice.notice) if n] + store.stale:
            report.notices.append(notice)
            reporter.notice(notice)
        store.start_run({"argv": list(req.argv), "arch": req.arch, "device": device.info.key,
                         "pid": os.getpid(), "python": sys.version.split()[0],
                         **({"arch_choice": why} if why else {})})
        ctx = RunContext(req.arch, device.info, req.quick, req.seed)
        expected = expected_values(plugins, req.arch, device.info)
        workers = req.workers if client is None else max(1, len(
            client.scheduler_info().get("workers", {})))
        runner = PointRunner(device, req.workers, client, reporter)
        client = None  # the runner owns it now
        try:
            priced = price_run(store, device, classes, ctx, workers, req.resume, reporter)
            if _concurrency(runner, device, ctx, _tasks(classes, ctx)):
                _run_concurrently(plugins, store, device, classes, ctx, expected, runner,
                                  reporter, req, priced, report)
            else:
                for cls in classes:
                    try:
                        outcome = run_experiment(plugins, store, device, cls, ctx, expected,
                                                 runner, reporter, req.resume, req.argv,
                                                 priced.get(cls.name))
                    except KeyboardInterrupt as e:
                        raise _interrupted(e, [cls.name], store, report) from None
                    except (ResultsWriteError, UsageError) as e:
                        raise _stopped(e, cls.name, store, report) from None
                    except Exception as e:  # noqa: BLE001 - one experiment's bug, the rest run
                        outcome = _unplanned(store, device, cls, e)
                    _mark("end", cls.name)
                    report.outcomes.append(outcome)
                    reporter.experiment_finished(outcome)
        finally:
            runner.close()
        line = contention_line(report)
        if line:
            report.notices.append(line)
            reporter.notice(line)
        return report
    finally:
        if client is not None:
            client.close()
        device.close()
        _write_timeline()


def _interrupted(e: KeyboardInterrupt, during: Sequence[str], store: RunStore,
                 report: RunReport) -> Interrupted:
    """The one-line error of a run stopped by Ctrl-C or SIGTERM (``e``) during the
    experiments ``during``."""
    kept = _kept(store, report)
    what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
    names = ", ".join(f"'{n}'" for n in during) or "the run"
    out = report.run_dir
    err = Interrupted(f"{what} during {names}; {kept} finished experiment(s) kept in {out} "
                      f"(continue with: --resume --out {out})")
    err.exit_code = 143 if isinstance(e, Terminated) else 130
    return err


def _stopped(e: ResultsWriteError | UsageError, name: str, store: RunStore,
             report: RunReport) -> GpumemError:
    """The one-line error of a run stopped because results cannot be kept (``e``, raised by
    experiment ``name``)."""
    kept = _kept(store, report)
    return type(e)(f"{e}; {name} failed, {kept} finished experiment(s) kept in "
                   f"{report.run_dir}")


def _unplanned(store: RunStore, device: Device, cls: type[Experiment], e: Exception
               ) -> Outcome:
    """An experiment that failed before it was claimed (its plan raised): recorded failed."""
    outcome = Outcome(cls.name, "failed", error=f"{type(e).__name__}: {e}")
    store.set_entry(f"{device.info.key}/{cls.name}/unplanned", device=device.info.key,
                    experiment=cls.name, status="failed", error=outcome.error)
    return outcome


# ---------------------------------------------------------------------------------------------
# Experiments at once
# ---------------------------------------------------------------------------------------------


def _tasks(classes: Sequence[type[Experiment]], ctx: RunContext) -> int:
    """How many pieces of work the experiments are at least: one each, or each part of a
    search declared in parts (``Experiment.sweep_parts``)."""
    return sum(max(1, len(cls().sweep_parts(ctx))) for cls in classes)


def _concurrency(runner: PointRunner, device: Device, ctx: RunContext, n: int) -> bool:
    """Run the experiments (``n`` pieces of work, :func:`_tasks`) at once? With worker
    processes, more than one piece, a fast device whose every probe is a function of its
    request alone (a chase's answer that depended on the chases before it would change with
    the order), unless ``GPUMEM_SEQUENTIAL`` asks for one at a time."""
    return (runner.pool is not None and n > 1 and not ctx.slow
            and bool(getattr(device, "independent_probes", False))
            and os.environ.get(SEQUENTIAL_ENV, "").strip() in ("", "0"))


def _rank(cls: type[Experiment]) -> int:
    """Priority: adaptive searches first (each is one long task), then experiments that
    refine (rounds one after another), then the plain grids. The first two are chains of
    steps that each wait for the last: they start at once. A plain grid fills the workers
    by itself: the grids start one after another, each as the one before has its points
    (its analysis and write overlap the next one's points)."""
    if cls.sweep is not Experiment.sweep:
        return 0
    return 1 if cls.refine is not Experiment.refine else 2


class _Serialised(Reporter):
    """A reporter called from several threads: one call at a time."""

    def __init__(self, inner: Reporter) -> None:
        self.inner, self._lock = inner, threading.RLock()

    def notice(self, message: str) -> None:
        with self._lock:
            self.inner.notice(message)

    def experiment_started(self, name: str, total: int) -> None:
        with self._lock:
            self.inner.experiment_started(name, total)

    def points_added(self, name: str, count: int) -> None:
        with self._lock:
            self.inner.points_added(name, count)

    def point_done(self, name: str) -> None:
        with self._lock:
            self.inner.point_done(name)

    def experiment_finished(self, outcome: Outcome) -> None:
        with self._lock:
            self.inner.experiment_finished(outcome)


class _LockedStore:
    """The run store shared by the experiments' threads: one call at a time. The manifest's
    file lock keeps processes apart; this keeps threads apart without its polling, and
    results files are written one at a time. Remembers the entries claimed."""

    def __init__(self, store: RunStore) -> None:
        self._store, self._lock = store, threading.RLock()
        self.claimed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)
        return call

    def claim(self, key: str, **fields: Any) -> None:
        with self._lock:
            self.claimed.append(key)
            self._store.claim(key, **fields)


def _run_concurrently(plugins: Plugins, store: RunStore, device: Device,
                      classes: Sequence[type[Experiment]], ctx: RunContext,
                      expected: list[Expected], runner: PointRunner, reporter: Reporter,
                      req: RunRequest, priced: Mapping[str, Estimate],
                      report: RunReport) -> None:
    """The experiments at once, one thread each (:func:`run_experiment`, as one at a time
    would run it), their points and adaptive searches on ``runner``'s workers: the chains
    (adaptive searches, refinements) all from the start, the plain grids one after another
    in their order, each started when the one before has its points (:func:`_rank`). The
    outcomes go to ``report`` in the order of ``classes``, the reporter hears of each as it
    ends. Ctrl-C or SIGTERM (in this, the main thread) stops the experiments still
    measuring and waits for the others to be written; a results file that cannot be written
    stops the rest likewise, then the run ends with that error."""
    rep = _Serialised(reporter)
    shared: Any = _LockedStore(store)  # a RunStore to run_experiment
    runner.concurrent = True
    done: queue.SimpleQueue = queue.SimpleQueue()
    running: dict[int, str] = {}  # started and not ended: index -> name

    def work(i: int) -> None:
        cls = classes[i]
        try:
            if runner.stop.is_set():
                done.put((i, "not started", None))
                return
            running[i] = cls.name
            outcome = run_experiment(plugins, shared, device, cls, ctx, expected, runner,
                                     rep, req.resume, req.argv, priced.get(cls.name))
            _mark("end", cls.name)
            done.put((i, "outcome", outcome))
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            done.put((i, "raised", e))

    outcomes: dict[int, Outcome] = {}
    stopped_by: list[tuple[str, BaseException]] = []  # an error that stopped the run
    interrupted: list[str] = []
    pending = set(range(len(classes)))

    index = {c.name: i for i, c in enumerate(classes)}
    grids = [i for i, c in enumerate(classes) if _rank(c) == 2]
    threads = {i: threading.Thread(target=work, args=(i,), daemon=True,
                                   name=f"gpumem-{classes[i].name}")
               for i in range(len(classes))}

    def start_next_grid() -> None:
        if runner.stop.is_set():  # the run stops: the grids not started never will
            pending.difference_update(grids)
            grids.clear()
        elif grids:
            threads[grids.pop(0)].start()

    def stop(error: Callable[[], BaseException]) -> None:
        runner.request_stop(error)
        start_next_grid()

    def collect() -> None:
        i, kind, got = done.get(timeout=0.2)
        if kind == "measured":
            if i == current_grid[0]:
                current_grid[0] = grids[0] if grids else -1
                start_next_grid()
            return
        pending.discard(i)
        running.pop(i, None)
        if i == current_grid[0]:  # ended before it measured (skipped, resumed, failed)
            current_grid[0] = grids[0] if grids else -1
            start_next_grid()
        cls = classes[i]
        if kind == "outcome":
            outcomes[i] = got
            rep.experiment_finished(got)
        elif kind == "raised" and isinstance(got, KeyboardInterrupt):
            interrupted.append(cls.name)
        elif kind == "raised" and isinstance(got, (ResultsWriteError, UsageError)):
            stopped_by.append((cls.name, got))
            stop(lambda: RunStopped(f"the run stopped: {cls.name}: {got}"))
        elif kind == "raised" and isinstance(got, Exception):  # its plan raised
            outcomes[i] = _unplanned(shared, device, cls, got)
            rep.experiment_finished(outcomes[i])
        elif kind == "raised":  # SystemExit and the like: the run cannot go on
            stopped_by.append((cls.name, got))
            stop(lambda: RunStopped(f"the run stopped: {cls.name}"))

    current_grid = [grids[0] if grids else -1]  # the grid measuring now
    runner.on_measured = lambda name: done.put((index.get(name, -1), "measured", None))
    try:
        runner.start({c.name: (_rank(c), i) for i, c in enumerate(classes)})
        _mark("workers")
        runner.listen(lambda name, n: [rep.point_done(name) for _ in range(n)])
        for i in sorted(range(len(classes)), key=lambda i: (_rank(classes[i]), i)):
            if _rank(classes[i]) < 2:
                threads[i].start()
        start_next_grid()
        while pending:
            try:
                collect()
            except queue.Empty:
                pass
    except KeyboardInterrupt as e:
        during = [running[i] for i in sorted(running)]
        stop(type(e) if isinstance(e, Terminated) else KeyboardInterrupt)
        try:  # the ones measuring stop at once; the ones measured are written
            while any(t.is_alive() for t in threads.values()) or not done.empty():
                try:
                    collect()
                except queue.Empty:
                    pass
        except KeyboardInterrupt:  # again: stop waiting; their entries end interrupted
            for key in shared.claimed:
                _release(shared, key, "interrupted",
                         "terminated (SIGTERM)" if isinstance(e, Terminated)
                         else "interrupted (Ctrl-C)")
        report.outcomes.extend(outcomes[i] for i in sorted(outcomes))
        # left, stopped, and not written: an experiment whose file this process recorded
        # before the stop reached its thread is kept, not interrupted
        written = _written(store)
        stopped = [n for n in [classes[i].name for i in sorted(running)] + interrupted
                   if n not in written]
        raise _interrupted(e, [n for n in during if n in stopped] or during, store,
                           report) from None
    report.outcomes.extend(outcomes[i] for i in sorted(outcomes))
    if stopped_by:
        name, err = stopped_by[0]
        if isinstance(err, (ResultsWriteError, UsageError)):
            raise _stopped(err, name, store, report) from None
        raise err


# ---------------------------------------------------------------------------------------------
# The timeline (GPUMEM_TIMELINE)
# ---------------------------------------------------------------------------------------------

_timeline: list[tuple[float, str, str]] = []


def _mark(what: str, name: str = "") -> None:
    """Note when ``what`` happened (to experiment ``name``), if a timeline is asked for."""
    if os.environ.get(TIMELINE_ENV):
        _timeline.append((time.time(), what, name))


def _write_timeline() -> None:
    """Write the run's timeline to ``GPUMEM_TIMELINE`` (nothing if unset or unwritable)."""
    path = os.environ.get(TIMELINE_ENV)
    if not path or not _timeline:
        return
    _mark("main_cpu_s", f"{time.process_time():.3f}")  # this process's threads, all of them
    try:
        Path(path).write_text(json.dumps([list(e) for e in _timeline]))
    except OSError:
        pass
    _timeline.clear()
