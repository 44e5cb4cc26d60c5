"""How closely one l2_slices run reproduces another, line by line and SM by SM.

    python benchmarks/slices_vs_card.py CARD_RUN OTHER_RUN [--match]

For each SM both runs measured and each line both sampled (the same lines: same seed), the
relative difference of the two medians of the line's L2 hits. Used two ways: a card against
a simulated card exported from it (``gpumem export sim CARD_RUN``, then ``gpumem run
l2_slices --device sim --sim-config FILE``; issue 44's target: within 2 %), and a card against
another card (the slice map's reproducibility: group counts and per-SM profiles agree).
Prints the quantiles of the differences and each run's slice count, hash and accuracy.
Also reads ``l2_hash`` runs (a whole page each).

``--match`` (two cards): an SM number need not name the same place on another die (which SMs
are fused off differs), and another card's lines are other physical addresses, so lines
cannot be paired. Each SM is described by the distribution of its L2 hit latencies over the
lines (49 quantiles); the SMs of one run are paired with the other's by least total
difference (greedy, then pairwise swaps while they lower it: a heuristic, no solver needed),
and the median |difference| of the paired distributions is printed beside the pairing by SM
number. With 32 of 132 SMs measured, a die position one card measured may be missing from
the other's 32: a run of every SM (benchmarks/l2_slices_all_sms.py) pairs them all. Two whole
pages (``l2_hash``) grouped by class are compared group by group too: the classes each group
holds, the same on both, cut further on one, or crossing.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import xarray as xr
from gpumem.experiments.l2_slices import slice_map


def _raw(run: Path) -> xr.Dataset:
    files = sorted(run.rglob("l2_slices-*.nc")) + sorted(run.rglob("l2_hash-*.nc")) \
        if run.is_dir() else [run]
    if not files:
        raise SystemExit(f"{run}: no l2_slices or l2_hash file")
    with xr.open_dataset(files[0]) as ds:
        return ds.load()


def main(a: str, b: str) -> None:
    ra, rb = _raw(Path(a)), _raw(Path(b))
    ma, mb = slice_map(ra), slice_map(rb)
    if ma is None or mb is None:
        raise SystemExit("a run has fewer than two SMs measured")
    if not np.array_equal(ma.offsets, mb.offsets):
        raise SystemExit("the runs sampled different lines (another seed)")
    sms = sorted(set(ma.sms) & set(mb.sms))
    ia = [ma.sms.index(s) for s in sms]
    ib = [mb.sms.index(s) for s in sms]
    rel = np.abs(mb.matrix[:, ib] - ma.matrix[:, ia]) / ma.matrix[:, ia]
    q = np.nanpercentile(rel, [50, 90, 99, 100]) * 100
    print(f"{len(sms)} SMs x {ma.offsets.size} lines in both: |difference| median {q[0]:.2f} %, "
          f"90th {q[1]:.2f} %, 99th {q[2]:.2f} %, max {q[3]:.2f} %; "
          f"{np.mean(rel <= 0.02) * 100:.1f} % within 2 %")
    held = ma.held_out  # lines the first run's hash was not fitted to: an export predicts them
    print(f"  of them the {int(held.sum())} lines held out of the first run's hash fit: "
          f"{np.mean(rel[held] <= 0.02) * 100:.1f} % within 2 %, max "
          f"{np.nanmax(rel[held]) * 100:.2f} %")
    for name, m in ((a, ma), (b, mb)):
        fit = m.fit
        print(f"{name}: {_groups(m)}, {m.grouping.unassigned} lines unassigned; hash "
              + (f"{len(fit.masks)} masks [{', '.join(f'0x{x:x}' for x in fit.masks)}], "
                 f"held-out accuracy {fit.accuracy:.3f} (chance {fit.chance:.3f})"
                 if fit.found else f"not found ({fit.note})"))


def _groups(m) -> str:
    """The groups (and, from a whole page, the slices they hold) in words."""
    g = m.grouping
    sc = g.slices
    return (f"{g.count} groups ({g.count_range[0]}-{g.count_range[1]})"
            + (f" holding {sc.count} slices ({sc.interval[0]}-{sc.interval[1]}; "
               f"{int((sc.per_group > 1).sum())} groups of several, {g.split} pairs cut below "
               f"the tolerance)" if sc else ""))


def class_sets(m) -> set[frozenset[int]]:
    """A page grouped by class: each group as the set of its classes (the codes modulo the
    invariant deltas, the same on every card of a model), each class where most of its
    lines are."""
    codes = m.fit.codes(m.offsets)
    keep = m.grouping.labels >= 0
    out: dict[int, set[int]] = {}
    for c in np.unique(codes[keep]):
        g = int(np.bincount(m.grouping.labels[keep & (codes == c)]).argmax())
        out.setdefault(g, set()).add(int(c))
    return {frozenset(v) for v in out.values()}


def group_agreement(ma, mb) -> tuple[int, int, int, int]:
    """Two pages' groups of classes: how many are the same on both, how many of the first
    are cut further on the second and of the second on the first, and how many pairs cross
    (a class set of one neither inside nor holding the other's that it meets: a
    disagreement, not a finer cut)."""
    ga, gb = class_sets(ma), class_sets(mb)
    crossing = sum(1 for x in ga for y in gb if x & y and not (x <= y or y <= x))
    finer_b = sum(1 for x in ga - gb if all(y <= x or not y & x for y in gb))
    finer_a = sum(1 for y in gb - ga if all(x <= y or not x & y for x in ga))
    return len(ga & gb), finer_b, finer_a, crossing


def compare_groups(ma, mb) -> str:
    """:func:`group_agreement` in words."""
    same, finer_b, finer_a, crossing = group_agreement(ma, mb)
    return (f"groups of classes: {same} the same on both, {finer_b} of the first cut "
            f"further on the second, {finer_a} of the second on the first, {crossing} pairs "
            f"crossing")


QUANTILES = np.linspace(0.02, 0.98, 49)


def _distributions(m) -> dict[int, np.ndarray]:
    return {sm: np.nanquantile(m.matrix[:, j], QUANTILES) for j, sm in enumerate(m.sms)}


def pair_sms(cost: np.ndarray) -> dict[int, int]:
    """Rows paired with columns (as many as the fewer), low total cost: greedy by cost, then
    swaps of two pairs' columns while one lowers the sum."""
    order = np.dstack(np.unravel_index(np.argsort(cost, axis=None), cost.shape))[0]
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for i, j in order:
        if int(i) not in pairs and int(j) not in used:
            pairs[int(i)] = int(j)
            used.add(int(j))
    better = True
    while better:
        better = False
        for a, b in itertools.combinations(list(pairs), 2):
            ja, jb = pairs[a], pairs[b]
            if cost[a, jb] + cost[b, ja] < cost[a, ja] + cost[b, jb] - 1e-12:
                pairs[a], pairs[b] = jb, ja
                better = True
    return pairs


