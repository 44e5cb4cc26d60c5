"""The committed two-GPU H200 run (tests/data/h200x2-run: `gpumem run --arch hopper all
--devices all` on a node of two NVLink-connected H200s, 2026-11-29), analysed by today's code:
one result set per GPU, the peer-to-peer matrix, and the two GPUs side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpumem.interop.compare import load_sources

RUN = Path(__file__).parent / "data" / "h200x2-run"


@pytest.fixture(scope="module")
def gpus():
    sources = load_sources(RUN)
    return [{name: f for (_exp, name), f in s.findings.items()} for s in sources]


def test_one_complete_result_set_per_gpu():
    m = json.loads((RUN / "manifest.json").read_text())
    devices = {e["device"] for e in m["entries"].values()}
    assert len(devices) == 2
    assert {e["status"] for e in m["entries"].values()} == {"complete"}
    assert sorted(p.name for p in (RUN / "logs").iterdir()) == ["cuda0.log", "cuda1.log"]


def test_peer_matrix(gpus):
    """Row i: GPU i reading each GPU's memory. Local on the diagonal, NVLink off it: remote
    DRAM about 2.8x the local latency, reads at 370 GB/s of NVLink's 450 (18 links)."""
    for i, f in enumerate(gpus):
        lat = f["p2p.latency_dram"].value
        bw = f["p2p.read_bw"].value
        other = 1 - i
        assert f["p2p.latency_dram"].index[1] == [0, 1]
        assert lat[i] < lat[other] and 2.0 < lat[other] / lat[i] < 3.5
        assert f["p2p.latency_l2"].value[other] > 4 * f["p2p.latency_l2"].value[i]
        assert 300 < bw[other] < 450 < bw[i]


def test_same_model_same_structure(gpus):
    """Structural findings agree exactly; measured levels within a few percent."""
    a, b = gpus
    for name in ("lat.l1", "l2.fill_unit", "tlb_l1.entries", "tlb.page", "smem.banks",
                 "l1d.sector", "l2.partitions", "l2.sm_groups"):
        assert a[name].value == b[name].value, name
    for name in ("lat.dram", "bw.dram_read", "bw.smem", "lat.l2"):
        assert a[name].value == pytest.approx(b[name].value, rel=0.03), name
