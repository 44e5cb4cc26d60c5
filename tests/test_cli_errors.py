"""Bad input: one line on stderr naming the problem and the choices, exit 2, nothing written."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("args, needle", [
    (["run", "--arch", "hoper"], "unknown architecture 'hoper' (choose from: "),
    (["run", "--arch", "hopper", "nope"], "unknown experiment 'nope' (choose from: all, bandwidth, "),
    (["run", "--arch", "hopper", "all", "latency"], "give experiment names or 'all', not both"),
    (["run", "--arch", "hopper", "--device", "gpu:1"], "unknown device 'gpu:1' (choose from: auto, cuda:N"),
    (["run", "--arch", "hopper", "--device", "accelsim"], "simulator 'accelsim' is not available here"),
    (["run", "--arch", "hopper", "--workers", "0"], "--workers"),
    (["run", "--arch", "hopper", "--sim-config", "/nonexistent.toml", "--device", "sim"], "no such file"),
    # no --arch, no GPU: nothing to measure, and the line says how to simulate one instead
    (["run"], "no GPU found (cuda: "),
    (["run", "--device", "sim"], "--device sim without --arch needs --sim-config FILE"),
    (["run", "--arch", "sm_9"], "unknown architecture 'sm_9' (choose from: "),
    (["run", "--arch", "hopper", "--bogus"], "No such option: --bogus"),
])
def test_usage_errors_exit_2_with_one_line_and_write_nothing(cli, tmp_path, args, needle):
    out = tmp_path / "out"
    res = cli(*args, "--out", str(out)) if args != ["run"] else cli(*args)
    assert res.code == 2, (res.out, res.err)
    assert res.err.count("\n") == 1, res.err
    assert res.err.startswith("gpumem") and "error:" in res.err
    assert needle in res.err
    assert not out.exists()


def test_unknown_architecture_lists_at_least_the_in_tree_ones(cli, tmp_path):
    # a superset, not equality: any installed third-party plugin adds its architectures
    res = cli("run", "--arch", "hoper", "--out", str(tmp_path / "out"))
    assert res.code == 2, (res.out, res.err)
    m = re.search(r"\(choose from: ([^)]*)\)", res.err)
    assert m, res.err
    choices = [c.strip() for c in m.group(1).split(",")]
    assert {"fermi", "hopper", "kepler", "maxwell"} <= set(choices), choices
    assert choices == sorted(choices), choices


def test_unwritable_out_is_a_usage_error(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = cli("run", "--arch", "hopper", "--device", "sim", "--out", str(blocker / "sub"))
    assert res.code == 2 and "--out" in res.err and "not a directory" in res.err


def test_cuda_device_without_gpu_is_a_usage_error(cli, tmp_path):
    res = cli("run", "--arch", "hopper", "--device", "cuda:0", "--out", str(tmp_path / "o"))
    assert res.code == 2 and "cuda:0 is not available" in res.err
    assert not (tmp_path / "o").exists()


def test_bad_sim_config_names_the_field(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\narch = "hopper"\ncompute_capability = "9.0"\nsm_count = 1\n'
                   'clock_mhz = 1.0\n[dram]\nlatency = 1.0\n[paths]\nca = ["l1d"]\n'
                   '[[cache]]\nname = "l1d"\nsize = 4096\nline = 64\nways = 3\nhit_latency = 1.0\n')
    res = cli("run", "--arch", "hopper", "--device", "sim", "--sim-config", str(bad),
              "--out", str(tmp_path / "o"))
    assert res.code == 2 and "cache[l1d].ways" in res.err and res.err.count("\n") == 1


def test_version_and_help(cli):
    assert cli("--version").out.strip() == "gpumem 0.1.0"
    res = cli("run", "--help")
    assert res.code == 0 and "--arch" in res.out
