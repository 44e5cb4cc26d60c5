"""Eight runs of ``gpumem run --arch hopper all`` on four more healthy H200s (tests/data/
h200-fleet: GPU-b94ce5a3, GPU-2a1a8180, GPU-f8f6bfbd, GPU-9b4523da, two runs each in one GPU
job, 2026-12-04; manifests only) pass every value hopper expects of an H200, re-judged with
today's bands (the fleet's medians, bands from gpumem.contracts.allowances): none fails. Two
of them read DRAM 3.4 % slower than the others (lat.dram 703-705 cycles against 678-683)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import status_of
from gpumem.plugin.registry import get_plugins

FLEET = Path(__file__).parent / "data" / "h200-fleet"
RUNS = sorted(FLEET.glob("*/manifest.json"))


def _reference() -> dict:
    dev = DeviceInfo(kind="cuda", name="NVIDIA H200", compute_capability="9.0", sm_count=132,
                     l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                     peak_bandwidth_gbs=4814.0)
    return {e.name: e for e in get_plugins().expected_values("hopper", dev)}


def test_eight_runs_on_four_cards():
    cards = {next(iter(json.loads(m.read_text())["entries"].values()))["device"]
             for m in RUNS}
    assert len(RUNS) == 8 and len(cards) == 4


@pytest.mark.parametrize("manifest", RUNS, ids=lambda p: p.parent.name)
def test_no_reference_value_fails_on_a_healthy_card(manifest):
    ref = _reference()
    judged, bad = 0, []
    for e in json.loads(manifest.read_text())["entries"].values():
        for name, f in (e.get("findings") or {}).items():
            if name not in ref or f["value"] is None:
                continue
            index = (f["index"]["dim"], f["index"]["values"]) if f.get("index") else None
            interval = tuple(f["interval"]) if f.get("interval") else None
            judged += 1
            if status_of(f["value"], ref[name], interval, index) == "fail":
                bad.append((name, f["value"], ref[name].value))
    assert judged >= 60 and not bad, bad
