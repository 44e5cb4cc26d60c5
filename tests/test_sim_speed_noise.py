"""The timer noise's fast path (issue 31): an approximate Box-Muller decides the rounding
wherever it provably can, libm's log and cos are evaluated elsewhere; results bit-identical
to evaluating them everywhere."""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest
from gpumem.sim import primitives as P


@nb.njit
def _noise(lat, overhead, jitter, outlier_rate, outlier_cycles, seed, exact):
    out = lat.copy()
    P._timer_noise(out, overhead, jitter, outlier_rate, outlier_cycles, np.uint64(seed), exact)
    return out


@nb.njit
def _angles(u2):
    out = np.empty(u2.shape[0])
    for i in range(u2.shape[0]):
        out[i] = P._box_muller_angle(u2[i])
    return out


def test_the_cosine_is_well_inside_its_error_bound():
    rng = np.random.default_rng(0)
    u2 = np.concatenate([rng.integers(0, 1 << 53, 2_000_000, dtype=np.uint64),
                         np.array([0, 1, 1 << 50, 1 << 51, 3 << 50, 1 << 52, 5 << 50,
                                   (1 << 53) - 1], np.uint64)]) * P._TO_UNIT
    err = np.abs(_angles(u2) - np.cos(P._TWO_PI * u2))
    assert err.max() < P.COS_SLACK / 50


@pytest.mark.parametrize("jitter,outlier_rate", [(1.0, 0.002), (0.3, 0.0), (7.5, 0.05),
                                                 (0.0, 0.01), (1e-6, 0.0)])
def test_fast_noise_is_the_exact_noise(jitter, outlier_rate):
    """Over millions of draws, latencies integral and fractional (TLB penalties), some just
    off a rounding boundary: every rounded latency equals libm's everywhere."""
    rng = np.random.default_rng(1)
    n = 1_000_000
    lat = np.concatenate([rng.integers(20, 900, n).astype(float),
                          rng.integers(20, 900, n) + rng.random(n),
                          rng.integers(20, 900, n) + 0.5 + rng.normal(0, 1e-7, n),
                          np.full(n, 283.0 + 8.77 + 58.0)])
    for overhead in (6.0, 2.25):
        fast = _noise(lat, overhead, jitter, outlier_rate, 400.0, 12345, False)
        ref = _noise(lat, overhead, jitter, outlier_rate, 400.0, 12345, True)
        assert np.array_equal(fast, ref)
    assert len(np.unique(fast - lat)) > 3  # the noise is there
