"""The results store: atomic writes, corrupt files, the manifest, concurrent runs."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.errors import ResultsFileError, UsageError
from gpumem.contracts.findings import Finding, to_dataset
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import MANIFEST, RunStore, write_results_file


def small() -> tuple[xr.Dataset, xr.Dataset]:
    raw = xr.Dataset({"latency": (("footprint",), np.arange(4.0), {"units": "cycle"})},
                     coords={"footprint": [1, 2, 3, 4]})
    raw.attrs["Conventions"] = "CF-1.12"
    return raw, to_dataset([Finding("lat.l1", 31.5, "cycle")])


def test_write_is_verified_and_leaves_no_temporary(tmp_path):
    raw, fnd = small()
    path = tmp_path / "d" / "x.nc"
    sha = write_results_file(path, raw, fnd)
    assert len(sha) == 64
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.nc"]
    xr.testing.assert_equal(open_raw(path), raw)
    assert float(open_findings(path)["lat__l1"]) == 31.5


def test_a_failed_write_keeps_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    raw, fnd = small()
    path = tmp_path / "x.nc"
    write_results_file(path, raw, fnd)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", boom)
    with pytest.raises(OSError, match="disk full"):
        write_results_file(path, raw * 2, fnd)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.nc"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_files_give_one_clear_error(tmp_path, damage, cli):
    raw, fnd = small()
    path = tmp_path / "x.nc"
    write_results_file(path, raw, fnd)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00junk" * 100,
                      "empty": b""}[damage])
    with pytest.raises(ResultsFileError, match=str(path)):
        open_raw(path)
    res = cli("show", str(path))
    assert res.code == 1
    assert res.err.count("\n") == 1 and str(path) in res.err and "corrupt" in res.err


def test_show_names_a_missing_file(cli, tmp_path):
    res = cli("show", str(tmp_path / "nope.nc"))
    assert res.code == 2 and "no such file" in res.err  # a path the user names: usage


def test_a_corrupt_manifest_stops_the_run_before_measuring(cli, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / MANIFEST).write_text("{not json")
    res = cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
              "--out", str(out))
    assert res.code == 1 and "manifest" in res.err and str(out) in res.err
    assert (out / MANIFEST).read_text() == "{not json"


def test_out_must_be_a_directory_we_can_create(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        RunStore.check_writable(f / "sub")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        RunStore.check_writable(f)
    RunStore.check_writable(tmp_path / "new" / "deeper")  # creatable: fine
    assert not (tmp_path / "new").exists()


def _writer(args: tuple[str, int]) -> None:
    root, i = args
    store = RunStore.open(Path(root))
    raw, fnd = small()
    for k in range(5):
        key = store.entry_key("dev", f"exp{i}", f"{k:04d}")
        path, sha = store.write("dev", f"exp{i}", f"{k:04d}", raw + i, fnd)
        store.set_entry(key, status="complete", file=str(path.relative_to(store.root)),
                        sha256=sha)


@pytest.mark.slow  # writer processes racing on one store: 10 s of CPU
def test_concurrent_writers_never_corrupt_the_store(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_writer, [(str(tmp_path), i) for i in range(4)])
    store = RunStore(tmp_path)
    entries = list(store.entries())
    assert len(entries) == 20
    for e in entries:
        assert store.is_complete(e.key) == (True, "")
        open_raw(tmp_path / e.data["file"])
    json.loads((tmp_path / MANIFEST).read_text())


def test_point_state_is_stored_per_point_and_throttling_flagged(cli, tmp_path, monkeypatch):
    """A device that reports clocks per point (CUDA: NVML) gets them stored before and after
    every point; a point during which a throttle reason shows is flagged."""
    import itertools

    import xarray as xr
    from gpumem.sim.device import SimDevice

    calls = itertools.count()

    def state(self):
        n = next(calls)
        return {"sm_clock_mhz": 1980.0 - (n == 5) * 500, "throttled": float(n == 5)}

    monkeypatch.setattr(SimDevice, "point_state", state)
    res = cli("run", "--arch", "hopper", "smem_latency", "--device", "sim", "--quick",
              "--out", str(tmp_path))
    assert res.code == 0, res.err
    ds = xr.open_dataset(next(tmp_path.rglob("smem_latency-*.nc")))
    before = ds["point_sm_clock_mhz_before"].values.ravel()
    assert ds["point_sm_clock_mhz_before"].attrs["units"] == "MHz"
    assert np.isfinite(before).all() and (ds["point_sm_clock_mhz_after"] <= 1980).all()
    assert int((ds["point_throttled"] == 1).sum()) == 1     # the point around reading 5
    assert int((ds["point_throttled"] == 0).sum()) == before.size - 1
    assert "1 point(s) ran while a throttling" in res.out + res.err
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [e["throttled_points"] for e in manifest["entries"].values()] == [1]
