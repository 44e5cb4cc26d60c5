"""The first H200 in about seventy calls (GPU-1589473f, tests/data/h200-s33): l2_twins on an
H200, and two whole runs, judged first by the H200 fleet learned without the card."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpumem.authoring.held_out import fleet_held_out, whole_run
from gpumem.contracts.allowances import learned
from helpers import twins_runs_reanalysed

DATA = Path(__file__).parent / "data" / "h200-s33" / "gpu15894-job"


def test_l2_twins_splits_every_pair_of_an_h200_at_the_h100s_slice_rate():
    """6 groups of two slices, each cut in 22 + 22 classes, 94 slices as l2_hash counted on
    two other H200s' pages, a slice answering 604-606 B/cycle as three H100s' do."""
    runs = twins_runs_reanalysed(DATA / "twins")
    assert len(runs) == 2
    for run in runs:
        f = {n: x for (_e, n), x in run.source.findings.items()}
        assert f["l2_twins.groups_tested"].value == 6 == f["l2_twins.groups_split"].value
        assert f["l2_twins.agreement"].value == 1.0 and f["l2_slices.slices"].value == 94
        rate = f["l2_twins.slice_bandwidth"]
        assert 600 <= rate.value <= 610 and rate.interval[1] - rate.interval[0] < 20


def test_the_fleet_without_it_failed_its_l2_latency_and_the_learned_fleet_holds_it():
    """Judged by the fleet made from the other cards at the latency Z those gave (2.0), both
    runs fail lat.l2 (292 cycles; the others' medians 280-285); learned with it, the fleet's
    latency Z is 2.9 and its runs hold."""
    from gpumem.authoring.learn import read_runs, summarize
    from gpumem.plugin.registry import get_plugins
    from helpers import benchmark_script

    mod = benchmark_script("card_allowances")
    measurements, dropped = read_runs(get_plugins(), mod.default_folders())
    mine = [whole_run(p) for p in sorted(DATA.glob("all*/manifest.json"))]
    assert {r.card for r in mine} == {"gpu15894"} and "gpu15894" in learned()["cards"]
    others = summarize([m for m in measurements if m["card"] != "gpu15894"], dropped)
    got = fleet_held_out(measurements, dropped, mine, 2.0, learnts={"gpu15894": others})
    assert got["healthy_fails"].get("lat.l2") == 2
    zs = learned()["band_z"]
    assert zs["fleet_by_class"]["latency"] == 2.9
    held = fleet_held_out(measurements, dropped, mine, zs, learnts={"gpu15894": others})
    assert "lat.l2" not in held["healthy_fails"]


@pytest.mark.slow  # l2_twins on the packaged H200 simulator: 15-20 s
def test_the_packaged_h200_simulator_queues_a_hammered_slice_as_the_card_does(cli, tmp_path):
    """The packaged config's slice queue is this card's rate (604.3 B/cycle, the median
    run's): on it l2_twins hammers each of the map's 8 groups of two slices and every line of
    a group waits 1,490-1,500 cycles, the card's slowed lines 1,458-1,517 (both runs). The
    map's pairs are one slice each (no SM told them apart by latency), so none splits: the
    simulator says so rather than inventing a split."""
    from gpumem.interop.compare import load_source
    from gpumem.plugin.registry import get_plugins

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    (l2,) = [c for c in cfg.caches if c.slices > 1]
    assert l2.slice_bandwidth == 604.3
    assert cli("run", "l2_twins", "--arch", "hopper", "--out", str(tmp_path)).code == 0
    f = {n: x for (_e, n), x in load_source(tmp_path).findings.items()}
    assert f["l2_twins.groups_tested"].value == 8 and f["l2_twins.groups_split"].value == 0
    assert all(1458 <= d <= 1517 for d in f["l2_twins.delay"].value)
