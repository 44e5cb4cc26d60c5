"""``gpumem import`` and ``gpumem export`` formats under hostile or damaged input (issue 29):
an existing output is never overwritten, a bad input file is one line (never a traceback,
never a file name the OS refuses), a file meant to be shared holds no local absolute path,
and an export of a damaged run names the file instead of quietly using packaged values."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from gpumem.contracts.errors import ResultsFileError
from gpumem.plugin.registry import get_plugins
from gpumem.results.io import open_raw

DATA = Path(__file__).parent / "data"
MT4G = DATA / "mt4g" / "NVIDIA H100 80GB HBM3.json"
H100_CFG = DATA / "accelsim" / "SM90_H100"
H200_RUN = DATA / "h200-run"
BENCH = DATA / "gpu-benches"
KEEP = "mine, not gpumem's\n"


def _one_line(res) -> str:
    assert "Traceback" not in res.err and "\u2502" not in res.err, res.err[-2000:]
    lines = res.err.strip().splitlines()
    errors = [ln for ln in lines if not ln.startswith("gpumem: warning:")]
    assert len(errors) == 1 and errors[0].startswith("gpumem: error:"), res.err[-2000:]
    return errors[0]


@pytest.fixture
def small_run(tmp_path) -> Path:
    """Two entries of the H200 run (latency, smem_latency) with their checksums: a run that
    exports in about a second."""
    src, dst = H200_RUN, tmp_path / "h200-small"
    manifest = json.loads((src / "manifest.json").read_text())
    keep = {k: v for k, v in manifest["entries"].items()
            if k.split("/")[1] in ("latency", "smem_latency")}
    assert len(keep) == 2
    manifest["entries"] = keep
    for v in keep.values():
        (dst / v["file"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / v["file"], dst / v["file"])
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return dst


def _mt4g(tmp_path: Path, edit, name: str = "gpu.json") -> Path:
    doc = json.loads(MT4G.read_text())
    edit(doc)
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


# ---- a. an existing output is refused, as the other imports refuse an occupied --out --------


def test_import_accelsim_refuses_an_existing_toml(cli, tmp_path):
    out = tmp_path / "h100.toml"
    out.write_text(KEEP)
    res = cli("import", "accelsim", str(H100_CFG), "--out", str(out), "--arch", "hopper")
    assert res.code == 2 and "exists" in _one_line(res) and str(out) in res.err
    assert out.read_text() == KEEP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h100.toml"]   # no temp file left


def test_export_sim_refuses_an_existing_toml(cli, tmp_path, small_run):
    out = tmp_path / "cal.toml"
    out.write_text(KEEP)
    res = cli("export", "sim", str(small_run), "--out", str(out))
    assert res.code == 2 and "exists" in _one_line(res) and str(out) in res.err
    assert out.read_text() == KEEP
    # --out DIR: the file it would write there (DIR/<config>-calibrated.toml) is refused too
    folder = tmp_path / "cfgs"
    assert cli("export", "sim", str(small_run), "--out", str(folder)).code == 0
    (written,) = folder.iterdir()
    written.write_text(KEEP)
    res = cli("export", "sim", str(small_run), "--out", str(folder))
    assert res.code == 2 and "exists" in _one_line(res)
    assert written.read_text() == KEEP


# ---- b, c, d. MT4G files built to break the importer ------------------------------------------


def test_mt4g_of_200000_nested_arrays_is_one_line(cli, tmp_path):
    text = MT4G.read_text().rstrip()
    assert text.endswith("}")
    deep = tmp_path / "deep.json"
    deep.write_text(text[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    res = cli("import", "mt4g", str(deep), "--out", str(tmp_path / "r"))
    assert res.code == 1 and "nested too deeply" in _one_line(res) and str(deep) in res.err
    assert not (tmp_path / "r").exists()


def test_mt4g_with_a_5mb_device_name_is_one_line(cli, tmp_path):
    f = _mt4g(tmp_path, lambda d: d["general"].__setitem__("name", "A" * 5_000_000))
    res = cli("import", "mt4g", str(f), "--out", str(tmp_path / "r"))
    line = _one_line(res)
    assert res.code == 1 and "general.name" in line and len(line) < 500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu.json"]


def test_mt4g_meta_keys_netcdf_cannot_name_are_renamed_not_a_traceback(cli, tmp_path):
    odd = {"a/b": "slash", "new\nline": "control", "k" * 400: "long", "big": 10**30,
           "nan": float("nan")}
    f = _mt4g(tmp_path, lambda d: d["meta"].update(odd))
    out = tmp_path / "r"
    res = cli("import", "mt4g", str(f), "--out", str(out))
    assert res.code == 0, res.err[-2000:]
    attrs = open_raw(next(out.glob("*/latency-*.nc"))).attrs
    meta = {k: v for k, v in attrs.items() if k.startswith("mt4g_meta_")}
    for value in ("slash", "control", "long"):
        (key,) = [k for k, v in meta.items() if v == value]
        assert "/" not in key and "\n" not in key and len(key) <= 64, key
    assert meta["mt4g_meta_big"] == str(10**30)           # beyond 64 bits: kept as text
    assert meta["mt4g_meta_driver"] == 12020               # the real keys as they were


# ---- e. files meant to be shared hold no local absolute path ---------------------------------


def _local_paths(tmp_path: Path) -> list[str]:
    import gpumem_hopper

    return [str(tmp_path), str(DATA.resolve()), str(Path(__file__).resolve().parents[1]),
            str(Path.home()), str(Path(gpumem_hopper.__file__).resolve().parent), sys.prefix]


def test_exported_and_imported_configs_hold_no_local_path(cli, tmp_path, small_run):
    toml = tmp_path / "h100.toml"
    assert cli("import", "accelsim", str(H100_CFG.resolve()), "--out", str(toml),
               "--arch", "hopper").code == 0
    cal = tmp_path / "cal.toml"
    assert cli("export", "sim", str(small_run.resolve()), "--out", str(cal)).code == 0
    acc = tmp_path / "acc"
    assert cli("export", "accelsim", str(small_run.resolve()), "--out", str(acc)).code == 0
    files = [toml, cal, *sorted(acc.iterdir())]
    assert len(files) == 4
    for f in files:
        text = f.read_text()
        for local in _local_paths(tmp_path):
            assert local not in text, (f.name, local)
    assert small_run.name in cal.read_text() and small_run.name in \
        (acc / "gpgpusim.config").read_text()                      # the run is still named
    assert "SM90_H100" in toml.read_text()


# ---- f. an export of a damaged run fails naming the file, inside the format too --------------


@pytest.mark.parametrize("fmt", ["sim", "accelsim"])
def test_the_format_refuses_a_damaged_run_naming_the_file(tmp_path, small_run, fmt):
    """The formats' own check, whatever the command in front of them checked already."""
    (nc,) = small_run.glob("*/latency-*.nc")
    nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
    plugins = get_plugins()
    out = tmp_path / ("x.toml" if fmt == "sim" else "acc")
    with pytest.raises(ResultsFileError, match=nc.name) as e:
        plugins.formats()[fmt].export_run(small_run, out, plugins=plugins)
    assert "\n" not in str(e.value)
    assert not out.exists()


