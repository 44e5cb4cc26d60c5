"""``l2_bandwidth`` (issue 44, item 6): L2 reads where blocks on several SMs read each line.
Planted in the simulator (a rate for lines read from several SMs, a coalescer merging from
16 readers), the experiment gives each back; unplanted it reports the L2's one rate, and
``bw.l2`` (each block its own lines) is left as it was."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.device import StreamRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.l2_bandwidth import COALESCED, SHARED, L2Bandwidth
from gpumem.plugin.registry import get_plugins
from gpumem.sim.config import SimConfigError
from gpumem.sim.device import sim_device_info
from gpumem.sim.throughput import stream_model

#: Planted rates (bytes per cycle, whole GPU): above the L2's own (hopper's sim.toml: 4558.9)
#: as an H200's are (share 8: 9.5-10.2 TB/s, share 16-32: 17-27 TB/s, at 1980 MHz).
SHARED_BPC, COALESCED_BPC, COALESCE_FROM = 5100.0, 9800.0, 16


#: What hopper's sim.toml plants, TB/s: the median runs' of four whole runs on two H200s
#: (tests/data/h200-s33, h200-s37: 4944.7 and 11166.2 B/cycle at 1980 MHz, gpumem export sim)
H200_SHARED_TBS, H200_COALESCED_TBS = 9.79, 22.11


def _hopper(**l2):
    """hopper's packaged config without its shared and coalesced rates, then ``l2``'s."""
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    level = cfg.level("l2")
    level.shared_bandwidth, level.coalesced_share, level.coalesced_bandwidth = 0.0, 0, 0.0
    for k, v in l2.items():
        setattr(level, k, v)
    return cfg.validate()


def test_the_simulated_h200_reads_the_cards_shared_and_coalesced_rates(cli, tmp_path):
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim").validate()
    f = _findings(cli, tmp_path, cfg)
    assert f["bw.l2_shared"]["value"] / 1e3 == pytest.approx(H200_SHARED_TBS, rel=0.01)
    assert f["bw.l2_coalesced"]["value"] / 1e3 == pytest.approx(H200_COALESCED_TBS, rel=0.01)
    assert f["bw.l2"]["value"] < 0.95 * f["bw.l2_shared"]["value"]  # its own lines: 9.0


def _findings(cli, tmp_path, cfg) -> dict:
    path = tmp_path / "planted.toml"
    cfg.save(path)
    out = tmp_path / "run"
    assert cli("run", "--arch", "hopper", "l2_bandwidth", "bandwidth_levels", "--device",
               "sim", "--sim-config", str(path), "--out", str(out)).code == 0
    found = {}
    for nc in out.rglob("*.nc"):
        found.update(json.loads(cli("analyze", str(nc), "--json").out)["findings"])
    return found


def test_planted_shared_and_coalesced_rates_come_back(cli, tmp_path):
    cfg = _hopper(shared_bandwidth=SHARED_BPC, coalesced_share=COALESCE_FROM,
                  coalesced_bandwidth=COALESCED_BPC)
    f = _findings(cli, tmp_path, cfg)
    ghz = cfg.clock_mhz / 1e3
    assert f["bw.l2_shared"]["value"] == pytest.approx(SHARED_BPC * ghz, rel=0.02)
    assert f["bw.l2_coalesced"]["value"] == pytest.approx(COALESCED_BPC * ghz, rel=0.02)
    # each block its own lines: the L2's own rate, as before
    assert f["bw.l2"]["value"] == pytest.approx(cfg.level("l2").bandwidth * ghz, rel=0.02)
    for name in ("bw.l2_shared", "bw.l2_coalesced"):
        lo, hi = f[name]["interval"]
        assert lo <= f[name]["value"] <= hi and f[name]["precision"]["repeats"] >= 1
    assert "8 blocks" in f["bw.l2_shared"]["method"]
    assert "coalescer" in f["bw.l2_coalesced"]["method"]
    assert "blocks/SM" in f["bw.l2_shared"]["method"]  # the shape that won


def test_unplanted_every_share_reads_the_l2s_one_rate(cli, tmp_path):
    cfg = _hopper()
    f = _findings(cli, tmp_path, cfg)
    one = f["bw.l2"]["value"]
    assert f["bw.l2_shared"]["value"] == pytest.approx(one, rel=0.02)
    assert f["bw.l2_coalesced"]["value"] == pytest.approx(one, rel=0.02)


def test_the_model_merges_only_from_coalesced_share_readers():
    cfg = _hopper(shared_bandwidth=SHARED_BPC, coalesced_share=COALESCE_FROM,
                  coalesced_bandwidth=COALESCED_BPC)
    sms = sim_device_info(cfg).sm_count
    base = dict(footprint=8 << 20, ctas=4 * sms, threads=1024, ilp=8, width=16, path="cg",
                order="block")

    def caps(share):
        return stream_model(cfg, StreamRequest(**base, share=share)).caps

    assert caps(1)["l2"] == pytest.approx(cfg.level("l2").bandwidth)
    assert caps(8)["l2"] == pytest.approx(SHARED_BPC)
    assert caps(15)["l2"] == pytest.approx(SHARED_BPC)
    assert caps(16)["l2"] == pytest.approx(COALESCED_BPC)
    assert "l2.requests" in caps(8) and "l2.requests" not in caps(16)  # merged: no lookups
    # a DRAM-resident footprint is not served by the L2's copies
    far = stream_model(cfg, StreamRequest(**{**base, "footprint": 1 << 30}, share=8))
    assert far.serving == "dram" and far.caps.get("l2") == pytest.approx(
        cfg.level("l2").bandwidth)


@pytest.mark.parametrize("edit, message", [
    (dict(coalesced_share=16), "go together"),
    (dict(coalesced_bandwidth=9000.0), "go together"),
    (dict(coalesced_share=1, coalesced_bandwidth=9000.0), "must be >= 2"),
])
def test_the_coalescer_fields_are_checked(edit, message):
    with pytest.raises(SimConfigError, match=message):
        _hopper(**edit)


def test_an_sm_level_refuses_shared_reads():
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.level("l1d").shared_bandwidth = 100.0
    with pytest.raises(SimConfigError, match="GPU-scope"):
        cfg.validate()


def test_a_config_with_no_shared_keys_writes_none():
    assert "shared_bandwidth" not in _hopper().to_toml()
    assert "coalesced_share = 16" in _hopper(coalesced_share=16,
                                              coalesced_bandwidth=1.0).to_toml()


def test_the_plan_reads_up_to_half_the_l2_every_two_octaves():
    cfg = _hopper()
    info = sim_device_info(cfg)
    plan = L2Bandwidth().plan(RunContext("hopper", info))
    axes = {a.name: a.values for a in plan.axes}
    assert axes["share"] == (SHARED, COALESCED)
    foot = np.asarray(axes["footprint"], dtype=float)
    assert foot.max() == info.l2_bytes // 2
    assert np.all(np.diff(np.log2(foot))[:-1] == pytest.approx(2.0, abs=0.05))


def test_a_cycle_level_simulator_skips_every_point():
    info = replace(sim_device_info(_hopper()), cycles_per_second=1e6)  # as Accel-Sim's
    ctx = RunContext("hopper", info)
    assert ctx.slow
    point = {"share": SHARED, "ctas_per_sm": 1, "threads": 512, "ilp": 2,
             "footprint": 4 << 20}
    with pytest.raises(PointSkipped, match="cycle-level"):
        L2Bandwidth().prepare(None, point, ctx)  # type: ignore[arg-type]


def _raw(gbs: np.ndarray) -> xr.Dataset:
    """A raw dataset of two shares x one shape x two footprints x three repeats."""
    coords = {"share": [SHARED, COALESCED], "ctas_per_sm": [2], "threads": [512], "ilp": [8],
              "footprint": [1 << 20, 4 << 20], "repeat": [0, 1, 2]}
    return xr.Dataset({"gbs": (tuple(coords), gbs),
                       "point_status": (tuple(coords)[:-1], np.zeros(gbs.shape[:-1], int))},
                      coords=coords)


def test_each_share_reports_its_best_point_with_its_runs():
    gbs = np.full((2, 1, 1, 1, 2, 3), np.nan)
    gbs[0, ..., 0, :] = [9000.0, 9100.0, 9050.0]
    gbs[0, ..., 1, :] = [10000.0, 10100.0, 10050.0]
    gbs[1, ..., 1, :] = [20000.0, 20500.0, 19500.0]
    f = {x.name: x for x in L2Bandwidth().analyze(_raw(gbs))}
    assert f["bw.l2_shared"].value == pytest.approx(10050.0)
    assert f["bw.l2_shared"].interval[0] <= 10050.0 <= f["bw.l2_shared"].interval[1]
    assert "4096 KiB" in f["bw.l2_shared"].method
    assert f["bw.l2_coalesced"].value == pytest.approx(20000.0)


def test_a_share_that_measured_nothing_gives_no_finding():
    gbs = np.full((2, 1, 1, 1, 2, 3), np.nan)
    gbs[0, ..., 0, :] = [9000.0, 9100.0, 9050.0]
    names = [x.name for x in L2Bandwidth().analyze(_raw(gbs))]
    assert names == ["bw.l2_shared"]


def test_a_calibrated_config_takes_the_shared_and_coalesced_rates(cli, tmp_path):
    """``gpumem export sim`` (calibrate) sets the L2's shared and coalesced rates from the
    run's l2_bandwidth, so the simulated card reads them back; the coalescer at the readers
    the run measured merging at (32)."""
    from gpumem.interop.calibrate import calibrate
    from gpumem.interop.compare import load_source

    planted = _hopper(shared_bandwidth=SHARED_BPC, coalesced_share=COALESCE_FROM,
                      coalesced_bandwidth=COALESCED_BPC)
    path = tmp_path / "planted.toml"
    planted.save(path)
    out = tmp_path / "run"
    assert cli("run", "--arch", "hopper", "l2_bandwidth", "--device", "sim", "--sim-config",
               str(path), "--out", str(out)).code == 0
    cal = calibrate(_hopper(), load_source(out))
    l2 = cal.config.level("l2")
    assert l2.shared_bandwidth == pytest.approx(SHARED_BPC, rel=0.01)
    assert l2.coalesced_bandwidth == pytest.approx(COALESCED_BPC, rel=0.01)
    assert l2.coalesced_share == COALESCED
    assert cal.sources["cache:l2.shared_bandwidth"].startswith("l2_bandwidth/bw.l2_shared")
    cal.config.validate()
