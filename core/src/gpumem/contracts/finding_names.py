"""The finding names experiments declare, and the names no experiment declares.

Every experiment lists in its class attribute ``findings``
(:attr:`gpumem.contracts.experiment.Experiment.findings`) the names its analysis can report: exact
names, or :mod:`fnmatch` patterns (``lat.pattern.P[1-6]``) where names are generated. A name
given anywhere else (an expected value, a comparison) can then be checked against them: an
expected value whose name no experiment declares is never compared with anything, and says
nothing. ``latency_pair("lat.l1", ...)`` once gave ``lat.lat.l1`` that way, silently.

An experiment written before ``findings`` existed (or one that sets none) declares nothing:
every name is undeclared as far as it is concerned, so a check built on :func:`undeclared`
names what such an experiment reports as unknown until its author declares it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any


def family(prefixes: Iterable[str], suffixes: Iterable[str]) -> tuple[str, ...]:
    """Every ``PREFIX.SUFFIX``, written out (prefixes outer): the declaration of a family of
    names an analysis generates, such as one set of findings per cache level."""
    suffixes = tuple(suffixes)
    return tuple(f"{p}.{s}" for p in prefixes for s in suffixes)


def declared(experiment: Any) -> tuple[str, ...]:
    """The names or patterns ``experiment`` (a class or an instance) declares; ``()`` for one
    that declares none. A lone string is read as one name, not as its characters."""
    names = getattr(experiment, "findings", ()) or ()
    return (names,) if isinstance(names, str) else tuple(names)


def matches(name: str, patterns: Iterable[str]) -> bool:
    """``name`` equals one of ``patterns`` or matches it as an :mod:`fnmatch` pattern
    (case-sensitive: finding names are)."""
    return any(name == p or fnmatchcase(name, p) for p in patterns)


def undeclared(names: Iterable[str], experiments: Mapping[str, Any] | Iterable[Any]
               ) -> list[str]:
    """The names in ``names`` that no experiment in ``experiments`` declares, each once, in
    the order first given. ``experiments`` is a mapping of name to experiment class (as
    :meth:`gpumem.plugin.registry.Plugins.experiments` returns) or the classes themselves; one that
    declares nothing covers no name."""
    exps = experiments.values() if isinstance(experiments, Mapping) else experiments
    patterns = [p for e in exps for p in declared(e)]
    out: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name not in seen and not matches(name, patterns):
            out.append(name)
        seen.add(name)
    return out
