"""The one hook path keeps pluggy's contract (issue 32, item 3).

gpumem calls each plugin's hook implementation on its own (``Plugins.answers``), so that one
plugin's bug or hang cannot stop another's answer. That path must still honour what pluggy
promises a plugin author: an implementation may take any subset of the spec's arguments. A
hook wrapper, which that path cannot run as a wrapper, is refused at load with a message
that says why, instead of being called as if it answered (its generator handed to the CUDA
device as a kernel source). ``GPUMEM_TRACE_PLUGINS=1`` traces every hook call.
"""

from __future__ import annotations

import itertools
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.plugin import registry as plugins_mod
from gpumem.plugin.registry import load_plugins

HEAD = "from gpumem import hookimpl, KernelSource\nfrom gpumem.contracts.findings import Expected\n"
_SERIAL = itertools.count()


def _plugin(tmp_path: Path, monkeypatch, name: str, body: str) -> EntryPoint:
    module = f"hook_contract_{name.replace('-', '_')}_{next(_SERIAL)}"
    (tmp_path / f"{module}.py").write_text(HEAD + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return EntryPoint(name, module, "gpumem")


def _installed(*names: str) -> list[EntryPoint]:
    return [ep for ep in plugins_mod.entry_points() if ep.name in names]


def _info() -> DeviceInfo:
    return DeviceInfo(kind="sim", name="test GPU", compute_capability="9.0", sm_count=132,
                      l2_bytes=60 << 20, memory_bytes=80 << 30, clock_mhz=1980.0)


SUBSET_EXPECTED = ('@hookimpl\ndef gpumem_expected_values(arch):\n'
                   '    if arch != "hopper":\n        return None\n'
                   '    return [Expected("l1d.line", 128, units="byte", source="a test: the '
                   'arch argument alone")]\n')


def test_an_implementation_taking_a_subset_of_the_arguments_is_answered(tmp_path,
                                                                          monkeypatch):
    said: list[str] = []
    ep = _plugin(tmp_path, monkeypatch, "subset", SUBSET_EXPECTED)
    plugins = load_plugins(eps=[ep], warn=said.append)
    assert not plugins.failures
    got = plugins.expected_values("hopper", _info(), warn=said.append)
    assert [(e.name, e.value) for e in got if "arch argument alone" in e.source] == [
        ("l1d.line", 128)]
    assert not said, said


def test_a_registration_hook_without_the_register_argument_loads(tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "quiet",
                 "@hookimpl\ndef gpumem_register_experiments():\n    return None\n")
    said: list[str] = []
    plugins = load_plugins(eps=[ep], warn=said.append)
    assert [r.status for r in plugins.records if r.name == "quiet"] == ["ok"], said


@pytest.mark.parametrize("marker", ["wrapper=True", "hookwrapper=True"])
def test_a_hook_wrapper_is_refused_at_load_saying_why(tmp_path, monkeypatch, marker):
    body = (f"@hookimpl({marker})\ndef gpumem_kernel_source(arch, probe):\n"
            "    result = yield\n    return result\n")
    said: list[str] = []
    plugins = load_plugins(eps=[*_installed("hopper"),
                                _plugin(tmp_path, monkeypatch, "wrapping", body)],
                           warn=said.append)
    (bad,) = [r for r in plugins.records if r.name == "wrapping"]
    assert bad.status == "error"
    assert "gpumem_kernel_source is a hook wrapper" in bad.error
    assert "on its own" in bad.error and "\n" not in bad.error
    assert any("wrapping" in s and "hook wrapper" in s for s in said)
    # the regression: the CUDA device was handed the wrapper's generator as a kernel source
    src = plugins.kernel_lookup("hopper")("pointer_chase")
    assert src is None or (hasattr(src, "code") and isinstance(src.code, str))


def test_every_hook_call_is_traced_when_asked(tmp_path, monkeypatch, capsys):
    ep = _plugin(tmp_path, monkeypatch, "traced", SUBSET_EXPECTED + (
        "@hookimpl\ndef gpumem_simulator_config(arch, simulator):\n"
        "    raise RuntimeError('no config here')\n"))
    monkeypatch.setenv("GPUMEM_TRACE_PLUGINS", "1")
    plugins = load_plugins(eps=[ep], warn=lambda _m: None)
    plugins.expected_values("hopper", _info(), warn=lambda _m: None)
    list(plugins.answers("gpumem_simulator_config", arch="hopper", simulator="sim"))
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("gpumem: trace:")]
    assert any(x.startswith("gpumem: trace: gpumem_register_experiments core ") for x in lines)
    assert any(" gpumem_expected_values traced " in f" {x[15:]} " and x.endswith("list of 1")
               for x in lines), lines
    (err,) = [x for x in lines if "gpumem_simulator_config traced" in x]
    assert " ms -> raised " in err and "no config here" in err


