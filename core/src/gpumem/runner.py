"""The runner: resolve a request, run its experiments on one device, keep every result.

``gpumem run`` is a thin wrapper over :func:`run`. The order of work is deliberate:

1. resolve everything the user typed (architecture, experiments, device, output folder) and
   raise :class:`~gpumem.errors.UsageError` for anything wrong *before* writing a byte;
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
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpumem.contention import ATTR as CONTENTION_ATTR
from gpumem.contention import CONTENDED, Watch, assess, mark, wait_until_free
from gpumem.device import Device, DeviceInfo
from gpumem.errors import (
    GpumemError,
    Interrupted,
    ProbeUnsupported,
    UsageError,
)
from gpumem.experiment import Axis, Experiment, Plan, RunContext
from gpumem.findings import Expected, Finding, evaluate, not_modelled, to_dataset
from gpumem.generic import AUTO
from gpumem.pace import Estimate, Revision, estimate, price_point
from gpumem.plugins import Plugins, load_plugins
from gpumem.point import PointResult, run_point
from gpumem.resolve import (
    choose_arch,
    default_out,
    latest_run,
    open_device,
    resolve_arch,
    resolve_device,
    resolve_experiments,
)
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
    contention: str = ""   # what was seen of other work on the GPU (gpumem.contention)


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that the same clean-up runs (exit 143)."""


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


def _worker_init(spec: dict[str, Any]) -> None:
    """Open, once per worker process, the device described by ``Device.reopen_spec()``.
    Ctrl-C reaches the whole process group: workers ignore it (the parent cancels their
    work and reports once, instead of one traceback per worker)."""
    global _worker_device
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    plugins = load_plugins(warn=lambda _m: None)
    sim = plugins.simulators()[spec["simulator"]]
    _worker_device = sim.create_device(spec["arch"], spec["config"], seed=spec["seed"])


def _worker_point(cls: type[Experiment], point: Mapping[str, Any], ctx: RunContext) -> PointResult:
    assert _worker_device is not None
    try:
        return run_point(cls(), _worker_device, point, ctx)
    except ProbeUnsupported as e:
        return POINT_SKIPPED, f"unsupported: {e}", {}


