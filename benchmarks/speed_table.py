"""benchmarks/SPEED.md from a pytest-benchmark JSON file of benchmarks/test_speed.py.

    python benchmarks/speed_table.py benchmarks/results/speed.json > benchmarks/SPEED.md

Every figure comes from the JSON (the rounds pytest-benchmark timed, the machine it
recorded); each target of test_speed.py is checked here and marked met or missed.
"""

from __future__ import annotations

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


def table(data: dict) -> str:
    m = data.get("machine_info", {})
    c = data.get("commit_info", {})
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
    return "\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    sys.stdout.write(table(json.loads(Path(sys.argv[1]).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
