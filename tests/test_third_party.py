"""Real plugin distributions, pip-installed during the test run: a sample third-party
architecture plugin, one that fails to import and one that steals a name.

The plugin listings run in this process, the folder on ``sys.path`` (conftest's ``with_site``:
the entry points are found as in a fresh process, without a Python start of 2-4 s each); the
runs of the sample's experiments stay child processes, as a user runs them."""

from __future__ import annotations

import json

import xarray as xr
from helpers import gpumem_subprocess


def plugins_json(cli, *args):
    res = cli(*args, "list-plugins", "--json")
    return res, {d["name"]: d for d in json.loads(res.out)}


def test_list_plugins_reports_each_plugin_and_keeps_working(with_site, cli):
    res, by_name = plugins_json(cli)
    assert res.code == 0
    sample = by_name["sample"]
    assert (sample["distribution"], sample["version"], sample["status"]) == \
        ("gpumem-sample", "1.2.3", "ok")
    assert sample["contributes"]["architectures"] == ["toyarch"]
    assert sample["contributes"]["experiments"] == ["toy-badanalysis", "toy-chase", "toy-slow"]
    broken = by_name["broken"]
    assert (broken["distribution"], broken["version"], broken["status"]) == \
        ("gpumem-broken", "0.0.1", "error")
    assert "ImportError" in broken["error"] and "nonexistent_dependency" in broken["error"]
    dup = by_name["dup"]
    assert dup["status"] == "error"
    assert "experiment 'latency' is already registered by plugin 'core'" in dup["error"]
    assert by_name["hopper"]["status"] == "ok"
    warnings = [ln for ln in res.err.splitlines() if "warning" in ln]
    assert len(warnings) == 2  # broken and dup, once each


def test_block_and_allow_lists(with_site, cli, monkeypatch):
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "broken,dup")
    _, by_name = plugins_json(cli)
    assert "broken" not in by_name and "dup" not in by_name and "sample" in by_name
    monkeypatch.delenv("GPUMEM_DISABLE_PLUGINS")
    monkeypatch.setenv("GPUMEM_LOAD_PLUGINS", "sample")
    _, by_name = plugins_json(cli)
    assert set(by_name) == {"core", "sample"}


def test_strict_mode_fails_on_plugin_errors(with_site, cli, plugin_site):
    res, by_name = plugins_json(cli, "--strict")
    assert res.code == 1
    assert set(by_name) >= {"broken", "dup"}
    res = gpumem_subprocess(["run", "--arch", "toyarch", "toy-chase", "--device", "sim"],
                            site=plugin_site, env={"GPUMEM_STRICT_PLUGINS": "1"})
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1].startswith("gpumem: error: plugin errors")


def test_third_party_architecture_and_experiment_run_end_to_end(plugin_site, tmp_path):
    out = tmp_path / "toy"
    res = gpumem_subprocess(["run", "--arch", "toyarch", "toy-chase", "--device", "sim",
                             "--out", str(out)], site=plugin_site)
    assert res.returncode == 0, res.stderr
    assert "toy-chase" in res.stdout and "pass" in res.stdout
    (path,) = out.glob("*/toy-chase-*.nc")
    ds = xr.open_dataset(path)
    assert ds.attrs["gpumem_plugin"] == "sample" and ds.attrs["gpumem_plugin_version"] == "1.2.3"
    f = xr.open_dataset(path, group="findings")
    assert float(f["lat__l1"]) == 20.0 and f["lat__l1"].attrs["status"] == "pass"


def test_a_failing_experiment_is_reported_and_the_others_still_run(plugin_site, tmp_path):
    out = tmp_path / "toy"
    res = gpumem_subprocess(["run", "--arch", "toyarch", "toy-badanalysis", "toy-chase",
                             "--device", "sim", "--out", str(out)], site=plugin_site)
    assert res.returncode == 1
    assert "toy-badanalysis: failed: analysis failed: ZeroDivisionError" in res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    status = {e["experiment"]: e["status"] for e in manifest["entries"].values()}
    assert status == {"toy-badanalysis": "failed", "toy-chase": "complete"}
    (raw,) = out.glob("*/toy-badanalysis-*.nc")  # measured data kept despite the bug
    assert "ZeroDivisionError" in xr.open_dataset(raw).attrs["gpumem_analysis_error"]


def test_two_runs_into_one_directory_at_once(plugin_site, tmp_path):
    """Two processes, same --out, overlapping work: both finish, nothing is corrupted."""
    import os
    import subprocess
    import sys

    from helpers import GPUMEM_ENV

    out = tmp_path / "shared"
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env.update(PYTHONPATH=str(plugin_site), GPUMEM_DISABLE_PLUGINS="broken,dup")
    cmds = [["toy-chase", "toy-slow"], ["toy-slow", "toy-chase"]]
    procs = [subprocess.Popen([sys.executable, "-m", "gpumem", "run", "--arch", "toyarch", *c,
                               "--device", "sim", "--out", str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in cmds]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["runs"]) == 2
    assert {e["status"] for e in manifest["entries"].values()} == {"complete"}
    for e in manifest["entries"].values():
        xr.open_dataset(out / e["file"]).load()
    assert not list(out.glob("*/.*.tmp")) and not list(out.glob(".manifest.json.*"))
