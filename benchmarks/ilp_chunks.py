"""The ILP sweep's warp-contiguous climb against the number of chunks a CTA re-reads
(issue 45, item 4: the one finding the simulated H200 misses in every run).

    python benchmarks/ilp_chunks.py [--repeats 6] [--json OUT.json] [--sim]

On every H200 run the L2-resident ``ilp`` curve of warp-contiguous loads climbs 7 % from
K = 1 to K = 5 and stays there (``ilp.l2_best_k`` = [1, 1, 5]); coalesced loads stay flat at
K = 1's rate. Over the committed data no law in the contiguous bytes a CTA reads, the bytes in
flight, warps or footprint explained it and ``bandwidth_levels`` too (2026-12-05). One thing
lines up: at the sweep's 17 MiB the kernel's buffer holds 8, 4, 2, 2, 1, 1, 1, 1 chunks
(one iteration of the grid: K x threads x CTAs x 16 B) for K = 1..8, and the climb steps
where each CTA starts re-reading a single run (chunks = 1, K >= 5), though coalesced loads
re-reading theirs stay flat.

Predicted, if re-reading one run is the cause: warp-contiguous loads reach the K >= 5 rate
(about 8980 GB/s) at any K whose footprint is one chunk, and fall back to K = 1's (about 8400)
at K = 5 with two or more chunks; coalesced loads read about 8400 everywhere. Small
footprints change the L2's rate by themselves (bandwidth_levels: 6771 GB/s at 1.1 MB against
8496 at 17 MB, one shape), so the judge is warp over coalesced at the same K and chunks (the
same footprint): about 1.06 where a CTA re-reads one run, about 1.0 elsewhere. Refuted if
that ratio follows K whatever the chunks.

For each ordering, K and chunk count it times gpumem's own stream kernel (``Device.stream``,
.cg, 16-byte loads, one 1024-thread CTA per SM, the ILP sweep's grid; 2 GiB a run, as the
sweep) and prints the median GB/s of the repeats, K by chunks, with the footprint each point
had. Footprints stay within the L2's near copy (28 MB on an H200) where they can. Changes no
setting of the GPU.
"""

from __future__ import annotations

import json

import numpy as np
from probe_device import open_hopper, probe_parser

ORDERS = ("warp", "coalesced")
KS = (1, 2, 3, 4, 5, 8)
CHUNKS = (1, 2, 3, 4, 8)
THREADS, WIDTH, WORK = 1024, 16, 2 << 30
NEAR_COPY = 28 << 20  # an H200's l2.near_size: beyond it hits come from the partitions


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--repeats", type=int, default=6)
    a = ap.parse_args()
    from gpumem.contracts.device import StreamRequest
    from gpumem.contracts.errors import PointSkipped

    dev = open_hopper(a.sim)
    ctas = dev.info.sm_count
    rows = []
    for order in ORDERS:
        for k in KS:
            for n in CHUNKS:
                fp = n * k * THREADS * ctas * WIDTH
                if fp > NEAR_COPY and n > 1:
                    continue
                req = StreamRequest(footprint=fp, ctas=ctas, threads=THREADS, ilp=k,
                                    width=WIDTH, path="cg", order=order, kind="read",
                                    work=WORK, seed=0)
                try:
                    dev.stream(req)  # warm-up: the buffer in the L2
                    gbs = [dev.stream(req).gbs for _ in range(a.repeats)]
                except PointSkipped:
                    continue
                rows.append(dict(order=order, k=k, chunks=n, footprint=fp,
                                 gbs=float(np.median(gbs)),
                                 spread=float(np.max(gbs) - np.min(gbs))))
    if a.json:
        a.json.write_text(json.dumps({"sm_count": ctas, "rows": rows}, indent=1))
    for order in ORDERS:
        print(f"{order}: median GB/s (footprint MB) by chunks")
        print(f"{'K':>3} " + " ".join(f"{f'{n} chunk' + ('s' if n > 1 else ''):>18}"
                                      for n in CHUNKS))
        for k in KS:
            cells = []
            for n in CHUNKS:
                r = next((r for r in rows if r["order"] == order and r["k"] == k
                          and r["chunks"] == n), None)
                cells.append(f"{r['gbs']:9.0f} ({r['footprint'] / 2**20:5.1f})" if r
                             else f"{'-':>18}")
            print(f"{k:3d} " + " ".join(cells))
    print("warp over coalesced, same K and chunks")
    print(f"{'K':>3} " + " ".join(f"{n:>9}" for n in CHUNKS))
    for k in KS:
        cells = []
        for n in CHUNKS:
            w, c = (next((r["gbs"] for r in rows if r["order"] == o and r["k"] == k
                          and r["chunks"] == n), None) for o in ORDERS)
            cells.append(f"{w / c:9.3f}" if w and c else f"{'-':>9}")
        print(f"{k:3d} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
