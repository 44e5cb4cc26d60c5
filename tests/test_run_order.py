"""A process reads DRAM 13-16 % slower once it has freed a large buffer (an H100: a buffer
allocated at the start read 3157 GB/s, then 2646 after an 8 GiB buffer was freed; gpumem's
own streams alike on H100s and an H200: benchmarks/README.md), and the latency ladder frees
chases of up to 8 GiB. So the experiments that report DRAM bandwidth run before the others
of a run, whatever order the command line names them in."""

from __future__ import annotations

import json

import pytest
from gpumem.plugin.registry import get_plugins
from gpumem.run.resolve import resolve_experiments


def _names(names):
    return [c.name for c in resolve_experiments(get_plugins(), "hopper", names)]


def test_named_dram_experiments_run_before_a_chase_named_first():
    assert _names(["latency", "bandwidth", "patterns", "bulk_copy"]) == [
        "bandwidth", "bulk_copy", "latency", "patterns"]


def test_all_runs_the_dram_experiments_first_and_the_rest_by_name():
    names = _names(["all"])
    first = [n for n in names if get_plugins().experiments()[n].runs_first]
    assert names[:len(first)] == first and {"bandwidth", "bulk_copy"} <= set(first)
    rest = names[len(first):]
    assert rest == sorted(rest)


def test_every_experiment_reporting_dram_bandwidth_runs_first():
    for name, cls in get_plugins().experiments().items():
        dram = [f for f in cls.findings if f.startswith("bw.dram")]
        assert not dram or cls.runs_first, (name, dram)


@pytest.mark.parametrize("names", [["latency", "bandwidth"]])
def test_a_run_records_them_in_that_order(cli, tmp_path, names):
    out = tmp_path / "run"
    assert cli("run", "--arch", "hopper", *names, "--device", "sim", "--quick",
               "--out", str(out)).code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    done = sorted(manifest["entries"].values(), key=lambda e: e["updated"])
    assert [e["experiment"] for e in done][0] == "bandwidth"
