"""The plugin surface (issue 18): what plugins may import, the helper they build on, the
layering of core (no import cycles), and the registry passed in rather than fetched."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import gpumem.api as api
import pytest
from gpumem.authoring.check import ALLOWED_IMPORTS, gpumem_imports, imports_past_api
from gpumem.authoring.check import ALLOWED_IN_TESTS as ALLOWED_TESTS
from gpumem.contracts.architecture import Architecture
from gpumem.contracts.errors import PluginError
from gpumem.plugin.arch import ArchitecturePlugin
from gpumem.plugin.registry import PluginRecord, Plugins, first_party, get_plugins

ROOT = Path(__file__).resolve().parents[1]
#: Every in-tree plugin's package, and the plugin guide's example (a third party's template).
#: Packages only: an editable install leaves ``gpumem_*.egg-info`` folders beside them, which
#: hold no code (5 cases that could not fail, issue 46).
PLUGIN_SOURCES = sorted([p for p in ROOT.glob("plugins/*/src/gpumem_*")
                         if (p / "__init__.py").is_file()] +
                        [ROOT / "examples" / "gpumem-example-arch" / "src" / "gpumem_example_arch"])
PLUGIN_TESTS = sorted(ROOT.glob("examples/*/tests"))
ALLOWED = ALLOWED_IMPORTS
ALLOWED_IN_TESTS = ALLOWED_TESTS


def offending(folder: Path, allowed: frozenset[str]) -> list[str]:
    """What ``gpumem plugin check`` reports of a plugin's imports, for a folder here."""
    return imports_past_api(folder, allowed, root=ROOT)


def test_the_checker_finds_an_import_past_the_api():
    src = ("from gpumem.api import Experiment\nimport gpumem.sim.engine\n"
           "def f():\n    from gpumem.interop.compare import load_source\n")
    assert [m for _, m in gpumem_imports(src)] == ["gpumem.api", "gpumem.sim.engine",
                                                   "gpumem.interop.compare"]


@pytest.mark.parametrize("package", PLUGIN_SOURCES, ids=lambda p: p.name)
def test_plugins_import_only_the_public_api(package):
    assert package.is_dir()
    bad = offending(package, ALLOWED)
    assert not bad, "import gpumem.api instead:\n" + "\n".join(bad)


@pytest.mark.parametrize("folder", PLUGIN_TESTS, ids=lambda p: p.parent.name)
def test_plugin_tests_import_only_the_api_and_testing(folder):
    bad = offending(folder, ALLOWED_IN_TESTS)
    assert not bad, "\n".join(bad)


def test_every_public_name_resolves_and_is_listed():
    assert len(api.__all__) == len(set(api.__all__))
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    public = {n for n, v in vars(api).items() if not n.startswith("_") and n not in
              {"annotations"} and not isinstance(v, type(sys))}
    assert public <= set(api.__all__), f"not in __all__: {sorted(public - set(api.__all__))}"


#: Names a part gained after the split (never in gpumem.api, so not moved from it).
ADDED_TO_PARTS = {"PluginSet": "gpumem.api.formats",
                  # the checks every plugin must pass, for its tests (issue 46)
                  "PluginCheck": "gpumem.api.checks", "plugin_checks": "gpumem.api.checks",
                  "parametrize_plugin_checks": "gpumem.api.checks",
                  # the chase's cycle, for a trace whose warm-up loads the recorded lines first
                  "cycle_length": "gpumem.api.simulator",
                  # text from a run written into a format's comments, one line
                  "escape_controls": "gpumem.api.formats",
                  # which findings of a run an earlier version of their experiment measured
                  "changed_findings": "gpumem.api.formats",
                  "changed_summary": "gpumem.api.formats"}


@pytest.mark.parametrize("part", ["gpumem.api.simulator", "gpumem.api.formats",
                                  "gpumem.api.checks"])
