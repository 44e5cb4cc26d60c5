"""Small statistics the analyses share: how well a median is known."""

from __future__ import annotations

import numpy as np


def median_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of a median: the order statistics around the middle that
    bracket it with probability ``level`` (normal approximation to the binomial)."""
    s = np.sort(np.asarray(x, dtype=float))
    n = s.size
    if n < 3:
        return (float(s[0]), float(s[-1])) if n else (np.nan, np.nan)
    z = {0.95: 1.96, 0.99: 2.576}.get(level, 1.96)
    half = z * np.sqrt(n) / 2
    lo = int(max(0, np.floor(n / 2 - half)))
    hi = int(min(n - 1, np.ceil(n / 2 + half)))
    return float(s[lo]), float(s[hi])
