"""Learning the card-to-card and run-to-run allowances from gpumem's own multi-card runs.

``benchmarks/card_allowances.py`` calls :func:`derive` on the committed runs of several
healthy cards of one model and writes what it finds to
:data:`gpumem.contracts.allowances.ALLOWANCES_FILE`, which :func:`gpumem.contracts.allowances.
model_band` reads. Each run folder's manifest gives, per experiment, which card measured it
and its findings: derived afresh from the raw file where the folder keeps it (this gpumem's
analyses), else as the manifest recorded them. Only runs of the experiment's current version
count (a version's measurement can differ from the last's: bandwidth_levels 2 read the L1 at
19.8 TB/s, version 4 at 32.7); the version comes from the manifest entry, the raw file, or a
``versions.json`` beside the manifest (``{experiment: version}``, for manifests written
before entries recorded it). A run that appears in two folders counts once.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpumem.contracts.allowances import (
    CHOICES,
    CLASSES,
    LABELLED,
    card_sigma,
    finding_class,
)
from gpumem.contracts.findings import from_dict
from gpumem.plugin.registry import Plugins

#: Findings of the node rather than the card (peer access: which GPU is whose neighbour and
#: over which link), left out of what cards of one model share.
NODE_SPECIFIC = ("p2p.",)


def _manifests(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    direct = folder / "manifest.json"
    return [direct] if direct.exists() else sorted(folder.glob("*.manifest.json"))


def versions_beside(manifest: Path) -> dict[str, str]:
    """``versions.json`` in the manifest's folder: ``{experiment: version}``, or keyed by
    the manifest's file name first (a folder of several manifests)."""
    f = manifest.parent / "versions.json"
    if not f.exists():
        return {}
    data = json.loads(f.read_text())
    mine = data.get(manifest.name, data)
    return {str(k): str(v) for k, v in mine.items() if isinstance(v, (str, int))}


def _raw_file(manifest: Path, entry: dict[str, Any]) -> Path | None:
    """The raw results file an entry names, if it names one inside its run (an edited
    manifest must not make gpumem read another folder's file: results.store.file_of)."""
    from gpumem.contracts.errors import ResultsFileError
    from gpumem.results.store import file_of

    if not entry.get("file"):
        return None
    try:
        return file_of(manifest.parent, entry["file"])
    except ResultsFileError:
        return None


def card_of(device_key: str) -> tuple[str, str]:
    """(product, card) of a run's device key (``cuda0-nvidia-h200-gpub94ce``: the product
    ``nvidia-h200``, the card ``gpub94ce``, its UUID's first characters)."""
    parts = device_key.split("-")
    if len(parts) < 3 or not parts[-1].startswith("gpu"):
        return ("-".join(parts[1:]) if len(parts) > 1 else device_key, device_key)
    return "-".join(parts[1:-1]), parts[-1]


def _entries(folders: Iterable[Path]) -> list[tuple[Path, dict[str, Any], str]]:
    """(manifest, entry, version known of it) of every complete GPU entry; the version from
    the entry, the raw file, or ``versions.json`` beside the manifest, "" where none says."""
    from gpumem.results.io import open_attrs

    out = []
    for folder in folders:
        for manifest in _manifests(Path(folder)):
            beside = versions_beside(manifest)
            for e in json.loads(manifest.read_text())["entries"].values():
                if e.get("status") != "complete" or not str(e.get("device", "")).startswith(
                        "cuda"):
                    continue
                raw = _raw_file(manifest, e)
                version = str(e.get("experiment_version", "")) or beside.get(
                    e["experiment"], "")
                if raw is not None and raw.exists() and not version:
                    version = str(open_attrs(raw).get("gpumem_experiment_version", ""))
                out.append((manifest, e, version))
    return out


