"""Distributed shared memory experiments on the simulator, against planted latencies and
rates; devices without clusters skip them."""

from __future__ import annotations

import dataclasses
import json

import pytest
import xarray as xr
from gpumem.contracts.device import DsmemRequest
from gpumem.plugin.registry import get_plugins


def _planted(tmp_path, remote_latency: float, remote_rate: float, by_rank=(),
             own_rate: float = 0.0) -> tuple[str, object]:
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    smem = dataclasses.replace(cfg.smem, remote_latency=remote_latency,
                               remote_bytes_per_cycle=remote_rate, remote_rate_by_cluster=[],
                               remote_latency_by_rank=list(by_rank),
                               cluster_bytes_per_cycle=own_rate)
    cfg = dataclasses.replace(cfg, smem=smem).validate()
    path = tmp_path / "planted.toml"
    cfg.save(path)
    return str(path), cfg


@pytest.mark.parametrize("remote, rate", [(212.0, 16.4), (150.0, 40.0)])
def test_planted_remote_latency_and_rate_are_found(cli, tmp_path, remote, rate):
    conf, cfg = _planted(tmp_path, remote, rate)
    r = cli("run", "--arch", "hopper", "dsmem_latency", "dsmem_bandwidth", "--device", "sim",
            "--sim-config", conf, "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    found = {}
    for nc in sorted((tmp_path / "r").rglob("*.nc")):
        out = cli("analyze", str(nc), "--json")
        assert out.code == 0, out.err
        found.update(json.loads(out.out)["findings"])
        if "dsmem_latency" in nc.name:
            raw = xr.open_dataset(nc)
            # a cluster of 2 has no block 2 ranks away: skipped, not measured
            assert int(raw["point_status"].sel(cluster=2, distance=5)) != 0
            assert int(raw["point_status"].sel(cluster=8, distance=5)) == 0
    assert found["lat.dsmem"]["value"] == remote
    local = cfg.smem.cluster_latency or cfg.smem.latency
    assert found["lat.dsmem_local"]["value"] == local
    assert found["dsmem.remote_extra"]["value"] == pytest.approx(remote - local)
    assert found["dsmem.latency_by_distance"]["index"] == {"dim": "distance",
                                                           "values": list(range(8))}
    assert found["bw.dsmem"]["value"] == pytest.approx(rate * cfg.clock_mhz / 1e3, rel=0.01)
    assert found["dsmem.remote_fraction"]["value"] == pytest.approx(
        rate / cfg.smem.peak_bytes_per_cycle, rel=0.02)


def test_planted_rank_latencies_and_own_block_rate_are_found(cli, tmp_path):
    """smem.remote_latency_by_rank (a cluster of 8's loads rank by rank; an H200's differ by
    up to 5.4 cycles, the same on nine cards) comes back as dsmem.latency_by_distance, the
    other cluster sizes keep remote_latency; smem.cluster_bytes_per_cycle (an H200's own
    block through the cluster load: 123 of its shared memory's 128 B/cycle) as
    bw.dsmem_local and the remote fraction against it."""
    ranks = [220.0, 210.0, 205.0, 215.0, 230.0, 200.0, 225.0]
    conf, cfg = _planted(tmp_path, 212.0, 16.4, ranks, own_rate=100.0)
    r = cli("run", "--arch", "hopper", "dsmem_latency", "dsmem_bandwidth", "--device", "sim",
            "--sim-config", conf, "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    found = {}
    for nc in sorted((tmp_path / "r").rglob("*.nc")):
        found.update(json.loads(cli("analyze", str(nc), "--json").out)["findings"])
    local = cfg.smem.cluster_latency or cfg.smem.latency
    assert found["dsmem.latency_by_distance"]["value"] == [local, *ranks]
    ghz = cfg.clock_mhz / 1e3
    assert found["bw.dsmem_local"]["value"] == pytest.approx(100.0 * ghz, rel=0.01)
    assert found["dsmem.remote_fraction"]["value"] == pytest.approx(16.4 / 100.0, rel=0.02)
    from gpumem.sim.throughput import dsmem_model

    assert dsmem_model(cfg, DsmemRequest(cluster=4, distance=3))[0] == 212.0
    assert dsmem_model(cfg, DsmemRequest(cluster=8, distance=3))[0] == 205.0


def test_devices_without_clusters_skip_dsmem(cli, tmp_path):
    r = cli("run", "--arch", "fermi", "dsmem_latency", "dsmem_bandwidth", "--device", "sim",
            "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    assert "needs thread block clusters" in r.out


@pytest.mark.parametrize("kw, msg", [
    ({"cluster": 3}, "cluster must be"), ({"cluster": 2, "distance": 2}, "distance must be"),
    ({"kind": "bandwidth"}, "kind must be"), ({"warps": 33}, "warps must be"),
])
def test_bad_requests_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        DsmemRequest(**kw).validate()
