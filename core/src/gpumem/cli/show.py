"""``gpumem show``: what a results file or run directory holds.

Damaged entries (see :mod:`gpumem.results.verify`) are named on stderr, one line each, and
their files left out; what is intact is still shown, and the command exits 1.
Every string from a file or manifest is printed as text (:func:`safe_text`), never markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from gpumem.cli._app import app
from gpumem.cli._common import (
    STATUS_STYLE,
    FitTable,
    check_damage,
    fmt_band,
    fmt_expected,
    fmt_finding,
    fmt_interval,
    fmt_precision,
    name_column,
    print_json,
    require_paths,
    safe_text,
    stdout,
    text_column,
)
from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.findings import from_dataset
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import MANIFEST, RunStore, dead_writer

KEY_ATTRS = ("title", "source", "date_created", "gpumem_version", "gpumem_schema_version",
             "gpumem_experiment", "gpumem_arch", "gpumem_plugin", "gpumem_plugin_version",
             "device_name", "device_kind", "device_uuid", "compute_capability", "sm_count",
             "l2_bytes", "clock_mhz", "cuda_driver_version", "gpumem_params_hash")


def describe_file(path: Path) -> dict[str, Any]:
    raw = open_raw(path)
    try:
        findings = from_dataset(open_findings(path))
    except ResultsFileError:
        findings = []
    return {
        "path": str(path),
        "dims": {k: int(v) for k, v in raw.sizes.items()},
        "variables": {name: {"dims": list(v.dims), "units": v.attrs.get("units", ""),
                             "long_name": v.attrs.get("long_name", "")}
                      for name, v in raw.data_vars.items()},
        "coords": {name: {"size": int(v.size), "units": v.attrs.get("units", "")}
                   for name, v in raw.coords.items()},
        "attrs": {k: _plain(raw.attrs[k]) for k in KEY_ATTRS if k in raw.attrs},
        "findings": {f.name: f.as_dict() for f in findings},
    }


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") and getattr(v, "ndim", 1) == 0 else (
        v.tolist() if hasattr(v, "tolist") else v)


def describe(target: Path, skip: frozenset[Path] = frozenset()) -> dict[str, Any]:
    """What ``target`` holds; ``skip``: resolved paths of damaged files to leave out. A
    manifest file named alone (a run kept as its manifest: :mod:`gpumem.results.kept`)
    gives its entries and the findings each recorded."""
    from gpumem.results.kept import is_manifest_file, kept_entries, read_manifest_file

    if is_manifest_file(target):
        manifest = read_manifest_file(target)
        return {"manifest": str(target), "entries": manifest["entries"],
                "runs": manifest.get("runs", []), "files": [],
                "kept": [{"entry": e.key, "experiment": e.experiment, "version": e.version,
                          "findings": {f.name: f.as_dict() for f in e.findings}}
                         for e in kept_entries(target, manifest)]}
    if target.is_dir():
        if not (target / MANIFEST).exists():
            raise ResultsFileError(f"{target}: not a gpumem run directory (no {MANIFEST})")
        store = RunStore(target)
        manifest = store.read()
        files = [describe_file(p) for p in store.result_files() if p.resolve() not in skip]
        return {"run_dir": str(target), "entries": manifest.get("entries", {}),
                "runs": manifest.get("runs", []), "files": files}
    return {"files": [describe_file(target)]}


@app.command("show")
def show(target: Path = typer.Argument(..., help="A results .nc file, a run directory, or "
                                                 "the manifest.json of a run kept as its "
                                                 "manifest alone."),
         json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print dims, variables with units, key attributes and findings. Entries whose file
    fails its manifest checksum are named on stderr and left out (exit 1)."""
    require_paths([target])  # missing: a usage error, exit 2 (see require_paths)
    damage = check_damage([target])
    if damage and not target.is_dir():
        raise typer.Exit(1)  # the one file asked for is damaged: nothing intact to show
    data = describe(target, frozenset(d.path.resolve() for d in damage))
    if damage:
        data["damaged"] = [d.as_dict() for d in damage]
    if json_:
        print_json(data)
    else:
        _print(data)
    if damage:
        raise typer.Exit(1)


