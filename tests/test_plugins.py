"""Plugin loading: the registry, failures isolated and reported, allow/block lists, strict."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import pytest
from gpumem.contracts.errors import PluginError
from gpumem.plugin.registry import load_plugins

IN_TREE = {"fermi", "kepler", "maxwell", "hopper", "accelsim"}


def ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group="gpumem")


def load(*eps, **kw):
    warnings: list[str] = []
    plugins = load_plugins(eps=list(eps), warn=warnings.append, **kw)
    return plugins, warnings


def record(plugins, name):
    return next(r for r in plugins.records if r.name == name)


def test_core_builtin_contributes_sim_cuda_and_the_generic_experiments():
    plugins, warnings = load()
    core = record(plugins, "core")
    assert core.status == "ok" and core.distribution == "gpumem-dissect"
    assert core.contributes["architectures"] == [] and core.contributes["devices"] == ["cuda"]
    assert core.contributes["simulators"] == ["sim"]
    assert {"bandwidth", "cache_structure", "latency", "smem_bandwidth",
            "smem_latency"} <= set(core.contributes["experiments"])
    assert warnings == []


def test_good_plugin_registers_its_contributions():
    plugins, warnings = load(ep("good", "inproc_plugins:good"))
    assert record(plugins, "good").contributes["architectures"] == ["fixture-arch"]
    assert "fixture-exp" in plugins.experiments()
    assert plugins.owner("experiments", "fixture-exp").name == "good"


def test_import_failure_is_recorded_and_the_rest_works():
    plugins, warnings = load(ep("missing", "no_such_module_xyz.plugin"), ep("good", "inproc_plugins:good"))
    bad = record(plugins, "missing")
    assert bad.status == "error" and "ModuleNotFoundError" in bad.error
    assert "fixture-arch" in plugins.architectures()
    assert len(warnings) == 1 and "plugin 'missing'" in warnings[0]


def test_registering_a_taken_name_rejects_the_later_plugin_entirely():
    plugins, warnings = load(ep("good", "inproc_plugins:good"), ep("zclash", "inproc_plugins:clash"))
    r = record(plugins, "zclash")
    assert r.status == "error"
    assert "architecture 'fixture-arch' is already registered by plugin 'good'" in r.error
    assert plugins.architectures()["fixture-arch"].description == "fixture"
    assert all(v == [] for v in r.contributes.values())
    assert "zclash" not in [plugins.pm.get_name(p) for p in plugins.pm.get_plugins()]


def test_a_third_party_plugin_cannot_displace_one_that_ships_with_gpumem():
    """Entry points sort by name, so 'aclash' would load before 'good'; but 'good' comes from
    a gpumem distribution and loads first: the clash rejects the third-party plugin."""
    from types import SimpleNamespace

    own = ep("good", "inproc_plugins:good")._for(SimpleNamespace(name="gpumem-hopper",
                                                                 version="0.1"))
    plugins, warnings = load(ep("aclash", "inproc_plugins:clash"), own)
    assert record(plugins, "good").status == "ok"
    assert plugins.architectures()["fixture-arch"].description == "fixture"
    clash = record(plugins, "aclash")
    assert clash.status == "error" and "already registered by plugin 'good'" in clash.error


def test_misspelt_hook_is_an_error_not_silence():
    plugins, _ = load(ep("typo", "inproc_plugins:typo"))
    r = record(plugins, "typo")
    assert r.status == "error" and "gpumem_register_experimnts" in r.error


def test_exception_inside_a_registration_hook_is_contained():
    plugins, _ = load(ep("raising", "inproc_plugins:raising"), ep("good", "inproc_plugins:good"))
    assert "boom while registering" in record(plugins, "raising").error
    assert record(plugins, "good").status == "ok"


def test_two_entry_points_with_one_name_conflict():
    plugins, _ = load(ep("good", "inproc_plugins:good"), ep("good", "inproc_plugins:clash"))
    assert [r.status for r in plugins.records if r.name == "good"] == ["ok", "error"]


def test_allow_list_and_block_list(monkeypatch):
    monkeypatch.setenv("GPUMEM_LOAD_PLUGINS", "good")
    plugins, _ = load(ep("good", "inproc_plugins:good"), ep("zclash", "inproc_plugins:clash"))
    assert [r.name for r in plugins.records] == ["core", "good"]
    monkeypatch.delenv("GPUMEM_LOAD_PLUGINS")
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "good, zclash")
    plugins, _ = load(ep("good", "inproc_plugins:good"), ep("zclash", "inproc_plugins:clash"))
    assert [r.name for r in plugins.records] == ["core"]


def test_unknown_names_in_the_lists_are_warned_about(monkeypatch):
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "hoper")
    _, warnings = load(ep("good", "inproc_plugins:good"))
    assert any("no plugin named 'hoper'" in w for w in warnings)


def test_strict_raises_after_trying_everything():
    with pytest.raises(PluginError, match="missing"):
        load(ep("missing", "no_such_module_xyz.plugin"), ep("good", "inproc_plugins:good"),
             strict=True)


def test_in_tree_plugins_are_installed_and_ok(cli):
    res = cli("list-plugins", "--json")
    assert res.code == 0
    data = json.loads(res.out)
    by_name = {d["name"]: d for d in data}
    assert IN_TREE | {"core"} <= set(by_name)
    for name in IN_TREE:
        d = by_name[name]
        assert d["status"] == "ok", d
        assert d["distribution"] == f"gpumem-{name}"
    for arch in ("fermi", "kepler", "maxwell", "hopper"):
        assert by_name[arch]["contributes"]["architectures"] == [arch]
    assert by_name["accelsim"]["contributes"]["simulators"] == ["accelsim"]


def test_list_plugins_json_has_exactly_the_documented_keys(cli):
    data = json.loads(cli("list-plugins", "--json").out)
    assert isinstance(data, list) and data
    for d in data:
        assert set(d) == {"name", "distribution", "version", "status", "error", "contributes"}
        assert set(d["contributes"]) == {"experiments", "devices", "simulators", "architectures",
                                         "formats"}
        assert all(isinstance(v, list) for v in d["contributes"].values())
        assert d["status"] in ("ok", "error")


def test_list_plugins_table(cli):
    res = cli("list-plugins")
    assert res.code == 0
    for name in IN_TREE:
        assert name in res.out


def test_a_plugin_whose_expected_values_raise_stops_no_run(tmp_path):
    """gpumem_expected_values raising in one plugin: a warning, the other plugins' values
    and the run itself go on."""
    from gpumem import hookimpl
    from gpumem.plugin.registry import load_plugins
    from gpumem.run.runner import RunRequest, run

    class Buggy:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            raise KeyError("oops")

    plugins = load_plugins(warn=lambda _m: None)
    plugins.pm.register(Buggy(), name="buggy")
    warnings: list[str] = []
    got = plugins.expected_values("hopper", _info(), warn=warnings.append)
    assert any(e.name == "lat.l1" for e in got)           # hopper's still count
    assert warnings == ["plugin 'buggy' failed to give expected values for 'hopper': "
                        "KeyError: 'oops'"]
    from gpumem.contracts.errors import PluginWarning

    with pytest.warns(PluginWarning, match="plugin 'buggy' failed to give expected values"):
        rep = run(RunRequest("hopper", ["smem_latency"], device="sim", quick=True,
                             out=tmp_path / "r"), plugins=plugins)
    assert [o.status for o in rep.outcomes] == ["complete"]


def _info():
    from gpumem.plugin.registry import get_plugins
    from gpumem.sim.device import sim_device_info

    return sim_device_info(get_plugins().hook.gpumem_simulator_config(arch="hopper",
                                                                      simulator="sim"))
