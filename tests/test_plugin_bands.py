"""Bands that hold on every healthy card and still catch a regression (issue 42, item 3 and
its test), judged held out (gpumem.authoring.held_out): for each committed card with two
whole runs, a plugin made from them with the spreads learned from the *other* cards only
passes every whole run of every other card (0 fail), and the same runs made 10 % worse in
lat.l2, lat.dram, bw.l1 or bw.l2 (a latency longer, a bandwidth shorter) fail under every
such plugin; under hopper's H200 values (the fleet's median) 10 % either way fails, in all
five. bw.dram_read is caught under most plugins, not all: the figure moves 3-4 % between
processes on one card, so a plugin made from a card's two slowest runs cannot both hold the
fastest card and fail it 10 % slower (gpumem.contracts.allowances, "Why Z").

The runs: the committed whole-run manifests of healthy H200s (tests/data/h200-fleet and
tests/data/h200-session17), judged experiment by experiment where both runs measured it with
one version."""

from __future__ import annotations

import pytest
from gpumem.authoring.held_out import REGRESSIONS, held_out, judge, pairs, plugin, whole_run
from gpumem.contracts.allowances import band_z, learned
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Finding, from_dict
from gpumem.plugin.registry import get_plugins
from helpers import benchmark_script

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", compute_capability="9.0", sm_count=132,
                  l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                  peak_bandwidth_gbs=4814.0)


def _script():
    return benchmark_script("card_allowances")


@pytest.fixture(scope="module")
def runs():
    mod = _script()
    return [whole_run(f / "manifest.json") for f in mod.default_folders(mod.WHOLE)
            if (f / "manifest.json").exists()]


@pytest.fixture(scope="module")
def judged(runs):
    from gpumem.authoring.learn import read_runs

    mod = _script()
    measurements, dropped = read_runs(get_plugins(), mod.default_folders())
    return held_out(measurements, dropped, runs)


def test_the_committed_runs_cover_enough_cards(runs):
    assert len({r.card for r in runs}) >= 8 and len(pairs(runs)) >= 8


def test_the_shipped_z_is_the_held_out_one():
    z = learned()["band_z"]
    assert band_z() == z["value"] == max(z["by_class"].values())
    assert all(2.0 <= x <= 4.0 for x in z["by_class"].values())
    assert band_z(cls="latency") == z["by_class"]["latency"]
    # each class's Z is the first at which its findings held: at the candidate before it,
    # some did not
    for cls, x in z["by_class"].items():
        if x > 2.0:
            before = z["healthy_fails_at_smaller"][str(round(x - 0.1, 1))]
            assert before.get(cls, 0) > 0, (cls, x, before)
    assert not z["healthy_fails"]


def test_a_plugin_from_each_cards_pair_passes_every_other_cards_runs(judged):
    assert judged["judged"] >= 10000 and not judged["healthy_fails"], judged["healthy_fails"]


@pytest.mark.parametrize("name", [n for n in REGRESSIONS if n != "bw.dram_read"])
def test_a_run_ten_percent_worse_fails_under_every_cards_plugin(judged, name):
    assert judged["tried"][name] >= 100 and not judged["missed"][name], judged["missed"][name]


def test_a_dram_read_ten_percent_slower_fails_unless_the_plugin_came_from_slow_runs(
        judged, runs):
    """bw.dram_read moves 3-4 % between processes on one card (GPU-c49e3db9: 4377-4546
    GB/s over six, each process's interval 0.4-1.9 % wide). Every pair missed comes from a
    plugin whose median lies in the slowest third of the healthy runs, and most are caught."""
    missed, tried = judged["missed"]["bw.dram_read"], judged["tried"]["bw.dram_read"]
    assert tried >= 100 and len(missed) <= 0.15 * tried, (len(missed), tried)
    healthy = sorted(float(f.value) for r in runs for (_x, n), f in r.source.findings.items()
                     if n == "bw.dram_read")
    slow = healthy[len(healthy) // 3]
    by_card = pairs(runs)
    for card in {c for c, _label in missed}:
        expected, _versions = plugin(by_card[card], None)
        assert expected["bw.dram_read"][1].value <= slow, (card, slow)


def _hopper_h200():
    return {e.name: ("", e) for e in get_plugins().expected_values("hopper", H200)}


def test_hoppers_h200_values_pass_every_committed_run(runs):
    ref = _hopper_h200()
    bad, n = [], 0
    for run in runs:
        fails, judged_n = judge(ref, None, run)
        n += judged_n
        bad += [(run.source.label, *f) for f in fails]
    assert n >= 1000 and not bad, bad


@pytest.mark.parametrize("name", REGRESSIONS)
@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_a_run_shifted_by_ten_percent_fails_under_hoppers_h200_values(runs, name, factor):
    ref = _hopper_h200()
    assert name in ref
    for run in runs:
        if not any(n == name for _x, n in run.source.findings):
            continue
        fails, _n = judge(ref, None, run, {name: factor})
        assert any(n == name for n, *_ in fails), (run.source.label, name, factor)


def test_the_generated_sources_name_each_part_of_the_band(runs):
    from gpumem.authoring.new import derive_values

    pair = next(iter(pairs(runs).values()))
    values, _left = derive_values([r.source for r in pair])
    v = {x.name: x for x in values}["lat.dram"]
    for part in ("the runs' own 95 % intervals", "card to card", "run to run", "cards"):
        assert part in v.source, v.source
    assert "/" not in v.source.split(":")[0]  # runs named by card, not by a local path


def test_a_finding_from_a_manifest_round_trips():
    f = Finding("lat.l2", 284.0, "cycle", interval=(283.0, 285.0), kind="measured")
    g = from_dict("lat.l2", f.as_dict())
    assert (g.value, g.interval, g.units, g.kind) == (284.0, (283.0, 285.0), "cycle",
                                                      "measured")


def test_the_fleets_values_made_without_a_card_hold_its_runs(runs):
    """hopper's H200 values are the fleet's (the median of the cards' medians): made from
    every card but one, at the fleet Zs learned so (``band_z.fleet_by_class``), they hold
    every whole run of the card left out."""
    from gpumem.authoring.held_out import fleet_held_out
    from gpumem.authoring.learn import read_runs

    mod = _script()
    measurements, dropped = read_runs(get_plugins(), mod.default_folders())
    got = fleet_held_out(measurements, dropped, runs, learned()["band_z"])
    assert got["judged"] >= 1000 and not got["healthy_fails"], got["healthy_fails"]
