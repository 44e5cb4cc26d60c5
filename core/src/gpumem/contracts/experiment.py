"""``Experiment``: a named sweep over device probes, and the analysis of its raw data.

An experiment knows nothing about CUDA or the simulator. It says

* :meth:`~Experiment.plan` — the sweep axes (each becomes a dimension with a coordinate), the
  variables each point records (with their own inner dimensions, e.g. ``access``), sized from
  the device's properties;
* :meth:`~Experiment.measure` — how one point runs through a device's probes (one timed run
  of it, when the plan declares :attr:`~Plan.repeats`: the runner repeats it, see below);
* :meth:`~Experiment.refine` — optionally, extra values of one axis worth measuring after a
  first pass (a knee to bisect), repeated until it returns ``None``;
* :meth:`~Experiment.analyze` — a pure function from the raw dataset to findings, so a stored
  file can be analysed again later, by anyone.

The runner assembles the points into one labeled dataset (see :mod:`gpumem.results.schema`).

Repetition belongs to the framework, as in nvbench: a plan that declares ``repeats=N`` (usually
:func:`repeat_count`) has each point timed by :func:`measure_point` until the stopping rule
(:func:`stopping_rule`: :class:`StdRel`, nvbench's ``stdrel``) says the median is known well
enough, at most N times: the experiment's ``measure`` runs once per (point, repeat) with
``ctx.repeat`` and ``ctx.run_seed`` (the one formula, :func:`repeat_seed`), the runner stacks
the runs along an innermost ``repeat`` dimension of N (runs not needed are NaN) and records
per point how many runs it took, the precision reached and why it stopped
(``point_repeats``, ``point_rel_error``, ``point_stopped``). Analyses read each point's
median through :func:`point_medians` and a finding's value, interval and precision through
:mod:`gpumem.contracts.estimates`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import xarray as xr

from gpumem.contracts.device import Device, DeviceInfo
from gpumem.contracts.estimates import EXACT_UP_TO, LEVEL, MIN_RUNS_95, _inner, rel_error
from gpumem.contracts.finding_names import declared, matches
from gpumem.contracts.findings import (
    STOP_BUDGET,
    STOP_FIXED,
    STOP_MAX,
    STOP_PRECISE,
    STOP_REASONS,
    Z95,
    Finding,
    with_precision,
)

if TYPE_CHECKING:
    from gpumem.contracts.presentation import Presentation


@dataclass(frozen=True)
class Axis:
    """A sweep axis: becomes a dataset dimension with a same-named coordinate."""

    name: str
    values: tuple
    units: str = "1"
    long_name: str = ""


@dataclass(frozen=True)
class Var:
    """A variable recorded at every point; ``dims`` are its inner dimensions (beyond axes).

    In a plan that declares :attr:`Plan.repeats`, the variable gets the innermost ``repeat``
    dimension (one value per timed run) unless ``repeated`` is false: then it is measured once
    per point, by :meth:`Experiment.prepare`."""

    name: str
    dims: tuple[str, ...] = ()
    units: str = "1"
    long_name: str = ""
    dtype: str = "float64"
    repeated: bool = True


@dataclass
class Plan:
    """What an experiment will measure on this device.

    ``repeats``: timed runs of every point (usually :func:`repeat_count`). The plan then adds
    the ``repeat`` coordinate to ``inner``, the ``repeat`` dimension (innermost) to each
    repeated variable and ``repeats`` to ``attrs`` (where the experiment did not put it), and
    the runner measures each point that many times (:func:`measure_point`). 0, the default:
    ``measure`` runs once per point and returns every variable whole, ``repeat`` dimension
    included where it has one (an experiment that repeats by itself, written before plans
    declared repeats)."""

    axes: list[Axis]
    variables: list[Var]
    inner: dict[str, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    repeats: int = 0

    def __post_init__(self) -> None:
        if not self.repeats:
            return
        n = int(self.repeats)
        if n < 1 or n != self.repeats:
            raise ValueError(f"Plan.repeats must be a whole number >= 1, not {self.repeats!r}")
        if "repeat" in self.inner and len(self.inner["repeat"]) != n:
            raise ValueError(f"Plan.repeats is {n}, its inner 'repeat' has "
                             f"{len(self.inner['repeat'])} values")
        if self.attrs.get("repeats", n) != n:
            raise ValueError(f"Plan.repeats is {n}, its attrs say {self.attrs['repeats']!r}")
        variables = []
        for var in self.variables:
            if "repeat" in var.dims[:-1]:
                raise ValueError(f"variable {var.name!r}: 'repeat' is the innermost dimension "
                                 f"(leave it out of dims: Plan.repeats adds it)")
            if var.repeated and var.dims[-1:] != ("repeat",):
                var = replace(var, dims=(*var.dims, "repeat"))
            variables.append(var)
        self.variables = variables
        self.inner = {**self.inner, "repeat": np.arange(n)}
        self.attrs = {**self.attrs, "repeats": self.attrs.get("repeats", n)}

    def params_hash(self, experiment: Experiment) -> str:
        """Identifies (experiment, version, grid, attrs): the key under which results are kept."""
        blob = json.dumps({
            "experiment": experiment.name,
            "version": experiment.version,
            "axes": [(a.name, [_jsonable(v) for v in a.values]) for a in self.axes],
            "inner": {k: int(len(v)) for k, v in self.inner.items()},
            "attrs": {k: _jsonable(v) for k, v in sorted(self.attrs.items())},
        }, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_jsonable(x) for x in v]
    return v


@dataclass(frozen=True)
class RunContext:
    """Everything an experiment may size itself from."""

    arch: str
    device: DeviceInfo
    quick: bool = False
    seed: int = 0
    #: Timed runs of each point, from :attr:`Plan.repeats` (the runner sets it once the plan
    #: is made; 0 in ``plan()`` and for an experiment whose plan declares none).
    repeats: int = 0
    #: Which timed run of the point this ``measure`` call is (0 .. repeats-1), set by
    #: :func:`measure_point`; ``None`` outside a repeat.
    repeat: int | None = None

    @property
    def run_seed(self) -> int:
        """The seed of this timed run, :func:`repeat_seed` of :attr:`repeat`: what a probe
        request of a repeated ``measure`` passes as its ``seed``."""
        if self.repeat is None:
            raise RuntimeError("ctx.run_seed is only set within a repeat: declare "
                               "Plan(repeats=...) to have each point timed that many times")
        return repeat_seed(self, self.repeat)

    def with_repeats(self, plan: Plan) -> RunContext:
        """This context for measuring ``plan``'s points (its declared :attr:`Plan.repeats`)."""
        return replace(self, repeats=plan.repeats, repeat=None)

    @property
    def slow(self) -> bool:
        """The device declares itself slow (a cycle-level simulator): plans choose the fewest
        accesses, warm-ups and footprints that still decide their findings."""
        return self.device is not None and self.device.cycles_per_second > 0


