"""The Accel-Sim device: finding the binary, opening configs, the probes, errors, workers.

Most tests run a fake ``accel-sim.out`` (tests/fixtures/fake_accelsim: it checks the command
line and the traces as the real one does, and either computes cycle counts from the trace or
replays a real log from tests/data/accelsim/logs). Tests marked ``real_binary`` run the real
simulator and are skipped unless ``GPUMEM_ACCELSIM`` names an executable.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.device import ChaseRequest, StreamRequest
from gpumem.contracts.errors import DeviceUnavailable, PointSkipped, ProbeUnsupported, UsageError
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, Var
from gpumem.results.schema import POINT_COUNTS, POINT_FAILED, POINT_OK, point_key
from gpumem.run.points import make_points
from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.device import WARP_CYCLE_SECTORS, AccelSimDevice, AccelSimSetup
from gpumem_accelsim.simulator import AccelSim
from gpumem_accelsim.stats import AccelSimRunError

DATA = Path(__file__).parent / "data" / "accelsim"
QV100 = DATA / "SM7_QV100"
FAKE = Path(__file__).parent / "fixtures" / "fake_accelsim" / "accel-sim.out"
#: read at import: the autouse fixture removes GPUMEM_ACCELSIM from every test's environment
REAL = os.environ.get("GPUMEM_ACCELSIM", "").strip()
real_binary = pytest.mark.skipif(
    not (REAL and os.path.isfile(REAL) and os.access(REAL, os.X_OK)),
    reason="needs GPUMEM_ACCELSIM naming an Accel-Sim binary")

L1_CHASE = ChaseRequest(footprint=4096, stride=128, record=256, warmup=32, path="ca",
                        fine_grained=False)
L2_CHASE = ChaseRequest(footprint=4096, stride=128, record=128, warmup=32, path="cg",
                        fine_grained=False)
DRAM_CHASE = ChaseRequest(footprint=64 << 20, stride=4096, record=200, order="random",
                          path="ca", fine_grained=False)


@pytest.fixture
def fake(fake_accelsim, monkeypatch) -> Path:
    """The fake Accel-Sim (conftest), its plans sized as for hardware (test_slow_plans)."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "0")
    return fake_accelsim