def read_runs(plugins: Plugins, folders: Iterable[Path]) -> tuple[list[dict[str, Any]],
                                                                   dict[str, int]]:
    """Every (card, experiment) measurement of the runs in ``folders`` at the experiment's
    current version (or findings no version since changed the meaning of,
    :meth:`gpumem.contracts.experiment.Experiment.means_the_same`): ``{"product", "card",
    "run", "experiment", "findings": {name: as_dict}}``;
    and how many were left out, by why. An entry whose version nothing records takes the
    version of another entry with its params hash (the hash covers the version)."""
    from gpumem.interop.compare import analyze_file

    classes = plugins.experiments()
    current = {name: cls.version for name, cls in classes.items()}
    entries = _entries(folders)
    by_hash = {(e["experiment"], e.get("params_hash")): v for _m, e, v in entries if v}
    out: list[dict[str, Any]] = []
    dropped: dict[str, int] = defaultdict(int)
    seen: set[tuple] = set()
    for manifest, e, version in entries:
        key = (e["device"], e["experiment"], e.get("started"))
        if key in seen:
            dropped["the same run in another folder"] += 1
            continue
        seen.add(key)
        version = version or by_hash.get((e["experiment"], e.get("params_hash")), "")
        if not version:
            dropped["experiment version unknown"] += 1
            continue
        cls = classes.get(e["experiment"])
        if cls is None or (version != current[e["experiment"]] and not any(
                cls.means_the_same(n, version) for n in (e.get("findings") or {}))):
            dropped["an earlier version of the experiment"] += 1
            continue
        raw = _raw_file(manifest, e)
        if raw is not None and raw.exists():
            findings = {f.name: f.as_dict() for f in analyze_file(plugins, raw)[1]}
        else:  # as recorded, read as any reader reads them (contracts.findings.from_dict)
            findings = {n: from_dict(n, d).as_dict() for n, d in (e.get("findings") or {}).items()}
        if version != current[e["experiment"]]:  # its findings a bump since left alone
            kept = {n: f for n, f in findings.items() if cls.means_the_same(n, version)}
            dropped["findings an experiment's later version changed"] += len(findings) - \
                len(kept)
            findings = kept
        product, card = card_of(str(e["device"]))
        out.append({"product": product, "card": card, "experiment": e["experiment"],
                    "run": f"{manifest.parent.as_posix()}:{e.get('started')}",
                    "findings": findings})
    return out, dict(dropped)


def _elements(v: Any) -> list[float] | None:
    items = v if isinstance(v, list) else [v]
    try:
        return [float(x) for x in items]
    except (TypeError, ValueError):
        return None


def _median(rows: list[list[float]]) -> list[float]:
    return [statistics.median(col) for col in zip(*rows, strict=True)]


def _up(x: float, places: int = 5) -> float:
    """``x`` rounded up to ``places`` decimals: a largest distance seen, never understated."""
    return math.ceil(x * 10 ** places) / 10 ** places


def _stats(by_card: dict[str, list[list[float]]], absolute: bool) -> dict[str, Any]:
    """The card medians' range and standard deviation (``range / d2(k)``), and the runs'
    pooled standard deviation about their card's median (cards with two runs or more) and
    largest deviation from it; relative to the median of the card medians, or in units for
    ``absolute``; the worst element of a list."""
    meds = {c: _median(v) for c, v in by_card.items()}
    center = _median(list(meds.values()))
    span, far = 0.0, 0.0
    for i, c0 in enumerate(center):
        col = [m[i] for m in meds.values()]
        r = max(col) - min(col)
        span = max(span, r if absolute else (r / abs(c0) if c0 else 0.0))
        d = max(abs(x - c0) for x in col)
        far = max(far, d if absolute else (d / abs(c0) if c0 else 0.0))
    worst, squares, dof = 0.0, [0.0] * len(center), 0
    for c, runs in by_card.items():
        if len(runs) < 2:
            continue
        dof += len(runs) - 1
        for run in runs:
            for i, (x, y) in enumerate(zip(run, meds[c], strict=True)):
                d = abs(x - y) if absolute else (abs(x - y) / abs(y) if y else 0.0)
                worst = max(worst, d)
                squares[i] += d * d
    run_sigma = math.sqrt(max(squares) / dof) if dof else None
    k = len(by_card)
    return {"cards": k, "runs": sum(len(v) for v in by_card.values()),
            "center": [round(c, 6) for c in center],
            "card_range": round(span, 5),
            # rounded up: the farthest card (and run) seen stays inside the bands made of
            # them (an H200's dsmem.remote_extra, 2.209 % off the center, fell 0.001 cycle
            # outside a band of 2.209 % rounded to nearest)
            "card_max": _up(far),
            "card_sigma": round(card_sigma(span, k), 5) if k > 1 else None,
            "run_sigma": None if run_sigma is None else round(run_sigma, 5),
            "run_max": _up(worst),
            "card_list": sorted(by_card)}


def derive(plugins: Plugins, folders: Sequence[Path]) -> dict[str, Any]:
    """The allowances the runs in ``folders`` show (see the module docstring), for the
    product measured on the most cards, as :data:`~gpumem.contracts.allowances.
    ALLOWANCES_FILE` holds them."""
    measurements, dropped = read_runs(plugins, folders)
    return summarize(measurements, dropped, folders)


