"""One experiment of a run, as a transaction: claim its entry, measure, stamp the provenance,
analyse, write, and only then mark it complete.

:func:`run_experiment` is the transaction: it claims the experiment's manifest entry and ends
it whatever happens (skipped where the device lacks a probe, interrupted on Ctrl-C or
SIGTERM, failed on an experiment's bug, which lets the next experiment run). Inside it each
stage is a short function over the run's :class:`~gpumem.run.request.RunSetup`:
:func:`measure` (an adaptive search, or the plan's grid with its refinement rounds, on
``setup.points``), :func:`stamp` (the plan, the device's provenance before and after, who
ran it, what was seen of other work on the GPU), :func:`judge` (analysis, expected values,
what the device does not model) and :func:`keep` (the file, then the entry).
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.contention import ATTR as CONTENTION_ATTR
from gpumem.contracts.contention import Watch, assess, mark
from gpumem.contracts.device import Device
from gpumem.contracts.errors import GpumemError, ProbeUnsupported, UsageError
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, analyse
from gpumem.contracts.findings import Finding, evaluate, not_modelled, to_dataset
from gpumem.results.schema import (
    POINT_FAILED,
    POINT_OK,
    assemble,
    attr_safe,
    global_attrs,
    now_iso,
    point_key,
    point_totals,
    points,
)
from gpumem.results.store import ResultsWriteError, RunStore
from gpumem.run import timeline
from gpumem.run.pace import Revision, price_point
from gpumem.run.point import PointResult
from gpumem.run.request import Outcome, RunSetup, RunStopped, Terminated

#: Refinement rounds an experiment may ask for at most (``Experiment.refine``).
MAX_REFINE_ROUNDS = 32


@dataclass(frozen=True)
class Claim:
    """An experiment claimed for measuring: its plan, its manifest entry and when it began."""

    exp: Experiment
    plan: Plan
    key: str
    ctx: RunContext
    t0: float

    @property
    def params_hash(self) -> str:
        return self.key.rsplit("/", 1)[1]


def run_experiment(setup: RunSetup, cls: type[Experiment]) -> Outcome:
    """Run experiment ``cls`` (see the module docstring). Ctrl-C, SIGTERM and a results file
    that cannot be written end its entry and propagate; any other error is its outcome."""
    exp = cls()
    t0 = time.monotonic()
    timeline.mark("start", cls.name)
    plan: Plan = exp.plan(setup.ctx)
    ctx = setup.ctx.with_repeats(plan)  # each point timed as often as the plan declares
    phash = plan.params_hash(exp)
    store, device = setup.store, setup.device
    key = store.entry_key(device.info.key, exp.name, phash)
    if setup.resume and (done := _resumed(store, key, exp.name)) is not None:
        return done
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
        return measure_and_keep(setup, Claim(exp, plan, key, ctx, t0))
    except ProbeUnsupported as e:
        release(store, key, "skipped", str(e))
        return Outcome(exp.name, "skipped", error=str(e), wall_s=time.monotonic() - t0)
    except Terminated:
        release(store, key, "interrupted", "terminated (SIGTERM)")
        raise
    except KeyboardInterrupt as e:
        release(store, key, "interrupted",
                e.why if isinstance(e, RunStopped) else "interrupted (Ctrl-C)")
        raise
    except (ResultsWriteError, UsageError) as e:  # cannot keep results: the run stops
        release(store, key, "failed", str(e))
        raise
    except Exception as e:  # noqa: BLE001 - this experiment's bug; the next one runs
        error = f"{type(e).__name__}: {e}"
        release(store, key, "failed", error)
        return Outcome(exp.name, "failed", error=error, wall_s=time.monotonic() - t0)


def _resumed(store: RunStore, key: str, name: str) -> Outcome | None:
    """The outcome of an experiment the run directory holds complete and intact, or None."""
    ok, _why = store.is_complete(key)
    if not ok:
        return None
    entry = store.entry(key)
    assert entry is not None
    from gpumem.contracts.findings import from_dataset
    from gpumem.results.io import open_findings

    path = store.path_of(entry.data)  # inside the run: is_complete checked it
    return Outcome(name, "resumed", path, from_dataset(open_findings(path)))


def release(store: RunStore, key: str, status: str, error: str) -> None:
    """End this run's entry; if even the manifest cannot be written (disk full), leave it:
    the entry names this process, and the next run into the folder marks it stale."""
    try:
        store.release(key, status, error)
    except (GpumemError, OSError):
        pass


def measure_and_keep(setup: RunSetup, claim: Claim) -> Outcome:
    """Measure, stamp, judge and keep one claimed experiment (its caller ends the entry on
    any exception)."""
    device = setup.device
    before = device.provenance()
    watch = Watch(device.neighbours, timed=device.source != "simulated")
    watch.sample(force=True)
    raw, results = measure(setup, claim, watch)
    timeline.mark("measured", claim.exp.name)
    setup.points.measured(claim.exp.name)
    unmodelled = device.unmodelled()
    stamp(setup, claim, raw, before, results, watch, unmodelled)
    findings, error = judge(setup, claim.exp, raw, unmodelled)
    return keep(setup, claim, raw, findings, error)


def measure(setup: RunSetup, claim: Claim, watch: Watch
            ) -> tuple[xr.Dataset, dict[tuple, PointResult]]:
    """The raw dataset, and each grid point's result (none for an adaptive search)."""
    raw = _adaptive(setup, claim, watch)
    if raw is not None:
        return raw, {}
    return _grid(setup, claim)


