"""``l2_slices`` over densely sampled pages (issue 44: the hash judged where it can be).

    python benchmarks/l2_slices_dense.py OUT [--pages 1] [--lines 16384] [--device cuda:0]

The experiment samples 256 random lines in each of 16 pages of 2 MB: on an H200 a line's
group is a function of its address modulo three invariant deltas within a page (2,048
classes a page), but the fitted lines show 9 % of a page's classes, so the table over them
places 10 % of held-out lines. Here the same experiment samples ``--lines`` lines in each of
``--pages`` pages (all 16,384 lines of one page by default: every held-out line's class is
then seen, so the table's accuracy tests the claim itself; 8,192 in each of two pages shows
about 95 % of the classes). Prints the groups, the invariants and the fit's accuracy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gpumem.experiments.l2_slices as slices
from gpumem.api import RunRequest, load_plugins, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--pages", type=int, default=1)
    ap.add_argument("--lines", type=int, default=slices.PAGE // slices.LINE)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--arch", default="hopper")
    ap.add_argument("--sim-config", type=Path, default=None)
    a = ap.parse_args()
    if not 1 <= a.lines <= slices.PAGE // slices.LINE or a.pages < 1:
        raise SystemExit(f"--lines must be 1-{slices.PAGE // slices.LINE}, --pages >= 1")
    slices.L2Slices.pages, slices.L2Slices.lines_per_page = a.pages, a.lines
    t0 = time.monotonic()
    report = run(RunRequest(a.arch, ["l2_slices"], device=a.device, out=a.out,
                            sim_config=a.sim_config,
                            argv=["benchmarks/l2_slices_dense.py", str(a.out)]),
                 plugins=load_plugins())
    (o,) = report.outcomes
    by = {f.name: f for f in o.findings}
    print(f"l2_slices, {a.lines} lines in each of {a.pages} page(s): {o.status} in "
          f"{time.monotonic() - t0:.1f} s, {o.points} SMs")
    for name in ("l2_slices.groups", "l2_slices.hash_invariants", "l2_slices.hash_accuracy"):
        f = by.get(name)
        if f is not None:
            print(f"  {name}: {f.value} {f.interval or ''} | {f.note[:300]}")


if __name__ == "__main__":
    main()
