"""Estimates: a measured value, its 95 % interval, and how precisely it is known.

The framework owns the repeats (:func:`gpumem.contracts.experiment.measure_point` times each
point until :class:`gpumem.contracts.experiment.StdRel` says enough) and their statistics,
here. An analysis picks the point a finding is read at (the best of a grid, a saturation
level) and asks :func:`estimate_at` what the repeats there say: the median, its
distribution-free 95 % interval, the relative standard error reached, how many runs were
taken and why they stopped. Derived quantities keep their uncertainty
(:meth:`Estimate.scaled`, :meth:`Estimate.over`, :meth:`Estimate.minus`), and
:func:`finding` / :func:`list_finding` turn estimates into findings that carry all of it.

One rule for every repeated measurement, so every interval means the same:

* the value is the median of the runs (robust to the slow launch every GPU has now and then);
* its interval is the pair of order statistics that bracket the median with probability
  >= 95 % whatever the distribution (exact binomial; at least 6 runs reach it, fewer give
  the runs' range, whose coverage is ``1 - 2**(1 - n)``);
* its precision is the relative standard error that interval states, ``(hi - lo) / (2 x
  1.96 x |median|)``: what the stopping rule compares with its target, as nvbench's
  ``stdrel`` compares its noise. One stray run widens a six-run interval (its ends are the
  runs' min and max) but not a nine-run one (the second-smallest and second-largest), so a
  point with a stray run is timed until the stray no longer sets the interval.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpumem.contracts.findings import (
    STOP_FIXED,
    STOP_REASONS,
    Finding,
    Precision,
    rel_from_interval,
    worst_precision,
)

#: The coverage every interval aims at.
LEVEL = 0.95
#: Fewest runs whose order statistics bracket the median with >= 95 % (the min and max of 6:
#: 1 - 2 * 2**-6 = 96.9 %).
MIN_RUNS_95 = 6


#: Student's t, 97.5 % point, by degrees of freedom (any statistics table), for an interval
#: whose standard deviation is estimated from few draws.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def student_t_975(df: int) -> float:
    """Student's t 97.5 % point for ``df`` degrees of freedom (the table to 10, then the
    Cornish-Fisher expansion's first terms, within 0.2 % there); ``df`` >= 1."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


@functools.cache
def least_draw_sd(n: int) -> float:
    """The standard deviation of the least of ``n`` draws of a standard normal (0.8256 for
    two, 0.7012 for four): how far the first of ``n`` draws to cross a line strays, in units
    of one draw's spread."""
    from statistics import NormalDist

    grid = np.linspace(-9.0, 9.0, 36001)
    cdf = np.vectorize(NormalDist().cdf)(grid)
    pdf = n * np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi) * (1 - cdf) ** (n - 1)
    step = float(grid[1] - grid[0])
    mean = float(np.sum(grid * pdf) * step)
    return float(np.sqrt(np.sum((grid - mean) ** 2 * pdf) * step))


