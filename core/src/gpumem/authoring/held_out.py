"""Plugins judged held out: how a plugin made from two runs of one card fares on other cards.

For each card with two whole runs or more in gpumem's multi-card data, a plugin's expected
values are derived from two of its runs (:func:`gpumem.authoring.new.derive_values`) with
the spreads learned from every *other* card (:func:`gpumem.authoring.learn.summarize`), and
every whole run of every other card is judged by them, experiment by experiment where both
measured it with one version: the healthy runs that fail, and the runs made 10 % worse in a
finding (a latency longer, a bandwidth lower) that still pass. :func:`learn_z` picks the
band's Z (:data:`gpumem.contracts.allowances.BAND_Z`) from it: the smallest at which no
healthy run of another card fails, re-derived as more cards are measured
(``benchmarks/card_allowances.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpumem.authoring.learn import card_of, summarize, versions_beside
from gpumem.authoring.new import derive_values
from gpumem.contracts.allowances import CLASSES, band_z, finding_class, fleet_expected
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Expected, from_dict, status_of
from gpumem.interop.compare import Source

#: The findings whose 10 %-worse runs the held-out judgement counts (issue 42).
REGRESSIONS = ("lat.l2", "lat.dram", "bw.dram_read", "bw.l1", "bw.l2")
#: Candidate Zs, in order: the first with no healthy failure is taken.
CANDIDATES = tuple(round(2.0 + 0.1 * i, 1) for i in range(21))


@dataclass
class WholeRun:
    """One whole run of one card, as its manifest recorded its findings."""

    card: str
    versions: dict[str, str]
    source: Source


def _versions(manifest: Path, entries: list[dict[str, Any]]) -> dict[str, str]:
    known = versions_beside(manifest)
    out = {}
    for e in entries:
        v = e.get("experiment_version") or known.get(e["experiment"])
        if v:
            out[e["experiment"]] = str(v)
    return out


def whole_run(manifest: Path) -> WholeRun:
    """A run folder's manifest as a :class:`WholeRun` (its device taken as an H200-like
    CUDA device of the card's UUID prefix: only the findings are judged)."""
    entries = [e for e in json.loads(manifest.read_text())["entries"].values()
               if e.get("status") == "complete"]
    product, card = card_of(entries[0]["device"])
    device = DeviceInfo(kind="cuda", name=product, compute_capability="", sm_count=0,
                        l2_bytes=0, memory_bytes=0, clock_mhz=0.0,
                        uuid=f"GPU-{card.removeprefix('gpu')}")
    findings = {(e["experiment"], n): from_dict(n, f) for e in entries
                for n, f in (e.get("findings") or {}).items()}
    return WholeRun(card, _versions(manifest, entries),
                    Source(manifest.parent.name, "", device, findings))


def pairs(runs: list[WholeRun]) -> dict[str, list[WholeRun]]:
    """card -> its first two whole runs (cards with two or more)."""
    by: dict[str, list[WholeRun]] = {}
    for r in runs:
        by.setdefault(r.card, []).append(r)
    return {c: v[:2] for c, v in sorted(by.items()) if len(v) >= 2}


def plugin(pair: list[WholeRun], allowances: dict[str, Any] | None
           ) -> tuple[dict[str, tuple[str, Expected]], dict[str, str]]:
    """The expected values a plugin made from ``pair`` holds (finding -> (experiment,
    Expected)), and the experiment versions both runs measured."""
    values, _left = derive_values([r.source for r in pair], allowances)
    versions = {k: v for k, v in pair[0].versions.items() if pair[1].versions.get(k) == v}
    return {v.name: (v.experiment, v.expected()) for v in values}, versions


def worse(name: str) -> float:
    """The factor that makes ``name`` 10 % worse: a latency longer, a bandwidth lower."""
    return 1.1 if name.startswith("lat.") else 0.9


