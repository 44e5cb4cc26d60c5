"""hopper's H100 values against whole runs of H100s (tests/data/h100-s26: two cards, two runs
each; tests/data/h100-s27: a third card, two runs with l2_bandwidth; 2026-12-06, the tool
gave H100s for H200 calls), and the H100s' own learned spreads
(allowances-nvidia-h100-80gb-hbm3.json, from the whole runs of tests/data/h100-s26..s29 and
h100-s33: twelve cards), which a plugin made from H100 runs takes and hopper's H100 fleet values are.

The first H100 runs gpumem made under ``--check`` failed one published value on every run:
the H100 study's K = 8 over K = 2 drop (-35 %) was judged on the coalesced ordering, which
reads 1.00 on an H100, while gpumem finds the drop in the per-thread contiguous one
(0.627-0.634), as its own reference run says (tests/test_reference_run.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from gpumem.authoring.held_out import REGRESSIONS, judge, whole_run
from gpumem.authoring.new import derive_values
from gpumem.contracts.allowances import learned, learned_for
from gpumem.contracts.device import DeviceInfo
from gpumem.plugin.registry import get_plugins
from helpers import benchmark_script

DATA = Path(__file__).parent / "data" / "h100-s26"
RUNS = sorted([*DATA.glob("gpu*-job[23]/all*/manifest.json"),
               *DATA.parent.glob("h100-s27/gpu*/all*/manifest.json")])
H100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", compute_capability="9.0",
                  sm_count=132, l2_bytes=50 << 20, memory_bytes=80 << 30, clock_mhz=1980.0,
                  peak_bandwidth_gbs=3352.3)


def _hopper_h100(name: str = H100.name):
    return {e.name: ("", e) for e in get_plugins().expected_values(
        "hopper", replace(H100, name=name))}


def test_the_committed_h100_runs_are_three_cards_twice():
    runs = [whole_run(m) for m in RUNS]
    assert len(runs) == 6 and len({r.card for r in runs}) == 3


@pytest.mark.parametrize("manifest", RUNS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_hoppers_h100_values_pass_a_healthy_h100s_run(manifest):
    ref = _hopper_h100()
    fails, judged = judge(ref, None, whole_run(manifest))
    assert judged >= 15 and not fails, fails


def test_the_ilp_drop_is_judged_on_the_ordering_that_shows_it():
    """The H100 study's published drop, as an H100 gpumem has no fleet of (a PCIe card) is
    judged."""
    ref = _hopper_h100("NVIDIA H100 PCIe")
    _x, e = ref["ilp.k8_vs_k2"]
    assert e.index == ("order", ("thread",)) and e.source.startswith("Manjunath")
    run = whole_run(RUNS[0])
    (f,) = [f for (_x, n), f in run.source.findings.items() if n == "ilp.k8_vs_k2"]
    ratio = dict(zip(f.index[1], f.value, strict=True))
    assert ratio["thread"] < 0.7 < 0.95 < min(ratio["coalesced"], ratio["warp"])
    fails, _n = judge(ref, None, run, {"ilp.k8_vs_k2": 1.5})  # most of the drop gone: caught
    assert any(n == "ilp.k8_vs_k2" for n, *_ in fails)


# -- the H100s' own spreads (2026-12-06): twelve cards' whole runs, learned as the H200s' are --

def _h100_whole_runs():
    mod = benchmark_script("card_allowances")
    return mod, [whole_run(f / "manifest.json") for f in mod.default_folders(mod.H100)]


@pytest.fixture(scope="module")
def h100_held_out():
    """Each H100 card's plugin, made from two of its runs with the spreads learned from the
    other H100s only, judged on every other H100's whole runs at the shipped H100 Z."""
    from gpumem.authoring.held_out import held_out
    from gpumem.authoring.learn import read_runs

    mod, runs = _h100_whole_runs()
    # what the H100 allowances learn from: the whole runs and the ladders' runs
    folders, _whole, _out = mod.PRODUCTS[H100.product]
    measurements, dropped = read_runs(get_plugins(), mod.default_folders(folders))
    return runs, held_out(measurements, dropped, runs, learned(H100.product)["band_z"])


def test_the_h100s_spreads_are_their_own():
    """A plugin made from H100 runs takes the H100s' learned spreads, not the H200s': H100s'
    L2 latencies lie 277-290 cycles over seventeen cards (4.6 %), fifteen H200s' within 1.8 %
    (3.2 % with a sixteenth, GPU-1589473f at 292)."""
    h100, h200 = learned(H100.product), learned()
    assert h100["product"] == "nvidia-h100-80gb-hbm3" and len(h100["cards"]) >= 10
    assert h200["product"] == "nvidia-h200"
    assert learned_for([H100.name]) == h100 and learned_for(["NVIDIA H200"]) == h200
    assert learned_for([H100.name, "NVIDIA H200"])["widest"]  # two models: the widest
    assert learned("../../allowances") == h200  # a product is a name, never a path
    assert h100["findings"]["lat.l2"]["card_range"] > 1.4 * h200["findings"]["lat.l2"][
        "card_range"]
    _mod, runs = _h100_whole_runs()
    values, _left = derive_values([r.source for r in runs if r.card == "gpu88b76"])
    lat, bw = ({v.name: v for v in values}[n] for n in ("lat.l2", "bw.l2"))
    assert "nvidia-h100-80gb-hbm3 cards" in lat.source
    assert "allowances-nvidia-h100-80gb-hbm3.json" in lat.source
    # each class its own Z: the latencies' tail (where the chasing SM sits) is not the
    # bandwidths'
    assert "+ (4 x sqrt(" in lat.source and "+ (2.2 x sqrt(" in bw.source


