"""On a GPU (sm_90): the bulk_copy probe's kernel with the other mbarrier wait.

    python benchmarks/bulk_wait.py

The probe waits for each bulk copy with mbarrier.try_wait (the thread may be suspended until
the copy lands). This recompiles the kernel with mbarrier.test_wait (a pure spin) and times
both at low and high concurrency, so the per-copy round trip the experiment reports
(``bulk.latency_estimate``) can be told apart from the way the thread waits.
"""

from __future__ import annotations

import numpy as np
from gpumem.cuda.device import generic_kernel_source

POINTS = [(1024, 1, 1), (1024, 8, 1), (4096, 8, 1), (16384, 4, 1), (32768, 4, 1)]


def main() -> None:
    import cupy as cp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    footprint = 480 << 20
    a = cp.zeros(footprint, dtype=cp.uint8)
    sink = cp.zeros(1, dtype=cp.uint32)
    src = generic_kernel_source("bulk_copy")
    print(f"{'wait':10} {'chunk':>6} {'stages':>6} {'GB/s':>8}")
    for wait in ("try_wait", "test_wait"):
        for chunk, stages, ctas in POINTS:
            name = f"bulk_read<{stages}>"
            mod = cp.RawModule(code=src.code, options=(*src.options,
                                                       f'-DGPUMEM_BULK_WAIT="{wait}"'),
                               name_expressions=[name])
            kern = mod.get_function(name)
            smem = chunk * stages
            if smem > 48 * 1024:
                kern.max_dynamic_shared_size_bytes = smem
            blocks = sms * ctas
            iters = -(-(footprint // chunk) // blocks)
            args = (a, np.uint64(footprint // chunk), np.uint32(chunk), np.uint64(iters), sink)
            times = []
            for _ in range(6):
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                kern((blocks,), (32,), args, shared_mem=smem)
                e.record()
                e.synchronize()
                times.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
            gbs = iters * blocks * chunk / np.median(times[1:]) / 1e9
            print(f"{wait:10} {chunk:6} {stages:6} {gbs:8.0f}")


if __name__ == "__main__":
    main()
