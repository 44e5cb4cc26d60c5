"""Does where a buffer falls in device memory set its DRAM read rate? (issue 42)

    python benchmarks/dram_regions.py [--json OUT.json] [--mib 480] [--pads 0,4,8,...]
        [--sweeps 2]

gpumem's ``bw.dram_read`` moves 2-4 % from process to process on one card (an H200: 4377-4546
GB/s over six processes; an H100, GPU-d3139e3b, 2026-12-06: 3138 against 3176), and inside one
process the shift is the same at every one of ``bandwidth``'s 720 points, from its first to
its last (2 % throughout in the slow process): a state the process keeps, not a transient.
The earlier placement trials (``dram_placement.py``) were confounded by the driver's clearing
of freed memory (``dram_scrub.py``: reads 18 % slower for about 3 ms per GiB freed), which
this script waits out. The hypothesis left: the rate depends on the physical memory a buffer
gets (a process's buffers, allocated together, land together), so one process samples one
region. Probe: a 480 MB buffer allocated behind pads of 0-64 GiB (raw cudaMalloc, so each
pad moves it), read (median of 20 launches after one untimed), freed, 0.3 s for the clearing;
the sweep repeated in reverse order.

Predictions: placement: the rate changes with the pad by more than the repeats' scatter and
each pad reads the same in both sweeps; no placement effect: every pad within the repeats'
scatter. Changes no setting of the GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from dram_first import SOURCE as READ16  # noqa: E402
from dram_first import timed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mib", type=int, default=480)
    ap.add_argument("--pads", default="")
    ap.add_argument("--sweeps", type=int, default=2)
    ap.add_argument("--same", action="store_true",
                    help="the control: one buffer, allocated once, read at every step")
    a = ap.parse_args()
    import cupy as cp

    rt = cp.cuda.runtime
    reads = timed(cp.RawKernel(READ16, "read16"))
    nbytes = a.mib << 20
    total_gib = rt.memGetInfo()[1] >> 30
    pads = [int(x) for x in a.pads.split(",")] if a.pads else \
        list(range(0, max(1, total_gib - 4), 8))

    def read(ptr: int) -> float:
        return statistics.median(reads(ptr, nbytes, 20))

    out: dict = {"mib": a.mib, "total_gib": total_gib, "same": a.same, "readings": []}
    kept = rt.malloc(nbytes) if a.same else 0
    for sweep in range(a.sweeps):
        for pad in (pads if sweep % 2 == 0 else pads[::-1]):
            try:
                p = rt.malloc(pad << 30) if pad else 0
            except Exception:  # noqa: BLE001 - out of memory: the pad is too big
                continue
            b = kept or rt.malloc(nbytes)
            rt.memset(b, 0, nbytes)
            rt.deviceSynchronize()
            gbs = read(b)
            out["readings"].append({"sweep": sweep, "pad_gib": pad, "address": hex(b),
                                    "gbs": round(gbs, 1)})
            print(f"sweep {sweep} pad {pad:3d} GiB  at {b:#x}  {gbs:8.1f} GB/s", flush=True)
            if not kept:
                rt.free(b)
            if p:
                rt.free(p)
            rt.deviceSynchronize()
            time.sleep(0.3)  # the driver clears freed memory: 18 % slower reads meanwhile
            if a.json:
                a.json.write_text(json.dumps(out, indent=1))
    by = {}
    for r in out["readings"]:
        by.setdefault(r["pad_gib"], []).append(r["gbs"])
    print("pad GiB  readings  (spread of all: %.2f %%)" % (
        100 * (max(r["gbs"] for r in out["readings"]) / min(r["gbs"] for r in out["readings"])
               - 1)))
    for pad, v in sorted(by.items()):
        print(f"{pad:7d}  " + "  ".join(f"{x:8.1f}" for x in v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
