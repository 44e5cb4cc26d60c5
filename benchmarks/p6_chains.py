"""Why do two runs' ``lat.pattern.P6`` differ by 4-9 %? (issue 31, item 2: rerun agreement)

    python benchmarks/p6_chains.py [--chains 4] [--json OUT.json] [--sim]

P6 (Mei & Chu's "page-table context switch": a fresh page in a fresh 512 MB region each
access) has 30 accesses on an H200 (a 4-byte chain spans 16 GiB). In the five committed
reruns they fall into two modes, about 600-700 and 750-900 cycles, roughly half and half, in
no order by position, so the median of 29 jumps between the modes: 676-790 over the five,
and 753 against 822 in two runs of one GPU job (2026-12-04, GPU-b94ce...), whose 95 %
intervals did not meet. This chases P6 ``--chains`` times in one process, the L2 evicted
before each, the chain placed behind each of the placement pads in turn (other physical
pages, other virtual addresses), and prints per chain: the median, the mean, the share of
accesses above 720 cycles and the two modes' medians. Run it in several processes. If the
later chains look like the first (same modes, same share), more chains are more samples of
P6; if they read like P1 (680, one mode), the walker remembered the regions and they are
not. Changes no setting of the GPU.
"""

from __future__ import annotations

import json

import numpy as np
from probe_device import open_hopper, probe_parser

SPLIT = 720  # cycles: between the two modes seen on an H200


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--chains", type=int, default=4)
    a = ap.parse_args()
    from gpumem.contracts.device import PLACEMENT_PADS, ChaseRequest
    from gpumem.experiments.patterns import evict_l2, pattern_offsets

    dev = open_hopper(a.sim)
    offs, footprint, _warm = pattern_offsets("P6", dev.info.memory_bytes)
    path = "cg" if "cg" in dev.info.load_paths else "ca"
    rows = []
    for k in range(a.chains):
        placement = k % len(PLACEMENT_PADS)
        evict_l2(dev)
        res = dev.pointer_chase(ChaseRequest(
            footprint=footprint, stride=4, record=len(offs), warmup=0, order="pattern",
            path=path, seed=k, pattern=offs, placement=placement))
        lat = (np.asarray(res.latency, float) - res.timer_overhead)[1:]  # as patterns does
        hi, lo = lat[lat > SPLIT], lat[lat <= SPLIT]
        rows.append(dict(chain=k, placement=placement, n=int(lat.size),
                         median=float(np.median(lat)), mean=float(lat.mean()),
                         high_share=float(hi.size / lat.size),
                         high_median=float(np.median(hi)) if hi.size else None,
                         low_median=float(np.median(lo)) if lo.size else None,
                         latencies=[round(float(x), 1) for x in lat]))
    if a.json:
        a.json.write_text(json.dumps({"device": dev.info.name, "rows": rows}, indent=1))
    print(f"{'chain':>5} {'pad':>4} {'median':>7} {'mean':>7} {'>720':>5} {'hi mode':>8} "
          f"{'lo mode':>8}")
    for r in rows:
        print(f"{r['chain']:5d} {r['placement']:4d} {r['median']:7.1f} {r['mean']:7.1f} "
              f"{r['high_share']:5.2f} {r['high_median'] or float('nan'):8.1f} "
              f"{r['low_median'] or float('nan'):8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