@pytest.fixture
def no_binary(tmp_path, monkeypatch) -> None:
    """Neither ``GPUMEM_ACCELSIM`` nor an ``accel-sim.out`` on PATH."""
    monkeypatch.delenv("GPUMEM_ACCELSIM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))


@pytest.fixture
def qv100() -> AccelSimConfig:
    return AccelSimConfig.load(QV100)


def _device(qv100: AccelSimConfig, **setup: Any) -> AccelSimDevice:
    if not setup:
        return AccelSim().create_device("volta", qv100)  # type: ignore[return-value]
    binary = os.environ["GPUMEM_ACCELSIM"]
    return AccelSimDevice(AccelSimSetup(qv100, binary, **setup), "volta")


# ---- finding the binary -------------------------------------------------------------------

def test_available_with_a_binary(fake):
    ok, what = AccelSim().available()
    assert ok and what == f"accelsim-commit-fake_modified_0.0 ({fake})"


def test_unavailable_says_why_on_one_line(no_binary, tmp_path, monkeypatch, qv100):
    ok, why = AccelSim().available()
    assert not ok and "not installed" in why and "GPUMEM_ACCELSIM" in why
    with pytest.raises(DeviceUnavailable, match="not installed") as e:
        AccelSim().create_device("volta", qv100)
    assert "\n" not in str(e.value)

    monkeypatch.setenv("GPUMEM_ACCELSIM", str(tmp_path / "nowhere" / "accel-sim.out"))
    ok, why = AccelSim().available()
    assert not ok and why.endswith("no such file") and "nowhere" in why

    plain = tmp_path / "not-executable"
    plain.write_text("")
    monkeypatch.setenv("GPUMEM_ACCELSIM", str(plain))
    ok, why = AccelSim().available()
    assert not ok and "not an executable file" in why
    with pytest.raises(DeviceUnavailable, match="not an executable file"):
        AccelSim().create_device("volta", qv100)


def test_an_executable_that_does_not_run_as_accel_sim_is_not_available(tmp_path, monkeypatch,
                                                                      qv100):
    """Issue 20, item 5: the binary is run once before it is called available. A wrapper
    whose binary's libraries are missing (exit 127), a program that is not Accel-Sim, and
    one that hangs are each refused with what they did, on one line."""
    from gpumem_accelsim import locate

    def script(name: str, body: str) -> Path:
        p = tmp_path / name / "accel-sim.out"
        p.parent.mkdir()
        p.write_text("#!/bin/sh\n" + body + "\n")
        p.chmod(0o755)
        return p

    broken = script("broken", "echo 'accel-sim.out: error while loading shared libraries: "
                              "libcudart.so.11.0: cannot open shared object file' >&2; exit 127")
    other = script("other", "echo 'hello'")
    for binary, said in ((broken, "exit 127: accel-sim.out: error while loading shared"),
                         (other, "does not run as Accel-Sim (exit 0: hello)")):
        monkeypatch.setenv("GPUMEM_ACCELSIM", str(binary))
        ok, why = AccelSim().available()
        assert not ok and said in why and "\n" not in why, why
        with pytest.raises(DeviceUnavailable, match="does not run as Accel-Sim"):
            AccelSim().create_device("volta", qv100)
    monkeypatch.setattr(locate, "PROBE_TIMEOUT_S", 0.5)
    monkeypatch.setenv("GPUMEM_ACCELSIM", str(script("hangs", "sleep 30")))
    ok, why = AccelSim().available()
    assert not ok and "did not stop within 0.5 s" in why


def test_the_probe_reads_the_build_and_runs_once_per_binary(fake, tmp_path, monkeypatch):
    from gpumem_accelsim import locate

    calls = tmp_path / "calls"
    counted = tmp_path / "counted" / "accel-sim.out"
    counted.parent.mkdir()
    counted.write_text(f'#!/bin/sh\necho run >> "{calls}"\nexec "{fake}" "$@"\n')
    counted.chmod(0o755)
    monkeypatch.setenv("GPUMEM_ACCELSIM", str(counted))
    assert locate.probe(counted) == ("accelsim-commit-fake_modified_0.0", "")
    found = (True, f"accelsim-commit-fake_modified_0.0 ({counted})")
    for _ in range(3):
        assert AccelSim().available() == found
    assert calls.read_text().count("run") == 1  # cached while the file is unchanged
    counted.touch()  # a rebuilt binary is run again
    assert AccelSim().available() == found and calls.read_text().count("run") == 2


# ---- configs ------------------------------------------------------------------------------

def test_create_device_takes_a_config_a_path_or_nothing(fake, qv100, tmp_path):
    sim = AccelSim()
    with pytest.raises(DeviceUnavailable, match="no Accel-Sim config for volta; give "
                                                "--sim-config"):
        sim.create_device("volta", None)
    for cfg in (qv100, QV100, QV100 / "gpgpusim.config", str(QV100)):
        assert sim.create_device("volta", cfg).info.name == "SM7_QV100"
    packaged = tmp_path / "accelsim"  # an architecture plugin's folder
    qv100.save(packaged)
    assert sim.create_device("hopper", packaged).info.name == "hopper"
    with pytest.raises(DeviceUnavailable, match="must be an AccelSimConfig or a path"):
        sim.create_device("volta", {"not": "a config"})


def test_a_config_without_trace_config_is_refused(fake, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "gpgpusim.config").write_text((QV100 / "gpgpusim.config").read_text())
    with pytest.raises(DeviceUnavailable, match="trace.config beside gpgpusim.config"):
        AccelSim().create_device("volta", lone)
    with pytest.raises(UsageError, match="trace.config beside gpgpusim.config"):
        AccelSim().load_config(lone / "gpgpusim.config")


def test_load_config(tmp_path):
    cfg = AccelSim().load_config(QV100 / "gpgpusim.config")
    assert isinstance(cfg, AccelSimConfig) and len(cfg.trace) > 0
    with pytest.raises(UsageError, match="no such Accel-Sim config file"):
        AccelSim().load_config(tmp_path / "gpgpusim.config")


def test_device_info(fake, qv100):
    dev = _device(qv100)
    i = dev.info
    assert (i.kind, i.name, i.compute_capability) == ("accelsim", "SM7_QV100", "7.0")
    assert (i.sm_count, i.l2_bytes, i.clock_mhz) == (80, 6 << 20, 1132.0)
    assert i.peak_bandwidth_gbs == pytest.approx(870.4)
    assert i.load_paths == ("ca", "cg", "nc") and i.memory_bytes >= 16 << 30
    assert i.key.startswith("accelsim-sm7-qv100-") and len(i.key.split("-")[-1]) == 8
    assert dev.probes == {"pointer_chase", "stream"} and dev.source == "simulated"
    prov = dev.provenance()
    assert prov["accelsim_config_name"] == "SM7_QV100"
    assert prov["accelsim_options"] == "-gpgpu_kernel_launch_latency 0"


# ---- pointer chase ------------------------------------------------------------------------

@pytest.mark.parametrize("log, request_, mean", [
    ("qv100-chase-l1.log", L1_CHASE, (17323 - 11179) / 256),
    ("qv100-chase-l2.log", L2_CHASE, (32523 - 10507) / 128),
    ("qv100-chase-dram.log", DRAM_CHASE, (71657 - 5008) / 200),
])
def test_chase_mean_from_real_logs(fake, qv100, monkeypatch, log, request_, mean):
    monkeypatch.setenv("FAKE_ACCELSIM_LOG", log)  # the fake checks the kernels match
    res = _device(qv100).pointer_chase(request_)
    assert res.latency.shape == (1,) and res.index.size == 0
    assert res.timer_overhead == 0.0 and res.mean == pytest.approx(mean)


def test_chase_runs_in_a_fresh_directory_with_both_configs(fake, qv100, tmp_path,
                                                           monkeypatch):
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_ACCELSIM_RECORD", str(record))
    dev = _device(qv100)
    assert dev.pointer_chase(L1_CHASE).mean == 24.0  # the fake's L1 hit
    assert dev.pointer_chase(L2_CHASE).mean == 172.0  # .cg: L2 hits
    cold = ChaseRequest(footprint=8192, stride=128, record=64, fine_grained=False)
    assert dev.pointer_chase(cold).mean == 330.0  # every line touched once: misses
    assert dev.pointer_chase(L1_CHASE).mean == 24.0  # answered again without a run
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(runs) == 3 and dev.provenance()["accelsim_runs"] == 3
    dirs = {r["cwd"] for r in runs}
    assert len(dirs) == 3 and not any(Path(d).exists() for d in dirs)  # fresh, then removed
    for r in runs:
        argv = r["argv"]
        assert argv[:2] == ["-trace", f"{r['cwd']}/kernelslist.g"]
        assert argv[2:6] == ["-config", f"{r['cwd']}/gpgpusim.config",
                             "-config", f"{r['cwd']}/trace.config"]
        assert argv[6:] == ["-gpgpu_kernel_launch_latency", "0"]


def test_fine_grained_chase_is_unsupported(fake, qv100):
    with pytest.raises(ProbeUnsupported, match="cycles per kernel, not per access"):
        _device(qv100).pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16))


