"""XOR hashes of addresses: bit i of a line's code is the parity of ``address & mask_i``.

What a GPU's slice hash is made of (Accel-Sim's IPOLY, the CPU slice hashes reverse-
engineered), said once for the simulator that homes lines by one
(:meth:`gpumem.sim.config.CacheLevel.slice_of`) and the analysis that fits one to
measured lines (:mod:`gpumem.analysis.slices`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def parity(x: np.ndarray) -> np.ndarray:
    """Each int64's bit parity (0 or 1)."""
    u = np.asarray(x, np.int64).view(np.uint64)
    for s in (32, 16, 8, 4, 2, 1):
        u = u ^ (u >> np.uint64(s))
    return (u & np.uint64(1)).astype(np.int64)


def codes_of(addresses: np.ndarray, masks: Sequence[int]) -> np.ndarray:
    """Each address's code: bit i is the parity of ``address & masks[i]``."""
    a = np.asarray(addresses, np.int64)
    out = np.zeros(a.shape, np.int64)
    for i, m in enumerate(masks):
        out |= parity(a & np.int64(m)) << i
    return out


def gf2_basis(masks: Sequence[int]) -> list[int]:
    """A reduced basis (each leading bit in one vector only, highest first) of the masks'
    span over GF(2); its length is their rank."""
    basis: list[int] = []
    for m in masks:
        for b in basis:
            m = min(m, m ^ b)
        if m:
            basis = [min(b, b ^ m) for b in basis] + [m]
    basis.sort(reverse=True)
    for i, b in enumerate(basis):  # reduce each leading bit out of the others
        top = 1 << (b.bit_length() - 1)
        basis = [x ^ b if j != i and x & top else x for j, x in enumerate(basis)]
    return sorted(basis, reverse=True)


def span(basis: Sequence[int]) -> set[int]:
    """Every XOR of the masks (0 included)."""
    out = {0}
    for b in basis:
        out |= {x ^ b for x in out}
    return out


def reduce_modulo(addresses: np.ndarray, basis: Sequence[int]) -> np.ndarray:
    """Each address's canonical representative modulo the span of ``basis`` (a reduced
    basis, :func:`gf2_basis`): two addresses get the same one exactly when their XOR lies in
    the span. A function that no delta of the span changes is a function of this."""
    out = np.asarray(addresses, np.int64).copy()
    for b in sorted(basis, reverse=True):
        top = np.int64(1 << (b.bit_length() - 1))
        out = np.where(out & top, out ^ np.int64(b), out)
    return out


def class_bits(basis: Sequence[int], lo: int, hi: int) -> list[int]:
    """The address bits ``lo .. hi - 1`` that number a class modulo the span of ``basis``
    (a reduced basis inside those bits): every bit but each vector's leading one, which a
    canonical representative (:func:`reduce_modulo`) always has clear. Low bits first."""
    pivots = {b.bit_length() - 1 for b in basis}
    return [k for k in range(lo, hi) if k not in pivots]


def class_index(addresses: np.ndarray, basis: Sequence[int], lo: int, hi: int) -> np.ndarray:
    """Each address's class modulo the span of ``basis`` within bits ``lo .. hi - 1``
    (higher and lower bits ignored), numbered 0 .. 2**len(class_bits) - 1: its canonical
    representative's free bits (:func:`class_bits`) packed, the lowest first. What a table
    of one slice per class is indexed by, in the analysis that fits it
    (:mod:`gpumem.analysis.slices`) and the simulator that homes lines by it."""
    window = np.int64(((1 << hi) - 1) & ~((1 << lo) - 1))
    rep = reduce_modulo(np.asarray(addresses, np.int64) & window, basis)
    out = np.zeros(rep.shape, np.int64)
    for i, k in enumerate(class_bits(basis, lo, hi)):
        out |= ((rep >> np.int64(k)) & np.int64(1)) << np.int64(i)
    return out
