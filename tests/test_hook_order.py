"""The hook path keeps pluggy's order and the caller's context (issue 46, item 4).

gpumem asks each plugin's implementation on its own, on a worker thread
(``Plugins.answers``). Two things a plugin author expects from pluggy must survive that:

* order: a ``firstresult`` hook asks plugins in pluggy's call order (``tryfirst``, the last
  registered first, ``trylast``); every other hook asks them in registration order (the first
  registered plugin's answer of a name wins), where ``tryfirst``/``trylast`` are refused at
  load, as hook wrappers are, instead of silently letting a ``trylast`` answer beat a
  ``tryfirst`` one;
* context: each call runs in a copy of the caller's ``contextvars`` context.

And the examples in the hook specs' docstrings are code that compiles, runs and loads.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import textwrap
import types
from pathlib import Path

import pluggy
import pytest
from gpumem import Expected, Experiment, hookimpl
from gpumem.api.formats import Converted, Format
from gpumem.contracts import hookspecs
from gpumem.contracts.findings import Finding, evaluate
from gpumem.cuda import hookspecs as cuda_hookspecs
from gpumem.plugin.registry import PluginRecord, Plugins, call_order


def _plugins() -> Plugins:
    ps = Plugins(timeout=10.0)
    ps.pm.add_hookspecs(cuda_hookspecs)  # as core's gpumem_addhooks does
    return ps


def _add(ps: Plugins, name: str, obj: object, said: list[str]) -> bool:
    return ps.add(obj, PluginRecord(name, f"dist-{name}", "1"), said.append)


# ---- order -------------------------------------------------------------------------------

class Clash(Experiment):
    name = "clash"
    summary = "an experiment two plugins both register"


class ClashFormat(Format):
    name = "clash"
    summary = "a format two plugins both register"

    def export_run(self, run: Path, out: Path, *, arch: str | None = None,
                   target: str | None = None, plugins: object = None) -> Converted:
        return Converted([])


def _registering(kind: str, mark: dict[str, bool]) -> object:
    """A plugin registering the experiment or the format named 'clash', ``mark`` on its hook."""
    if kind == "experiments":
        class P:
            @hookimpl(**mark)
            def gpumem_register_experiments(self, register):
                register(Clash)
    else:
        class P:  # type: ignore[no-redef]
            @hookimpl(**mark)
            def gpumem_register_formats(self, register):
                register(ClashFormat())
    return P()


@pytest.mark.parametrize("kind", ["experiments", "formats"])
def test_tryfirst_and_trylast_on_a_registration_hook_are_refused_saying_why(kind):
    """Registration is per plugin, as it loads, and a name already held rejects the later
    plugin: a trylast plugin loading first used to hold the name against a tryfirst one
    (pluggy would call the tryfirst one first). Both marks are refused at load, in one line;
    the plain plugin that registers the same name holds it."""
    said: list[str] = []
    ps = _plugins()
    assert not _add(ps, "a-last", _registering(kind, {"trylast": True}), said)
    assert not _add(ps, "b-first", _registering(kind, {"tryfirst": True}), said)
    assert _add(ps, "c-plain", _registering(kind, {}), said)
    hook = f"gpumem_register_{kind}"
    last, first = (r for r in ps.records if r.name in ("a-last", "b-first"))
    assert last.status == first.status == "error"
    assert f"{hook} is marked trylast" in last.error and "drop trylast" in last.error
    assert f"{hook} is marked tryfirst" in first.error and "registration order" in first.error
    assert "\n" not in first.error + last.error
    assert ps.owner(kind, "clash").name == "c-plain"
    assert not ps.pm.has_plugin("a-last") and not ps.pm.has_plugin("b-first")
    assert sum("failed to load" in s for s in said) == 2, said


def _expecting(value: int, **mark: bool) -> object:
    class P:
        @hookimpl(**mark)
        def gpumem_expected_values(self, arch, device):
            return [Expected("x.size", value, f"plugin {value}", "byte", rel_tol=0.0)]
    return P()


@pytest.mark.parametrize("mark", ["tryfirst", "trylast"])
def test_tryfirst_or_trylast_on_expected_values_is_refused(mark):
    said: list[str] = []
    ps = _plugins()
    assert _add(ps, "a-plain", _expecting(1), said)
    assert not _add(ps, "b-marked", _expecting(2, **{mark: True}), said)
    assert f"gpumem_expected_values is marked {mark}" in ps.records[-1].error
    (x,) = evaluate([Finding("x.size", 1, "byte", 1.0, "m")], ps.expected_values("a", None))
    assert x.expected_source == "plugin 1"


def test_a_collecting_hook_never_lets_a_trylast_answer_beat_a_tryfirst_one():
    """Registered on pluggy's manager directly (past the refusal), marked implementations
    still come where pluggy puts them: tryfirst before the others, trylast after; plain ones
    in registration order, the first registered one's value winning."""
    said: list[str] = []
    ps = _plugins()
    assert _add(ps, "a-plain", _expecting(1), said)
    ps.pm.register(_expecting(9, trylast=True), name="z-last")
    assert _add(ps, "b-plain", _expecting(2), said)
    ps.pm.register(_expecting(7, tryfirst=True), name="y-first")
    order = [n for n, _r, _e in ps.answers("gpumem_expected_values", arch="a", device=None)]
    assert order == ["y-first", "a-plain", "b-plain", "z-last"]
    (x,) = evaluate([Finding("x.size", 7, "byte", 1.0, "m")], ps.expected_values("a", None))
    assert x.expected == 7 and x.expected_source == "plugin 7"
    assert not said


