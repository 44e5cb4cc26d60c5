"""An L2's slices from an SM x line latency matrix, and the address hash that homes lines.

Pure functions over arrays (no experiment, no device), so the simulator's planted slice maps
test them directly.

*Grouping.* An L2 hit's latency is a property of the line's slice and of the SM that asks
(an H200: 246-332 cycles from one SM, two repeats agreeing within a cycle). Per SM the
lines' latencies fall on a few levels; a level is a run of sorted values with no gap wider
than the tolerance. A line's group is its tuple of levels over the SMs: lines of one slice
share it, and slices that every SM sees at the same latency cannot be told apart (one
group). Groups of a handful of lines (a mis-timed line) are left unassigned.

*The hash.* Slice hashes are XORs of address bits (Accel-Sim's IPOLY, the hashes reverse-
engineered on CPUs): bit i of a line's slice is the parity of ``address & mask_i``. A GPU's
virtual and physical addresses agree only within a page, so the fit runs within pages: a
mask over the in-page bits belongs to the hash when the parity it gives is the same for
every line of a group in a page (the page's own bits add a constant per page). Every mask
over up to :data:`MAX_FIT_BITS` in-page bits is tried; the masks that hold form a subspace if
the hash is linear; a page's codes then name its groups. Held-out lines (not used in the
fit) give the accuracy, against the best constant guess per page (chance); a fit no better
than chance is not a result. Where virtual pages map to physical pages in order (the
simulator), the same test over the buffer's page bits extends the masks to every bit of the
buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpumem.contracts.xor_hash import codes_of, gf2_basis, reduce_modulo, span

#: Most in-page address bits the hash search tries at once (2**16 masks).
MAX_FIT_BITS = 16
#: A mask belongs to the hash when this share of the lines sit in (page, group) cells whose
#: parity it keeps constant (:func:`mask_scores`). A mask outside the hash keeps a cell of
#: k lines constant by chance with odds 2**(1-k): it scores at most about 0.5 (cells of two
#: lines), near 0 with cells of ten. A mask that tells two slices apart which latency merged
#: into one group loses only that group's lines (2 of 16 slices: 0.875), and is kept: the
#: merged group then shows two codes (:attr:`HashFit.unsplit`).
PURE = 0.75
#: A cell is constant under a mask when this share of its lines agree.
CELL_AGREE = 0.9
#: A fit is a result only when it puts at least this share of held-out lines in their group
#: (and its interval is above chance): an H200's 67-73 groups got one spurious mask that
#: placed 3.6 % of held-out lines (chance 2.2 %, interval 2.6-4.9 %) and predicted not even
#: the partition (52 %).
MIN_ACCURACY = 0.5
#: Groups of fewer lines than this share of the median group are left unassigned.
SMALL_GROUP = 0.2
#: An in-page XOR delta leaves the group unchanged (:func:`invariants`) when the pairs of
#: lines of one page it relates share their group at least INVARIANT_AGREE of the time,
#: pooled over every delta of the span it makes that at least MIN_PAIRS pairs test; a
#: delta is a candidate when its own pairs agree at least CANDIDATE of the time (a few
#: mislabelled lines, 3 % of them, put a true one's 30 pairs anywhere from 0.8 to 1). On
#: H200s (4096 lines, 16 pages) the deltas that do agree in 0.96-1.00 of 25-38 pairs each;
#: the next best agree in under 0.5.
INVARIANT_AGREE, CANDIDATE, MIN_PAIRS = 0.9, 0.75, 12
#: Pairs of lines drawn per page at most (all of them below this).
MAX_PAIRS = 1 << 20
#: In-page line bits the invariants are sought over at most (a 2 MB page of 128-B lines has
#: 14; a file claiming larger pages gets no invariants rather than arrays of 2**24 counts).
MAX_DELTA_BITS = 20


#: A level's density peak must stand this far above the valley to the next (valley under
#: this share of the lower peak), else the two are one level.
VALLEY = 0.5
#: Most histogram bins of one SM's values (a mis-timed line far out widens the range).
MAX_BINS = 1 << 18
#: A group that holds several slices (:func:`slice_count`) is cut in two where its classes
#: fall in two clusters (:func:`split_groups`), found from each half of every class's lines
#: (two independent measurements of each class) alike, SPLIT_AGREE of the classes on the
#: same side, and holding each other's clusters at least SPLIT_Z pooled standard deviations
#: apart (:func:`separation`; the smaller of the two). Noise alone: under 0.7 for 44-100
#: classes over 4-132 SMs, 2.3 for 8 (300 draws each). The groups of two of an H100 page
#: (32 SMs): 17 at 8.7-15.4, 8 at -0.3-0.1; two H200 pages': 16 and 18 at 7.7-15.5, the rest
#: at -0.6-0.0; an H100 page from 16 SMs: 17 at 4.6-11.0, 8 at -0.6-0.4. The two slices'
#: medians lie 0.5-1 cycle apart at some SMs, within the grouping's tolerance; the same
#: classes on every card.
SPLIT_Z, SPLIT_AGREE = 3.0, 0.95
#: Classes a half of a cut group holds at least.
SPLIT_MIN = 4


def levels(values: np.ndarray, tol: float) -> np.ndarray:
    """Each value's level (NaN: -1): the modes of the values' density, smoothed by a
    Gaussian of ``tol / 4`` (the tolerance is four standard errors of a value), cut at the
    valleys between them. Two modes are one level unless the valley between them falls
    under :data:`VALLEY` of the lower peak: levels as close as the noise allows are told
    apart (a gap rule chains them once the tails of two levels touch), and a level's own
    scatter never splits it."""
    v = np.asarray(values, float)
    out = np.full(v.shape, -1, np.int64)
    ok = np.isfinite(v)
    if not ok.any():
        return out
    x = v[ok]
    h = max(float(tol) / 4, 1e-3)
    lo, hi = float(x.min()) - 4 * h, float(x.max()) + 4 * h
    step = max(h / 4, (hi - lo) / MAX_BINS)
    n = int(np.ceil((hi - lo) / step)) + 1
    counts = np.bincount(((x - lo) / step).astype(np.int64), minlength=n).astype(float)
    k = np.arange(-int(4 * h / step) - 1, int(4 * h / step) + 2) * step
    dens = np.convolve(counts, np.exp(-0.5 * (k / h) ** 2), mode="same")
    d = np.diff(dens)
    peaks = [i for i in range(1, n - 1) if d[i - 1] > 0 >= d[i]]
    if dens[0] > dens[1]:
        peaks.insert(0, 0)
    merged = True
    while merged and len(peaks) > 1:  # the shallowest valley first, into the higher peak
        merged = False
        ratios = []
        for a, b in zip(peaks, peaks[1:], strict=False):
            valley = float(dens[a:b + 1].min())
            ratios.append(valley / max(min(dens[a], dens[b]), 1e-300))
        j = int(np.argmax(ratios))
        if ratios[j] >= VALLEY:
            a, b = peaks[j], peaks[j + 1]
            peaks.pop(j + 1 if dens[a] >= dens[b] else j)
            merged = True
    cuts = [a + int(np.argmin(dens[a:b + 1])) for a, b in zip(peaks, peaks[1:], strict=False)]
    bins = ((x - lo) / step).astype(np.int64)
    out[ok] = np.searchsorted(np.asarray(cuts), bins, side="right")
    return out


def group_lines(matrix: np.ndarray, tol: float) -> np.ndarray:
    """Each line's group (0 .. n-1, by size, largest first; -1 unassigned) from ``matrix``
    (lines x SMs, cycles): lines with the same level at every SM share a group; groups
    smaller than :data:`SMALL_GROUP` of the median group are unassigned."""
    m = np.asarray(matrix, float)
    n = m.shape[0]
    keys = np.stack([levels(m[:, j], tol) for j in range(m.shape[1])], axis=1)
    bad = (keys < 0).any(axis=1)
    _, inv, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    per_line = counts[inv]
    big = per_line >= max(2.0, SMALL_GROUP * float(np.median(counts[np.unique(inv[~bad])]))
                          if (~bad).any() else 2.0)
    keep = big & ~bad
    out = np.full(n, -1, np.int64)
    if not keep.any():
        return out
    out[keep] = np.unique(inv[keep], return_inverse=True)[1].reshape(-1)
    return _by_size(_nearest(m, _merged(m, _nearest(m, out, tol), tol), tol))


def _merged(m: np.ndarray, labels: np.ndarray, tol: float) -> np.ndarray:
    """Groups whose median vectors differ by less than ``tol`` at every SM made one: a level
    that one SM's density split in two (the two halves differ at that SM by a fraction of
    the noise) is one slice; two slices differ by a whole level somewhere.

    The closest pair is merged first (the first in row order among equals), one pair at a
    time; after a merge only the merged group's median and distances are worked out again,
    the absorbed group's row and column are closed (infinite), and each row keeps its
    nearest neighbour, so finding the closest pair costs a row, not the matrix (a search of
    the whole matrix per merge, and the distances worked out as one groups x groups x SMs
    array (1 GB), took 8-11 s for the 2,048 classes of an H200 page)."""
    lab = labels.copy()
    groups = np.unique(lab[lab >= 0])
    if groups.size < 2:
        return lab
    cent = np.stack([np.median(m[lab == g], axis=0) for g in groups])
    cheb = np.empty((groups.size, groups.size))
    for a in range(0, groups.size, 64):  # rows a block at a time: groups x groups x SMs
        cheb[a:a + 64] = np.max(np.abs(cent[a:a + 64, None, :] - cent[None, :, :]), axis=2)
    cheb[np.isnan(cheb)] = -np.inf  # a NaN line's group merges first, as argmin takes NaN
    np.fill_diagonal(cheb, np.inf)
    near, arg = cheb.min(axis=1), cheb.argmin(axis=1)
    open_ = np.ones(groups.size, bool)
    while True:
        i = int(np.argmin(near))
        j = int(arg[i])
        if near[i] >= tol:
            return lab
        lab[lab == groups[j]] = groups[i]
        open_[j] = False
        cheb[j, :], cheb[:, j] = np.inf, np.inf
        near[j] = np.inf
        cent[i] = np.median(m[lab == groups[i]], axis=0)
        row = np.max(np.abs(cent - cent[i]), axis=1)
        row[np.isnan(row)] = -np.inf
        row[~open_] = np.inf
        row[i] = np.inf
        cheb[i, :], cheb[:, i] = row, row
        stale = open_ & ((arg == i) | (arg == j))
        stale[i] = True
        for k in np.flatnonzero(stale):
            near[k], arg[k] = cheb[k].min(), cheb[k].argmin()
        closer = open_ & ~stale & ((row < near) | ((row == near) & (i < arg)))
        near[closer], arg[closer] = row[closer], i


def _nearest(m: np.ndarray, labels: np.ndarray, tol: float, rounds: int = 3) -> np.ndarray:
    """Every line moved to the group whose median vector is nearest (root mean square over
    the SMs), or left out where none is within ``tol``: a line whose value crossed a level's
    valley at one SM of many rejoins its slice; a mis-timed line stays out."""
    lab = labels.copy()
    ok = np.isfinite(m).all(axis=1)
    for _ in range(rounds):
        groups = np.unique(lab[lab >= 0])
        if groups.size == 0:
            break
        cent = np.stack([np.median(m[lab == g], axis=0) for g in groups])
        dist = np.full((m.shape[0], groups.size), np.inf)
        for i in range(groups.size):  # lines x groups, a group at a time (memory)
            dist[:, i] = np.sqrt(np.mean((m - cent[i]) ** 2, axis=1))
        best = np.argmin(dist, axis=1)
        new = np.where(ok & (dist[np.arange(m.shape[0]), best] <= tol), groups[best], -1)
        if np.array_equal(new, lab):
            break
        lab = new
    return lab


def _by_size(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0 .. n-1 by group size, largest first (-1 kept)."""
    out = np.full(labels.shape, -1, np.int64)
    keep = labels >= 0
    if not keep.any():
        return out
    ids, inv, sizes = np.unique(labels[keep], return_inverse=True, return_counts=True)
    rank = np.empty(ids.size, np.int64)
    rank[np.lexsort((ids, -sizes))] = np.arange(ids.size)
    out[keep] = rank[inv.reshape(-1)]
    return out


