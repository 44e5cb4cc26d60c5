"""A GPU shared with another process (issue 30, item 1), on the built-in simulator.

The simulator's ``[neighbour]`` plays the second process: NVML-like readings beside each
point and the effects an H200 showed (slower hits, time slices, a slowed timed run). Every
finding of a contended experiment must say ``contended`` (neither pass nor fail), ``run``
prints one line naming what was seen, ``--check`` exits 1 with that reason, and the same
run without the neighbour passes. ``--exclusive`` waits for a free GPU and refuses
otherwise. The data-side evidence is tested on planted raw data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.contention import (
    CONTENDED,
    GAP_S,
    SCATTER_BY,
    SCATTER_INHERENT,
    DeviceBusy,
    Neighbour,
    assess,
    mark,
    reapply,
    wait_until_free,
)
from gpumem.contracts.findings import Finding
from gpumem.results.store import MANIFEST

ROOT = Path(__file__).resolve().parents[1]
HOPPER = ROOT / "plugins/hopper/src/gpumem_hopper/sim.toml"


def neighbour_config(tmp_path: Path, **fields) -> Path:
    """The hopper simulator with a ``[neighbour]`` table."""
    text = HOPPER.read_text(encoding="utf-8") + "\n[neighbour]\n" + "".join(
        f"{k} = {v!r}\n".replace("'", '"') for k, v in fields.items())
    path = tmp_path / "neighbour.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``latency bandwidth --quick --check`` with an active neighbour, and without one."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    base = tmp_path_factory.mktemp("contention")
    cfg = neighbour_config(base, processes=1, busy_pct=30.0)
    out = {}
    for label, extra in (("shared", ["--sim-config", str(cfg)]), ("alone", [])):
        reset_plugins()
        code = main(["run", "--arch", "hopper", "--device", "sim", "latency", "bandwidth",
                     "--quick", "--check", "--out", str(base / label), *extra])
        out[label] = (code, base / label)
    return out


def _entries(run_dir: Path) -> dict:
    return json.loads((run_dir / MANIFEST).read_text())["entries"]


def test_every_finding_of_a_shared_run_is_contended_and_check_exits_1(runs, capfd):
    code, run_dir = runs["shared"]
    assert code == 1
    entries = _entries(run_dir)
    assert {e["experiment"] for e in entries.values()} == {"latency", "bandwidth"}
    for e in entries.values():
        assert e["contention"].startswith("another process used the GPU (pid 4000000 "
                                          "simulated neighbour, 30 % busy)"), e["contention"]
        statuses = {f["status"] for f in e["findings"].values()}
        assert statuses == {CONTENDED}, (e["experiment"], statuses)
        for f in e["findings"].values():
            assert "contended: another process used the GPU" in f["note"]


def test_the_same_run_without_the_neighbour_is_not_contended(runs):
    _code, run_dir = runs["alone"]
    for e in _entries(run_dir).values():
        assert "contention" not in e
        assert CONTENDED not in {f["status"] for f in e["findings"].values()}


def test_the_shared_run_keeps_its_evidence_per_point_and_in_the_file(runs):
    _code, run_dir = runs["shared"]
    for path in sorted(run_dir.glob("*/*.nc")):
        ds = xr.open_dataset(path)
        try:
            assert (ds["point_contended"].values[ds["point_status"].values == 0] == 1).all()
            assert (ds["point_other_active_processes_before"].values[
                ds["point_status"].values == 0] == 1).all()
            assert ds.attrs["gpumem_contention"].startswith("another process used the GPU")
            assert "simulated neighbour" in ds.attrs["after_neighbours_seen"]
        finally:
            ds.close()
    (latency,) = run_dir.glob("*/latency-*.nc")
    ds = xr.open_dataset(latency)
    try:  # the time slices are in the data as well: the reason names them
        assert "waited up to 1.31 ms on one access" in ds.attrs["gpumem_contention"]
    finally:
        ds.close()


def test_a_run_without_a_neighbour_stores_no_contention_variables(runs):
    _code, run_dir = runs["alone"]
    for path in run_dir.glob("*/*.nc"):
        ds = xr.open_dataset(path)
        try:
            assert "point_contended" not in ds and not ds.attrs.get("gpumem_contention")
        finally:
            ds.close()


def test_run_prints_one_line_naming_what_was_seen(cli, tmp_path):
    cfg = neighbour_config(tmp_path, processes=2, busy_pct=55.0)
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "latency", "--quick", "--out", str(tmp_path / "r"))
    assert r.code == 0  # without --check a contended run is kept and exits 0
    lines = [ln for ln in r.err.splitlines() if ln.startswith("gpumem: contended:")]
    assert len(lines) == 1, r.err
    assert "pid 4000000 simulated neighbour, 55 % busy; pid 4000001" in lines[0]
    assert "finding(s) marked contended, neither pass nor fail" in lines[0]
    assert "--exclusive" in lines[0]


def test_check_names_the_reason(cli, tmp_path):
    cfg = neighbour_config(tmp_path, processes=1, busy_pct=30.0)
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "latency", "--quick", "--check", "--out", str(tmp_path / "r"))
    assert r.code == 1
    assert "contended" in r.err and "another process used the GPU" in r.err


def test_an_idle_neighbour_holding_a_context_is_not_contention(cli, tmp_path):
    """A notebook with a framework imported holds a context and uses no SMs: listed, not
    contending (the per-point readings keep it)."""
    cfg = neighbour_config(tmp_path, processes=1, busy_pct=0.0)
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "latency", "--quick", "--out", str(tmp_path / "r"))
    assert r.code == 0 and "contended" not in r.err
    (path,) = (tmp_path / "r").glob("*/latency-*.nc")
    ds = xr.open_dataset(path)
    try:
        ran = ds["point_status"].values == 0
        assert (ds["point_other_processes_before"].values[ran] == 1).all()
        assert (ds["point_contended"].values[ran] == 0).all()
    finally:
        ds.close()


def test_reanalysis_of_a_contended_file_stays_contended(runs, cli):
    _code, run_dir = runs["shared"]
    (latency,) = run_dir.glob("*/latency-*.nc")
    r = cli("analyze", str(latency), "--json")
    assert r.code == 0, r.err
    statuses = {f["status"] for f in json.loads(r.out)["findings"].values()}
    assert statuses == {CONTENDED}


def test_compare_expected_keeps_a_contended_run_contended(runs, cli):
    _code, run_dir = runs["shared"]
    r = cli("compare", "--expected", str(run_dir), "--json", "--check")
    assert r.code == 1, r.err
    rows = json.loads(r.out)["rows"]
    judged = [s for row in rows for s in row["status"].values()]
    assert judged and set(judged) == {CONTENDED}


# ---- --exclusive ------------------------------------------------------------------------


def test_exclusive_refuses_a_busy_gpu_after_the_wait_and_writes_nothing(cli, tmp_path):
    cfg = neighbour_config(tmp_path, processes=1, busy_pct=30.0)
    out = tmp_path / "r"
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "latency", "--quick", "--exclusive", "0.2", "--out", str(out))
    assert r.code == 75, r.err
    last = r.err.strip().splitlines()[-1]
    assert "--exclusive: the GPU was still in use after" in last
    assert "pid 4000000 simulated neighbour" in last and "nothing was measured" in last
    assert not out.exists()


def test_exclusive_runs_on_a_free_gpu(cli, tmp_path):
    cfg = neighbour_config(tmp_path, processes=1, busy_pct=0.0)  # present, idle
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "latency", "--quick", "--exclusive", "5", "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err


def test_exclusive_rejects_a_negative_wait(cli, tmp_path):
    r = cli("run", "--arch", "hopper", "--device", "sim", "latency", "--quick",
            "--exclusive", "-1", "--out", str(tmp_path / "r"))
    assert r.code == 2 and "--exclusive" in r.err
    assert not (tmp_path / "r").exists()


def _busy(until: float, now: list[float]):
    nb = Neighbour(517, "/usr/bin/python3", 4_800_000_000, "compute", 24.0)
    return lambda: [nb] if now[0] < until else []


def test_wait_until_free_returns_when_the_neighbour_leaves():
    now, said = [0.0], []

    def sleep(s):
        now[0] += s

    wait_until_free(_busy(3.0, now), 10.0, said.append, clock=lambda: now[0], sleep=sleep)
    assert 3.0 <= now[0] < 4.0
    assert said == ["--exclusive: waiting up to 10 s for pid 517 python3, 4.8 GB, 24 % busy "
                    "to leave the GPU"]


def test_wait_until_free_refuses_when_the_neighbour_stays_and_when_it_cannot_look():
    now = [0.0]

    def sleep(s):
        now[0] += s

    with pytest.raises(DeviceBusy, match="still in use after 5 s by pid 517 python3"):
        wait_until_free(_busy(99.0, now), 5.0, lambda _m: None, clock=lambda: now[0],
                        sleep=sleep)
    assert DeviceBusy.exit_code == 75
    with pytest.raises(DeviceBusy, match="cannot list other processes"):
        wait_until_free(lambda: None, 5.0, lambda _m: None)


# ---- the data-side evidence ------------------------------------------------------------


def chase_raw(gap_cycles: float = 0.0, clock_mhz: float = 1980.0) -> xr.Dataset:
    rng = np.random.default_rng(1)
    lat = 280 + rng.normal(0, 5, (4, 256))
    if gap_cycles:
        lat[2, 100] += gap_cycles
    ds = xr.Dataset({"latency": (("footprint", "access"), lat, {"units": "1",
                                                                 "gpumem_units": "cycle"}),
                     "timer_overhead": (("footprint",), np.full(4, 30.0),
                                        {"gpumem_units": "cycle"})},
                    coords={"footprint": [1, 2, 3, 4], "access": np.arange(256)})
    ds.attrs["clock_mhz"] = clock_mhz
    return ds


def test_a_time_slice_in_a_chase_is_contention_and_a_tlb_miss_is_not():
    assert not assess(chase_raw()).found
    assert not assess(chase_raw(gap_cycles=5000)).found       # a slow page walk: < 3 us
    c = assess(chase_raw(gap_cycles=2.6e6))                   # 1.3 ms: a time slice
    assert c.found and c.gap_chases == 1
    assert "1 chase(s) waited up to 1.31 ms on one access" in c.reason()
    limit = GAP_S * 1980e6
    assert not assess(chase_raw(gap_cycles=limit * 0.9 - 280)).found
    assert not assess(chase_raw(gap_cycles=2.6e6, clock_mhz=0)).found  # no clock: no time


def stream_raw(slowed_points: int, points: int = 100) -> xr.Dataset:
    rng = np.random.default_rng(2)
    gbs = 4400 * (1 + rng.normal(0, 0.005, (points, 10)))
    gbs[:slowed_points, 3] /= 2
    return xr.Dataset({"gbs": (("ctas", "repeat"), gbs, {"units": "Gbyte/s",
                                                         "gpumem_units": "GB/s"})},
                      coords={"ctas": np.arange(points), "repeat": np.arange(10)})


def test_bandwidth_scatter_counts_only_beyond_a_stray_point():
    assert not assess(stream_raw(0)).found
    assert not assess(stream_raw(1)).found      # an idle H200 has one such point in 720
    c = assess(stream_raw(10))
    assert c.found and c.scattered == 10
    assert "10 of 100 bandwidth point(s) scattered" in c.reason()


def shared_raw(slowed: int, inherent: bool = True) -> xr.Dataset:
    """l2_bandwidth's shape: 50 points at 8 blocks a line, 50 at 32 whose repeats read two
    rates (0.67 and 1.0, as the request coalescer merges more or less on an idle H100);
    ``slowed`` share-8 points with a repeat halved (a neighbour)."""
    rng = np.random.default_rng(3)
    gbs = 8000 * (1 + rng.normal(0, 0.005, (2, 50, 12)))
    gbs[1, :10, ::3] *= 0.67
    gbs[0, :slowed, 4] /= 2
    raw = xr.Dataset({"gbs": (("share", "ctas", "repeat"), gbs, {"gpumem_units": "GB/s"})},
                     coords={"share": [8, 32], "ctas": np.arange(50), "repeat": np.arange(12)})
    if inherent:
        raw.attrs.update({f"plan_{SCATTER_BY}": "share", f"plan_{SCATTER_INHERENT}": 32})
    return raw


def test_points_that_scatter_by_themselves_are_no_evidence():
    assert assess(shared_raw(0, inherent=False)).found  # without the experiment's word
    assert not assess(shared_raw(0)).found
    c = assess(shared_raw(5))  # a neighbour still shows in the other share
    assert c.found and c.scattered == 5 and c.measured == 50


def test_the_committed_idle_h200_runs_show_no_contention():
    """Every raw file of the reference H200 runs (an idle card) passes the detector: it
    must not cry wolf on the card the expected values came from."""
    from gpumem.results.io import open_raw

    files = sorted((ROOT / "tests/data").glob("h200*/**/*.nc"))
    assert len(files) >= 40
    for path in files:
        c = assess(open_raw(path))
        assert not c.found, (path, c.reason())


def test_mark_leaves_unmodelled_findings_and_reapply_reads_the_file_attribute():
    fs = [Finding("lat.l2", 283.0, "cycle", status="pass"),
          Finding("bw.l1", 1.0, "GB/s", status="not modelled")]
    out = mark(fs, "x seen")
    assert [f.status for f in out] == [CONTENDED, "not modelled"]
    assert out[0].note == "contended: x seen"
    assert mark(out, "x seen")[0].note == "contended: x seen"   # not twice
    assert reapply(fs, {"gpumem_contention": ""}) == fs
    assert reapply(fs, {"gpumem_contention": "x seen"})[0].status == CONTENDED


def test_adaptive_searches_are_watched_too(cli, tmp_path):
    """cache_structure and tlb_structure drive their own search (no grid points to read
    the device beside): the watch at their start and end sees the neighbour, and their chase
    logs' events show its time slices."""
    cfg = neighbour_config(tmp_path, processes=1, busy_pct=30.0)
    out = tmp_path / "r"
    r = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(cfg),
            "cache_structure", "--quick", "--out", str(out))
    assert r.code == 0, r.err
    (e,) = _entries(out).values()
    assert "in 2 of 2 looks during the experiment" in e["contention"]
    assert "chase(s) waited up to 1.31 ms" in e["contention"]
    assert {f["status"] for f in e["findings"].values()} == {CONTENDED}


