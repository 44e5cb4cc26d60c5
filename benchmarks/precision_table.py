"""What the stopping rule did, per experiment, in whole runs (issue 42): the measured
findings, how many carry no interval, the timed runs taken, the worst relative standard
error reached and why the runs stopped.

    python benchmarks/precision_table.py RUN_DIR [RUN_DIR ...]

Reads each run folder's ``manifest.json`` (the findings as the run recorded them); needs no
GPU. "fixed sample" marks findings of experiments that repeat by themselves (a chase's
records, a sample of lines): their interval comes from the sample, not from repeated runs.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path


def table(run: Path) -> list[str]:
    entries = json.loads((run / "manifest.json").read_text())["entries"].values()
    per: dict[str, list[dict]] = collections.defaultdict(list)
    for e in entries:
        for f in (e.get("findings") or {}).values():
            if f.get("kind") == "measured":
                per[e["experiment"]].append(f)
    lines = [f"{run}:", f"  {'experiment':18s} {'measured':>8s} {'no interval':>11s} "
             f"{'runs':>7s} {'worst rel. error':>16s}  stopped"]
    for exp, fs in sorted(per.items()):
        precs = [f.get("precision") or {} for f in fs]
        reps = [p["repeats"] for p in precs if p.get("repeats")]
        errs = [p["rel_error"] for p in precs if p.get("rel_error") is not None]
        why = collections.Counter(p.get("stopped", "-") for p in precs)
        empty = sum(1 for f in fs if not f.get("interval"))
        runs = f"{min(reps)}-{max(reps)}" if reps else "-"
        worst = f"{max(errs):.2%}" if errs else "-"
        lines.append(f"  {exp:18s} {len(fs):8d} {empty:11d} {runs:>7s} {worst:>16s}  "
                     + ", ".join(f"{k} {n}" for k, n in why.most_common()))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    for run in ap.parse_args().runs:
        if not (run / "manifest.json").is_file():
            raise SystemExit(f"precision_table: {run} has no manifest.json")
        print("\n".join(table(run)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
