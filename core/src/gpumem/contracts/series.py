"""One device's results in one run directory, as the report's figures read them.

A :class:`Series` opens its raw datasets and findings lazily, through the two methods its
maker gives (:meth:`Series.open_raw`, :meth:`Series.open_findings`: the report's
:class:`gpumem.report.runs.RunSeries` reads them from the results store, so the contracts
import nothing of it); the report (:mod:`gpumem.report.runs`) makes them from run
directories, and every draw function (:mod:`gpumem.figures`, an experiment's figures) takes
them. It sits beside :class:`~gpumem.contracts.presentation.Presentation`, which names the
draw functions: a contract between the experiments, the figure toolkit and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.findings import Finding, from_dataset

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

    # ---- reading (given by the maker: the report's RunSeries reads the results store) ----
    def open_raw(self, file: Any) -> xr.Dataset:
        """The raw dataset of the results file a manifest entry names (``file``: as the
        entry has it, untrusted); raises ResultsFileError where it cannot be read."""
        raise ResultsFileError(f"{self.run_dir}: this series reads no files")

    def open_findings(self, file: Any) -> xr.Dataset:
        """The findings group of that file, likewise."""
        raise ResultsFileError(f"{self.run_dir}: this series reads no files")

    # ---- data --------------------------------------------------------------------------
    def raw(self, experiment: str) -> xr.Dataset | None:
        """The raw dataset of ``experiment``, or ``None`` (the reason is in ``missing``)."""
        if experiment in self._raw:
            return self._raw[experiment]
        entry = self.entries.get(experiment)
        if entry is None:
            return None
        try:
            ds = self.open_raw(entry.get("file"))
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
                    out = from_dataset(self.open_findings(entry.get("file")))
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
