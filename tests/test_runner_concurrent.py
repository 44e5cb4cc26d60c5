"""Experiments at once (``gpumem run -j N`` on the simulator, issue 31 item 3): the same files
as one at a time, a whole manifest, a readable progress display, Ctrl-C keeping what was
measured, a results file that cannot be written stopping the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
from gpumem.contracts.errors import ResultsFileError
from gpumem.results.store import MANIFEST, ResultsWriteError, RunStore, sha256_file
from gpumem.run.points import make_points
from gpumem.run.request import Reporter, RunRequest
from gpumem.run.runner import run
from gpumem.run.schedule import SEQUENTIAL_ENV, runs_at_once
from gpumem.run.timeline import TIMELINE_ENV
from helpers import GPUMEM_ENV

#: where the points ran, and when the file was made: the rest must be equal
VOLATILE = {"history", "date_created", "gpumem_executor"}


def _clean(ds: xr.Dataset) -> xr.Dataset:
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in VOLATILE}
    return ds


def assert_same_run(a: Path, b: Path) -> None:
    """Every results file of run ``a`` equals ``b``'s (raw data, findings, every attribute
    but dates and the executor), and the manifests agree on status, points and findings."""
    fa = {p.name: p for p in a.glob("*/*.nc")}
    fb = {p.name: p for p in b.glob("*/*.nc")}
    assert sorted(fa) == sorted(fb) and fa
    for name in fa:
        for group in (None, "findings"):
            x = _clean(xr.load_dataset(fa[name], group=group))
            y = _clean(xr.load_dataset(fb[name], group=group))
            xr.testing.assert_identical(x, y)  # every attribute too (arrays among them)

    def summary(run_dir: Path) -> dict:
        entries = json.loads((run_dir / MANIFEST).read_text())["entries"]
        return {k: (e.get("status"), e.get("points"), e.get("error"), e.get("findings"))
                for k, e in entries.items()}

    assert summary(a) == summary(b)


def assert_whole(run_dir: Path) -> dict[str, dict]:
    """No entry left running; each complete one names its file, whose checksum it holds."""
    entries = json.loads((run_dir / MANIFEST).read_text())["entries"]
    for e in entries.values():
        assert e["status"] in ("complete", "skipped", "failed"), e
        if e["status"] == "complete":
            assert sha256_file(run_dir / e["file"]) == e["sha256"]
    assert not list(run_dir.glob("*/.*.tmp"))
    return {e["experiment"]: e for e in entries.values()}


def gpumem_run(out: Path, arch: str, *extra: str, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpumem", "run", "--arch", arch, "all",
                           "--device", "sim", "--out", str(out), "--check", *extra],
                          capture_output=True, text=True, env=full, timeout=900)


def _same_as_one_at_a_time(sim_run, tmp_path: Path, arch: str) -> None:
    one = sim_run(arch, quick=True)  # the session's run: one worker, one at a time
    assert one.ran, one.text
    timeline = tmp_path / "timeline.json"
    res = gpumem_run(tmp_path / "j2", arch, "--quick", "--workers", "2",
                     env={TIMELINE_ENV: str(timeline)})
    assert res.returncode == one.code, res.stderr
    assert_same_run(one.out, tmp_path / "j2")
    assert_whole(tmp_path / "j2")
    # they did run at once: the searches and refinements all along cache_structure's
    marks = json.loads(timeline.read_text())
    at = {(what, name): t for t, what, name in marks}
    begin, end = at["start", "cache_structure"], at["end", "cache_structure"]
    beside = [n for (what, n), t in at.items() if what == "start" and n != "cache_structure"
              and t < end and at.get(("end", n), 0) > begin]
    assert len(beside) >= 3, marks


def test_hopper_at_once_gives_the_files_of_one_at_a_time(sim_run, tmp_path):
    """hopper: adaptive searches (cache_structure, tlb_structure, patterns) run in workers,
    latency refines in rounds, the grids share the pool: the same files as -j 1."""
    _same_as_one_at_a_time(sim_run, tmp_path, "hopper")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["fermi", "kepler", "maxwell"])
def test_every_arch_at_once_gives_the_files_of_one_at_a_time(sim_run, tmp_path, arch):
    _same_as_one_at_a_time(sim_run, tmp_path, arch)


# ---- in this process ------------------------------------------------------------------------


class Recording(Reporter):
    """Records every call; fails a test (``overlap``) if two calls were ever inside it at
    once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.overlap = False
        self._inside = False

    def _call(self, what: str, name: str) -> None:
        if self._inside:
            self.overlap = True
        self._inside = True
        time.sleep(0.0005)  # widen the window a second caller would hit
        self.calls.append((what, name))
        self._inside = False

    def notice(self, message: str) -> None:
        self._call("notice", message)

    def experiment_started(self, name: str, total: int) -> None:
        self._call("started", name)

    def points_added(self, name: str, count: int) -> None:
        self._call("added", name)

    def point_done(self, name: str) -> None:
        self._call("done", name)

    def experiment_finished(self, outcome) -> None:
        self._call("finished", outcome.experiment)