def test_requests_out_of_bounds_are_skipped_points(fake, qv100):
    dev = _device(qv100, max_warp_insts=1000)
    with pytest.raises(PointSkipped, match="too long to simulate.*over the limit of 1000"):
        dev.pointer_chase(ChaseRequest(footprint=1 << 20, stride=128, record=1024, warmup=512,
                                       fine_grained=False))
    with pytest.raises(PointSkipped, match="too long to simulate"):
        dev.stream(StreamRequest(footprint=64 << 20, ctas=80, threads=256, width=16))
    with pytest.raises(PointSkipped, match="SM 3 cannot be chosen"):
        dev.pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16, sm=3,
                                       fine_grained=False))
    with pytest.raises(PointSkipped, match="smaller than one chunk"):
        dev.stream(StreamRequest(footprint=4096, ctas=80, threads=256, width=16, ilp=4))
    with pytest.raises(ProbeUnsupported, match="no 'tex' load path"):
        dev.pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16, path="tex",
                                       fine_grained=False))


def test_trace_size_limit_from_the_environment(fake, qv100, monkeypatch):
    monkeypatch.setenv("GPUMEM_ACCELSIM_MAX_WARP_INSTS", "500")
    dev = AccelSim().create_device("volta", qv100)
    assert dev.provenance()["accelsim_max_warp_insts"] == 500
    monkeypatch.setenv("GPUMEM_ACCELSIM_MAX_WARP_INSTS", "lots")
    with pytest.raises(DeviceUnavailable, match="GPUMEM_ACCELSIM_MAX_WARP_INSTS: must be a "
                                                "positive integer"):
        AccelSim().create_device("volta", qv100)


# ---- stream -------------------------------------------------------------------------------

def test_stream_bandwidth_from_a_real_log(fake, qv100, monkeypatch):
    monkeypatch.setenv("FAKE_ACCELSIM_LOG", "qv100-stream-dram.log")
    dev = _device(qv100, stream_warmup=False)  # the log's run had no warm-up kernel
    res = dev.stream(StreamRequest(footprint=16 << 20, ctas=80, threads=256, ilp=4, width=16,
                                   order="coalesced", path="cg"))
    moved = 13 * 80 * 256 * 4 * 16  # whole grid-wide chunks: 13 of 1.25 MiB cover 16 MiB
    assert res.bytes == moved and res.cycles == 27743 - 5010
    assert res.seconds == pytest.approx(res.cycles / 1132e6)
    assert res.gbs == pytest.approx(moved / (27743 - 5010) * 1.132, rel=1e-9)
    assert res.gbs < dev.info.peak_bandwidth_gbs


def test_stream_computed_and_repeats_cost_one_run(fake, qv100, tmp_path, monkeypatch):
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_ACCELSIM_RECORD", str(record))
    dev = _device(qv100)
    req = StreamRequest(footprint=8192, ctas=2, threads=64, ilp=1, width=16, path="cg")
    res = dev.stream(req)
    # the fake: 512 B per cycle, plus the timed warp's 9 instructions less the empty one's 1
    assert (res.bytes, res.cycles) == (8192, 8192 / 512 + 8)
    again = dev.stream(StreamRequest(**{**req.__dict__, "seed": 7}))
    assert again.cycles == res.cycles
    copy = dev.stream(StreamRequest(**{**req.__dict__, "kind": "copy"}))
    assert copy.bytes == 2 * 8192
    assert len(record.read_text().splitlines()) == 2


