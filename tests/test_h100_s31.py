"""Two ``l2_twins`` runs on an H100 (GPU-f6e0b707, tests/data/h100-s31): contention tells
apart the slices of each of the 8 pairs that latency leaves in one group. Each run holds
one test per pair (the judgement then in use called none a split; see the README there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from gpumem.experiments import l2_twins as tw

RUNS = sorted((Path(__file__).parent / "data" / "h100-s31" / "gpuf6e0b-twins").glob(
    "tw*/l2_twins-*.nc"))


@pytest.fixture(scope="module")
def runs():
    assert len(RUNS) == 2
    out = []
    for p in RUNS:
        with xr.open_dataset(p) as ds:
            raw = ds.load()
        out.append((raw, {f.name: f for f in tw.L2Twins().analyze(raw)}))
    return out


def test_every_pairs_first_test_splits_it_in_halves(runs):
    for raw, f in runs:
        assert f["l2_twins.groups_tested"].value == 8
        assert f["l2_slices.slices"].value == 80 and f["l2_slices.groups"].value == 72
        # every slowed class above every other in the held-out repeats (25 + 25: z 6.1)
        assert all(z >= 5.5 for z in f["l2_twins.separation"].value)
        assert all(9 <= d <= 13 for d in f["l2_twins.delay"].value)
        tests = tw._tests_from(raw, 72)
        for t in tests:
            assert t.split, t.why
            assert 2 * t.slowed.sum() == t.classes.size  # exactly half: one slice of two
            assert abs(t.control) <= 1  # the other groups' lines: not slowed


def test_the_two_runs_slow_the_same_classes(runs):
    def slowed(raw):
        return {frozenset(t.classes.tolist()): frozenset(t.classes[t.slowed].tolist())
                for t in tw._tests_from(raw, 72)}

    a, b = (slowed(raw) for raw, _ in runs)
    assert set(a) == set(b)  # the same groups of classes
    assert all(a[k] == b[k] for k in a), [len(a[k] ^ b[k]) for k in a]


def test_one_test_per_pair_places_one_slice_of_each(runs):
    """The second test of a pair is not in these runs: half of each pair is placed, the
    map keeps the pairs whole (a pair is cut where both slices were found)."""
    for _raw, f in runs:
        assert f["l2_twins.groups_split"].value == 0
        assert f["l2_twins.agreement"].value == 0.5
        assert f["l2_slices.group_slices"].value.count(2) == 8
        assert np.isfinite(f["l2_twins.slice_bandwidth"].value)