def test_the_h200s_spreads_failed_healthy_h100s():
    """Why: each H100 card's plugin made with the H200s' spreads failed other healthy
    H100s' runs (135 judgements over twelve cards; L2 latency 288-290 against 277-280)."""
    from gpumem.authoring.held_out import pairs, plugin

    _mod, runs = _h100_whole_runs()
    fails = []
    for card, pair in pairs(runs).items():
        expected, versions = plugin(pair, learned())
        for other in runs:
            if other.card != card:
                fails += [f[0] for f in judge(expected, versions, other)[0]]
    assert len(fails) > 20 and "lat.l2" in fails


def test_a_plugin_from_an_h100_holds_the_other_h100s(h100_held_out):
    """At the Zs learned held out on them, each run's interval in quadrature with the spread
    (latencies 4.0, the largest tried; ratios and capacities 2.6, choices 2.5, bandwidths
    2.2; seventeen cards, the ladder processes of the thirteenth to seventeenth among the
    spreads' runs, as the allowances learn them): of 13,044 judgements two fail, both
    GPU-d9505's distributed shared memory latency (216.3 cycles where the plugin of
    GPU-6cc50, 209.3, allows 7 less): a card unlike any other in one finding. (With eleven
    cards it was GPU-fd311's SM-map near latency, 455 cycles where ten read 459-460.)"""
    _runs, got = h100_held_out
    assert got["judged"] >= 10000
    assert set(got["healthy_fails"]) <= {"l2.sm_map_near_latency", "lat.dsmem",
                                         "dsmem.remote_extra"}
    assert sum(got["healthy_fails"].values()) <= 2


@pytest.mark.parametrize("name", [n for n in REGRESSIONS if n != "lat.l2"])
def test_an_h100_run_ten_percent_worse_fails_under_every_h100_plugin(h100_held_out, name):
    _runs, got = h100_held_out
    assert got["tried"][name] >= 60 and not got["missed"][name], got["missed"][name]


def test_an_l2_latency_ten_percent_longer_is_caught_by_most_h100_plugins(h100_held_out):
    """H100s' L2 latencies lie 277-290 cycles card to card, and at the Z that holds every
    healthy H100 a plugin's band is 8-9 % wide, so a run 10 % longer can still reach into
    it: 18 of 119 such runs are undecided or pass under a one-card plugin (24 with each
    run's interval added to the spread, not in quadrature; the H100 fleet's
    values, hopper's, catch them: below)."""
    _runs, got = h100_held_out
    assert len(got["missed"]["lat.l2"]) <= 0.35 * got["tried"]["lat.l2"]


def test_hoppers_h100_values_are_the_h100_fleets():
    ref = _hopper_h100()
    fleet = [n for n, (_x, e) in ref.items() if e.source.startswith("gpumem on healthy H100")]
    assert len(fleet) >= 50 and {"lat.l2", "lat.dram", "bw.l2", "bw.dram_read"} <= set(fleet)
    _x, e = ref["lat.l2_ns"]
    assert "published beside it: Manjunath" in e.source  # the study's 145 ns beside
    pcie = _hopper_h100("NVIDIA H100 PCIe")  # a model gpumem has no fleet of: published only
    assert not any(e.source.startswith("gpumem on healthy") for _x, e in pcie.values())


@pytest.mark.parametrize("name", REGRESSIONS)
@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_an_h100_run_shifted_ten_percent_fails_under_hoppers_h100_values(name, factor):
    """Every healthy H100 run passes the H100 fleet's values (test above), and each run
    made 10 % worse or better fails them, but for the card of the shortest L2 latency
    (GPU-88b76, 277 cycles) made 10 % longer: 304.7 against the band's 303.7, its interval
    reaching in (undecided)."""
    ref = _hopper_h100()
    _mod, runs = _h100_whole_runs()
    for run in runs:
        found = [f for (_x, n), f in run.source.findings.items() if n == name]
        if not found:
            continue
        fails, _n = judge(ref, None, run, {name: factor})
        if (name, factor) == ("lat.l2", 1.1) and found[0].value <= 277:
            continue
        assert any(n == name for n, *_ in fails), (run.card, run.source.label, name, factor)
