"""``gpumem show``: what a results file or run directory holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from gpumem.cli import app
from gpumem.cli._common import fmt_finding, print_json, stdout
from gpumem.errors import ResultsFileError
from gpumem.findings import from_dataset
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import MANIFEST, RunStore

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


def describe(target: Path) -> dict[str, Any]:
    if target.is_dir():
        if not (target / MANIFEST).exists():
            raise ResultsFileError(f"{target}: not a gpumem run directory (no {MANIFEST})")
        store = RunStore(target)
        manifest = store.read()
        files = [describe_file(p) for p in store.result_files()]
        return {"run_dir": str(target), "entries": manifest.get("entries", {}),
                "runs": manifest.get("runs", []), "files": files}
    return {"files": [describe_file(target)]}


@app.command("show")
def show(target: Path = typer.Argument(..., help="A results .nc file or a run directory."),
         json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print dims, variables with units, key attributes and findings."""
    if not target.exists():
        raise ResultsFileError(f"{target}: no such file or directory")
    data = describe(target)
    if json_:
        print_json(data)
        return
    out = stdout()
    if "entries" in data:
        t = Table(title=f"run {data['run_dir']}")
        for col in ("entry", "status", "file", "error"):
            t.add_column(col)
        for key, e in sorted(data["entries"].items()):
            t.add_row(key, e.get("status", ""), e.get("file", ""), e.get("error", ""))
        out.print(t)
    for f in data["files"]:
        out.print(f"[bold]{f['path']}[/bold]")
        out.print("  dims: " + ", ".join(f"{k}={v}" for k, v in f["dims"].items()),
                  highlight=False)
        for name, v in f["variables"].items():
            out.print(f"  {name}({', '.join(v['dims'])}) [{v['units']}]  {v['long_name']}",
                      highlight=False, markup=False)
        for k, v in f["attrs"].items():
            out.print(f"  {k}: {v}", highlight=False, markup=False)
        if f["findings"]:
            t = Table(show_header=True)
            for col in ("finding", "value", "units", "expected", "status", "confidence",
                        "method"):
                t.add_column(col)
            for name, d in f["findings"].items():
                t.add_row(name, fmt_finding(d), d["units"], str(d["expected"] or "-"),
                          d["status"], f"{d['confidence']:.2f}", d["method"])
            out.print(t)
