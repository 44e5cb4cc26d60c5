"""Slices latency cannot tell apart, told apart by contention (pure functions).

Two L2 slices at the same latency from every SM (an H100 page's 8 pairs, an H200's 6-8)
stay one group of the latency map however many SMs measure it. A slice serves a limited
rate, so SMs that load the lines of one slice over and over fill its queue: a chased line
homed in that slice then waits behind their requests, a line of its twin does not. One
test hammers one class of a group's lines (a class: lines the hash never tells apart, so
one slice) and times one line of every class of the group beside it, and a few lines of
other groups as controls; the classes it slows are the hammered slice's. A group of ``k``
slices takes ``k`` tests, each hammering a class no earlier test slowed: every class should
then be slowed by exactly one test.

A test's delays (hammered minus unhammered, per class) are cut in two on the first half of
its repeats (:func:`slowed`) and judged on the second, by rank (:func:`held_out_z`): a
statistic judged on the data that drew the cut grows with noise alone, and a queue's
delays are no normal noise (an H100's unslowed lines sit at 0 +- 2 cycles, its slowed ones
anywhere from 0 to 40 in one repeat, 4-20 in the median of six; 70-97 on another card),
which a pooled standard deviation would let the slowed side's spread swamp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpumem.analysis.slices import SPLIT_MIN, SPLIT_Z, two_means

#: A probe's part in a test: a line of a class of the group, the hammered class's own line
#: (a positive control: its slice is the hammered one), a line of another group (a
#: negative control), or padding.
GROUP, HAMMERED, CONTROL, PAD = 0, 1, 2, -1
#: A class is slowed where its mean delay stands this many of the unslowed lines' spreads
#: above their centre, and this share of the way to the slowed cluster's median
#: (:func:`slowed`).
CLASS_Z, GAP_SHARE = 4.0, 0.2


@dataclass
class TwinTest:
    """What one test says: the group's classes it slowed, by how much, how surely."""

    group: int
    hammered: int  # the class hammered
    classes: np.ndarray  # the group's classes this test timed
    slowed: np.ndarray  # bool per class: waited behind the hammer
    #: median delay of the slowed classes beyond the others', cycles (a test that did not
    #: split: of the group's classes beyond the control lines')
    delay: float
    delay_interval: tuple[float, float]
    control: float  # median delay of the other groups' lines, cycles
    separation: float  # held out: Mann-Whitney's z (:func:`held_out_z`)
    split: bool
    why: str  # why it did not split ("" where it did)
    #: the separation's bootstrap 95 % interval over the group's classes (NaN: none judged)
    separation_interval: tuple[float, float] = (float("nan"), float("nan"))


def delays(base: np.ndarray, hammered: np.ndarray) -> np.ndarray:
    """Per probe and repeat: the hammered latency minus the unhammered one (probes x
    repeats, cycles)."""
    return np.asarray(hammered, float) - np.asarray(base, float)


def held_out_z(side: np.ndarray, test: np.ndarray) -> float:
    """How surely the classes a cut put on its upper ``side`` rank above the others in
    ``test``, an independent measurement of them: Mann-Whitney's U as a z score (ties given
    their mean rank, the variance corrected for them). Noise alone: a standard normal
    whatever its shape, as the cut did not see ``test``; every upper class above every
    lower one: 6.1 for 25 + 25 classes, 3.4 for 8 + 8."""
    a, b = test[side], test[~side]
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        return 0.0
    x = np.concatenate([a, b])
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # mean ranks of ties, from 1
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - (counts ** 3 - counts).sum() / (n * (n - 1)))
    return float((u - n1 * n2 / 2.0) / np.sqrt(var)) if var > 0 else 0.0