class PointRunner:
    """Runs points in this process, in a pool of worker processes, or on a Dask cluster (same
    results every way: every point is independent and seeded by its own key)."""

    def __init__(self, device: Device, workers: int, client: Any = None,
                 reporter: Reporter | None = None) -> None:
        self.device = device
        self.pool: ProcessPoolExecutor | None = None
        self.cluster: Any = None
        self.where = "local"
        spec = device.reopen_spec() if workers > 1 or client is not None else None
        if client is not None:
            if spec is None:
                (reporter or Reporter()).notice(
                    f"{device.info.key} cannot be reopened on cluster workers; its points run "
                    f"here")
                client.close()
            else:
                from gpumem.executors import DaskPoints

                self.cluster = DaskPoints(client, spec)
                self.where = f"dask {getattr(client.scheduler, 'address', '?')}"
        elif spec is not None:
            method = "fork" if "fork" in mp.get_all_start_methods() and \
                device.source == "simulated" else "spawn"
            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method),
                                            initializer=_worker_init, initargs=(spec,))
            self.where = f"local, {workers} worker processes"

    def run(self, experiment: Experiment, pts: list[dict[str, Any]], ctx: RunContext,
            on_done: Callable[[], None]) -> dict[tuple, PointResult]:
        results: dict[tuple, PointResult] = {}
        cls = type(experiment)
        if self.cluster is not None and _picklable(cls):
            return self.cluster.run(experiment, pts, ctx, on_done)
        if self.pool is not None and _picklable(cls):
            # workers start inside submit(); SIGINT stays blocked until they ignore it
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) \
                if threading.current_thread() is threading.main_thread() else None
            try:
                futures = [(point_key(p), self.pool.submit(_worker_point, cls, p, ctx))
                           for p in pts]
            finally:
                if old is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
            try:
                for key, fut in futures:
                    res = fut.result()
                    if res[1].startswith("unsupported: ") and res[0] == POINT_SKIPPED:
                        raise ProbeUnsupported(res[1][len("unsupported: "):])
                    results[key] = res
                    on_done()
            except BaseException:
                for _k, fut in futures:
                    fut.cancel()
                raise
            return results
        for p in pts:
            results[point_key(p)] = run_point(experiment, self.device, p, ctx)
            on_done()
        return results

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


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
              watch: Watch | None = None) -> Any:
    """Run an experiment that drives its own search (``Experiment.sweep``), or return None.
    It has no grid points to read the device beside: ``watch`` looks for other processes
    as it reports progress."""
    if type(exp).sweep is Experiment.sweep:
        return None
    reporter.experiment_started(exp.name, 0)
    done = [0]

    def progress(n: int) -> None:
        done[0] += n
        if watch is not None:
            watch.sample()
        for _ in range(n):
            reporter.point_done(exp.name)

    raw = exp.sweep(device, ctx, progress)
    if raw is not None and "point_status" not in raw:
        raw["point_status"] = ((), np.int8(POINT_OK), {"long_name": "outcome", "units": "1"})
    return raw


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
    plan: Plan = exp.plan(ctx)
    phash = plan.params_hash(exp)
    key = store.entry_key(device.info.key, exp.name, phash)
    if resume:
        ok, _why = store.is_complete(key)
        if ok:
            entry = store.entry(key)
            assert entry is not None
            from gpumem.findings import from_dataset
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
    except KeyboardInterrupt:
        _release(store, key, "interrupted", "interrupted (Ctrl-C)")
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
    """The prices of refinement points (:func:`gpumem.pace.price_point`), ``None`` if one
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
    raw = _adaptive(exp, device, ctx, reporter, watch)
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
            results.update(runner.run(exp, fresh, ctx, point_done))
        raw = assemble(plan, axes, results)
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
        findings = mark(not_modelled(evaluate(exp.analyze(raw), expected), unmodelled),
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
        points=n_points, throttled_points=throttled,
        **({"contention": reason} if reason else {}),
        findings={f.name: f.as_dict() for f in findings}))
    return Outcome(exp.name, status, path, findings, error, time.monotonic() - t0, n_points,
                   reason)


# ---------------------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------------------


def _kept(store: RunStore, report: RunReport) -> int:
    """Experiments with a file: resumed ones, and those this process wrote (an interrupt
    that waited for a write lands after the experiment was recorded)."""
    try:
        mine = sum(1 for e in store.entries()
                   if e.data.get("owner") == store.owner and e.data.get("file"))
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
    like Ctrl-C, as :class:`~gpumem.errors.Interrupted` with exit code 143."""
    try:
        with sigterm_as_interrupt():
            return _run(req, plugins=plugins, reporter=reporter, results_root=results_root)
    except Terminated:
        err = Interrupted("terminated (SIGTERM) before any experiment ran")
        err.exit_code = 143
        raise err from None


def _run(req: RunRequest, *, plugins: Plugins, reporter: Reporter | None,
         results_root: Path) -> RunReport:
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
        from gpumem.executors import connect

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
            for cls in classes:
                try:
                    outcome = run_experiment(plugins, store, device, cls, ctx, expected, runner,
                                             reporter, req.resume, req.argv,
                                             priced.get(cls.name))
                except KeyboardInterrupt as e:
                    kept = _kept(store, report)
                    what = "terminated (SIGTERM)" if isinstance(e, Terminated) else \
                        "interrupted"
                    err = Interrupted(
                        f"{what} during '{cls.name}'; {kept} finished experiment(s) kept "
                        f"in {out} (continue with: --resume --out {out})")
                    err.exit_code = 143 if isinstance(e, Terminated) else 130
                    raise err from None
                except (ResultsWriteError, UsageError) as e:
                    kept = _kept(store, report)
                    raise type(e)(f"{e}; {cls.name} failed, {kept} finished experiment(s) "
                                  f"kept in {out}") from None
                except Exception as e:  # noqa: BLE001 - one experiment's bug, the rest run
                    outcome = Outcome(cls.name, "failed", error=f"{type(e).__name__}: {e}")
                    store.set_entry(f"{device.info.key}/{cls.name}/unplanned",
                                    device=device.info.key,
                                    experiment=cls.name, status="failed", error=outcome.error)
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
