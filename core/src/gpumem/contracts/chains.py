"""The pointer-chase chains every device walks, defined once.

Two orders, both over an array of ``footprint`` bytes:

* ``sequential`` — Mei & Chu's chain ``A[i] = (i + s) mod N`` (``N`` = footprint / element,
  ``s`` = stride / element): the k-th access reads element ``k * s mod N``.
* ``random`` — one access per ``stride``-sized block, visited in a pseudo-random cyclic order
  given by a keyed permutation of the block numbers (bijective, so every block is visited
  once per pass; seeded, so the simulator and the CUDA device walk the same chain).
* ``scattered`` — one access per ``stride``-sized block, blocks in address order, each at a
  pseudo-random element inside its block (a keyed hash of the block number). With blocks
  larger than a cache line this touches one line per block at a random line of the block, so
  a modulo set index sees all sets, not every (block / line)-th one: the capacity in blocks
  is then C / line whatever the block, which is what exposes the line (Mei & Chu's strided
  chase cannot: its capacity in bytes never moves).

The same permutation is written three times: here with NumPy (:func:`permute_vec`), in the
simulator's compiled loop, and in the CUDA chain builder. ``tests/test_chains.py`` (and, on a
GPU, ``tests/test_gpu.py``) check that all three agree.
"""

from __future__ import annotations

import numpy as np

ORDERS = ("sequential", "random", "pattern", "scattered")
_M64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One step of SplitMix64 on a Python int (used to derive keys from a seed)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def permutation_params(n: int, seed: int) -> tuple[int, int, int, int, int, int]:
    """(bits, xor key, odd multiplier, odd multiplier, add key, n) of a permutation of
    ``range(n)``: a keyed bijection on ``bits``-bit integers, cycle-walked into ``[0, n)``."""
    bits = max(1, int(n - 1).bit_length())
    mask = (1 << bits) - 1
    k = [splitmix64(seed * 4 + i) for i in range(4)]
    return bits, k[0] & mask, (k[1] | 1) & mask, (k[2] | 1) & mask, k[3] & mask, n


def scatter_key(seed: int) -> int:
    """The key of the ``scattered`` order's in-block offsets for ``seed`` (63 bits, so that
    every device can carry it as a signed 64-bit integer)."""
    return splitmix64(seed * 4 + 7) >> 1


def scatter_vec(block: np.ndarray, key: int, per_block: int) -> np.ndarray:
    """Element offset inside each block of the ``scattered`` order: a 64-bit multiply-xorshift
    hash of ``block + key``, modulo the elements per block (written the same way in the
    simulator's loop and the CUDA chain builder)."""
    with np.errstate(over="ignore"):
        z = (np.asarray(block, dtype=np.uint64) + np.uint64(key)) * np.uint64(0x9E3779B97F4A7C15)
        z ^= z >> np.uint64(29)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(32)
    return (z % np.uint64(per_block)).astype(np.int64)