def summarize(measurements: list[dict[str, Any]], dropped: dict[str, int],
              folders: Sequence[Path] = ()) -> dict[str, Any]:
    """:func:`derive` from measurements already read (:func:`read_runs`): a test leaves
    one card's out to judge that card's plugin by the others' spreads alone."""
    cards_of: dict[str, set[str]] = defaultdict(set)
    for m in measurements:
        cards_of[m["product"]].add(m["card"])
    if not cards_of:
        raise ValueError("no run of a GPU at the experiments' current versions in "
                         + (", ".join(str(f) for f in folders) or "the runs given"))
    product = max(sorted(cards_of), key=lambda p: len(cards_of[p]))
    values: dict[str, dict[str, list[list[float]]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    index: dict[str, list] = {}
    integral: dict[str, bool] = {}
    measured_by: dict[str, set[str]] = defaultdict(set)
    structural: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    runs: set[str] = set()
    for m in measurements:
        if m["product"] != product:
            continue
        runs.add(m["run"])
        for name, f in m["findings"].items():
            if f.get("value") is None or f.get("status") == "contended" or \
                    name.startswith(NODE_SPECIFIC) or name in LABELLED:
                continue
            # a choice on a grid was recorded as structural before it had an interval
            if f.get("kind") == "structural" and name not in CHOICES:
                structural[name][m["card"]].add(json.dumps(f["value"]))
                continue
            els = _elements(f["value"])
            if els is None:
                continue
            values[name][m["card"]].append(els)
            measured_by[name].add(str(m["experiment"]))
            units[name] = str(f.get("units", ""))
            if f.get("index"):
                index[name] = [f["index"]["dim"], list(f["index"]["values"])]
            integral[name] = integral.get(name, True) and all(
                isinstance(x, int) for x in (f["value"] if isinstance(f["value"], list)
                                             else [f["value"]]))
    findings: dict[str, Any] = {}
    for name in sorted(values):
        by_card = values[name]
        if len({len(r) for rows in by_card.values() for r in rows}) > 1:
            continue  # lists of different grids: not one measurement
        cls = finding_class(name, units[name])
        findings[name] = {"class": cls, "units": units[name],
                          **_stats(by_card, cls == "choice"),
                          **({"index": index[name]} if name in index else {}),
                          "integral": integral.get(name, False),
                          "experiments": sorted(measured_by[name])}
    classes: dict[str, Any] = {}
    for cls in CLASSES:
        members = {n: st for n, st in findings.items() if st["class"] == cls}
        cards = {n: st for n, st in members.items() if st["card_sigma"] is not None}
        runs_ = {n: st for n, st in members.items() if st["run_sigma"] is not None}
        if not cards or not runs_:
            continue
        worst_card = max(cards, key=lambda n: cards[n]["card_sigma"])
        worst_run = max(runs_, key=lambda n: runs_[n]["run_sigma"])
        classes[cls] = {
            "card_sigma": cards[worst_card]["card_sigma"],
            "run_sigma": runs_[worst_run]["run_sigma"],
            "from": f"the largest of its {len(members)} findings' (card to card: "
                    f"{worst_card}; run to run: {worst_run})",
            "cards": max(st["cards"] for st in cards.values()),
            "runs": max(st["runs"] for st in members.values())}
    specific = {}
    for name, texts in sorted(structural.items()):
        seen = sorted(set().union(*texts.values()))
        if len(seen) > 1:
            within = [c for c, vs in texts.items() if len(vs) > 1]
            specific[name] = (f"differed between runs of one card ({', '.join(within)})"
                              if within else "differed between cards") + \
                f": {' | '.join(seen)[:200]}"
    return {
        "about": "card-to-card and run-to-run allowances of gpumem findings, learned from "
                 "gpumem's runs on several healthy cards of one model "
                 "(gpumem.contracts.allowances says how they are used)",
        "derived_by": "python benchmarks/card_allowances.py " + " ".join(
            Path(f).as_posix() for f in folders),
        "product": product,
        "cards": sorted(cards_of[product]),
        "runs": len(runs),
        "left_out": dropped,
        "method": {"card_sigma": "range of the card medians / d2(cards)",
                   "card_max": "largest distance of a card's median from the median of them",
                   "run_sigma": "pooled standard deviation of runs about their card's "
                                "median (cards with two runs or more)",
                   "run_max": "largest deviation of a run from its card's median",
                   "relative": "to the median of the card medians (a choice: in its "
                               "units)"},
        "findings": findings,
        "classes": classes,
        "card_specific": specific,
    }


def check_finite(data: dict[str, Any]) -> None:
    """Refuse spreads that are not finite numbers >= 0 (a corrupt data file)."""
    for where in ("findings", "classes"):
        for name, st in data.get(where, {}).items():
            for k in ("card_sigma", "run_sigma"):
                v = st.get(k)
                if v is not None and (not isinstance(v, (int, float)) or not math.isfinite(v)
                                      or v < 0):
                    raise ValueError(f"{where}.{name}.{k}: {v!r} is not a number >= 0")
