"""L2 read bandwidth when blocks on other SMs re-read each slice (issue 44, item 6).

    python benchmarks/l2_share_sweep.py [--repeats 6] [--json OUT.json] [--sim]

RRZE gpu-benches' gpu-l2-cache, changed only to load with ``__ldcg``, read 11.87 TB/s at a
1.5 MB footprint on an H200, 10.1 at 4 MB, 9.57 at 16.9 MB and 9.42 at 40 MB; gpumem's
``bw.l2`` read 9.02-9.04 (each block re-reading its own slice, best at 16.5 MB). gpu-l2-cache
spreads its re-reads across blocks. The hypothesis: an H100/H200 L2 keeps a copy of a line
near each partition that reads it, so a slice re-read from SMs of both partitions is served
near, where a block's own slice is far for half the lines; and at small footprints a block's
own slice is too short for the big shapes (a point of fewer than one chunk is skipped).
Predicted: with ``StreamRequest.share`` > 1 (the grid's blocks read ctas // share slices,
block b the (b mod that)-th) gpumem's stream kernel reaches at least gpu-l2-cache's figures
at each footprint, and at share 1 it stays where bw.l2 is.

For each footprint and share it times gpumem's own stream kernel (``Device.stream``, .cg,
16-byte loads, order "block") over the shapes bandwidth_levels searches (blocks per SM x
threads x loads in flight), each run sized to last 0.5 ms, the median of the repeats, and
prints the best TB/s per footprint and share. Changes no setting of the GPU.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
from probe_device import open_hopper, probe_parser

FOOTPRINTS_MB = (1.5, 4.0, 16.9, 40.0)
SHARES = (1, 2, 4, 8, 16, 32, 0)  # 0: every block one slice (ctas)
CTAS_PER_SM, THREADS, ILPS = (1, 2, 4, 8), (256, 512, 1024), (2, 8)
GPU_L2_CACHE_TBS = {1.5: 11.87, 4.0: 10.1, 16.9: 9.57, 40.0: 9.42}  # issue 44, one H200


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--repeats", type=int, default=6)
    a = ap.parse_args()
    from gpumem.contracts.device import StreamRequest
    from gpumem.contracts.errors import PointSkipped
    from gpumem.experiments.bandwidth import sized_work

    dev = open_hopper(a.sim)
    sms = dev.info.sm_count
    rows = []
    for mb in FOOTPRINTS_MB:
        fp = int(mb * (1 << 20)) // (16 * 1024) * (16 * 1024)
        for share in SHARES:
            for bps in CTAS_PER_SM:
                for threads in THREADS:
                    for ilp in ILPS:
                        ctas = bps * sms
                        req = StreamRequest(footprint=fp, ctas=ctas, threads=threads, ilp=ilp,
                                            width=16, path="cg", kind="read", order="block",
                                            share=share or ctas, work=0, seed=0)
                        try:
                            dev.stream(req)  # warm-up (and: does one chunk fit?)
                            work = sized_work(lambda w, req=req: dev.stream(replace(req, work=w)),
                                              max(fp, 256 << 20), 5e-4, fp, 16 << 30)
                            gbs = [dev.stream(replace(req, work=work, seed=r)).gbs
                                   for r in range(a.repeats)]
                        except PointSkipped:
                            continue
                        rows.append(dict(mb=mb, share=share or ctas, all_one=share == 0,
                                         ctas_per_sm=bps, threads=threads, ilp=ilp,
                                         tbs=float(np.median(gbs)) / 1e3))
    if a.json:
        a.json.write_text(json.dumps({"sm_count": sms, "rows": rows}, indent=1))
    print(f"{'MB':>6} " + " ".join(f"{('all' if s == 0 else f'share {s}'):>10}"
                                   for s in SHARES) + "  gpu-l2-cache")
    for mb in FOOTPRINTS_MB:
        cells = []
        for s in SHARES:
            mine = [r["tbs"] for r in rows if r["mb"] == mb and (
                r["all_one"] if s == 0 else r["share"] == s and not r["all_one"])]
            cells.append(f"{max(mine):10.2f}" if mine else f"{'-':>10}")
        print(f"{mb:6.1f} " + " ".join(cells) + f"  {GPU_L2_CACHE_TBS[mb]:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