def mix_vec(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on a uint64 array, as the simulator's ``_mix``
    (:mod:`gpumem.sim.primitives`) computes it one value at a time; 0 stays 0."""
    with np.errstate(over="ignore"):
        z = np.asarray(z, dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def permute_vec(x: np.ndarray, params: tuple[int, int, int, int, int, int]) -> np.ndarray:
    """Vectorised permutation of ``x`` (uint64 array of values < n).

    Each step is a bijection on ``bits``-bit integers (xor with a key, multiply by an odd
    number, xor-shift right, again, add a key); values that land at or above ``n`` are
    stepped again (cycle walking), which keeps it a bijection of ``range(n)``. The domain is
    under ``2 n``, so fewer than two steps are needed on average.
    """
    bits, k0, k1, k2, k3, n = params
    mask = np.uint64((1 << bits) - 1)
    sh = np.uint64((bits + 1) // 2)
    out = np.asarray(x, dtype=np.uint64).copy()
    todo = np.ones(out.shape, dtype=bool)
    while todo.any():
        v = out[todo]
        v = (v ^ np.uint64(k0)) & mask
        v = (v * np.uint64(k1)) & mask
        v ^= v >> sh
        v = (v * np.uint64(k2)) & mask
        v ^= v >> sh
        v = (v + np.uint64(k3)) & mask
        out[todo] = v
        todo[todo] = v >= np.uint64(n)
    return out


def chain_offsets(footprint: int, stride: int, order: str, seed: int, count: int,
                  start: int = 0, element: int = 4,
                  pattern: tuple[int, ...] = ()) -> np.ndarray:
    """Byte offsets of accesses ``start .. start+count-1`` of the chase (int64).

    ``pattern``: for ``order="pattern"``, the byte offsets visited in a cycle (distinct,
    element-aligned, below the footprint): any access sequence a chain can express, such as
    re-touching a line through another of its elements.
    """
    k = np.arange(start, start + count, dtype=np.int64)
    if order == "pattern":
        p = np.asarray(pattern, dtype=np.int64)
        return p[k % len(p)]
    if order == "sequential":
        n = footprint // element
        s = stride // element
        return ((k * s) % n) * element
    if order == "random":
        n = footprint // stride
        params = permutation_params(n, seed)
        return permute_vec((k % n).astype(np.uint64), params).astype(np.int64) * stride
    if order == "scattered":
        block = k % (footprint // stride)
        inner = scatter_vec(block, scatter_key(seed), stride // element)
        return block * stride + inner * element
    raise ValueError(f"unknown chain order {order!r} (choose from {', '.join(ORDERS)})")


def cycle_length(footprint: int, stride: int, order: str, element: int = 4,
                 pattern: tuple[int, ...] = ()) -> int:
    """Accesses after which the chase is back where it started."""
    if order == "pattern":
        return len(pattern)
    if order == "sequential":
        n, s = footprint // element, stride // element
        return n // np.gcd(n, s)
    return footprint // stride


def recorded_first(cycle: int, warmup: int, record: int) -> int:
    """How many of a warm-up's first accesses (chain positions ``0 .. n-1``) touch lines the
    chase records next (positions ``warmup .. warmup+record-1`` modulo ``cycle``): those a
    warm-up walked in any other way than one dependent thread walks first, and dependently."""
    return min(max(warmup + record - cycle, 0), warmup)


def warm_segments(cycle: int, warmup: int, record: int, threads: int
                  ) -> tuple[int, np.ndarray] | None:
    """How a warm-up of ``warmup`` accesses is walked by ``threads`` threads so that the
    recorded lines are left as one thread leaves them (``ChaseRequest.warm_threads``).

    Returns ``(first, bounds)``: chain positions ``0 .. first-1`` (the warm-up's accesses to
    lines the chase records next, positions ``warmup .. warmup+record-1`` modulo ``cycle``)
    are walked first, by one thread; then thread ``t`` walks positions ``bounds[t] ..
    bounds[t+1]-1``, all threads at once. None where it cannot be split this way: a warm-up
    longer than one cycle (it touches recorded lines more than once) or shorter than two
    accesses per thread.
    """
    if threads < 2 or warmup > cycle or warmup < 2 * threads:
        return None
    first = recorded_first(cycle, warmup, record)
    bounds = first + (np.arange(threads + 1, dtype=np.int64) * (warmup - first)) // threads
    return first, bounds


def chain_array(footprint: int, stride: int, order: str, seed: int,
                element: int = 4) -> np.ndarray:
    """The chase as an array of next-element indices, ready to copy to a device.

    Element ``i`` holds the index of the element the chase reads after ``i``; starting from
    element ``chain_offsets(..., count=1)[0] // element`` reproduces :func:`chain_offsets`.
    """
    n = footprint // element
    dtype = np.uint32 if element == 4 else np.uint64
    if order == "pattern":
        raise ValueError("pattern chains are built by pattern_array")
    if order == "sequential":
        s = stride // element
        return ((np.arange(n, dtype=np.int64) + s) % n).astype(dtype)
    lines = footprint // stride
    arr = np.zeros(n, dtype=dtype)
    visit = chain_offsets(footprint, stride, order, seed, lines, element=element) // element
    arr[visit] = np.roll(visit, -1).astype(dtype)
    return arr


def pattern_array(pattern: tuple[int, ...], element: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """(element indices, next-element indices) of a pattern chain: the entries to write."""
    idx = np.asarray(pattern, dtype=np.int64) // element
    return idx, np.roll(idx, -1)


def validate_pattern(pattern: tuple[int, ...], footprint: int, element: int) -> None:
    p = np.asarray(pattern, dtype=np.int64)
    if p.size == 0:
        raise ValueError("a pattern chase needs a non-empty pattern")
    if (p % element).any() or (p < 0).any() or (p >= footprint).any():
        raise ValueError("pattern offsets must be element-aligned and inside the footprint")
    if np.unique(p).size != p.size:
        raise ValueError("pattern offsets must be distinct (a chain element has one successor)")