def _adaptive(setup: RunSetup, claim: Claim, watch: Watch | None = None) -> Any:
    """Run an experiment that drives its own search (``Experiment.sweep``), or return None.
    It has no grid points to read the device beside: ``watch`` looks for other processes
    as it reports progress. Where experiments run at once, the search runs in one of the
    workers (:meth:`~gpumem.run.points.Points.sweep`; a simulator's watch only looks when
    forced, so there is nothing to look for there)."""
    exp, ctx = claim.exp, claim.ctx
    if type(exp).sweep is Experiment.sweep:
        return None
    setup.reporter.experiment_started(exp.name, 0)
    if setup.points.sweeps_remotely(exp):
        raw = setup.points.sweep(exp, ctx)
    else:
        raw = _sweep_here(setup, exp, ctx, watch)
    if raw is not None and "point_status" not in raw:
        raw["point_status"] = ((), np.int8(POINT_OK), {"long_name": "outcome", "units": "1"})
    return raw


def _sweep_here(setup: RunSetup, exp: Experiment, ctx: RunContext, watch: Watch | None
                ) -> Any:
    """An adaptive search on this process's device (with experiments running at once: one
    at a time, and it stops at its next probe once the run stops)."""
    pts, reporter = setup.points, setup.reporter

    def progress(n: int) -> None:
        if watch is not None:
            watch.sample()
        for _ in range(n):
            reporter.point_done(exp.name)
        if pts.concurrent:
            pts.check()

    with pts.device_lock():
        return exp.sweep(setup.device, ctx, progress)


def _grid(setup: RunSetup, claim: Claim) -> tuple[xr.Dataset, dict[tuple, PointResult]]:
    """The plan's points, then the rounds of points the experiment's ``refine`` asks for
    (at most :data:`MAX_REFINE_ROUNDS`). On a slow device the time left is said as they go."""
    exp, plan, ctx, reporter = claim.exp, claim.plan, claim.ctx, setup.reporter
    axes = list(plan.axes)
    pts = points(axes)
    reporter.experiment_started(exp.name, len(pts))
    priced = setup.priced.get(exp.name)
    revision = Revision(priced) if priced is not None and not priced.skipped else None

    def point_done() -> None:
        reporter.point_done(exp.name)
        if revision is not None:  # on a slow device: what is left, from the pace so far
            revision.point_done()
            if line := revision.line():
                reporter.notice("estimate: " + line)

    results = setup.points.run(exp, pts, ctx, point_done)
    for _round in range(MAX_REFINE_ROUNDS):
        raw = assemble(plan, axes, results)
        extra = exp.refine(raw, ctx)
        if not extra:
            break
        axes, fresh = extend(axes, extra)
        if not fresh:
            break
        reporter.points_added(exp.name, len(fresh))
        if revision is not None:
            revision.points_added(_prices(exp, fresh, setup.device, ctx), len(fresh))
        timeline.mark("round", exp.name)
        results.update(setup.points.run(exp, fresh, ctx, point_done))
    return assemble(plan, axes, results), results


def extend(axes: list[Axis], extra: Mapping[str, Sequence[Any]]) -> tuple[list[Axis], list[dict]]:
    """Add refinement values to axes; return the new axes and the points that are new."""
    new_axes = []
    for a in axes:
        add = [v for v in extra.get(a.name, ()) if v not in a.values]
        vals = tuple(sorted(set(a.values) | set(add))) if add else a.values
        new_axes.append(Axis(a.name, vals, a.units, a.long_name))
    old = {point_key(p) for p in points(axes)}
    fresh = [p for p in points(new_axes) if point_key(p) not in old]
    return new_axes, fresh


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