def test_export_of_a_damaged_run_is_one_line_exit_1(cli, tmp_path, small_run):
    (nc,) = small_run.glob("*/latency-*.nc")
    nc.unlink()
    for fmt, out in (("sim", tmp_path / "x.toml"), ("accelsim", tmp_path / "acc")):
        res = cli("export", fmt, str(small_run), "--out", str(out))
        assert res.code == 1 and nc.name in res.err, (fmt, res.err)
        assert "Traceback" not in res.err and not out.exists()


# ---- other hostile input ---------------------------------------------------------------------


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["general"]["clockRate"].__setitem__("value", 10**400), "general.clockRate"),
    (lambda d: d["general"]["clockRate"].__setitem__("value", float("inf")),
     "general.clockRate"),
    (lambda d: d["compute"].__setitem__("multiProcessorCount", float("nan")),
     "compute.multiProcessorCount"),
    (lambda d: d["compute"].__setitem__("multiProcessorCount", 10**30),
     "compute.multiProcessorCount"),
    (lambda d: d["memory"]["l2"]["size"].__setitem__("value", 1e300), "memory.l2.size"),
])
def test_mt4g_numbers_out_of_range_are_one_line(cli, tmp_path, edit, where):
    """Before: OverflowError, ValueError or a netCDF type error, as tracebacks."""
    f = _mt4g(tmp_path, edit)
    res = cli("import", "mt4g", str(f), "--out", str(tmp_path / "r"))
    assert res.code == 1 and where in _one_line(res)
    assert not (tmp_path / "r").exists()


