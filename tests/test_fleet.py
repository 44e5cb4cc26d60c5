"""``gpumem run --devices``: one process per GPU, one run directory, and a GPU that fails or
crashes stops nothing else. The GPUs are the fixture backend ``fakegpu`` (simulated GPUs of a
fake node, tests/fixtures/dists/gpumem-fakenode), so this runs without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpumem.results.store import RunStore
from helpers import gpumem_subprocess

DISTS = Path(__file__).parent / "fixtures" / "dists"


@pytest.fixture(scope="session")
def fakenode_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("fakenode-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--no-input",
                    "--target", str(site), str(DISTS / "gpumem-fakenode")], check=True,
                   env={**os.environ, "PIP_NO_INDEX": "1"})
    return site


def _run(site, out, *extra, env=None):
    return gpumem_subprocess(["run", "--arch", "hopper", "latency", "--quick", "--device",
                              "fakegpu", "--out", str(out), *extra], site=site, env=env)


@pytest.mark.slow  # a gpumem process per simulated GPU, three, and compare: 27 s of CPU
def test_every_gpu_gets_its_process_and_its_results(fakenode_site, tmp_path):
    out = tmp_path / "node"
    res = _run(fakenode_site, out, "--devices", "all")
    assert res.returncode == 0, res.stderr + res.stdout
    entries = RunStore(out).entries()
    devices = sorted({e.data["device"] for e in entries})
    assert len(devices) == 3 and all(e.status == "complete" for e in entries)
    assert sorted(p.name for p in (out / "logs").iterdir()) == \
        ["fakegpu0.log", "fakegpu1.log", "fakegpu2.log"]
    cmp = gpumem_subprocess(["compare", str(out), "--json"], site=fakenode_site)
    assert cmp.returncode == 0, cmp.stderr
    data = json.loads(cmp.stdout)
    assert len(data["runs"]) == 3                       # one column per GPU
    row = next(r for r in data["rows"] if r["finding"] == "lat.l1")
    assert len(set(row["values"].values())) == 1        # three identical simulated GPUs


@pytest.mark.slow  # a gpumem process per simulated GPU, three, and compare: 19 s of CPU
def test_the_peer_matrix_of_a_node(fakenode_site, tmp_path):
    """p2p on every GPU: each writes its row; local reads are the fastest of each row."""
    out = tmp_path / "node"
    res = gpumem_subprocess(["run", "--arch", "hopper", "p2p", "--quick", "--device", "fakegpu",
                             "--devices", "all", "--out", str(out)], site=fakenode_site)
    assert res.returncode == 0, res.stderr + res.stdout
    cmp = json.loads(gpumem_subprocess(["compare", str(out), "--json"],
                                       site=fakenode_site).stdout)
    rows = {r["finding"]: r for r in cmp["rows"]}
    lat = rows["p2p.latency_dram"]["values"]
    assert len(lat) == 3
    for i, (_label, row) in enumerate(sorted(lat.items())):
        assert row[i] == min(row) and max(row) == row[i] + 900   # planted link: +900 cycles


@pytest.mark.slow  # a gpumem process per simulated GPU, three: 13 s of CPU
def test_one_gpu_failing_and_one_crashing_stop_nothing_else(fakenode_site, tmp_path):
    out = tmp_path / "node"
    res = _run(fakenode_site, out, "--devices", "0,1,2",
               env={"GPUMEM_FAKENODE_UNAVAILABLE": "2", "GPUMEM_FAKENODE_CRASH": "1"})
    assert res.returncode == 1
    assert "2 of 3 device(s) did not complete" in res.stderr
    assert "crashed (exit 3)" in res.stdout and "unavailable" in res.stdout
    entries = RunStore(out).entries()
    done = [e for e in entries if e.status == "complete"]
    assert len(done) == 1 and done[0].data["device"] == "fakegpu-fake-h200-00000000"
    assert (out / done[0].data["file"]).is_file()
    assert "does not answer" in (out / "logs" / "fakegpu2.log").read_text()


def test_devices_usage_errors(fakenode_site, tmp_path, cli, monkeypatch):
    """Refused before any process starts: in this process, the fake node's plugin on
    sys.path (no Python start of 3 s per refusal)."""
    monkeypatch.syspath_prepend(str(fakenode_site))
    args = ("run", "--arch", "hopper", "latency", "--quick", "--device", "fakegpu", "--out",
            str(tmp_path / "x"))
    res = cli(*args, "--devices", "7")
    assert res.code == 2 and "no hopper GPU fakegpu:7" in res.err
    res = cli(*args, "--devices", "0", "--executor", "dask")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
