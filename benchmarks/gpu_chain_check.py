"""On a GPU: the device-built random chain equals gpumem.contracts.chains.chain_array (same
Feistel)."""

import cupy as cp
import numpy as np
from gpumem.contracts.chains import chain_array, permutation_params
from gpumem.cuda.device import generic_kernel_source

src = generic_kernel_source()
mod = cp.RawModule(code=src.code, options=src.options)
for footprint, stride in [(1 << 16, 128), (1 << 20, 32), (3 << 20, 128)]:
    lines = footprint // stride
    arr = cp.zeros(footprint // 4, dtype=cp.uint32)
    bits, k0, k1, k2, k3, _ = permutation_params(lines, 5)
    mod.get_function("chain_random")(
        (64,), (256,), (arr, np.uint64(lines), np.uint64(stride // 4), np.int32(bits),
                        np.uint64(k0), np.uint64(k1), np.uint64(k2), np.uint64(k3)))
    same = bool((arr.get() == chain_array(footprint, stride, "random", 5)).all())
    print(f"chain_random footprint={footprint} stride={stride}: matches numpy: {same}")