def test_nothing_is_traced_unless_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GPUMEM_TRACE_PLUGINS", raising=False)
    plugins = load_plugins(eps=[_plugin(tmp_path, monkeypatch, "quiet2", SUBSET_EXPECTED)],
                           warn=lambda _m: None)
    plugins.expected_values("hopper", _info(), warn=lambda _m: None)
    assert "gpumem: trace:" not in capsys.readouterr().err


SPECS_MODULE = ("import pluggy\nspec = pluggy.HookspecMarker('gpumem')\n"
                "@spec(firstresult=True)\ndef gpumem_hip_kernel_source(arch, probe):\n"
                "    '''a ROCm backend's own hook'''\n")


def test_a_plugin_adds_its_own_hooks_and_later_plugins_implement_them(tmp_path, monkeypatch):
    """gpumem_addhooks, as pytest_addhooks: a backend brings its hook specs, another plugin
    implements them, and the one hook path answers them."""
    (tmp_path / "rocm_specs_for_test.py").write_text(SPECS_MODULE)
    backend = _plugin(tmp_path, monkeypatch, "a-rocm",
                      "@hookimpl\ndef gpumem_addhooks(pluginmanager):\n"
                      "    import rocm_specs_for_test\n"
                      "    pluginmanager.add_hookspecs(rocm_specs_for_test)\n")
    arch = _plugin(tmp_path, monkeypatch, "b-mi300",
                   "@hookimpl\ndef gpumem_hip_kernel_source(arch, probe):\n"
                   "    return KernelSource(code='// hip', name=probe)\n")
    said: list[str] = []
    plugins = load_plugins(eps=[backend, arch], warn=said.append)
    assert not plugins.failures, said
    src = plugins.first_result("gpumem_hip_kernel_source", arch="mi300", probe="stream")
    assert src.code == "// hip" and src.name == "stream"


def test_the_cuda_kernel_hook_is_the_cuda_backends_own():
    """Core's hook specs do not declare it; core's plugin adds it (gpumem.cuda.hookspecs),
    so the architecture plugins that answer it load."""
    from gpumem.contracts import hookspecs
    from gpumem.cuda import hookspecs as cuda_hookspecs

    assert not hasattr(hookspecs, "gpumem_kernel_source")
    assert hasattr(cuda_hookspecs, "gpumem_kernel_source")
    plugins = load_plugins(eps=_installed("kepler"), warn=lambda _m: None)
    assert not plugins.failures
    assert "pointer_chase_tex" in plugins.kernel_lookup("kepler")("pointer_chase").code


def test_an_addhooks_that_raises_is_a_broken_plugin_in_one_line(tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "bad-specs",
                 "@hookimpl\ndef gpumem_addhooks(pluginmanager):\n"
                 "    raise ImportError('no module named gpumem_rocm.hookspecs')\n")
    said: list[str] = []
    plugins = load_plugins(eps=[ep], warn=said.append)
    (bad,) = plugins.failures
    assert bad.name == "bad-specs" and "gpumem_addhooks raised ImportError" in bad.error
    assert "\n" not in bad.error and len(said) == 1


BROKEN = "raise RuntimeError('half-installed')\n"


def test_a_plugin_warning_is_a_python_warning_of_gpumems_class(tmp_path, monkeypatch):
    """Library callers filter it, or make it an error, as any warning (default warn)."""
    import warnings

    from gpumem.contracts.errors import PluginWarning

    ep = _plugin(tmp_path, monkeypatch, "halfway", BROKEN)
    with pytest.warns(PluginWarning, match="plugin 'halfway' .* failed to load: import "
                                           "failed: RuntimeError: half-installed"):
        load_plugins(eps=[ep])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        with pytest.raises(PluginWarning, match="halfway"):
            load_plugins(eps=[_plugin(tmp_path, monkeypatch, "halfway", BROKEN)])


def test_the_command_shows_a_plugin_warning_as_one_line(cli, tmp_path, monkeypatch):
    ep = _plugin(tmp_path, monkeypatch, "halfway", BROKEN)
    real = plugins_mod.entry_points()
    monkeypatch.setattr(plugins_mod, "entry_points", lambda: [*real, ep])
    res = cli("list-plugins")
    assert res.code == 0
    lines = [x for x in res.err.splitlines() if "halfway" in x]
    assert len(lines) == 1 and lines[0].startswith("gpumem: warning: plugin 'halfway' "), \
        res.err
    assert "failed to load: import failed: RuntimeError: half-installed" in lines[0]
