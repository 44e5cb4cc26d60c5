"""The plugin's own tests (``pip install -e '.[test]'``, then ``pytest``): it loads,
its simulator config is its architecture's, a simulated run meets its own expected values,
and the structure search recovers a planted cache under this architecture."""

from __future__ import annotations

import pytest
from gpumem.api import RunRequest, load_plugins, run
from gpumem.testing import random_cache, recovered

NAME = 'h200t'


@pytest.fixture(scope="module")
def plugins():
    return load_plugins()  # every installed plugin, as `gpumem` itself loads them


def test_the_plugin_loads_and_registers_its_architecture(plugins):
    (me,) = [r for r in plugins.records if r.name == NAME]
    assert me.status == "ok", me.error
    assert me.contributes["architectures"] == [NAME]


def test_its_simulator_config_is_this_architecture(plugins):
    cfg = plugins.first_result("gpumem_simulator_config", arch=NAME, simulator="sim")
    assert cfg.arch == NAME and cfg.compute_capability == '9.0'


def test_a_quick_simulated_run_meets_its_expected_values(plugins, tmp_path):
    report = run(RunRequest(arch=NAME, device="sim", quick=True, out=tmp_path / "run"),
                 plugins=plugins)
    assert not report.failed, [(o.experiment, o.error) for o in report.failed]
    checked = {f.name: f.status for o in report.outcomes for f in o.findings
               if f.expected is not None}
    assert checked, "no finding was checked"
    assert "fail" not in checked.values(), {n: s for n, s in checked.items() if s == "fail"}


@pytest.mark.parametrize("seed", range(2))
def test_a_planted_cache_is_recovered_under_this_architecture(plugins, tmp_path, seed):
    planted = random_cache(seed)
    planted.config.save(tmp_path / "planted.toml")
    report = run(RunRequest(arch=NAME, experiments=["cache_structure"], device="sim",
                            sim_config=tmp_path / "planted.toml", out=tmp_path / "run"),
                 plugins=plugins)
    assert not recovered(report.outcomes[0].findings, planted.truth), planted.description
