"""Findings side by side: runs against runs, and against the expected values.

``gpumem analyze`` re-derives findings from one stored raw file (analysis is a pure function
of the dataset); ``gpumem compare`` lines up the findings of one or more run directories (or
results files), with the expected values and their sources. With two runs or more, each run
after the first is compared with the first, finding by finding (``gpumem compare HW SIM1
SIM2``: the GPU, the built-in simulator on the exported config, Accel-Sim on its export):
each row's error per compared run, and one agreement summary per compared run
(``agreements``; ``agreement`` too where there are exactly two runs).

With the expected values (``--expected``), each run is judged by its own architecture's and
its own device's values: a kepler run beside a hopper run, a real H200 beside an H100, or a
run whose architecture no plugin knows (it has none). A row's ``expected``,
``expected_source``, ``tolerance`` and ``band`` are the first run's, as ever; where a run's
own expectation differs from them, ``expected_per_run`` gives every run's that has the
finding (:func:`run_expectation`). A row's ``status`` per run is pass / undecided / fail by
the band (:func:`gpumem.contracts.findings.status_of`), ``contended`` as the run stored it (its
``notes`` say what was seen); ``intervals`` gives each run's interval where known.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.contention import CONTENDED, reapply
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.errors import ResultsFileError, UsageError
from gpumem.contracts.experiment import analyse
from gpumem.contracts.findings import (
    Expected,
    Finding,
    band_of,
    evaluate,
    from_dataset,
    kind_of,
    not_modelled,
    plain_band,
)
from gpumem.contracts.formats import PluginSet, Source, reads_runs
from gpumem.interop.trace_units import to_analysis_units
from gpumem.results.io import open_findings, open_raw
from gpumem.results.kept import is_manifest_file, kept_entries, label_of
from gpumem.results.store import MANIFEST, RunStore


def device_from_attrs(attrs: dict[str, Any]) -> DeviceInfo:
    """The device a raw file was measured on, rebuilt from its global attributes."""
    def num(key: str, cast=float, default=0):
        try:
            return cast(attrs.get(key, default))
        except (TypeError, ValueError):
            return default
    try:  # an attribute of the wrong type (an imported or hand-edited file) is not fatal
        modes = attrs.get("smem_bank_modes", [4])
        bank_modes = tuple(int(m) for m in (modes if hasattr(modes, "__iter__") else [modes]))
    except (TypeError, ValueError):
        bank_modes = (4,)
    return DeviceInfo(
        kind=str(attrs.get("device_kind", "")), name=str(attrs.get("device_name", "")),
        compute_capability=str(attrs.get("compute_capability", "")),
        sm_count=num("sm_count", int), l2_bytes=num("l2_bytes", int),
        memory_bytes=num("memory_bytes", int), clock_mhz=num("clock_mhz"),
        index=num("device_index", int), memory_clock_mhz=num("memory_clock_mhz"),
        memory_bus_bits=num("memory_bus_bits", int), uuid=str(attrs.get("device_uuid", "")),
        driver=str(attrs.get("cuda_driver_version", "")),
        peak_bandwidth_gbs=num("peak_bandwidth_gbs"),
        smem_bank_modes=bank_modes,
        extra=_device_extra(attrs),
    )


#: Global attributes named ``device_*`` that are DeviceInfo's own fields, not its ``extra``.
_DEVICE_FIELDS = {"device_kind", "device_key", "device_name", "device_uuid", "device_index"}


def _device_extra(attrs: dict[str, Any]) -> dict[str, Any]:
    """``DeviceInfo.extra`` as the file stored it (``device_KEY``: the warps an SM holds, its
    shared memory, ...), plain Python values; what expected values may be computed from."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if k.startswith("device_") and k not in _DEVICE_FIELDS:
            out[k.removeprefix("device_")] = v.tolist() if hasattr(v, "tolist") else v
    return out


def expected_for(plugins: PluginSet, arch: str, device: DeviceInfo) -> list[Expected]:
    return plugins.expected_values(arch, device)


