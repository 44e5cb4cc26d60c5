"""benchmarks/l2_near_peak.py hands each SM its lines by where they sit; the GPU figures in
benchmarks/README.md rest on that hand-out: every line read by exactly one SM (nothing for the
L2's request coalescer to merge across SMs), and ``near`` / ``far`` lines only of the reader's
own / the other side."""

import numpy as np
import pytest
from helpers import benchmark_script

MODES = ("near", "far", "mixed", "contiguous", "side0")


@pytest.fixture(scope="module")
def mod():
    return benchmark_script("l2_near_peak")


def _sides(sms=132, lines=4096, seed=3):
    rng = np.random.default_rng(seed)
    sm_side = np.repeat([0, 1], sms // 2)
    rng.shuffle(sm_side)
    return sm_side, rng.integers(0, 2, lines), rng


@pytest.mark.parametrize("mode", MODES)
def test_every_line_goes_to_one_sm(mod, mode):
    sm_side, line_side, rng = _sides()
    lines, offs = mod.shares(mode, 3000, sm_side, line_side, rng)
    assert len(offs) == len(sm_side) + 1 and offs[-1] == len(lines)
    assert sorted(lines.tolist()) == list(range(3000))     # each line once, none past F


@pytest.mark.parametrize("mode", ["near", "far"])
def test_near_and_far_lines_are_of_the_readers_side_or_the_others(mod, mode):
    sm_side, line_side, rng = _sides()
    lines, offs = mod.shares(mode, 3000, sm_side, line_side, rng)
    for s in range(len(sm_side)):
        mine = line_side[lines[offs[s]:offs[s + 1]]]
        assert (mine == sm_side[s]).all() if mode == "near" else (mine != sm_side[s]).all()
    # the lines of a side spread evenly over its readers
    per = np.diff(offs)
    for side in (0, 1):
        assert np.ptp(per[sm_side == side]) <= 1


def test_side0_leaves_the_other_side_idle(mod):
    sm_side, line_side, rng = _sides()
    _lines, offs = mod.shares("side0", 3000, sm_side, line_side, rng)
    per = np.diff(offs)
    assert not per[sm_side == 1].any() and per[sm_side == 0].min() > 0


def test_one_side_only_is_refused(mod):
    sm_side, line_side, rng = _sides()
    with pytest.raises(SystemExit, match="no two sides"):
        mod.shares("near", 3000, np.zeros_like(sm_side), line_side, rng)
