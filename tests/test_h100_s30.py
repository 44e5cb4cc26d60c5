"""Issue 44 item 2 on a seventh H100 (GPU-3ffd07d6, 2026-12-06): ``l2_hash`` from every SM
(benchmarks/every_sm_hash.sh's first step; tests/data/h100-s30), kept as its lines x SMs
matrix of medians. 132 SMs split no pair of slices that 16 or 32 do not: the same 72 groups,
17 pairs cut below the tolerance, 8 left that no SM tells apart by latency; the same sets of
classes as the other H100s' pages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import benchmark_script

ROOT = Path(__file__).resolve().parent.parent
EVERY = ROOT / "tests" / "data" / "h100-s30" / "gpu3ffd0-every" / "every.npz"
slow = pytest.mark.skipif(not os.environ.get("GPUMEM_TEST_SLOW"),
                          reason="a 16,384 x 132 matrix grouped: 30 s (GPUMEM_TEST_SLOW=1)")


@pytest.fixture(scope="module")
def every():
    from gpumem.experiments.l2_slices import slice_map

    raw, tol = benchmark_script("l2_slices_all_sms").matrix_run(EVERY)
    return slice_map(raw, tol)


@pytest.mark.parametrize("sms", [16, pytest.param(32, marks=slow)])
def test_the_first_sms_of_the_every_sm_page_cut_the_same_pairs(sms):
    from gpumem.experiments.l2_slices import slice_map

    raw, tol = benchmark_script("l2_slices_all_sms").matrix_run(EVERY, sms)
    m = slice_map(raw, tol)
    assert m is not None and len(m.sms) == sms
    g = m.grouping
    assert (g.count, g.split, g.slices.count) == (72, 17, 80)
    assert m.fit.accuracy >= 0.995


@slow
def test_every_sm_leaves_the_same_eight_pairs(every):
    g = every.grouping
    assert len(every.sms) == 132
    assert (g.count, g.split, g.slices.count) == (72, 17, 80)
    assert int((g.slices.per_group == 2).sum()) == 8 and g.slices.per_group.max() == 2
    assert every.fit.accuracy >= 0.999


@slow
def test_the_every_sm_page_groups_the_classes_as_two_other_h100s(every):
    from gpumem.experiments.l2_slices import slice_map

    vs = benchmark_script("slices_vs_card")
    for job in ("gpu6cc50-job", "gpue68d5-job"):
        other = slice_map(vs._raw(ROOT / "tests" / "data" / "h100-s29" / job / "hash"))
        assert vs.class_sets(every) == vs.class_sets(other), job