def judge_test(group: int, hammered_class: int, classes: np.ndarray, roles: np.ndarray,
               d: np.ndarray) -> TwinTest:
    """One test from its probes' delays ``d`` (probes x repeats), the probes' ``classes``
    and ``roles``. The cut (:func:`slowed`) is drawn on the first half of the repeats and
    judged on the second; a split needs the
    held-out rank statistic at SPLIT_Z, SPLIT_MIN classes on each side (a share of the group
    can be a single slice's only then), the hammered class's own line on the slowed side
    and every control line below the cut's middle (a delay every slice shows is the
    crossbar's, not a slice's)."""
    d = np.asarray(d, float)
    reps = d.shape[1]
    half = max(1, reps // 2)
    mine = (roles == GROUP) | (roles == HAMMERED)
    ctl = roles == CONTROL
    cls = classes[mine]
    # means over repeats, the highest and the lowest left out: a queue's delay is
    # heavy-tailed, and such a mean of six repeats sorts an H100's classes as two runs
    # agree (their median does not), while a timer's outlier moves it little
    fit = trimmed_mean(d[:, :half])
    test = trimmed_mean(d[:, half:]) if reps > 1 else fit
    whole = trimmed_mean(d)
    ok = np.isfinite(fit[mine]) & np.isfinite(test[mine])
    side = np.zeros(cls.size, bool)
    sep, sep_iv = 0.0, (float("nan"), float("nan"))
    if ok.sum() >= 2 * SPLIT_MIN:
        # drawn on the first half, judged on the second; the classes then placed by all
        # the repeats
        first = slowed(fit[mine][ok], fit[ctl])
        sep = held_out_z(first, test[mine][ok])
        sep_iv = _separation_interval(first, test[mine][ok])
        side[ok] = slowed(whole[mine][ok], whole[ctl])
    slowed_d, other_d = whole[mine][side], whole[mine][~side & ok]
    middle = (np.median(slowed_d) + np.median(other_d)) / 2 \
        if slowed_d.size and other_d.size else np.inf
    own = side[(roles[mine] == HAMMERED)]
    control = float(np.nanmedian(whole[ctl])) if ctl.any() else float("nan")
    why = ""
    if sep < SPLIT_Z:
        why = f"the delays fall in no two clusters (separation {sep:.1f} < {SPLIT_Z:g})"
    elif min(side.sum(), (~side & ok).sum()) < SPLIT_MIN:
        why = f"a side holds fewer than {SPLIT_MIN} classes"
    elif own.size and not own.all():
        why = "the hammered class's own line was not slowed"
    elif ctl.any() and (whole[ctl] >= middle).any():
        why = "lines of other groups were slowed as much"
    if why:  # no slice of its own: the group's lines against the other groups'
        slowed_d, other_d = whole[mine][ok], whole[ctl][np.isfinite(whole[ctl])]
    delay = float(np.median(slowed_d) - np.median(other_d)) if slowed_d.size and \
        other_d.size else float("nan")
    lo, hi = _delay_interval(slowed_d, other_d)
    return TwinTest(group, hammered_class, cls, side, delay, (lo, hi), control, sep,
                    not why, why, sep_iv)


def trimmed_mean(x: np.ndarray) -> np.ndarray:
    """Each row's mean without its highest and lowest finite value (three or more), NaN
    for a row with none."""
    x = np.asarray(x, float)
    out = np.full(x.shape[0], np.nan)
    for i, row in enumerate(x):
        v = np.sort(row[np.isfinite(row)])
        if v.size:
            out[i] = v[1:-1].mean() if v.size >= 3 else v.mean()
    return out


def slowed(means: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """Which classes a hammer slowed, from their mean delays ``means`` and the control
    lines' ``controls``: above the unslowed lines' centre by CLASS_Z of their spread. The
    unslowed: the controls and the lower of the two clusters the means fall in; their
    spread, robustly (1.4826 median absolute deviations, at least half a cycle: the timer
    counts whole cycles), is of the lines' means, not of one repeat's values: a line
    unslowed may sit a cycle or two off from repeat to repeat alike (an H100's do). And at
    least GAP_SHARE of the way to the higher cluster's median: with every SM hammering the
    slowed wait some 1,450 cycles, and one unslowed class 2 cycles above its fellows stood
    4 of their spreads off (GPU-a2f55277, tests/data/h100-s32)."""
    low = ~_oriented(two_means(means[:, None]), means)
    null = np.concatenate([means[low], controls])
    null = null[np.isfinite(null)]
    if null.size < 2:
        return np.zeros(means.size, bool)
    centre = float(np.median(null))
    sd = max(0.5, 1.4826 * float(np.median(np.abs(null - centre))))
    high = means[~low & np.isfinite(means)]
    gap = float(np.median(high)) - centre if high.size else 0.0
    return means > centre + max(CLASS_Z * sd, GAP_SHARE * gap)


def _oriented(side: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``side`` flipped where needed so that it marks the higher of the two clusters."""
    if side.all() or not side.any():
        return np.zeros_like(side)
    return side if values[side].mean() >= values[~side].mean() else ~side


def _bootstrap(a: np.ndarray, b: np.ndarray,
               statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
               draws: int = 400) -> tuple[float, float]:
    """A bootstrap 95 % interval of ``statistic`` of two samples, each drawn again with
    replacement, as many as it holds (``statistic`` takes the draws x size resamples of
    each, one statistic per row; seeded: the same file gives the same interval)."""
    if a.size < 2 or b.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(44)
    got = statistic(rng.choice(a, (draws, a.size)), rng.choice(b, (draws, b.size)))
    lo, hi = np.percentile(got, [2.5, 97.5])
    return float(lo), float(hi)


def _delay_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """A bootstrap 95 % interval of median(a) - median(b)."""
    return _bootstrap(a, b, lambda x, y: np.median(x, axis=1) - np.median(y, axis=1))


def _separation_interval(side: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """A bootstrap 95 % interval of :func:`held_out_z`: the classes on each side of the cut
    drawn again. Which classes a group holds is the sample; a cut that put every slowed
    class above every other keeps near its largest z, one that split noise spans zero."""
    mark = np.r_[np.ones(int(side.sum()), bool), np.zeros(int((~side).sum()), bool)]
    return _bootstrap(test[side], test[~side], lambda x, y: np.array(
        [held_out_z(mark, np.r_[p, q]) for p, q in zip(x, y, strict=True)]))


@dataclass
class GroupSplit:
    """A group's tests together: the slice each class falls in (the test that slowed it;
    -1: none or several), how many slices the tests found, and how many classes exactly one
    test slowed."""

    group: int
    held: int  # slices the map says the group holds
    slice_of: dict[int, int]
    found: int
    placed: int
    classes: int

    @property
    def split(self) -> bool:
        """The tests found as many slices as the map counts, each class in one of them."""
        return self.found == self.held and self.placed == self.classes


def group_split(group: int, held: int, tests: list[TwinTest]) -> GroupSplit:
    """The slices of a group from its tests (in the order they ran): each class goes to
    the one split test that slowed it."""
    classes = np.unique(np.concatenate([t.classes for t in tests])) if tests else \
        np.empty(0, np.int64)
    hits: dict[int, list[int]] = {int(c): [] for c in classes}
    found = 0
    for k, t in enumerate(tests):
        if not t.split:
            continue
        found += 1
        for c in t.classes[t.slowed]:
            hits[int(c)].append(k)
    slice_of = {c: (h[0] if len(h) == 1 else -1) for c, h in hits.items()}
    placed = sum(v >= 0 for v in slice_of.values())
    return GroupSplit(group, held, slice_of, found, placed, len(classes))


def next_hammer(classes: np.ndarray, tests: list[TwinTest]) -> int | None:
    """The class the next test of a group hammers: the first that no split test so far
    slowed (None: every class placed, or an earlier test did not split)."""
    if any(not t.split for t in tests):
        return None
    slowed = {int(c) for t in tests for c in t.classes[t.slowed]}
    rest = [int(c) for c in classes if int(c) not in slowed]
    return rest[0] if rest else None
