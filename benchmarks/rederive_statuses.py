"""Re-derive the statuses of the committed H200 runs under the band rule (issue 30 item 2).

For every committed run (tests/data/h200-run, h200-reruns, h200-cards, h200x2-run,
h200-generic, h200-tlb-reruns), each stored finding with an expected value is judged against
the expected values of the installed plugins twice: by the OLD rule (gpumem up to commit
2fd08a6: pass when the value *or its interval* comes within the tolerance, warn within twice
it) and by the NEW rule (:func:`gpumem.contracts.findings.status_of`: pass when the value lies in
the
band, fail when band and interval do not overlap, undecided otherwise). It prints, per run,
the rows whose status changed (finding, value, interval, band, old, new) and the counts.

Nothing is written: the committed .nc files and manifests (with their checksums) stay as
they are. Run directories read their findings from the netCDF files (gpumem.interop.compare's
loader); h200-generic holds manifests only: their findings (value, interval, index) are read
from the manifest, and its device properties (what expected values of sm_90 and of the
hopper plugin's device-derived values rest on) are taken from tests/data/h200-run's file,
the same H200 SXM model.

    .venv/bin/python benchmarks/rederive_statuses.py [--all-rows]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from gpumem.cli._common import fmt_band, fmt_interval, fmt_value
from gpumem.contracts.findings import Expected, Finding, _by_label, band_of, status_of
from gpumem.interop.compare import device_from_attrs, load_sources
from gpumem.plugin.registry import get_plugins

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
RUNS = ("h200-run", "h200-reruns", "h200-cards", "h200x2-run", "h200-generic",
        "h200-tlb-reruns")

# ---------------------------------------------------------------------------------------------
# THE OLD RULE (gpumem/contracts/findings.py at commit 2fd08a6), kept here only to compare: pass
# when
# the value or its interval comes within tol = max(abs_tol, rel_tol*|e|) of the expected
# value (a limit: only how far beyond it counts), warn within 2 tol, fail beyond.
# ---------------------------------------------------------------------------------------------
_OLD_ORDER = {"pass": 0, "n/a": 0, "not modelled": 0, "warn": 1, "unresolved": 1, "fail": 2}


def _old_status_scalar(v: Any, exp: Expected, e: Any, span: Any = None) -> str:
    if isinstance(e, str) or isinstance(v, str):
        return "pass" if str(v).strip().lower() == str(e).strip().lower() else "fail"
    try:
        fv, fe = float(v), float(e)
    except (TypeError, ValueError):
        return "n/a"
    if math.isnan(fv) or math.isnan(fe):
        return "n/a"
    tol = max(exp.abs_tol, exp.rel_tol * abs(fe))
    d = abs(fv - fe)
    lo = hi = fv
    if span is not None:
        try:
            lo, hi = sorted((float(span[0]), float(span[1])))
        except (TypeError, ValueError):
            lo = hi = fv
        if math.isnan(lo) or math.isnan(hi):
            lo = hi = fv
    if exp.bound:
        d = max(0.0, min(fv, lo) - fe if exp.bound == "max" else fe - max(fv, hi))
    else:
        d = min(d, 0.0 if lo <= fe <= hi else min(abs(lo - fe), abs(hi - fe)))
    if d <= tol + 1e-12 * max(1.0, abs(fe)):
        return "pass"
    if d <= 2 * tol and tol > 0:
        return "warn"
    return "fail"


def old_status_of(value: Any, exp: Expected, interval: Any = None, index: Any = None) -> str:
    """The OLD rule, as gpumem.contracts.findings.status_of was at commit 2fd08a6."""
    e = exp.value
    if isinstance(e, (list, tuple)):
        paired = _by_label(value, exp, interval, index)
        if paired is not None:
            vals, want, spans = paired
            if not vals:
                return "n/a"
        else:
            if not isinstance(value, (list, tuple)) or len(value) != len(e):
                return "fail"
            vals, want, spans = list(value), list(e), [None] * len(e)
            if interval is not None and isinstance(interval[0], (list, tuple)) and \
                    len(interval[0]) == len(e) == len(interval[1]):
                spans = list(zip(interval[0], interval[1], strict=True))
        statuses = [_old_status_scalar(v, exp, x, sp)
                    for v, x, sp in zip(vals, want, spans, strict=True)]
        return max(statuses, key=lambda s: _OLD_ORDER[s])
    if isinstance(value, (list, tuple)):
        return "fail"
    span = interval if interval is not None and not isinstance(interval[0], (list, tuple)) \
        else None
    return _old_status_scalar(value, exp, e, span)


# ---------------------------------------------------------------------------------------------


def run_dirs(name: str) -> list[Path]:
    """The run directories (or manifests, for h200-generic) under tests/data/NAME."""
    base = DATA / name
    if name == "h200-generic":
        return sorted(base.glob("*/*.manifest.json"))
    return sorted(p.parent for p in base.rglob("manifest.json"))


def _manifest_findings(path: Path) -> list[tuple[str, str, Finding]]:
    """(arch, experiment, finding) of a manifest's entries (h200-generic keeps no .nc)."""
    from gpumem.results.kept import kept_entries

    return [(e.arch, e.experiment, f) for e in kept_entries(path) for f in e.findings]


