"""When a TLB level counts as reached, and when the evidence is not enough to say.

A decision is taken only when the pooled median pair difference clears its threshold by Z
standard errors (the pairs' spread over their number, and the chase-to-chase drift the base
chases showed); otherwise the search chases again, and after MAX_CHASES the question stays
open. One H200 spread its TLB-hit pair differences over +-5 cycles with a 9-cycle miss."""

from __future__ import annotations

import numpy as np
from gpumem.analysis.chases import Chase
from gpumem.experiments.tlb_structure import (
    DELTA,
    base_noise,
    classify_pages,
    rise,
)

STRIDE = (32 << 20) + 128


def _paired(diffs: np.ndarray, pages: int, stage: str = "l1") -> Chase:
    """A paired chase whose pairs visit ``pages`` pages in turn, with these differences."""
    page = np.arange(diffs.size) % pages
    return Chase(0, "cg", stage, pages * STRIDE, STRIDE, "pattern", 2 * pages, 2 * diffs.size,
                 0.0, float(np.median(diffs)), -np.inf, (0, 4), 0,
                 np.arange(diffs.size) * 2, page * STRIDE // 4, diffs.astype(float),
                 paired=True)


def _noise(n: int, seed: int, spread: float, level: float = 0.0) -> np.ndarray:
    return np.round(np.random.default_rng(seed).normal(level, spread, n))


def _base(spread: float, chases: int = 3):
    return base_noise([_paired(_noise(2048, s, spread), 4, "base") for s in range(chases)])


def test_a_miss_on_every_pair_is_a_level_even_when_the_spread_hides_some_pairs():
    noise = _base(4.5)
    missed = _paired(_noise(2048, 1, 4.5, 9.0), 17)
    assert np.mean(missed.ev_latency >= DELTA + 4.5) < 0.8   # many pairs look like hits
    assert rise([missed], noise.level, DELTA, noise) is True


def test_pages_within_reach_are_no_level():
    noise = _base(4.5)
    assert rise([_paired(_noise(2048, 2, 4.5, 0.5), 16)], noise.level, DELTA, noise) is False


def test_a_third_of_pairs_paying_is_not_a_level():
    noise = _base(4.5)
    rng = np.random.default_rng(2)
    diffs = _noise(2048, 3, 4.5) + np.where(rng.random(2048) < 0.35, 9.0, 0.0)
    assert rise([_paired(diffs, 16)], noise.level, DELTA, noise) is not True


def test_a_penalty_the_noise_hides_stays_open_instead_of_a_guess():
    """Pairs spread +-70 cycles (timer jitter of a quarter of a 280-cycle L2 hit) and a
    6-cycle miss: one chase cannot say, and neither can eight pooled."""
    noise = _base(70.0, 8)
    chases = [_paired(_noise(2048, 10 + k, 70.0, 6.0), 17) for k in range(8)]
    assert rise(chases[:1], noise.level, DELTA, noise) is None
    assert rise(chases, noise.level, DELTA, noise) is None


def test_pooling_chases_settles_what_one_cannot():
    noise = _base(30.0, 8)
    chases = [_paired(_noise(2048, 20 + k, 30.0, 10.0), 17) for k in range(8)]
    assert rise(chases[:1], noise.level, DELTA, noise) is None
    assert rise(chases, noise.level, DELTA, noise) is True


def test_pages_are_classified_one_by_one():
    """At a quarter of the span, the first page of each span misses: the others hit."""
    noise = _base(4.5)
    pages = 72
    rng = np.random.default_rng(5)
    idx = np.arange(4096) % pages
    diffs = np.round(rng.normal(0, 4.5, idx.size)) + np.where(idx % 4 == 0, 10.0, 0.0)
    cut = noise.level + 5.0  # halfway to the miss level
    miss, hit, unclear = classify_pages([_paired(diffs, pages)], cut, noise)
    assert miss == list(range(0, pages, 4))
    assert not unclear and len(hit) == pages - len(miss)
