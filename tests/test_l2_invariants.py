"""The in-page XOR deltas that never change a line's slice (``l2_slices.hash_invariants``)
and the fit that uses them where no XOR hash holds, against planted slice functions: a
linear hash's null space exactly, a table over some address bits exactly (the bits it
ignores), with mislabelled lines too; the table per page predicts held-out lines once the
lines cover each page's classes, and says how much it saw where they do not."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.analysis import slices as S
from gpumem.contracts.xor_hash import parity, reduce_modulo, span

LINE_BITS, PAGE_BITS = 7, 21
BITS = PAGE_BITS - LINE_BITS  # 14 in-page line bits


def _lines(pages: int, per_page: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([(p << PAGE_BITS) + np.sort(rng.choice(1 << BITS, per_page, False))
                           * (1 << LINE_BITS) for p in range(pages)]).astype(np.int64)


def _null_space(masks: list[int]) -> set[int]:
    """Every in-page delta (as an address mask) under which each mask's parity stays."""
    d = np.arange(1 << BITS, dtype=np.int64) << LINE_BITS
    keep = np.ones(d.size, bool)
    for m in masks:
        keep &= parity(d & m) == 0
    return {int(x) for x in d[keep]}


def _table_of_bits(off: np.ndarray, bits: list[int], groups: int, seed: int) -> np.ndarray:
    """A random (non-linear) slice function of the given address bits."""
    key = sum(((off >> b) & 1) << i for i, b in enumerate(bits))
    return np.random.default_rng(seed).integers(0, groups, 1 << len(bits))[key]


def test_a_linear_hash_has_its_null_space_as_invariants():
    off = _lines(16, 256)
    masks = [0x2480, 0x10900, 0x41200]
    labels = sum(parity(off & m) << i for i, m in enumerate(masks)) \
        ^ np.random.default_rng(3).integers(0, 8, 16)[off >> PAGE_BITS]  # a page's constant
    inv = S.invariants(off, labels, line_bits=LINE_BITS, page_bits=PAGE_BITS)
    assert span(inv.basis) == _null_space(masks)
    assert len(inv.basis) == BITS - 3 and inv.least_support >= S.MIN_PAIRS


@pytest.mark.parametrize("noise", [0.0, 0.03], ids=["exact", "3pc-mislabelled"])
def test_the_bits_a_table_ignores_are_its_invariants(noise):
    """Groups from a random table of bits 8 and 10-14: bits 7, 9 and 15-20 are free."""
    off = _lines(16, 256, seed=1)
    labels = _table_of_bits(off, [8, 10, 11, 12, 13, 14], 40, seed=2)
    rng = np.random.default_rng(4)
    wrong = rng.random(off.size) < noise
    labels = np.where(wrong, rng.integers(0, 40, off.size), labels)
    inv = S.invariants(off, labels, line_bits=LINE_BITS, page_bits=PAGE_BITS)
    free = [1 << b for b in (7, 9, 15, 16, 17, 18, 19, 20)]
    assert span(inv.basis) == span(free)


def test_a_function_of_every_bit_has_no_invariants():
    off = _lines(16, 256, seed=5)
    labels = _table_of_bits(off, list(range(7, 21)), 64, seed=6)
    assert S.invariants(off, labels, line_bits=LINE_BITS, page_bits=PAGE_BITS).basis == []


def test_reduce_modulo_names_cosets():
    basis = S.gf2_basis([0x80, 0x200, 0x14d00])
    x = np.arange(1 << BITS, dtype=np.int64) << LINE_BITS
    rep = reduce_modulo(x, basis)
    assert np.unique(rep).size == (1 << BITS) >> 3  # 2,048 classes of 8 lines
    for d in span(basis):  # a delta of the span never changes the class
        assert np.array_equal(reduce_modulo(x ^ d, basis), rep)


def _coset_lines(pages: int, kernel: list[int], extra: int, seed: int) -> np.ndarray:
    """Per page one line of each class modulo ``kernel``, then ``extra`` random lines."""
    rng = np.random.default_rng(seed)
    x = np.arange(1 << BITS, dtype=np.int64) << LINE_BITS
    rep = reduce_modulo(x, S.gf2_basis(kernel))
    out = []
    for p in range(pages):
        reps = np.unique(rep)
        more = rng.choice(x, extra, replace=False)
        out.append((p << PAGE_BITS) + np.concatenate([reps, more]))
    return np.concatenate(out).astype(np.int64)


def test_a_table_over_classes_predicts_held_out_lines_once_it_saw_every_class():
    """No XOR hash holds (a random table of the 11 class bits, like an H200's); the fit's
    lines are one of each of a page's classes and as many random ones again, the held-out
    lines 512 more random ones: the table per page over the invariants' classes puts them
    in their group, found, not linear."""
    kernel = [0x80, 0x200, 0x14d00]
    off = _coset_lines(2, kernel, 2048 + 512, seed=7)
    code = reduce_modulo(off & ((1 << PAGE_BITS) - 1), S.gf2_basis(kernel))
    uniq, key = np.unique(code, return_inverse=True)
    labels = np.random.default_rng(8).integers(0, 90, uniq.size)[key] \
        + 90 * (off >> PAGE_BITS)  # each page its own groups: its physical bits decide
    held = np.tile(np.arange(2048 * 2 + 512) >= 2048 * 2, 2)
    fit = S.fit_hash(off, labels, held, line_bits=LINE_BITS, page_bits=PAGE_BITS,
                     buffer_bits=PAGE_BITS + 1)
    assert fit.found and not fit.linear and fit.masks == []
    assert span(fit.kernel) == span(kernel)
    assert fit.accuracy >= 0.99 and fit.seen == 1.0
    assert "invariant deltas" in fit.model


def test_a_sparse_sample_says_how_much_of_each_page_it_saw():
    """The same function, 256 random lines a page: not found, and the note says the share
    of each page's classes the lines showed and what would tell."""
    kernel = [0x80, 0x200, 0x14d00]
    off = _lines(16, 256, seed=9)
    code = reduce_modulo(off & ((1 << PAGE_BITS) - 1), S.gf2_basis(kernel))
    labels = np.random.default_rng(10).integers(0, 70, 1 << 21)[code >> LINE_BITS]
    held = np.arange(off.size) % 4 == 3
    fit = S.fit_hash(off, labels, held, line_bits=LINE_BITS, page_bits=PAGE_BITS,
                     buffer_bits=25)
    assert not fit.found and span(fit.kernel) == span(kernel)
    assert fit.seen < 0.15 and "a line of each class per page would tell" in fit.note


def test_pages_too_large_to_search_give_no_invariants():
    """A file claiming 128 GB pages (its attributes are not trusted): no search over 2**30
    deltas, no invariants, at once."""
    off = _lines(2, 64, seed=11)
    labels = _table_of_bits(off, [8, 10, 11], 4, seed=12)
    assert S.invariants(off, labels, line_bits=LINE_BITS, page_bits=37).basis == []
    assert S.invariants(off, labels, line_bits=LINE_BITS, page_bits=LINE_BITS).basis == []