def stamp(setup: RunSetup, claim: Claim, raw: xr.Dataset, before: Mapping[str, Any],
          results: Mapping[tuple, PointResult], watch: Watch,
          unmodelled: dict[str, str]) -> None:
    """Put into ``raw``'s attributes what a reader of the file needs to trust it: the plan,
    what was seen of other processes, the device's provenance before and after (with what
    points run elsewhere added to its counters), who ran it, throttled points, what the
    device does not model and the contention verdict."""
    exp, device, ctx = claim.exp, setup.device, claim.ctx
    for k, v in claim.plan.attrs.items():
        raw.attrs.setdefault(f"plan_{k}", attr_safe(v))
    watch.sample(force=True)
    raw.attrs.update(watch.attrs())
    after = device.provenance()
    if results:
        after = with_point_totals(before, after, point_totals(results))
    owner = setup.plugins.owner("experiments", exp.name)
    config = device.config_toml()
    raw.attrs.update(global_attrs(
        experiment=exp.name, experiment_version=exp.version, summary=exp.summary,
        arch=ctx.arch, device=device.info, source=device.source, plugin=owner.name,
        plugin_version=owner.version, params_hash=claim.params_hash, argv=setup.argv,
        provenance={**{f"before_{k}": v for k, v in before.items()},
                    **{f"after_{k}": v for k, v in after.items()}},
        references=str(getattr(exp, "references", "")),
        extra={"gpumem_sim_config": config} if config is not None else None,
    ))
    raw.attrs["gpumem_executor"] = setup.points.where
    priced = setup.priced.get(exp.name)
    if priced is not None:  # what was said up front, to hold against the wall_s it took
        raw.attrs["gpumem_estimate_s"] = round(priced.wall_s, 1)
        raw.attrs["gpumem_estimate_first_pass_s"] = round(priced.first_pass_s, 1)
    throttled = int((raw["point_throttled"] == 1).sum()) if "point_throttled" in raw else 0
    raw.attrs["gpumem_throttled_points"] = throttled
    if throttled:
        setup.reporter.notice(f"{exp.name}: {throttled} point(s) ran while a throttling "
                              f"clock-event reason was active (flagged in point_throttled)")
    if unmodelled:  # kept, so that an analysis of the file again marks the same findings
        raw.attrs["gpumem_unmodelled"] = json.dumps(unmodelled, sort_keys=True)
    contention = assess(raw, str(raw.attrs.get("after_neighbours_seen", "")))
    raw.attrs[CONTENTION_ATTR] = contention.reason()  # a later analysis marks the same


def with_point_totals(before: Mapping[str, Any], after: dict[str, Any],
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


def judge(setup: RunSetup, exp: Experiment, raw: xr.Dataset, unmodelled: dict[str, str]
          ) -> tuple[list[Finding], str]:
    """The findings, against the expected values and marked for what the device does not
    model and for contention, and the experiment's error ("" if none): failed points, or an
    analysis that raised (the raw data is kept, the traceback in its attributes)."""
    n_points = int(raw["point_status"].size)
    bad = int((raw["point_status"] == POINT_FAILED).sum())
    error = f"{bad} of {n_points} points failed" if bad else ""
    try:
        findings = mark(not_modelled(evaluate(analyse(exp, raw), list(setup.expected),
                                              exp.name),
                                     unmodelled),
                        str(raw.attrs[CONTENTION_ATTR]))
    except Exception as e:  # noqa: BLE001 - keep the raw data, report the analysis bug
        findings = []
        error = f"analysis failed: {type(e).__name__}: {e}"
        raw.attrs["gpumem_analysis_error"] = traceback.format_exc(limit=5)
    return findings, error


def keep(setup: RunSetup, claim: Claim, raw: xr.Dataset, findings: list[Finding],
         error: str) -> Outcome:
    """Write the results file atomically, then end the entry complete (failed with
    ``error``)."""
    exp, device, t0 = claim.exp, setup.device, claim.t0
    fds = to_dataset(findings)
    fds.attrs.update({k: raw.attrs[k] for k in ("gpumem_experiment", "device_key",
                                                  "gpumem_arch", "date_created")})
    status = "failed" if error else "complete"
    n_points = int(raw["point_status"].size)
    throttled = int(raw.attrs["gpumem_throttled_points"])
    reason = str(raw.attrs[CONTENTION_ATTR])
    path, _sha = setup.store.write(
        device.info.key, exp.name, claim.params_hash, raw, fds, key=claim.key, fields=dict(
            status=status, finished=now_iso(), wall_s=round(time.monotonic() - t0, 3),
            error=error, points=n_points, throttled_points=throttled,
            experiment_version=exp.version, **({"contention": reason} if reason else {}),
            findings={f.name: f.as_dict() for f in findings}))
    return Outcome(exp.name, status, path, findings, error, time.monotonic() - t0, n_points,
                   reason)