@dataclass
class SliceCount:
    """How many slices the groups hold, where a slice's share of the lines is known: a
    slice hash spreads a page's lines evenly over the slices it reaches (an H100's every
    2 MB page: 80 slices of 204-208 lines, 50 MB / 640 KB), so a group whose size is twice
    the others' holds two slices that latency did not split. The count is the fewest slices
    that make every group a whole number of equal slices, within the groups' counting
    noise: no count can exclude its multiples (each group two equal slices alike), so it is
    a lower bound, and the smallest N the sizes fit is taken."""

    count: int
    #: the count and the largest below twice it that the sizes fit as well (within 3.84 of
    #: the best -2 log likelihood, 95 %)
    interval: tuple[int, int]
    #: slices in each group (the groups in label order)
    per_group: np.ndarray
    #: a slice's share: units (lines, or classes) per slice
    unit: float


def slice_count(sizes: np.ndarray, population: int, floor: float = 1.0,
                span: int = 4) -> SliceCount | None:
    """The slices behind groups of ``sizes`` units (lines, or classes of lines), sampled
    from ``population`` units of the pages measured (all of them: every page's lines seen).

    For each N from the number of groups to ``span`` times it: a slice's share u = total /
    N, each group round(size / u) slices (at least one), and N must equal their sum. A
    group of m slices holds m u units give or take the sampling's noise: binomial with the
    finite-population correction (a random sample of the page: m u (1 - m / N) scaled by the
    share not sampled; every unit seen: none) plus ``floor`` (one unit: N rarely divides
    the page, so shares differ by one). The count is the smallest N whose -2 log likelihood
    is within 3.84 of the best (finer shares fit noisy sizes better, and a share that fits
    is the fewest slices' that fit); None where even the best leaves residuals beyond the
    noise (chi-square over its mean plus three standard deviations: sizes that are no
    multiples of a share, as an unbalanced table gives)."""
    s = np.asarray(sizes, float)
    g, total = s.size, float(s.sum())
    if g == 0 or total <= 0:
        return None
    fpc = max(0.0, (population - total) / max(population - 1.0, 1.0))
    fits: dict[int, tuple[float, float, np.ndarray]] = {}  # N: -2 log L, chi-square, m
    for n in range(g, span * g + 1):
        u = total / n
        m = np.maximum(1.0, np.round(s / u))
        if int(m.sum()) != n:
            continue
        var = total * (m / n) * (1 - m / n) * fpc + floor ** 2
        chi = float(np.sum((s - m * u) ** 2 / var))
        fits[n] = (chi + float(np.sum(np.log(var))), chi, m)
    if not fits:
        return None
    best = min(f[0] for f in fits.values())
    ok = sorted(n for n, f in fits.items() if f[0] <= best + 3.84)
    n = ok[0]
    near = [k for k in ok if k < 2 * n]
    _, chi, m = fits[n]
    if chi > g + 3 * np.sqrt(2 * g):  # the sizes are no multiples of a share, within noise
        return None
    return SliceCount(n, (near[0], near[-1]), m.astype(np.int64), total / n)


