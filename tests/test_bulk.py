"""TMA bulk copies on the simulator: planted DRAM latency and bandwidth come back through
Little's law; devices before sm_90 skip the experiment."""

from __future__ import annotations

import dataclasses
import json

import pytest
from gpumem.contracts.device import BulkRequest
from gpumem.plugin.registry import get_plugins


@pytest.mark.parametrize("latency, gbs", [(617.0, 4800.0), (400.0, 2000.0)])
def test_planted_dram_latency_and_bandwidth_come_back(cli, tmp_path, latency, gbs):
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    # a plain Little's-law copy: the DRAM's latency and rate, none of the H200's fitted
    # bulk mechanisms (round trip, engine rate, issue interval, own ceiling, soft knee)
    cfg = dataclasses.replace(
        cfg, dram=dataclasses.replace(cfg.dram, latency=latency, bandwidth_gbs=gbs,
                                      bulk_efficiency=0.0, sharpness=0.0),
        throughput=dataclasses.replace(cfg.throughput, bulk_latency=0.0,
                                       bulk_bytes_per_cycle=0.0,
                                       bulk_issue_cycles=0.0)).validate()
    conf = tmp_path / "planted.toml"
    cfg.save(conf)
    r = cli("run", "--arch", "hopper", "bulk_copy", "--device", "sim", "--sim-config",
            str(conf), "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    (nc,) = (tmp_path / "r").rglob("*.nc")
    found = json.loads(cli("analyze", str(nc), "--json").out)["findings"]
    cap = gbs * cfg.dram.efficiency
    assert found["bw.dram_read_bulk"]["value"] == pytest.approx(cap, rel=0.02)
    assert found["bulk.latency_estimate"]["value"] == pytest.approx(latency, rel=0.03)
    # Little's law: reaching the cap takes about cap x latency bytes in flight, over the SMs
    need = cap * 1e9 / (cfg.clock_mhz * 1e6) * latency / cfg.sm_count
    assert 0.9 * need <= found["bulk.inflight_per_sm"]["value"] <= 4 * need


def test_devices_before_sm90_skip_bulk_copies(cli, tmp_path):
    r = cli("run", "--arch", "maxwell", "bulk_copy", "--device", "sim", "--out",
            str(tmp_path / "r"))
    assert r.code == 0, r.err
    # one line on stderr says why, naming the device and its compute capability
    assert "bulk_copy: skipped: needs the TMA's bulk copies (compute capability 9.0 or newer), " \
           "which sim gtx980 (compute capability 5.2) does not offer" in r.err


@pytest.mark.parametrize("kw, msg", [({"chunk": 24}, "multiple of 16"),
                                     ({"stages": 0}, "stages must be"),
                                     ({"footprint": 8}, "at least one chunk")])
def test_bad_requests_are_refused(kw, msg):
    args = {"footprint": 1 << 20, "chunk": 1024, "stages": 2, **kw}
    with pytest.raises(ValueError, match=msg):
        BulkRequest(**args).validate()
