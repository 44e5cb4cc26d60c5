"""How long does DRAM read slower after a large free, and does another process feel it? (issue 42)

    python benchmarks/dram_scrub.py [--json OUT.json] [--mib 480] [--gib 2,8,32] [--max-s 25]

``dram_after_free.py`` on an H100 (GPU-88b764f6, 2026-12-06): a 480 MB buffer A read 3152 GB/s,
3155 after an 8 GiB buffer E beside it was read for 8 s (HBM 43 -> 64 C: heat is not it), 3151
with E back in CuPy's pool, **2644 right after the pool released E (cudaFree)**, and 3114 after
20 s idle; the 64 KB / 2 MB chases cost the same cycles a hop throughout (the translation is
not it). A state that follows the cudaFree and passes with time: the driver clearing the freed
memory in the background (scrub on free) would do that, its copy-engine writes taking DRAM
bandwidth until the whole freed range is cleared, so its length would grow with the size freed.

Here A is read back to back (one launch, 4 passes, timed with CUDA events) from the moment a
buffer of each size in ``--gib`` is released with cudaFree, until 40 readings in a row are
within 1.5 % of A's reading before it (or ``--max-s``): the slow state's length and depth per
size; then the same with the buffer freed by **another process** that exits (what a gpumem run
started right after another one meets).

Beside each reading, the free device memory the runtime reports (cudaMemGetInfo) and the
memory NVML counts used: if memory being cleared is counted neither free nor usable, the free
memory rises as the clearing proceeds, and a run can wait for it instead of guessing.

Predictions (scrub): slow for a time proportional to the size freed (8 GiB: the 20 s idle of
``dram_after_free.py`` recovered), the same depth for every size; the other process's exit
slows A as much. Changes no setting of the GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from dram_first import SOURCE as READ16  # noqa: E402
from dram_first import timed  # noqa: E402

CHILD = r"""
import sys, cupy as cp
b = cp.zeros(int(sys.argv[1]) // 8, dtype=cp.uint64)
cp.cuda.Device().synchronize()
print("held", flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mib", type=int, default=480)
    ap.add_argument("--gib", default="2,8,32")
    ap.add_argument("--max-s", type=float, default=25.0)
    a = ap.parse_args()
    import cupy as cp

    reads = timed(cp.RawKernel(READ16, "read16"))
    buf_a = cp.zeros((a.mib << 20) // 16 * 4, dtype=cp.uint32)

    def once() -> float:
        return reads(buf_a, buf_a.nbytes, 1, warm=False)[0]

    def baseline() -> float:
        return statistics.median(once() for _ in range(40))

    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)

        def nvml_used() -> int:
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:  # noqa: BLE001 - no NVML: -1
        def nvml_used() -> int:
            return -1

    def course(base: float, t0: float) -> dict:
        trace, steady = [], 0
        while time.monotonic() - t0 < a.max_s:
            g = once()
            trace.append((round(time.monotonic() - t0, 4), round(g, 1),
                          cp.cuda.runtime.memGetInfo()[0] >> 20, nvml_used() >> 20))
            steady = steady + 1 if abs(g / base - 1) < 0.015 else 0
            if steady >= 40:
                break
        slow = [t for t, g, *_mem in trace if g < base * 0.985]
        return {"base": round(base, 1), "readings": len(trace),
                "min": min(g for _t, g, *_mem in trace), "first": trace[0][1],
                "free_mib_first_last": (trace[0][2], trace[-1][2]),
                "nvml_used_mib_first_last": (trace[0][3], trace[-1][3]),
                "slow_until_s": slow[-1] if slow else 0.0,
                "slow_readings": len(slow), "recovered": steady >= 40,
                "trace": trace[:: max(1, len(trace) // 400)]}

    once()
    out: dict = {"mib": a.mib, "runs": []}
    pool = cp.get_default_memory_pool()
    for gib in (int(x) for x in a.gib.split(",")):
        for who in ("self", "child"):
            base = baseline()
            if who == "self":
                try:
                    big = cp.zeros((gib << 30) // 8, dtype=cp.uint64)
                except cp.cuda.memory.OutOfMemoryError:
                    print(f"{gib} GiB: out of memory", flush=True)
                    continue
                cp.cuda.Device().synchronize()
                del big
                t0 = time.monotonic()
                pool.free_all_blocks()
            else:
                p = subprocess.Popen([sys.executable, "-c", CHILD, str(gib << 30)],
                                     stdout=subprocess.PIPE, text=True)
                p.stdout.readline()
                p.wait()
                t0 = time.monotonic()
            got = course(base, t0)
            got.update(gib=gib, freed_by=who)
            out["runs"].append(got)
            print(f"{gib:3d} GiB freed by {who:5s}: base {got['base']:7.1f}  first "
                  f"{got['first']:7.1f}  min {got['min']:7.1f}  slow until "
                  f"{got['slow_until_s']:6.2f} s ({got['slow_readings']} of "
                  f"{got['readings']})  recovered {got['recovered']}  free MiB "
                  f"{got['free_mib_first_last']}  NVML used MiB "
                  f"{got['nvml_used_mib_first_last']}", flush=True)
            if a.json:
                a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
