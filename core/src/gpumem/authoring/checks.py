"""The checks a plugin must pass, named, from one generator (in the manner of scikit-learn's
``parametrize_with_checks``).

:func:`plugin_checks` loads a plugin on its own (core and this plugin, whatever else is
installed: :func:`gpumem.authoring.check.load_alone`) and yields its checks, each a
:class:`PluginCheck` with a stable ``name``. Which checks a plugin gets follows from what it
contributes, and they run in this order (ARCH: each architecture it registers):

============================  ==============================================================
``loads``                     it loads (the only check of a plugin that does not)
``architectures``             only for a plugin of none: nothing of the below to check
``ARCH:simulator_config``     its built-in simulator config names ARCH and a compute
                              capability of it
``ARCH:quick_run``            (where it has a config) a quick simulated run of every
                              experiment meets its expected values
``ARCH:expected_names``       every expected value names a finding an experiment reports
``ARCH:expected_sources``     every expected value has a source
``ARCH:expected_valid``       every expected value its hook gave is valid
``ARCH:planted_cache``        core's structure search recovers planted caches under ARCH
``imports``                   the package (and a source tree's tests) imports from gpumem
                              only its public API
============================  ==============================================================

Three places iterate them, so that they stay one list: ``gpumem plugin check`` runs each
and prints its line (:func:`check_plugin`); the tests ``gpumem plugin new`` writes and the
example plugin's tests make one test of each (:func:`parametrize_plugin_checks`, the test's
id the check's name). What each check does is :mod:`gpumem.authoring.check`'s. Plugins reach
this module through :mod:`gpumem.api.checks`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpumem.authoring.check import (
    WHAT,
    Check,
    _expected_names,
    _imports,
    _loads,
    _planted_cache,
    _quick_run,
    _sim_config,
    load_alone,
)
from gpumem.contracts.errors import Interrupted


@dataclass(frozen=True)
class PluginCheck:
    """One named check of a plugin. ``run()`` gives its line (:class:`~gpumem.authoring.
    check.Check`: what, ok, detail); calling it, as a test does, raises ``AssertionError``
    with that line where the check fails."""

    #: Stable and unique among a plugin's checks: ``loads``, ``ARCH:quick_run``, ...
    name: str
    #: The line's text (``ARCH: quick simulated run meets its expected values``).
    what: str
    _fn: Callable[[], Check] = field(repr=False, compare=False)

    def run(self) -> Check:
        """The check's line. A check that raises is a FAIL line naming the exception (the
        plugin's code is what is checked); an interrupt still stops."""
        try:
            line = self._fn()
        except Interrupted:
            raise
        except Exception as e:  # noqa: BLE001 - one check's crash is that check's failure
            return Check(self.what, False, f"raised {type(e).__name__}: {e}", self.name)
        return Check(self.what, line.ok, line.detail, self.name)

    def __call__(self) -> None:
        """Run as a test: an exception the check raises propagates (its traceback shown);
        a failed check raises ``AssertionError('WHAT: DETAIL')``."""
        __tracebackhide__ = True  # pytest: the failure is the check's, not this frame's
        line = self._fn()
        if not line.ok:
            raise AssertionError(f"{self.what}: {line.detail}")


class _Subject:
    """The plugin checked: loaded once; its architectures' configs and expected values
    asked once each, shared by the checks that read them."""

    def __init__(self, target: str | Path, workers: int) -> None:
        self.plugins, self.ep, self.tree = load_alone(str(target))
        self.name: str = self.ep.name
        self.workers = workers
        self.loaded = _loads(self.plugins, self.name, self.tree, self.ep)
        self._configs: dict[str, tuple[Check, Any]] = {}
        self._expected: dict[str, tuple[Check, Check, Check]] = {}

    def architectures(self) -> list[Any]:
        rec = next(r for r in self.plugins.records if r.name == self.name)
        known = self.plugins.architectures()
        return [known[a] for a in rec.contributes["architectures"]]

    def config(self, arch: Any) -> tuple[Check, Any]:
        if arch.name not in self._configs:
            self._configs[arch.name] = _sim_config(self.plugins, arch)
        return self._configs[arch.name]

    def expected(self, arch: Any) -> tuple[Check, Check, Check]:
        if arch.name not in self._expected:
            self._expected[arch.name] = _expected_names(self.plugins, arch,
                                                        self.config(arch)[1])
        return self._expected[arch.name]


def _named(key: str, arch: Any, fn: Callable[[], Check]) -> PluginCheck:
    if arch is None:
        return PluginCheck(key, WHAT[key], fn)
    return PluginCheck(f"{arch.name}:{key}", WHAT[key].format(arch=arch.name), fn)


def _checks(s: _Subject) -> Iterator[PluginCheck]:
    yield _named("loads", None, lambda: s.loaded)
    if not s.loaded.ok:
        return
    archs = s.architectures()
    if not archs:
        yield _named("architectures", None, lambda: Check(
            WHAT["architectures"], True, "none: no simulator config or expected values to "
                                         "check"))
    for arch in archs:
        yield _named("simulator_config", arch, functools.partial(lambda a: s.config(a)[0], arch))
        if s.config(arch)[1] is not None:
            yield _named("quick_run", arch,
                         functools.partial(_quick_run, s.plugins, arch, s.workers))
        for i, key in enumerate(("expected_names", "expected_sources", "expected_valid")):
            yield _named(key, arch, functools.partial(lambda a, i: s.expected(a)[i], arch, i))
        yield _named("planted_cache", arch, functools.partial(_planted_cache, s.plugins, arch))
    yield _named("imports", None, lambda: _imports(s.ep, s.tree))


def plugin_checks(target: str | Path, *, workers: int = 1) -> Iterator[PluginCheck]:
    """The checks of the plugin ``target`` names (an installed plugin's name, or its source
    folder: the folder of its ``pyproject.toml``, whose code goes first on ``sys.path``),
    loaded on its own, in the order they run. ``workers``: processes for the quick run."""
    yield from _checks(_Subject(target, workers))


def check_plugin(target: str | Path, *, workers: int = 1) -> tuple[str, list[Check]]:
    """Every check of the plugin run, in order: (its name, their lines, each with its check's
    name). A source tree is on ``sys.path`` only while it is checked."""
    before = list(sys.path)
    try:
        s = _Subject(target, workers)
        return s.name, [c.run() for c in _checks(s)]
    finally:
        sys.path[:] = before


def parametrize_plugin_checks(target: str | Path, *, workers: int = 1) -> Any:
    """``pytest.mark.parametrize("check", ...)`` over :func:`plugin_checks`, each test's id
    the check's name; the test calls it::

        @parametrize_plugin_checks("a100")
        def test_plugin_check(check):
            check()

    The plugin is loaded when the test module is (pytest's collection). pytest is imported
    here only."""
    import pytest

    checks = list(plugin_checks(target, workers=workers))
    return pytest.mark.parametrize("check", checks, ids=[c.name for c in checks])
