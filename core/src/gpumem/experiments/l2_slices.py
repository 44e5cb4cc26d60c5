"""``l2_slices``: the L2's slices, each SM's distance to each, and the hash that homes lines.

A GPU's L2 is cut in slices, each line homed in one by a hash of its address, and an L2
hit's latency depends on where the slice sits from the SM that asks: an H200 served 4096
random lines of a 32 MB buffer at 246-332 cycles from one SM, in discrete levels, two
repeats agreeing within a cycle, two SMs of one TPC alike and SMs across the chip opposite.
No public tool recovers this: a network-on-chip study of the H100 drew its slice maps by
hand, and Accel-Sim's tuner assumes its L2 mapping.

The measurement: ``LINES_PER_PAGE`` random lines in each of ``PAGES`` pages of ``PAGE``
bytes; from each chosen SM (the kernel runs on the block that lands there, by ``%smid``)
a pattern chase over the lines, each visited ``ACCESSES`` times in a row (four elements of
one 32 B sector, so every visit after the first is an L2 hit; the L2-only ``cg`` path),
after one untimed pass that brings them all in. A line's value in a run is the median of
its timed visits; the runs repeat until the stopping rule is met. The SMs start spread
over the chip and more are added while they split groups the others did not
(:meth:`L2Slices.refine`).

The analysis (:mod:`gpumem.analysis.slices`): lines grouped by their latency vectors over
the SMs (a tolerance from the runs' own noise), each group's latency from each SM, the
groups each partition holds, and the address hash fitted within pages, judged on held-out
lines (one line in four, never used in the fit). Where the fit saw every class of each page
(every line of a page: ``l2_hash``), the lines are grouped again by class, a far steadier
point than a line, and the slices the groups hold are counted from their sizes (a hash
spreads a page's lines evenly over its slices); a group that holds several is cut in two
where its classes fall in two clusters (two slices under a cycle apart at some SMs, within a
line's noise: :func:`gpumem.analysis.slices.split_groups`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from gpumem.analysis import slices as S
from gpumem.contracts.device import ChaseRequest, Device
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.estimates import order_interval
from gpumem.contracts.experiment import (
    Axis,
    Experiment,
    Plan,
    RunContext,
    Var,
    median_over_repeats,
    repeat_count,
)
from gpumem.contracts.findings import NOT_FOUND, Finding, unresolved
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.contracts.xor_hash import class_index
from gpumem.experiments.figures import LATENCY

LINE = 128
#: Pages of the buffer and lines sampled in each. 2 MB: where an H200's virtual and
#: physical addresses stop agreeing (the hash is fitted within pages).
PAGE, PAGES, LINES_PER_PAGE = 2 << 20, 16, 256
#: Timed visits per line and chase (elements 0, 4, 8, 12 of its first sector).
ACCESSES = 4
#: Lines per chase: its record (ACCESSES each) stays within the 4096 accesses a CUDA device
#: keeps in shared memory, out of the L2's way.
CHASE_LINES = 1024
#: SMs measured first, and at most (more are added while they split groups).
FIRST_SMS, MOST_SMS = 8, 32
#: One line in this many is held out of the hash fit, to judge it.
HOLD_OUT = 4
#: Lines are grouped by class (:func:`gpumem.analysis.slices.class_grouping`) where the hash
#: fit's classes were seen in at least this share of each page (every line of a page:
#: ``l2_hash``).
CLASSES_SEEN = 0.95
#: The grouping tolerance: this many standard errors of a line's value, at least MIN_TOL.
TOL_SE, MIN_TOL = 4.0, 0.5


def sample_lines(seed: int, pages: int = PAGES, per_page: int = LINES_PER_PAGE,
                 page: int = PAGE) -> np.ndarray:
    """The lines' byte offsets: ``per_page`` distinct random lines in each of ``pages``
    pages of ``page`` bytes, by page (every line of a page where ``per_page`` is all)."""
    rng = np.random.default_rng([seed, 44])
    per = page // LINE
    return np.concatenate([p * page + np.sort(rng.choice(per, per_page, replace=False))
                           * LINE for p in range(pages)]).astype(np.int64)


def sm_order(sm_count: int) -> list[int]:
    """SMs in the order they are added: spread over the chip first (van der Corput
    fractions of the SM count), then the gaps between."""
    out: list[int] = []
    i = 1
    while len(out) < sm_count:
        f, d, k = 0.0, 0.5, i
        while k:
            f += d * (k & 1)
            k >>= 1
            d /= 2
        sm = int(f * sm_count)
        if sm not in out:
            out.append(sm)
        i += 1
        if i > 64 * sm_count:  # pragma: no cover - the fractions reach every SM long before
            out += [s for s in range(sm_count) if s not in out]
    return out


def batches(sm_count: int) -> list[list[int]]:
    """The SMs of each round: FIRST_SMS, then as many again, then doubling, to MOST_SMS."""
    order = sm_order(sm_count)[:MOST_SMS]
    out, at, size = [], 0, FIRST_SMS
    while at < len(order):
        out.append(order[at:at + size])
        at += size
        size = max(size, at)
    return out


@dataclass
class SliceMap:
    """What the analysis found, for the findings, the figure and the exports."""

    sms: list[int]
    offsets: np.ndarray
    matrix: np.ndarray  # lines x SMs, cycles, timer overhead removed
    grouping: S.Grouping
    profile: np.ndarray  # groups x SMs
    partitions: np.ndarray
    fit: S.HashFit  # its table: (page, code) -> group, from the lines the fit used
    held_out: np.ndarray
    buffer: int  # bytes of the buffer the lines were sampled from
    #: each line's class (its page and the hash's code: lines the hash never tells apart),
    #: where the lines were grouped by class; else None
    classes: np.ndarray | None = None


def slice_map(raw: xr.Dataset, tol: float | None = None) -> SliceMap | None:
    """The slice map of a raw ``l2_slices`` dataset (None with fewer than two SMs);
    ``tol``: the grouping tolerance, where not the one the runs' own noise gives (a matrix
    kept without its repeats)."""
    ok = (raw["point_status"] == 0).values
    if ok.sum() < 2:
        return None
    lat = median_over_repeats(raw["latency"]) - median_over_repeats(raw["timer_overhead"])
    matrix = lat.values[ok].T.astype(float)  # lines x SMs
    sms = [int(s) for s in raw["sm"].values[ok]]
    offsets = np.asarray(raw["line"].values, np.int64)
    tol = _tolerance(raw["latency"].values[ok]) if tol is None else tol
    labels = S.group_lines(matrix, tol)
    held = (np.arange(offsets.size) % HOLD_OUT) == HOLD_OUT - 1
    page_bits, buffer_bits = _bits_of(raw.attrs, offsets)
    line_bits = LINE.bit_length() - 1

    def fit_to(labels: np.ndarray) -> S.HashFit:
        return S.fit_hash(offsets, labels, held, line_bits=line_bits, page_bits=page_bits,
                          buffer_bits=buffer_bits)

    fit = fit_to(labels)
    classes = None
    if fit.found and fit.kernel and fit.seen >= CLASSES_SEEN:
        # every class of each page seen: group the classes, then fit again to those groups
        pages = offsets >> page_bits
        classes = np.unique(np.stack([pages, fit.codes(offsets)]), axis=1,
                            return_inverse=True)[1].reshape(-1)
        per_page = 1 << (page_bits - line_bits - len(fit.kernel))
        g = S.class_grouping(matrix, classes, ~held, tol,
                             population=per_page * np.unique(pages).size)
        fit = fit_to(g.labels)
    else:
        g = S.grouping(matrix, tol, labels)
        if offsets.size >= (1 << (buffer_bits - line_bits)):  # every line of the buffer
            g.slices = S.slice_count(np.bincount(labels[labels >= 0]), offsets.size)
    prof = S.profile(matrix, g.labels)
    parts = S.partitions_of(prof) if prof.shape[0] > 1 else np.zeros(prof.shape[0], np.int64)
    return SliceMap(sms, offsets, matrix, g, prof, parts, fit, held, 1 << buffer_bits,
                    classes)


def split_by(m: SliceMap, slices: Mapping[int, Mapping[int, int]]) -> SliceMap:
    """``m`` with each group of ``slices`` (group -> each of its classes' slice among the
    group's, 0, 1, ...: what contention told apart, :mod:`gpumem.experiments.l2_twins`) cut
    in one group per slice, and the hash fitted again to the finer groups. Every class of
    such a group must be placed: a group with a class left out stays whole."""
    if m.classes is None or not slices:
        return m
    labels = m.grouping.labels.copy()
    per = m.grouping.slices.per_group.copy() if m.grouping.slices is not None else None
    count = m.grouping.count
    for group, slice_of in sorted(slices.items()):
        mine = labels == group
        classes = np.unique(m.classes[mine])
        if any(slice_of.get(int(c), -1) < 0 for c in classes):
            continue
        parts = sorted({int(v) for v in slice_of.values()})
        new = {p: (group if i == 0 else count + i - 1) for i, p in enumerate(parts)}
        which = np.array([new[slice_of[int(c)]] for c in m.classes[mine]], np.int64)
        labels[mine] = which
        count += len(parts) - 1
        if per is not None:
            per = np.concatenate([per, np.ones(len(parts) - 1, per.dtype)])
            per[group] = 1
    if count == m.grouping.count:
        return m
    lo, hi = m.grouping.count_range
    extra = count - m.grouping.count
    g = replace(m.grouping, labels=labels, count=count, count_range=(lo + extra, hi + extra),
                slices=None if per is None or m.grouping.slices is None else
                replace(m.grouping.slices, per_group=per))
    fit = S.fit_hash(m.offsets, labels, m.held_out, line_bits=LINE.bit_length() - 1,
                     page_bits=m.fit.page_bits, buffer_bits=m.buffer.bit_length() - 1)
    prof = S.profile(m.matrix, labels)
    parts_of = S.partitions_of(prof) if prof.shape[0] > 1 else np.zeros(prof.shape[0],
                                                                          np.int64)
    return replace(m, grouping=g, fit=fit, profile=prof, partitions=parts_of)


def _bits_of(attrs: Mapping[str, Any], offsets: np.ndarray) -> tuple[int, int]:
    """log2 of the page and of the buffer the file says it measured, checked: a file's
    attributes are not trusted (a page that is no power of two, or a line outside the
    buffer, would fit a hash to nothing)."""
    def power(name: str, default: int) -> int:
        v = attrs.get(name, default)
        try:
            x = int(v)
        except (TypeError, ValueError):
            raise ValueError(f"l2_slices: attribute {name}={v!r} is not a whole number") from None
        if x < LINE or x > 1 << 48 or x & (x - 1):
            raise ValueError(f"l2_slices: attribute {name}={x} is not a power of two between "
                             f"{LINE} B and 2**48 B")
        return x.bit_length() - 1
    page, buffer = power("plan_page", PAGE), power("plan_footprint", PAGE * PAGES)
    if page > buffer or offsets.size == 0 or offsets.min() < 0 or \
            offsets.max() >= 1 << buffer or (offsets % LINE).any():
        raise ValueError("l2_slices: the lines' offsets are not whole lines inside the buffer, "
                         "or the page is larger than the buffer")
    return page, buffer


def _tolerance(runs: np.ndarray) -> float:
    """How far apart two lines' values may be and still be one level: TOL_SE standard
    errors of a line's median over its runs (points x lines x runs), at least MIN_TOL."""
    x = np.asarray(runs, float)
    n = np.isfinite(x).sum(axis=-1)
    if x.ndim < 3 or n.max() < 2:
        return 1.0
    sd = np.nanstd(x, axis=-1, ddof=1)
    se = 1.2533 * sd / np.sqrt(np.maximum(n, 1))  # the median's, of near-normal runs
    return max(MIN_TOL, TOL_SE * float(np.nanmedian(se)))


def slice_codes(m: SliceMap) -> tuple[list[int], dict[int, int], str]:
    """The masks a simulator homes lines by, each code's group and how the codes were
    named: the buffer's masks where they decide every group (one code per group), else the
    in-page masks with the first page's groups (the other pages add their constant)."""
    if m.fit.buffer_masks:
        masks = m.fit.buffer_masks
        codes = S.codes_of(m.offsets, masks)
        ok = m.grouping.labels >= 0
        table = S.cell_table(np.zeros(int(ok.sum()), np.int64), codes[ok],
                             m.grouping.labels[ok])
        return masks, {c: g for (_, c), g in table.items()}, "the buffer's masks"
    if m.fit.kernel:
        return [], {g: g for g in range(m.grouping.count)}, \
            "the groups (l2_slices.hash_table names each class's)"
    first = min((p for p, _ in m.fit.table), default=0)
    return (m.fit.masks, {c: g for (p, c), g in m.fit.table.items() if p == first},
            f"the in-page masks, groups as page {first} holds them")


def hash_table(m: SliceMap) -> list[int | None]:
    """Where the hash is a table over the invariant deltas (:attr:`HashFit.kernel`): the
    group of each class of the first page the fit saw, classes numbered as
    :func:`gpumem.contracts.xor_hash.class_index` numbers them (None: no fitted line of
    that class)."""
    fit, lb = m.fit, LINE.bit_length() - 1
    n = 1 << (fit.page_bits - lb - len(fit.kernel))
    first = min((p for p, _ in fit.table), default=0)
    seen = [(code, g) for (p, code), g in fit.table.items() if p == first]
    out: list[int | None] = [None] * n
    idx = class_index(np.array([c for c, _g in seen], np.int64), fit.kernel, lb, fit.page_bits)
    for i, (_c, g) in zip(idx.tolist(), seen, strict=True):
        out[i] = int(g)
    return out


def _slice_latency(m: SliceMap, method: str) -> Finding:
    """Each measured SM's latency to each slice (code), with its interval: what a simulator's
    ``slice_latency`` takes (:func:`slice_codes` names the codes)."""
    masks, group_of, how = slice_codes(m)
    labels, keys, vals, lo, hi = m.grouping.labels, [], [], [], []
    codes = sorted(group_of) if m.fit.kernel else range(1 << len(masks))
    for j, sm in enumerate(m.sms):
        for code in codes:
            g = group_of.get(code, -1)
            x = m.matrix[labels == g, j] if g >= 0 else np.array([np.nan])
            a, b = order_interval(x) if np.isfinite(x).sum() >= 3 else (np.nan, np.nan)
            keys.append(f"{sm}/{code}")
            vals.append(round(float(np.nanmedian(x)), 1) if np.isfinite(x).any() else None)
            lo.append(float(np.floor(a * 10) / 10) if np.isfinite(a) else None)
            hi.append(float(np.ceil(b * 10) / 10) if np.isfinite(b) else None)
    return Finding("l2_slices.slice_latency", vals, "cycle", 0.9,
                   method + f": each SM's median L2 hit latency to each slice, slices "
                   f"numbered by the hash's code under {how} (index: SM/slice)",
                   index=("sm_slice", keys), interval=(lo, hi), kind="measured",
                   note=("masks: " + ", ".join(f"0x{x:x}" for x in masks)) if masks else
                   "slices: the groups, each line's by l2_slices.hash_table")


def _slices(g: S.Grouping, method: str) -> list[Finding]:
    """The slices the groups hold (a hash spreads a page's lines evenly over its slices, so a
    group twice the size of the others is two slices latency did not split)."""
    sc = g.slices
    assert sc is not None
    unit = "classes" if g.by_class else "lines"
    kinds = np.bincount(sc.per_group)
    held = ", ".join(f"{k} slice{'s' if k > 1 else ''}: {int(c)}"
                     for k, c in enumerate(kinds) if k and c)
    how = (method + f": the fewest slices that make every group a whole number of equal "
           f"slices ({sc.unit:.2f} {unit} of the page each), a lower bound (each group two "
           f"equal slices fits alike)")
    return [
        Finding("l2_slices.slices", sc.count, "1", 0.9 if sc.interval[0] == sc.interval[1]
                else 0.6, how, interval=sc.interval, kind="structural",
                note=f"groups by the slices they hold: {held}" + (
                    f"; {g.split} group{'s' if g.split != 1 else ''} of several cut in two "
                    "below the tolerance (their classes in two clusters, alike from each half "
                    "of every class's lines)" if g.split else "") + (
                    "; groups of more than one: slices no SM measured tells apart by latency "
                    "(gpumem run l2_twins tells them apart by contention)"
                    if (sc.per_group > 1).any() else "")),
        Finding("l2_slices.group_slices", [int(n) for n in sc.per_group], "1", 0.9,
                how + ": slices in each group", index=("group", list(range(g.count))),
                kind="structural"),
    ]


def _invariants(m: SliceMap, method: str) -> Finding:
    """The in-page address XOR deltas that never change a line's group, whatever the hash:
    a linear hash's null space, and for any hash the freedom a slice map need not model."""
    # where the hash is a table over them, the fitted lines' (the table's own deltas)
    use = ~m.held_out & (m.grouping.labels >= 0) if m.fit.kernel else slice(None)
    inv = S.invariants(m.offsets[use], m.grouping.labels[use],
                       line_bits=LINE.bit_length() - 1, page_bits=m.fit.page_bits)
    basis = [int(b) for b in inv.basis]
    agree, least = f"{S.INVARIANT_AGREE:.0%}", S.MIN_PAIRS
    return Finding(
        "l2_slices.hash_invariants", basis, "1", 0.9 if inv.least_support >= 2 * least
        else 0.7, method + f": a basis of the address XOR deltas within a page that keep a "
        f"line's group (the pairs of lines of one page each relates at least {agree} alike, "
        f"for every delta of their span that {least} pairs or more test"
        + ("; of the lines the hash table was fitted to)" if m.fit.kernel else ")"),
        index=("delta", list(range(len(basis)))), kind="structural",
        note=(("deltas: " + ", ".join(f"0x{b:x}" for b in basis)) if basis else "none")
        + f"; {inv.tested} deltas tested by {inv.pairs} pairs of lines, the fewest behind one "
        f"of the span {inv.least_support}")


class L2Slices(Experiment):
    name = "l2_slices"
    summary = "L2 slices: each line's slice, each SM's latency to it, the address hash"
    probes: ClassVar[tuple[str, ...]] = ("pointer_chase",)
    version = "1"
    findings: ClassVar[tuple[str, ...]] = (
                "l2_slices.groups", "l2_slices.unassigned", "l2_slices.slices",
                "l2_slices.group_slices", "l2_slices.group_lines",
                "l2_slices.group_partition", "l2_slices.latency_min", "l2_slices.latency_max",
                "l2_slices.hash_accuracy", "l2_slices.hash_masks",
                "l2_slices.hash_buffer_masks", "l2_slices.hash_invariants",
                "l2_slices.hash_table", "l2_slices.table_buffer", "l2_slices.slice_latency",
                "l2_slices.unsplit")
    references = ("Manjunath & Ramachandra, Concurrency Response of Plain Global Loads on the "
                  "NVIDIA H100 (2026): the L2's near/far structure a single SM cannot see")
    #: The buffer's pages (bytes each, how many) and the random lines sampled in each (None:
    #: every line).
    page: ClassVar[int] = PAGE
    pages: ClassVar[int] = PAGES
    lines_per_page: ClassVar[int | None] = LINES_PER_PAGE

    def _lines(self, ctx: RunContext) -> np.ndarray:
        return sample_lines(ctx.seed, self.pages, self.lines_per_page or self.page // LINE,
                            self.page)

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, (ReportFigure(
            "l2_slice_map", "Each SM's L2 hit latency to each group of lines (a slice, or "
            "slices no SM measured tells apart), groups ordered by partition.",
            "gpumem.experiments.figures.slices:slice_latency_map"),), rank=3)

    def plan(self, ctx: RunContext) -> Plan:
        sms = max(1, ctx.device.sm_count)
        first = batches(sms)[0]
        return Plan(
            axes=[Axis("sm", tuple(sorted(first)), "1", "SM the chase runs on (%smid)")],
            variables=[Var("latency", ("line",), "cycle",
                           f"median of the line's {ACCESSES} timed visits, timer overhead "
                           f"included", dtype="float32"),
                       Var("timer_overhead", (), "cycle", "median timer overhead"),
                       Var("ran_on", (), "1", "SM the kernel reported", dtype="int64")],
            inner={"line": self._lines(ctx)},
            attrs={"footprint": self.page * self.pages, "page": self.page, "accesses": ACCESSES,
                   "path": "cg", "chase_lines": CHASE_LINES},
            repeats=repeat_count(ctx),
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        lines = self._lines(ctx)
        out = np.empty(lines.size, np.float32)
        overhead, ran_on = [], -1
        for at in range(0, lines.size, CHASE_LINES):
            chunk = lines[at:at + CHASE_LINES]
            pattern = (chunk[:, None] + 4 * np.arange(ACCESSES)).reshape(-1)
            res = device.pointer_chase(ChaseRequest(
                footprint=self.page * self.pages, stride=LINE, record=pattern.size,
                warmup=pattern.size,
                order="pattern", path="cg", seed=ctx.run_seed, sm=int(point["sm"]),
                pattern=tuple(pattern.tolist())))  # Python ints, 10x faster than a genexpr
            if res.index.size and not np.array_equal(res.index * 4, pattern):
                raise PointSkipped("the chase did not visit the lines in the pattern's order")
            out[at:at + chunk.size] = np.median(
                np.asarray(res.latency, float).reshape(chunk.size, ACCESSES), axis=1)
            overhead.append(res.timer_overhead)
            ran_on = res.sm
        return {"latency": out, "timer_overhead": float(np.median(overhead)),
                "ran_on": ran_on}

    def refine(self, raw: xr.Dataset, ctx: RunContext) -> dict[str, list] | None:
        """The next round of SMs, while the last round split groups the SMs before it did
        not (or it was the first)."""
        rounds = batches(max(1, ctx.device.sm_count))
        have = {int(s) for s in raw["sm"].values}
        done = [b for b in rounds if set(b) <= have]
        if len(done) >= len(rounds) or len(done) < 1:
            return None
        if len(done) >= 2:
            before = {s for b in done[:-1] for s in b}
            sm = raw["sm"].values
            lat = (median_over_repeats(raw["latency"])
                   - median_over_repeats(raw["timer_overhead"])).values.T
            tol = _tolerance(raw["latency"].values)
            keep = np.isin(sm, sorted(before))
            if S.grouping(lat[:, keep], tol).count >= S.grouping(lat, tol).count:
                return None
        return {"sm": sorted(rounds[len(done)])}

    def refine_bound(self, ctx: RunContext) -> int:
        return len(batches(max(1, ctx.device.sm_count))) - 1

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        m = slice_map(raw)
        return [] if m is None else self.map_findings(raw, m)

    def map_findings(self, raw: xr.Dataset, m: SliceMap, how: str = "") -> list[Finding]:
        """The findings of slice map ``m`` of ``raw`` (``how``: what refined it, said in
        each finding's method)."""
        g, fit = m.grouping, m.fit
        page = 1 << _bits_of(raw.attrs, m.offsets)[0]
        pages = max(1, m.buffer // page)
        sampled = "every" if m.offsets.size >= pages * (page // LINE) else "random"
        method = (f"{m.offsets.size} {sampled} {LINE} B lines of {pages} x "
                  f"{page / (1 << 20):g} MB pages chased from {len(m.sms)} SMs ({ACCESSES} L2 "
                  f"hits a line, .cg); grouped by latency at {g.tol:.1f} cycles{how}")
        ids = list(range(g.count))
        sizes = [int((g.labels == k).sum()) for k in ids]
        out = [
            Finding("l2_slices.groups", g.count, "1", 0.9 if g.count_range[0] == g.count_range[1]
                    else 0.6, method + ": lines with the same latency from every SM",
                    interval=g.count_range, kind="structural",
                    note=f"{g.count_range[0]}-{g.count_range[1]} groups at half and twice "
                    f"the tolerance" + ("" if fit.unsplit or not fit.found else
                                        "; the hash splits none") + (
                        "" if g.slices else "; the slices they hold: every line of a page "
                        "(gpumem run l2_hash)")),
            Finding("l2_slices.unassigned", g.unassigned, "1", 0.9,
                    method + ": lines in no group (a group of a handful: mis-timed)"),
        ]
        if not g.count:
            return out
        if g.slices:
            out += _slices(g, method)
        out.append(Finding("l2_slices.group_lines", sizes, "1", 0.9,
                           method + ": lines in each group", index=("group", ids)))
        out.append(Finding("l2_slices.group_partition", [int(p) for p in m.partitions], "1",
                           float(np.mean(m.partitions >= 0)),
                           method + ": the partition each group sits in (groups the same SMs "
                           "see near share one; -1 unclear)", index=("group", ids)))
        cells = [(np.nanmin, "latency_min", "nearest"), (np.nanmax, "latency_max", "farthest")]
        for pick, name, word in cells:
            k, j = np.unravel_index(int(np.nanargmin(m.profile) if pick is np.nanmin
                                        else np.nanargmax(m.profile)), m.profile.shape)
            vals = m.matrix[g.labels == k, j]
            lo, hi = order_interval(vals)
            out.append(Finding(f"l2_slices.{name}", round(float(np.nanmedian(vals)), 1),
                               "cycle", 0.9, method + f": the {word} group from any SM "
                               f"(group {k} from SM {m.sms[j]})",
                               interval=(float(np.floor(lo * 10) / 10),
                                         float(np.ceil(hi * 10) / 10)), kind="measured",
                               note="interval: of the median of that group's lines"))
        if g.count < 2:  # one group: every line alike from every SM, no hash to fit
            return out
        accuracy = method + f": the fitted hash's share of {fit.held_out} held-out lines put " \
            f"in their group (chance: {fit.chance:.1%}, the best constant guess per page)"
        if fit.held_out and not fit.found:
            # no hash: its accuracy is no property of the card to judge or learn (a sparse
            # page's best fit put 10-16 % of the lines right on H100s and H200s alike, and
            # a fleet band of it judged sampling luck), so it is said, not given as a value
            lo, hi = fit.accuracy_interval
            out.append(unresolved(
                "l2_slices.hash_accuracy", "1", [round(fit.accuracy, 4)], accuracy,
                f"{fit.model}{NOT_FOUND}{fit.note} (the best fit's share "
                f"{fit.accuracy:.4f}, 95 % interval {lo:.4f}-{hi:.4f})"))
        else:
            out.append(Finding(
                "l2_slices.hash_accuracy", round(fit.accuracy, 4) if fit.held_out else None,
                "1", 0.9, accuracy, interval=(round(fit.accuracy_interval[0], 4),
                                              round(fit.accuracy_interval[1], 4))
                if fit.held_out else None, kind="measured", note=fit.model,
                candidates=None if fit.held_out else []))
        out.append(_invariants(m, method))
        if fit.found and fit.masks:
            masks = [int(x) for x in fit.masks]
            out.append(Finding(
                "l2_slices.hash_masks", masks, "1", 0.9,
                method + f": XOR masks over address bits {fit.bits[0]}-{fit.bits[1] - 1} "
                f"(within a {page / (1 << 20):g} MB page) whose parity names a line's group; "
                f"the page's own bits add a constant", index=("mask", list(range(len(masks)))),
                kind="structural", note="masks: " + ", ".join(f"0x{x:x}" for x in masks)))
            if fit.buffer_masks:
                out.append(Finding(
                    "l2_slices.hash_buffer_masks", [int(x) for x in fit.buffer_masks], "1",
                    0.9, method + ": XOR masks over every bit of the buffer's offsets (its "
                    "pages in order: virtual and physical pages agree here)",
                    index=("mask", list(range(len(fit.buffer_masks)))), kind="structural",
                    note="masks: " + ", ".join(f"0x{x:x}" for x in fit.buffer_masks)))
            out.append(_slice_latency(m, method))
            out.append(Finding(
                "l2_slices.unsplit", len(fit.unsplit), "1", 0.8,
                method + ": groups whose lines the hash puts in two or more codes: slices "
                "that every SM measured sees at one latency",
                note=", ".join(f"group {k}: {v} codes" for k, v in fit.unsplit.items())
                or "none: latency split every slice the hash names", kind="structural"))
        elif fit.found and fit.kernel:
            table = hash_table(m)
            seen = sum(g is not None for g in table)
            out.append(Finding(
                "l2_slices.hash_table", table, "1", 0.9 if seen == len(table) else 0.6,
                method + f": each line's group as a table over its address within a "
                f"{page / (1 << 20):g} MB page modulo the deltas of l2_slices.hash_invariants "
                f"({len(table)} classes, numbered by the address bits the deltas leave free, "
                f"lowest first), from the fitted lines of the first page",
                index=("class", list(range(len(table)))), kind="structural",
                note=f"{seen} of {len(table)} classes seen" + (
                    "" if seen == len(table) else ": a simulator needs every one (every "
                    "line of a page: gpumem run l2_hash)")))
            out.append(Finding(
                "l2_slices.table_buffer", int(m.buffer), "byte", 0.9,
                method + ": the buffer whose first page l2_slices.hash_table describes (a "
                "simulator starts a chain over a buffer of this size on that page: the "
                "GPU's other allocations got other physical pages)", kind="structural"))
            out.append(_slice_latency(m, method))
        return out


class L2Hash(L2Slices):
    """``l2_slices`` over every line of one page: where a GPU's hash is no XOR of address
    bits (an H200's: a table over a line's address within a 2 MB page modulo three deltas,
    2,048 classes), the 256 random lines a page of ``l2_slices`` sees show 9 % of the
    classes and the table places 10 % of held-out lines; every line of a page shows every
    class, so the held-out lines judge the table itself (two H200s: 97.85 % and 99.85 % line
    by line; grouped by class, 100 %), and the slices the groups hold can be counted
    (``l2_slices.slices``: 94 on both H200s, 80 on six H100s).
    Some four times ``l2_slices``' chasing, so not part of ``all``: run it by name. Its
    findings carry ``l2_slices``' names; ``export sim`` takes its table over
    ``l2_slices``'."""

    name = "l2_hash"
    summary = "the L2's address hash from every line of one page (l2_slices, dense)"
    in_all = False
    pages = 1
    lines_per_page = None

    def _lines(self, ctx: RunContext) -> np.ndarray:
        """Every line of the page; every fourth with ``--quick`` (a smoke test)."""
        lines = super()._lines(ctx)
        return lines[::4] if ctx.quick else lines

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, (ReportFigure(
            "l2_hash_map", "Each SM's L2 hit latency to each group of the lines of one page "
            "(l2_hash), groups ordered by partition.",
            "gpumem.experiments.figures.slices:hash_latency_map"),), rank=4)
