"""Does the length of a timed run move the L1 bandwidth gpumem reports? (issue 31, item 1)

    python benchmarks/l1_run_length.py [--repeats 10] [--json OUT.json]

gpumem's ``bw.l1`` and the reference kernel of ``cache_bw_reference.py`` both read about
124 of the L1's 128 bytes per clock per SM on an H200 (2026-12-03, job 3: 32.38 against
32.42 TB/s, a coin toss between them). The hypothesis: the missing 3 % is the launch's
ramp-up and tail, a few microseconds whatever the run's length. Looking for it showed that
bandwidth_levels 3's runs, meant to last 0.5 ms (``bandwidth_levels.RUN_S``), lasted 0.15-0.3
ms: one 256 MiB probe sized them, half of whose time was launch. Sized by probes that last
long enough (version 4) they last 0.47 ms and read 125 B/clk/SM (32.7 TB/s), above the
reference's 0.53 ms launches. This times gpumem's own stream kernel (``Device.stream``, as
bandwidth_levels runs it: per-block slices, ``.ca``, 16-byte loads) at its best L1 shapes
for runs of 0.25 to 4 ms (median of the repeats), and prints bytes per clock per SM by run
length and how long the runs lasted. Predicted: rising by 0.5-1.5 % from 0.5 to 4 ms if the
ramp and tail cost a few microseconds; within 0.3 % of each other if they do not.
Changes no setting of the GPU.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
from probe_device import open_hopper, probe_parser

#: (blocks per SM, threads, loads in flight, KiB per SM): gpumem's best L1 points on an H200
#: (2026-12-03, after runs were sized to last 0.5 ms: 32.69-32.72 TB/s at 8-33 MB)
SHAPES = ((2, 256, 8, 64), (1, 512, 8, 128), (4, 512, 8, 256))
RUNS_MS = (0.25, 0.5, 1.0, 2.0, 4.0)


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    from gpumem.contracts.device import StreamRequest
    from gpumem.experiments.bandwidth import sized_work

    dev = open_hopper(a.sim)
    sms, mhz = dev.info.sm_count, dev.info.clock_mhz
    rows = []
    for bps, threads, ilp, kib in SHAPES:
        fp = sms * kib * 1024
        req = StreamRequest(footprint=fp, ctas=bps * sms, threads=threads, ilp=ilp, width=16,
                            path="ca", kind="read", order="block", work=256 << 20, seed=0)
        dev.stream(req)  # warm-up
        # the rate that sizes the runs, as bandwidth_levels finds it (a lone 256 MiB probe
        # is half launch: sized from it, runs came out 2.5x shorter than asked)
        rate = sized_work(lambda work, req=req: dev.stream(replace(req, work=work)),
                          256 << 20, 1e-3, 1, 1 << 50) / 1e-3
        for ms in RUNS_MS:
            work = int(rate * ms / 1e3)
            gbs = [dev.stream(replace(req, work=work, seed=r)).gbs for r in range(a.repeats)]
            med = float(np.median(gbs))
            rows.append(dict(blocks_per_sm=bps, threads=threads, ilp=ilp, kib_per_sm=kib,
                             run_ms=ms, work_bytes=work, tbs=med / 1e3,
                             measured_ms=work / (med * 1e9) * 1e3,
                             bytes_per_clk_per_sm=med * 1e9 / (mhz * 1e6) / sms,
                             spread=float((max(gbs) - min(gbs)) / med)))
    if a.json:
        a.json.write_text(json.dumps({"sm_count": sms, "clock_mhz": mhz, "rows": rows},
                                     indent=1))
    print(f"{'shape':>26} " + " ".join(f"{ms:>7.2f}ms" for ms in RUNS_MS))
    for shape in SHAPES:
        mine = [r for r in rows if (r["blocks_per_sm"], r["threads"], r["ilp"],
                                    r["kib_per_sm"]) == shape]
        label = f"{shape[0]}x{shape[1]} ilp{shape[2]} {shape[3]}KiB/SM"
        print(f"{label:>26} " + " ".join(f"{r['bytes_per_clk_per_sm']:9.2f}" for r in mine))
    print(f"bytes per clock per SM at the device's clock, {mhz:.0f} MHz (median of "
          f"{a.repeats} runs each); runs lasted "
          + ", ".join(f"{min(r['measured_ms'] for r in rows if r['run_ms'] == ms):.2f}-"
                      f"{max(r['measured_ms'] for r in rows if r['run_ms'] == ms):.2f}"
                      for ms in RUNS_MS) + " ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
