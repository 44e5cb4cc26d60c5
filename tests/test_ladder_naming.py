"""A latency level is named only from evidence that it is that level (issue 20, item 2).

A ladder cut short (a slow simulator runs only the small footprints; Accel-Sim with the
hopper config reached 64 KiB) shows one plateau: it must not come out as ``lat.dram`` at
confidence 1.0. It is reported as what it may be, unresolved, and DRAM as not reached."""

from __future__ import annotations

import pytest
from gpumem.experiments.latency import LatencyLadder
from gpumem.plugin.registry import get_plugins
from gpumem.results.io import open_raw


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    from gpumem.cli import main

    out = tmp_path_factory.mktemp("ladder") / "run"
    assert main(["run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
                 "--out", str(out)]) == 0
    (nc,) = out.rglob("*.nc")
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    return cfg, LatencyLadder(), open_raw(nc).load()


def _found(exp, raw) -> dict:
    return {f.name: f for f in exp.analyze(raw)}


def test_the_whole_ladder_names_every_level(ladder):
    cfg, exp, raw = ladder
    f = _found(exp, raw)
    for name in ("lat.l1", "lat.l2", "lat.l2_far", "lat.dram"):
        assert f[name].resolved, name
    assert abs(f["lat.dram"].value - cfg.dram.latency) < 0.05 * cfg.dram.latency


@pytest.mark.parametrize("top", [64 << 10, 1 << 20])
def test_a_ladder_that_stays_in_the_l1_names_no_dram(ladder, top):
    """Footprints up to 64 KiB or 1 MiB: one plateau (the H200's L1 holds 210 KB) or the L1
    and part of the L2; neither ends in a plateau past the L2."""
    _cfg, exp, raw = ladder
    short = raw.sel(footprint=raw["footprint"][raw["footprint"] <= top])
    f = _found(exp, short)
    assert not f["lat.dram"].resolved
    assert "not reached" in f["lat.dram"].note
    assert f["lat.dram"].confidence == 0.0
    cfg = ladder[0]
    if top < 200 << 10:  # one plateau, no knee after it: which level it is stays open
        level, truth = f["lat.l1"], cfg.level("l1d").hit_latency
        assert "lat.l2" not in f
    else:  # the L1's knee names the L1; the plateau after it has none
        assert f["lat.l1"].resolved
        level, truth = f["lat.l2"], cfg.level("l2").hit_latency
    assert not level.resolved and "no knee" in level.note
    (candidate,) = level.candidates
    assert candidate == pytest.approx(truth, rel=0.03)  # what the plateau's level takes
