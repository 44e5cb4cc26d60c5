"""Plateau and knee detection on synthetic curves with planted levels and noise."""

from __future__ import annotations

import numpy as np
from gpumem.analysis.plateaus import find_plateaus, knee_bracket


def test_levels_are_found_and_narrow_transitions_are_not_levels():
    x = np.array([1, 2, 4, 8, 16, 16.1, 16.2, 16.3, 32, 64, 128], dtype=float)
    y = np.array([30, 30, 31, 30, 30, 150, 160, 155, 300, 301, 299], dtype=float)
    levels = find_plateaus(x, y)
    assert [round(p.latency) for p in levels] == [30, 300]


def test_knee_ignores_a_few_outliers_but_not_a_real_step():
    rng = np.random.default_rng(0)
    x = np.array([1, 2, 3, 4, 5, 6], dtype=float) * 1000
    rows = []
    for i in range(6):
        r = rng.normal(30, 1, 1000)
        r[rng.random(1000) < 0.005] = 900          # mis-timed accesses everywhere
        if i >= 4:
            r[: 100 * (i - 3)] = 300               # from x=5000 a growing share misses
        rows.append(r)
    lower = find_plateaus(x[:4], np.median(rows[:4], axis=1))[0]
    assert knee_bracket(x, np.array(rows), lower, 300.0) == (4000.0, 5000.0)


def test_knee_uses_the_plateau_baseline_for_wide_distributions():
    """A far-L2-like level whose tail crosses the threshold on every point."""
    rng = np.random.default_rng(1)
    x = np.arange(1, 9, dtype=float)
    rows = [np.concatenate([rng.uniform(440, 560, 900), rng.uniform(600, 850, 100)])
            for _ in range(5)] + [rng.uniform(520, 850, 1000) for _ in range(3)]
    lower = find_plateaus(x[:5], np.median(rows[:5], axis=1))[0]
    assert knee_bracket(x, np.array(rows), lower, 697.0) == (5.0, 6.0)


def test_knee_when_the_plateau_starts_slightly_above_its_baseline():
    """The H200 run of 2026-11-29 (run 10): the far-L2 plateau's first point, just past the
    near-partition knee, had 11 % slow accesses against 8 % on the rest of the plateau; the
    knee to DRAM must still be found (it was missed, and the far plateau called DRAM)."""
    x = np.array([27.3, 32, 45.3, 54.6, 64, 90.5, 128]) * 2**20
    share = [0.12, 0.079, 0.078, 0.067, 0.576, 0.574, 0.575]
    rows = []
    for i, s in enumerate(share):
        slow = np.arange(1024) < int(s * 1024)   # exactly that share above the threshold
        rows.append(np.where(slow, 700.0, 496.0 if i < 4 else 560.0))
    lower = find_plateaus(x[:4], np.median(rows[:4], axis=1))[0]
    assert knee_bracket(x, np.array(rows), lower, 685.0) == (x[3], x[4])


def test_a_bisected_transition_after_the_near_l2_is_not_a_level():
    """Medians measured on an H200 (GPU-126aafaa, 2026-12-01, first of four runs): the knee
    bisection put six points into 28.5-31.4 MB, where mixed near and far accesses give a
    median of 472-481 cycles. Over that 9 % span they looked like a level and the far L2 was
    read as ending at 32.6 MB; the latency experiment requires a level to span a factor
    LEVEL_SPAN, and then finds near L2, far L2 and DRAM only."""
    from gpumem.experiments.latency import LEVEL_SPAN

    mb = np.array([4.0, 8.0, 16.0, 22.6, 25.0, 25.6, 25.7, 25.8, 26.1, 27.3, 27.9, 28.5, 29.7,
                   30.8, 31.1, 31.3, 31.4, 32.0, 45.3, 49.9, 54.6, 55.8, 56.4, 56.5, 56.7, 57.0,
                   59.3, 64.0, 128.0, 256.0])
    cycles = np.array([283, 284, 288, 294, 293, 293, 294, 294, 294, 294, 315, 472, 474, 479,
                       481, 515, 523, 498, 519, 503, 522, 524, 523, 524, 528, 531, 553, 686,
                       682, 683], dtype=float)
    levels = find_plateaus(mb * 2**20, cycles, min_span=LEVEL_SPAN)
    assert [round(p.latency, -1) for p in levels] == [290, 520, 680]
    assert levels[1].last_x >= 57 * 2**20
    lax = find_plateaus(mb * 2**20, cycles)  # the old rule: the transition is a level
    assert len(lax) == 4


def test_a_ramp_of_bisection_points_is_not_the_levels_baseline():
    """A quick Fermi run (issue 30): 4 clean L1 points (2-16 KB, no miss) and 12 points a
    knee bisection added on the ramp past the capacity (12-49 % misses), all with the L1's
    median latency, so all on the plateau. Their median miss share (about 25 %) taken as the
    baseline put the knee at 19 KB; the clean lower half puts it at the first miss."""
    x = np.array([2, 4, 8, 16, 17, 17.5, 17.75, 18, 18.5, 18.6, 19, 19.5, 20, 21, 22, 22.25,
                  22.5]) * 1024
    share = [0, 0, 0, 0, 0.125, 0.16, 0.195, 0.18, 0.24, 0.27, 0.25, 0.31, 0.37, 0.42, 0.46,
             0.47, 0.49]
    rows = [np.where(np.arange(256) < int(s * 256), 370.0, 116.0) for s in share]
    samples = np.array(rows)
    lower = find_plateaus(x, np.median(samples, axis=1))[0]
    assert lower.last_x >= 22 * 1024  # the ramp is on the plateau: its medians are L1 hits
    assert knee_bracket(x, samples, lower, 370.0) == (16 * 1024, 17 * 1024)
