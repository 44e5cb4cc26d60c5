"""``p2p``: loads from another GPU's memory, on a simulated node with a planted link."""

from __future__ import annotations

import pytest
from gpumem.contracts.device import ChaseRequest, StreamRequest
from gpumem.plugin.registry import get_plugins
from gpumem.run.runner import RunRequest, run
from gpumem.sim import Interconnect, SimConfig
from gpumem.sim.device import SimDevice


def _node(tmp_path, peers=1, latency=900.0, bw=450.0):
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.interconnect = Interconnect(peers=peers, latency=latency, bandwidth_gbs=bw)
    path = tmp_path / "node.toml"
    cfg.validate().save(path)
    return path


def test_planted_link_latency_and_bandwidth_are_found(tmp_path):
    rep = run(RunRequest("hopper", ["p2p"], device="sim", sim_config=_node(tmp_path),
                         out=tmp_path / "r"), plugins=get_plugins())
    f = {x.name: x for o in rep.outcomes for x in o.findings}
    local, remote = f["p2p.latency_dram"].value
    assert remote - local == pytest.approx(900.0, abs=2)     # the link's round trip
    assert f["p2p.latency_l2"].value[1] - f["p2p.latency_l2"].value[0] == pytest.approx(900, abs=2)
    bw_local, bw_remote = f["p2p.read_bw"].value
    assert bw_remote == pytest.approx(450.0, rel=0.05) and bw_local > 5 * bw_remote
    assert f["p2p.remote_bw_ratio"].value < 0.2


def test_a_lone_gpu_skips_p2p(tmp_path):
    rep = run(RunRequest("hopper", ["p2p"], device="sim", out=tmp_path / "r"),
              plugins=get_plugins())
    assert [o.status for o in rep.outcomes] == ["skipped"]
    assert "needs another GPU of the node it can load from (peer access" in rep.outcomes[0].error


def test_a_peer_outside_the_node_is_skipped_and_bad_peers_rejected(tmp_path):
    dev = SimDevice(SimConfig.load(_node(tmp_path)), "hopper")
    from gpumem.contracts.errors import PointSkipped

    with pytest.raises(PointSkipped, match="no peer GPU 5"):
        dev.pointer_chase(ChaseRequest(footprint=4096, stride=64, record=8, peer=5))
    with pytest.raises(ValueError, match="peer must be"):
        StreamRequest(footprint=1 << 20, ctas=1, threads=32, peer=-2).validate()