def test_every_name_of_a_part_resolves_and_none_is_also_in_the_core_api(part):
    mod = importlib.import_module(part)
    assert len(mod.__all__) == len(set(mod.__all__))
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name
        assert name not in api.__all__, f"{name}: in {part} and in gpumem.api"
        if name in ADDED_TO_PARTS:
            assert ADDED_TO_PARTS[name] == part and name not in api._MOVED
            continue
        assert api._MOVED[name] == part  # and still found in gpumem.api until 0.2 (below)


def test_a_moved_name_is_still_found_with_a_warning_that_says_where():
    import warnings

    from gpumem.api.simulator import SimConfig

    api._WARNED.discard("SimConfig")
    with pytest.warns(DeprecationWarning, match=r"gpumem\.api\.SimConfig moved to "
                                                r"gpumem\.api\.simulator"):
        assert api.SimConfig is SimConfig
    api._WARNED.discard("SimConfig")  # `from ... import` asks twice: one warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec("from gpumem.api import SimConfig as S", {})
    assert len([w for w in caught if issubclass(w.category, DeprecationWarning)]) == 1
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        api.NoSuchName  # noqa: B018


def test_every_figure_helper_resolves():
    import gpumem.api.figures as figures

    for name in figures.__all__:
        assert getattr(figures, name) is not None, name


