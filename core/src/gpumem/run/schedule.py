"""The experiments of a run, one at a time or at once, and how a run stopped is said.

:func:`one_at_a_time` runs them in their order. :func:`at_once` (chosen by
:func:`runs_at_once`: ``--workers N`` on a simulator whose every probe is a function of its
request alone, ``Device.independent_probes``) runs them together: one thread each in this
process, their points sharing the one pool of worker processes, each adaptive search
(``Experiment.sweep``) run whole in a worker process of its own. The run then takes about as
long as its longest experiment instead of the sum of all. Nothing measured changes: every
point and search gives what it gives alone (the same files, byte for byte but for dates and
wall times, as with one worker). Threads write the results one at a time. Ctrl-C stops the
experiments still measuring (marked interrupted); those measured finish their analysis and
write, and are kept; a second Ctrl-C stops waiting for them. ``GPUMEM_SEQUENTIAL=1`` runs
the experiments one after another, as with one worker.

Either way the outcomes go to the run's report in the order of the experiments, and a run
that stops (Ctrl-C, SIGTERM, a results file that cannot be written) ends with one line
saying how many finished experiments were kept and how to continue.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

from gpumem.contracts.device import Device
from gpumem.contracts.errors import GpumemError, Interrupted, UsageError
from gpumem.contracts.experiment import Experiment, RunContext
from gpumem.results.store import ResultsWriteError, RunStore
from gpumem.run import timeline
from gpumem.run.experiment import release, run_experiment
from gpumem.run.points import Points
from gpumem.run.request import (
    Outcome,
    Reporter,
    RunReport,
    RunSetup,
    RunStopped,
    Terminated,
)

#: ``GPUMEM_SEQUENTIAL=1``: run the experiments one after another even with ``--workers``.
SEQUENTIAL_ENV = "GPUMEM_SEQUENTIAL"


def one_at_a_time(setup: RunSetup, classes: Sequence[type[Experiment]],
                  report: RunReport) -> None:
    """The experiments in their order; an experiment's bug is its outcome and the next one
    runs; Ctrl-C or a results file that cannot be written ends the run."""
    for cls in classes:
        try:
            outcome = run_experiment(setup, cls)
        except KeyboardInterrupt as e:
            raise interrupted(e, [cls.name], setup.store, report) from None
        except (ResultsWriteError, UsageError) as e:
            raise stopped(e, cls.name, setup.store, report) from None
        except Exception as e:  # noqa: BLE001 - one experiment's bug, the rest run
            outcome = unplanned(setup, cls, e)
        timeline.mark("end", cls.name)
        report.outcomes.append(outcome)
        setup.reporter.experiment_finished(outcome)


def tasks(classes: Sequence[type[Experiment]], ctx: RunContext) -> int:
    """How many pieces of work the experiments are at least: one each, or each part of a
    search declared in parts (``Experiment.sweep_parts``)."""
    return sum(max(1, len(cls().sweep_parts(ctx))) for cls in classes)


def runs_at_once(points: Points, device: Device, ctx: RunContext, n: int) -> bool:
    """Run the experiments (``n`` pieces of work, :func:`tasks`) at once? With worker
    processes, more than one piece, a fast device whose every probe is a function of its
    request alone (a chase's answer that depended on the chases before it would change with
    the order), unless ``GPUMEM_SEQUENTIAL`` asks for one at a time."""
    return (points.in_workers and n > 1 and not ctx.slow
            and bool(getattr(device, "independent_probes", False))
            and os.environ.get(SEQUENTIAL_ENV, "").strip() in ("", "0"))


def rank(cls: type[Experiment]) -> int:
    """Priority: adaptive searches first (each is one long task), then experiments that
    refine (rounds one after another), then the plain grids. The first two are chains of
    steps that each wait for the last: they start at once. A plain grid fills the workers
    by itself: the grids start one after another, each as the one before has its points
    (its analysis and write overlap the next one's points)."""
    if cls.sweep is not Experiment.sweep:
        return 0
    return 1 if cls.refine is not Experiment.refine else 2


def at_once(setup: RunSetup, classes: Sequence[type[Experiment]], report: RunReport) -> None:
    """The experiments at once, one thread each (:func:`run_experiment`, as one at a time
    would run it), their points and adaptive searches on the setup's workers: the chains
    (adaptive searches, refinements) all from the start, the plain grids one after another
    in their order, each started when the one before has its points (:func:`rank`). The
    outcomes go to ``report`` in the order of ``classes``, the reporter hears of each as it
    ends. Ctrl-C or SIGTERM (in this, the main thread) stops the experiments still
    measuring and waits for the others to be written; a results file that cannot be written
    stops the rest likewise, then the run ends with that error."""
    _AtOnce(setup, classes, report).run()


class _AtOnce:
    """The state of :func:`at_once`: the threads, what each has said (a queue the main
    thread reads), and which plain grid measures now."""

    def __init__(self, setup: RunSetup, classes: Sequence[type[Experiment]],
                 report: RunReport) -> None:
        self.setup, self.classes, self.report = setup, classes, report
        self.rep = _Serialised(setup.reporter)
        self.shared = _LockedStore(setup.store)
        self.threaded = replace(setup, store=cast(RunStore, self.shared), reporter=self.rep)
        self.points = setup.points
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        self.running: dict[int, str] = {}  # started and not ended: index -> name
        self.outcomes: dict[int, Outcome] = {}
        self.stopped_by: list[tuple[str, BaseException]] = []  # an error that stopped the run
        self.broken: list[str] = []  # interrupted in their thread
        self.pending = set(range(len(classes)))
        self.index = {c.name: i for i, c in enumerate(classes)}
        self.grids = [i for i, c in enumerate(classes) if rank(c) == 2]
        self.current_grid = self.grids[0] if self.grids else -1  # the grid measuring now
        self.threads = {i: threading.Thread(target=self.work, args=(i,), daemon=True,
                                            name=f"gpumem-{classes[i].name}")
                        for i in range(len(classes))}

    def work(self, i: int) -> None:
        """One experiment, in its thread; what happened goes on the queue."""
        cls = self.classes[i]
        try:
            if self.points.stop.is_set():
                self.done.put((i, "not started", None))
                return
            self.running[i] = cls.name
            outcome = run_experiment(self.threaded, cls)
            timeline.mark("end", cls.name)
            self.done.put((i, "outcome", outcome))
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self.done.put((i, "raised", e))

    def start_next_grid(self) -> None:
        if self.points.stop.is_set():  # the run stops: the grids not started never will
            self.pending.difference_update(self.grids)
            self.grids.clear()
        elif self.grids:
            self.threads[self.grids.pop(0)].start()

    def stop(self, error: Callable[[], BaseException]) -> None:
        self.points.request_stop(error)
        self.start_next_grid()

    def _grid_moves_on(self) -> None:
        self.current_grid = self.grids[0] if self.grids else -1
        self.start_next_grid()

    def collect(self) -> None:
        """Take one message off the queue (0.2 s at most; queue.Empty if none) and act."""
        i, kind, got = self.done.get(timeout=0.2)
        if kind == "measured":
            if i == self.current_grid:
                self._grid_moves_on()
            return
        self.pending.discard(i)
        self.running.pop(i, None)
        if i == self.current_grid:  # ended before it measured (skipped, resumed, failed)
            self._grid_moves_on()
        if kind == "outcome":
            self.outcomes[i] = got
            self.rep.experiment_finished(got)
        elif kind == "raised":
            self._raised(i, got)

    def _raised(self, i: int, got: BaseException) -> None:
        cls = self.classes[i]
        if isinstance(got, KeyboardInterrupt):
            self.broken.append(cls.name)
        elif isinstance(got, (ResultsWriteError, UsageError)):
            self.stopped_by.append((cls.name, got))
            self.stop(lambda: RunStopped(f"the run stopped: {cls.name}: {got}"))
        elif isinstance(got, Exception):  # its plan raised
            self.outcomes[i] = unplanned(self.threaded, cls, got)
            self.rep.experiment_finished(self.outcomes[i])
        else:  # SystemExit and the like: the run cannot go on
            self.stopped_by.append((cls.name, got))
            self.stop(lambda: RunStopped(f"the run stopped: {cls.name}"))

    def _collect_while(self, busy: Callable[[], bool]) -> None:
        while busy():
            try:
                self.collect()
            except queue.Empty:
                pass

    def start(self) -> None:
        """The workers, then the chains' threads, then the first grid's."""
        classes = self.classes
        self.points.concurrent = True
        self.points.on_measured = lambda name: self.done.put(
            (self.index.get(name, -1), "measured", None))
        self.points.start({c.name: (rank(c), i) for i, c in enumerate(classes)})
        timeline.mark("workers")
        self.points.listen(self._probes_done)
        for i in sorted(range(len(classes)), key=lambda i: (rank(classes[i]), i)):
            if rank(classes[i]) < 2:
                self.threads[i].start()
        self.start_next_grid()

    def _probes_done(self, name: str, n: int) -> None:
        """An adaptive search in a worker reported ``n`` probes done."""
        for _ in range(n):
            self.rep.point_done(name)

    def run(self) -> None:
        try:
            self.start()
            self._collect_while(lambda: bool(self.pending))
        except KeyboardInterrupt as e:
            raise self._interrupted(e) from None
        self.report.outcomes.extend(self.outcomes[i] for i in sorted(self.outcomes))
        if self.stopped_by:
            name, err = self.stopped_by[0]
            if isinstance(err, (ResultsWriteError, UsageError)):
                raise stopped(err, name, self.setup.store, self.report) from None
            raise err

    def _interrupted(self, e: KeyboardInterrupt) -> Interrupted:
        """Ctrl-C or SIGTERM: stop those measuring, wait for those measured to be written (a
        second Ctrl-C stops waiting: their entries end interrupted), and say so."""
        during = [self.running[i] for i in sorted(self.running)]
        self.stop(type(e) if isinstance(e, Terminated) else KeyboardInterrupt)
        try:  # the ones measuring stop at once; the ones measured are written
            self._collect_while(lambda: any(t.is_alive() for t in self.threads.values())
                                or not self.done.empty())
        except KeyboardInterrupt:  # again: stop waiting; their entries end interrupted
            for key in self.shared.claimed:
                release(self.threaded.store, key, "interrupted",
                        "terminated (SIGTERM)" if isinstance(e, Terminated)
                        else "interrupted (Ctrl-C)")
        self.report.outcomes.extend(self.outcomes[i] for i in sorted(self.outcomes))
        # left, stopped, and not written: an experiment whose file this process recorded
        # before the stop reached its thread is kept, not interrupted
        written = _written(self.setup.store)
        left = [n for n in [self.classes[i].name for i in sorted(self.running)] + self.broken
                if n not in written]
        return interrupted(e, [n for n in during if n in left] or during, self.setup.store,
                           self.report)


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


# ---------------------------------------------------------------------------------------------
# How a run that stopped is said
# ---------------------------------------------------------------------------------------------


def unplanned(setup: RunSetup, cls: type[Experiment], e: Exception) -> Outcome:
    """An experiment that failed before it was claimed (its plan raised): recorded failed."""
    outcome = Outcome(cls.name, "failed", error=f"{type(e).__name__}: {e}")
    key = setup.device.info.key
    setup.store.set_entry(f"{key}/{cls.name}/unplanned", device=key, experiment=cls.name,
                          status="failed", error=outcome.error)
    return outcome


def interrupted(e: KeyboardInterrupt, during: Sequence[str], store: RunStore,
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


def stopped(e: ResultsWriteError | UsageError, name: str, store: RunStore,
            report: RunReport) -> GpumemError:
    """The one-line error of a run stopped because results cannot be kept (``e``, raised by
    experiment ``name``)."""
    kept = _kept(store, report)
    return type(e)(f"{e}; {name} failed, {kept} finished experiment(s) kept in "
                   f"{report.run_dir}")


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