def test_a_stream_in_block_order_is_refused_not_traced_as_another(fake, qv100):
    """The traces write the grid-strided orders only: order 'block' (each block its own
    slice, l2_bandwidth's shared slices) is skipped with its reason, never simulated with
    another order's addresses."""
    dev = _device(qv100)
    with pytest.raises(PointSkipped, match="order 'block'"):
        dev.stream(StreamRequest(footprint=1 << 20, ctas=8, threads=64, ilp=1, width=16,
                                 path="cg", order="block", share=4))


# ---- failures -----------------------------------------------------------------------------

@pytest.mark.parametrize("log, message", [
    ("error-deadlock.log", "Accel-Sim deadlocked: .*without the check it ran past 2 s"),
    ("error-crash-no-exit.log", "exit status 139"),
    ("error-unknown-option.log", "rejected an option: .*-gpgpu_no_such_option"),
])
def test_error_logs_are_run_errors(fake, qv100, monkeypatch, log, message):
    monkeypatch.setenv("FAKE_ACCELSIM_LOG", log)
    with pytest.raises(AccelSimRunError, match=message) as e:
        _device(qv100, timeout_s=2).pointer_chase(L1_CHASE)
    assert "\n" not in str(e.value)


def test_a_false_deadlock_report_is_run_again_without_the_check(fake, qv100, tmp_path,
                                                                  monkeypatch):
    # GPGPU-Sim samples the instruction count every 50000 cycles and compares it with the
    # previous sample across kernels: a timed kernel can match its base kernel's sample
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_ACCELSIM_RECORD", str(record))
    monkeypatch.setenv("FAKE_ACCELSIM_FALSE_DEADLOCK_IF", "gpumem_chase_timed")
    dev = _device(qv100)
    assert dev.pointer_chase(L1_CHASE).mean == 24.0
    first, second = (json.loads(line)["argv"] for line in record.read_text().splitlines())
    assert second == [*first, "-gpgpu_deadlock_detect", "0"]
    prov = dev.provenance()
    assert (prov["accelsim_runs"], prov["accelsim_deadlock_reruns"]) == (2, 1)


def test_unknown_option_and_timeout(fake, qv100, monkeypatch):
    dev = _device(qv100, options=("-gpgpu_no_such_option", "1"))
    with pytest.raises(AccelSimRunError, match="rejected an option"):
        dev.pointer_chase(L1_CHASE)
    monkeypatch.setenv("FAKE_ACCELSIM_SLEEP", "5")
    with pytest.raises(AccelSimRunError, match="longer than 0.5 s"):
        _device(qv100, timeout_s=0.5).pointer_chase(L1_CHASE)


class MeanChases(Experiment):
    """A sweep of mean chases (what the runner's point machinery sees)."""

    name = "accelsim-test-chases"
    summary = "mean chases over footprint and path"
    probes = ("pointer_chase",)
    footprints = (2048, 4096, 8192)

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[Axis("path", ("ca", "cg"), "1"),
                          Axis("footprint", self.footprints, "byte")],
                    variables=[Var("mean", (), "cycle", "mean cycles per access")])

    def measure(self, device, point: Mapping[str, Any], ctx: RunContext) -> Mapping[str, Any]:
        fp = int(point["footprint"])
        res = device.pointer_chase(ChaseRequest(footprint=fp, stride=128, record=64,
                                                warmup=fp // 128, path=str(point["path"]),
                                                order="random", seed=fp, fine_grained=False))
        return {"mean": res.mean}

    def analyze(self, raw):
        return []


class FewMeanChases(MeanChases):
    footprints = (2048, 4096)


def _sweep(device, workers: int, exp: Experiment | None = None) -> dict[tuple, Any]:
    exp = exp or MeanChases()
    ctx = RunContext("volta", device.info, True, 0)
    from gpumem.results.schema import points

    runner = make_points(device, workers)
    try:
        return runner.run(exp, points(exp.plan(ctx).axes), ctx, lambda: None)
    finally:
        runner.close()


def _untimed(results: dict[tuple, Any]) -> dict[tuple, Any]:
    """The results without the simulator seconds each point took: what a point measured and
    added to the simulator's counts (runs, deadlock re-runs) is the same wherever it ran;
    its seconds are time, not data."""
    out = {}
    for key, (status, reason, values) in results.items():
        counts = {k: v for k, v in values.get(POINT_COUNTS, {}).items()
                  if not k.endswith("_seconds")}
        out[key] = (status, reason, {**values, POINT_COUNTS: counts})
    return out


def test_a_failed_run_fails_its_point_only(fake, qv100, monkeypatch):
    # the 8 KiB chases touch the line at +0x1f80, the smaller ones do not: they deadlock
    monkeypatch.setenv("FAKE_ACCELSIM_DEADLOCK_IF", "0x00007f8000001f80")
    for workers in (1, 2):
        results = _sweep(_device(qv100, timeout_s=1.5), workers)
        for key, (status, reason, values) in results.items():
            if key[1] == 8192:  # (path, footprint)
                assert status == POINT_FAILED
                assert reason.startswith("AccelSimRunError: Accel-Sim deadlocked")
            else:
                assert status == POINT_OK and values["mean"] in (24.0, 172.0)