def test_progress_is_one_call_at_a_time_and_each_bar_ends_full(tmp_path):
    """Threads and the workers' adaptive searches report through one reporter, one call at a
    time; every probe of a search is reported before the experiment is said to end."""
    rec = Recording()
    from gpumem.plugin.registry import load_plugins

    names = ["smem_latency", "tlb_structure", "bulk_copy", "patterns"]
    rep = run(RunRequest("hopper", names, device="sim", quick=True, workers=2,
                         out=tmp_path / "r"),
              plugins=load_plugins(warn=lambda _m: None), reporter=rec)
    assert not rec.overlap
    # as run (DRAM bandwidth first, then as asked for: Experiment.runs_first), not as they ended
    assert [o.experiment for o in rep.outcomes] == ["bulk_copy", "smem_latency", "tlb_structure",
                                                    "patterns"]
    for o in rep.outcomes:
        assert o.status == "complete", o
        mine = [what for what, name in rec.calls if name == o.experiment]
        assert mine[0] == "started" and mine[-1] == "finished"
        assert mine.count("done") == o.points > 0
    assert_whole(tmp_path / "r")


def test_at_once_only_where_every_probe_stands_alone(monkeypatch):
    """A configured clock step makes a chase depend on the chases before it: such a device,
    one worker, a slow device or GPUMEM_SEQUENTIAL=1 runs one experiment at a time."""
    from dataclasses import replace

    from gpumem.contracts.experiment import RunContext
    from gpumem.plugin.registry import load_plugins
    from gpumem.sim.device import SimDevice

    cfg = load_plugins(warn=lambda _m: None).hook.gpumem_simulator_config(arch="hopper",
                                                                           simulator="sim")
    dev = SimDevice(cfg, "hopper")
    assert dev.independent_probes
    stepped = SimDevice(replace(cfg, timer=replace(cfg.timer, clock_step_after=12)), "hopper")
    assert not stepped.independent_probes
    ctx = RunContext("hopper", dev.info)
    runner = make_points(dev, 2)
    try:
        assert runs_at_once(runner, dev, ctx, 3)
        assert not runs_at_once(runner, dev, ctx, 1)
        assert not runs_at_once(runner, stepped, ctx, 3)
        monkeypatch.setenv(SEQUENTIAL_ENV, "1")
        assert not runs_at_once(runner, dev, ctx, 3)
    finally:
        runner.close()
    one = make_points(dev, 1)
    assert not runs_at_once(one, dev, ctx, 3)


def test_a_results_file_that_cannot_be_written_stops_the_others(with_site, tmp_path,
                                                                 monkeypatch):
    """toy-chase cannot be written (disk full) while toy-slow measures: the run ends with
    that error at once, toy-slow's entry interrupted saying why; nothing left running."""
    from gpumem.plugin.registry import load_plugins

    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "broken,dup")
    monkeypatch.setenv("GPUMEM_SAMPLE_SLEEP", "0.2")  # 20 points: 2 s on two workers
    real = RunStore.write

    def write(self, device_key, experiment, *args, **kwargs):
        if experiment == "toy-chase":
            raise ResultsWriteError("cannot write toy-chase.nc: No space left on device")
        return real(self, device_key, experiment, *args, **kwargs)

    monkeypatch.setattr(RunStore, "write", write)
    out = tmp_path / "r"
    t0 = time.monotonic()
    with pytest.raises(ResultsWriteError) as err:
        run(RunRequest("toyarch", ["toy-chase", "toy-slow"], device="sim", workers=2,
                       out=out), plugins=load_plugins(warn=lambda _m: None))
    assert time.monotonic() - t0 < 10
    assert "toy-chase failed, 0 finished experiment(s) kept" in str(err.value)
    entries = assert_whole_or_interrupted(out)
    assert entries["toy-chase"]["status"] == "failed"
    assert entries["toy-slow"]["status"] == "interrupted"
    assert "the run stopped" in entries["toy-slow"]["error"]


