"""Does a warm-up walked by many threads leave the L2 as a one-thread warm-up does?

    python benchmarks/warm_parallel_check.py [--sms 0 33 66 99 131] [--threads 1024]

``l2_sm_map`` chases one random chain over 3/4 of the L2 from every SM after a warm-up pass;
walked by one thread that pass took 70 ms per SM on an H200 (9 of the experiment's 12 s).
``ChaseRequest.warm_threads`` walks it as chain-order segments at once on the same SM. This
chases the same chain from each SM given, after each kind of warm-up, and prints per SM how
many of the recorded accesses fall on the same side of the near/far threshold (the 2-means
split ``l2_sm_map`` uses) and the two medians, with the time each chase took.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    from gpumem.cuda.backend import CudaBackend
    from gpumem.device import ChaseRequest
    from gpumem.experiments.l2_map import RECORD, STRIDE, _two_means

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, nargs="*", default=[0, 33, 66, 99, 131])
    ap.add_argument("--threads", type=int, default=1024)
    a = ap.parse_args()
    dev = CudaBackend().open(0, "hopper")
    footprint = (3 * dev.info.l2_bytes // 4) // STRIDE * STRIDE
    base = ChaseRequest(footprint=footprint, stride=STRIDE, record=RECORD,
                        warmup=footprint // STRIDE, order="random", path="cg", seed=0)
    agree_all = []
    for sm in a.sms:
        out = {}
        for threads in (1, a.threads):
            t = time.perf_counter()
            res = dev.pointer_chase(ChaseRequest(**{**base.__dict__, "sm": sm,
                                                    "warm_threads": threads}))
            out[threads] = (res.latency - res.timer_overhead, time.perf_counter() - t, res)
        one, many = out[1][0], out[a.threads][0]
        _lo, _hi, cut = _two_means(np.concatenate([one, many]))
        agree = float(np.mean((one < cut) == (many < cut)))
        agree_all.append(agree)
        same_lines = bool(np.array_equal(out[1][2].index, out[a.threads][2].index))
        print(f"SM {sm:3d}: {agree:.3f} of {RECORD} accesses on the same side of {cut:.0f} "
              f"cycles; medians near/far one thread {np.median(one[one < cut]):.0f}/"
              f"{np.median(one[one >= cut]):.0f}, {a.threads} threads "
              f"{np.median(many[many < cut]):.0f}/{np.median(many[many >= cut]):.0f}; "
              f"same lines {same_lines}, end ok {out[1][2].end_ok}/{out[a.threads][2].end_ok}; "
              f"{out[1][1] * 1e3:.0f} ms vs {out[a.threads][1] * 1e3:.0f} ms")
    print(f"agreement over {len(a.sms)} SMs: min {min(agree_all):.3f}, "
          f"mean {np.mean(agree_all):.3f}")


if __name__ == "__main__":
    main()