def judged(target: Path, plugins: Any, borrowed_device: Any) -> list[dict[str, Any]]:
    """Every finding with a current expected value: value, interval, band, old and new."""
    items: list[tuple[str, str, Any, Finding]] = []  # (arch, experiment, device, finding)
    if target.is_file():
        for arch, exp, f in _manifest_findings(target):
            items.append((arch, exp, borrowed_device, f))
    else:
        for src in load_sources(target):
            for (exp, _n), f in sorted(src.findings.items()):
                items.append((src.arch, exp, src.device, f))
    cache: dict[tuple[str, int], dict[str, Expected]] = {}
    rows = []
    for arch, exp, device, f in items:
        key = (arch, id(device))
        if key not in cache:
            cache[key] = {}
            for e in plugins.expected_values(arch, device, warn=lambda _m: None):
                cache[key].setdefault(e.name, e)
        e = cache[key].get(f.name)
        if e is None or not f.resolved:
            continue
        rows.append({"experiment": exp, "finding": f.name, "value": f.value,
                     "interval": f.interval, "band": band_of(e), "expected": e.value,
                     "stored": f.status,
                     "old": old_status_of(f.value, e, f.interval, f.index),
                     "new": status_of(f.value, e, f.interval, f.index)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all-rows", action="store_true", help="print unchanged rows too")
    args = ap.parse_args(argv)
    plugins = get_plugins()
    import xarray as xr

    first = next((DATA / "h200-run").rglob("latency-*.nc"))
    with xr.open_dataset(first, engine="netcdf4") as ds:
        borrowed = device_from_attrs(dict(ds.attrs))
    total: Counter = Counter()
    summary = []
    for name in RUNS:
        for target in run_dirs(name):
            label = str(target.relative_to(DATA))
            rows = judged(target, plugins, borrowed)
            changes = Counter((r["old"], r["new"]) for r in rows if r["old"] != r["new"])
            new_counts = Counter(r["new"] for r in rows)
            old_counts = Counter(r["old"] for r in rows)
            total.update(changes)
            summary.append((label, len(rows), old_counts, new_counts, changes))
            shown = [r for r in rows if args.all_rows or r["old"] != r["new"]]
            print(f"\n== {label}: {len(rows)} findings with an expected value; old "
                  f"{dict(old_counts)} -> new {dict(new_counts)}")
            for r in shown:
                print(f"  {r['experiment'] + '/' + r['finding']:40s} value "
                      f"{fmt_value(r['value']):>14s}  interval {fmt_interval(r['interval']):>22s}"
                      f"  band {fmt_band(r['band'], r['expected']):>22s}  "
                      f"{r['old']:>5s} -> {r['new']}")
    print("\n== summary: changed statuses (old -> new) per run")
    for label, n, _old, new, changes in summary:
        text = ", ".join(f"{a} -> {b}: {c}" for (a, b), c in sorted(changes.items())) or \
            "no change"
        print(f"  {label:48s} {n:3d} judged; {text}; now {dict(sorted(new.items()))}")
    print("  all runs: " + (", ".join(f"{a} -> {b}: {c}" for (a, b), c in
                                      sorted(total.items())) or "no change"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