def match(a: str, b: str) -> None:
    ma, mb = slice_map(_raw(Path(a))), slice_map(_raw(Path(b)))
    if ma is None or mb is None:
        raise SystemExit("a run has fewer than two SMs measured")
    da, db = _distributions(ma), _distributions(mb)
    ka, kb = sorted(da), sorted(db)
    cost = np.array([[float(np.median(np.abs(da[x] - db[y]))) for y in kb] for x in ka])
    same = [cost[ka.index(s), kb.index(s)] for s in ka if s in kb]
    pairs = pair_sms(cost)
    got = [cost[i, j] for i, j in pairs.items()]
    moved = sum(ka[i] != kb[j] for i, j in pairs.items())
    print(f"per-SM latency distributions ({len(QUANTILES)} quantiles over the lines), median "
          f"|difference| in cycles: by SM number {np.median(same):.2f} (worst "
          f"{np.max(same):.2f}, {len(same)} SMs); paired {np.median(got):.2f} (worst "
          f"{np.max(got):.2f}, {len(got)} pairs, {moved} to another SM number)")
    for name, m in ((a, ma), (b, mb)):
        print(f"{name}: {_groups(m)}, {len(m.sms)} SMs")
    if ma.grouping.by_class and mb.grouping.by_class:
        print(compare_groups(ma, mb))


if __name__ == "__main__":
    args = [x for x in sys.argv[1:] if x != "--match"]
    if len(args) != 2:
        raise SystemExit(__doc__)
    (match if "--match" in sys.argv[1:] else main)(args[0], args[1])