def analyze_file(plugins: PluginSet, path: Path, experiment: str | None = None,
                 arch: str | None = None) -> tuple[str, list[Finding]]:
    """(experiment name, findings) of a raw results file, analysed afresh."""
    raw = open_raw(path)
    raw = to_analysis_units(raw, path, experiment)  # bytes and cycles, or one line why not
    tool = raw.attrs.get("gpumem_imported_from")
    if tool:
        raise UsageError(f"{path}: imported from {tool}: its findings were mapped at import "
                         f"(gpumem show); gpumem's analyses apply to its own measurements")
    recorded = str(raw.attrs.get("gpumem_experiment", ""))
    name = experiment or recorded
    experiments = plugins.experiments()
    if not name:
        raise UsageError(f"{path}: the file does not say which experiment produced it "
                         f"(give --experiment; choose from: {', '.join(experiments)})")
    if name not in experiments:
        raise UsageError(f"{path}: unknown experiment '{name}' (choose from: "
                         f"{', '.join(experiments)})")
    if recorded and name != recorded:
        # another experiment's analysis would look for variables this file lacks
        raise UsageError(f"{path}: holds '{recorded}' results, which the '{name}' analysis "
                         f"cannot read (leave out --experiment to use '{recorded}')")
    try:
        findings = analyse(experiments[name](), raw)
    except (KeyError, IndexError, ValueError) as e:
        if recorded:
            raise  # the file's own analysis failing is a bug: keep the traceback
        # --experiment named for a file that records none: a wrong choice is the likely cause
        raise UsageError(f"{path}: cannot be analysed as '{name}' "
                         f"({type(e).__name__}: {e}); is it a {name} file?"
                         .replace("\n", " ")) from None
    arch = arch or str(raw.attrs.get("gpumem_arch", ""))
    if arch:
        findings = evaluate(findings, expected_for(plugins, arch, device_from_attrs(raw.attrs)),
                            name)
    return name, reapply(not_modelled(findings, unmodelled_of(raw.attrs)), raw.attrs)


def unmodelled_of(attrs: dict[str, Any]) -> dict[str, str]:
    """The findings a simulated run's device could not model, as the run recorded them."""
    try:
        got = json.loads(str(attrs.get("gpumem_unmodelled", "") or "{}"))
    except (ValueError, RecursionError):  # a file's attribute is data from elsewhere
        return {}
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def load_sources(target: Path, exclude: Collection[Path] = (),
                 analyze: Callable[[Path], list[Finding]] | None = None) -> list[Source]:
    """One :class:`Source` per device of a run directory (a run made with ``--devices`` holds
    several), of a run kept as its manifest alone (the manifest file named: the findings as
    recorded, never re-analysed; :mod:`gpumem.results.kept`), or the one of a results file.

    ``exclude``: results files to leave out, the damaged ones that
    :func:`gpumem.results.verify.verify_target` found (the caller reports them).
    ``analyze``: findings derived afresh from each file's raw data (the installed gpumem's
    analyses, for a run an older one analysed) instead of those the file stores; a file
    imported from another tool keeps its stored findings."""
    if is_manifest_file(target):
        return _kept_sources(target)
    skip = {Path(p).resolve() for p in exclude}
    files: list[Path]
    if target.is_dir():
        if not (target / MANIFEST).exists():
            raise ResultsFileError(f"{target}: not a gpumem run directory (no {MANIFEST})")
        store = RunStore(target)
        files = [target / e.data["file"] for e in store.entries()
                 if e.status in ("complete", "failed") and e.data.get("file")]
    elif target.is_file():
        files = [target]
    else:
        raise ResultsFileError(f"{target}: no such file or directory")
    label = target.name if target.is_dir() else target.stem
    by_device: dict[str, Source] = {}
    for f in files:
        if f.resolve() in skip:
            continue
        try:
            fds = open_findings(f)
        except ResultsFileError:
            if not target.is_dir():
                raise  # the one file asked for: say why it cannot be read
            continue
        try:
            with xr.open_dataset(f, engine="netcdf4") as raw_head:
                attrs = dict(raw_head.attrs)
        except Exception as e:  # noqa: BLE001 - the netCDF stack raises many types here
            raise ResultsFileError(f"{f}: cannot read its attributes ({type(e).__name__}: "
                                   f"{e})".replace("\n", " ")) from None
        key = str(attrs.get("device_key", ""))
        src = by_device.setdefault(key, Source(label, "", None))
        src.arch = src.arch or str(attrs.get("gpumem_arch", ""))
        src.device = src.device or device_from_attrs(attrs)
        exp = str(attrs.get("gpumem_experiment", f.stem))
        src.versions[exp] = str(attrs.get("gpumem_experiment_version", "") or "")
        found = from_dataset(fds)
        if analyze is not None and not attrs.get("gpumem_imported_from"):
            found = analyze(f)
        for finding in found:
            src.findings[(exp, finding.name)] = finding
    sources = [s for _k, s in sorted(by_device.items()) if s.findings]
    if not sources:
        raise ResultsFileError(f"{target}: no findings to compare (nothing completed?)")
    if len(sources) > 1:
        for key, s in sorted(by_device.items()):
            s.label = f"{label}/{key}"
    return sources


