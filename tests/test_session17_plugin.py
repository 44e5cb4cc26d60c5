"""The plugin `gpumem plugin new` wrote on an H200 from two runs of one card (issue 42, the
first check of "done"), kept as written (tests/data/h200-session17/plugin-h200t): its values
hold on that card's next two runs and on two runs each of two other cards, judged again here
from the runs' manifests as `--check` judged them on the GPU; and what those runs recorded
says the same (no fail, every measured finding with an interval)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import from_dict, status_of

DATA = Path(__file__).parent / "data" / "h200-session17"
PLUGIN = DATA / "plugin-h200t" / "src" / "gpumem_h200t" / "expected.py"
MADE_FROM = ("gpuc49e3-gen1", "gpuc49e3-gen2")
SAME_CARD = ("gpuc49e3-gen3", "gpuc49e3-gen4")
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", compute_capability="9.0", sm_count=132,
                  l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                  peak_bandwidth_gbs=4814.0)


def _expected():
    import sys

    spec = importlib.util.spec_from_file_location("h200t_expected", PLUGIN)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in data
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = keep
    return {e.name: e for e in mod.expected_values(H200)}, mod


def _other_card() -> list[str]:
    return sorted(p.name for p in DATA.iterdir()
                  if p.is_dir() and p.name.endswith(("other1", "other2")))


def _judge(run: str):
    expected, _mod = _expected()
    m = json.loads((DATA / run / "manifest.json").read_text())
    fails, judged = [], 0
    for e in m["entries"].values():
        for name, d in (e.get("findings") or {}).items():
            f = from_dict(name, d)
            if name not in expected or not f.resolved:
                continue
            judged += 1
            if status_of(f.value, expected[name], f.interval, f.index) == "fail":
                fails.append((name, f.value, expected[name].value, expected[name].rel_tol))
    return fails, judged


def test_the_plugin_names_no_local_path_and_its_runs_by_card_date_and_id():
    _expected_values, mod = _expected()
    assert len(mod.RUNS) == 2 and all(r.startswith("GPU-c49e3db9 2026-12-04 #")
                                      for r in mod.RUNS)
    for path in (DATA / "plugin-h200t").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".toml", ".md"):
            text = path.read_text()
            assert "/root/" not in text and "/out/" not in text, path


@pytest.mark.parametrize("run", [*SAME_CARD, *_other_card()])
def test_the_plugin_holds_on_the_cards_next_runs_and_on_another_card(run):
    fails, judged = _judge(run)
    assert judged >= 60 and not fails, fails


def test_two_other_cards_runs_were_made():
    """GPU-f3cb52dc's two and GPU-59b6bb52's two (other1, other2 of each)."""
    runs = _other_card()
    assert len(runs) == 4 and len({r.split("-")[0] for r in runs}) == 2


@pytest.mark.parametrize("run", [*SAME_CARD, *_other_card()])
def test_what_the_checked_runs_recorded(run):
    m = json.loads((DATA / run / "manifest.json").read_text())
    assert m["runs"][0]["arch"] == "h200t"
    rows = [(n, f) for e in m["entries"].values() for n, f in (e.get("findings") or {}).items()]
    assert not [n for n, f in rows if f["status"] in ("fail", "contended")]
    assert not [n for n, f in rows if f["kind"] == "measured" and f.get("value") is not None
                and "interval" not in f]
