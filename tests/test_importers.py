"""``gpumem import mt4g|gpu-benches``: other tools' results as run directories that
``gpumem show`` and ``gpumem compare`` read beside measured ones, with findings under gpumem's
names and the tool's numbers as raw data; bad files are one line, exit 1, and write nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from gpumem.interop.compare import load_source
from gpumem.plugin.registry import get_plugins
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import RunStore, sha256_file

DATA = Path(__file__).parent / "data"
MT4G = DATA / "mt4g" / "NVIDIA H100 80GB HBM3.json"
BENCH = DATA / "gpu-benches"
H200_RUN = DATA / "h200-run"

#: MT4G's H100 file, by hand: (experiment, finding) -> value in gpumem's units
MT4G_EXPECTED = {
    ("latency", "lat.l1"): 38.0,                    # memory.l1.latency.p50, cycles
    ("latency", "lat.l1_ns"): 19.192,               # 38 / 1980 MHz (general.clockRate)
    ("latency", "lat.l2"): 222.0,
    ("latency", "lat.l2_ns"): 112.121,
    ("latency", "lat.dram_tlb_miss"): 864.0,        # memory.main.latency.p50
    ("latency", "lat.dram_tlb_miss_ns"): 436.364,
    ("latency", "l1d.size"): 238848,
    ("latency", "l2.size"): 52428800,               # device query
    ("latency", "l2.near_size"): 26214400,          # segmentSize, half the L2
    ("cache_structure", "l1d.hit_latency"): 38.0,
    ("cache_structure", "l1d.line"): 128,
    ("cache_structure", "l1d.sector"): 32,          # fetchGranularity
    ("cache_structure", "l2.hit_latency"): 222.0,
    ("cache_structure", "l2.line"): 128,
    ("cache_structure", "l2.sector"): 32,
    ("cache_structure", "ro.hit_latency"): 34.0,
    ("cache_structure", "ro.overflow_size"): 238848,
    ("cache_structure", "ro.line"): 128,
    ("cache_structure", "ro.sector"): 32,
    ("cache_structure", "tex_l1.hit_latency"): 42.0,
    ("cache_structure", "tex_l1.overflow_size"): 243456,
    ("cache_structure", "tex_l1.line"): 128,
    ("cache_structure", "tex_l1.sector"): 32,
    ("cache_structure", "const_l1.hit_latency"): 17.0,
    ("cache_structure", "const_l1.overflow_size"): 2112,
    ("cache_structure", "const_l1.line"): 64,
    ("cache_structure", "const_l1.sector"): 64,
    ("smem_latency", "lat.smem"): 30.0,
    ("bandwidth", "bw.dram_read"): 2749.89,         # 2561.0317 GiB/s x 1.073741824
    ("bandwidth", "bw.dram_write"): 3012.81,        # 2805.8960 GiB/s x 1.073741824
    ("bandwidth", "bw.dram_read_fraction"): 0.8203,  # / (2 x 2619 MHz x 5120 bit / 8)
    ("bandwidth_levels", "bw.l2"): 4862.89,         # 4528.9225 GiB/s x 1.073741824
}


def _findings(run: Path) -> dict[tuple[str, str], object]:
    src = load_source(run)
    return {k: f.value for k, f in src.findings.items()}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _left_behind(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


# ---------------------------------------------------------------------------------------------
# MT4G
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def mt4g_run(cli, tmp_path) -> Path:
    out = tmp_path / "mt4g-h100"
    res = cli("import", "mt4g", str(MT4G), "--out", str(out))
    assert res.code == 0, res.err
    assert res.out.strip() == str(out)
    return out


def test_mt4g_import_writes_a_valid_run_directory(mt4g_run):
    store = RunStore(mt4g_run)
    entries = list(store.entries())
    assert {e.data["experiment"] for e in entries} == {
        "latency", "cache_structure", "smem_latency", "bandwidth", "bandwidth_levels"}
    sha = hashlib.sha256(MT4G.read_bytes()).hexdigest()
    for e in entries:
        ok, why = store.is_complete(e.key)
        assert ok, why
        assert e.key.startswith("mt4g-nvidia-h100-80gb-hbm3/")
        raw = open_raw(mt4g_run / e.data["file"])
        a = raw.attrs
        assert a["Conventions"] == "CF-1.12" and a["source"].startswith("measured by MT4G")
        assert a["gpumem_experiment"] == e.data["experiment"]
        assert a["gpumem_imported_from"] == "MT4G" and a["import_tool"] == "MT4G"
        assert a["import_tool_version"].startswith("unknown")
        assert a["import_source_file"] == MT4G.name and a["import_source_sha256"] == sha
        assert a["import_device_name"] == a["device_name"] == "NVIDIA H100 80GB HBM3"
        assert a["gpumem_arch"] == "hopper"          # compute capability 9.0, vendor NVIDIA
        assert a["compute_capability"] == "9.0" and a["sm_count"] == 132
        assert a["l2_bytes"] == 52428800 and a["peak_bandwidth_gbs"] == 3352.32
        for name, v in raw.variables.items():
            assert "units" in v.attrs and "long_name" in v.attrs, name
        assert str(raw["source_text"].values) == MT4G.read_text()
        findings = open_findings(mt4g_run / e.data["file"])
        assert set(e.data["findings"]) == {v.attrs["gpumem_finding"]
                                           for v in findings.data_vars.values()}
    assert not (mt4g_run / "manifest.json.lock").exists()


def test_mt4g_raw_data_are_its_numbers_in_its_units(mt4g_run):
    raw = open_raw(next(mt4g_run.glob("*/latency-*.nc")))
    assert list(raw["level"].values) == ["constant.l1", "constant.l1.5", "l1", "l2", "main",
                                         "readOnly", "shared", "texture"]
    assert raw["latency_p50"].sel(level="l1").item() == 38.0
    assert raw["latency_p95"].sel(level="main").item() == pytest.approx(1126.4)
    assert raw["latency_p50"].attrs["units"] == "cycle"
    assert raw["read_bandwidth"].attrs["units"] == "GiB/s"
    assert raw["read_bandwidth"].sel(level="main").item() == pytest.approx(2561.031719280527)
    assert raw["miss_penalty"].sel(level="l2").item() == pytest.approx(399.9450980392156)
    assert raw["size"].sel(level="constant.l1.5").item() == 65537     # kept, not mapped
    assert raw["size_method"].sel(level="l2").item() == "device query"
    assert raw["segment_size_confidence"].sel(level="l2").item() == pytest.approx(0.92882818)


def test_mt4g_findings_match_the_file_by_hand(mt4g_run):
    got = _findings(mt4g_run)
    for key, want in MT4G_EXPECTED.items():
        assert key in got, key
        assert got[key] == pytest.approx(want, abs=1e-9), key
    # nothing without a gpumem name of the same meaning
    names = {n for _e, n in got}
    assert not any("penalty" in n or ("write" in n and n != "bw.dram_write") for n in names)
    assert not {"lat.dram", "lat.l2_far", "l2.partitions", "l2.fill_unit"} & names
    assert len(got) == len(MT4G_EXPECTED)


def test_mt4g_methods_say_what_was_converted(mt4g_run):
    src = load_source(mt4g_run)
    f = src.findings
    assert "p50" in f[("latency", "lat.l1")].method
    assert "timer overhead not removed" in f[("latency", "lat.l1")].method
    assert "1980 MHz" in f[("latency", "lat.l1_ns")].method
    assert "membar.gl" in f[("latency", "lat.dram_tlb_miss")].method
    assert "2561.03 GiB/s x 1.073741824" in f[("bandwidth", "bw.dram_read")].method
    assert "device query" in f[("latency", "l2.size")].method
    assert f[("latency", "l1d.size")].confidence == pytest.approx(0.9715514224288786)
    assert f[("latency", "lat.l2")].confidence == pytest.approx(1 - 11.568289431215238
                                                               / 219.34509803921569)


def test_show_and_compare_line_up_with_a_measured_run(cli, mt4g_run):
    shown = cli("show", str(mt4g_run))
    assert shown.code == 0, shown.err
    assert "lat.l1" in shown.out and "latency_p50" in shown.out
    res = cli("compare", str(mt4g_run), str(H200_RUN), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert [r["device"] for r in data["runs"]] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    rows = {(r["experiment"], r["finding"]): r["values"] for r in data["rows"]}
    h200 = _h200_findings()
    for key in [("latency", "lat.l1"), ("latency", "l2.size"), ("latency", "lat.l2"),
                ("smem_latency", "lat.smem"), ("bandwidth", "bw.dram_read"),
                ("bandwidth_levels", "bw.l2"), ("cache_structure", "l1d.hit_latency")]:
        assert rows[key] == {"mt4g-h100": MT4G_EXPECTED[key], "h200-run": h200[key]}, key
    text = cli("compare", str(mt4g_run), str(H200_RUN))
    assert text.code == 0 and "lat.l1" in text.out and "mt4g-h100" in text.out
    expected = cli("compare", str(mt4g_run), str(H200_RUN), "--expected", "--json")
    assert expected.code == 0, expected.err
    row = {r["finding"]: r for r in json.loads(expected.out)["rows"]}["l2.size"]
    assert row["status"]["mt4g-h100"] == "pass"      # hopper: the device's own L2 size


def test_analyze_refuses_an_imported_file_in_one_line(cli, mt4g_run):
    nc = next(mt4g_run.rglob("latency-*.nc"))
    res = cli("analyze", str(nc))
    assert res.code == 2 and "imported from" in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_mt4g_arch_is_given_or_claimed_by_vendor_and_capability(cli, tmp_path):
    doc = json.loads(MT4G.read_text())
    doc["general"]["vendor"] = "AMD"                 # HIP reports an MI100 as 9.0 too
    amd = tmp_path / "amd.json"
    amd.write_text(json.dumps(doc))
    res = cli("import", "mt4g", str(amd), "--out", str(tmp_path / "a"))
    assert res.code == 0, res.err
    assert "no architecture plugin claims AMD" in res.err
    assert load_source(tmp_path / "a").arch == ""
    assert ("bandwidth", "bw.dram_read_fraction") not in _findings(tmp_path / "a")
    res = cli("import", "mt4g", str(MT4G), "--out", str(tmp_path / "k"), "--arch", "kepler")
    assert res.code == 0 and load_source(tmp_path / "k").arch == "kepler"
    bad = cli("import", "mt4g", str(MT4G), "--out", str(tmp_path / "x"), "--arch", "nosuch")
    assert bad.code == 2 and "unknown architecture 'nosuch'" in bad.err
    assert not (tmp_path / "x").exists()


def test_mt4g_values_in_other_units_are_converted(cli, tmp_path):
    doc = json.loads(MT4G.read_text())
    lat = doc["memory"]["l1"]["latency"]
    lat.update({k: lat[k] / 1.98 for k in ("mean", "p50", "p95", "stdev")}, unit="ns")
    doc["memory"]["main"]["readBandwidth"] = {"unit": "GB/s", "value": 2750.0}
    doc["memory"]["l1"]["size"]["size"], doc["memory"]["l1"]["size"]["unit"] = 233.25, "KiB"
    f = tmp_path / "ns.json"
    f.write_text(json.dumps(doc))
    assert cli("import", "mt4g", str(f), "--out", str(tmp_path / "r")).code == 0
    src = load_source(tmp_path / "r")
    l1 = src.findings[("latency", "lat.l1")]
    assert l1.value == pytest.approx(38.0) and "converted from ns at 1980 MHz" in l1.method
    assert src.findings[("bandwidth", "bw.dram_read")].value == pytest.approx(2750.0)
    assert src.findings[("latency", "l1d.size")].value == 238848


# ---------------------------------------------------------------------------------------------
# gpu-benches
# ---------------------------------------------------------------------------------------------

#: read off the fixtures by hand (tests/data/gpu-benches/README.md)
BENCH_EXPECTED = {
    "gpu-latency-h200-like.txt": ("latency", {
        "lat.l1": 32.0, "lat.l1_ns": 16.162, "l1d.size": 209101, "lat.l2": 280.4,
        "lat.l2_ns": 141.616, "lat.dram_tlb_miss": 689.2, "lat.dram_tlb_miss_ns": 348.081}),
    "gpu-stream-h200-like.txt": ("bandwidth", {
        "bw.dram_read": 2106.0, "bw.dram_write": 3876.0, "bw.dram_copy": 3017.0}),
    "gpu-l2-cache-h200-like.txt": ("bandwidth_levels", {"bw.l2_gpu_l2_cache": 10400.0}),
}


@pytest.mark.parametrize("name", sorted(BENCH_EXPECTED))
def test_gpu_benches_import_and_findings_by_hand(cli, tmp_path, name):
    out = tmp_path / "run"
    res = cli("import", "gpu-benches", str(BENCH / name), "--out", str(out))
    assert res.code == 0, res.err
    experiment, want = BENCH_EXPECTED[name]
    got = _findings(out)
    assert got == pytest.approx({(experiment, k): v for k, v in want.items()})
    (entry,) = RunStore(out).entries()
    assert RunStore(out).is_complete(entry.key)[0]
    raw = open_raw(out / entry.data["file"])
    bench = name.rsplit("-h200", 1)[0]
    assert raw.attrs["import_benchmark"] == bench
    assert raw.attrs["import_tool"] == f"gpu-benches {bench}"
    assert raw.attrs["import_device_name"].startswith("not reported")
    assert raw.attrs["import_source_sha256"] == sha256_file(BENCH / name)
    assert raw.attrs["gpumem_arch"] == ""
    for v in raw.variables.values():
        assert "units" in v.attrs and "long_name" in v.attrs
    assert cli("show", str(out)).code == 0


def test_gpu_latency_raw_data(cli, tmp_path):
    cli("import", "gpu-benches", str(BENCH / "gpu-latency-h200-like.txt"), "--out",
        str(tmp_path / "r"))
    raw = open_raw(next((tmp_path / "r").glob("*/latency-*.nc")))
    assert raw.sizes["footprint"] == 238
    assert raw["footprint"].values[0] == 2048 and raw["footprint"].values[-1] == 2150927360
    assert raw["latency_median"].sel(footprint=209101).item() == 32.1
    assert raw["clock_mhz"].attrs["units"] == "MHz"
    assert list(raw.attrs["clock_readings_mhz"]) == [1980] * 24
    method = load_source(tmp_path / "r").findings[("latency", "l1d.size")]
    assert method.note == "capacity between 209101 and 218522 B"


def test_gpu_stream_raw_data(cli, tmp_path):
    cli("import", "gpu-benches", str(BENCH / "gpu-stream-h200-like.txt"), "--out",
        str(tmp_path / "r"))
    raw = open_raw(next((tmp_path / "r").glob("*/bandwidth-*.nc")))
    assert raw["bandwidth"].dims == ("launch", "kernel") and raw.sizes["launch"] == 39
    assert list(raw["kernel"].values)[:4] == ["init", "read", "scale", "triad"]
    assert raw["bandwidth"].sel(kernel="read").values[-1] == 2106
    assert raw["occupancy"].values[0] == 0.8 and raw["blocks_per_sm"].values[7] == 2
    assert raw.attrs["sm_count"] == 132                 # 2112 threads / (16 x 1)


def _h200_findings() -> dict:
    """The committed H200 run's findings, (experiment, name) -> value, as compare reads them."""
    from gpumem.interop.compare import load_source

    return {k: f.value for k, f in load_source(H200_RUN).findings.items()}


