"""``l2_slices`` (or ``l2_hash``) from every SM of the device, not the first 32 (issue 44: the
per-SM profiles of two cards compared by die position, which needs every position measured on
both; and whether every SM splits the slices 32 SMs leave in pairs).

    python benchmarks/l2_slices_all_sms.py OUT [--device cuda:0] [--arch hopper]
        [--experiment l2_slices|l2_hash] [--npz FILE]
    python benchmarks/l2_slices_all_sms.py --analyse FILE [--sms N]

Runs the experiment as ``gpumem run`` does, with its most SMs raised to the device's SM count
and every round run (not only while a round splits groups the rounds before it did not). On
an H200 the 32-SM ``l2_slices`` run took 5-6 s of measuring inside ``gpumem run all``; every
SM is about four times as much; ``l2_hash`` (every line of a page) some four times that again.
``--npz`` also writes the lines x SMs matrix of median latencies (timer overhead removed),
the lines' offsets, the SMs and the grouping's tolerance, small enough to bring back where
the raw file (every repeat) is not; ``--analyse NPZ [--sms N]`` prints its slice map (of its
first N SMs) as ``l2_hash`` analyses a run. Then ``python benchmarks/slices_vs_card.py OUT_A OUT_B
--match`` pairs the two cards' SMs by their latency distributions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import gpumem.experiments.l2_slices as slices
from gpumem.api import RunRequest, load_plugins, run


def every_round(self: slices.L2Slices, raw, ctx):  # type: ignore[no-untyped-def]
    """The next round of SMs until every SM is measured."""
    have = {int(s) for s in raw["sm"].values}
    left = [b for b in slices.batches(max(1, ctx.device.sm_count)) if not set(b) <= have]
    return {"sm": sorted(left[0])} if left else None


def save_matrix(raw_file: Path, npz: Path) -> None:
    """The run's median matrix, offsets, SMs and tolerance, as ``slice_map`` takes them."""
    import numpy as np
    import xarray as xr
    from gpumem.contracts.experiment import median_over_repeats

    with xr.open_dataset(raw_file) as ds:
        raw = ds.load()
    ok = (raw["point_status"] == 0).values
    lat = median_over_repeats(raw["latency"]) - median_over_repeats(raw["timer_overhead"])
    np.savez_compressed(npz, matrix=lat.values[ok].T.astype(np.float32),
                        offsets=np.asarray(raw["line"].values, np.int64),
                        sms=np.asarray(raw["sm"].values[ok], np.int64),
                        tol=slices._tolerance(raw["latency"].values[ok]))


def matrix_run(npz: Path, sms: int | None = None) -> tuple[Any, float]:
    """A ``--npz`` file (its first ``sms`` SMs, else all) as a raw dataset ``slice_map``
    reads (each line's median as its one repeat), and the run's grouping tolerance."""
    import numpy as np
    import xarray as xr

    d = np.load(npz)
    keep = slice(None, sms)
    lat = d["matrix"].T[keep][:, :, None]  # sm x line x one repeat: the medians
    raw = xr.Dataset(
        {"latency": (("sm", "line", "repeat"), lat),
         "timer_overhead": (("sm", "repeat"), np.zeros((lat.shape[0], 1))),
         "point_status": (("sm",), np.zeros(lat.shape[0], np.int64))},
        coords={"sm": d["sms"][keep], "line": d["offsets"]},
        attrs={"plan_page": slices.PAGE, "plan_footprint": slices.PAGE})
    return raw, float(d["tol"])


def analyse(npz: Path, sms: int | None = None) -> None:
    """The slice map of a ``--npz`` file (its first ``sms`` SMs, else all), as ``l2_hash``
    analyses a run: groups, pairs cut below the tolerance, slices, held-out accuracy."""
    import numpy as np

    raw, tol = matrix_run(npz, sms)
    t0 = time.monotonic()
    m = slices.slice_map(raw, tol)
    assert m is not None
    g, sc = m.grouping, m.grouping.slices
    per = np.bincount(sc.per_group).tolist() if sc else None
    print(f"{npz} ({len(m.sms)} SMs, tolerance {tol:.2f}): {g.count} groups "
          f"({g.split} cut below the tolerance), slices "
          f"{sc.count if sc else None} {sc.interval if sc else ''} (groups by slices held "
          f"{per}), held-out lines placed {m.fit.accuracy:.4f} {m.fit.accuracy_interval}, "
          f"{time.monotonic() - t0:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analyse", type=Path, help="a --npz file: its slice map, nothing run")
    ap.add_argument("--sms", type=int, help="with --analyse: its first SMs only")
    if "--analyse" in sys.argv:
        b = ap.parse_args()
        analyse(b.analyse, b.sms)
        return
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--arch", default="hopper")
    ap.add_argument("--experiment", default="l2_slices", choices=("l2_slices", "l2_hash"))
    ap.add_argument("--npz", type=Path)
    a = ap.parse_args()
    slices.MOST_SMS = 1 << 12  # batches() stops at the device's SM count
    slices.L2Slices.refine = every_round  # type: ignore[method-assign]
    t0 = time.monotonic()
    report = run(RunRequest(a.arch, [a.experiment], device=a.device, out=a.out,
                            argv=["benchmarks/l2_slices_all_sms.py", str(a.out)]),
                 plugins=load_plugins())
    (o,) = report.outcomes
    said = {f.name: f for f in o.findings}
    groups = said.get("l2_slices.groups")
    count = said.get("l2_slices.slices")
    print(f"{a.experiment}, every SM: {o.status} in {time.monotonic() - t0:.1f} s "
          f"({o.points} SMs measured) -> {o.file}")
    for f in (groups, count, said.get("l2_slices.hash_accuracy")):
        if f is not None:
            print(f"  {f.name} {f.value} {f.interval} {f.note}")
    if a.npz and o.file:
        save_matrix(Path(o.file), a.npz)
        print(f"  matrix -> {a.npz}")


if __name__ == "__main__":
    main()
