"""The pointer-chase chains every device walks, defined once.

Two orders, both over an array of ``footprint`` bytes:

* ``sequential`` — Mei & Chu's chain ``A[i] = (i + s) mod N`` (``N`` = footprint / element,
  ``s`` = stride / element): the k-th access reads element ``k * s mod N``.
* ``random`` — one access per ``stride``-sized block, visited in a pseudo-random cyclic order
  given by a keyed Feistel permutation of the block numbers (bijective, so every block is
  visited once per pass; seeded, so the simulator and the CUDA device walk the same chain).

The simulator computes offsets on the fly (:func:`feistel` is written with plain integer
arithmetic so Numba can compile it); the CUDA device materialises the chain with
:func:`chain_array`. ``tests/test_chains.py`` checks the two agree.
"""

from __future__ import annotations

import numpy as np

ORDERS = ("sequential", "random")
_M64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One step of SplitMix64 on a Python int (used to derive keys from a seed)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def feistel_params(n: int, seed: int) -> tuple[int, int, int, int, int, int]:
    """(half_bits, k0, k1, k2, k3, n) for a permutation of ``range(n)``."""
    bits = max(2, int(n - 1).bit_length())
    half = (bits + 1) // 2
    keys = [splitmix64(seed * 4 + i) & 0xFFFFFFFF for i in range(4)]
    return half, keys[0], keys[1], keys[2], keys[3], n


def _round(r, k, mask):
    h = (r ^ k) * np.uint64(0x9E3779B97F4A7C15)
    h = h ^ (h >> np.uint64(29))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(32))
    return h & mask


def feistel_vec(x: np.ndarray, params: tuple[int, int, int, int, int, int]) -> np.ndarray:
    """Vectorised permutation of ``x`` (uint64 array of values < n) with cycle walking."""
    half, k0, k1, k2, k3, n = params
    mask = np.uint64((1 << half) - 1)
    sh = np.uint64(half)
    keys = [np.uint64(k) for k in (k0, k1, k2, k3)]
    out = np.asarray(x, dtype=np.uint64).copy()
    todo = np.ones(out.shape, dtype=bool)
    while todo.any():
        v = out[todo]
        left = v >> sh
        right = v & mask
        for k in keys:
            left, right = right, left ^ _round(right, k, mask)
        v = (left << sh) | right
        out[todo] = v
        todo[todo] = v >= np.uint64(n)
    return out


def chain_offsets(footprint: int, stride: int, order: str, seed: int, count: int,
                  start: int = 0, element: int = 4) -> np.ndarray:
    """Byte offsets of accesses ``start .. start+count-1`` of the chase (int64)."""
    k = np.arange(start, start + count, dtype=np.int64)
    if order == "sequential":
        n = footprint // element
        s = stride // element
        return ((k * s) % n) * element
    if order == "random":
        n = footprint // stride
        params = feistel_params(n, seed)
        return feistel_vec((k % n).astype(np.uint64), params).astype(np.int64) * stride
    raise ValueError(f"unknown chain order {order!r} (choose from {', '.join(ORDERS)})")


def chain_array(footprint: int, stride: int, order: str, seed: int,
                element: int = 4) -> np.ndarray:
    """The chase as an array of next-element indices, ready to copy to a device.

    Element ``i`` holds the index of the element the chase reads after ``i``; starting from
    element ``chain_offsets(..., count=1)[0] // element`` reproduces :func:`chain_offsets`.
    """
    n = footprint // element
    dtype = np.uint32 if element == 4 else np.uint64
    if order == "sequential":
        s = stride // element
        return ((np.arange(n, dtype=np.int64) + s) % n).astype(dtype)
    lines = footprint // stride
    arr = np.zeros(n, dtype=dtype)
    visit = chain_offsets(footprint, stride, "random", seed, lines, element=element) // element
    arr[visit] = np.roll(visit, -1).astype(dtype)
    return arr
