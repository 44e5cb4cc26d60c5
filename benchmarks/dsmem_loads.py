"""On a GPU (sm_90): DSMEM throughput of the dsmem probe's kernel under other load flavours.

    python benchmarks/dsmem_loads.py

The probe's throughput kernel loads with ld.volatile.shared::cluster (SASS LD.E.STRONG.SYS)
so that ptxas cannot hoist the loop-invariant loads. This checks that the remote ceiling it
finds is the SM-to-SM network's, not the volatile flavour's: the same kernel recompiled with
relaxed cluster-scope loads and with plain (weak) loads, own block vs next block, cluster 2,
32 warps x ILP 4, one block per SM.
"""

from __future__ import annotations

import numpy as np
from gpumem.cuda.device import DSMEM_BLOCK_SMEM, generic_kernel_source

FLAVOURS = {
    "volatile": "ld.volatile.shared::cluster.u32 %0, [%1];",
    "relaxed.cluster": "ld.relaxed.cluster.shared::cluster.u32 %0, [%1];",
    "weak": "ld.shared::cluster.u32 %0, [%1];",
}


def main() -> None:
    import cupy as cp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    src = generic_kernel_source("dsmem")
    print(f"{'flavour':16} {'own B/cycle/SM':>15} {'next B/cycle/SM':>16}")
    for name, load in FLAVOURS.items():
        mod = cp.RawModule(code=src.code, options=(*src.options,
                                                   f'-DGPUMEM_DSMEM_LOAD="{load}"'),
                           name_expressions=["dsmem_throughput<2,4>"])
        kern = mod.get_function("dsmem_throughput<2,4>")
        kern.max_dynamic_shared_size_bytes = DSMEM_BLOCK_SMEM
        blocks, threads, iters = sms // 2 * 2, 1024, 1024
        row = []
        for distance in (0, 1):
            out = cp.zeros(3 * blocks, dtype=cp.uint64)
            sink = cp.zeros(2, dtype=cp.uint32)
            args = (np.int32(distance), np.int32(iters), out, sink)
            rates = []
            for _ in range(5):
                kern((blocks,), (threads,), args, shared_mem=DSMEM_BLOCK_SMEM)
                cp.cuda.runtime.deviceSynchronize()
                rec = out.get().reshape(blocks, 3).astype(float)
                rates.append(np.median(threads * 4 * 4 * iters / (rec[:, 1] - rec[:, 0])))
            row.append(float(np.median(rates)))
        print(f"{name:16} {row[0]:15.1f} {row[1]:16.1f}")


if __name__ == "__main__":
    main()