def _finite(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    return a[np.isfinite(a)]


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n-1-k)) for n runs of a continuous distribution (0-based k)."""
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n


def order_interval(x: Any, level: float = LEVEL) -> tuple[float, float]:
    """Distribution-free interval of the median of ``x``: the innermost pair of order
    statistics ``(x_(k), x_(n-1-k))`` whose coverage is still >= ``level`` (exact binomial up
    to :data:`EXACT_UP_TO` runs, its normal approximation beyond); the range where no pair
    reaches it (fewer than :data:`MIN_RUNS_95` runs at 95 %); NaN for no data."""
    s = np.sort(_finite(x))
    n = s.size
    if n == 0:
        return (math.nan, math.nan)
    if n > EXACT_UP_TO:
        z = 2.576 if level >= 0.99 else 1.96
        k = max(0, int(math.floor(n / 2 - z * math.sqrt(n) / 2 - 0.5)))
        return float(s[k]), float(s[n - 1 - k])
    k = _inner(n, level)
    return float(s[k]), float(s[n - 1 - k])


@functools.cache
def _inner(n: int, level: float) -> int:
    """The largest k whose order statistics (x_(k), x_(n-1-k)) still cover ``level``."""
    k = 0
    while k + 1 < n - 1 - (k + 1) and _coverage(n, k + 1) >= level:
        k += 1
    return k


#: Runs up to which :func:`order_interval` is exact (binomial sums stay cheap).
EXACT_UP_TO = 64


def rel_error(x: Any) -> float:
    """Relative standard error of the median of ``x`` as its 95 % interval states it:
    ``(hi - lo) / (2 x 1.96 x |median|)`` of :func:`order_interval`, so the precision the
    stopping rule reaches is the interval a user is shown. 0 where the runs agree (a
    deterministic device), inf where they scatter about a zero median, NaN with fewer than
    two runs. (The median absolute deviation alone, tried first, can collapse at six runs:
    six of 5 %-noisy runs once gave 0.5 %.)"""
    a = _finite(x)
    if a.size < 2:
        return math.nan
    return rel_from_interval(float(np.median(a)), *order_interval(a))


@dataclass(frozen=True)
class Estimate:
    """A value and where it is known to lie (``lo``, ``hi``: its 95 % interval), with the
    precision of the runs behind it."""

    value: float
    lo: float
    hi: float
    precision: Precision = Precision()

    @property
    def interval(self) -> tuple[float, float]:
        return (self.lo, self.hi)

    def scaled(self, k: float) -> Estimate:
        """``k`` times the value (a known constant: a peak, a clock, a count)."""
        lo, hi = sorted((self.lo * k, self.hi * k))
        return Estimate(self.value * k, lo, hi, self.precision)

    def over(self, den: Estimate) -> Estimate:
        """This value over ``den``'s (a speed-up, a fraction, a ratio of two medians): its
        interval from the two intervals' ends (at least 95 %: both must hold), its relative
        error the two combined in quadrature, the fewer runs of the two."""
        if den.value == 0 or den.lo <= 0 < den.hi:
            return Estimate(math.nan, -math.inf, math.inf, _combine(self, den))
        ends = [a / b for a in (self.lo, self.hi) for b in (den.lo, den.hi)]
        return Estimate(self.value / den.value, min(ends), max(ends), _combine(self, den))

    def minus(self, other: Estimate) -> Estimate:
        """This value less ``other``'s (an extra latency): interval from the two intervals'
        ends; relative error from the two absolute errors in quadrature."""
        value = self.value - other.value
        p, q = self.precision, other.precision
        abs_err = math.hypot(_abs(self.value, p.rel_error), _abs(other.value, q.rel_error))
        rel = abs_err / abs(value) if value else (0.0 if abs_err == 0 else math.inf)
        return Estimate(value, self.lo - other.hi, self.hi - other.lo,
                        _precision(p, q, rel))

    def rounded(self, digits: int) -> Estimate:
        """Value and interval rounded to ``digits`` decimals, the interval widened (never
        narrowed) by the rounding so it still holds the value."""
        v = round(self.value, digits)
        step = 10.0 ** -digits
        lo = math.floor(self.lo / step + 1e-9) * step if math.isfinite(self.lo) else self.lo
        hi = math.ceil(self.hi / step - 1e-9) * step if math.isfinite(self.hi) else self.hi
        return Estimate(v, round(min(lo, v), digits), round(max(hi, v), digits),
                        self.precision)


def constant(value: float) -> Estimate:
    """A number known exactly (a byte count, a peak from the device's properties), to
    combine with measured ones (``constant(bytes).over(rate)``)."""
    return Estimate(value, value, value, Precision(0, 0.0, ""))


def _abs(value: float, rel: float) -> float:
    return abs(value) * rel if math.isfinite(rel) else (math.inf if rel == math.inf else 0.0)


def _precision(p: Precision, q: Precision, rel: float) -> Precision:
    """Two precisions combined: the fewer runs, the reason of the less precise."""
    reps = min(r for r in (p.repeats, q.repeats) if r) if (p.repeats or q.repeats) else 0
    worse = p if _rel(p) >= _rel(q) else q
    return Precision(reps, rel, worse.stopped)


def _rel(p: Precision) -> float:
    return p.rel_error if math.isfinite(p.rel_error) else (
        math.inf if p.rel_error == math.inf else -1.0)


def _combine(a: Estimate, b: Estimate) -> Precision:
    ra, rb = a.precision.rel_error, b.precision.rel_error
    rel = math.hypot(ra, rb) if math.isfinite(ra) and math.isfinite(rb) else (
        math.inf if math.inf in (ra, rb) else math.nan)
    return _precision(a.precision, b.precision, rel)


def median_estimate(runs: Any, stopped: str = STOP_FIXED) -> Estimate:
    """The median of ``runs`` (NaN ignored: runs a point did not need), its
    :func:`order_interval`, its :func:`rel_error`, how many runs and ``stopped`` (why no
    more were taken)."""
    if stopped not in STOP_REASONS:
        raise ValueError(f"stopped must be one of {STOP_REASONS}, got {stopped!r}")
    a = _finite(runs)
    if a.size == 0:
        return Estimate(math.nan, math.nan, math.nan, Precision(0, math.nan, stopped))
    lo, hi = order_interval(a)
    med = float(np.median(a))
    rel = rel_from_interval(med, lo, hi) if a.size >= 2 else math.nan  # as rel_error(a)
    return Estimate(med, lo, hi, Precision(int(a.size), rel, stopped))


def argmax_at(da: Any) -> dict[str, Any]:
    """The coordinates of the largest finite value of the DataArray ``da`` (the best point
    of a grid of medians), to read its runs with :func:`estimate_at`."""
    vals = np.asarray(da.values, dtype=float)
    i = np.unravel_index(int(np.nanargmax(vals)), vals.shape)
    return {d: da[d].values[k].item() if hasattr(da[d].values[k], "item") else da[d].values[k]
            for d, k in zip(da.dims, i, strict=True)}


def _stopped(raw: Any, at: Sequence[Mapping[str, Any]]) -> str:
    """Why the runs of the points ``at`` stopped, as the runner recorded it
    (``point_stopped``; the least favourable reason of several points; files before the
    stopping rule: fixed repeats)."""
    if "point_stopped" not in raw:
        return STOP_FIXED
    flags: list[int] = []
    for sel in at:
        flag = raw["point_stopped"].sel({k: v for k, v in sel.items()
                                          if k in raw["point_stopped"].dims})
        flags += [int(f) for f in np.asarray(flag.values).ravel()
                  if 0 <= f < len(STOP_REASONS)]
    return STOP_REASONS[max(flags)] if flags else STOP_FIXED


def estimate_at(raw: Any, name: str, at: Mapping[str, Any] | None = None) -> Estimate:
    """What the timed runs of variable ``name`` at one point say (``at``: the point's
    coordinates; every dimension besides ``repeat`` must be selected by it):
    :func:`median_estimate` of its runs, stopped as the runner recorded."""
    sel = dict(at or {})
    runs = raw[name].sel(sel) if sel else raw[name]
    return median_estimate(runs.values, _stopped(raw, [sel]))


def pooled_estimate(raw: Any, name: str, at: Sequence[Mapping[str, Any]]) -> Estimate:
    """The runs of several points pooled into one estimate (a latency over every remote
    rank): the median of all of them, its interval and precision."""
    runs = [_finite(raw[name].sel(dict(a)).values) for a in at]
    return median_estimate(np.concatenate(runs) if runs else np.empty(0),
                           _stopped(raw, [dict(a) for a in at]))


def threshold_span(choices: Sequence[tuple[float, Estimate]], fraction: float,
                   best: Estimate, chosen: float) -> tuple[float, float]:
    """The choices on a grid (bytes in flight, warps) the runs cannot tell apart from the
    first within ``fraction`` of ``best``: from the first whose interval reaches ``fraction``
    of the best's low end to the first whose interval surely lies above ``fraction`` of its
    high end (the last choice where none does); ``chosen``, the finding's value, always
    inside."""
    maybe = [c for c, e in choices if e.hi >= fraction * best.lo]
    surely = [c for c, e in choices if e.lo >= fraction * best.hi]
    last = max(c for c, _e in choices) if choices else chosen
    return min([*maybe, chosen]), max(min(surely) if surely else last, chosen)


def finding(name: str, est: Estimate, units: str, confidence: float, method: str,
            digits: int = 2, **fields: Any) -> Finding:
    """A measured finding from ``est``: value and interval rounded to ``digits`` decimals
    (the interval widened to hold the rounded value), the precision kept."""
    r = est.rounded(digits)
    return Finding(name, r.value, units, confidence, method, interval=(r.lo, r.hi),
                   precision=r.precision, kind=fields.pop("kind", "measured"), **fields)


def list_finding(name: str, ests: Sequence[Estimate], units: str, confidence: float,
                 method: str, index: tuple[str, list], digits: int = 3,
                 **fields: Any) -> Finding:
    """A measured list finding (one estimate per element, labelled by ``index``): the
    values, the interval per element, and the least precise element's precision."""
    rs = [e.rounded(digits) for e in ests]
    return Finding(name, [r.value for r in rs], units, confidence, method, index=index,
                   interval=([r.lo for r in rs], [r.hi for r in rs]),
                   precision=worst_precision([r.precision for r in rs]),
                   kind=fields.pop("kind", "measured"), **fields)
