"""Do reruns agree? What a healthy GPU's repeated runs must show.

A structural finding (a line size, a count of TLB entries, a page size: see
:func:`gpumem.contracts.findings.kind_of`) is a decision among discrete answers: every run must give
the same answer, or every run must say it is unresolved. A measured finding is a number with
an error: every run's value must lie within LATENCY_TOL of the runs' median for latencies
(or LATENCY_ABS cycles, a clock read's granularity, for small differences such as a TLB miss
penalty), BANDWIDTH_TOL for bandwidths and other rates, FOOTPRINT_TOL for a measured
footprint (a knee of the latency ladder); any of them also agrees where the intervals the
runs give for it overlap.
Findings are re-derived from each run's raw files by the present analysis, so a change of
analysis is judged on the same measurements. A change of measurement is not: where the runs
hold different versions of an experiment (:func:`run_versions`), its findings are judged
within each version's runs, not across them (version 4 of bandwidth_levels reads the L1 at
32.7 TB/s, where version 2's kernel read 19.8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpumem.contracts.findings import Finding, kind_of

if TYPE_CHECKING:
    from gpumem.contracts.formats import PluginSet

LATENCY_TOL = 0.02     # latencies: (max - min) / median of the runs
LATENCY_ABS = 2.0      # cycles (1 ns): below this a latency difference is the timer's
BANDWIDTH_TOL = 0.03   # bandwidths, and other rates and ratios of them
FOOTPRINT_TOL = 0.15   # knees: an H200's L2 near/far boundary takes one of two places per
                       # process: 26.9-28.1 MB in seven runs of ten, 29.1-30.8 MB in three


@dataclass
class Agreement:
    """One finding across the runs: its values (or ``None`` where a run lacks it) and the
    verdict."""

    experiment: str
    name: str
    kind: str
    values: list[Any]
    ok: bool
    verdict: str
    candidates: list[Any] = field(default_factory=list)


def run_findings(run_dir: Path, plugins: PluginSet) -> dict[tuple[str, str], Finding]:
    """(experiment, finding) -> finding of one run directory, re-derived from its raw files
    with the experiments of ``plugins`` (every device of the run pooled: a run of one GPU)."""
    from gpumem.interop.compare import analyze_file
    from gpumem.results.store import RunStore

    out: dict[tuple[str, str], Finding] = {}
    store = RunStore(run_dir)
    for e in store.entries():
        if e.status != "complete" or not e.data.get("file"):
            continue
        # only a file inside the run (a file elsewhere: ResultsFileError naming it)
        name, findings = analyze_file(plugins, store.path_of(e.data))
        out.update({(name, f.name): f for f in findings})
    return out


def run_versions(run_dir: Path) -> dict[str, str]:
    """experiment -> the version that measured it, from each complete result file's
    ``gpumem_experiment_version`` attribute ("" where a file does not say)."""
    from gpumem.results.io import open_attrs
    from gpumem.results.store import RunStore

    out: dict[str, str] = {}
    store = RunStore(run_dir)
    for e in store.entries():
        if e.status != "complete" or not e.data.get("file"):
            continue
        attrs = open_attrs(store.path_of(e.data))
        out[str(e.data.get("experiment", ""))] = str(attrs.get("gpumem_experiment_version", ""))
    return out


def _numbers(v: Any) -> np.ndarray | None:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if a.size else None


def _spread(values: list[Any], floor: float = 0.0) -> float | None:
    """Largest relative deviation of a run from the runs' median, |v - median| / |median|,
    elementwise for lists; a deviation of ``floor`` or less (absolute) counts as none."""
    maybe = [_numbers(v) for v in values]
    arrays = [a for a in maybe if a is not None]
    if len(arrays) != len(maybe) or len({a.shape for a in arrays}) != 1:
        return None
    stack = np.stack(arrays)
    med = np.median(stack, axis=0)
    dev = np.abs(stack - med).max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where((np.abs(med) > 0) & (dev > floor), dev / np.abs(med), 0.0)
    return float(np.max(rel))


def _overlap(findings: list[Finding]) -> bool | None:
    """Do the runs' intervals share a point (elementwise for list values)?"""
    intervals = [f.interval for f in findings if f.interval is not None]
    if len(intervals) != len(findings):
        return None
    lo = np.max(np.stack([np.asarray(iv[0], dtype=np.float64) for iv in intervals]), axis=0)
    hi = np.min(np.stack([np.asarray(iv[1], dtype=np.float64) for iv in intervals]), axis=0)
    return bool(np.all(lo <= hi))


