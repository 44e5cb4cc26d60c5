"""``Experiment``: a named sweep over device probes, and the analysis of its raw data.

An experiment knows nothing about CUDA or the simulator. It says

* :meth:`~Experiment.plan` — the sweep axes (each becomes a dimension with a coordinate), the
  variables each point records (with their own inner dimensions, e.g. ``access``), sized from
  the device's properties;
* :meth:`~Experiment.measure` — how one point runs through a device's probes;
* :meth:`~Experiment.refine` — optionally, extra values of one axis worth measuring after a
  first pass (a knee to bisect), repeated until it returns ``None``;
* :meth:`~Experiment.analyze` — a pure function from the raw dataset to findings, so a stored
  file can be analysed again later, by anyone.

The runner assembles the points into one labeled dataset (see :mod:`gpumem.results.schema`).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

import numpy as np
import xarray as xr

from gpumem.device import Device, DeviceInfo
from gpumem.finding_names import declared, matches
from gpumem.findings import Finding

if TYPE_CHECKING:
    from gpumem.presentation import Presentation


@dataclass(frozen=True)
class Axis:
    """A sweep axis: becomes a dataset dimension with a same-named coordinate."""

    name: str
    values: tuple
    units: str = "1"
    long_name: str = ""


@dataclass(frozen=True)
class Var:
    """A variable recorded at every point; ``dims`` are its inner dimensions (beyond axes)."""

    name: str
    dims: tuple[str, ...] = ()
    units: str = "1"
    long_name: str = ""
    dtype: str = "float64"


@dataclass
class Plan:
    """What an experiment will measure on this device."""

    axes: list[Axis]
    variables: list[Var]
    inner: dict[str, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)

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

    @property
    def slow(self) -> bool:
        """The device declares itself slow (a cycle-level simulator): plans choose the fewest
        accesses, warm-ups and footprints that still decide their findings."""
        return self.device.cycles_per_second > 0


#: Timed runs per point of the repeated measurements (median, min and max kept), and with
#: ``--quick``.
REPEATS, QUICK_REPEATS = 10, 3


def repeat_count(ctx: RunContext) -> int:
    """Timed runs per point for this run."""
    return QUICK_REPEATS if ctx.quick else REPEATS


def repeated(n: int, run: Callable[[int], Any], **fields: str) -> dict[str, np.ndarray]:
    """``n`` timed runs of a probe, ``run(r)`` for r = 0 .. n-1 in order, as one array per
    variable over the ``repeat`` dimension: ``fields`` maps each variable to the attribute of
    a run's result it records (``repeated(3, run, latency="latency")``)."""
    runs = [run(r) for r in range(n)]
    return {var: np.array([getattr(x, attr) for x in runs]) for var, attr in fields.items()}


def median_over_repeats(var: xr.DataArray) -> xr.DataArray:
    """Median over the ``repeat`` dimension (runs written before repeats existed have none)."""
    return var.median("repeat") if "repeat" in var.dims else var


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
    #: the names written out, e.g. with :func:`gpumem.finding_names.family`). Expected values
    #: are checked against these (:func:`gpumem.finding_names.undeclared`), so a misspelt
    #: name is caught instead of never being compared. An experiment that sets none (one
    #: written before this existed) declares nothing: no name counts as its.
    findings: ClassVar[tuple[str, ...]] = ()

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

        Raise :class:`gpumem.errors.PointSkipped` for a point that cannot run here. Grid
        experiments implement this; adaptive ones implement :meth:`sweep` instead.
        """
        raise TypeError(f"experiment '{self.name}' implements neither measure() nor sweep()")

    def refine(self, raw: xr.Dataset, ctx: RunContext) -> dict[str, list] | None:
        """Extra values for one axis after looking at the data so far, or ``None`` to stop."""
        return None

    def refine_bound(self, ctx: RunContext) -> int:
        """Most rounds :meth:`refine` can add on this device (for the time estimate of a
        slow device, :mod:`gpumem.pace`); 0 for an experiment that does not refine."""
        return 0

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset | None:
        """Adaptive experiments override this: drive the probes, return the raw dataset.

        A search whose next probe depends on the last answer (Mei & Chu's size -> line ->
        sets -> policy sequence) does not fit a grid. Such an experiment runs here and returns
        its dataset (with a ``point_status`` variable); ``progress(n)`` reports n more probes
        done. The default returns ``None``: the runner measures ``plan()`` point by point.
        """
        return None

    @abstractmethod
    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        """Findings from a raw dataset (pure: reads only the dataset and its attributes)."""

    def presentation(self) -> Presentation | None:
        """Its section and figures in ``gpumem report`` (:mod:`gpumem.presentation`); the
        default ``None`` lists its findings under "other findings". Import the draw
        functions inside the method: ``gpumem run`` then loads no matplotlib."""
        return None