@dataclass
class Grouping:
    """The groups at the chosen tolerance, and how their count moves with it."""

    labels: np.ndarray
    tol: float
    count: int
    #: group counts at half and at twice the tolerance: their range is the count's interval
    count_range: tuple[int, int]
    unassigned: int
    #: the slices the groups hold (:func:`slice_count`), where every line of the pages was
    #: measured; else None
    slices: SliceCount | None = None
    #: lines grouped by class (:func:`class_grouping`), not one by one
    by_class: bool = False
    #: groups of several slices that :func:`split_groups` cut below the tolerance
    split: int = 0


def grouping(matrix: np.ndarray, tol: float, labels: np.ndarray | None = None) -> Grouping:
    """:func:`group_lines` at ``tol`` (``labels``, where already worked out), and the count
    at half and twice it."""
    labels = group_lines(matrix, tol) if labels is None else labels
    counts = [int(group_lines(matrix, t).max() + 1) for t in (tol / 2, tol * 2)]
    count = int(labels.max() + 1)
    return Grouping(labels, tol, count, (min([count, *counts]), max([count, *counts])),
                    int((labels < 0).sum()))


def class_medians(matrix: np.ndarray, classes: np.ndarray, use: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The classes the ``use`` lines show, and each one's median vector over those lines."""
    ids = np.unique(classes[use])
    return ids, np.stack([np.median(matrix[use & (classes == c)], axis=0) for c in ids])


def group_classes(matrix: np.ndarray, classes: np.ndarray, ids: np.ndarray, cent: np.ndarray,
                  tol: float) -> np.ndarray:
    """Each line's group where lines come in classes known to share a slice (the address
    modulo the hash's invariant deltas: 8 lines of an H200 page each): the classes' median
    vectors (``ids``, ``cent``: :func:`class_medians`) merged while closer than ``tol`` at
    every SM (a class of eight lines is a far steadier point than one line: two H200s' pages
    gave 88 and 69 groups line by line, 74 and 70 by class, the classes falling into the
    same slices on both); groups of under :data:`SMALL_GROUP` of the median class count
    unassigned; then every line to the nearest group by its own vector (:func:`_nearest`),
    so a held-out or mis-timed line is judged by what it measured, not by its class."""
    merged = _merged(cent, np.arange(ids.size), tol)
    kinds, per = np.unique(merged, return_counts=True)
    small = kinds[per < SMALL_GROUP * float(np.median(per))]
    merged[np.isin(merged, small)] = -1
    of_class = np.full(int(classes.max()) + 1, -1, np.int64)
    of_class[ids] = merged
    return _by_size(_nearest(matrix, of_class[classes], tol))


def class_grouping(matrix: np.ndarray, classes: np.ndarray, use: np.ndarray, tol: float,
                   population: int) -> Grouping:
    """:func:`group_classes` at ``tol`` (and at half and twice it for the count's range), with
    the slices its groups hold counted in classes (``population``: the classes of the pages
    measured; every one seen)."""
    cls = np.asarray(classes, np.int64)
    ids, cent = class_medians(matrix, cls, use)
    labels = group_classes(matrix, cls, ids, cent, tol)
    counts = [int(group_classes(matrix, cls, ids, cent, t).max() + 1)
              for t in (tol / 2, tol * 2)]

    def counted(labels: np.ndarray) -> SliceCount | None:
        count = int(labels.max() + 1)
        per = np.bincount(_majority(cls, labels), minlength=count)[:count] if count else \
            np.zeros(0, np.int64)
        return slice_count(per, population)

    sc, split = counted(labels), 0
    if sc is not None and (sc.per_group > 1).any():
        labels, split = split_groups(matrix, cls, use, labels, sc.per_group, sc.unit)
        if split:
            labels = _by_size(labels)
            sc = counted(labels)
    count = int(labels.max() + 1)
    return Grouping(labels, tol, count, (min([count, *counts]), max([count, *counts])),
                    int((labels < 0).sum()), sc, by_class=True, split=split)


def _best_cut(p: np.ndarray) -> np.ndarray:
    """The cut of values ``p`` in two that leaves the least sum of squares: the upper side."""
    order = np.argsort(p, kind="stable")
    s = p[order]
    n = s.size
    c, c2, k = np.cumsum(s), np.cumsum(s * s), np.arange(1, n)
    ss = (c2[:-1] - c[:-1] ** 2 / k) + (c2[-1] - c2[:-1]) - (c[-1] - c[:-1]) ** 2 / (n - k)
    side = np.zeros(n, bool)
    side[order[int(np.argmin(ss)) + 1:]] = True
    return side


def two_means(points: np.ndarray, rounds: int = 20) -> np.ndarray:
    """``points`` (rows) in two clusters, the side each falls on: the best cut along the
    direction they spread most (their first principal axis), then each moved to the nearer
    of the two means until none moves (k-means: three clusters of equal spread have no first
    axis, the means find them)."""
    x = points - points.mean(axis=0)
    side = _best_cut(x @ np.linalg.svd(x, full_matrices=False)[2][0])
    for _ in range(rounds):
        if side.all() or not side.any():
            break
        a, b = x[~side].mean(axis=0), x[side].mean(axis=0)
        new = ((x - b) ** 2).sum(axis=1) < ((x - a) ** 2).sum(axis=1)
        if np.array_equal(new, side):
            break
        side = new
    return side


def separation(fit: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, float]:
    """The two clusters of ``fit`` (:func:`two_means`), and how far apart they hold the
    same rows of ``test``, an independent measurement of them: along the line between the
    fit's means, the test rows' means apart in pooled standard deviations (0 where the fit
    finds no two clusters). Fitted and judged on one measurement, the separation grows with
    the SMs (noise alone gives 7 over 132 SMs and 44 classes); judged on another it is
    noise's own, about sqrt(1/n1 + 1/n2)."""
    side = two_means(fit)
    if side.all() or not side.any():
        return side, 0.0
    d = fit[side].mean(axis=0) - fit[~side].mean(axis=0)
    if not (d @ d) > 0:  # every point alike
        return side, 0.0
    p = test @ d
    gap = float(p[side].mean() - p[~side].mean())
    within = (((p[side] - p[side].mean()) ** 2).sum()
              + ((p[~side] - p[~side].mean()) ** 2).sum()) / max(1, p.size - 2)
    return side, (gap / float(np.sqrt(within)) if within > 0 else
                  (np.inf if gap > 0 else 0.0))


def _halves_of_lines(matrix: np.ndarray, classes: np.ndarray, use: np.ndarray,
                     ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each class's median vector over its ``use`` lines, and over the even and the odd
    ones of them (two independent measurements of the class; NaN rows where a half is
    empty)."""
    full, even, odd = (np.full((ids.size, matrix.shape[1]), np.nan) for _ in range(3))
    for i, c in enumerate(ids):
        rows = matrix[use & (classes == c)]
        if rows.shape[0]:
            full[i] = np.median(rows, axis=0)
        if rows.shape[0] >= 2:
            even[i], odd[i] = np.median(rows[0::2], axis=0), np.median(rows[1::2], axis=0)
    return full, even, odd


def split_groups(matrix: np.ndarray, classes: np.ndarray, use: np.ndarray,
                 labels: np.ndarray, per_group: np.ndarray, unit: float
                 ) -> tuple[np.ndarray, int]:
    """Groups that hold several slices (``per_group``, in label order; ``unit``: a slice's
    share of classes) cut in two where latency does tell their slices apart, by less than
    the grouping's tolerance (:data:`SPLIT_Z`): two slices whose lines differ by half a
    cycle at some SMs merge at a tolerance of a line's noise, and a class of eight lines
    resolves it. A half that still holds several slices is tried again. Each line of a cut
    group then goes to the nearer half (its own vector, the halves' mean class vectors), so
    held-out lines are judged by what they measured. Returns the new labels and the number
    of cuts."""
    lab = labels.copy()
    ok = use & (lab >= 0) & np.isfinite(matrix).all(axis=1)
    major = _majority(classes[ok], lab[ok])
    ids_all = np.unique(classes[ok])
    todo = [k for k, m in enumerate(per_group) if m > 1]
    cuts, fresh = 0, int(lab.max()) + 1
    while todo:
        k = todo.pop()
        ids = ids_all[major == k]
        full, even, odd = _halves_of_lines(matrix, classes, ok, ids)
        both = np.isfinite(even).all(axis=1) & np.isfinite(odd).all(axis=1)
        if ids.size < 2 * SPLIT_MIN or both.sum() < 2 * SPLIT_MIN:
            continue
        a, z_even = separation(even[both], odd[both])
        b, z_odd = separation(odd[both], even[both])
        z, agree = min(z_even, z_odd), max(np.mean(a == b), np.mean(a != b))
        side = two_means(full)
        sizes = (int((~side).sum()), int(side.sum()))
        if z < SPLIT_Z or agree < SPLIT_AGREE or min(sizes) < max(SPLIT_MIN, unit / 2):
            continue
        cents = np.stack([full[~side].mean(axis=0), full[side].mean(axis=0)])
        mine = np.flatnonzero(lab == k)
        x = matrix[mine]
        dist = np.stack([np.sqrt(np.nanmean((x - c) ** 2, axis=1)) for c in cents], axis=1)
        lab[mine[dist[:, 1] < dist[:, 0]]] = fresh
        major[np.isin(ids_all, ids[side])] = fresh
        todo += [label for label, size in ((k, sizes[0]), (fresh, sizes[1]))
                 if round(size / unit) > 1]
        cuts, fresh = cuts + 1, fresh + 1
    return lab, cuts


def _majority(classes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each class's group: the one most of its assigned lines are in (classes with none
    left out)."""
    keep = labels >= 0
    pairs, n = np.unique(np.stack([classes[keep], labels[keep]]), axis=1, return_counts=True)
    order = np.lexsort((-n, pairs[0]))  # by class, the most lines first
    first = np.r_[True, np.diff(pairs[0][order]) > 0]
    return pairs[1][order][first]


def profile(matrix: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """groups x SMs: the median latency of each group's lines at each SM."""
    g = int(labels.max() + 1) if labels.size else 0
    out = np.full((g, matrix.shape[1]), np.nan)
    for k in range(g):
        out[k] = np.nanmedian(matrix[labels == k], axis=0)
    return out


def partitions_of(prof: np.ndarray, agree: float = 0.75) -> np.ndarray:
    """Each group's partition (0, 1, ...; -1 unclear): the groups that the same SMs see
    nearer than their median group share one (a two-partition L2: the SMs near one half of
    the groups are far from the other)."""
    near = prof < np.nanmedian(prof, axis=0, keepdims=True)
    out = np.full(prof.shape[0], -1, np.int64)
    refs: list[int] = []
    for i in range(prof.shape[0]):
        for p, r in enumerate(refs):
            if np.mean(near[i] == near[r]) >= agree:
                out[i] = p
                break
        else:
            if all(np.mean(near[i] == near[r]) <= 1 - agree for r in refs):
                refs.append(i)
                out[i] = len(refs) - 1
    return out


# ---------------------------------------------------------------------------------------------
# The hash
# ---------------------------------------------------------------------------------------------

def cell_runs(offsets: np.ndarray, cells: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The offsets of the lines in cells of two or more (``cells``: an id per line, -1 left
    out), cell by cell, with where each cell's run starts and its size (float)."""
    keep = cells >= 0
    _, inv, counts = np.unique(cells[keep], return_inverse=True, return_counts=True)
    use = counts[inv] >= 2
    x = offsets[keep][use]
    inv = np.unique(inv[use], return_inverse=True)[1].reshape(-1)
    order = np.argsort(inv, kind="stable")
    x, inv = x[order], inv[order]
    starts = np.flatnonzero(np.r_[True, np.diff(inv) > 0]) if x.size else \
        np.zeros(0, np.int64)
    return x, starts, np.diff(np.r_[starts, inv.size]).astype(float)


def mask_scores(offsets: np.ndarray, cells: np.ndarray, lo: int, n: int) -> np.ndarray:
    """For every mask over bits ``lo .. lo + n - 1`` (mask value ``k << lo``, k = 0 ..
    2**n - 1), the share of lines in cells (``cells``: an id per line, -1 left out) whose
    parity under the mask at least :data:`CELL_AGREE` of the cell's lines share. Cells of one
    line tell nothing and are left out."""
    x, starts, size = cell_runs(offsets, cells)
    if x.size == 0:
        return np.zeros(1 << n)
    bits = ((x[:, None] >> np.arange(lo, lo + n)) & 1).astype(np.uint8)  # lines x n
    scores = np.empty(1 << n)
    low_bits = min(n, 12)  # masks a block at a time: lines x 4096 parities of a byte each
    low = np.zeros((x.size, 1 << low_bits), np.uint8)  # parity under each low-bits mask
    for b in range(low_bits):  # masks with bit b set: those without it, XOR the line's bit b
        w = 1 << b
        low[:, w:2 * w] = low[:, :w] ^ bits[:, b:b + 1]
    for k0 in range(0, 1 << n, low.shape[1]):
        high = np.bitwise_xor.reduce(bits[:, [b for b in range(low_bits, n) if k0 >> b & 1]],
                                     axis=1) if k0 else np.zeros(x.size, np.uint8)
        par = low ^ high[:, None]  # lines x masks k0 ..
        ones = np.add.reduceat(par, starts, axis=0, dtype=np.int32)  # cells x masks
        share = np.maximum(ones, size[:, None] - ones) / size[:, None]
        scores[k0:k0 + low.shape[1]] = ((share >= CELL_AGREE) * size[:, None]).sum(axis=0) \
            / size.sum()
    return scores


@dataclass
class HashFit:
    """The fitted address-to-group function (see the module's docstring)."""

    found: bool
    linear: bool
    #: the in-page masks (a reduced basis), as address masks
    masks: list[int]
    bits: tuple[int, int]  # the address bits tried: lo .. hi - 1
    page_bits: int
    accuracy: float  # on held-out lines
    accuracy_interval: tuple[float, float]
    chance: float  # the best constant guess per page, on the same lines
    held_out: int
    #: groups whose lines the masks split in two or more codes within a page: slices that
    #: latency alone did not tell apart (group -> codes)
    unsplit: dict[int, int] = field(default_factory=dict)
    #: masks over every bit of the buffer, where the pages' own bits fit too (else empty)
    buffer_masks: list[int] = field(default_factory=list)
    note: str = ""
    #: (page, code) -> group, from the fitted lines (each page's unseen codes filled in
    #: where pages are shifts of each other: :func:`aligned`)
    table: dict[tuple[int, int], int] = field(default_factory=dict)
    #: where no XOR hash holds: the invariant deltas (:func:`invariants`) the table is over,
    #: a line's code being its address modulo their span (no masks then)
    kernel: list[int] = field(default_factory=list)
    #: with ``kernel``: the share of each page's classes (codes) the fitted lines showed
    seen: float = float("nan")

    @property
    def model(self) -> str:
        """How the fit names groups, in words."""
        if not self.kernel:
            return "linear: XOR masks" if self.linear else \
                "not linear: the largest XOR subspace that holds"
        classes = 1 << (self.page_bits - self.bits[0] - len(self.kernel))
        return (f"not linear: a table per page over the address modulo its "
                f"{len(self.kernel)} invariant deltas ({', '.join(f'0x{k:x}' for k in self.kernel)}"
                f"), {self.seen:.0%} of each page's {classes} classes seen")

    def codes(self, offsets: np.ndarray) -> np.ndarray:
        """Each offset's code: its parities under the masks, or, with a kernel, its in-page
        address modulo the kernel."""
        if self.kernel:
            inpage = ((1 << self.page_bits) - 1) & ~((1 << self.bits[0]) - 1)
            return reduce_modulo(np.asarray(offsets, np.int64) & inpage, self.kernel)
        return codes_of(offsets, self.masks)

    def predict(self, offsets: np.ndarray) -> np.ndarray:
        """Each offset's group as the fit names it (-1 where its page and code were not
        seen)."""
        codes = self.codes(offsets)
        pages = np.asarray(offsets) >> self.page_bits
        return np.array([self.table.get((int(p), int(c)), -1)
                         for p, c in zip(pages, codes, strict=True)])


def cell_table(pages: np.ndarray, codes: np.ndarray, labels: np.ndarray
           ) -> dict[tuple[int, int], int]:
    """(page, code) -> the most common group among the lines there."""
    out: dict[tuple[int, int], int] = {}
    cells: dict[tuple[int, int], list[int]] = {}
    for p, c, g in zip(pages.tolist(), codes.tolist(), labels.tolist(), strict=True):
        if g >= 0:
            cells.setdefault((p, c), []).append(g)
    for k, gs in cells.items():
        vals, counts = np.unique(gs, return_counts=True)
        out[k] = int(vals[np.argmax(counts)])
    return out


def aligned(table: dict[tuple[int, int], int], bits: int) -> dict[tuple[int, int], int]:
    """``table`` with each page's codes that no fitted line showed filled in, where the
    pages differ by a constant: if a page's groups are the reference page's (the one with
    most codes seen) with its codes XOR ``d`` (at least 90 % of the codes both show, and
    two), the page takes the slice the pages agree on at every code. A linear hash makes
    every page such a shift of the others when each page reaches every slice; a page whose
    own bits pick other slices matches no shift and keeps only what it showed."""
    pages: dict[int, dict[int, int]] = {}
    for (p, c), g in table.items():
        pages.setdefault(p, {})[c] = g
    if not pages or bits == 0:
        return table
    ref = max(pages, key=lambda p: (len(pages[p]), -p))
    shift: dict[int, int] = {}
    for p, codes in pages.items():
        best, best_d = 0, -1
        for d in range(1 << bits):
            both = [c for c in codes if c ^ d in pages[ref]]
            hits = sum(codes[c] == pages[ref][c ^ d] for c in both)
            if len(both) >= 2 and hits >= 0.9 * len(both) and hits > best:
                best, best_d = hits, d
        if best_d >= 0:
            shift[p] = best_d
    votes: dict[int, dict[int, int]] = {}  # reference code -> group -> lines' pages voting
    for p, d in shift.items():
        for c, g in pages[p].items():
            votes.setdefault(c ^ d, {}).setdefault(g, 0)
            votes[c ^ d][g] += 1
    out = dict(table)
    for p, d in shift.items():
        for c in range(1 << bits):
            v = votes.get(c ^ d)
            if (p, c) not in out and v:
                out[(p, c)] = max(v, key=lambda g: (v[g], -g))
    return out


@dataclass
class Invariants:
    """The address XOR deltas within a page that never change a line's group: whatever the
    hash is, linear or not, the group is a function of the address modulo their span (a
    linear hash's are the null space of its masks)."""

    #: a reduced basis of the span, as address masks
    basis: list[int]
    #: deltas tested (with at least MIN_PAIRS pairs of lines) and pairs behind them
    tested: int
    pairs: int
    #: the fewest pairs behind one delta of the span that was tested
    least_support: int

    @property
    def dimension(self) -> int:
        return len(self.basis)


def _pair_deltas(x: np.ndarray, lab: np.ndarray, pages: np.ndarray, line_bits: int,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """For pairs of assigned lines of one page: their XOR in line units, and whether they
    share a group (every pair, or MAX_PAIRS random ones of a page that has more)."""
    rng = np.random.default_rng(seed)
    deltas, same = [], []
    for p in np.unique(pages[lab >= 0]):
        i = np.flatnonzero((pages == p) & (lab >= 0))
        if i.size < 2:
            continue
        if i.size * (i.size - 1) // 2 <= MAX_PAIRS:
            a, b = np.triu_indices(i.size, 1)
        else:
            a = rng.integers(0, i.size, MAX_PAIRS)
            b = (a + rng.integers(1, i.size, MAX_PAIRS)) % i.size
        deltas.append((x[i[a]] ^ x[i[b]]) >> line_bits)
        same.append(lab[i[a]] == lab[i[b]])
    if not deltas:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    return np.concatenate(deltas), np.concatenate(same)


def invariants(offsets: np.ndarray, labels: np.ndarray, *, line_bits: int, page_bits: int
               ) -> Invariants:
    """The largest span of in-page XOR deltas that keep the group of the pairs of lines
    they relate: candidates (:data:`CANDIDATE`) taken in order of support, each kept only
    if the pairs of every delta it newly spans, pooled, agree (:data:`INVARIANT_AGREE`).
    Deltas no pair tests are allowed in a span (the lines do not show every delta), never
    as a basis vector."""
    x = np.asarray(offsets, np.int64)
    lab = np.asarray(labels, np.int64)
    n = page_bits - line_bits
    if n <= 0 or n > MAX_DELTA_BITS or x.size < 2:
        return Invariants([], 0, 0, 0)
    d, same = _pair_deltas(x, lab, x >> page_bits, line_bits)
    cnt = np.bincount(d, minlength=1 << n)
    hit = np.bincount(d, weights=same, minlength=1 << n)
    tested = cnt >= MIN_PAIRS
    candidates = [int(k) for k in np.flatnonzero(tested & (hit >= CANDIDATE * cnt)) if k]
    candidates.sort(key=lambda k: (-float(hit[k] / cnt[k]), -int(cnt[k]), k))
    spanned = {0}
    basis: list[int] = []
    for k in candidates:
        if k in spanned:
            continue
        coset = np.array([e ^ k for e in spanned], np.int64)
        coset = coset[tested[coset]]
        if hit[coset].sum() >= INVARIANT_AGREE * cnt[coset].sum():
            basis.append(k)
            spanned.update(int(e) ^ k for e in list(spanned))
    support = [int(cnt[e]) for e in spanned if e and tested[e]]
    return Invariants(gf2_basis([k << line_bits for k in basis]), int(tested.sum()),
                      int(cnt.sum()), min(support, default=0))


def share_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95 % score interval of a share ``k / n`` (good at shares near 0 or 1, where
    the normal approximation's is not)."""
    d = n + z * z
    centre = (k + z * z / 2) / d
    half = z / d * np.sqrt(k * (n - k) / n + z * z / 4)
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def fit_hash(offsets: np.ndarray, labels: np.ndarray, held_out: np.ndarray, *, line_bits: int,
             page_bits: int, buffer_bits: int) -> HashFit:
    """Fit the slice hash to the lines at byte ``offsets`` (from a page-aligned buffer of
    ``2**buffer_bits`` bytes) and their ``labels`` (-1 unassigned), from the lines not
    ``held_out``; judge it on those that are."""
    x = np.asarray(offsets, np.int64)
    lab = np.asarray(labels, np.int64)
    train = ~np.asarray(held_out, bool) & (lab >= 0)
    test = np.asarray(held_out, bool) & (lab >= 0)
    hi = min(page_bits, line_bits + MAX_FIT_BITS)
    n = max(0, hi - line_bits)
    pages = x >> page_bits
    groups = int(lab.max() + 1) if lab.size else 0
    cells = np.where(train, pages * max(groups, 1) + lab, -1)
    scores = mask_scores(x, cells, line_bits, n) if n else np.zeros(1)
    good = [int(k) << line_bits for k in np.flatnonzero(scores >= PURE) if k]
    basis = gf2_basis(good)
    linear = len(good) + 1 == len(span(basis)) and set(good) | {0} == span(basis)
    if not linear:  # the masks that hold are no subspace: keep the largest that is
        basis = gf2_basis([m for m in good if all(scores[(m ^ b) >> line_bits] >= PURE
                                                  for b in good)])
    codes = codes_of(x, basis)
    table = aligned(cell_table(pages[train], codes[train], lab[train]), len(basis))
    fit = HashFit(found=False, linear=linear, masks=basis, bits=(line_bits, hi),
                  page_bits=page_bits, accuracy=float("nan"), accuracy_interval=(0.0, 1.0),
                  chance=float("nan"), held_out=int(test.sum()), table=table)
    if not test.any():
        fit.note = "no held-out lines to judge the fit by"
        return fit
    pred = fit.predict(x[test])
    k = int((pred == lab[test]).sum())
    fit.accuracy = k / int(test.sum())
    fit.accuracy_interval = share_interval(k, int(test.sum()))
    fit.chance = _chance(pages, lab, train, test)
    fit.found = bool(basis) and fit.accuracy_interval[0] > fit.chance and \
        fit.accuracy >= MIN_ACCURACY
    fit.unsplit = _unsplit(pages[train], codes[train], lab[train])
    if fit.found and buffer_bits > page_bits:
        fit.buffer_masks = _buffer_masks(x, lab, train, basis, page_bits, buffer_bits)
    if not fit.found:
        fit = _coset_fit(fit, x, lab, train, test)
    if not fit.found:
        fit.note = (f"predicts held-out lines' groups no better than chance "
                    f"({fit.accuracy:.1%} against {fit.chance:.1%})"
                    if fit.accuracy_interval[0] <= fit.chance else
                    f"puts {fit.accuracy:.1%} of held-out lines in their group (chance "
                    f"{fit.chance:.1%}), under the {MIN_ACCURACY:.0%} a hash must reach"
                    + ("" if fit.kernel else ": no XOR hash of in-page bits names these "
                       "groups"))
        if fit.kernel and fit.seen < 0.95:
            fit.note += (f"; the fitted lines showed {fit.seen:.0%} of each page's classes: "
                         f"a line of each class per page would tell")
    return fit


def _coset_fit(fit: HashFit, x: np.ndarray, lab: np.ndarray, train: np.ndarray,
               test: np.ndarray) -> HashFit:
    """Where no XOR hash holds: the group as a table per page over the address modulo the
    invariant deltas of the fitted lines (:func:`invariants`), the best function that
    assumes nothing of the hash's form, judged on the same held-out lines. It replaces
    ``fit`` where it puts more of them in their group; it predicts only lines whose page
    and class the fitted lines showed, so a sparse sample limits it (:attr:`HashFit.seen`)."""
    line_bits, page_bits = fit.bits[0], fit.page_bits
    inv = invariants(x[train], lab[train], line_bits=line_bits, page_bits=page_bits)
    if not inv.basis:
        return fit
    alt = HashFit(found=False, linear=False, masks=[], bits=fit.bits, page_bits=page_bits,
                  accuracy=float("nan"), accuracy_interval=(0.0, 1.0), chance=fit.chance,
                  held_out=fit.held_out, kernel=inv.basis)
    pages = x >> page_bits
    codes = alt.codes(x)
    alt.table = cell_table(pages[train], codes[train], lab[train])
    classes = 1 << (page_bits - line_bits - len(inv.basis))
    per_page = [len({c for (q, c) in alt.table if q == p}) for p in np.unique(pages[train])]
    alt.seen = float(np.mean(per_page)) / classes if per_page else 0.0
    k = int((alt.predict(x[test]) == lab[test]).sum())
    n = int(test.sum())
    alt.accuracy, alt.accuracy_interval = k / n, share_interval(k, n)
    if not alt.accuracy > fit.accuracy:
        return fit
    alt.found = alt.accuracy_interval[0] > alt.chance and alt.accuracy >= MIN_ACCURACY
    return alt


def _chance(pages: np.ndarray, lab: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    """The held-out accuracy of guessing each page's most common group (of the fit's lines)."""
    hits = 0
    for p in np.unique(pages[test]):
        tr = lab[train & (pages == p)]
        if tr.size == 0:
            continue
        vals, counts = np.unique(tr, return_counts=True)
        hits += int((lab[test & (pages == p)] == vals[np.argmax(counts)]).sum())
    return hits / max(1, int(test.sum()))


def _unsplit(pages: np.ndarray, codes: np.ndarray, lab: np.ndarray) -> dict[int, int]:
    """Groups that take two or more codes within a page, each code on at least a quarter of
    the group's lines there: slices the latencies merged."""
    out: dict[int, int] = {}
    for g in np.unique(lab):
        worst = 1
        for p in np.unique(pages[lab == g]):
            c = codes[(lab == g) & (pages == p)]
            if c.size < 4:
                continue
            _, counts = np.unique(c, return_counts=True)
            worst = max(worst, int((counts >= 0.25 * c.size).sum()))
        if worst > 1:
            out[int(g)] = worst
    return out


def _buffer_masks(x: np.ndarray, lab: np.ndarray, train: np.ndarray, basis: list[int],
                  page_bits: int, buffer_bits: int) -> list[int]:
    """The masks over in-page and page bits whose parity each group keeps constant over the
    whole buffer (not per page), if together with the in-page ones they decide every group;
    else none: the pages' bits are the GPU's physical page numbers, not these."""
    hp = buffer_bits - page_bits
    if hp > 12:
        return []
    good = []
    tr, gs = x[train], lab[train]
    for m_in in span(basis):
        for k in range(1, 1 << hp):
            par = codes_of(tr, [m_in | (k << page_bits)])
            shares = [float(np.mean(par[gs == g])) for g in np.unique(gs)]
            if all(max(f, 1 - f) >= CELL_AGREE for f in shares):
                good.append(m_in | (k << page_bits))
    if not good:
        return []
    full = gf2_basis(good)
    codes = codes_of(x[train], full)
    per_code: dict[int, set[int]] = {}
    for c, g in zip(codes.tolist(), lab[train].tolist(), strict=True):
        per_code.setdefault(c, set()).add(g)
    return full if all(len(v) == 1 for v in per_code.values()) else []