#: Most timed runs per point of the repeated measurements (the stopping rule takes fewer where
#: the median is known well enough sooner), and with ``--quick`` (fixed).
REPEATS, QUICK_REPEATS = 16, 3
#: The stopping rule's target: the median's relative standard error (nvbench's ``stdrel``
#: default noise, 0.5 %), the fewest runs (6: their min and max bracket the median with
#: 96.9 %, :mod:`gpumem.contracts.estimates`), and a point's time budget for its runs.
TARGET_REL_ERROR, MIN_REPEATS, POINT_BUDGET_S = 0.005, MIN_RUNS_95, 1.0
#: Fewest runs before the time budget may end a point's repeats.
BUDGET_MIN_REPEATS = 3


def repeat_count(ctx: RunContext, full: int = REPEATS) -> int:
    """Most timed runs per point for this run (what a plan declares as its ``repeats``):
    ``full`` (default :data:`REPEATS`; fewer for a long probe), :data:`QUICK_REPEATS` with
    --quick."""
    return min(QUICK_REPEATS, full) if ctx.quick else full


def repeat_seed(ctx: RunContext, r: int) -> int:
    """The seed of timed run ``r`` of a point: the one formula (``ctx.run_seed`` in a repeat;
    a run before the repeats that must see what run 0 sees takes ``repeat_seed(ctx, 0)``)."""
    return ctx.seed * 1000 + r