def test_a_watch_looks_at_most_every_quarter_second_unless_forced():
    from gpumem.contracts.contention import Watch

    now = [0.0]
    calls = []
    nb = Neighbour(9, "x", 0, "compute", 5.0)

    def look():
        calls.append(now[0])
        return [nb]

    w = Watch(look, clock=lambda: now[0])
    w.sample(force=True)
    for _ in range(10):
        now[0] += 0.1
        w.sample()
    w.sample(force=True)
    assert [round(t, 6) for t in calls] == [0.0, 0.3, 0.6, 0.9, 1.0]  # 0.25 s apart, forced
    assert w.attrs() == {"gpumem_neighbour_looks": 5, "gpumem_neighbour_seen": 5}
    still = Watch(look, timed=False, clock=lambda: now[0])
    still.sample()
    still.sample(force=True)
    assert still.looks == 1
    assert Watch(lambda: None).attrs() == {}


def test_a_time_slice_among_a_chase_logs_events_is_found():
    events = xr.Dataset({
        "event_chase": (("event",), np.array([0, 0, 1, 2, 2])),
        "event_latency": (("event",), np.array([600.0, 700.0, 2.6e6, 650.0, 3.0e6]),
                          {"units": "1", "gpumem_units": "cycle"})})
    events.attrs["clock_mhz"] = 1980.0
    c = assess(events)
    assert c.gap_chases == 2 and "2 chase(s) waited up to 1.52 ms" in c.reason()
    events["event_latency"].values[[2, 4]] = 900.0
    assert not assess(events).found