def judge(experiment: str, name: str, per_run: list[Finding | None]) -> Agreement:
    """The verdict on one finding across runs."""
    present = [f for f in per_run if f is not None]
    kind = kind_of(present[0]) if present else "structural"
    values = [None if f is None else (f.value if f.resolved else None) for f in per_run]

    def verdict(ok: bool, why: str) -> Agreement:
        cands = [f.candidates for f in present if not f.resolved]
        return Agreement(experiment, name, kind, values, ok, why, cands)

    if len(present) < len(per_run):
        return verdict(False, f"missing in {len(per_run) - len(present)} of {len(per_run)} runs")
    if all(not f.resolved for f in present):
        return verdict(True, "unresolved in every run")
    if any(not f.resolved for f in present):
        return verdict(False, f"unresolved in {sum(not f.resolved for f in present)} of "
                              f"{len(present)} runs, resolved in the others")
    if kind == "structural":
        same = all(_same(f.value, present[0].value) for f in present)
        return verdict(same, "identical" if same else "different answers")
    units = present[0].units
    spread = _spread(values, {"cycle": LATENCY_ABS, "ns": LATENCY_ABS / 2}.get(units, 0.0))
    if units in ("cycle", "ns"):
        tol = LATENCY_TOL
    elif units == "GB/s" or "/" in units or units == "1":
        tol = BANDWIDTH_TOL
    else:
        tol = FOOTPRINT_TOL
    if spread is None:
        return verdict(False, "values not comparable")
    if spread <= tol:
        return verdict(True, f"within {spread:.1%} of the median (tolerance {tol:.0%})")
    meet = _overlap(present)  # a finding that knows its own error agrees if it says so
    if meet:
        return verdict(True, f"{spread:.1%} off the median, but within the runs' intervals")
    return verdict(False, f"{spread:.1%} off the median (tolerance {tol:.0%})")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) or isinstance(b, str):
        return str(a).strip().lower() == str(b).strip().lower()
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return a == b


def agreement(runs: list[dict[tuple[str, str], Finding]],
              versions: list[dict[str, str]] | None = None) -> list[Agreement]:
    """Every finding any run has, judged across all of them, in (experiment, name) order;
    with each run's ``versions`` (:func:`run_versions`), across the runs of each version of
    its experiment where the runs hold more than one."""
    keys = sorted({k for r in runs for k in r})
    return [_judge_by_version(exp, name, [r.get((exp, name)) for r in runs],
                              [v.get(exp) for v in versions] if versions else None)
            for exp, name in keys]


def _judge_by_version(experiment: str, name: str, per_run: list[Finding | None],
                      versions: list[str | None] | None) -> Agreement:
    """:func:`judge` over all runs, or, where the runs that have the experiment measured it
    with different versions, over each version's runs (runs numbered from 1 in the
    verdict); a version with one run has nothing to agree with."""
    known = {v for v in versions or () if v is not None}
    if len(known) < 2:
        return judge(experiment, name, per_run)
    assert versions is not None
    groups: dict[str | None, list[int]] = {}
    for i, v in enumerate(versions):
        groups.setdefault(v, []).append(i)
    parts: list[tuple[bool, str]] = []  # (agrees, what each version's runs show)
    for v, idx in sorted(groups.items(), key=lambda g: g[1][0]):
        runs = f"runs {', '.join(str(i + 1) for i in idx)}"
        mine = [per_run[i] for i in idx]
        if v is not None and all(f is None for f in mine):
            # a finding this version does not give (added or dropped by another)
            parts.append((True, f"version {v} ({runs}): not given by this version"))
            continue
        part = judge(experiment, name, mine)
        said = "one run, nothing to compare" if len(idx) == 1 and part.ok else part.verdict
        parts.append((part.ok, f"{'no version' if v is None else f'version {v}'} ({runs}): "
                               f"{said}"))
    whole = judge(experiment, name, per_run)  # for its kind, values and candidates
    return Agreement(experiment, name, whole.kind, whole.values, all(ok for ok, _ in parts),
                     "; ".join(text for _, text in parts), whole.candidates)
