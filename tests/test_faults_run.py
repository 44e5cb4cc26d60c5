"""Faults during ``gpumem run`` (issue 15): signals in the middle of a write, SIGTERM, SIGKILL
leftovers, two runs into one folder, a full disk, planted symlinks, bad manifests, Ctrl-C with
worker processes. Every one must end quickly with one line and a truthful manifest.

Subprocess tests start ``python -m gpumem`` in its own session and signal the whole process
group, as a terminal's Ctrl-C does. Every wait is bounded: a hung process is killed and the
test fails. A test-only plugin (``fault-big``, written into a temporary folder) produces a
32 MB dataset, so that writing it takes long enough to be hit by a signal.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
from gpumem.results import store
from gpumem.results.store import MANIFEST, sha256_file
from helpers import GPUMEM_ENV

FAULT_PLUGIN = '''
import numpy as np
from gpumem import Axis, Experiment, Finding, Plan, Var, hookimpl

N = 1_000_000


class FaultBig(Experiment):
    """Quick to measure, slow to write: 4 points x 1M random doubles (zlib-compressed)."""

    name = "fault-big"
    summary = "a large dataset, for signals during the write"
    archs = ("toyarch",)
    probes = ()

    def plan(self, ctx):
        return Plan(axes=[Axis("block", (0, 1, 2, 3), "1")],
                    variables=[Var("value", ("sample",))], inner={"sample": np.arange(N)})

    def measure(self, device, point, ctx):
        return {"value": np.random.default_rng(int(point["block"])).random(N)}

    def analyze(self, raw):
        return [Finding("fault.n", int(raw["value"].size), "1", 1.0, "count")]


@hookimpl
def gpumem_register_experiments(register):
    register(FaultBig)
'''


@pytest.fixture(scope="session")
def fault_site(tmp_path_factory) -> Path:
    """A folder holding the ``faultplug`` plugin module and its entry point."""
    site = tmp_path_factory.mktemp("fault-site")
    (site / "gpumem_faultplug.py").write_text(FAULT_PLUGIN)
    info = site / "gpumem_faultplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpumem-faultplug\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[gpumem]\nfaultplug = gpumem_faultplug\n")
    return site


@pytest.fixture
def env(plugin_site, fault_site) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    e["PYTHONPATH"] = os.pathsep.join(
        [p for p in (os.environ.get("PYTHONPATH"), str(fault_site), str(plugin_site)) if p])
    e["GPUMEM_DISABLE_PLUGINS"] = "broken,dup"
    return e


def start(out: Path, env: dict[str, str], *exps: str, extra: tuple[str, ...] = (),
          sleep: float = 0.0) -> subprocess.Popen:
    args = [sys.executable, "-m", "gpumem", "run", "--arch", "toyarch", *exps, "--device",
            "sim", "--out", str(out), *extra]
    return subprocess.Popen(args, env={**env, "GPUMEM_SAMPLE_SLEEP": str(sleep)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 30) -> tuple[int, str]:
    """(exit code, stderr); kills the process group and fails if it does not end in time."""
    try:
        _out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"gpumem did not exit within {timeout} s (hung)")
    return proc.returncode, err


def wait_for(what: str, cond, proc: subprocess.Popen | None = None, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"gpumem exited ({proc.returncode}) before {what}: "
                        f"{proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.005)
    if proc is not None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    pytest.fail(f"timed out waiting for {what}")


def entries(out: Path) -> dict[str, dict]:
    try:
        return json.loads((out / MANIFEST).read_text())["entries"]
    except (OSError, ValueError, KeyError):
        return {}


def by_experiment(out: Path) -> dict[str, dict]:
    return {e["experiment"]: e for e in entries(out).values()}


def running(out: Path, experiment: str, pid: int | None = None) -> bool:
    e = by_experiment(out).get(experiment, {})
    return e.get("status") == "running" and (pid is None or e.get("pid") == pid)


def temporaries(out: Path) -> list[Path]:
    return sorted(out.rglob(".*.tmp"))


def writing(out: Path) -> list[Path]:
    """Temporary results files: a results file is being written."""
    return sorted(out.glob("*/.*.nc.*.tmp"))


def assert_intact(out: Path, entry: dict) -> None:
    assert entry["status"] == "complete", entry
    assert sha256_file(out / entry["file"]) == entry["sha256"]


# ---- 1, 2: a signal during the write; SIGTERM -----------------------------------------------

#: Each case starts gpumem (5-10 s of CPU): one stays in the developer's command, the other
#: timings run in CI's full job (SIGTERM's exit status has its own test below).
_OTHER_TIMING = pytest.mark.slow


@pytest.mark.parametrize("sig, delay, times", [
    pytest.param(signal.SIGINT, 0.0, 1, marks=_OTHER_TIMING), (signal.SIGINT, 0.05, 1),
    pytest.param(signal.SIGINT, 0.25, 1, marks=_OTHER_TIMING),
    pytest.param(signal.SIGINT, 0.05, 2, marks=_OTHER_TIMING),
    pytest.param(signal.SIGTERM, 0.05, 1, marks=_OTHER_TIMING)])
def test_a_signal_during_the_write_exits_promptly_and_keeps_the_result(
        tmp_path, env, sig, delay, times):
    """Once the temporary results file exists (the write has begun), send the signal (twice:
    the user pressing Ctrl-C again). Before the fix the process hung on xarray's lock and
    left the entry 'running'. Now the write finishes, the entry is complete and intact, the
    next experiment never starts and the process exits 130 (SIGINT) or 143 (SIGTERM)."""
    out = tmp_path / "run"
    proc = start(out, env, "fault-big", "toy-slow", sleep=0.2)
    wait_for("the write of fault-big", lambda: writing(out), proc)
    time.sleep(delay)
    for _ in range(times):
        os.killpg(proc.pid, sig)
        time.sleep(0.05)
    t0 = time.monotonic()
    code, err = finish(proc, timeout=20)
    assert time.monotonic() - t0 < 20
    assert code == (130 if sig == signal.SIGINT else 143), err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert temporaries(out) == []
    exps = by_experiment(out)
    assert_intact(out, exps["fault-big"])
    assert exps.get("toy-slow", {}).get("status") in (None, "interrupted")
    assert all(e["status"] != "running" for e in exps.values())


def test_sigterm_is_handled_like_ctrl_c_with_exit_143(tmp_path, env):
    out = tmp_path / "run"
    proc = start(out, env, "toy-chase", "toy-slow", sleep=0.25)
    wait_for("toy-slow to run", lambda: running(out, "toy-slow"), proc)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    code, err = finish(proc)
    assert code == 143, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "terminated (SIGTERM) during 'toy-slow'" in lines[0], err
    exps = by_experiment(out)
    assert exps["toy-slow"]["status"] == "interrupted"
    assert "SIGTERM" in exps["toy-slow"]["error"]
    assert_intact(out, exps["toy-chase"])


# ---- 3: SIGKILL leftovers ----------------------------------------------------------------

def test_resume_cleans_up_after_a_killed_writer_and_redoes_its_entry(tmp_path, env):
    """SIGKILL mid-write leaves a temporary file and a 'running' entry. The next run removes
    the dead writer's temporary (and only it: a live process's and foreign files stay),
    reports the entry stale, and --resume measures it again."""
    out = tmp_path / "run"
    proc = start(out, env, "fault-big")
    tmps = wait_for("the write of fault-big", lambda: writing(out), proc)
    os.killpg(proc.pid, signal.SIGKILL)
    finish(proc)
    assert temporaries(out) == tmps and running(out, "fault-big", proc.pid)
    host_id = getattr(store, "HOST_ID", "00000000")
    live = tmps[0].parent / f".x.nc.{os.getpid()}@{host_id}.0123abcd.tmp"   # this process
    live.write_text("busy")
    foreign = tmps[0].parent / ".notours.tmp"
    foreign.write_text("keep")

    code, err = finish(start(out, env, "fault-big", extra=("--resume",)), timeout=120)
    assert code == 0, err
    assert "stale" in err and "fault-big" in err
    assert sorted(temporaries(out)) == sorted([live, foreign])
    assert_intact(out, by_experiment(out)["fault-big"])


# ---- 4: two runs into one folder -----------------------------------------------------------

def test_an_interrupted_rerun_keeps_the_result_it_was_replacing(tmp_path, env):
    out = tmp_path / "run"
    code, err = finish(start(out, env, "toy-slow"), timeout=120)
    assert code == 0, err
    first = by_experiment(out)["toy-slow"]
    proc = start(out, env, "toy-slow", sleep=0.3)
    wait_for("the re-run", lambda: running(out, "toy-slow", proc.pid), proc)
    os.killpg(proc.pid, signal.SIGINT)
    code, err = finish(proc)
    assert code == 130, err
    now = by_experiment(out)["toy-slow"]
    assert_intact(out, now)
    assert now["sha256"] == first["sha256"] and now["file"] == first["file"]


def test_ctrl_c_on_one_run_never_touches_an_entry_another_run_completed(tmp_path, env):
    """B starts toy-slow (slowly), A runs it to completion meanwhile, then B gets Ctrl-C:
    the entry stays A's complete result (before the fix B marked it interrupted)."""
    out = tmp_path / "run"
    b = start(out, env, "toy-slow", sleep=0.5)
    wait_for("run B", lambda: running(out, "toy-slow", b.pid), b)
    code, err = finish(start(out, env, "toy-slow"), timeout=120)
    assert code == 0, err
    done = by_experiment(out)["toy-slow"]
    assert_intact(out, done)
    assert b.poll() is None, "run B ended too early for this test"
    os.killpg(b.pid, signal.SIGINT)
    code, err = finish(b)
    assert code == 130, err
    assert by_experiment(out)["toy-slow"] == done


