"""Units of a raw results file, read and converted to what the analyses expect.

(Filled in by the next commit; for now a pass-through.)
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr


def to_analysis_units(raw: xr.Dataset, path: Path | str,
                      experiment: str | None = None) -> xr.Dataset:
    """``raw`` with every variable an analysis reads in the unit it expects."""
    return raw
