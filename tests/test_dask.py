"""``--executor dask``: a simulator's sweep points on a Dask cluster (a LocalCluster the test
starts) give the same datasets and findings as a local run, even when a worker is killed
mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import xarray as xr

distributed = pytest.importorskip("distributed")

from gpumem.plugin.registry import get_plugins  # noqa: E402
from gpumem.run.runner import RunRequest, run  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40) as c:
        yield c


def _raw(run_dir):
    files = sorted(run_dir.glob("*/*.nc"))
    assert files
    return {f.name.split("-")[0]: xr.open_dataset(f) for f in files}


def _same_data(a, b):
    keep = ("gpumem_executor", "date_created", "date_modified", "history", "gpumem_argv")
    for name in a:
        x = a[name].drop_attrs() if hasattr(a[name], "drop_attrs") else a[name]
        y = b[name].drop_attrs() if hasattr(b[name], "drop_attrs") else b[name]
        assert x.identical(y), name
        assert {k: v for k, v in a[name].attrs.items() if k not in keep and "time" not in k
                and not k.startswith(("before_", "after_"))}.keys() == \
            {k: v for k, v in b[name].attrs.items() if k not in keep and "time" not in k
             and not k.startswith(("before_", "after_"))}.keys()


@pytest.mark.slow  # a LocalCluster of two worker processes (its start and stop: 15 s of CPU)
def test_cluster_run_equals_local_run(cluster, tmp_path):
    req = dict(arch="hopper", experiments=["latency", "bandwidth"], device="sim", quick=True)
    local = run(RunRequest(**req, out=tmp_path / "local"), plugins=get_plugins())
    remote = run(RunRequest(**req, out=tmp_path / "dask", executor="dask",
                            scheduler=cluster.scheduler_address), plugins=get_plugins())
    a, b = _raw(local.run_dir), _raw(remote.run_dir)
    assert a.keys() == b.keys() == {"latency", "bandwidth"}
    _same_data(a, b)
    assert b["latency"].attrs["gpumem_executor"].startswith("dask tcp://")
    fa = {(o.experiment, f.name): f.value for o in local.outcomes for f in o.findings}
    fb = {(o.experiment, f.name): f.value for o in remote.outcomes for f in o.findings}
    assert fa == fb and fa


@pytest.mark.slow  # the LocalCluster above, a worker killed and restarted: 10 s of CPU more
def test_a_worker_killed_mid_run_loses_no_point(cluster, tmp_path):
    from distributed import Client

    local = run(RunRequest("hopper", ["latency"], device="sim", out=tmp_path / "local"),
                plugins=get_plugins())
    box = {}

    def go():
        box["report"] = run(RunRequest("hopper", ["latency"], device="sim",
                                       out=tmp_path / "dask", executor="dask",
                                       scheduler=cluster.scheduler_address),
                            plugins=get_plugins())

    t = threading.Thread(target=go)
    t.start()
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:    # wait until points are being computed
            if any(client.processing().values()):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)   # the nanny starts a new worker
        t.join(timeout=300)
        assert t.is_alive() is False and "report" in box
        client.wait_for_workers(2, timeout=60)
        assert pids[victim] not in client.run(os.getpid).values()  # it did die
    report = box["report"]
    assert [o.status for o in report.outcomes] == ["complete"], \
        [o.error for o in report.outcomes]
    _same_data(_raw(local.run_dir), _raw(report.run_dir))


@pytest.mark.slow  # the LocalCluster above: a few simulated chases on it
def test_points_whose_device_spec_was_lost_are_submitted_again(cluster):
    """CI once lost a run this way: the worker killed held the only copy of the device's
    scattered spec ("Removing worker ... caused the cluster to lose scattered data"), and
    every point waiting on it was cancelled. Here the spec is cancelled before the run: each
    point still comes back once, computed on a spec scattered anew."""
    from distributed import Client
    from gpumem.contracts.experiment import RunContext
    from gpumem.experiments.latency import LatencyLadder
    from gpumem.results.schema import POINT_OK
    from gpumem.run.executors import DaskPoints
    from gpumem.sim.device import SimDevice

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = SimDevice(cfg, "hopper")
    pts = [{"order": "sequential", "footprint": f} for f in (4096, 65536, 1 << 20)]
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        points = DaskPoints(client, dev.reopen_spec())
        lost = points._spec_future
        client.cancel(list(lost.values()) if isinstance(lost, dict) else [lost])
        done: list[int] = []
        got = points.run(LatencyLadder(), pts, RunContext("hopper", dev.info, quick=True),
                         lambda: done.append(1))
        assert points._spec_future is not lost
    assert len(got) == len(pts) == len(done)
    assert all(status == POINT_OK for status, _reason, _values in got.values()), got


@pytest.mark.slow  # the LocalCluster above
def test_a_broadcast_that_meets_a_killed_worker_is_tried_again(cluster, monkeypatch):
    """CI lost a run this way: re-scattering the spec right after a worker was killed failed
    on its closed connection ("CommClosedError: in <TCP (closed) ConnectionPool.scatter
    ...>: Stream is closed"). The broadcast is tried again, a second apart, a few times; a
    cluster that keeps failing still ends the run with the error."""
    from distributed import Client
    from distributed.comm.core import CommClosedError
    from gpumem.contracts.experiment import RunContext
    from gpumem.experiments.latency import LatencyLadder
    from gpumem.results.schema import POINT_OK
    from gpumem.run import executors
    from gpumem.sim.device import SimDevice

    monkeypatch.setattr(executors, "SCATTER_WAIT_S", 0.01, raising=False)
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = SimDevice(cfg, "hopper")
    pts = [{"order": "sequential", "footprint": f} for f in (4096, 65536)]
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        real = client.scatter
        fails = {"left": 2}

        def flaky(*args, **kwargs):
            if fails["left"]:
                fails["left"] -= 1
                raise CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is "
                                      "closed")
            return real(*args, **kwargs)

        monkeypatch.setattr(client, "scatter", flaky)
        points = executors.DaskPoints(client, dev.reopen_spec())
        got = points.run(LatencyLadder(), pts, RunContext("hopper", dev.info, quick=True),
                         lambda: None)
        assert fails["left"] == 0
        assert all(status == POINT_OK for status, _reason, _values in got.values()), got
        fails["left"] = executors.SPEC_LOSSES + 1  # never comes back: the error, not a hang
        with pytest.raises(CommClosedError):
            executors.DaskPoints(client, dev.reopen_spec())


def test_bad_scheduler_is_one_line_exit_2_and_writes_nothing(cli, tmp_path, monkeypatch):
    import distributed

    # gpumem waits 20 s for a scheduler; nothing listens on port 9: 2 s tell the same
    client = distributed.Client
    monkeypatch.setattr(distributed, "Client", lambda *a, **k: client(*a, **{**k, "timeout": "2s"}))
    res = cli("run", "--arch", "hopper", "latency", "--device", "sim", "--executor", "dask",
              "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "r"))
    assert res.code == 2 and "cannot connect" in res.err
    assert not (tmp_path / "r").exists()
    res = cli("run", "--arch", "hopper", "latency", "--device", "sim", "--executor", "dask",
              "--out", str(tmp_path / "r"))
    assert res.code == 2 and "--scheduler" in res.err