#: The key under which :func:`measure_point` reports how a point's runs went (runs taken,
#: relative standard error reached, why they stopped: an index into
#: :data:`gpumem.contracts.findings.STOP_REASONS`); the raw dataset's ``point_repeats``,
#: ``point_rel_error`` and ``point_stopped``.
POINT_RUNS = "__point_runs__"


@dataclass(frozen=True)
class FixedRepeats:
    """A stopping rule that stops after ``n`` runs, whatever they say (a quick run, a
    deterministic cycle-level simulator, a plan of fewer runs than :data:`MIN_REPEATS`)."""

    n: int

    def decide(self, runs: Sequence[Mapping[str, Any]], elapsed: float = 0.0) -> str:
        """"" to take another run, else why not (a :data:`STOP_REASONS` entry)."""
        return STOP_FIXED if len(runs) >= self.n else ""

    def done(self, runs: Sequence[Mapping[str, Any]]) -> bool:
        return bool(self.decide(runs))


@dataclass(frozen=True)
class StdRel:
    """nvbench's ``stdrel`` criterion for gpumem's medians: a point is timed until the
    relative standard error of the median of every value it records
    (:func:`gpumem.contracts.estimates.rel_error`) is at most ``target``, after at least
    ``min_runs`` runs; at most ``max_runs``; and no more once its runs have taken
    ``budget_s`` seconds (after at least :data:`BUDGET_MIN_REPEATS`). A quiet GPU stops at
    ``min_runs``; a noisy point gets more runs, and its precision is known either way."""

    target: float = TARGET_REL_ERROR
    min_runs: int = MIN_REPEATS
    max_runs: int = REPEATS
    budget_s: float = POINT_BUDGET_S

    def decide(self, runs: Sequence[Mapping[str, Any]], elapsed: float = 0.0) -> str:
        """"" to take another run, else why not (a :data:`STOP_REASONS` entry)."""
        n = len(runs)
        if n >= self.min_runs and runs_rel_error(runs) <= self.target:
            return STOP_PRECISE
        if n >= self.max_runs:
            return STOP_MAX
        if n >= min(BUDGET_MIN_REPEATS, self.max_runs) and elapsed >= self.budget_s:
            return STOP_BUDGET
        return ""

    def done(self, runs: Sequence[Mapping[str, Any]], elapsed: float = 0.0) -> bool:
        return bool(self.decide(runs, elapsed))


def runs_rel_error(runs: Sequence[Mapping[str, Any]]) -> float:
    """The largest relative standard error of the median over every number the runs
    recorded (each element of an array value apart): how well the least certain is known."""
    if len(runs) < 2:
        return math.nan
    worst = 0.0
    for k, v0 in runs[0].items():
        a0 = np.asarray(v0)
        if a0.dtype.kind not in "fiu":
            continue
        stacked = np.stack([np.asarray(r[k], dtype=float) for r in runs], axis=-1)
        rows = stacked.reshape(-1, len(runs))
        whole = np.isfinite(rows).all(axis=1)
        if whole.any():  # rows of every run at once (an l2_slices point has 4096 of them)
            worst = max(worst, _worst_whole_rows(rows[whole]))
        for row in rows[~whole]:
            e = rel_error(row)
            if not math.isnan(e):
                worst = max(worst, e)
    return worst