def test_mt4g_text_with_lone_surrogates_imports_with_a_warning(cli, tmp_path):
    """JSON may escape a lone UTF-16 surrogate (\\ud800) that no file can store. Before: a
    UnicodeEncodeError traceback at write time."""
    f = tmp_path / "gpu.json"
    f.write_text(MT4G.read_text().replace('"NVIDIA H100 80GB HBM3"', '"H100 \\ud800"', 1))
    out = tmp_path / "r"
    res = cli("import", "mt4g", str(f), "--out", str(out))
    assert res.code == 0, res.err[-2000:]
    assert "surrogate" in res.err
    assert open_raw(next(out.glob("*/latency-*.nc"))).attrs["device_name"] == "H100 \ufffd"


@pytest.mark.parametrize("bench, make", [
    ("gpu-latency", lambda t: ["clock: " + "9" * 5000] + t[1:]),
    ("gpu-latency", lambda t: t[:1] + ["   " + "9" * 30 + "  1980  2  1.6  32.0 32.0 31.9 32.1"]
     + t[2:]),
    ("gpu-latency", lambda t: t + ["   100000  1980  " + "9" * 400 + "  1.6  32.0 32.0 31.9 "
                                   "32.1"]),
    ("gpu-stream", lambda t: t[:2] + ["  " + "9" * 30 + "  4224  1  1.6%  |  GB/s:  268  61  146 "
                                      " 379  144  143"]),
    ("gpu-l2-cache", lambda t: t + ["  512 kB  " + "9" * 25 + " kB  10ms  0.1%   10334.7 GB/s"]),
])
def test_gpu_benches_numbers_out_of_range_are_one_line(cli, tmp_path, bench, make):
    """Before: a ValueError traceback (an integer of 5000 digits), or values wrapped to
    garbage by a silent int64 overflow (exit 0, or a misleading 'not larger' error)."""
    name = {"gpu-latency": "gpu-latency-h200-like.txt", "gpu-stream": "gpu-stream-h200-like.txt",
            "gpu-l2-cache": "gpu-l2-cache-h200-like.txt"}[bench]
    f = tmp_path / "out.txt"
    f.write_text("\n".join(make((BENCH / name).read_text().splitlines())) + "\n")
    res = cli("import", "gpu-benches", str(f), "--out", str(tmp_path / "r"))
    assert res.code == 1 and "too large" in _one_line(res) and "line " in res.err
    assert "RuntimeWarning" not in res.err and not (tmp_path / "r").exists()


