"""Is an L2 hit through the L1 (``.ca``) slower than one past it (``.cg``), line by line?

    python benchmarks/ca_vs_cg.py [--sim] [--json OUT.json] [--sms 0,2,66]

Issue 45, item 4: the simulator's L2 takes one latency per line and SM (its slice table,
from ``l2_slices``, which chases ``.cg``), but the latency ladder's ``lat.l2`` chases ``.ca``:
on two H200s lat.l2 read 285-286 cycles in six runs while the ``.cg`` hits from SM 0 had a
median of 282.8-283.0 over 4,096 lines. Hypothesis: a ``.ca`` load that misses the L1 pays
2-3 cycles more than a ``.cg`` load for the same L2 hit. Here, from each SM given, the same
4,096 random lines of a 32 MB buffer (512 KB: twice the L1, visited cyclically, so every
``.ca`` access misses an LRU L1 and hits the L2) are chased once per pass, after an untimed
pass, on both paths; prints each SM's median of the per-line differences (``.ca`` minus
``.cg``) and its quartiles. Changes no clock, power or mode setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from probe_device import open_hopper, probe_parser  # noqa: E402

LINES, FOOTPRINT, LINE = 4096, 32 << 20, 128


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--sms", default="0,2,66", help="SMs to chase from, comma-separated")
    a = ap.parse_args()
    from gpumem.contracts.device import ChaseRequest

    dev = open_hopper(a.sim)
    rng = np.random.default_rng(45)
    lines = np.sort(rng.choice(FOOTPRINT // LINE, LINES, replace=False)) * LINE
    order = rng.permutation(lines)  # visited in a random cyclic order: no prefetch helps
    pattern = tuple(int(x) for x in order)
    rows = {}
    for sm in (int(s) for s in a.sms.split(",")):
        got = {}
        for path in ("cg", "ca"):
            res = dev.pointer_chase(ChaseRequest(
                footprint=FOOTPRINT, stride=LINE, record=LINES, warmup=LINES, order="pattern",
                path=path, seed=1, sm=sm, pattern=pattern))
            lat = np.asarray(res.latency, float) - float(res.timer_overhead)
            by_line = dict(zip((np.asarray(res.index) * 4).tolist(), lat.tolist(), strict=False))
            got[path] = np.array([by_line.get(int(x), np.nan) for x in order])
        d = got["ca"] - got["cg"]
        q = np.nanpercentile(d, [25, 50, 75])
        rows[sm] = {"cg_median": float(np.nanmedian(got["cg"])),
                    "ca_median": float(np.nanmedian(got["ca"])),
                    "diff_quartiles": [float(x) for x in q]}
        print(f"SM {sm:3d}: .cg median {rows[sm]['cg_median']:.1f}, .ca median "
              f"{rows[sm]['ca_median']:.1f} cycles; per line .ca - .cg: median {q[1]:+.1f} "
              f"(quartiles {q[0]:+.1f}, {q[2]:+.1f})")
    if a.json:
        a.json.write_text(json.dumps({"lines": LINES, "sms": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
