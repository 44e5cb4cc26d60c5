"""Run directories as the report reads them: one *series* per (run directory, device).

A run directory may hold the results of several devices, and of one experiment with several
parameter sets (``--quick`` beside a full grid). Each (run directory, device) pair becomes one
series of the report: one colour, one legend entry, one findings table. Per experiment a
series keeps the entry that finished last among the complete ones (a failed entry whose raw
file was kept is the fallback), and remembers why an experiment is missing (skipped, failed,
unreadable), so that the page can say so in one line instead of failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from gpumem.compare import unique_labels
from gpumem.errors import ResultsFileError
from gpumem.findings import Finding, from_dataset
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import MANIFEST, RunStore, file_of

#: One colour per series (matplotlib's tab10, as hex, so the page can use them too).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


@dataclass(eq=False)  # identity: two series are never "equal" by their data
class Series:
    """The results of one device in one run directory."""

    label: str
    run_dir: Path
    device_key: str
    colour: str = COLOURS[0]
    runs: list[dict[str, Any]] = field(default_factory=list)       # manifest "runs" records
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # experiment -> entry
    missing: dict[str, str] = field(default_factory=dict)          # experiment -> why
    #: Experiments in page order: the first readable one describes the device (:attr:`attrs`).
    order: tuple[str, ...] = ()
    _raw: dict[str, xr.Dataset] = field(default_factory=dict, repr=False)
    _findings: dict[str, list[Finding]] = field(default_factory=dict, repr=False)

    # ---- data --------------------------------------------------------------------------
    def raw(self, experiment: str) -> xr.Dataset | None:
        """The raw dataset of ``experiment``, or ``None`` (the reason is in ``missing``)."""
        if experiment in self._raw:
            return self._raw[experiment]
        entry = self.entries.get(experiment)
        if entry is None:
            return None
        try:
            ds = open_raw(file_of(self.run_dir, entry.get("file")))  # only inside the run
        except ResultsFileError as e:
            self.missing[experiment] = str(e)
            del self.entries[experiment]
            return None
        self._raw[experiment] = ds
        return ds

    def findings(self, experiment: str) -> list[Finding]:
        if experiment not in self._findings:
            out: list[Finding] = []
            entry = self.entries.get(experiment)
            if entry is not None:
                try:
                    out = from_dataset(open_findings(file_of(self.run_dir,
                                                             entry.get("file"))))
                except ResultsFileError:
                    out = []
            self._findings[experiment] = out
        return self._findings[experiment]

    def finding(self, experiment: str, name: str) -> Finding | None:
        for f in self.findings(experiment):
            if f.name == name:
                return f
        return None

    def value(self, experiment: str, name: str) -> float | None:
        """A scalar numeric finding's value, or ``None``."""
        f = self.finding(experiment, name)
        if f is None or isinstance(f.value, (str, list)) or f.value is None:
            return None
        v = float(f.value)
        return v if np.isfinite(v) else None

    def experiments(self) -> list[str]:
        return sorted(self.entries)

    # ---- description -----------------------------------------------------------------
    @property
    def attrs(self) -> dict[str, Any]:
        """Global attributes of the first readable file in page order: the device."""
        for exp in [*self.order, *sorted(self.entries)]:
            ds = self.raw(exp)
            if ds is not None:
                return dict(ds.attrs)
        return {}

    @property
    def device_name(self) -> str:
        return str(self.attrs.get("device_name", "")) or self.device_key

    @property
    def legend(self) -> str:
        """What names this series in legends: device name and run label."""
        return f"{self.device_name} ({self.label})"

    def why_missing(self, experiment: str) -> str:
        return self.missing.get(experiment, "not in this run")


def _finished(entry: dict[str, Any]) -> str:
    return str(entry.get("finished") or entry.get("updated") or "")


def _choose(entries: list[dict[str, Any]], root: Path) -> tuple[dict[str, Any] | None, str]:
    """(entry to plot, why none) among one device's entries of one experiment."""
    def usable(e: dict[str, Any]) -> bool:
        try:
            return bool(e.get("file")) and file_of(root, e["file"]).is_file()
        except ResultsFileError:  # outside the run: not this run's result
            return False

    for status in ("complete", "failed"):
        cands = [e for e in entries if e.get("status") == status and usable(e)]
        if cands:
            return max(cands, key=_finished), ""
    last = max(entries, key=_finished)
    status = str(last.get("status", "")) or "unknown status"
    why = str(last.get("error") or "")
    if status in ("complete", "failed") and last.get("file"):
        why = f"results file {last['file']} is missing"
    return None, f"{status}" + (f": {why}" if why else "")




def check_run_dir(target: Path) -> None:
    """Raise ResultsFileError (one line) unless ``target`` is a gpumem run directory."""
    if not target.exists():
        raise ResultsFileError(f"{target}: no such directory")
    if not target.is_dir():
        raise ResultsFileError(f"{target}: not a gpumem run directory (a file; give the "
                               f"directory that holds {MANIFEST})")
    if not (target / MANIFEST).is_file():
        raise ResultsFileError(f"{target}: not a gpumem run directory (no {MANIFEST})")


def load_runs(targets: Sequence[Path], order: Sequence[str] = ()) -> list[Series]:
    """Every series of the given run directories, checked before anything is drawn;
    ``order``: the experiments in page order (see :attr:`Series.order`)."""
    for t in targets:
        check_run_dir(Path(t))
    found: list[tuple[Path, str, str, list[dict[str, Any]],
                      dict[str, list[dict[str, Any]]]]] = []
    for t in targets:
        root = Path(t)
        manifest = RunStore(root).read()  # a corrupt manifest: ResultsFileError
        by_device: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for key, entry in sorted(manifest.get("entries", {}).items()):
            if not isinstance(entry, dict):
                continue
            parts = key.split("/")
            device = str(entry.get("device") or parts[0])
            exp = str(entry.get("experiment") or (parts[1] if len(parts) > 1 else key))
            by_device.setdefault(device, {}).setdefault(exp, []).append(entry)
        if not by_device:
            raise ResultsFileError(f"{root}: the run directory holds no results (empty "
                                   f"{MANIFEST})")
        for device, exps in by_device.items():
            label = root.resolve().name if len(by_device) == 1 else \
                f"{root.resolve().name}/{device}"
            found.append((root, device, label, list(manifest.get("runs", [])), exps))
    labels = unique_labels([f[2] for f in found])
    out: list[Series] = []
    for i, ((root, device, _, runs, exps), label) in enumerate(zip(found, labels, strict=True)):
        s = Series(label, root, device, COLOURS[i % len(COLOURS)],
                   [r for r in runs if r.get("device") in (None, "", device)] or runs,
                   order=tuple(order))
        for exp, entries in exps.items():
            entry, why = _choose(entries, root)
            if entry is None:
                s.missing[exp] = why
            else:
                s.entries[exp] = entry
        out.append(s)
    if not any(s.entries for s in out):
        raise ResultsFileError(f"{targets[0]}: no readable results in "
                               f"{', '.join(str(t) for t in targets)} (nothing completed?)")
    return out
