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
from pathlib import Path
from typing import Any

import xarray as xr

from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.series import COLOURS, Series
from gpumem.interop.compare import unique_labels
from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import MANIFEST, RunStore, file_of

__all__ = ["COLOURS", "Series", "check_run_dir", "load_runs"]


class RunSeries(Series):
    """A series read from a run directory's results files (never outside the run)."""

    def open_raw(self, file: Any) -> xr.Dataset:
        return open_raw(file_of(self.run_dir, file))

    def open_findings(self, file: Any) -> xr.Dataset:
        return open_findings(file_of(self.run_dir, file))


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
        s = RunSeries(label, root, device, COLOURS[i % len(COLOURS)],
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
