"""``gpumem run`` end to end on the built-in simulator: files, schema, findings, resume."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import xarray as xr
from gpumem.results.store import MANIFEST

ARCHS = ("fermi", "kepler", "maxwell", "hopper")


@pytest.fixture(scope="module")
def hopper_run(tmp_path_factory):
    """One quick latency run of the hopper simulator, shared by the schema tests."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out = tmp_path_factory.mktemp("runs") / "hopper"
    reset_plugins()
    code = main(["run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
                 "--out", str(out)])
    assert code == 0
    return out


def only_file(run_dir: Path) -> Path:
    files = sorted(run_dir.glob("*/*.nc"))
    assert len(files) == 1, files
    return files[0]


def test_manifest_marks_the_experiment_complete_with_checksum(hopper_run):
    manifest = json.loads((hopper_run / MANIFEST).read_text())
    (entry,) = manifest["entries"].values()
    assert entry["status"] == "complete" and entry["experiment"] == "latency"
    assert len(entry["sha256"]) == 64 and (hopper_run / entry["file"]).is_file()
    assert entry["findings"]["lat.l1"]["status"] == "pass"
    assert manifest["runs"][0]["argv"][:2] == ["gpumem", "run"]


def test_plain_xarray_opens_the_file_with_labeled_dims(hopper_run):
    ds = xr.open_dataset(only_file(hopper_run))
    assert set(ds.dims) == {"order", "footprint", "access"}
    for dim in ds.dims:
        assert dim in ds.coords
    assert list(ds["order"].values) == ["sequential", "random"]
    assert ds["latency"].dims == ("order", "footprint", "access")
    for name, var in ds.variables.items():
        assert "units" in var.attrs or name in ("order",), name
        assert "long_name" in var.attrs, name
    # CF units (a count of cycles is "1"), the unit gpumem shows in gpumem_units
    assert ds["latency"].attrs["units"] == "1" and ds["latency"].attrs["gpumem_units"] == "cycle"
    assert ds["footprint"].attrs["units"] == "byte"
    assert int(ds["footprint"].min()) == 2048
    assert (ds["point_status"].values == 0).all()
    ds.close()


def test_global_attributes_follow_cf_and_carry_provenance(hopper_run):
    ds = xr.open_dataset(only_file(hopper_run))
    a = ds.attrs
    assert a["Conventions"] == "CF-1.12"
    for key in ("title", "source", "history", "date_created", "gpumem_schema_version",
                "gpumem_version", "device_name", "device_uuid", "compute_capability",
                "gpumem_plugin", "gpumem_params_hash", "gpumem_sim_config"):
        assert key in a, key
    assert a["source"].startswith("simulated")
    assert a["compute_capability"] == "9.0" and a["sm_count"] == 132
    assert "[[cache]]" in a["gpumem_sim_config"]
    ds.close()


def test_findings_group_holds_values_expected_and_status(hopper_run):
    from gpumem.plugin.registry import get_plugins

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    with xr.open_dataset(only_file(hopper_run), group="findings") as f:
        v = f["lat__l1"]
        assert v.attrs["gpumem_finding"] == "lat.l1" and v.attrs["units"] == "1"
        assert v.attrs["gpumem_units"] == "cycle"
        assert v.attrs["status"] == "pass" and "H200" in v.attrs["expected_source"]
        # the config's L1 hit latency, and its near L2's: the slice map's latencies from SM
        # 0 (the chase's) over a page's lines, whose median the ladder's few 128 KB runs of
        # the table come within 2 % of
        assert abs(float(v) - cfg.level("l1d").hit_latency) < 1.0
        l2 = cfg.level("l2")
        page = [l2.slice_latency[0][s] for s in l2.slice_table]
        assert abs(float(f["lat__l2"]) / statistics.median(page) - 1) < 0.02
        # the config's L2 sizes: inside the interval of the knee the quick plan bisects
        # (the near level's size for the near L2, the whole L2's for the far one: spread,
        # its sets overflow one at a time, the first a little before the capacity and half
        # the accesses gone about half a page past it)
        for name, level, tol in (("l2__size", "l2_far", 0.01), ("l2__near_size", "l2", 0.005)):
            lo, hi = (float(x) for x in f[name].attrs["interval"])
            assert lo <= cfg.level(level).size <= hi, name
            assert abs(int(f[name]) / cfg.level(level).size - 1) < tol, name
        assert cfg.level("l2_far").index.function == "spread"
        assert 1.005 < int(f["l2__size_at_half"]) / cfg.level("l2_far").size < 1.03


