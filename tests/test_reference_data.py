"""Measured H200 data, analysed again by today's code: the structure it recovers must hold.

The file is one real ``latency`` run (tests/data/README.md). Analysis is a pure function of a
stored dataset, so these numbers guard the analysis against regressions on real, noisy data:
wide far-L2 and DRAM latency distributions and a soft far-L2 knee that bisection fills with
points.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpumem.experiments.latency import LatencyLadder
from gpumem.results.io import open_raw

H200 = Path(__file__).parent / "data" / "h200-latency.nc"


@pytest.fixture(scope="module")
def findings():
    return {f.name: f.value for f in LatencyLadder().analyze(open_raw(H200))}


def test_h200_levels(findings):
    assert findings["lat.l1"] == pytest.approx(32, abs=1)
    assert findings["lat.l2"] == pytest.approx(290, rel=0.03)
    assert findings["lat.l2_far"] == pytest.approx(512, rel=0.05)
    assert findings["lat.dram"] == pytest.approx(697, rel=0.05)
    assert findings["l2.partitions"] == 2


def test_h200_capacities(findings):
    assert 220 << 10 <= findings["l1d.size"] <= 240 << 10       # 256 KB less the carve-out
    assert 30 << 20 <= findings["l2.near_size"] <= 31 << 20     # half of the 60 MiB L2
    assert 56 << 20 <= findings["l2.size"] <= 60 << 20


def test_h200_file_opens_with_show(cli):
    res = cli("show", str(H200))
    assert res.code == 0 and "NVIDIA H200" in res.out and "lat.l2_far" in res.out