class _Config:
    """A plugin answering gpumem_simulator_config (firstresult) with its name, ``mark`` on it,
    and noting each call."""

    def __init__(self, name: str, calls: list[str], answer: bool, **mark: bool) -> None:
        self.name, self.calls, self.answer = name, calls, answer

        @hookimpl(specname="gpumem_simulator_config", **mark)
        def config(arch, simulator):
            calls.append(name)
            return name if answer else None
        self.config = config


def test_a_firstresult_hook_asks_in_pluggys_call_order_marks_included():
    """What pluggy itself would call, in what order, and what it would return, gpumem does."""
    said: list[str] = []
    calls: list[str] = []
    ps = _plugins()
    for name, mark in (("a-first", {"tryfirst": True}), ("b-plain", {}),
                       ("c-last", {"trylast": True}), ("d-plain", {}),
                       ("e-first", {"tryfirst": True}), ("f-last", {"trylast": True})):
        assert _add(ps, name, _Config(name, calls, False, **mark), said), said
    ps.pm.hook.gpumem_simulator_config(arch="a", simulator="sim")  # pluggy, all None
    pluggy_order, calls[:] = list(calls), []
    assert pluggy_order == ["e-first", "a-first", "d-plain", "b-plain", "c-last", "f-last"]
    assert [n for n, _r, _e in ps.answers("gpumem_simulator_config", arch="a",
                                          simulator="sim")] == pluggy_order
    assert ps.first_result("gpumem_simulator_config", arch="a", simulator="sim") is None
    assert calls[-6:] == pluggy_order
    # every one answering: pluggy's answer and gpumem's are the tryfirst one registered last
    ps = _plugins()
    for name, mark in (("a-last", {"trylast": True}), ("b-first", {"tryfirst": True}),
                       ("c-plain", {})):
        assert _add(ps, name, _Config(name, calls, True, **mark), said), said
    assert ps.pm.hook.gpumem_simulator_config(arch="a", simulator="sim") == "b-first"
    assert ps.first_result("gpumem_simulator_config", arch="a", simulator="sim") == "b-first"


def test_call_order_lists_pluggys_order_or_registration_order():
    ps = _plugins()
    calls: list[str] = []
    for name, mark in (("a", {"trylast": True}), ("b", {}), ("c", {"tryfirst": True}),
                       ("d", {})):
        ps.pm.register(_Config(name, calls, False, **mark), name=name)
    caller = ps.pm.hook.gpumem_simulator_config
    assert [i.plugin_name for i in call_order(caller, newest_first=True)] == ["c", "d", "b", "a"]
    assert [i.plugin_name for i in call_order(caller, newest_first=False)] == [
        "c", "b", "d", "a"]


# ---- context -----------------------------------------------------------------------------

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("gpumem_test_request")


