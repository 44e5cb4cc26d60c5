"""The plugin's own tests (run with the plugin installed: ``pytest``): every check
``gpumem plugin check example-arch`` makes, one test each named after it, and what is this
plugin's own: what it registers, its simulator meeting its expected values, its experiment
recovering planted ground truth, and its report figure."""

from __future__ import annotations

import pytest
from gpumem.api import RunRequest, load_plugins, run
from gpumem.api.checks import parametrize_plugin_checks
from gpumem.testing import random_cache, recovered


@parametrize_plugin_checks("example-arch")
def test_plugin_check(check):
    """loads, gv100:simulator_config, gv100:quick_run, ..., imports: the checks every plugin
    passes, as `gpumem plugin check` runs them (gpumem.api.checks)."""
    check()


@pytest.fixture(scope="module")
def plugins():
    return load_plugins()  # every installed plugin, as `gpumem` itself loads them


def test_the_plugin_loads_and_registers_its_contributions(plugins):
    (me,) = [r for r in plugins.records if r.name == "example-arch"]
    assert me.status == "ok", me.error
    assert me.contributes["architectures"] == ["gv100"]
    assert me.contributes["experiments"] == ["path_latency"]


def test_the_simulated_gv100_meets_every_expected_value(plugins, tmp_path):
    """Catches a typo in sim.toml or expected.py: both come from the same measurements.
    Stricter than gv100:quick_run: these findings are checked, and each one passes."""
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


def test_the_report_figure_draws_each_load_path(plugins, tmp_path):
    """presentation(): a section of its own, and a figure drawn from the raw dataset."""
    from gpumem.api.figures import load_runs
    from gpumem_example_arch.experiment import PathLatency

    run(RunRequest(arch="gv100", experiments=["path_latency"], device="sim", quick=True,
                   out=tmp_path / "run"), plugins=plugins)
    shown = PathLatency().presentation()
    assert shown.section.key == "load_paths"
    (figure,) = shown.figures
    fig = figure.draw(load_runs([tmp_path / "run"]))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ca", "nc", "tex"]
    assert figure.draw([]) is None  # no run has the experiment: nothing to draw
