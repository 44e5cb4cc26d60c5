"""How closely one l2_slices run reproduces another, line by line and SM by SM.

    python benchmarks/slices_vs_card.py CARD_RUN OTHER_RUN

For each SM both runs measured and each line both sampled (the same lines: same seed), the
relative difference of the two medians of the line's L2 hits. Used two ways: a card against
a simulated card exported from it (``gpumem export sim CARD_RUN``, then ``gpumem run
l2_slices --device sim --sim-config FILE``; issue 44's target: within 2 %), and a card against
another card (the slice map's reproducibility: group counts and per-SM profiles agree).
Prints the quantiles of the differences and each run's slice count, hash and accuracy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr
from gpumem.experiments.l2_slices import slice_map


def _raw(run: Path) -> xr.Dataset:
    files = sorted(run.rglob("l2_slices-*.nc")) if run.is_dir() else [run]
    if not files:
        raise SystemExit(f"{run}: no l2_slices file")
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
    for name, m in ((a, ma), (b, mb)):
        fit = m.fit
        print(f"{name}: {m.grouping.count} groups ({m.grouping.count_range[0]}-"
              f"{m.grouping.count_range[1]}), {m.grouping.unassigned} lines unassigned; hash "
              + (f"{len(fit.masks)} masks [{', '.join(f'0x{x:x}' for x in fit.masks)}], "
                 f"held-out accuracy {fit.accuracy:.3f} (chance {fit.chance:.3f})"
                 if fit.found else f"not found ({fit.note})"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
