"""hopper's H200 values against a card none of them was derived from: GPU-cb0e3c21, two whole
runs under ``--check`` (tests/data/h200-s27, 2026-12-06). The fleet behind the values is
twenty other cards (``allowances.json``); a healthy new card passes, and the same runs made 10 %
worse in a latency or a bandwidth fail (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpumem.authoring.held_out import REGRESSIONS, judge, whole_run
from gpumem.contracts.device import DeviceInfo
from gpumem.plugin.registry import get_plugins

DATA = Path(__file__).parent / "data" / "h200-s27" / "gpucb0e3-job1"
RUNS = sorted(DATA.glob("all*/manifest.json"))
ALLOWANCES = Path(__file__).parents[1] / "core/src/gpumem/contracts/allowances.json"
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", compute_capability="9.0", sm_count=132,
                  l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                  peak_bandwidth_gbs=4814.3)
#: A latency 10 % longer, a bandwidth 10 % lower.
WORSE = {n: 1.1 if n.startswith("lat.") else 0.9 for n in REGRESSIONS}


def _hopper_h200():
    return {e.name: ("", e) for e in get_plugins().expected_values("hopper", H200)}


def test_the_card_is_held_out_of_the_fleet():
    cards = json.loads(ALLOWANCES.read_text())["cards"]
    runs = [whole_run(m) for m in RUNS]
    assert len(runs) == 2 and {r.card for r in runs} == {"gpucb0e3"}
    assert "gpucb0e3" not in cards and len(cards) >= 20


@pytest.mark.parametrize("manifest", RUNS, ids=lambda p: p.parent.name)
def test_hoppers_h200_values_pass_the_new_cards_runs(manifest):
    fails, judged = judge(_hopper_h200(), None, whole_run(manifest))
    assert judged >= 60 and not fails, fails


@pytest.mark.parametrize("name", REGRESSIONS)
@pytest.mark.parametrize("manifest", RUNS, ids=lambda p: p.parent.name)
def test_the_new_cards_runs_ten_percent_worse_fail(manifest, name):
    fails, _n = judge(_hopper_h200(), None, whole_run(manifest), {name: WORSE[name]})
    assert [n for n, *_ in fails] == [name]
