"""ChaseLog's median of a chase (issue 31): from a sorted copy, bit for bit np.median's,
which it replaces on the search's main thread."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.experiments.chaselog import median


@pytest.mark.parametrize("n", [4096, 4097, 100_001, 1_300_000])
def test_counted_median_is_np_median(n):
    rng = np.random.default_rng(n)
    cases = [np.floor(rng.normal(300, 3, n) + 0.5) + np.where(rng.random(n) < 0.5, 250, 0),
             np.floor(rng.exponential(400, n)) - 7.0,               # negative ones too
             np.full(n, 34.0), rng.integers(-5, 5, n).astype(float),
             np.floor(rng.normal(300, 3, n)) - 6.5, rng.random(n) * 1e3 - 1,
             np.where(rng.random(n) < 0.5, -0.0, 0.0),
             np.concatenate([np.ones(n - 1), [np.nan]]),
             np.concatenate([np.zeros(n - 1), [1e12]])]
    for x in cases:
        got, want = median(x), float(np.median(x))
        assert (np.isnan(got) and np.isnan(want)) or got == want
        assert np.float64(got).tobytes() == np.float64(want).tobytes()


def test_the_two_middle_values_differ():
    x = np.concatenate([np.full(5000, 10.0), np.full(5000, 13.0)])
    assert median(x) == 11.5 == np.median(x)
    assert median(np.concatenate([x, [12.0]])) == 12.0