def _print(data: dict[str, Any]) -> None:
    out = stdout()
    if "entries" in data:
        t = Table(title=safe_text(f"run {data.get('run_dir') or data['manifest']}"))
        name_column(t, "entry")
        for col in ("status", "file", "error"):
            text_column(t, col)
        damaged = {d["entry"]: d["reason"] for d in data.get("damaged", [])}
        for key, e in sorted(data["entries"].items()):
            status = str(e.get("status", "")) if isinstance(e, dict) else ""
            if key in damaged:
                status += f" (damaged: {damaged[key]})"
            e = e if isinstance(e, dict) else {}
            if status == "running" and dead_writer(e):  # show only says; a run repairs it
                status += f" (stale: process {e['pid']} is gone; --resume redoes it)"
            t.add_row(safe_text(key), safe_text(status, "red" if key in damaged else ""),
                      safe_text(e.get("file", "")), safe_text(e.get("error", "")))
        out.print(FitTable(t, drop=["file"]))
    for e in data.get("kept", []):  # a run kept as its manifest: the findings as recorded
        if e["findings"]:
            t = findings_table(safe_text(f"{e['entry']} (version {e['version'] or '?'}; as "
                                         f"recorded, no raw data kept)"))
            for name, d in e["findings"].items():
                t.add_row(*finding_cells(name, d))
            out.print(FitTable(t, drop=FINDINGS_DROP))
    for f in data["files"]:
        out.print(safe_text(f["path"], "bold"))
        out.print(safe_text("  dims: " + ", ".join(f"{k}={v}" for k, v in f["dims"].items())))
        for name, v in f["variables"].items():
            out.print(safe_text(f"  {name}({', '.join(v['dims'])}) [{v['units']}]  "
                                f"{v['long_name']}"))
        for k, v in f["attrs"].items():
            out.print(safe_text(f"  {k}: {v}"))
        if f["findings"]:
            t = findings_table()
            for name, d in f["findings"].items():
                t.add_row(*finding_cells(name, d))
            out.print(FitTable(t, drop=FINDINGS_DROP))


def finding_columns(t: Table) -> None:
    """finding, value, interval, units, band, expected, status, reason: the columns every
    findings table shares (the cells: :func:`finding_cells`)."""
    name_column(t, "finding")
    text_column(t, "value")
    text_column(t, "interval")
    text_column(t, "units")
    text_column(t, "band")
    text_column(t, "expected")
    name_column(t, "status")
    text_column(t, "reason")


def findings_table(title: str | Text | None = None) -> Table:
    """finding, value, interval, units, band, expected, status, precision, confidence,
    method: the names never cut (wrapped in :class:`FitTable` with :data:`FINDINGS_DROP`)."""
    t = Table(title=title, show_header=True)
    finding_columns(t)
    text_column(t, "precision")
    text_column(t, "confidence")
    text_column(t, "method")
    return t


def finding_cells(name: str, d: dict) -> list:
    """A row of :func:`findings_table` from a finding's ``as_dict()``: a file written before
    the band was stored shows '-' for it (its status, a 'warn' among them, as stored)."""
    want = fmt_expected(d["expected"], d.get("expected_bound", ""))
    band = fmt_band(d.get("band"), d["expected"]) if d["expected"] is not None else "-"
    style = STATUS_STYLE.get(d["status"], "")
    return [safe_text(name), safe_text(fmt_finding(d)),
            safe_text(fmt_interval(d.get("interval"), str(d.get("kind", "")))),
            safe_text(d["units"]), safe_text(band), safe_text(want),
            safe_text(d["status"], style), safe_text(str(d.get("reason", ""))),
            safe_text(fmt_precision(d.get("precision"))),
            safe_text(f"{d['confidence']:.2f}"), safe_text(d["method"])]


#: left out of a findings table, in this order, while it does not fit the terminal
FINDINGS_DROP = ("confidence", "method", "precision", "expected", "units", "interval",
                 "reason")