class _Reader:
    """Answers each hook with the ContextVar's value as its implementation sees it."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    @hookimpl
    def gpumem_register_experiments(self, register):
        self.seen.append(REQUEST.get("unset"))

    @hookimpl
    def gpumem_expected_values(self, arch, device):
        self.seen.append(REQUEST.get("unset"))
        return [Expected("x.size", 1, REQUEST.get("unset"), "byte", rel_tol=0.0)]

    @hookimpl
    def gpumem_simulator_config(self, arch, simulator):
        return REQUEST.get("unset")


class _Writer:
    @hookimpl
    def gpumem_expected_values(self, arch, device):
        REQUEST.set("set by the plugin")
        return None


def test_a_contextvar_the_caller_set_is_seen_inside_every_hook():
    seen: list[str] = []
    said: list[str] = []
    ps = _plugins()

    def load_and_ask() -> tuple[str, str]:
        REQUEST.set("the caller's")
        assert _add(ps, "reader", _Reader(seen), said), said
        (exp,) = ps.expected_values("a", None, said.append)
        return exp.source, ps.first_result("gpumem_simulator_config", arch="a", simulator="s")

    source, config = contextvars.copy_context().run(load_and_ask)
    assert seen == ["the caller's", "the caller's"]  # registration, then expected values
    assert source == config == "the caller's"
    assert REQUEST.get("unset") == "unset"  # this test's own context was not touched
    assert not said


def test_what_a_plugin_sets_stays_in_its_call():
    """Not seen by the caller, nor by the next plugin the reused worker runs."""
    seen: list[str] = []
    said: list[str] = []
    ps = _plugins()
    assert _add(ps, "a-writer", _Writer(), said)
    assert _add(ps, "b-reader", _Reader(seen), said)
    token = REQUEST.set("the caller's")
    try:
        for _ in range(3):  # the same idle worker runs the writer, then the reader
            (exp,) = ps.expected_values("a", None, said.append)
            assert exp.source == "the caller's"
            assert REQUEST.get() == "the caller's"
    finally:
        REQUEST.reset(token)
    assert not said


# ---- the hook specs' examples ------------------------------------------------------------

SPECS = {name: module for module in (hookspecs, cuda_hookspecs)
         for name, fn in vars(module).items()
         if name.startswith("gpumem_") and callable(fn)}


def _example(name: str) -> str:
    """The indented block after ``Example::`` in the hook spec's docstring, dedented."""
    doc = inspect.getdoc(getattr(SPECS[name], name)) or ""
    lines = doc.split("Example::", 1)[1].splitlines()[1:]
    block: list[str] = []
    for line in lines:
        if line.strip() and not line[:1].isspace():
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip() + "\n"


@pytest.fixture
def rocm(monkeypatch):
    """The package gpumem_addhooks's example adds specs from (a ROCm plugin's hookspecs)."""
    specs = types.ModuleType("gpumem_rocm.hookspecs")
    marker = pluggy.HookspecMarker("gpumem")

    def gpumem_hip_kernel_source(arch, probe):
        """A HIP kernel for ``probe`` on ``arch``."""

    specs.gpumem_hip_kernel_source = marker(firstresult=True)(gpumem_hip_kernel_source)
    package = types.ModuleType("gpumem_rocm")
    package.hookspecs = specs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpumem_rocm", package)
    monkeypatch.setitem(sys.modules, "gpumem_rocm.hookspecs", specs)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_hookspec_example_compiles_runs_and_loads_as_a_plugin(name, rocm):
    """Each docstring example is compiled and run as a plugin module, which then loads
    through the registry (its hook validated against the spec, what it registers checked
    as core checks it), and its hook answers where the example can run here."""
    code = _example(name)
    assert f"def {name}(" in code
    module = types.ModuleType(f"gpumem_example_{name}")
    exec(compile(code, f"<{name} example>", "exec"), module.__dict__)  # noqa: S102
    said: list[str] = []
    ps = _plugins()
    assert _add(ps, "example", module, said), said
    (record,) = ps.records
    assert record.status == "ok", record.error
    kind = name.removeprefix("gpumem_register_")
    if kind != name:
        assert record.contributes[kind], f"{name}'s example registers nothing"
    elif name == "gpumem_expected_values":
        got = ps.expected_values("kepler", None, said.append)
        assert [e.name for e in got] == ["lat.smem"]
        assert ps.expected_values("other", None, said.append) == []
    elif name == "gpumem_addhooks":
        assert ps.pm.hook.gpumem_hip_kernel_source.spec is not None
    elif name == "gpumem_simulator_config":
        pytest.importorskip("gpumem_hopper")
        from gpumem.sim.config import SimConfig

        got = ps.first_result(name, arch="hopper", simulator="sim")
        assert isinstance(got, SimConfig)
        assert ps.first_result(name, arch="hopper", simulator="other") is None
    assert not said, said