def test_the_build_is_recorded_when_every_point_ran_in_a_worker(fake, qv100):
    """With --workers the parent device simulates nothing, yet the run's provenance names
    the build (from the binary's trial run), not an empty string."""
    dev = _device(qv100)
    _sweep(dev, 2)
    assert dev.runs == 0
    assert dev.provenance()["accelsim_build"] == "accelsim-commit-fake_modified_0.0"


def test_workers_give_identical_results(fake, qv100):
    dev = _device(qv100)
    spec = dev.reopen_spec()
    assert spec["simulator"] == "accelsim" and spec["config"].binary == str(fake)
    reopened = AccelSim().create_device("volta", pickle.loads(pickle.dumps(spec["config"])))
    assert reopened.info == dev.info
    one, two = _sweep(dev, 1), _sweep(_device(qv100), 2)
    for res in (one, two):
        for _s, _r, values in res.values():
            added = values[POINT_COUNTS]
            assert added["accelsim_runs"] >= 1 and added["accelsim_deadlock_reruns"] == 0
            assert added["accelsim_seconds"] > 0
    assert _untimed(one) == _untimed(two) and all(s == POINT_OK for s, _r, _v in one.values())
    assert one[point_key({"path": "cg", "footprint": 4096})][2]["mean"] == 172.0


# ---- the CLI ------------------------------------------------------------------------------

def test_cli_without_a_binary_exits_2_on_one_line(cli, no_binary, tmp_path, monkeypatch):
    out = tmp_path / "run"
    r = cli("run", "--arch", "hopper", "latency", "--device", "accelsim", "--out", str(out))
    assert r.code == 2 and not out.exists()
    assert r.err.strip().count("\n") == 0 and "simulator 'accelsim' is not available" in r.err
    monkeypatch.setenv("GPUMEM_ACCELSIM", str(tmp_path / "missing" / "accel-sim.out"))
    r = cli("run", "--arch", "hopper", "latency", "--device", "accelsim", "--out", str(out))
    assert r.code == 2 and not out.exists()
    assert r.err.strip().count("\n") == 0 and "no such file" in r.err


# ---- the real simulator -------------------------------------------------------------------

@real_binary
def test_real_l1_and_l2_chases_on_qv100(monkeypatch, qv100):
    monkeypatch.setenv("GPUMEM_ACCELSIM", REAL)
    dev = AccelSim().create_device("volta", qv100)
    l1 = dev.pointer_chase(L1_CHASE).mean
    # -gpgpu_l1_latency 20 plus the load pipeline: 24 cycles measured (and in the fixture log)
    assert qv100.int("-gpgpu_l1_latency") == 20 and l1 == pytest.approx(24.0, abs=0.5)
    l2 = dev.pointer_chase(L2_CHASE).mean
    assert l2 == pytest.approx(172.0, abs=2)  # the fixture log's L2 hit, launch latency 5000


@real_binary
def test_real_workers_identical(monkeypatch, qv100):
    monkeypatch.setenv("GPUMEM_ACCELSIM", REAL)
    one = _sweep(AccelSim().create_device("volta", qv100), 1, FewMeanChases())
    two = _sweep(AccelSim().create_device("volta", qv100), 2, FewMeanChases())
    assert _untimed(one) == _untimed(two) and all(s == POINT_OK for s, _r, _v in one.values())
    means = np.array([v["mean"] for _s, _r, v in one.values()])
    assert np.all((means > 20) & (means < 400))


