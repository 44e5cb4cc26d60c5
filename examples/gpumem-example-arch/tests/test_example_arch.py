"""The plugin's own tests: it loads, its simulator meets its expected values, and its
experiment recovers planted ground truth (run with the plugin installed: ``pytest``)."""

from __future__ import annotations

import pytest
from gpumem.plugins import load_plugins
from gpumem.runner import RunRequest, run
from gpumem.testing import random_cache, recovered


@pytest.fixture(scope="module")
def plugins():
    return load_plugins()  # every installed plugin, as `gpumem` itself loads them


def test_the_plugin_loads_and_registers_its_contributions(plugins):
    (me,) = [r for r in plugins.records if r.name == "example-arch"]
    assert me.status == "ok", me.error
    assert me.contributes["architectures"] == ["gv100"]
    assert me.contributes["experiments"] == ["path_latency"]


def test_the_simulated_gv100_meets_every_expected_value(plugins, tmp_path):
    """Catches a typo in sim.toml or expected.py: both come from the same measurements."""
    report = run(RunRequest(arch="gv100", experiments=["latency", "path_latency"],
                            device="sim", quick=True, out=tmp_path / "run"), plugins=plugins)
    assert not report.failed
    checked = {f.name: f.status for o in report.outcomes for f in o.findings
               if f.expected is not None}
    assert {"lat.l1", "lat.l2", "lat.dram", "tex_l1.hit_latency"} <= set(checked)
    assert set(checked.values()) == {"pass"}, checked


@pytest.mark.parametrize("seed", range(4))
def test_path_latency_recovers_a_planted_l1(plugins, tmp_path, seed):
    """A random L1 and random timer noise (gpumem.testing): the planted hit latency comes back."""
    planted = random_cache(seed)
    planted.config.save(tmp_path / "planted.toml")
    report = run(RunRequest(arch="gv100", experiments=["path_latency"], device="sim",
                            sim_config=tmp_path / "planted.toml", out=tmp_path / "run"),
                 plugins=plugins)
    truth = {"l1d.hit_latency": planted.config.level("l1d").hit_latency}
    assert not recovered(report.outcomes[0].findings, truth), planted.description
