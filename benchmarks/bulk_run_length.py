"""Does the length of a timed run move the bulk-copy bandwidth? (issue 31, item 2)

    python benchmarks/bulk_run_length.py [--repeats 10] [--json OUT.json] [--sim]

bulk_copy 1 read its 480 MB buffer once per timed run: 110 us on an H200 at 4.3 TB/s. Two
runs of ``gpumem run --arch hopper all`` in one GPU job (2026-12-04, GPU-c6fed) read
``bw.dram_read_bulk`` 4303.6 and 4020.9 GB/s, 3.4 % off their median where reruns must agree
within 3 %; the five committed reruns of another card read 4281-4323. The hypothesis: the
launch and the ramp of a grid of one-thread blocks, a few microseconds whatever the run's
length, are a few percent of a 110 us run and vary from run to run. This times
``Device.bulk_copy`` at the shapes near the best (chunk, stages, blocks per SM) for runs of
1, 2 and 4 passes over the buffer (0.11-0.45 ms), the passes interleaved repeat by repeat
so drift falls on all alike, and prints the median GB/s and the spread (max - min over the
median) of each. Predicted: 1-3 % more at 4 passes than at 1, and a narrower spread. Run it
in several processes: the outlier above was one process's. Measured (2026-12-04,
GPU-b94ce5a3, three processes): 3698-4223 GB/s in one pass, 4364-4596 in four (9-21 % more),
spreads of 3-50 % against 0.8-6 % (one 19 %); bulk_copy 2 sizes its runs like bandwidth's.
Changes no setting of the GPU.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
from probe_device import open_hopper, probe_parser

#: (chunk bytes, stages, blocks per SM): bulk_copy 1's best points on an H200 (the five
#: committed reruns: 32 KiB x 1 x 2, 65536 B in flight per SM) and their neighbours
SHAPES = ((32768, 1, 2), (32768, 2, 2), (16384, 4, 2), (16384, 2, 4))
PASSES = (1, 2, 4)


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    from gpumem.contracts.device import BulkRequest

    dev = open_hopper(a.sim)
    info = dev.info
    footprint = min(max(8 * info.l2_bytes, 64 << 20),
                    max(info.memory_bytes // 4, 1 << 20)) // 32768 * 32768  # bulk_copy's
    rows = []
    for chunk, stages, ctas in SHAPES:
        req = BulkRequest(footprint=footprint, chunk=chunk, stages=stages, ctas_per_sm=ctas)
        dev.bulk_copy(req)  # warm-up
        runs: dict[int, list] = {p: [] for p in PASSES}
        for r in range(a.repeats):
            for p in PASSES:
                runs[p].append(dev.bulk_copy(replace(req, work=p * footprint, seed=r)))
        for p in PASSES:
            gbs = [x.gbs for x in runs[p]]
            med = float(np.median(gbs))
            rows.append(dict(chunk=chunk, stages=stages, ctas_per_sm=ctas, passes=p,
                             gbs=med, spread=float((max(gbs) - min(gbs)) / med),
                             ms=float(np.median([x.seconds for x in runs[p]])) * 1e3))
    if a.json:
        a.json.write_text(json.dumps({"device": info.name, "footprint": footprint,
                                      "rows": rows}, indent=1))
    print(f"{'chunk x stages x blocks/SM':>28} "
          + " ".join(f"{p:>2} pass(es) GB/s (spread)" for p in PASSES))
    for shape in SHAPES:
        mine = [r for r in rows if (r["chunk"], r["stages"], r["ctas_per_sm"]) == shape]
        label = f"{shape[0]} x {shape[1]} x {shape[2]}"
        print(f"{label:>28} " + " ".join(f"{r['gbs']:15.1f} ({r['spread']:5.1%})"
                                         for r in mine))
    print(f"median of {a.repeats} runs each over {footprint >> 20} MB; runs lasted "
          + ", ".join(f"{min(r['ms'] for r in rows if r['passes'] == p):.2f}-"
                      f"{max(r['ms'] for r in rows if r['passes'] == p):.2f}" for p in PASSES)
          + " ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