def test_importing_the_api_loads_no_cupy_numba_or_matplotlib():
    code = ("import sys, gpumem.api, gpumem.api.simulator, gpumem.api.formats, "
            "gpumem.api.checks\n"
            "print(sorted(m for m in ('cupy', 'numba', 'matplotlib', 'pytest') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


# ---- layering: no import cycles ------------------------------------------------------------


def _architecture_module():
    spec = importlib.util.spec_from_file_location("architecture_figures",
                                                  ROOT / "benchmarks" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_core_has_no_import_cycles():
    """No module of core imports (at run time, function-level imports included) a module that
    imports it back, directly or through others: each layer can be read on its own."""
    arch = _architecture_module()
    graph = arch.import_graph(ROOT)
    assert "gpumem.run.runner" in graph and "gpumem.sim.engine" in graph
    assert arch.strongly_connected(graph) == []
    assert arch.strongly_connected(arch.package_graph(graph)) == []


def test_the_cycle_finder_finds_a_cycle():
    arch = _architecture_module()
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert arch.strongly_connected(graph) == [["a", "b", "c"]]


# ---- first-party plugins from metadata -----------------------------------------------------


def test_first_party_comes_from_gpumems_metadata():
    """The plugins released with gpumem are the ``plugins`` extra of gpumem-dissect."""
    from importlib import metadata

    from gpumem import DISTRIBUTION

    listed = [r for r in metadata.requires(DISTRIBUTION) if 'extra == "plugins"' in r]
    assert len(listed) == 5
    assert first_party() == {"gpumem-fermi", "gpumem-kepler", "gpumem-maxwell",
                             "gpumem-hopper", "gpumem-accelsim"}


# ---- ArchitecturePlugin ----------------------------------------------------------------------


def test_architecture_plugin_reads_the_packages_layout():
    hooks = get_plugins().pm.get_plugin("kepler")
    assert isinstance(hooks, ArchitecturePlugin)
    assert hooks.gpumem_expected_values(arch="hopper", device=None) is None
    sim = hooks.gpumem_simulator_config(arch="kepler", simulator="sim")
    assert type(sim).__name__ == "SimConfig"
    accel = hooks.gpumem_simulator_config(arch="kepler", simulator="accelsim")
    assert accel.is_dir() and (accel / "gpgpusim.config").is_file()
    assert hooks.gpumem_simulator_config(arch="kepler", simulator="other") is None
    assert hooks.gpumem_simulator_config(arch="kepler", simulator="plugin") is None  # code
    src = hooks.gpumem_kernel_source(arch="kepler", probe="pointer_chase")
    assert "pointer_chase_tex" in src.code
    assert hooks.gpumem_kernel_source(arch="kepler", probe="stream") is None


def test_architecture_plugin_without_expected_values_or_configs(tmp_path, monkeypatch):
    pkg = tmp_path / "gpumem_bare"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = ArchitecturePlugin(Architecture("bare", "a bare architecture"), "gpumem_bare")
    assert hooks.gpumem_expected_values(arch="bare", device=None) is None
    assert hooks.gpumem_simulator_config(arch="bare", simulator="sim") is None
    seen = []
    hooks.gpumem_register_experiments(register=seen.append)
    hooks.gpumem_register_architectures(register=seen.append)
    assert [a.name for a in seen] == ["bare"]


def test_a_broken_expected_py_is_its_plugins_error_not_silence(tmp_path, monkeypatch):
    pkg = tmp_path / "gpumem_broken"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "expected.py").write_text("import gpumem_no_such_module\n")
    for name in [m for m in sys.modules if m.split(".")[0] == "gpumem_broken"]:
        monkeypatch.delitem(sys.modules, name)  # the fixture distribution's, if imported
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = ArchitecturePlugin(Architecture("broken", "x"), "gpumem_broken")
    with pytest.raises(ModuleNotFoundError, match="gpumem_no_such_module"):
        hooks.gpumem_expected_values(arch="broken", device=None)


# ---- the kernel source: each plugin asked on its own, passed to the device -----------------


def test_kernel_lookup_names_a_failing_plugin_and_asks_the_next(capsys):
    from gpumem import hookimpl

    class Careless:
        @hookimpl
        def gpumem_kernel_source(self, arch, probe):
            raise RuntimeError("no kernels today")

    from gpumem.plugin import builtin

    warnings: list[str] = []
    plugins = Plugins(warn=warnings.append)
    # core first, as load_plugins does: it adds the CUDA backend's hook (gpumem_addhooks)
    plugins.add(builtin, PluginRecord("core", "d", "1"), warnings.append)
    plugins.add(get_plugins().pm.get_plugin("kepler"), PluginRecord("kepler", "d", "1"),
                warnings.append)
    plugins.add(Careless(), PluginRecord("careless", "d", "1"), warnings.append)
    lookup = plugins.kernel_lookup("kepler")
    assert "pointer_chase_tex" in lookup("pointer_chase").code
    assert any("careless" in w and "no kernels today" in w for w in warnings)
    with pytest.raises(PluginError, match="careless"):
        lookup("stream")  # nobody else answers: the failure is raised, naming the plugin


def test_the_cuda_device_asks_the_lookup_it_was_given_not_a_global(monkeypatch):
    """CudaDevice takes its kernels from the lookup passed in (the runner's registry)."""
    from gpumem.contracts.device import KernelSource
    from gpumem.cuda import device as cuda_device

    asked = []

    def lookup(probe):
        asked.append(probe)
        return KernelSource(code="// planted", name=probe)

    dev = object.__new__(cuda_device.CudaDevice)
    dev.kernel_source, dev.kernel_sources = lookup, {}
    assert dev._source("stream").code == "// planted"
    dev2 = object.__new__(cuda_device.CudaDevice)
    dev2.kernel_source, dev2.kernel_sources = None, {}
    assert "pointer_chase" in dev2._source("pointer_chase").code
    assert asked == ["stream"]


# ---- expected-value blocks shared by architectures --------------------------------------------


def test_tlb_block_derives_entries_sets_and_reach_from_the_geometry():
    from gpumem.contracts.expected_blocks import tlb_expected, ways_text

    assert ways_text((17, 8, 8, 8, 8, 8, 8)) == "one 17-entry set and six 8-entry sets"
    assert ways_text((4, 4)) == "two 4-entry sets"
    block = {e.name: e for e in tlb_expected(
        page=2 << 20, page_source="p", source="S", l1_entries=16, l2_ways=(17, 8, 8),
        l2_entries_source="n", penalty_source="pen", l1_penalty=(10.0, 1.0, "a"),
        l2_penalty=(50.0, 2.0, "b"))}
    assert block["tlb_l2.entries"].value == 33 and block["tlb_l2.sets"].value == 3
    assert block["tlb_l2.reach"].value == 33 * (2 << 20)
    assert block["tlb_l2.reach"].source == "S: reach 66 MB"
    assert block["tlb_l1.ways"].source == "S: fully associative (16-way)"
    assert block["tlb_l2.miss_penalty"].abs_tol == 2.0
    assert block["tlb_l2.miss_penalty"].source == "pen: b"


def test_the_three_paper_plugins_share_the_blocks_and_cite_one_paper():
    """Fermi, Kepler and Maxwell state TLB, copy bandwidth, shared memory and patterns through
    the shared builders: the same finding names, each cited to Mei & Chu."""
    from gpumem.contracts.device import DeviceInfo

    names = None
    for arch in ("fermi", "kepler", "maxwell"):
        values = get_plugins().expected_values(arch, DeviceInfo(
            kind="sim", name="x", compute_capability="0.0", sm_count=1, l2_bytes=1 << 20,
            memory_bytes=1 << 30, clock_mhz=1000.0))
        shared = {e.name for e in values if e.name.startswith(("tlb", "smem.", "lat.pattern.P1"))}
        assert all("Mei & Chu" in e.source for e in values if e.name in shared), arch
        names = shared if names is None else names & shared
    assert {"tlb.page", "tlb_l2.ways", "smem.conflict_latency", "lat.pattern.P1"} <= names


def test_no_hook_is_called_past_the_one_isolating_path():
    """Outside gpumem/plugin/registry.py, core and the plugins never call ``pm.hook.gpumem_*``
    directly: every call goes through Plugins.answers (expected values, first results, kernel
    lookups), which names a plugin that raises and asks the others."""
    bad = []
    for path in sorted([*(ROOT / "core" / "src" / "gpumem").rglob("*.py"),
                        *ROOT.glob("plugins/*/src/gpumem_*/**/*.py")]):
        if path.name == "registry.py" and path.parent.name == "plugin":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("gpumem_") and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "hook":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} .hook.{node.attr}")
    assert not bad, bad