def changed_findings(plugins: PluginSet, sources: list[Source]
                     ) -> dict[tuple[str, str], str]:
    """``(experiment, finding) -> why`` for every finding of ``sources`` an experiment
    measured at a version whose meaning a later version changed
    (:meth:`gpumem.contracts.experiment.Experiment.means_the_same`). Re-analysing an old
    file's raw data does not make it a measurement of today's kind: tests/data/h200-reruns'
    ``bandwidth_levels`` 2 files read bw.l1 19.8 TB/s where version 4 reads 32.8, with
    intervals that are lower bounds. A file or entry that records no version is taken as it
    is."""
    classes = plugins.experiments()
    stale: dict[tuple[str, str], str] = {}
    for s in sources:
        for exp, name in s.findings:
            cls, version = classes.get(exp), s.versions.get(exp, "")
            if cls is None or not version or str(version) == str(cls.version) or \
                    cls.means_the_same(name, version):
                continue
            stale.setdefault((exp, name), (
                f"measured by {exp} version {version} ({s.label}); this gpumem's {exp} is "
                f"version {cls.version}, which changed it: measure it again"))
    return stale


def changed_summary(stale: Mapping[tuple[str, str], str]) -> str:
    """One line for :func:`changed_findings`' answer ("" where it is empty): how many findings
    of which experiments an earlier version measured, a later one having changed them."""
    if not stale:
        return ""
    exps = ", ".join(sorted({exp for exp, _n in stale}))
    return (f"{len(stale)} finding(s) of {exps} were measured by an earlier version of the "
            f"experiment, which this gpumem changed")


def _kept_sources(manifest: Path) -> list[Source]:
    """The sources of a run kept as its manifest alone (:mod:`gpumem.results.kept`): the
    findings as recorded, one source per device; no raw data, so nothing is re-analysed
    and no device description is known (expected values cannot be looked up)."""
    label = label_of(manifest)
    by_device: dict[str, Source] = {}
    for entry in kept_entries(manifest):
        src = by_device.setdefault(entry.device_key, Source(label, "", None))
        src.arch = src.arch or entry.arch
        src.versions[entry.experiment] = entry.version
        for finding in entry.findings:
            src.findings[(entry.experiment, finding.name)] = finding
    kept = {k: s for k, s in sorted(by_device.items()) if s.findings}
    if not kept:
        raise ResultsFileError(f"{manifest}: no findings recorded (nothing completed?)")
    if len(kept) > 1:
        for key, s in kept.items():
            s.label = f"{label}/{key}"
    return list(kept.values())


