"""Each run judged by its own expected values (issue 28, item 5).

``gpumem compare --expected`` of runs of different architectures judges each run's findings
by its own architecture's (and device's) values, and ``--check`` fails a run by its own; the
built-in simulator's H200 (the packaged hopper config, and configs exported from H200 runs)
carries the reference cards' values, another simulated GPU does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpumem.cli import main
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Expected, status_of

ROOT = Path(__file__).resolve().parents[1]
H200_RUN = ROOT / "tests" / "data" / "h200-reruns" / "run1"


def _run(out: Path, arch: str, experiment: str, *extra: str) -> Path:
    assert main(["run", "--arch", arch, experiment, "--device", "sim", "--quick",
                 "--out", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def kepler_maxwell(tmp_path_factory) -> tuple[Path, Path]:
    """Quick simulated latency runs of a Kepler GTX 780 and a Maxwell GTX 980."""
    d = tmp_path_factory.mktemp("km")
    return _run(d / "kepler", "kepler", "latency"), _run(d / "maxwell", "maxwell", "latency")


def _compare(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["compare", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _expected(row: dict, label: str) -> Expected:
    e = row["expected_per_run"][label]
    return Expected(row["finding"], e["value"], e["source"], row["units"],
                    rel_tol=e["tolerance"]["rel"], abs_tol=e["tolerance"]["abs"])


# the latencies in ns: Mei & Chu give different cycles and the two cards different clocks,
# so a GTX 980's value fails the GTX 780's expectation
DIFFERING = ("lat.l2_ns", "lat.dram_ns")


@pytest.mark.parametrize("order", ["kepler first", "maxwell first"])
def test_each_run_is_judged_by_its_own_architectures_values(kepler_maxwell, capsys, order):
    runs = kepler_maxwell if order == "kepler first" else kepler_maxwell[::-1]
    code, data = _compare(capsys, *map(str, runs), "--expected")
    assert code == 0
    first, second = (r["label"] for r in data["runs"])
    assert [r["arch"] for r in data["runs"]] == [p.name for p in runs]
    assert all(r["expected_values"] > 0 for r in data["runs"])
    rows = {r["finding"]: r for r in data["rows"]}
    for name in DIFFERING:
        row = rows[name]
        own = {lb: _expected(row, lb) for lb in (first, second)}
        assert own[first].value != own[second].value
        # the row's expected value stays the first run's (what --json always gave)
        assert row["expected"] == own[first].value
        assert row["expected_source"] == own[first].source
        assert row["tolerance"] == row["expected_per_run"][first]["tolerance"]
        assert own[first].source.startswith("Mei & Chu")
        assert ("Kepler" in own[first].source) == (first == "kepler")
        assert ("Maxwell" in own[second].source) == (second == "maxwell")
        # each run passes its own value, and would fail the other architecture's
        for label, other in ((first, second), (second, first)):
            value = row["values"][label]
            assert row["status"][label] == status_of(value, own[label]) == "pass"
            assert status_of(value, own[other]) == "fail", (name, label)


def test_check_fails_a_run_by_its_own_value_only(kepler_maxwell, capsys):
    """Each run passes its own values: --check exits 0 (judged by the first run's values,
    the GTX 980's latencies in ns would fail)."""
    code, data = _compare(capsys, *map(str, kepler_maxwell), "--check")
    assert code == 0 and data["check"]["failing"] == []


def test_the_table_shows_each_runs_expected_value_where_they_differ(kepler_maxwell, capsys,
                                                                    monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # wide enough for the band and interval columns too
    capsys.readouterr()
    assert main(["compare", *map(str, kepler_maxwell), "--expected"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if " lat.dram_ns " in x)
    assert "kepler: 430.01; maxwell: 354.44" in line.replace("│", " ")
    assert "judged by its own architecture's" in out


def test_failing_rows_give_the_value_each_run_was_judged_by():
    from gpumem.cli.compare import expected_cells, failing_rows

    row = {"experiment": "latency", "finding": "lat.l1", "units": "cycle",
           "values": {"a": 28.0, "b": 60.0, "c": 70.0}, "status": {"b": "fail", "c": "fail"},
           "expected": 28.0, "expected_source": "A's", "tolerance": {"rel": 0.05, "abs": 0},
           "expected_per_run": {"a": None, "b": {"value": 44.0, "source": "B's",
                                                 "tolerance": {"rel": 0.05, "abs": 0}}}}
    # b by its own value; c shares the first run's (not in expected_per_run)
    got = [tuple(r[:6]) for r in failing_rows({"rows": [row]})]
    assert got == [("b", "latency", "lat.l1", 60.0, 44.0, "B's"),
                   ("c", "latency", "lat.l1", 70.0, 28.0, "A's")]
    # the band each was judged by, computed from its tolerance where the data has none
    assert [r.band for r in failing_rows({"rows": [row]})] == [[41.8, 46.2], [26.6, 29.4]]
    assert expected_cells(row, ["a", "b", "c"]) == ("a: -; b: 44", "B's")


def test_a_run_whose_architecture_no_plugin_knows_has_no_expected_values(
        kepler_maxwell, capsys, monkeypatch):
    """A run recorded as an architecture no plugin describes (a generic name no plugin
    gives values for) beside a known one: it is judged by nothing, the known run by its own."""
    import gpumem.interop.compare as cmp

    load = cmp.load_sources

    def renamed(target, *args, **kwargs):
        sources = load(target, *args, **kwargs)
        if Path(target).name == "maxwell":
            for s in sources:
                s.arch = "no_such_arch"
        return sources

    monkeypatch.setattr(cmp, "load_sources", renamed)
    code, data = _compare(capsys, *map(str, kepler_maxwell), "--check")
    assert code == 0
    assert [r["expected_values"] for r in data["runs"]][1] == 0
    rows = {r["finding"]: r for r in data["rows"]}
    row = rows["lat.l2_ns"]
    assert set(row["status"]) == {"kepler"}            # maxwell's value judged by nothing
    assert row["expected_per_run"]["maxwell"] is None
    assert row["expected"] == row["expected_per_run"]["kepler"]["value"]
    assert rows["l1d.size"]["status"] == {}            # a finding only maxwell has
    # the unknown one first: no row has a first-run expectation, kepler's are its own
    code, data = _compare(capsys, *map(str, kepler_maxwell[::-1]), "--expected")
    row = next(r for r in data["rows"] if r["finding"] == "lat.l2_ns")
    assert "expected" not in row and set(row["status"]) == {"kepler"}
    assert row["expected_per_run"]["maxwell"] is None
    assert row["status"]["kepler"] == "pass"


def test_runs_of_one_architecture_and_device_keep_the_plain_row(kepler_maxwell, capsys):
    """Same architecture, same device: one expectation per row, no per-run entries."""
    kepler = str(kepler_maxwell[0])
    code, data = _compare(capsys, kepler, kepler, "--expected")
    assert code == 0
    assert not any("expected_per_run" in r for r in data["rows"])
    row = next(r for r in data["rows"] if r["finding"] == "lat.l2_ns")
    assert set(row["status"]) == {"kepler", "kepler#2"}


# ---- the simulated H200 carries the reference cards' values ----------------------------------


def _device(kind: str, name: str) -> DeviceInfo:
    return DeviceInfo(kind=kind, name=name, compute_capability="9.0", sm_count=132,
                      l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                      peak_bandwidth_gbs=4800.0)


@pytest.mark.parametrize("kind, name, reference", [
    ("cuda", "NVIDIA H200", True), ("cuda", "NVIDIA H200 NVL", True),
    ("cuda", "NVIDIA H100 80GB HBM3", False), ("cuda", "NVIDIA GH200 480GB", False),
    ("sim", "sim h200", True), ("sim", "sim h200-calibrated", True),
    ("sim", "sim H200-Calibrated", True),
    ("sim", "sim h2000", False), ("sim", "sim h200x", False), ("sim", "sim gtx780", False),
    ("sim", "sim my-h200", False), ("accelsim", "accelsim h200", False)])
def test_which_devices_get_the_reference_values(kind, name, reference):
    from gpumem.plugin.registry import get_plugins
    from gpumem_hopper.expected import models_reference_card

    assert models_reference_card(_device(kind, name)) == reference
    got = get_plugins().expected_values("hopper", _device(kind, name))
    assert any(e.source.startswith("REFERENCE") for e in got) == reference
    assert len({e.name for e in got}) == len(got)


def test_a_gh200_gets_gpu_benches_figures_not_the_h200_fleets():
    """"NVIDIA GH200 480GB" contains "H200": it once took the H200 fleet's values."""
    from gpumem.plugin.registry import get_plugins

    got = get_plugins().expected_values("hopper", _device("cuda", "NVIDIA GH200 480GB"))
    assert any("gpu-benches" in e.source for e in got), [e.source[:40] for e in got]
    assert not any("healthy H200" in e.source for e in got)


def _findings(run: Path) -> dict[str, dict]:
    manifest = json.loads((run / "manifest.json").read_text())
    return {name: f for entry in manifest["entries"].values()
            for name, f in (entry.get("findings") or {}).items()}


def test_a_simulated_h200_run_carries_the_reference_values(tmp_path):
    """The packaged hopper config and a config exported from an H200 run: lat.smem is
    judged by the reference cards' value, its source unchanged; a simulated GTX 780 gets
    no reference value."""
    packaged = _findings(_run(tmp_path / "h200", "hopper", "smem_latency"))
    assert main(["export", "sim", str(H200_RUN), "--out", str(tmp_path / "cal.toml")]) == 0
    assert 'name = "h200-calibrated"' in (tmp_path / "cal.toml").read_text()
    calibrated = _findings(_run(tmp_path / "cal", "hopper", "smem_latency",
                                "--sim-config", str(tmp_path / "cal.toml")))
    for found in (packaged, calibrated):
        smem = found["lat.smem"]
        assert smem["expected"] == 27.19 and smem["expected_source"].startswith(
            "gpumem on healthy H200")
        assert smem["status"] == "pass"
    kepler = _findings(_run(tmp_path / "kepler", "kepler", "smem_latency"))
    assert kepler and not any(f["expected_source"].startswith(("REFERENCE", "gpumem on healthy"))
                              for f in kepler.values())


def test_a_config_exported_from_an_h100_run_is_no_simulated_h200(tmp_path):
    """An H100's run exported onto the packaged hopper config (an H200's) once kept the
    base's name, ``h200-calibrated``: its simulated runs were judged by the H200 fleet's
    values and its file described an H200. It is named and described after the run's GPU."""
    run = ROOT / "tests" / "data" / "h100-s32" / "gpua2f55-all" / "tw1"
    assert main(["export", "sim", str(run), "--out", str(tmp_path / "exp")]) == 0
    (toml,) = (tmp_path / "exp").glob("*.toml")
    assert toml.name == "h100-80gb-hbm3-calibrated.toml"
    text = toml.read_text()
    assert 'name = "h100-80gb-hbm3-calibrated"' in text
    assert 'description = "NVIDIA H100 80GB HBM3 calibrated from a gpumem run' in text
    found = _findings(_run(tmp_path / "sim", "hopper", "smem_latency", "--sim-config",
                           str(toml)))
    assert found and not any(f["expected_source"].startswith(("REFERENCE", "gpumem on healthy H200"))
                             for f in found.values())


@pytest.mark.parametrize("device, name", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100-80gb-hbm3"),
    ("NVIDIA GH200 480GB", "gh200-480gb"), ("NVIDIA H200 NVL", "h200-nvl"),
    ("../../etc/passwd", "etc-passwd"), ('a"\nsm_count = 7', "a-sm-count-7"), ("NVIDIA", ""),
    ("  ", ""), ("Ünïcode GPU", "n-code-gpu"), ("x" * 80, "x" * 40)])
def test_config_names_from_a_runs_gpu_name(device, name):
    """The exported config's name (and file name) from a run's device name, which is the
    run's to say: letters, digits and hyphens only, never a path."""
    from gpumem.interop.calibrate import config_name

    assert config_name(device) == name
