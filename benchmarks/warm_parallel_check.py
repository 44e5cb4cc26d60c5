"""Does a warm-up walked by many threads leave the recorded lines as one thread leaves them?

    python benchmarks/warm_parallel_check.py [--json OUT.json] [--threads 1024]
    python benchmarks/warm_parallel_check.py --ilp 8 [--json OUT.json]

``--ilp K``: the same question for ``ChaseRequest.warm_ilp`` (one thread, in chain order, K
loads in flight) on the ladder's chases alone; the middle chase of each three is warmed that
way instead of by the threads.

``ChaseRequest.warm_threads`` walks a chase's warm-up pass with many threads on the chase's
SM: the lines the chase records first, by one thread, then every other line at once
(:func:`gpumem.contracts.chains.warm_segments`). Under any eviction that depends only on which lines
came after a line (LRU, FIFO, an H200's L2 and the near copies of its partitions, as far as
gpumem has seen) the recorded accesses then see the caches a one-thread pass leaves. This
checks it on the device, in the two experiments that use it, each chase made three times:
one thread, the threads, one thread again (the last pair is the baseline: how much two
one-thread chases differ).

* ``l2_sm_map``: the random chain over 3/4 of the L2 (``cg``) from several SMs; per SM, the
  fraction of the recorded accesses on the same side of the near/far split.
* ``latency``: sequential chains (``ca``, SM 0) around the L2's knees on each placement and
  random ones; per footprint, median and 10/90 % latency.

Not a test (it needs a GPU and takes about a minute on an H200); the figures go in
benchmarks/README.md. On an H200 (2026-12-03): ``l2_sm_map``'s chases agreed with the
one-thread pass exactly as two one-thread passes agree with each other (0.955-1.000 of the
accesses on ten SMs; 2 ms a pass instead of 85), so it warms in parallel; the ladder's did
not at the L2's knees (59 MB sequential: medians 546-581 cycles against 684-698 on all four
placements), so it keeps the one-thread pass.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np


def _chase(dev, req):
    t = time.perf_counter()
    res = dev.pointer_chase(req)
    return res, time.perf_counter() - t


def l2_map(dev, threads: int, sms: list[int]) -> list[dict]:
    from gpumem.contracts.device import ChaseRequest
    from gpumem.experiments.l2_map import RECORD, STRIDE, _two_means

    footprint = (3 * dev.info.l2_bytes // 4) // STRIDE * STRIDE
    base = ChaseRequest(footprint=footprint, stride=STRIDE, record=RECORD,
                        warmup=footprint // STRIDE, order="random", path="cg", seed=0)
    rows = []
    for sm in sms:
        runs = [_chase(dev, replace(base, sm=sm, warm_threads=t)) for t in (1, threads, 1)]
        lats = [r.latency - r.timer_overhead for r, _ in runs]
        _lo, _hi, cut = _two_means(np.concatenate(lats))
        near = [lat < cut for lat in lats]
        rows.append({
            "sm": sm, "cut": round(float(cut), 1),
            "near_fraction": [round(float(n.mean()), 4) for n in near],
            "agree_parallel": round(float(np.mean(near[0] == near[1])), 4),
            "agree_baseline": round(float(np.mean(near[0] == near[2])), 4),
            "same_lines": bool(all(np.array_equal(runs[0][0].index, r.index)
                                   for r, _ in runs[1:])),
            "end_ok": [bool(r.end_ok) for r, _ in runs],
            "ms": [round(s * 1e3, 1) for _, s in runs]})
    return rows


def ladder(dev, threads: int, ilp: int = 1) -> list[dict]:
    from gpumem.contracts.device import PLACEMENT_PADS, ChaseRequest

    l2 = dev.info.l2_bytes
    rows = []
    points = [("sequential", f, k) for f in (8, 16, 24, 27, 30, 33, 40, 50, 56, 59, 61, 63, 70,
                                             95, 120) for k in range(len(PLACEMENT_PADS))]
    points += [("random", f, 0) for f in (16, 40, 61, 95)]
    for order, mb, placement in points:
        fp = int(mb * l2 / 60) // 128 * 128  # scaled to the device's L2 (60 MB on an H200)
        lines = fp // 128
        req = ChaseRequest(footprint=fp, stride=128, record=256 if order == "sequential"
                           else 1024, warmup=lines, order=order, path="ca", seed=mb,
                           placement=placement)
        middle = replace(req, warm_ilp=ilp) if ilp > 1 else replace(req, warm_threads=threads)
        runs = [_chase(dev, r) for r in (req, middle, req)]
        lats = [r.latency - r.timer_overhead for r, _ in runs]
        rows.append({
            "order": order, "footprint": fp, "placement": placement,
            "median": [round(float(np.median(x)), 1) for x in lats],
            "p10": [round(float(np.percentile(x, 10)), 1) for x in lats],
            "p90": [round(float(np.percentile(x, 90)), 1) for x in lats],
            "same_lines": bool(all(np.array_equal(runs[0][0].index, r.index)
                                   for r, _ in runs[1:])),
            "ms": [round(s * 1e3, 1) for _, s in runs]})
    return rows


def main() -> None:
    from gpumem.cuda.backend import CudaBackend

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1024)
    ap.add_argument("--sms", type=int, nargs="*", default=[0, 1, 2, 3, 33, 66, 67, 99, 130, 131])
    ap.add_argument("--ilp", type=int, default=1, help="compare ChaseRequest.warm_ilp K "
                    "(one thread, K loads in flight) on the ladder instead of the threads")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    dev = CudaBackend().open(0, "hopper")
    sms = [s for s in a.sms if s < dev.info.sm_count]
    out = {"threads": a.threads, "ilp": a.ilp,
           "l2_sm_map": l2_map(dev, a.threads, sms) if a.ilp < 2 else [],
           "latency": ladder(dev, a.threads, a.ilp)}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"l2_sm_map, random chain over 3/4 L2, cg: one thread / {a.threads} / one thread")
    for r in out["l2_sm_map"]:
        print(f"  SM {r['sm']:3d}: near {r['near_fraction']}, agree parallel "
              f"{r['agree_parallel']:.3f} baseline {r['agree_baseline']:.3f}, same lines "
              f"{r['same_lines']}, ms {r['ms']}")
    middle = f"{a.ilp} in flight" if a.ilp > 1 else "threads"
    print(f"latency, ca, SM 0: median (p10-p90) cycles, one thread / {middle} / one thread")
    for r in out["latency"]:
        cells = " / ".join(f"{m:.0f} ({lo:.0f}-{hi:.0f})"
                           for m, lo, hi in zip(r["median"], r["p10"], r["p90"], strict=True))
        print(f"  {r['order'][:3]} {r['footprint'] / 2**20:6.1f} MiB p{r['placement']}: {cells}"
              f"; ms {r['ms']}")


if __name__ == "__main__":
    main()