def load_source(target: Path, reanalyze_with: PluginSet | None = None) -> Source:
    """The one device of a run directory or results file (UsageError if it holds several).
    ``reanalyze_with``: the registry whose analyses derive the findings afresh from the raw
    data (what a simulator config calibrated from the run should rest on: the analyses its
    own simulated runs will get), instead of those the files store."""
    analyze = ((lambda f: analyze_file(reanalyze_with, f)[1]) if reanalyze_with is not None
               else None)
    sources = load_sources(target, analyze=analyze)
    if len(sources) > 1:
        raise UsageError(f"{target}: the run holds {len(sources)} devices "
                         f"({', '.join(s.label for s in sources)}); give one device's results")
    return sources[0]


def load_checked_run(target: Path, reanalyze_with: PluginSet | None = None) -> Source:
    """:func:`load_source` of a run checked whole first (what ``Format.load_run`` does):
    reading skips a results file it cannot open, and an export would then quietly take the
    packaged config's value where the file's finding belongs. Every entry is checked against
    the manifest (missing, size, checksum, outside the run); a :class:`ResultsFileError`
    (exit 1) names the first damaged file."""
    from gpumem.results.store import file_of
    from gpumem.results.verify import CHECKED, verify_target

    run = Path(target)
    damaged = verify_target(run)
    if not damaged and run.is_dir() and (run / MANIFEST).is_file():
        for e in RunStore(run).entries():  # no checksum recorded: the findings must open
            if e.status in CHECKED and e.data.get("file") and not e.data.get("sha256"):
                try:
                    open_findings(file_of(run, e.data["file"]))
                except ResultsFileError as err:
                    raise ResultsFileError(f"{run}: cannot export a damaged run: "
                                           f"{err}") from None
    if damaged:
        more = f" (and {len(damaged) - 1} more damaged)" if len(damaged) > 1 else ""
        raise ResultsFileError(f"{run}: cannot export a damaged run: {damaged[0]}{more}")
    return load_source(run, reanalyze_with=reanalyze_with)


reads_runs(load_checked_run)  # Format.load_run (gpumem.contracts.formats) reads runs with it


def compare(plugins: PluginSet, targets: list[Path], with_expected: bool,
            exclude: Collection[Path] = (), reanalyze: bool = False) -> dict[str, Any]:
    """The comparison as plain data (what ``--json`` prints); ``exclude`` as for
    :func:`load_sources`; ``reanalyze``: every run's findings derived afresh from its raw
    data by the installed analyses (runs analysed by different gpumem versions compared
    like with like)."""
    analyze = (lambda f: analyze_file(plugins, f)[1]) if reanalyze else None
    pairs = [(s, str(t)) for t in targets for s in load_sources(t, exclude, analyze)]
    if with_expected and is_manifest_file(Path(pairs[0][1])):
        raise UsageError(f"{targets[0]}: a manifest keeps no description of its device: "
                         f"expected values need the run's results files (compare "
                         f"without --expected or --check)")
    return compare_sources(plugins, pairs, with_expected)


