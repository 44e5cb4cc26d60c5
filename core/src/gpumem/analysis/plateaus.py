"""Plateaus and knees of a latency-versus-footprint curve (pure functions).

A memory level shows up as a run of footprints with about the same latency (a plateau); the
footprint where the curve leaves a plateau is that level's capacity as seen by the probe (a
knee). Medians per footprint make the input robust to a few mis-timed accesses; plateaus are
grown greedily in log-latency with a relative tolerance, so a slow drift (DRAM latency rising
with TLB pressure) becomes a new plateau only once it exceeds the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plateau:
    """A run of points ``[start, stop)`` (indices into the sorted curve) at one latency."""

    start: int
    stop: int
    latency: float     # median of the points' latencies
    spread: float      # relative median absolute deviation of the points
    first_x: float
    last_x: float

    @property
    def count(self) -> int:
        return self.stop - self.start


#: Relative latency difference a point may have from its run's median and stay on it.
PLATEAU_TOL = 0.08


def find_plateaus(x: np.ndarray, y: np.ndarray, rel_tol: float = PLATEAU_TOL,
                  min_points: int = 2, min_span: float = 1.05) -> list[Plateau]:
    """Greedy plateaus of ``y`` over ascending ``x``; NaNs are ignored.

    A point joins the current run while ``|log y - log median(run)| <= log(1 + rel_tol)``.
    Runs shorter than ``min_points``, or spanning less than a factor ``min_span`` in x, are
    transitions, not plateaus: bisecting a soft knee puts many points into a narrow footprint
    range (an H200's far L2 fades out over 59.4-62 MB), and those must not pass for a level.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(y) & (y > 0)
    xs, ys = x[ok], y[ok]
    if xs.size == 0:
        return []
    order = np.argsort(xs, kind="stable")
    xs, ys = xs[order], ys[order]
    tol = np.log1p(rel_tol)
    logs = np.log(ys)
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, xs.size + 1):
        if i == xs.size or abs(logs[i] - np.median(logs[start:i])) > tol:
            runs.append((start, i))
            start = i
    out = []
    for a, b in runs:
        if b - a < min_points or xs[b - 1] < min_span * xs[a]:
            continue
        seg = ys[a:b]
        med = float(np.median(seg))
        mad = float(np.median(np.abs(seg - med))) / med if med else 0.0
        out.append(Plateau(a, b, med, mad, float(xs[a]), float(xs[b - 1])))
    return _merge_close(out, tol, ys, xs)


def _merge_close(ps: list[Plateau], tol: float, ys: np.ndarray, xs: np.ndarray
                 ) -> list[Plateau]:
    """Join neighbouring plateaus split only by a transition point but at the same level."""
    merged: list[Plateau] = []
    for p in ps:
        if merged and abs(np.log(p.latency) - np.log(merged[-1].latency)) <= tol / 2:
            q = merged[-1]
            seg = np.concatenate([ys[q.start:q.stop], ys[p.start:p.stop]])
            med = float(np.median(seg))
            mad = float(np.median(np.abs(seg - med))) / med if med else 0.0
            merged[-1] = Plateau(q.start, p.stop, med, mad, q.first_x, p.last_x)
        else:
            merged.append(p)
    return merged


def miss_fractions(samples: np.ndarray, threshold: float) -> np.ndarray:
    """Per row, the fraction of finite samples at or above ``threshold``."""
    samples = np.asarray(samples, dtype=float)
    valid = np.isfinite(samples)
    n = valid.sum(axis=1)
    with np.errstate(invalid="ignore"):
        above = (np.where(valid, samples, -np.inf) >= threshold).sum(axis=1)
    return np.where(n > 0, above / np.maximum(n, 1), np.nan)


#: a plateau whose accesses above the step's midpoint run at more than this fraction, while
#: its lower half (log scale) runs below :data:`CLEAN_LEVEL`, is a clean level then a ramp:
#: its baseline comes from that lower half (:func:`knee_bracket`)
RAMP_BASELINE = 0.10
CLEAN_LEVEL = 0.01