def test_gpu_benches_result_compares_with_a_measured_run(cli, tmp_path):
    cli("import", "gpu-benches", str(BENCH / "gpu-latency-h200-like.txt"), "--out",
        str(tmp_path / "gl"))
    res = cli("compare", str(tmp_path / "gl"), str(H200_RUN), "--json")
    assert res.code == 0, res.err
    rows = {(r["experiment"], r["finding"]): r["values"] for r in json.loads(res.out)["rows"]}
    assert rows[("latency", "lat.l2")] == {"gl": 280.4,
                                           "h200-run": _h200_findings()[("latency", "lat.l2")]}


def test_gpu_l2_cache_is_never_lined_up_with_bw_l2(cli, tmp_path):
    """gpu-l2-cache's blocks share lines (part of its figure merged before the L2's slices),
    gpumem's bw.l2 reads each block's own: compare keeps them on rows of their own rather
    than print a "difference" between two different measurements."""
    cli("import", "gpu-benches", str(BENCH / "gpu-l2-cache-h200-like.txt"), "--out",
        str(tmp_path / "gl"))
    res = cli("compare", str(tmp_path / "gl"), str(H200_RUN), "--json")
    assert res.code == 0, res.err
    rows = {(r["experiment"], r["finding"]): r for r in json.loads(res.out)["rows"]}
    mine = rows[("bandwidth_levels", "bw.l2")]
    assert set(mine["values"]) == {"h200-run"} and "difference" not in mine
    theirs = rows[("bandwidth_levels", "bw.l2_gpu_l2_cache")]
    assert theirs["values"] == {"gl": 10400.0} and "difference" not in theirs
    how = load_source(tmp_path / "gl").findings[("bandwidth_levels",
                                                 "bw.l2_gpu_l2_cache")].method
    assert "not bw.l2" in how


