"""benchmarks/SPEED.md from a pytest-benchmark JSON file of benchmarks/test_speed.py.

    python benchmarks/speed_table.py benchmarks/results/speed.json > benchmarks/SPEED.md
    python benchmarks/speed_table.py speed.json archs1.json archs2.json ... \
        [--commit HASH] > benchmarks/SPEED.md

Every figure comes from the JSON (the rounds pytest-benchmark timed, the machine it
recorded); each target of test_speed.py is checked here and marked met or missed. Further
files are ``bench_sim.py archs --workers N --arch hopper`` outputs from the same machine, one
run each: they add the hopper run with N workers (its median, the runs as rounds) where
test_speed.py did not time it. ``--commit`` names the tree measured where the JSON's own
commit is not it (a copy of the tree whose git metadata is older than its files).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TARGET_ACCESSES = 50e6   # simulated accesses per second, one core, in every regime
TARGET_RUN_S = 60.0      # gpumem run --arch A all --device sim, default grid
TARGET_WORKERS_S = 8.0   # ... --arch hopper with 16 workers, on a 16-core x86 server
TARGET_WORKERS = 16
TARGET_RSS_MIB = 1024.0  # 8 GB TLB sweep, peak resident


def _mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _workers_target(median_s: float, workers: int, cpus: int | None) -> str:
    """The hopper run's target holds for 16 workers on 16 cores: judged only there."""
    head = f"<= {TARGET_WORKERS_S:.0f} s with {TARGET_WORKERS} workers"
    if workers < TARGET_WORKERS or (cpus or 0) < TARGET_WORKERS:
        return f"{head}: not judged here ({workers} workers, {cpus or '?'} CPUs)"
    return f"{head}: {_mark(median_s <= TARGET_WORKERS_S)}"


def table(data: dict, archs: list[dict] | None = None, commit: str = "") -> str:
    m = data.get("machine_info", {})
    c = data.get("commit_info", {})
    if commit:
        c = {"id": commit}
    out = ["# Simulator speed (produced by benchmarks/speed_table.py, not edited by hand)", "",
           f"Machine: {m.get('cpu', {}).get('brand_raw', '?')}, "
           f"{m.get('cpu', {}).get('count', '?')} CPUs, Python {m.get('python_version', '?')}; "
           f"commit {str(c.get('id', '?'))[:10]}{' (dirty)' if c.get('dirty') else ''}, "
           f"{data.get('datetime', '?')}.", "",
           "| benchmark | median | rounds | derived | target |", "|---|---|---|---|---|"]
    for b in data["benchmarks"]:
        st, name, extra = b["stats"], b["name"], b.get("extra_info", {})
        med = st["median"]
        derived, target = "", ""
        if "accesses" in extra:
            rate = extra["accesses"] / med
            derived = f"{rate / 1e6:.1f} M accesses/s"
            target = f">= {TARGET_ACCESSES / 1e6:.0f} M/s: {_mark(rate >= TARGET_ACCESSES)}"
        elif "peak_rss_mib" in extra:
            derived = f"peak RSS {extra['peak_rss_mib']:.0f} MiB"
            target = f"< {TARGET_RSS_MIB:.0f} MiB: " \
                     f"{_mark(extra['peak_rss_mib'] < TARGET_RSS_MIB)}"
        elif name.startswith("test_run_all_on_the_simulator"):
            target = f"<= {TARGET_RUN_S:.0f} s: {_mark(med <= TARGET_RUN_S)}"
        elif "workers" in extra:
            derived = f"{extra['workers']} workers"
            target = _workers_target(med, extra["workers"], m.get("cpu", {}).get("count"))
        out.append(f"| `{name.removeprefix('test_')}` | {med:.2f} s | {st['rounds']} | "
                   f"{derived} | {target} |")
    walls = [a["run_all_sim_wall_s"]["hopper"] for a in archs or []
             if "hopper" in a.get("run_all_sim_wall_s", {})]
    if walls:
        workers = {a.get("workers") for a in archs or []}
        n = workers.pop() if len(workers) == 1 else 0
        med = sorted(walls)[len(walls) // 2]
        out.append(f"| `bench_sim.py archs --workers {n} --arch hopper` | {med:.2f} s | "
                   f"{len(walls)} | {', '.join(f'{w:.2f}' for w in walls)} s | "
                   f"{_workers_target(med, n, m.get('cpu', {}).get('count'))} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("speed", type=Path, help="pytest-benchmark JSON of test_speed.py")
    ap.add_argument("archs", type=Path, nargs="*", help="bench_sim.py archs outputs")
    ap.add_argument("--commit", default="", help="the tree measured, if not the JSON's")
    a = ap.parse_args()
    archs = [json.loads(f.read_text()) for f in a.archs]
    sys.stdout.write(table(json.loads(a.speed.read_text()), archs, a.commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