# ---- 5: disk full --------------------------------------------------------------------------

@pytest.fixture
def site_in_process(with_site, fault_site, monkeypatch):
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "broken,dup")
    monkeypatch.syspath_prepend(str(fault_site))


def test_disk_full_fails_the_entry_with_one_line_and_keeps_earlier_results(
        cli, tmp_path, site_in_process, monkeypatch):
    out = tmp_path / "run"
    args = ("run", "--arch", "toyarch", "--device", "sim", "--out", str(out))
    assert cli(*args, "toy-chase").code == 0
    chase = by_experiment(out)["toy-chase"]
    before = (out / chase["file"]).read_bytes()

    def full(self, path, *a, **k):
        Path(path).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", full)
    res = cli(*args, "toy-slow", "toy-badanalysis")
    assert res.code == 1, res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.err, res.err
    assert "No space left on device" in lines[0] and "toy-slow-" in lines[0]
    exps = by_experiment(out)
    assert exps["toy-slow"]["status"] == "failed"
    assert "ENOSPC" in exps["toy-slow"]["error"]
    assert "toy-badanalysis" not in exps  # the run stopped
    assert exps["toy-chase"] == chase and (out / chase["file"]).read_bytes() == before
    assert temporaries(out) == []
    assert not list(out.glob("*/toy-slow-*.nc"))