def judge(expected: dict[str, tuple[str, Expected]], versions: dict[str, str] | None,
          run: WholeRun, shift: dict[str, float] | None = None
          ) -> tuple[list[tuple], int]:
    """(fails, judged) of ``run`` against ``expected``, only experiments measured at one
    version by both (``versions``: the plugin's; None: every experiment); ``shift``:
    finding -> factor applied to the run's value and interval."""
    fails, judged = [], 0
    for (exp, name), f in run.source.findings.items():
        if name not in expected or not f.resolved or f.value is None:
            continue
        e_exp, e = expected[name]
        if versions is not None and run.versions.get(exp) != versions.get(e_exp):
            continue
        if shift and name in shift:
            k = shift[name]
            f = replace(f, value=_scaled(f.value, k), interval=None if f.interval is None
                        else (_scaled(f.interval[0], k), _scaled(f.interval[1], k)))
        judged += 1
        if f.value is not None and status_of(f.value, e, f.interval, f.index) == "fail":
            fails.append((name, f.value, e.value, e.rel_tol))
    return fails, judged


def judges(expected: dict[str, tuple[str, Expected]], versions: dict[str, str] | None,
           run: WholeRun, name: str) -> bool:
    """Does :func:`judge` judge ``run``'s finding ``name``: expected, resolved, and measured
    at the plugin's version of its experiment (a run of another version is not judged, so
    its 10 %-worse copy is no missed regression)."""
    for (exp, n), f in run.source.findings.items():
        if n != name or n not in expected or not f.resolved or f.value is None:
            continue
        if versions is None or run.versions.get(exp) == versions.get(expected[n][0]):
            return True
    return False


def _scaled(v: Any, k: float) -> Any:
    return [x * k for x in v] if isinstance(v, list) else v * k


def spreads_without(measurements: list[dict[str, Any]], dropped: dict[str, int],
                    runs: list[WholeRun]) -> dict[str, dict[str, Any]]:
    """card -> the spreads learned from every other card's measurements (what its held-out
    plugin is made with; the same at every Z)."""
    return {card: summarize([m for m in measurements if m["card"] != card], dropped)
            for card in pairs(runs)}


def held_out(measurements: list[dict[str, Any]], dropped: dict[str, int],
             runs: list[WholeRun], z: float | dict[str, Any] | None = None, *,
             learnts: dict[str, dict[str, Any]] | None = None,
             regressions: bool = True) -> dict[str, Any]:
    """Every card's plugin judged on every other card's runs (see the module docstring),
    at band Z ``z`` (one for every class, or by finding class: ``{"value": ...,
    "by_class": ...}`` as the learned data hold it; default: the learned one): healthy
    failures by finding, and (with
    ``regressions``) for each of :data:`REGRESSIONS` the (plugin card, run) pairs whose
    10 %-worse run passed. ``learnts``: :func:`spreads_without`, when already known."""
    learnts = learnts if learnts is not None else spreads_without(measurements, dropped, runs)
    fails: dict[str, int] = {}
    judged = 0
    missed: dict[str, list[tuple[str, str]]] = {n: [] for n in REGRESSIONS}
    tried: dict[str, int] = {n: 0 for n in REGRESSIONS}
    for card, pair in pairs(runs).items():
        zs = z if isinstance(z, dict) else {"value": band_z() if z is None else z}
        learnt = {**learnts[card], "band_z": zs}
        expected, versions = plugin(pair, learnt)
        for other in runs:
            if other.card == card:
                continue
            bad, n = judge(expected, versions, other)
            judged += n
            for name, *_rest in bad:
                fails[name] = fails.get(name, 0) + 1
            has = {n_ for _x, n_ in other.source.findings} if regressions else set()
            for name in (x for x in REGRESSIONS if x in has):
                if not judges(expected, versions, other, name):
                    continue
                tried[name] += 1
                worse_bad, _m = judge(expected, versions, other, {name: worse(name)})
                if not any(x[0] == name for x in worse_bad):
                    missed[name].append((card, other.source.label))
    return {"judged": judged, "healthy_fails": fails, "missed": missed, "tried": tried}


def _by_class(fails: dict[str, int], units: dict[str, str]) -> dict[str, int]:
    """Healthy failures by finding, summed by finding class."""
    by: dict[str, int] = {}
    for name, n in fails.items():
        cls = finding_class(name, units.get(name, ""))
        by[cls] = by.get(cls, 0) + n
    return by


def _first_holding(tried: list[tuple[float, dict[str, int]]]) -> dict[str, float]:
    """Each class's first Z tried with no failure of its own (the last tried where none)."""
    out = {}
    for cls in CLASSES:
        holds = [z for z, by in tried if not by.get(cls)]
        out[cls] = holds[0] if holds else tried[-1][0]
    return out


