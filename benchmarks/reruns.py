"""Run gpumem N times in a row on one device and say which findings the runs agree on.

    python benchmarks/reruns.py --runs 5 --out runs/ [--arch hopper] [--device cuda:0]
                                [--experiments all] [--check-only]

Each run is an ordinary ``gpumem run`` into ``OUT/run1`` ... ``OUT/runN``, timed (wall clock,
compilation included). Then every finding is judged across the runs by
:mod:`gpumem.interop.reruns` (structural: identical or unresolved in all; latencies within 2 %,
bandwidths within 3 %, measured footprints within their intervals; an experiment whose
version differs between runs, within each version's runs) and the disagreements are printed,
with the count that agreed. ``--check-only`` judges existing run directories. This
is how ``tests/data/h200-reruns`` was made; ``tests/test_reruns.py`` applies the same check
in CI.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--arch", default="hopper")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--experiments", nargs="*", default=["all"])
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds: start no run that would end past this (0: no limit)")
    a = ap.parse_args()
    dirs = [a.out / f"run{i + 1}" for i in range(a.runs)]
    if not a.check_only:
        start, last = time.perf_counter(), 0.0
        for i, d in enumerate(dirs):
            if a.budget and time.perf_counter() - start + 1.1 * last > a.budget:
                print(f"budget: {i} runs done, the next would pass {a.budget:.0f} s")
                dirs = dirs[:i]
                break
            t = time.perf_counter()
            rc = subprocess.call([sys.executable, "-m", "gpumem", "run", "--arch", a.arch,
                                  *a.experiments, "--device", a.device, "--out", str(d)],
                                 stdout=subprocess.DEVNULL)
            last = time.perf_counter() - t
            print(f"{d.name}: rc {rc}, {last:.1f} s wall", flush=True)
    from gpumem.interop.reruns import agreement, run_findings, run_versions
    from gpumem.plugin.registry import load_plugins

    plugins = load_plugins()
    rows = agreement([run_findings(d, plugins) for d in dirs], [run_versions(d) for d in dirs])
    bad = [r for r in rows if not r.ok]
    for r in bad:
        shown = [r.candidates[0] if v is None and r.candidates else v for v in r.values]
        print(f"DISAGREE {r.experiment:16s} {r.name:28s} {r.kind:10s} {r.verdict}: "
              f"{str(shown)[:150]}")
    kinds = {k: [r for r in rows if r.kind == k] for k in ("structural", "measured")}
    print(f"{len(rows) - len(bad)} of {len(rows)} findings agree across {len(dirs)} runs ("
          + ", ".join(f"{k} {sum(r.ok for r in v)}/{len(v)}" for k, v in kinds.items())
          + f"; unresolved in every run: {sum(r.verdict.startswith('unresolved') for r in rows)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
