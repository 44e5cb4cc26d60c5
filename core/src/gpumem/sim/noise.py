"""The noise of real hardware, added to simulated chases: what the inference must survive.

The engine adds Gaussian timer jitter and exponential mis-timings (``Timer.jitter``,
``outlier_rate``). Real GPUs do worse, and an inference is only trustworthy once it has been
shown to survive that. These models are applied to a chase's latencies after the engine ran
(so the engine's outputs, and its bit-identity across worker counts, are untouched), from a
stream seeded by the request like every other random choice:

* ``tail_rate`` / ``tail_cycles`` / ``tail_shape``: heavy-tailed mis-timings (a Lomax, i.e.
  shifted Pareto, delay: most small, a few ten times ``tail_cycles``), as interrupts, clock
  reads preempted and the other tenants of a shared node produce;
* ``spread``: per-level latency spread resampled from a measured card (``"h200"``: relative
  residuals around each level's median from an H200 latency ladder, below): L1 hits nearly
  constant, L2 hits +-11 %, DRAM accesses -27 % to +248 % (bimodal, with a long tail);
* ``clock_step_after`` / ``clock_step_factor``: after that many chases on the device, every
  access served beyond the path's first level costs ``factor`` times its cycles (the SM clock
  changed under a fixed memory latency in ns: a boost clock dropping mid-sweep).
"""

from __future__ import annotations

import numpy as np

#: Percentiles at which the residual tables below are given.
QUANTILES = (0, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 97.5, 99, 99.5,
             99.9, 100)

#: Relative residuals (latency / the footprint's median - 1) of an NVIDIA H200's sequential
#: latency ladder (gpumem 0.1.0, 2026-11-29, SM clock 1980 MHz; the reference run kept in the
#: repository's tests/data/h200-run, which ``tests/test_sim_noise.py`` re-derives this table
#: from): footprints of 2-128 KB (L1 hits), 4-20 MB (L2 hits) and 1-8 GB (DRAM).
H200_RESIDUALS: dict[str, tuple[float, ...]] = {
    "first": (0.0,) * 20 + (0.2647,),
    "cache": (-0.1111, -0.1076, -0.1007, -0.0972, -0.0868, -0.0764, -0.066, -0.0466, -0.0296,
              -0.0143, 0.0, 0.0139, 0.0278, 0.043, 0.0643, 0.0794, 0.0932, 0.107, 0.1155,
              0.129, 0.1336),
    "dram": (-0.2702, -0.2631, -0.2598, -0.2564, -0.2504, -0.2445, -0.2361, -0.2192, -0.2008,
             -0.1767, 0.0, 0.0302, 0.0499, 0.0733, 0.2074, 0.4111, 0.5109, 0.7009, 0.7946,
             1.9542, 2.4813),
}
SPREADS = {"h200": H200_RESIDUALS}


def fit_residuals(rows: list[np.ndarray]) -> tuple[float, ...]:
    """The residual table of chases at one level: each row's latencies over its own median,
    minus one, pooled, at :data:`QUANTILES` (rounded to 4 decimals)."""
    pooled = np.concatenate([r[np.isfinite(r)] / np.median(r[np.isfinite(r)]) - 1
                             for r in rows])
    return tuple(round(float(q), 4) for q in np.percentile(pooled, QUANTILES))


def level_class(level: np.ndarray, path_len: int) -> np.ndarray:
    """0: the path's first level, 1: a cache behind it, 2: DRAM (engine level numbers)."""
    return np.where(level == 0, 0, np.where(level >= path_len, 2, 1))


def add_noise(lat: np.ndarray, level: np.ndarray, path_len: int, overhead: float, timer,
              seed: int, chase_number: int) -> np.ndarray:
    """``lat`` (cycles including ``overhead``) with the timer's extra noise models applied."""
    if not (timer.tail_rate > 0 or timer.spread or timer.clock_step_after > 0):
        return lat
    rng = np.random.default_rng(seed)
    core = lat - overhead
    cls = level_class(level, path_len)
    if timer.clock_step_after > 0 and chase_number >= timer.clock_step_after:
        core = np.where(cls > 0, core * timer.clock_step_factor, core)
    if timer.spread:
        table = SPREADS[timer.spread]
        u = rng.uniform(0.0, 100.0, lat.size)
        for k, name in enumerate(("first", "cache", "dram")):
            m = cls == k
            if m.any():
                core[m] = core[m] * (1.0 + np.interp(u[m], QUANTILES, table[name]))
    if timer.tail_rate > 0:
        hit = rng.random(lat.size) < timer.tail_rate
        shape = max(timer.tail_shape, 1.05)
        scale = timer.tail_cycles * (shape - 1.0)  # Lomax mean = scale / (shape - 1)
        core = core + np.where(hit, scale * (rng.random(lat.size) ** (-1.0 / shape) - 1.0),
                               0.0)
    return np.floor(core + overhead + 0.5)
