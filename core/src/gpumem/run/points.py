"""Where an experiment's points run: this process, a pool of worker processes, or a Dask
cluster (:class:`Points` and its three kinds; :func:`make_points` picks one).

Same results every way: every point is independent and seeded by its own key. With
experiments running at once (:mod:`gpumem.run.schedule` sets :attr:`Points.concurrent`),
several experiments' threads share one :class:`Points`: their points share the pool, an
adaptive search runs whole in a worker (:meth:`Points.sweep`), a thread waiting on the pool
gives up as soon as :meth:`Points.request_stop` is called, and the device of this process
serves one thread at a time (:meth:`Points.device_lock`).

A point run elsewhere sends back a :data:`~gpumem.run.point.PointOutcome`: its result, or
:class:`~gpumem.run.point.Unsupported` where the device cannot run it at all.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import multiprocessing as mp
import pickle
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, wait
from typing import Any

from gpumem.contracts.device import Device
from gpumem.contracts.errors import ProbeUnsupported
from gpumem.contracts.experiment import Experiment, RunContext
from gpumem.plugin.registry import load_plugins
from gpumem.results.schema import point_key
from gpumem.run.point import (
    PointOutcome,
    PointResult,
    Unsupported,
    point_outcome,
    result_of,
    run_point,
)
from gpumem.run.request import Reporter

# ---------------------------------------------------------------------------------------------
# In a worker process
# ---------------------------------------------------------------------------------------------

_worker_device: Device | None = None
_worker_stop: Any = None       # in a worker: the runner's stop flag (a multiprocessing Event)
_worker_progress: Any = None   # in a worker: where an adaptive search reports its probes


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


def _worker_points(cls: type[Experiment], pts: Sequence[Mapping[str, Any]], ctx: RunContext
                   ) -> list[PointOutcome]:
    """Several points in a row (one task: fewer round trips for short points); the first the
    device cannot run at all ends the task."""
    assert _worker_device is not None
    out: list[PointOutcome] = []
    for p in pts:
        out.append(point_outcome(cls(), _worker_device, p, ctx))
        if isinstance(out[-1], Unsupported):
            break
    return out


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
        if not picklable(e):  # it must reach the runner: said in words instead
            raise RuntimeError(f"{type(e).__name__}: {e}") from None
        raise


def _chunks(pts: list[dict[str, Any]], workers: int, slow: bool) -> list[list[dict[str, Any]]]:
    """The points in tasks of consecutive points: about four tasks per worker, of at most
    32 points (one point each on a slow device, whose points take minutes)."""
    size = 1 if slow else max(1, min(32, len(pts) // (4 * max(1, workers))))
    return [pts[i:i + size] for i in range(0, len(pts), size)]


def picklable(obj: Any) -> bool:
    """Can ``obj`` travel to another process (an experiment class defined in a test
    function cannot: its points then run here)."""
    try:
        pickle.dumps(obj)
        return True
    except Exception:  # noqa: BLE001
        return False


# ---------------------------------------------------------------------------------------------
# The three kinds
# ---------------------------------------------------------------------------------------------


class Points:
    """Points run in this process, one after another, on the run's device. The base of the
    other kinds: each runs here what it cannot send away (an experiment class that does not
    pickle), and all share the run's stop (:meth:`request_stop`, :meth:`check`)."""

    #: where the points run, in words (kept in every results file: ``gpumem_executor``)
    where = "local"

    def __init__(self, device: Device, workers: int = 1) -> None:
        self.device = device
        self.workers = workers
        #: set while experiments run at once (their threads share this object)
        self.concurrent = False
        self.stop = threading.Event()
        self._stopped: Future = Future()  # done once the run stops: what threads wait beside
        self._stop_error: Callable[[], BaseException] = KeyboardInterrupt
        self._local = threading.RLock()  # this process's device: one thread at a time
        #: called with an experiment's name once its points or search are done (the rest is
        #: analysis and writing): experiments run at once start the next grid then
        self.on_measured: Callable[[str], None] | None = None

    @property
    def in_workers(self) -> bool:
        """Do points run in worker processes of this machine (so experiments may run at
        once, their threads waiting on the pool)?"""
        return False

    def device_lock(self) -> contextlib.AbstractContextManager[Any]:
        """Held while this process's device serves one experiment's thread."""
        return self._local if self.concurrent else contextlib.nullcontext()

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

    def start(self, priority: Mapping[str, tuple] | None = None) -> None:
        """Experiments are about to run at once, in the order of ``priority`` (experiment
        name -> sort key)."""

    def listen(self, on_progress: Callable[[str, int], None]) -> None:
        """Pass the progress of adaptive searches run elsewhere to ``on_progress``."""

    def sweeps_remotely(self, experiment: Experiment) -> bool:
        """Does :meth:`sweep` run this adaptive experiment in a worker?"""
        return False

    def sweep(self, experiment: Experiment, ctx: RunContext) -> Any:
        """The raw dataset of an adaptive experiment's search run in a worker. Called only
        where :meth:`sweeps_remotely` says so, which points run here never do: a call is
        the caller's mistake, refused."""
        raise RuntimeError(f"{self.where}: {experiment.name}'s search runs in this process "
                           f"(sweeps_remotely is False): call Experiment.sweep here")

    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        """Each point's result by its key (``on_done`` called as each ends); raises
        ``ProbeUnsupported`` where the device cannot run them at all."""
        results: dict[tuple, PointResult] = {}
        with self.device_lock():
            for p in pts:
                if self.concurrent:
                    self.check()
                results[point_key(p)] = run_point(experiment, self.device, p, ctx)
                on_done()
        return results

    def close(self) -> None:
        """Let go of the workers (the run's device stays open: it is the run's)."""