def test_answers_yields_each_plugins_result_or_error():
    from gpumem import Expected, hookimpl

    good = Expected("x.good", 1.0, "src")

    class Good:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            return [good]

    class Bad:
        @hookimpl
        def gpumem_expected_values(self, arch, device):
            raise KeyError("bad")

    heard: list[str] = []
    plugins = Plugins(warn=heard.append)
    plugins.add(Good(), PluginRecord("good", "d", "1"), heard.append)
    plugins.add(Bad(), PluginRecord("bad", "d", "1"), heard.append)
    got = [(n, r, type(e).__name__ if e else None)
           for n, r, e in plugins.answers("gpumem_expected_values", arch="x", device=None)]
    assert got == [("good", [good], None), ("bad", None, "KeyError")]
    assert plugins.expected_values("x", None, warn=heard.append) == [good]
    assert heard == ["plugin 'bad' failed to give expected values for 'x': KeyError: 'bad'"]


def test_every_in_tree_plugin_package_is_checked():
    """The import-boundary test above runs on each plugin's package and the example's, and on
    nothing else (no egg-info folder)."""
    names = {p.name for p in PLUGIN_SOURCES}
    assert names == {"gpumem_fermi", "gpumem_kepler", "gpumem_maxwell", "gpumem_hopper",
                     "gpumem_accelsim", "gpumem_example_arch"}


def test_the_format_contract_is_one_class_and_the_plugin_set_is_what_a_format_asks_of():
    """Format, its errors and PluginSet live in the contracts (issue 46): the API and the
    interop modules give the same objects, and the loaded plugin set is a PluginSet."""
    import gpumem.contracts.formats as contract
    import gpumem.interop.formats as interop
    from gpumem.api import load_plugins
    from gpumem.api.figures import Series
    from gpumem.api.formats import Converted, Format, FormatError, PluginSet
    from gpumem.contracts.series import Series as ContractSeries
    from gpumem.figures.series import Series as ToolkitSeries

    assert (Format, FormatError, Converted, PluginSet) == (
        contract.Format, contract.FormatError, contract.Converted, contract.PluginSet)
    assert (interop.Format, interop.FormatError, interop.Converted) == (
        Format, FormatError, Converted)
    assert Series is ContractSeries is ToolkitSeries
    assert isinstance(load_plugins(), PluginSet)
    assert contract._run_reader is not None  # Format.load_run reads with interop's reader
