"""Every experiment declares the finding names it can report (``Experiment.findings``), and
every expected value names a declared finding.

The issue: an expected value written ``latency_pair("lat.l1", ...)`` became ``lat.lat.l1``,
which no experiment reports, so it was never compared with anything and nothing said so.

* (a) every finding a simulated run emits is declared by the experiment that emitted it:
  quick runs of every experiment on hopper (TMA, DSMEM, cp.async), kepler (global loads that
  bypass the L1: ``l2.*`` structure findings) and fermi (the texture L1, way weights), the
  session's shared runs (conftest's ``sim_run``); a two-GPU node for ``p2p`` and the example
  plugin's ``path_latency``, in this process;
* (b) every expected value of every in-tree plugin and of the example plugin, on a real
  H200 (the REFERENCE values), another CUDA card and the simulator, names a declared finding;
* (c) :func:`gpumem.contracts.finding_names.undeclared` names the issue's ``lat.lat.l1``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.experiment import Experiment
from gpumem.contracts.finding_names import declared, family, matches, undeclared
from gpumem.contracts.findings import latency_pair
from gpumem.plugin.registry import PluginRecord, Plugins, load_plugins
from gpumem.results.store import MANIFEST
from helpers import GPUMEM_ENV

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SRC = ROOT / "examples" / "gpumem-example-arch" / "src"
#: Architectures whose quick simulated runs of every experiment are checked (see above).
RUN_ARCHS = ("hopper", "kepler", "fermi")
#: A finding name: dot-separated parts (fnmatch characters allowed in a pattern).
NAME = re.compile(r"[A-Za-z0-9_*?\[\]-]+(\.[A-Za-z0-9_*?\[\]-]+)+")


@pytest.fixture(scope="module")
def plugins() -> Iterator[Plugins]:
    """Every installed plugin, and the example plugin (from its source, not installed)."""
    with pytest.MonkeyPatch.context() as mp:
        for var in GPUMEM_ENV:
            mp.delenv(var, raising=False)
        mp.syspath_prepend(str(EXAMPLE_SRC))
        from gpumem_example_arch.plugin import plugin as example

        warnings: list[str] = []
        ps = load_plugins(warn=warnings.append)
        if "path_latency" not in ps.experiments():  # found already where a build of the
            # example left its metadata (an egg-info) beside its source
            assert ps.add(example, PluginRecord("example-arch", "gpumem-example-arch", "0"),
                          warnings.append), warnings
        assert not ps.failures, warnings
        yield ps


@pytest.fixture(scope="module")
def emitted(plugins, sim_run, tmp_path_factory) -> dict[str, dict[str, set[str]]]:
    """run -> experiment -> the finding names that run emitted."""
    from gpumem.run.runner import RunRequest, run
    from gpumem.sim import Interconnect

    base = tmp_path_factory.mktemp("finding_names")
    out: dict[str, dict[str, set[str]]] = {}
    # the runs no plain simulated run makes (l2_hash is not part of all)
    cfg = plugins.hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.interconnect = Interconnect(peers=1, latency=900.0, bandwidth_gbs=450.0)
    node = base / "node.toml"
    cfg.validate().save(node)
    # l2_twins needs a slice queue, which the packaged hopper config does not model
    twins = plugins.hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    next(c for c in twins.caches if c.slices > 1).slice_bandwidth = 64.0
    queue = base / "queue.toml"
    twins.validate().save(queue)
    for key, req in (("hopper-node", RunRequest("hopper", ["p2p"], device="sim",
                                                 sim_config=node, quick=True,
                                                 out=base / "node")),
                     ("gv100", RunRequest("gv100", ["path_latency"], device="sim",
                                          quick=True, out=base / "gv100")),
                     ("hopper-hash", RunRequest("hopper", ["l2_hash"], device="sim",
                                                quick=True, out=base / "hash")),
                     ("hopper-twins", RunRequest("hopper", ["l2_twins"], device="sim",
                                                 sim_config=queue, quick=True,
                                                 out=base / "twins"))):
        rep = run(req, plugins=plugins)
        out[key] = {o.experiment: {f.name for f in o.findings} for o in rep.outcomes
                    if o.status == "complete"}
    # the quick runs of every experiment (made once per session: conftest's sim_run)
    for (arch, _), done in sim_run.many([(arch, True) for arch in RUN_ARCHS]).items():
        assert done.ran, f"{arch}: gpumem run failed:\n{done.text[-3000:]}"
        manifest = json.loads((done.out / MANIFEST).read_text())
        runs: dict[str, set[str]] = {}
        for entry in manifest["entries"].values():
            if entry.get("status") == "complete":
                runs.setdefault(entry["experiment"], set()).update(entry["findings"])
        out[arch] = runs
    return out


def _device(kind: str, name: str) -> DeviceInfo:
    """A plausible device for expected values computed from its properties."""
    return DeviceInfo(kind=kind, name=name, compute_capability="9.0", sm_count=132,
                      l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0,
                      memory_clock_mhz=3201.0, memory_bus_bits=6144,
                      peak_bandwidth_gbs=4800.0)


#: A real H200 (hopper's REFERENCE values apply to it alone), another CUDA card, a simulator.
DEVICES = (("cuda", "NVIDIA H200"), ("cuda", "NVIDIA H100 80GB HBM3"), ("sim", "sim h200"))


# ---------------------------------------------------------------------------------------------
# (a) what runs emit is declared
# ---------------------------------------------------------------------------------------------


def test_every_emitted_finding_is_declared_by_its_experiment(plugins, emitted):
    exps = plugins.experiments()
    bad = {f"{run}/{exp}": sorted(n for n in names if not exps[exp].declares(n))
           for run, by_exp in emitted.items() for exp, names in by_exp.items()}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"findings emitted but not declared in the experiment's findings: {bad}"


def test_the_runs_exercise_every_experiment(plugins, emitted):
    """Not vacuous: each registered experiment emitted findings in at least one run."""
    ran = {exp for by_exp in emitted.values() for exp, names in by_exp.items() if names}
    assert ran == set(plugins.experiments()), sorted(set(plugins.experiments()) - ran)


# ---------------------------------------------------------------------------------------------
# (b) every expected value names a declared finding
# ---------------------------------------------------------------------------------------------


def test_every_registered_experiment_declares_names(plugins):
    for name, exp in plugins.experiments().items():
        names = exp.findings
        assert isinstance(names, tuple) and names, f"{name}: findings must be a non-empty tuple"
        assert len(set(names)) == len(names), f"{name}: a name declared twice"
        bad = [n for n in names if not isinstance(n, str) or not NAME.fullmatch(n)]
        assert not bad, f"{name}: not finding names: {bad}"


@pytest.mark.parametrize("kind, device", DEVICES)
def test_every_expected_value_names_a_declared_finding(plugins, kind, device):
    exps = plugins.experiments()
    missing = {arch: undeclared([e.name for e in plugins.expected_values(
        arch, _device(kind, device))], exps)
        for arch in [*plugins.architectures(), "sm_90"]}  # sm_90: a GPU no plugin describes
    missing = {arch: names for arch, names in missing.items() if names}
    assert not missing, f"on {device}: expected values no experiment declares: {missing}"


def test_the_checked_expected_values_include_every_plugin_and_the_h200_reference(plugins):
    assert {"fermi", "kepler", "maxwell", "hopper", "gv100"} <= set(plugins.architectures())
    for arch in ("fermi", "kepler", "maxwell", "hopper", "gv100"):
        assert plugins.expected_values(arch, _device("sim", "sim h200")), arch
    h200 = plugins.expected_values("hopper", _device("cuda", "NVIDIA H200"))
    reference = [e.name for e in h200
                 if e.source.startswith(("REFERENCE", "gpumem on healthy H200"))]
    assert {"tlb_l2.no_level_below", "cpasync.speedup", "lat.pattern.P1"} <= set(reference)


# ---------------------------------------------------------------------------------------------
# (c) the issue's name, and the rules of a declaration
# ---------------------------------------------------------------------------------------------


def test_the_doubled_prefix_of_the_issue_is_undeclared(plugins):
    exps = plugins.experiments()
    assert undeclared(["lat.lat.l1"], exps) == ["lat.lat.l1"]
    wrong = latency_pair("lat.l1", 30.0, "src", 1000.0, "base clock")
    assert undeclared([e.name for e in wrong], exps) == ["lat.lat.l1", "lat.lat.l1_ns"]
    right = latency_pair("l1", 30.0, "src", 1000.0, "base clock")
    assert undeclared([e.name for e in right], exps) == []


class _Patterned(Experiment):
    name = "patterned"
    findings = ("lat.pattern.P[1-6]", "x.exact")

    def plan(self, ctx):
        raise NotImplementedError

    def analyze(self, raw):
        return []


class _Old(_Patterned):
    """Written before ``findings`` existed: declares nothing."""

    name = "old"
    findings = ()


def test_declarations_are_exact_names_or_fnmatch_patterns():
    assert _Patterned.declares("lat.pattern.P3") and _Patterned().declares("x.exact")
    assert not _Patterned.declares("lat.pattern.P7")
    assert not _Patterned.declares("X.exact")  # case-sensitive
    assert not _Old.declares("lat.pattern.P3")
    assert undeclared(["x.exact", "y", "y", "lat.pattern.P9"], {"p": _Patterned, "o": _Old}) \
        == ["y", "lat.pattern.P9"]
    assert undeclared(["x.exact"], [_Old]) == ["x.exact"]


def test_a_lone_string_or_a_plain_object_is_read_sensibly():
    class Lone:
        findings = "cpasync.speedup"  # a forgotten comma: one name, not its characters

    class Plain:
        name = "plain"

    assert declared(Lone) == ("cpasync.speedup",) and not matches("c", declared(Lone))
    assert declared(Plain) == ()
    assert undeclared(["cpasync.speedup", "a.b"], [Lone, Plain]) == ["a.b"]


def test_family_writes_every_name_out():
    assert family(("l1d", "ro"), ("line", "ways")) == ("l1d.line", "l1d.ways", "ro.line",
                                                       "ro.ways")