def assert_whole_or_interrupted(run_dir: Path) -> dict[str, dict]:
    entries = json.loads((run_dir / MANIFEST).read_text())["entries"]
    assert all(e["status"] != "running" for e in entries.values()), entries
    return {e["experiment"]: e for e in entries.values()}


# ---- Ctrl-C ----------------------------------------------------------------------------------


def _start(out: Path, site: Path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p),
               GPUMEM_SAMPLE_SLEEP="0.25", GPUMEM_DISABLE_PLUGINS="broken,dup")
    env.pop(SEQUENTIAL_ENV, None)
    return subprocess.Popen([sys.executable, "-m", "gpumem", "run", "--arch", "toyarch",
                             "toy-chase", "toy-slow", "--device", "sim", "--out", str(out),
                             *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _statuses(out: Path) -> dict[str, str]:
    try:
        entries = json.loads((out / MANIFEST).read_text())["entries"]
    except (FileNotFoundError, ValueError, ResultsFileError):
        return {}
    return {e["experiment"]: e["status"] for e in entries.values()}


def test_ctrl_c_keeps_what_ended_and_stops_the_rest_at_once(plugin_site, tmp_path):
    """-j 2: toy-chase and toy-slow start together; toy-chase ends, Ctrl-C while toy-slow
    measures: one line, exit 130, toy-chase kept, toy-slow interrupted; --resume ends it."""
    out = tmp_path / "run"
    proc = _start(out, plugin_site, "--workers", "2")
    deadline = time.monotonic() + 120
    while _statuses(out) != {"toy-chase": "complete", "toy-slow": "running"}:
        if time.monotonic() > deadline or proc.poll() is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"never saw toy-chase complete beside toy-slow running: "
                        f"{_statuses(out)} {proc.communicate()[1]}")
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
    t0 = time.monotonic()
    try:
        _stdout, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("gpumem did not exit within 30 s of Ctrl-C")
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) < 10, err
    assert "interrupted during 'toy-slow'" in err and "1 finished experiment(s) kept" in err
    assert _statuses(out) == {"toy-chase": "complete", "toy-slow": "interrupted"}
    entries = assert_whole_or_interrupted(out)
    assert entries["toy-slow"]["error"] == "interrupted (Ctrl-C)"
    chase = out / entries["toy-chase"]["file"]
    mtime = chase.stat().st_mtime_ns
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(plugin_site), env.get("PYTHONPATH"))
                                          if p), GPUMEM_DISABLE_PLUGINS="broken,dup")
    res = subprocess.run([sys.executable, "-m", "gpumem", "run", "--arch", "toyarch",
                          "toy-chase", "toy-slow", "--device", "sim", "--out", str(out),
                          "--workers", "2", "--resume"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert _statuses(out) == {"toy-chase": "complete", "toy-slow": "complete"}
    assert chase.stat().st_mtime_ns == mtime


def test_sigterm_ends_the_running_ones_as_terminated(plugin_site, tmp_path):
    out = tmp_path / "run"
    proc = _start(out, plugin_site, "--workers", "2")
    deadline = time.monotonic() + 120
    while _statuses(out).get("toy-slow") != "running":
        if time.monotonic() > deadline or proc.poll() is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"toy-slow never ran: {proc.communicate()[1]}")
        time.sleep(0.01)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)  # the parent only, as a batch system's kill
    try:
        _stdout, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("gpumem did not exit within 30 s of SIGTERM")
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM) during" in err and "Traceback" not in err, err
    entries = assert_whole_or_interrupted(out)
    assert entries["toy-slow"]["status"] == "interrupted"
    assert entries["toy-slow"]["error"] == "terminated (SIGTERM)"