def test_the_latency_ladder_runs_on_mean_chases(fake, cli, tmp_path):
    """Accel-Sim gives one mean per chase: the ladder falls back to mean chases (the mean in
    the first access, NaN after it) and still finds its levels."""
    res = cli("run", "--arch", "hopper", "latency", "--quick", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    assert "lat.dram" in res.out and " 330 " in res.out     # the fake binary's DRAM chase


# two ladders, every chase re-run (240 fake simulator starts), 2 workers: 23 s of CPU
@pytest.mark.slow
def test_provenance_and_deadlock_reruns_are_complete_with_workers(fake, cli, tmp_path,
                                                                 monkeypatch):
    """Issue 20, item 4: with --workers 2 the run's provenance counts the simulator runs and
    deadlock re-runs the workers made (it said 0), and each point says how many it needed."""
    monkeypatch.setenv("FAKE_ACCELSIM_FALSE_DEADLOCK_IF", "gpumem_chase_timed")
    files = {}
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        res = cli("run", "--arch", "hopper", "latency", "--quick", "--device", "accelsim",
                  "--sim-config", str(QV100 / "gpgpusim.config"), "--workers", workers,
                  "--out", str(out))
        assert res.code == 0, res.err
        (nc,) = out.rglob("*.nc")
        files[workers] = xr.open_dataset(nc).load()
    one, two = files["1"], files["2"]
    for ds in (one, two):
        reruns = ds["point_accelsim_deadlock_reruns"]
        ok = (ds["point_status"] == POINT_OK).values
        assert int(reruns.sum()) == ds.attrs["after_accelsim_deadlock_reruns"] > 0
        assert ds.attrs["after_accelsim_runs"] == int(ds["point_accelsim_runs"].sum()) > 0
        assert ds.attrs["after_accelsim_seconds"] > 0
        assert ds.attrs["after_accelsim_build"] == "accelsim-commit-fake_modified_0.0"
        assert np.all(reruns.values[ok] >= 1)  # every timed chase was reported deadlocked
    assert one["point_accelsim_runs"].equals(two["point_accelsim_runs"])
    assert one["latency"].equals(two["latency"])


def test_a_base_config_loses_what_the_build_rejects(fake, capsys):
    from gpumem.plugin.registry import get_plugins

    plugins = get_plugins()
    sim = plugins.simulators()["accelsim"]
    dev = sim.create_device("hopper", plugins.hook.gpumem_simulator_config(
        arch="hopper", simulator="accelsim"))
    err = capsys.readouterr().err
    assert "-gpgpu_n_chiplet_partition" in err and "BookSim" in err
    merged = dev.setup.config.merged()
    assert "-gpgpu_n_chiplet_partition" not in merged and merged["-network_mode"] == "2"
    assert merged["-gpgpu_memory_partition_indexing"] == "0"   # 6 asserts in this build


# ---- slow simulators: plans sized for them, priced up front (issue 20, item 1) ------------

def test_a_declared_slow_pace_sizes_the_plan_and_prices_it_first(fake, cli, tmp_path,
                                                                  monkeypatch):
    """A slow device gets the ladder a slow device needs (64 accesses, one placement,
    random chains only past twice the L2) and the run says what it will take before any
    point runs; the estimate is kept with the data, beside the time it took."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "2000,3000,1.5")
    out = tmp_path / "r"
    res = cli("run", "--arch", "hopper", "latency", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--out", str(out))
    assert res.code == 0, res.err
    assert "estimate: latency: " in res.err and "2,000 cycles/s per worker" in res.err
    (nc,) = out.rglob("*.nc")
    ds = xr.open_dataset(nc).load()
    assert ds.attrs["plan_record"] == 64 and ds.attrs["plan_placements"] == 1
    assert ds.attrs["gpumem_estimate_s"] >= ds.attrs["gpumem_estimate_first_pass_s"] > 0
    random = ds.sel(order="random")
    skipped = random["footprint"].values[random["point_status"].values != POINT_OK]
    assert skipped.size and skipped.max() <= 2 * ds.attrs["l2_bytes"]
    assert np.all(random["footprint"].values[random["point_status"].values == POINT_OK]
                  > 2 * ds.attrs["l2_bytes"])
    assert "lat.l1" in res.out and " 24 " in res.out  # the fake's L1 hit


def test_the_pace_is_measured_once_and_kept(fake, qv100, tmp_path, monkeypatch):
    monkeypatch.delenv("GPUMEM_ACCELSIM_PACE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_ACCELSIM_RECORD", str(record))
    dev = _device(qv100)
    assert len(record.read_text().splitlines()) == 4 and dev.runs == 0  # not the run's
    assert dev.info.cycles_per_second > 0 and "measured" in dev.provenance()["accelsim_pace"]
    kept = json.loads((tmp_path / "cache" / "gpumem" / "accelsim-pace.json").read_text())
    (entry,) = kept.values()
    assert entry["cycles_per_s"] == dev.info.cycles_per_second
    again = _device(qv100)
    assert len(record.read_text().splitlines()) == 4  # read back, not measured again
    assert again.info == dev.info and again.setup.pace.cycles_per_s == entry["cycles_per_s"]
    spec = pickle.loads(pickle.dumps(again.reopen_spec()))
    assert spec["config"].pace == again.setup.pace  # workers reopen with it
    # a rate kept for the earlier cost model (streams priced by sectors alone, no
    # "model" in the entry) is measured again, not misread
    path = tmp_path / "cache" / "gpumem" / "accelsim-pace.json"
    path.write_text(json.dumps({k: {f: v for f, v in e.items() if f != "model"}
                                for k, e in kept.items()}))
    _device(qv100)
    assert len(record.read_text().splitlines()) == 8
    assert all(e["model"] == 2 for e in json.loads(path.read_text()).values())


def test_the_price_of_a_chase_follows_its_parts(fake, qv100, monkeypatch):
    """Starts, cycles of the lone chasing thread at the config's latency for the footprint
    and of the L1 warm-up's one warp, and the warm-up's requests (L2 window once, L1 window
    twice); what the probe refuses, the price refuses too."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "1000,100,2")
    dev = _device(qv100)
    l1 = qv100.int("-gpgpu_l1_latency") + 4
    cold = ChaseRequest(4096, 128, 100, path="ca", fine_grained=False)
    assert dev.estimate_seconds(cold) == pytest.approx(2 + 100 * l1 / 1000)
    warm = ChaseRequest(4096, 128, 100, warmup=32, path="ca", fine_grained=False)
    # 8.9: what the build adds to QV100's L2 (its interconnect at the core clock; real
    # build: 192.89 = 24 + 160 + 8.9, tests/data/accelsim/runs)
    l2 = l1 + qv100.int("-gpgpu_l2_rop_latency") + 8.9
    # base and timed each wait for one warp's dependent load of 32 lines, L2 hits; the warm-up
    # loads the 32 lines the chase records one by one from DRAM (37.8: the build's DRAM
    # cycles on QV100, tests/data/accelsim/runs/README.md)
    dram = l2 + qv100.int("-dram_latency") + 37.8
    assert dev.estimate_seconds(warm) == pytest.approx(2 + (100 * l1 + 2 * l2 + 32 * dram) / 1000
                                                       + 3 * 32 / 100)
    with pytest.raises(ProbeUnsupported):
        dev.estimate_seconds(ChaseRequest(4096, 128, 100))  # fine-grained
    dev.pointer_chase(warm)
    assert dev.estimate_seconds(warm) == 0.0  # answered from memory


def test_a_malformed_pace_is_one_line(fake, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "fast")
    res = cli("run", "--arch", "hopper", "latency", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--out", str(tmp_path / "r"))
    assert res.code != 0 and not (tmp_path / "r").exists()
    assert res.err.strip().count("\n") == 0 and "GPUMEM_ACCELSIM_PACE='fast'" in res.err


# the plugin writes ~1M trace lines of streams and the fake reads them: 45 s of CPU
@pytest.mark.slow
def test_streams_sized_for_a_slow_device_give_their_findings(fake, cli, tmp_path,
                                                             monkeypatch):
    """Issue 20: bandwidth, bandwidth_levels and ilp had no point small enough for Accel-Sim
    (all skipped, no findings). Sized for a slow device (one pass, once, footprints just
    past the L2 streamed from a cold L2), each gives its findings."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "2000,3000,1.5")
    out = tmp_path / "r"
    res = cli("run", "--arch", "hopper", "bandwidth", "bandwidth_levels", "ilp",
              "--device", "accelsim", "--sim-config", str(QV100 / "gpgpusim.config"),
              "--out", str(out))
    assert res.code == 0, res.err
    for name in ("bandwidth", "bandwidth_levels", "ilp"):
        assert f"estimate: {name}: " in res.err
    from gpumem.contracts.findings import from_dataset
    from gpumem.results.io import open_findings

    found = {f.name for nc in out.rglob("*.nc") for f in from_dataset(open_findings(nc))}
    assert {"bw.dram_read", "bw.dram_write", "bw.dram_copy", "bw.l2",
            "ilp.best_k", "ilp.k8_vs_k2"} <= found
    for nc in out.rglob("*.nc"):
        ds = xr.open_dataset(nc)
        assert ds.attrs["plan_repeats"] == 1 and ds.attrs["plan_work_bytes"] in (
            0, ds.attrs.get("plan_footprint"))
        assert (ds["point_status"] == POINT_OK).all()


def test_estimate_only_prices_and_runs_nothing(fake, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "2000,3000,1.5")
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_ACCELSIM_RECORD", str(record))
    out = tmp_path / "r"
    res = cli("run", "--arch", "hopper", "latency", "ilp", "cache_structure", "--device",
              "accelsim", "--sim-config", str(QV100 / "gpgpusim.config"), "--workers", "16",
              "--out", str(out), "--estimate")
    assert res.code == 0, res.err
    assert "estimate: latency: " in res.err and "on 16 workers" in res.err
    assert "estimate: ilp: " in res.err and "not priced" in res.err  # cache_structure
    assert not out.exists() and not record.exists()  # nothing simulated, nothing written
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "0")
    res = cli("run", "--arch", "hopper", "latency", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--estimate")
    assert res.code == 0 and "is not a slow device" in res.err


def test_a_config_that_fails_its_pace_runs_is_one_line(fake, cli, tmp_path, monkeypatch):
    monkeypatch.delenv("GPUMEM_ACCELSIM_PACE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_ACCELSIM_LOG", "error-unknown-option.log")
    res = cli("run", "--arch", "hopper", "latency", "--device", "accelsim",
              "--sim-config", str(QV100 / "gpgpusim.config"), "--out", str(tmp_path / "r"))
    assert res.code != 0 and not (tmp_path / "r").exists()
    assert res.err.strip().count("\n") == 0
    assert "measuring how fast it runs (GPUMEM_ACCELSIM_PACE can declare it)" in res.err


def test_a_stream_past_the_l2_warms_up_only_to_write(fake, qv100, monkeypatch):
    """A read of a buffer larger than the L2 runs one pass from a cold L2 (every line from
    DRAM either way); a write keeps its warm-up pass, so it writes into a dirty L2 as a
    steady stream does. The price follows the passes (sectors alone here: the resident
    warps' cycles are the next test's)."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "1000,100,0")
    monkeypatch.setattr("gpumem_accelsim.device.WARP_CYCLE_SECTORS", 0.0)
    dev = _device(qv100)
    big = 2 * dev.info.l2_bytes
    sectors = big / 32
    read = StreamRequest(big, 80, 256, 1, 16)
    assert dev.estimate_seconds(read) == pytest.approx(sectors / 100)
    assert dev.estimate_seconds(replace(read, kind="write")) == pytest.approx(2 * sectors / 100)
    small = replace(read, footprint=dev.info.l2_bytes // 2)
    assert dev.estimate_seconds(small) == pytest.approx(2 * sectors / 4 / 100)


def test_a_stream_is_priced_by_its_resident_warps_cycles(fake, qv100, monkeypatch):
    """Same sectors, same bytes: twice the resident warps cost WARP_CYCLE_SECTORS per extra
    warp per cycle the pass takes at the config's DRAM bandwidth (on SM7_QV100 a 20 MiB
    write by 5,120 warps took 2.2 times as long as by 2,560); CTAs that cannot be resident
    at once (2,048 threads per SM) add nothing."""
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "1000,100,0")
    dev = _device(qv100)
    big = 4 * dev.info.l2_bytes
    one = StreamRequest(big, 80, 1024, 1, 16)  # one CTA of 32 warps per SM
    two = replace(one, ctas=160)  # two per SM: all resident
    many = replace(one, ctas=640)  # still two per SM at a time
    cycles = big / (qv100.dram_bandwidth_gbs * 1e3 / qv100.core_clock_mhz)
    extra = WARP_CYCLE_SECTORS * 80 * 32 * cycles / 100
    assert extra > 0.1 * dev.estimate_seconds(one)  # it matters
    assert dev.estimate_seconds(two) - dev.estimate_seconds(one) == pytest.approx(extra)
    assert dev.estimate_seconds(many) == pytest.approx(dev.estimate_seconds(two))


def test_a_stream_is_priced_by_the_sectors_its_warps_ask_for(fake, qv100, monkeypatch):
    monkeypatch.setenv("GPUMEM_ACCELSIM_PACE", "1000,100,0")
    monkeypatch.setattr("gpumem_accelsim.device.WARP_CYCLE_SECTORS", 0.0)
    dev = _device(qv100)
    big = 2 * dev.info.l2_bytes
    coalesced = StreamRequest(big, 80, 256, 8, 16)
    # lanes 8 x 16 bytes apart: each warp instruction asks for 32 sectors, not 16
    assert dev.estimate_seconds(replace(coalesced, order="thread")) == pytest.approx(
        2 * dev.estimate_seconds(coalesced))
    assert dev.estimate_seconds(replace(coalesced, order="warp")) == pytest.approx(
        dev.estimate_seconds(coalesced))


def test_an_accelsim_config_names_its_generic_architecture(fake, cli, tmp_path):
    """No --arch: the architecture is the generic one of the config's compute capability
    (QV100: 7.0, sm_70), as ``gpumem import accelsim`` reads it, not a refusal (issue 45)."""
    res = cli("run", "smem_latency", "--quick", "--device", "accelsim", "--sim-config",
              str(QV100 / "gpgpusim.config"), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    assert "names no architecture" not in res.err
    assert "architecture sm_70 (generic)" in res.err and "compute capability is 7.0" in res.err


def test_a_hung_simulator_is_stopped_with_every_process_it_started(tmp_path):
    """Past the timeout, the launcher and what it started are all killed (issue 45: a
    binary that hung kept running after gpumem returned)."""
    import os
    import subprocess
    import time

    from gpumem_accelsim.device import run_group

    pidfile = tmp_path / "child.pid"
    launcher = tmp_path / "accel-sim.out"
    launcher.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    launcher.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_group([str(launcher)], tmp_path, 1.0)
    assert time.monotonic() - t0 < 30
    child = int(pidfile.read_text())
    def ended(pid: int) -> bool:  # gone, or a zombie no init has reaped yet
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"

    for _ in range(50):
        if ended(child):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the launcher's child {child} outlived the timeout")
    assert run_group(["sh", "-c", "echo hi; exit 3"], tmp_path, 10.0) == ("hi\n", 3)


def test_devices_names_the_accelsim_build_it_found(fake, cli):
    """``gpumem devices`` says which Accel-Sim build it would drive, and where it is."""
    import json

    res = cli("devices", "--json")
    assert res.code == 0, res.err
    (acc,) = [s for s in json.loads(res.out)["simulators"] if s["name"] == "accelsim"]
    assert acc["available"] and acc["reason"] == ""
    assert "accelsim-commit" in acc["detail"] and str(fake) in acc["detail"]