def compare_sources(plugins: PluginSet, pairs: list[tuple[Source, str]],
                    with_expected: bool) -> dict[str, Any]:
    """:func:`compare` of sources already read (each with the path it is named by), such as
    several runs pooled into one (:func:`gpumem.interop.pool.median_source`)."""
    sources = [s for s, _p in pairs]
    labels = unique_labels([s.label for s in sources])
    keys = sorted({k for s in sources for k in s.findings})
    own: list[dict[str, Expected]] = [{} for _s in sources]  # each run's, by finding
    if with_expected:
        first = sources[0]
        if not first.arch or first.device is None:
            raise UsageError(f"{pairs[0][1]}: no architecture recorded: cannot look up "
                             f"expected values")
        for values, s in zip(own, sources, strict=True):
            if s.arch and s.device is not None:  # a later run that records none has none
                for e in expected_for(plugins, s.arch, s.device):
                    values.setdefault(e.name, e)
    expected = own[0]
    rows = []
    for exp, name in keys:
        row: dict[str, Any] = {"experiment": exp, "finding": name, "units": "",
                               "values": {}, "status": {}}
        for label, s, values in zip(labels, sources, own, strict=True):
            f = s.findings.get((exp, name))
            if f is None:
                continue
            row["units"] = row["units"] or f.units
            row.setdefault("kind", kind_of(f))
            row["values"][label] = f.as_dict()["value"]
            if f.interval is not None:  # scalars: [lo, hi]; lists: [lo list, hi list]
                row.setdefault("intervals", {})[label] = plain_band(f.interval) \
                    if isinstance(f.value, list) else [float(x) for x in f.interval]
            if not f.resolved:
                row.setdefault("candidates", {})[label] = f.as_dict()["candidates"]
            own_e = values.get(name)
            if f.status == CONTENDED:  # measured beside another process: judged by nothing
                row["status"][label] = CONTENDED
                row.setdefault("notes", {})[label] = f.note  # what was seen
            else:  # judged by its own architecture's and device's value, if it has one
                judged = f.with_expected(own_e)
                if own_e is not None:
                    row["status"][label] = judged.status
                if judged.reason:
                    row.setdefault("reasons", {})[label] = judged.reason
        if name in expected:  # the first run's, as rows have always given it
            first_one = _expectation(expected[name])
            row["expected"], row["expected_source"], row["tolerance"], row["band"] = (
                first_one["value"], first_one["source"], first_one["tolerance"],
                first_one["band"])
        # each run's own, where one of the runs that have the finding differs from it
        mine = {label: values.get(name)
                for label, s, values in zip(labels, sources, own, strict=True)
                if (exp, name) in s.findings}
        if any(e != expected.get(name) for e in mine.values()):
            row["expected_per_run"] = {label: None if e is None else _expectation(e)
                                       for label, e in mine.items()}
        vals = [v for v in row["values"].values() if isinstance(v, (int, float))]
        if len(vals) >= 2 and vals[0]:
            row["difference"] = vals[-1] - vals[0]
            row["relative_difference"] = (vals[-1] - vals[0]) / abs(vals[0])
        rows.append(row)
    out: dict[str, Any] = {
        "runs": [{"label": lb, "arch": s.arch,
                  "device": s.device.name if s.device else "", "path": p,
                  **({"expected_values": len(values)} if with_expected else {})}
                 for lb, (s, p), values in zip(labels, pairs, own, strict=True)],
        "expected": bool(with_expected), "rows": rows}
    if len(labels) >= 2:
        out["agreements"] = agreements(rows, labels)
        if len(labels) == 2:
            out["agreement"] = out["agreements"][0]
    return out


def _expectation(e: Expected) -> dict[str, Any]:
    """An expected value as plain data: value, source, tolerance (with the bound, for a
    limit) and band (what a value must lie in to pass, :func:`gpumem.contracts.findings.band_of`:
    ``[lo, hi]``, null for a limit's open end; null for text)."""
    out: dict[str, Any] = {
        "value": e.value if not isinstance(e.value, tuple) else list(e.value),
        "source": e.source, "tolerance": {"rel": e.rel_tol, "abs": e.abs_tol},
        "band": plain_band(band_of(e))}
    if e.bound:
        out["tolerance"]["bound"] = e.bound
    return out


def run_expectation(row: dict[str, Any], label: str) -> dict[str, Any] | None:
    """The expectation run ``label`` was judged by in ``row`` (``value``, ``source``,
    ``tolerance``), ``None`` where it has none: its own entry in ``expected_per_run``, else
    the row's (the first run's)."""
    per_run = row.get("expected_per_run")
    if per_run is not None and label in per_run:
        return per_run[label]
    if "expected" not in row:
        return None
    out = {"value": row["expected"], "source": row.get("expected_source", ""),
           "tolerance": row.get("tolerance", {})}
    if "band" in row:
        out["band"] = row["band"]
    return out