@pytest.mark.parametrize("old, new, where", [
    ("-gpgpu_n_clusters 132", "-gpgpu_n_clusters " + "9" * 5000, "-gpgpu_n_clusters"),
    ("-gpgpu_cache:dl2 S:256", "-gpgpu_cache:dl2 S:" + "9" * 5000, "sets"),
    ("-gpgpu_n_clusters 132", "-gpgpu_n_clusters " + "9" * 19, "sm_count"),
    ("-gpgpu_clock_domains 1980:", "-gpgpu_clock_domains 1e400:", "clock_mhz"),
    ("-gpgpu_l1_latency 41", "-gpgpu_l1_latency " + "9" * 17, "hit_latency"),
])
def test_import_accelsim_of_values_out_of_range_is_one_line(cli, tmp_path, old, new, where):
    """Before: a ValueError (int() of 5000 digits) or a SimConfigError traceback (a value
    the options parse but no SimConfig holds)."""
    text = (H100_CFG / "gpgpusim.config").read_text()
    assert old in text
    cfg = tmp_path / "bad" / "gpgpusim.config"
    cfg.parent.mkdir()
    cfg.write_text(text.replace(old, new, 1))
    out = tmp_path / "x.toml"
    res = cli("import", "accelsim", str(cfg), "--out", str(out), "--arch", "hopper")
    line = _one_line(res)
    assert res.code == 1 and where in line and "bad" in line and len(line) < 600
    assert not out.exists()


@pytest.mark.parametrize("fmt, data", [
    ("mt4g", b""), ("mt4g", b"[1, 2]"), ("mt4g", b"{\"general\": 1}"), ("mt4g", b"\xff\xfe{}"),
    ("mt4g", b"1e999999"), ("gpu-benches", b""), ("gpu-benches", b"\xff\xfe"),
    ("accelsim", b"\xff\xfe\n"),
])
def test_empty_wrong_shaped_or_binary_files_are_one_line(cli, tmp_path, fmt, data):
    """These were one line before too; kept so."""
    f = tmp_path / ("gpgpusim.config" if fmt == "accelsim" else "in.txt")
    f.write_bytes(data)
    out = tmp_path / ("x.toml" if fmt == "accelsim" else "r")
    res = cli("import", fmt, str(f), "--out", str(out))
    assert res.code == 1 and str(f) in _one_line(res)
    assert not out.exists()



@pytest.mark.parametrize("fmt", ["mt4g", "gpu-benches"])
def test_a_device_or_fifo_as_the_source_is_refused_at_once(cli, tmp_path, fmt):
    """Before: /dev/zero was read until the memory ran out, a FIFO blocked for ever."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for src in (fifo, Path("/dev/zero")):
        if not src.exists():
            continue
        res = cli("import", fmt, str(src), "--out", str(tmp_path / "r"))
        assert res.code == 2 and "not a regular file" in _one_line(res)
    assert not (tmp_path / "r").exists()


def test_a_source_over_64_mib_is_refused(cli, tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)                       # sparse: no 64 MiB written
    res = cli("import", "mt4g", str(big), "--out", str(tmp_path / "r"))
    assert res.code == 2 and "larger than 64 MiB" in _one_line(res)


def test_the_format_refuses_an_unchecksummed_file_whose_findings_do_not_open(tmp_path,
                                                                              small_run):
    """An entry with no checksum (an older gpumem's) passes the manifest check when its raw
    data opens; a file without its findings group was skipped by reading, in silence."""
    manifest = json.loads((small_run / "manifest.json").read_text())
    (key,) = [k for k in manifest["entries"] if "/latency/" in k]
    entry = manifest["entries"][key]
    for k in ("sha256", "size", "bytes"):
        entry.pop(k, None)
    (small_run / "manifest.json").write_text(json.dumps(manifest))
    nc = small_run / entry["file"]
    raw = open_raw(nc).load()
    nc.unlink()
    raw.to_netcdf(nc, engine="netcdf4")                  # the raw data only, no findings
    plugins = get_plugins()
    with pytest.raises(ResultsFileError, match=nc.name):
        plugins.formats()["sim"].export_run(small_run, tmp_path / "x.toml", plugins=plugins)
    assert not (tmp_path / "x.toml").exists()
