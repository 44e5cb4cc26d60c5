"""Why one H200 read DRAM at 4377 in one process and 4546 GB/s in another: the allocation?

    python benchmarks/dram_placement.py [--sim] [--json OUT.json] [--trials N]

Issue 42: over six processes on one card (GPU-c49e3db9, 2026-12-04) gpumem's ``bw.dram_read``
was 4417, 4377, 4533, 4546, 4503, 4502 GB/s, always at the same best shape (1056 CTAs x 1024
threads, ILP 8, 16-B loads), each process's interval 0.4-1.9 % wide. Within a process the
runs agree; between processes they do not. Hypothesis: the physical placement of the
process's three 480 MB allocations sets the figure. Here, in one process, each trial takes a
fresh allocation of each footprint (480 MB as the experiment, then 2 and 8 GiB) and reads it
six times at that shape after an untimed first pass (and three seconds of reading before
the first trial, so clocks are up as in a run's bandwidth experiment), each run a whole pass
at least: if the allocation sets it, the
480 MB trials spread as the processes did while runs of one allocation agree, and larger
footprints, spanning more of the memory, spread less. Prints the per-footprint spread of the
allocations' medians and the largest spread among one allocation's runs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from probe_device import open_hopper, probe_parser  # noqa: E402

FOOTPRINTS = (480 << 20, 2 << 30, 8 << 30)


def _pad(sim: bool, nbytes: int) -> object:
    """``nbytes`` of device memory held while a trial runs (nothing on the simulator)."""
    if sim or not nbytes:
        return None
    import cupy as cp

    return cp.empty(nbytes, dtype=cp.uint8)


def main() -> int:
    ap = probe_parser(__doc__)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--pads", help="GiB held in front, one per trial, comma-separated (e.g. "
                    "0,1.5,0,3: is the first trial fast for being first or for having no "
                    "pad?); default 0, 1.5, 3, ... for --trials trials")
    a = ap.parse_args()
    pads = ([int(float(x) * (1 << 30)) for x in a.pads.split(",")] if a.pads
            else [t * (3 << 29) for t in range(a.trials)])
    from gpumem.contracts.device import StreamRequest

    dev = open_hopper(a.sim)
    sms = dev.info.sm_count
    nvml = None
    if not a.sim:  # the clocks and their event reasons after each trial (read only)
        from gpumem.cuda.nvml import Nvml

        nvml = Nvml(0)
    states: list[dict] = []
    out: dict[str, list] = {str(fp): [] for fp in FOOTPRINTS}
    best = StreamRequest(footprint=FOOTPRINTS[0], ctas=8 * sms, threads=1024, ilp=8, width=16,
                         path="cg", kind="read", work=4 << 30, seed=0)
    warm_until = time.monotonic() + (0 if a.sim else 3.0)
    while time.monotonic() < warm_until:  # clocks up, as in a run's bandwidth experiment
        dev.stream(best)
    t0 = time.monotonic()
    for nbytes in pads:
        # a new footprint frees the last one's buffers; a pad held in front (0, 1.5, 3, ...
        # GiB) makes the fresh ones land on other pages, as another process's would
        pad = _pad(a.sim, nbytes)
        for fp in FOOTPRINTS:
            req = StreamRequest(footprint=fp, ctas=8 * sms, threads=1024, ilp=8, width=16,
                                path="cg", kind="read", work=max(fp, 2 << 30), seed=0)
            dev.stream(req)  # untimed: the fresh pages' first touch
            runs = [dev.stream(req).gbs for _r in range(6)]
            out[str(fp)].append(runs)
        del pad
        if nvml is not None:
            q = nvml.quick()
            states.append({k: q.get(k) for k in ("sm_clock_mhz", "mem_clock_mhz", "power_mw",
                                                  "temperature_c", "clock_event_reasons")})
            print(f"after pad {nbytes / (1 << 30):g} GiB: SM {q.get('sm_clock_mhz')} MHz, "
                  f"memory {q.get('mem_clock_mhz')} MHz, {q.get('power_mw', 0) / 1e3:.0f} W, "
                  f"{q.get('temperature_c')} C, reasons {int(q.get('clock_event_reasons', 0)):#x}")
    rows = {}
    for fp, trials in out.items():
        meds = [statistics.median(r) for r in trials]
        within = max((max(r) - min(r)) / statistics.median(r) for r in trials)
        rows[fp] = {"medians": [round(m, 1) for m in meds],
                    "spread": round((max(meds) - min(meds)) / statistics.median(meds), 4),
                    "within_allocation": round(within, 4)}
        print(f"{int(fp) >> 20:6d} MiB: allocations' medians {min(meds):.1f}-{max(meds):.1f} "
              f"GB/s (spread {rows[fp]['spread']:.2%}); one allocation's runs within "
              f"{within:.2%}; by trial " + " ".join(f"{m:.0f}" for m in meds))
    print(f"{time.monotonic() - t0:.1f} s")
    if a.json:
        a.json.write_text(json.dumps({"device": dev.info.name, "uuid": dev.info.uuid,
                                      "pads": pads, "states": states, "footprints": rows},
                                     indent=1))
    if nvml is not None:
        nvml.close()
    dev.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