# ---- 6: symlinks below --out ---------------------------------------------------------------

def _device_dir(cli, tmp_path) -> str:
    probe = tmp_path / "probe"
    assert cli("run", "--arch", "toyarch", "toy-chase", "--device", "sim", "--out",
               str(probe)).code == 0
    return next(p.name for p in probe.iterdir() if p.is_dir())


@pytest.mark.parametrize("planted", ["device-dir", "result-file"])
def test_a_symlink_below_out_is_refused_and_nothing_is_written_outside(
        cli, tmp_path, site_in_process, planted):
    device_dir = _device_dir(cli, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "run"
    out.mkdir()
    if planted == "device-dir":
        (out / device_dir).symlink_to(outside, target_is_directory=True)
    else:
        (outside / "victim.nc").write_text("precious")
        (out / device_dir).mkdir()
        name = next((tmp_path / "probe" / device_dir).glob("toy-chase-*.nc")).name
        (out / device_dir / name).symlink_to(outside / "victim.nc")
    res = cli("run", "--arch", "toyarch", "toy-chase", "--device", "sim", "--out", str(out))
    assert res.code == 2, res.err
    assert len(res.err.strip().splitlines()) == 1 and "symlink" in res.err, res.err
    if planted == "device-dir":
        assert list(outside.iterdir()) == []
    else:
        assert [p.name for p in outside.iterdir()] == ["victim.nc"]
        assert (outside / "victim.nc").read_text() == "precious"
    assert all(e["status"] != "running" for e in entries(out).values())


# ---- 7: wrong-shaped manifests -------------------------------------------------------------

@pytest.mark.parametrize("text, what", [
    ("[]", "top level is a JSON array"), ('{"entries": 5}', "'entries' is a JSON number"),
    ('{"entries": {"k": null}}', "entry 'k' is a JSON null"),
    ('{"entries": {}, "runs": 7}', "'runs' is a JSON number"), ("{not json", "cannot read")])
def test_a_wrong_shaped_manifest_gives_one_line_and_is_never_overwritten(
        cli, tmp_path, site_in_process, text, what):
    out = tmp_path / "run"
    out.mkdir()
    (out / MANIFEST).write_text(text)
    res = cli("show", str(out))
    assert res.code == 1 and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1
    assert str(out / MANIFEST) in res.err and what in res.err, res.err
    res = cli("run", "--arch", "toyarch", "toy-chase", "--device", "sim", "--out", str(out))
    assert res.code == 1 and len(res.err.strip().splitlines()) == 1, res.err
    assert str(out / MANIFEST) in res.err
    assert (out / MANIFEST).read_text() == text
    assert [p.name for p in out.iterdir()] == [MANIFEST]


# ---- 8: Ctrl-C with worker processes -------------------------------------------------------

@pytest.mark.parametrize("when", ["workers idle", "workers busy"])
def test_ctrl_c_with_workers_prints_one_line_not_worker_tracebacks(tmp_path, env, when):
    """Ctrl-C reaches the whole process group. Idle workers (here: while the parent writes
    fault-big) used to print a KeyboardInterrupt traceback each (~40 lines)."""
    out = tmp_path / "run"
    proc = start(out, env, "fault-big", "toy-slow", extra=("--workers", "2"), sleep=0.25)
    if when == "workers idle":
        wait_for("the write of fault-big", lambda: writing(out), proc)
    else:
        wait_for("toy-slow to run", lambda: running(out, "toy-slow"), proc)
        time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal sends Ctrl-C to the whole group
    code, err = finish(proc)
    assert code == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) < 10, err
    assert "interrupted during" in err and "1 finished experiment(s) kept" in err, err
    exps = by_experiment(out)
    assert_intact(out, exps["fault-big"])
    assert exps.get("toy-slow", {}).get("status") in (None, "interrupted")
    assert all(e["status"] != "running" for e in exps.values())


def test_show_says_a_running_entry_of_a_dead_process_is_stale(tmp_path):
    """``show`` does not repair (a run does), but it does not call a dead writer's entry
    plainly ``running`` either."""
    from gpumem.cli import main
    from gpumem.results.store import HOST

    run = tmp_path / "run"
    run.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    entries = {"d/latency/abc": {"experiment": "latency", "status": "running", "host": HOST,
                                 "pid": dead.pid, "device": "d", "params_hash": "abc"}}
    (run / "manifest.json").write_text(json.dumps({"gpumem_manifest_version": 1, "runs": [],
                                                   "entries": entries}))
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["show", str(run)])
    assert f"stale: process {dead.pid} is gone" in buf.getvalue()
    assert json.loads((run / "manifest.json").read_text())["entries"] == entries