def knee_bracket(x: np.ndarray, samples: np.ndarray, lower: Plateau, high: float,
                 min_margin: float = 0.02) -> tuple[float, float] | None:
    """(last x still on ``lower``, first x off it) for the step up to latency ``high``.

    ``samples`` holds the per-access latencies of each x (rows). An access counts as "above"
    when it reaches the geometric mean of the two levels. Real levels have wide latency
    distributions (a far L2 hit ranges 440-560 cycles on an H200, overlapping DRAM's low
    tail), so the plateau's own fraction of such accesses is the baseline, and x leaves the
    level when its fraction exceeds that baseline by a binomial margin (at least
    ``min_margin``). A few mis-timed accesses therefore do not move the knee, while the first
    overflowing cache set does. ``None`` when the curve never leaves the level.
    """
    x = np.asarray(x, dtype=float)
    samples = np.asarray(samples, dtype=float)
    keep = x >= lower.first_x
    xs, rows = x[keep], samples[keep]
    order = np.argsort(xs)
    xs, rows = xs[order], rows[order]
    if xs.size == 0:
        return None
    frac = miss_fractions(rows, float(np.sqrt(lower.latency * high)))
    on = xs <= lower.last_x
    base = float(np.nanmedian(frac[on])) if on.any() else 0.0
    low = on & (xs <= np.sqrt(lower.first_x * lower.last_x))
    if base > RAMP_BASELINE and low.any():
        # a clean level, then a ramp: a knee bisected on a coarse grid puts most of the
        # plateau's points on the ramp past the capacity (a quick Fermi run: 12 of 16, at
        # 12-49 % misses; its lower half: none), and their median is no baseline (it moved
        # the knee from 16.5 KB to 19 KB). A level whose lower half has slow accesses of
        # its own (an H200's far L2) keeps the whole plateau's median.
        clean = float(np.nanmedian(frac[low]))
        if clean < CLEAN_LEVEL:
            base = clean
    n = max(1, rows.shape[1])
    margin = max(min_margin, 4.0 * np.sqrt(max(base, 1.0 / n) * (1.0 - min(base, 0.999)) / n))
    above = frac > base + margin
    # the first step off the level from a point on it: the plateau's own first point may
    # still carry the previous knee's transition (an H200's first far-L2 point, just past the
    # near partition, had 11 % slow accesses against the plateau's 8 %); and the step must
    # hold: the next larger footprint (0.1 % on) is off the level too (one H200 run's far
    # plateau had a blip of slow accesses at 28.6 MB among its first points, then none up to
    # the real knee at 59 MB)
    def holds(i: int) -> bool:
        nxt = np.nonzero(xs > xs[i] * 1.001)[0]
        return bool(above[nxt[0]]) if nxt.size else True

    off = [i for i in range(1, xs.size) if above[i] and not above[i - 1] and holds(i)]
    if not off:
        return None
    i = off[0]
    return float(xs[i - 1]), float(xs[i])


def half_crossing(x: np.ndarray, samples: np.ndarray, lower: Plateau, upper: Plateau
                  ) -> tuple[float, float, float] | None:
    """(last x below, first x at or above, interpolated x) where the share of accesses at
    the upper level first reaches half its rise: from its value on ``lower`` to its value on
    ``upper``, counting an access as "up" from the geometric mean of the two latencies.

    Unlike the knee (the first step off the level), which moves with where the first
    conflicts happen to fall (an H200's L1 knee: 194-213 KB over four runs), the half
    crossing is set by the bulk of the accesses, so it is what a rerun reproduces. The
    interpolation is linear in the share over log footprint."""
    x = np.asarray(x, dtype=float)
    samples = np.asarray(samples, dtype=float)
    order = np.argsort(x)
    xs, rows = x[order], samples[order]
    frac = miss_fractions(rows, float(np.sqrt(lower.latency * upper.latency)))
    on_lo = (xs >= lower.first_x) & (xs <= lower.last_x)
    on_hi = (xs >= upper.first_x) & (xs <= upper.last_x)
    if not on_lo.any() or not on_hi.any():
        return None
    base, full = float(np.nanmedian(frac[on_lo])), float(np.nanmedian(frac[on_hi]))
    if full - base < 0.05:
        return None
    target = base + 0.5 * (full - base)
    # the last rise through the target before the upper level: the lower plateau of medians
    # may reach past it (an H200's far L2 ends at 61 MB by its medians, where 37 % of the
    # accesses already miss, against 7 % on the plateau and 58 % on DRAM's: the half of that
    # rise lies inside the plateau), and an early blip that falls back is no crossing
    for i in range(xs.size - 1, 0, -1):
        if lower.first_x < xs[i - 1] < upper.first_x + 1 and frac[i - 1] < target <= frac[i]:
            t = (target - frac[i - 1]) / (frac[i] - frac[i - 1])
            return float(xs[i - 1]), float(xs[i]), float(xs[i - 1] * (xs[i] / xs[i - 1]) ** t)
    return None
