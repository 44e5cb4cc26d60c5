"""Reading results files, with one clear error for anything unreadable.

A truncated or corrupt netCDF file makes the netCDF library raise assorted errors
(``OSError: [Errno -101] NetCDF: HDF error`` and others); callers get one
:class:`~gpumem.errors.ResultsFileError` naming the file instead.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from gpumem.errors import ResultsFileError

FINDINGS_GROUP = "findings"


def _open(path: Path, group: str | None) -> xr.Dataset:
    path = Path(path)
    if not path.exists():
        raise ResultsFileError(f"{path}: no such results file")
    if not path.is_file():
        raise ResultsFileError(f"{path}: not a file")
    try:
        with xr.open_dataset(path, group=group, engine="netcdf4") as ds:
            return ds.load()
    except ResultsFileError:
        raise
    except Exception as e:  # noqa: BLE001 - the netCDF stack raises many types here
        what = "has no findings group" if group and "group" in str(e).lower() else \
            "is truncated, corrupt or not a netCDF4 file"
        raise ResultsFileError(f"{path}: cannot read results file: it {what} "
                               f"({type(e).__name__}: {e})".replace("\n", " ")) from None


def open_raw(path: str | Path) -> xr.Dataset:
    """The raw measurements of one results file, fully loaded (the file is closed after)."""
    return _open(Path(path), None)


def open_findings(path: str | Path) -> xr.Dataset:
    """The findings group of one results file."""
    return _open(Path(path), FINDINGS_GROUP)
