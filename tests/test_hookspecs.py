"""Every hook spec is documented with an example and exercised by some test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from gpumem.contracts import hookspecs
from gpumem.cuda import hookspecs as cuda_hookspecs

#: core's hooks, and those the CUDA backend adds through gpumem_addhooks
SPEC_MODULES = {name: module for module in (hookspecs, cuda_hookspecs)
                for name, fn in vars(module).items()
                if name.startswith("gpumem_") and callable(fn)}
SPECS = list(SPEC_MODULES)


def test_there_are_hooks_for_each_family():
    for family in ("architectures", "experiments", "devices", "simulators"):
        assert f"gpumem_register_{family}" in SPECS
    assert {"gpumem_expected_values", "gpumem_kernel_source",
            "gpumem_simulator_config"} <= set(SPECS)


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_documented_with_an_example(name):
    doc = inspect.getdoc(getattr(SPEC_MODULES[name], name)) or ""
    assert len(doc.splitlines()[0]) > 20, f"{name}: needs a one-line summary"
    assert "Example::" in doc, f"{name}: docstring needs an 'Example::' block"
    example = doc.split("Example::", 1)[1]
    assert f"def {name}(" in example, f"{name}: the example must implement the hook"
    for param in inspect.signature(getattr(SPEC_MODULES[name], name)).parameters:
        assert f":param {param}:" in doc, f"{name}: parameter '{param}' is undocumented"


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_exercised_by_a_test(name):
    here = Path(__file__).resolve()
    uses = [p for p in here.parent.rglob("test_*.py") if p != here and name in p.read_text()]
    assert uses, f"no test mentions {name}"


def test_the_guides_hook_table_lists_every_hook_and_only_those():
    """docs/plugin-guide.md's table of hooks is the hook specs, no more, no less."""
    import re

    guide = (Path(__file__).resolve().parents[1] / "docs" / "plugin-guide.md").read_text()
    listed = set(re.findall(r"^\| `(gpumem_[a-z_]+)\(", guide, re.M))
    assert listed == set(SPECS), (sorted(listed ^ set(SPECS)))


def test_expected_values_first_registered_wins_and_a_failing_plugin_is_isolated():
    """As hookspecs.gpumem_expected_values and the plugin guide say: the first registered
    plugin's value of a name wins; a plugin that raises is named and left out."""
    from gpumem import Expected, hookimpl
    from gpumem.contracts.findings import Finding, evaluate
    from gpumem.plugin.registry import PluginRecord, Plugins

    class First:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            return [Expected("x.size", 1, "first", "byte", rel_tol=0.0)]

    class Second:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            return [Expected("x.size", 2, "second", "byte", rel_tol=0.0),
                    Expected("y.size", 3, "second", "byte", rel_tol=0.0)]

    class Broken:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            raise RuntimeError("boom")

    warnings: list[str] = []
    ps = Plugins()
    for name, obj in (("a-first", First()), ("b-broken", Broken()), ("c-second", Second())):
        assert ps.add(obj, PluginRecord(name, f"dist-{name}", "1"), warnings.append)
    exp = ps.expected_values("any", None, warnings.append)
    (x, y) = evaluate([Finding("x.size", 1, "byte", 1.0, "m"),
                       Finding("y.size", 3, "byte", 1.0, "m")], exp)
    assert x.expected == 1 and x.expected_source == "first" and y.expected == 3
    assert any("'b-broken'" in w and "boom" in w for w in warnings), warnings


def test_a_plugin_raising_in_simulator_config_does_not_break_another_architecture():
    """Issue 18: a third-party plugin whose gpumem_simulator_config raises broke
    `--device sim` for hopper, and the error blamed hopper. Now the hopper plugin answers, the
    failing plugin is named in a warning; with no answer at all, the failure names it."""
    from gpumem import hookimpl
    from gpumem.contracts.errors import GpumemError
    from gpumem.plugin.registry import PluginRecord, load_plugins
    from gpumem.run.resolve import simulator_config

    class Careless:
        @hookimpl
        def gpumem_simulator_config(self, arch, simulator):
            raise KeyError("no such arch in my table")

    warnings: list[str] = []
    ps = load_plugins(warn=warnings.append)
    assert ps.add(Careless(), PluginRecord("careless", "dist-careless", "1"), warnings.append)
    sim = ps.simulators()["sim"]
    cfg = simulator_config(ps, "hopper", sim, None)
    assert cfg.arch == "hopper"
    assert any("'careless'" in w and "no such arch" in w for w in warnings), warnings
    with pytest.raises(GpumemError, match="careless"):
        simulator_config(ps, "no-such-arch", sim, None)