def agreements(rows: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Each run after the first against the first (simulations of one GPU, say: the
    built-in simulator's and Accel-Sim's, against the GPU's run): one
    :func:`agreement_summary` per compared run, in order. Each row gets ``errors`` and
    ``agrees_per_run`` (compared run's label -> its error and verdict, for the rows it
    shares with the first run); ``error`` and ``agrees`` of the one compared run stay only
    where there is one."""
    out = [agreement_summary(rows, labels[0], other) for other in labels[1:]]
    if len(labels) > 2:
        for row in rows:
            row.pop("error", None)
            row.pop("agrees", None)
    return out


#: A measured finding of the second run agrees with the first's within this (relative) error.
AGREEMENT_TOL = 0.05


def row_error(row: dict[str, Any], first: str, second: str) -> float | None:
    """Largest relative error of ``second``'s value against ``first``'s (elementwise for
    lists), or ``None`` where the two are not comparable numbers of one shape."""
    a, b = row["values"].get(first), row["values"].get(second)
    try:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return None
    if a is None or b is None or x.shape != y.shape or not x.size:
        return None
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(x != 0, np.abs(y - x) / np.abs(x), np.where(y == x, 0.0, np.inf))
    return float(rel.max())


def agreement_summary(rows: list[dict[str, Any]], first: str, second: str
                      ) -> dict[str, Any]:
    """How far ``second`` (a simulation, say) is from ``first`` (the hardware), finding by
    finding: measured findings within :data:`AGREEMENT_TOL` of the first's value, structural
    ones equal; a measured finding whose value in the second run lies inside the first's own
    95 % interval, wider than the tolerance, is ``undecided`` (counted apart, ``agrees``
    None); each row both runs have gets its ``error`` and ``agrees`` (and, under
    ``second``'s label, ``errors`` and ``agrees_per_run``, which several calls for several
    compared runs fill side by side). Findings only one run has are counted apart, and so
    are those the first run left unresolved (``unresolved``: no value to reach)."""
    measured = structural = measured_ok = structural_ok = 0
    only: list[str] = []
    undecided: list[str] = []
    unresolved: list[str] = []
    for row in rows:
        if first not in row["values"] or second not in row["values"]:
            only.append(f"{row['experiment']}/{row['finding']}")
            continue
        if row["values"][first] is None:
            # the reference has no value (a search that found nothing): nothing to reach;
            # one the second lacks where the first has one is a miss, counted as such
            unresolved.append(f"{row['experiment']}/{row['finding']}")
            continue
        err = row_error(row, first, second)
        row["error"] = err
        if row.get("kind") == "structural":
            row["agrees"] = bool(err == 0.0 or
                                 str(row["values"][first]) == str(row["values"][second]))
            structural += 1
            structural_ok += row["agrees"]
        elif err is not None and err > AGREEMENT_TOL and _within_own_spread(row, first, second):
            row["agrees"] = None  # the first run cannot tell its value from the second's
            undecided.append(f"{row['experiment']}/{row['finding']}")
        else:
            row["agrees"] = bool(err is not None and err <= AGREEMENT_TOL)
            measured += 1
            measured_ok += row["agrees"]
        row.setdefault("errors", {})[second] = err
        row.setdefault("agrees_per_run", {})[second] = row["agrees"]
    return {"reference": first, "compared": second, "tolerance": AGREEMENT_TOL,
            "measured": measured, "measured_within": measured_ok,
            "structural": structural, "structural_equal": structural_ok,
            "in_one_run_only": only, "undecided": undecided, "unresolved": unresolved}


def _within_own_spread(row: dict[str, Any], first: str, second: str) -> bool:
    """Is the second run's value inside the first's own 95 % interval, and that interval
    wider than the agreement tolerance? Then the first run (an H200's P6 pattern: 676
    cycles, 644-810) cannot say whether the two agree to 5 %: neither verdict is honest."""
    span = row.get("intervals", {}).get(first)
    a, b = row["values"].get(first), row["values"].get(second)
    if span is None or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    lo, hi = span
    wide = hi - lo > 2 * AGREEMENT_TOL * abs(a)
    return bool(wide and lo <= b <= hi)


def unique_labels(labels: list[str]) -> list[str]:
    """Labels made unique by a '#n' suffix on repeats (two runs of one name side by side)."""
    seen: dict[str, int] = {}
    out = []
    for lb in labels:
        seen[lb] = seen.get(lb, 0) + 1
        out.append(lb if seen[lb] == 1 else f"{lb}#{seen[lb]}")
    return out