def test_a_line_of_another_benchmark_is_named(cli, tmp_path):
    lines = (BENCH / "gpu-stream-h200-like.txt").read_text().splitlines()
    lines.insert(5, "   100000  1980      2.1     16.2    32.0 32.0 32.0 32.0")
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("\n".join(lines) + "\n")
    res = cli("import", "gpu-benches", str(mixed), "--out", str(tmp_path / "r"))
    assert res.code == 1
    assert "rows of several benchmarks" in _one_line(res.err)
    assert not (tmp_path / "r").exists()
    # a line that is not data (a warning, a shell's exit message) is skipped and named
    lines[5] = "warning: something else"
    mixed.write_text("\n".join(lines) + "\n")
    res = cli("import", "gpu-benches", str(mixed), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    assert "line 6" in res.err and "warning: something else" in res.err


def test_old_gpu_stream_format_is_refused_clearly(cli, tmp_path):
    old = tmp_path / "old.txt"
    old.write_text("blockSize   threads       %occ  |                init       read       "
                   "scale     triad       3pt        5pt\n       32        3456    1.6 %  |  "
                   "GB/s:         107         41         77        110         73         72\n")
    res = cli("import", "gpu-benches", str(old), "--out", str(tmp_path / "r"))
    assert res.code == 1 and "before commit 2952d3f" in _one_line(res.err)


# ---------------------------------------------------------------------------------------------
# Bad input: one line, exit 1, nothing written
# ---------------------------------------------------------------------------------------------

_TEXT = MT4G.read_text()


@pytest.mark.parametrize("fmt, content, says", [
    ("mt4g", _TEXT[: len(_TEXT) // 2], "not JSON"),
    ("mt4g", "", "empty file"),
    ("mt4g", "[1, 2, 3]", "JSON of another shape"),
    ("mt4g", '{"general": {"name": "x"}}', "JSON of another shape"),
    ("mt4g", _TEXT.replace('"p50": 38.0', '"p50": "fast"'),
     "memory.l1.latency.p50: expected a number"),
    ("mt4g", "\x89PNG\r\n\x1a\n\x00\x00", "not a text file"),
    ("gpu-benches", "Lorem ipsum dolor sit amet,\nconsectetur adipiscing elit 42\n",
     "not gpu-benches output"),
    ("gpu-benches", "", "empty file"),
    ("gpu-benches", "\n  \n", "empty file"),
    ("gpu-benches", (BENCH / "gpu-stream-h200-like.txt").read_text().splitlines()[0] + "\n",
     "not gpu-benches output"),
    ("gpu-benches", _TEXT, "not gpu-benches output"),
])
def test_bad_files_are_one_line_exit_1_and_write_nothing(cli, tmp_path, fmt, content, says):
    bad = tmp_path / "bad.input"
    bad.write_bytes(content.encode("latin-1") if content.startswith("\x89") else
                    content.encode())
    out = tmp_path / "deeper" / "run"
    res = cli("import", fmt, str(bad), "--out", str(out))
    assert res.code == 1, res.err
    line = _one_line(res.err)
    assert str(bad) in line and says in line, line
    assert "expected" in line
    assert _left_behind(tmp_path, {"bad.input"}) == []       # no run dir, no temp dir


def test_a_truncated_capture_names_the_line(cli, tmp_path):
    text = (BENCH / "gpu-l2-cache-h200-like.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.index("\n", 400) + 30])      # last row cut mid-way
    res = cli("import", "gpu-benches", str(cut), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err  # the complete rows are kept, the cut one named
    assert "skipped 1 line(s)" in res.err and "line 6" in res.err


def test_missing_unreadable_or_occupied_paths_exit_2(cli, tmp_path):
    assert cli("import", "mt4g", str(tmp_path / "none.json"), "--out",
               str(tmp_path / "r")).code == 2
    res = cli("import", "gpu-benches", str(tmp_path), "--out", str(tmp_path / "r"))
    assert res.code == 2 and "is a directory" in _one_line(res.err)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    res = cli("import", "mt4g", str(MT4G), "--out", str(taken))
    assert res.code == 2 and "not an empty directory" in _one_line(res.err)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("import", "mt4g", str(MT4G), "--out", str(empty)).code == 0
    assert (empty / "manifest.json").exists()


def test_a_failure_while_writing_leaves_nothing(tmp_path, monkeypatch):
    from gpumem.interop.importers.mt4g import Mt4gFormat

    real = RunStore.write
    calls = []

    def flaky(self, *args, **kwargs):
        calls.append(args[1])
        if len(calls) == 3:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunStore, "write", flaky)
    with pytest.raises(OSError, match="disk full"):
        Mt4gFormat().import_file(MT4G, tmp_path / "run", plugins=get_plugins())
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []


def test_formats_are_contributed_by_core(cli):
    data = json.loads(cli("list-plugins", "--json").out)
    core = {p["name"]: p for p in data}["core"]
    assert {"mt4g", "gpu-benches"} <= set(core["contributes"]["formats"])
