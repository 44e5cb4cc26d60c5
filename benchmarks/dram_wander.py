"""How does one buffer's DRAM read rate wander over a minute, and with what? (issue 42)

    python benchmarks/dram_wander.py [--json OUT.json] [--mib 480] [--seconds 30]

``dram_regions.py --same`` on an H100 (GPU-8693836c, 2026-12-06): one 480 MB buffer, never
freed, read every 0.3 s: 3093-3098 GB/s for eight readings, then 2976-3058 (sd 1.3-1.4 %),
as much as fresh allocations scatter (0.8-0.9 %): the rate wanders in time, not with the
placement. gpumem's ``bw.dram_read`` moves 2-4 % between processes (one process's 720 points
all 2 % low): if the wander lasts seconds or longer, one experiment samples one state.

Here one buffer is read for ``--seconds`` back to back (a reading: the median of 10 launches,
about 6 ms), then as long again with 0.3 s idle between readings, and beside every reading
NVML's GPU and HBM temperatures, power, SM and memory clocks and clock-event reasons; the
summary gives the scatter of single readings and of 1 s and 5 s means (a wander slower than
the block keeps the means' scatter as large as the readings'), and each NVML reading's
correlation with the rate. Changes no setting of the GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from dram_after_free import nvml_state  # noqa: E402
from dram_first import SOURCE as READ16  # noqa: E402
from dram_first import timed  # noqa: E402


def blocks(trace: list[dict], seconds: float) -> list[float]:
    """Means of the readings in consecutive ``seconds``-long blocks."""
    out: dict[int, list[float]] = {}
    for r in trace:
        out.setdefault(int(r["t"] // seconds), []).append(r["gbs"])
    return [statistics.mean(v) for v in out.values() if len(v) >= 2]


def rel_sd(v: list[float]) -> float:
    return 100 * statistics.stdev(v) / statistics.mean(v) if len(v) > 2 else float("nan")


def corr(x: list[float], y: list[float]) -> float:
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    if len(pairs) < 3 or len({a for a, _ in pairs}) < 2:
        return float("nan")
    return statistics.correlation([a for a, _ in pairs], [b for _, b in pairs])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mib", type=int, default=480)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    import cupy as cp

    reads = timed(cp.RawKernel(READ16, "read16"))
    buf = cp.zeros((a.mib << 20) // 4, dtype=cp.uint32)
    nvml = nvml_state()

    def reading() -> float:
        return statistics.median(reads(buf, buf.nbytes, 10, warm=False))

    reading()
    out: dict = {"mib": a.mib, "phases": {}}
    for phase, gap in (("back to back", 0.0), ("0.3 s idle between", 0.3)):
        t0, trace = time.monotonic(), []
        while time.monotonic() - t0 < a.seconds:
            g = reading()
            trace.append({"t": round(time.monotonic() - t0, 3), "gbs": round(g, 1), **nvml()})
            if gap:
                time.sleep(gap)
        g = [r["gbs"] for r in trace]
        summary = {"readings": len(g), "min": min(g), "max": max(g),
                   "median": statistics.median(g), "sd_pct": rel_sd(g),
                   "sd_1s_pct": rel_sd(blocks(trace, 1.0)),
                   "sd_5s_pct": rel_sd(blocks(trace, 5.0)),
                   "corr": {k: round(corr([r.get(k) for r in trace], g), 3)
                            for k in ("gpu_c", "mem_c", "power_w", "sm_mhz", "mem_mhz")}}
        out["phases"][phase] = {"summary": summary, "trace": trace}
        print(f"{phase:20s} {len(g):5d} readings  {min(g):7.1f}-{max(g):7.1f} GB/s  median "
              f"{summary['median']:7.1f}  sd {summary['sd_pct']:.2f} %  1 s means "
              f"{summary['sd_1s_pct']:.2f} %  5 s means {summary['sd_5s_pct']:.2f} %  "
              f"corr {summary['corr']}", flush=True)
        if a.json:
            a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