def fleet_held_out(measurements: list[dict[str, Any]], dropped: dict[str, int],
                   runs: list[WholeRun], z: float | dict[str, Any], *,
                   learnts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each card's whole runs judged by the fleet's values (:func:`gpumem.contracts.
    allowances.fleet_expected`, what hopper judges a card of the model by) made from every
    *other* card's measurements, at fleet Z ``z`` (one for every class, or as the learned
    data hold them): the healthy failures by finding."""
    cards = sorted({r.card for r in runs})
    learnts = learnts if learnts is not None else {
        card: summarize([m for m in measurements if m["card"] != card], dropped)
        for card in cards}
    fails: dict[str, int] = {}
    judged = 0
    for card in cards:
        data = {**learnts[card], "band_z": z if isinstance(z, dict) else {"value": z}}
        expected = {e.name: (e.experiment, e) for e in fleet_expected("", data=data)}
        for run in (r for r in runs if r.card == card):
            bad, n = judge(expected, None, run)
            judged += n
            for name, *_rest in bad:
                fails[name] = fails.get(name, 0) + 1
    return {"judged": judged, "healthy_fails": fails}


def learn_fleet_z(measurements: list[dict[str, Any]], dropped: dict[str, int],
                  runs: list[WholeRun]) -> dict[str, Any]:
    """For each finding class, the smallest of :data:`CANDIDATES` at which the fleet's
    values made without a card hold every whole run of it (:func:`fleet_held_out`; the
    largest where none does): an eleventh H100 read l2.near_size 9.5 % above ten cards'
    center, where their farthest lay 6.0 % from it."""
    cards = sorted({r.card for r in runs})
    learnts = {card: summarize([m for m in measurements if m["card"] != card], dropped)
               for card in cards}
    units = {n: f.units for r in runs for (_x, n), f in r.source.findings.items()}
    tried: list[tuple[float, dict[str, int], int]] = []
    for z in CANDIDATES:
        got = fleet_held_out(measurements, dropped, runs, z, learnts=learnts)
        by = _by_class(got["healthy_fails"], units)
        tried.append((z, by, got["judged"]))
        if not by:
            break
    by_class = _first_holding([(z, by) for z, by, _n in tried])
    return {"fleet_by_class": by_class,
            "fleet_rule": "for each finding class, the smallest Z (2.0, 2.1, ...) at which the "
                          "fleet's values made from every other card hold every whole run of "
                          "a card in the findings of that class",
            "fleet_cards": cards,
            "fleet_fails_at_smaller": {str(a): b for a, b, _n in tried if b},
            "fleet_judged": tried[-1][2]}


def learn_z(measurements: list[dict[str, Any]], dropped: dict[str, int],
            runs: list[WholeRun]) -> dict[str, Any]:
    """For each finding class, the smallest of :data:`CANDIDATES` at which no healthy run of
    another card fails its held-out plugins in a finding of that class (the largest where
    none holds every run), with what those Zs do (how many 10 %-worse runs still pass):
    classes differ in their tails (an H100's latencies depend on where the chasing SM
    sits), and one class's tail should not widen another's bands."""
    learnts = spreads_without(measurements, dropped, runs)
    units = {n: f.units for r in runs for (_x, n), f in r.source.findings.items()}
    tried: list[tuple[float, dict[str, int]]] = []
    for z in CANDIDATES:  # healthy runs only: the regressions are judged at the Zs taken
        got = held_out(measurements, dropped, runs, z, learnts=learnts, regressions=False)
        by = _by_class(got["healthy_fails"], units)
        tried.append((z, by))
        if not by:
            break
    by_class = _first_holding(tried)
    zs = {"value": max(by_class.values()), "by_class": by_class}
    got = held_out(measurements, dropped, runs, zs, learnts=learnts)
    cards = sorted(pairs(runs))
    return {**zs,
            "rule": "for each finding class, the smallest Z (2.0, 2.1, ...) at which every "
                    "card's plugin, made from two of its runs with the spreads learned from "
                    "the other cards only, holds every whole run of every other card in the "
                    "findings of that class (value: the largest)",
            "cards": cards,
            "healthy_fails_at_smaller": {str(a): b for a, b in tried if b},
            "healthy_fails": got["healthy_fails"],
            "judged": got["judged"],
            "missed_regressions": {n: len(v) for n, v in got["missed"].items()},
            "regressions_judged": got["tried"]}
