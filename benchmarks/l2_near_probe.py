"""On a GPU: does the end of the near L2 partition move with where the chain is allocated?

    python benchmarks/l2_near_probe.py [--pads 0 0 64 1026 8198] [--lo 20] [--hi 40]
                                       [--step 0.25] [--json FILE]

``latency`` finds ``l2.near_size`` as the knee between the near and the far L2 plateau of a
sequential chase (stride 128 B). On an H200 that knee fell at 26.1-28.0 MB in most runs and
at 33.2 MB in some, one value per process. This probe chases the same chain, in one process,
with a pad allocation of each size in ``--pads`` (MB) held in front of it, so the chain lands
on other physical pages, and prints per placement the last footprint with at most 2 % far
accesses (the experiment's knee) and the footprint where half are far.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

MB = 1 << 20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pads", type=float, nargs="*", default=[0, 0, 64, 1026, 8198, 0])
    ap.add_argument("--lo", type=float, default=20.0)
    ap.add_argument("--hi", type=float, default=40.0)
    ap.add_argument("--step", type=float, default=0.25)
    ap.add_argument("--sm", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()

    from gpumem.contracts.device import ChaseRequest
    from gpumem.cuda.backend import CudaBackend, import_cupy

    cp = import_cupy()
    dev = CudaBackend().open(0, "hopper")
    sizes = [int(round(s * MB / 128)) * 128 for s in np.arange(a.lo, a.hi + 1e-9, a.step)]
    rows = []
    for k, pad_mb in enumerate(a.pads):
        pad = cp.zeros(max(1, int(pad_mb * MB) // 4), dtype=cp.uint32) if pad_mb else None
        t0 = time.perf_counter()
        fracs, meds = [], []
        for fp in sizes:
            lines = fp // 128
            req = ChaseRequest(footprint=fp, stride=128, record=1024, warmup=lines,
                               order="sequential", path="ca", element=4, seed=k, sm=a.sm)
            res = dev.pointer_chase(req)
            lat = np.asarray(res.latency, float) - res.timer_overhead
            fracs.append(float(np.mean(lat >= 390.0)))
            meds.append(float(np.median(lat)))
        del pad
        cp.get_default_memory_pool().free_all_blocks()
        f = np.array(fracs)
        on = np.nonzero(f <= 0.02)[0]
        off = np.nonzero(f > 0.02)[0]
        knee = sizes[off[0] - 1] if off.size and off[0] > 0 else None
        half = next((sizes[i] for i in range(len(sizes)) if f[i] >= 0.5), None)
        rows.append({"pad_mb": pad_mb, "knee": knee, "half": half, "fracs": fracs,
                     "medians": meds, "seconds": time.perf_counter() - t0,
                     "on_points": int(on.size)})
    print(f"{'pad MB':>8} {'knee MB':>9} {'half MB':>9} {'s':>6}  far fraction by footprint")
    for r in rows:
        kn = f"{r['knee'] / MB:9.2f}" if r["knee"] else f"{'-':>9}"
        hf = f"{r['half'] / MB:9.2f}" if r["half"] else f"{'-':>9}"
        profile = "".join(" .:-=+*#%@"[min(9, int(x * 10))] for x in r["fracs"])
        print(f"{r['pad_mb']:8.0f} {kn} {hf} {r['seconds']:6.1f}  {profile}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"sizes": sizes, "rows": rows}, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
