"""The runner: resolve a request, run its experiments on one device, keep every result.

``gpumem run`` is a thin wrapper over :func:`run`. The order of work is deliberate:

1. resolve everything the user typed (architecture, experiments, device, output folder) and
   raise :class:`~gpumem.contracts.errors.UsageError` for anything wrong *before* writing a byte;
2. open the device and the run store, and put what every experiment shares in one
   :class:`~gpumem.run.request.RunSetup`;
3. run the experiments (:mod:`gpumem.run.schedule`: one at a time, or at once with
   ``--workers N`` where the device allows), each a transaction of its own
   (:mod:`gpumem.run.experiment`: plan, skip it if ``--resume`` finds it complete and intact,
   run its points where :mod:`gpumem.run.points` says, refine, assemble the raw dataset,
   analyse it, attach expected values, write the file atomically, and only then mark it
   complete in the manifest). A failing experiment is recorded and the next one runs;
   Ctrl-C marks the running one interrupted and keeps the rest.

Faults leave the manifest truthful: SIGTERM is handled like Ctrl-C (exit 143 instead of
130); an experiment's entry is ended as interrupted or failed by the process that started it,
never by another; a results file that cannot be written (disk full) fails its entry and stops
the run with one line (exit 1); worker processes leave Ctrl-C to this one.

Where a change goes: how one experiment is measured, stamped, judged or written,
:mod:`gpumem.run.experiment`; where points run, :mod:`gpumem.run.points`; in what order and
how concurrently experiments run, :mod:`gpumem.run.schedule`; what a run carries,
:mod:`gpumem.run.request`; what happens before the first experiment, here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpumem.contracts.contention import CONTENDED, wait_until_free
from gpumem.contracts.errors import Interrupted, UsageError
from gpumem.contracts.experiment import RunContext
from gpumem.contracts.generic import AUTO
from gpumem.plugin.registry import Plugins
from gpumem.results.store import RunStore
from gpumem.run import schedule, timeline
from gpumem.run.pace import Estimate, price_run
from gpumem.run.points import make_points
from gpumem.run.request import (
    DEFAULT_RESULTS_ROOT,
    Outcome,
    Reporter,
    RunReport,
    RunRequest,
    RunSetup,
    Terminated,
)
from gpumem.run.resolve import (
    choose_arch,
    default_out,
    latest_run,
    open_device,
    resolve_arch,
    resolve_device,
    resolve_experiments,
)

__all__ = ["DEFAULT_RESULTS_ROOT", "Outcome", "Reporter", "RunReport", "RunRequest",
           "contention_line", "estimate_run", "run", "sigterm_as_interrupt", "with_arch"]


def with_arch(plugins: Plugins, req: RunRequest) -> tuple[RunRequest, str]:
    """``req`` with ``--arch auto`` resolved (``--device auto`` to the device it chose), and
    the line saying which architecture and why ("" where ``--arch`` named one)."""
    if req.arch != AUTO:
        return req, ""
    choice, device = choose_arch(plugins, req.device, req.sim_config)
    return replace(req, arch=choice.arch.name, device=device), choice.why


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`~gpumem.run.request.Terminated` (main thread
    only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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


def estimate_run(req: RunRequest, *, plugins: Plugins, reporter: Reporter
                 ) -> dict[str, Estimate]:
    """``gpumem run --estimate``: open the device, price what ``req`` would run on
    ``req.workers`` workers (:func:`~gpumem.run.pace.price_run`), and run nothing."""
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


def run(req: RunRequest, *, plugins: Plugins, reporter: Reporter | None = None,
        results_root: Path = DEFAULT_RESULTS_ROOT) -> RunReport:
    """Run ``req``; see the module docstring for the order of work. SIGTERM is handled
    like Ctrl-C, as :class:`~gpumem.contracts.errors.Interrupted` with exit code 143."""
    try:
        with sigterm_as_interrupt():
            return _run(req, plugins=plugins, reporter=reporter or Reporter(),
                        results_root=results_root)
    except Terminated:
        err = Interrupted("terminated (SIGTERM) before any experiment ran")
        err.exit_code = 143
        raise err from None


def _check_request(req: RunRequest) -> None:
    """The options that contradict each other, refused before anything is opened."""
    if req.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {req.workers}")
    if req.executor not in ("local", "dask"):
        raise UsageError(f"--executor must be 'local' or 'dask', got {req.executor!r}")
    if req.executor == "dask" and req.workers != 1:
        raise UsageError("--workers is for local execution; the Dask cluster has its own "
                         "workers")
    if req.executor == "local" and req.scheduler:
        raise UsageError("--scheduler applies to --executor dask")


def _run_dir(req: RunRequest, device_key: str, results_root: Path) -> Path:
    """``--out``, or the latest run of this architecture and device (``--resume``), or a
    new folder named after them."""
    if req.out is not None:
        return req.out
    if not req.resume:
        return default_out(results_root, req.arch, device_key)
    out = latest_run(results_root, req.arch, device_key)
    if out is None:
        raise UsageError(f"--resume: no earlier run of '{req.arch}' on {device_key} under "
                         f"{results_root}/ (give --out)")
    return out


def _run(req: RunRequest, *, plugins: Plugins, reporter: Reporter,
         results_root: Path) -> RunReport:
    timeline.mark("run")
    _check_request(req)
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
        out = _run_dir(req, device.info.key, results_root)
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
        workers = req.workers if client is None else max(1, len(
            client.scheduler_info().get("workers", {})))
        points = make_points(device, req.workers, client, reporter)
        client = None  # the points own it now
        try:
            setup = RunSetup(
                plugins=plugins, store=store, device=device, ctx=ctx, points=points,
                reporter=reporter, expected=plugins.expected_values(req.arch, device.info),
                resume=req.resume, argv=tuple(req.argv),
                priced=price_run(store, device, classes, ctx, workers, req.resume, reporter))
            if schedule.runs_at_once(points, device, ctx, schedule.tasks(classes, ctx)):
                schedule.at_once(setup, classes, report)
            else:
                schedule.one_at_a_time(setup, classes, report)
        finally:
            points.close()
        line = contention_line(report)
        if line:
            report.notices.append(line)
            reporter.notice(line)
        return report
    finally:
        if client is not None:
            client.close()
        device.close()
        timeline.write_timeline()