class PoolPoints(Points):
    """Points in a pool of worker processes of this machine, each with the device reopened
    from its ``reopen_spec()``."""

    def __init__(self, device: Device, workers: int, spec: dict[str, Any]) -> None:
        super().__init__(device, workers)
        method = "fork" if "fork" in mp.get_all_start_methods() and \
            device.source == "simulated" else "spawn"
        mpc = mp.get_context(method)
        self._mp_stop, self._progress = mpc.Event(), mpc.SimpleQueue()
        self.pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            max_workers=workers, mp_context=mpc, initializer=_worker_init,
            initargs=(spec, self._mp_stop, self._progress))
        self.where = f"local, {workers} worker processes"
        self._listener: threading.Thread | None = None
        self._heard: dict[str, int] = {}  # probes the listener passed on, by experiment
        self._hearing = threading.Condition()
        self._dispatch: _Dispatcher | None = None
        self.priority: dict[str, tuple] = {}

    @property
    def in_workers(self) -> bool:
        return self.pool is not None

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

    def request_stop(self, error: Callable[[], BaseException]) -> None:
        super().request_stop(error)
        self._mp_stop.set()

    def start(self, priority: Mapping[str, tuple] | None = None) -> None:
        """Start the worker processes now, before any other thread of this process exists (a
        fork copies only the calling thread, and a lock another thread held would stay held
        in the worker), then hand tasks to the pool by ``priority`` (FIFO within one
        experiment)."""
        if self.pool is None:
            return
        self._submit([(_worker_ready, ())])  # a fork pool forks every worker inside it
        self.priority = dict(priority or {})
        self._dispatch = _Dispatcher(self.pool, 2 * self.workers)

    def listen(self, on_progress: Callable[[str, int], None]) -> None:
        """Pass the progress of adaptive searches run in workers (experiment name, probes)
        to ``on_progress``, from a thread of this process, until :meth:`close`."""
        if self._listener is not None:
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
        return self.concurrent and self.pool is not None and picklable(type(experiment))

    def sweep(self, experiment: Experiment, ctx: RunContext) -> Any:
        """The search run whole in a worker, or, where it declares parts
        (``Experiment.sweep_parts``), each part in a worker of its own, at once, then joined
        in the parts' order."""
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

    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        cls = type(experiment)
        if self.pool is None or not picklable(cls):
            return super().run(experiment, pts, ctx, on_done)
        results: dict[tuple, PointResult] = {}
        chunks = _chunks(pts, self.workers, ctx.slow)
        futures = self._submit([(_worker_points, (cls, c, ctx)) for c in chunks],
                               experiment.name)
        try:
            for chunk, fut in zip(chunks, futures, strict=True):
                for p, res in zip(chunk, self._result(fut), strict=False):  # may end early
                    results[point_key(p)] = result_of(res)
                    on_done()
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
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


class ClusterPoints(Points):
    """Points on a Dask cluster (:mod:`gpumem.run.executors`)."""

    def __init__(self, device: Device, client: Any, spec: dict[str, Any]) -> None:
        super().__init__(device)
        from gpumem.run.executors import DaskPoints

        self.cluster: DaskPoints | None = DaskPoints(client, spec)
        self.where = f"dask {getattr(client.scheduler, 'address', '?')}"

    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        if self.cluster is None or not picklable(type(experiment)):
            return super().run(experiment, pts, ctx, on_done)
        return self.cluster.run(experiment, pts, ctx, on_done)

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


def make_points(device: Device, workers: int = 1, client: Any = None,
                reporter: Reporter | None = None) -> Points:
    """The kind of :class:`Points` a run asks for: on the Dask ``client``'s cluster, in
    ``workers`` worker processes, or here; here also where the device cannot be reopened in
    another process (a GPU of this machine), said to ``reporter`` for a cluster."""
    spec = device.reopen_spec() if workers > 1 or client is not None else None
    if client is not None:
        if spec is not None:
            return ClusterPoints(device, client, spec)
        (reporter or Reporter()).notice(
            f"{device.info.key} cannot be reopened on cluster workers; its points run here")
        client.close()
    elif spec is not None:
        return PoolPoints(device, workers, spec)
    return Points(device, workers)


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
            real.add_done_callback(functools.partial(self._copy, fut=fut))

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