def _worst_whole_rows(rows: np.ndarray) -> float:
    """:func:`gpumem.contracts.estimates.rel_error` of each row (every value finite, two or
    more), worked out for all rows at once with the same order statistics and arithmetic;
    the largest."""
    n = rows.shape[1]
    s = np.sort(rows, axis=1)
    if n > EXACT_UP_TO:
        k = max(0, int(math.floor(n / 2 - 1.96 * math.sqrt(n) / 2 - 0.5)))
    else:
        k = _inner(n, LEVEL)
    lo, hi, med = s[:, k], s[:, n - 1 - k], np.median(rows, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(hi == lo, 0.0,
                       np.where(med == 0, np.inf, (hi - lo) / (2 * Z95 * np.abs(med))))
    return float(rel.max())


def stopping_rule(ctx: RunContext) -> FixedRepeats | StdRel:
    """The rule that decides how many of ``ctx.repeats`` runs a point gets, the one place
    where another rule plugs in: :class:`StdRel` up to ``ctx.repeats``; a fixed count with
    --quick, on a slow (cycle-level, deterministic) device, or where the plan declares
    fewer runs than :data:`MIN_REPEATS`."""
    if ctx.quick or ctx.slow or ctx.repeats < MIN_REPEATS:
        return FixedRepeats(ctx.repeats)
    return StdRel(max_runs=ctx.repeats)


def measure_point(experiment: Experiment, device: Device, point: Mapping[str, Any],
                  ctx: RunContext) -> Mapping[str, Any]:
    """One point's values. Without declared repeats (``ctx.repeats`` 0): ``measure`` once, as
    it returns them. With them: :meth:`Experiment.prepare` once, then ``measure`` once per
    repeat (``ctx.repeat``, ``ctx.run_seed``; ``point`` with what ``prepare`` returned) until
    the stopping rule says enough, each value stacked over the runs as the innermost
    ``repeat`` dimension, NaN (-1 for integers) past the runs taken up to ``ctx.repeats``;
    under :data:`POINT_RUNS` how the runs went; ``prepare``'s entries are kept beside them
    (those named after a variable that is not repeated are recorded as it)."""
    if not ctx.repeats:
        return experiment.measure(device, point, ctx)
    shared = dict(experiment.prepare(device, point, ctx))
    point = {**point, **shared}
    rule = stopping_rule(ctx)
    runs: list[Mapping[str, Any]] = []
    elapsed, why = 0.0, ""
    while not why:
        t0 = time.monotonic()
        runs.append(experiment.measure(device, point, replace(ctx, repeat=len(runs))))
        elapsed += time.monotonic() - t0
        why = rule.decide(runs, elapsed) or ("" if len(runs) < ctx.repeats else STOP_MAX)
    record = {"repeats": len(runs), "rel_error": runs_rel_error(runs),
              "stopped": STOP_REASONS.index(why)}
    return {**shared, **stack_runs(runs, ctx.repeats), POINT_RUNS: record}


def stack_runs(runs: Sequence[Mapping[str, Any]], size: int = 0) -> dict[str, np.ndarray]:
    """Each value of the runs, stacked along a new last (``repeat``) axis of ``size`` (at
    least the runs'), the runs not taken NaN (-1 for an integer value)."""
    out = {}
    for k in runs[0]:
        a = np.stack([np.asarray(run[k]) for run in runs], axis=-1)
        if size > a.shape[-1]:
            fill = -1 if a.dtype.kind in "iu" else np.nan
            pad = np.full((*a.shape[:-1], size - a.shape[-1]), fill,
                          dtype=a.dtype if a.dtype.kind in "iuf" else float)
            a = np.concatenate([a, pad], axis=-1)
        out[k] = a
    return out


def repeated(n: int, run: Callable[[int], Any], **fields: str) -> dict[str, np.ndarray]:
    """``n`` timed runs of a probe, ``run(r)`` for r = 0 .. n-1 in order, as one array per
    variable over the ``repeat`` dimension: ``fields`` maps each variable to the attribute of
    a run's result it records (``repeated(3, run, latency="latency")``). For an experiment
    that repeats by itself; a plan that declares ``repeats`` has the runner do it."""
    runs = [run(r) for r in range(n)]
    return {var: np.array([getattr(x, attr) for x in runs]) for var, attr in fields.items()}


def median_over_repeats(var: xr.DataArray) -> xr.DataArray:
    """Median over the ``repeat`` dimension, the runs a point did not need (NaN) left out
    (runs written before repeats existed have none)."""
    return var.median("repeat", skipna=True) if "repeat" in var.dims else var


def analyse(experiment: Experiment, raw: xr.Dataset) -> list[Finding]:
    """The experiment's findings of ``raw``, each measured one with its precision (the one
    its analysis gave, else what its interval implies): what the runner and every
    re-analysis call, so a finding means the same wherever it is derived."""
    return with_precision(experiment.analyze(raw))


def point_medians(raw: xr.Dataset, name: str) -> xr.DataArray:
    """Variable ``name`` of a raw dataset, each point's median over its repeats (the value
    itself where it has no ``repeat`` dimension), NaN at points that did not measure
    (``point_status`` not 0): how an analysis reads a repeated measurement."""
    med = median_over_repeats(raw[name])
    return med.where(raw["point_status"] == 0) if "point_status" in raw else med


class Experiment(ABC):
    """Base class of experiments; subclasses set the class attributes and the four methods."""

    #: Unique name, used on the command line and in file names.
    name: ClassVar[str] = ""
    #: One line: what the experiment measures.
    summary: ClassVar[str] = ""
    #: Architectures it applies to, or ``None`` for all.
    archs: ClassVar[tuple[str, ...] | None] = None
    #: Probes it needs from the device.
    probes: ClassVar[tuple[str, ...]] = ()
    #: Bump when the measurement changes meaning: old results then no longer resume.
    version: ClassVar[str] = "1"
    #: Every finding name :meth:`analyze` can report, unresolved ones included: exact names,
    #: or :mod:`fnmatch` patterns where names are generated (``lat.pattern.P[1-6]``; prefer
    #: the names written out, e.g. with :func:`gpumem.contracts.finding_names.family`). Expected
    #: values
    #: are checked against these (:func:`gpumem.contracts.finding_names.undeclared`), so a misspelt
    #: name is caught instead of never being compared. An experiment that sets none (one
    #: written before this existed) declares nothing: no name counts as its.
    findings: ClassVar[tuple[str, ...]] = ()

    #: Measures DRAM bandwidth, which reads some 18 % slower while the driver clears memory
    #: a process freed (cudaFree), about 3 ms a GiB on an H100 (benchmarks/dram_scrub.py; a
    #: chase of several GiB frees that much): such experiments run before the others of a
    #: run (:func:`gpumem.run.resolve.resolve_experiments`), and the CUDA device waits out
    #: any clearing before timing a DRAM-resident stream
    #: (:data:`gpumem.cuda.device.CLEAR_BYTES_PER_S`).
    runs_first: ClassVar[bool] = False
    #: Part of ``gpumem run all``. An experiment too long for a routine run (``l2_hash``: some
    #: four times ``l2_slices``' chasing) sets False and runs when named.
    in_all: ClassVar[bool] = True

    #: For each version bump, the findings whose meaning it changed (``{"2":
    #: ("lat.pattern.P6",)}``): a finding a bump left alone means the same in a file of the
    #: version before, so gpumem's multi-card data pool it across them
    #: (:meth:`means_the_same`). A bump not listed here changed every finding.
    changed_in: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def means_the_same(cls, name: str, version: str) -> bool:
        """Does finding ``name`` of a file of experiment ``version`` mean what it means in
        this version: no bump since (:attr:`changed_in`) changed it. Versions that are not
        whole numbers compare equal only to themselves."""
        if str(version) == str(cls.version):
            return True
        try:
            old, now = int(version), int(cls.version)
        except (TypeError, ValueError):
            return False
        if old > now:
            return False
        return all(str(v) in cls.changed_in and name not in cls.changed_in[str(v)]
                   for v in range(old + 1, now + 1))

    def applies_to(self, arch: str) -> bool:
        return self.archs is None or arch in self.archs

    @classmethod
    def declares(cls, name: str) -> bool:
        """``name`` is one of :attr:`findings` or matches one of its patterns."""
        return matches(name, declared(cls))

    @abstractmethod
    def plan(self, ctx: RunContext) -> Plan:
        """The sweep for this device (``ctx.quick``: a reduced grid for smoke tests)."""

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """Run one point; return one array (shaped like the variable's inner dims) per Var.

        Where the plan declares :attr:`Plan.repeats`, one timed run of the point: the values
        without the ``repeat`` dimension, its probes seeded with ``ctx.run_seed``; the runner
        calls it once per repeat (:func:`measure_point`).

        Raise :class:`gpumem.contracts.errors.PointSkipped` for a point that cannot run here. Grid
        experiments implement this; adaptive ones implement :meth:`sweep` instead.
        """
        raise TypeError(f"experiment '{self.name}' implements neither measure() nor sweep()")

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """Once per point, before its repeats (plans that declare :attr:`Plan.repeats`):
        what every repeat of the point shares, e.g. the bytes of a run sized from a first
        run. Each repeat's ``measure`` finds these entries in its ``point``; those named
        after a variable declared ``repeated=False`` are recorded as it. Default: nothing."""
        return {}

    def refine(self, raw: xr.Dataset, ctx: RunContext) -> dict[str, list] | None:
        """Extra values for one axis after looking at the data so far, or ``None`` to stop."""
        return None

    def refine_bound(self, ctx: RunContext) -> int:
        """Most rounds :meth:`refine` can add on this device (for the time estimate of a
        slow device, :mod:`gpumem.run.pace`); 0 for an experiment that does not refine."""
        return 0

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset | None:
        """Adaptive experiments override this: drive the probes, return the raw dataset.

        A search whose next probe depends on the last answer (Mei & Chu's size -> line ->
        sets -> policy sequence) does not fit a grid. Such an experiment runs here and returns
        its dataset (with a ``point_status`` variable); ``progress(n)`` reports n more probes
        done. The default returns ``None``: the runner measures ``plan()`` point by point.
        An adaptive search made of independent pieces declares them (:meth:`sweep_parts`)
        and implements this as :meth:`sweep_in_parts`.
        """
        return None

    def sweep_parts(self, ctx: RunContext) -> tuple[str, ...]:
        """The independent pieces of this experiment's search (each load path's walk, say),
        which a runner with workers runs at once, one :meth:`sweep_part` per worker, then
        joins (:meth:`join_parts`). Each piece must take its probes from its own seeds, never
        from another piece's answers: the data is then the same however many workers ran
        it. Default: none, the search is one piece (:meth:`sweep`)."""
        return ()

    def sweep_part(self, device: Device, ctx: RunContext, progress: Callable[[int], None],
                   part: str) -> xr.Dataset:
        """One piece of :meth:`sweep_parts`: its probes, its raw dataset."""
        raise TypeError(f"experiment '{self.name}' declares no parts to sweep")

    def join_parts(self, parts: Sequence[xr.Dataset]) -> xr.Dataset:
        """The raw dataset of the whole search from its pieces' (in :meth:`sweep_parts`
        order)."""
        raise TypeError(f"experiment '{self.name}' declares no parts to join")

    def sweep_in_parts(self, device: Device, ctx: RunContext,
                       progress: Callable[[int], None]) -> xr.Dataset:
        """:meth:`sweep` for an experiment with parts: each in turn, joined, exactly what a
        runner running them at once gets."""
        return self.join_parts([self.sweep_part(device, ctx, progress, p)
                                for p in self.sweep_parts(ctx)])

    @abstractmethod
    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        """Findings from a raw dataset (pure: reads only the dataset and its attributes)."""

    def presentation(self) -> Presentation | None:
        """Its section and figures in ``gpumem report`` (:mod:`gpumem.contracts.presentation`); the
        default ``None`` lists its findings under "other findings". Import the draw
        functions inside the method: ``gpumem run`` then loads no matplotlib."""
        return None
