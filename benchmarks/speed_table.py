"""benchmarks/SPEED.md from the simulator's speed measurements on one machine.

    python benchmarks/speed_table.py benchmarks/results/speed.json > benchmarks/SPEED.md
    python benchmarks/speed_table.py speed.json archs1.json ... chase1.json ... \
        [--commit HASH] > benchmarks/SPEED.md

Each file is told by what it holds: a pytest-benchmark JSON of benchmarks/test_speed.py (the
rounds it timed, the machine it recorded; at most one), ``bench_sim.py archs --workers N
--arch hopper`` outputs (one run each: the hopper run with N workers, their median, the
runs as rounds) and ``bench_sim.py chase`` outputs (one core; each regime's best of three
chases of 4 M accesses, the specialised kernel), all from the same machine. Every figure
comes from them; each target of test_speed.py is checked here and marked met or missed.
``--commit`` names the tree measured where the JSON's own commit is not it (a copy of the
tree whose git metadata is older than its files).
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
#: bench_sim.py chase's figures judged: the kernel specialised to the path (long chases')
CHASE_KEY = "accesses_per_second_millions_specialised"


def _mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _workers_target(median_s: float, workers: int, cpus: int | None) -> str:
    """The hopper run's target holds for 16 workers on 16 cores: judged only there."""
    head = f"<= {TARGET_WORKERS_S:.0f} s with {TARGET_WORKERS} workers"
    if workers < TARGET_WORKERS or (cpus or 0) < TARGET_WORKERS:
        return f"{head}: not judged here ({workers} workers, {cpus or '?'} CPUs)"
    return f"{head}: {_mark(median_s <= TARGET_WORKERS_S)}"


def table(data: dict | None, archs: list[dict] | None = None, commit: str = "",
          chases: list[dict] | None = None) -> str:
    data = data or {}
    m = data.get("machine_info", {})
    c = data.get("commit_info", {})
    if commit:
        c = {"id": commit}
    others = (archs or []) + (chases or [])

    def first(key: str) -> object:  # what bench_sim.py recorded, where pytest did not
        return next((x[key] for x in others if x.get(key)), None)

    cpus = m.get("cpu", {}).get("count") or first("cpu_count")
    out = ["# Simulator speed (produced by benchmarks/speed_table.py, not edited by hand)", "",
           f"Machine: {m.get('cpu', {}).get('brand_raw') or first('cpu_model') or '?'}, "
           f"{cpus or '?'} CPUs, Python {m.get('python_version') or first('python') or '?'}; "
           f"commit {str(c.get('id', '?'))[:10]}{' (dirty)' if c.get('dirty') else ''}, "
           f"{data.get('datetime') or first('measured_at') or '?'}."
           + ("" if data else " No pytest-benchmark file: bench_sim.py's figures only."), "",
           "| benchmark | median | rounds | derived | target |", "|---|---|---|---|---|"]
    for b in data.get("benchmarks", []):
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
            target = _workers_target(med, extra["workers"], cpus)
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
                   f"{_workers_target(med, n, cpus)} |")
    for i, ch in enumerate(chases or [], 1):
        for regime, rate in ch.get(CHASE_KEY, {}).items():
            out.append(f"| `bench_sim.py chase` {i}: {regime} | | 3 (best) | {rate:.1f} M "
                       f"accesses/s | >= {TARGET_ACCESSES / 1e6:.0f} M/s: "
                       f"{_mark(rate * 1e6 >= TARGET_ACCESSES)} |")
    hosts = [(i, ch["host"]) for i, ch in enumerate(chases or [], 1) if ch.get("host")]
    if hosts:
        out += ["", "The chase's host core, apart from gpumem's code (bench_sim.py "
                "host_yardstick: a dependent 64-bit hash chain, dependent random reads in "
                "4 MB):", ""]
        out += [f"- chase {i}: LLVM CPU {h.get('llvm_cpu', '?')} "
                f"({', '.join(h.get('vector_features', [])) or 'no AVX2'}), "
                f"{h.get('scalar_hash_msteps', '?')} M hash steps/s, "
                f"{h.get('random_read_4mb_mreads', '?')} M random reads/s" for i, h in hosts]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, nargs="+", help="a pytest-benchmark JSON of "
                    "test_speed.py, bench_sim.py archs and chase outputs")
    ap.add_argument("--commit", default="", help="the tree measured, if not the JSON's")
    a = ap.parse_args()
    speed, archs, chases = [], [], []
    for f in a.files:
        try:
            d = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            sys.exit(f"speed_table: cannot read {f}: {e}")
        if "benchmarks" in d:
            speed.append(d)
        elif "run_all_sim_wall_s" in d:
            archs.append(d)
        elif CHASE_KEY in d:
            chases.append(d)
        else:
            sys.exit(f"speed_table: {f} is none of pytest-benchmark, bench_sim.py archs or "
                     f"chase output")
    if len(speed) > 1:
        sys.exit("speed_table: more than one pytest-benchmark file")
    sys.stdout.write(table(speed[0] if speed else None, archs, a.commit, chases))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