def test_show_json_describes_file_and_run(cli, hopper_run):
    res = cli("show", str(hopper_run), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    (f,) = data["files"]
    assert f["dims"]["access"] == 256
    assert f["variables"]["latency"]["units"] == "cycle"
    assert f["findings"]["lat.dram"]["status"] == "pass"
    res = cli("show", str(only_file(hopper_run)))
    assert res.code == 0 and "lat.l2" in res.out and "latency(order, footprint, access)" in res.out


@pytest.mark.parametrize("arch", ARCHS)
def test_every_in_tree_architecture_runs_on_its_simulator(cli, tmp_path, arch):
    """The simulator returns its own config's latencies through the whole pipeline."""
    from gpumem.plugin.registry import get_plugins

    res = cli("run", "--arch", arch, "latency", "--device", "sim", "--quick",
              "--out", str(tmp_path / arch))
    assert res.code == 0, res.err
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    f = xr.open_dataset(only_file(tmp_path / arch), group="findings")
    l2 = cfg.level(cfg.paths["ca"][-1]) if cfg.paths["ca"][-1] == "l2" else cfg.level("l2")
    assert abs(float(f["lat__l2"]) - l2.hit_latency) <= 0.02 * l2.hit_latency
    assert abs(float(f["lat__dram"]) - cfg.dram.latency) <= 0.02 * cfg.dram.latency
    f.close()


def _has_gpu() -> bool:
    from gpumem.cuda.backend import CudaBackend

    return bool(CudaBackend().discover().devices)


@pytest.mark.skipif(_has_gpu(), reason="a GPU is present: auto picks it")
def test_auto_falls_back_to_the_simulator_with_one_notice(cli, tmp_path):
    res = cli("run", "--arch", "hopper", "latency", "--quick", "--out", str(tmp_path / "r"))
    assert res.code == 0
    notices = [ln for ln in res.err.splitlines() if "built-in simulator" in ln]
    assert len(notices) == 1 and notices[0].startswith("gpumem: no hopper GPU found")


def test_resume_skips_complete_work_and_redoes_damaged_files(cli, tmp_path):
    out = tmp_path / "r"
    assert cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
               "--out", str(out)).code == 0
    path = only_file(out)
    first = path.stat().st_mtime_ns
    res = cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
              "--out", str(out), "--resume")
    assert res.code == 0 and path.stat().st_mtime_ns == first
    path.write_bytes(path.read_bytes()[:100])  # damage it: the checksum no longer matches
    res = cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
              "--out", str(out), "--resume")
    assert res.code == 0
    assert xr.open_dataset(path)["latency"].size > 0


def test_resume_without_out_continues_the_latest_run(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick").code == 0
    runs = list((tmp_path / "gpumem-results").iterdir())
    assert len(runs) == 1
    res = cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick", "--resume")
    assert res.code == 0 and runs[0].name in res.out
    res = cli("run", "--arch", "maxwell", "latency", "--device", "sim", "--quick", "--resume")
    assert res.code == 2 and "no earlier run of 'maxwell'" in res.err


def test_sim_config_file_overrides_the_plugin_config(cli, tmp_path):
    from gpumem.plugin.registry import get_plugins

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.level("l1d").hit_latency = 40.0
    cfg.save(tmp_path / "mine.toml")
    res = cli("run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
              "--sim-config", str(tmp_path / "mine.toml"), "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    f = xr.open_dataset(only_file(tmp_path / "r"), group="findings")
    assert abs(float(f["lat__l1"]) - 40.0) < 1.0
    # the config is still named h200: judged by the H200 fleet's 34 cycles, 40 is a
    # regression the band catches
    assert f["lat__l1"].attrs["status"] == "fail"


def test_workers_do_not_change_results(cli, tmp_path):
    """Same config and seed: identical data and attributes (timestamps aside) for 1, 2 or 3
    worker processes (3 > this machine's cores: scheduling order differs again)."""
    for w in ("1", "2", "3"):
        res = cli("run", "--arch", "hopper", "latency", "bandwidth", "--device", "sim",
                  "--quick", "--workers", w, "--out", str(tmp_path / f"w{w}"))
        assert res.code == 0, res.err
    volatile = {"history", "date_created", "gpumem_executor"}  # where points ran: provenance
    for exp in ("latency", "bandwidth"):
        a = xr.open_dataset(next((tmp_path / "w1").glob(f"*/{exp}-*.nc")))
        for w in ("2", "3"):
            b = xr.open_dataset(next((tmp_path / f"w{w}").glob(f"*/{exp}-*.nc")))
            xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
            assert {k: v for k, v in a.attrs.items() if k not in volatile} == \
                {k: v for k, v in b.attrs.items() if k not in volatile}
