"""Reading results files, with one clear error for anything unreadable.

A truncated or corrupt netCDF file makes the netCDF library raise assorted errors
(``OSError: [Errno -101] NetCDF: HDF error`` and others); callers get one
:class:`~gpumem.contracts.errors.ResultsFileError` naming the file instead.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import xarray as xr

from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.units import decode

FINDINGS_GROUP = "findings"
DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def defer_signals() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM until the block ends, then deliver them to the restored handlers.

    A KeyboardInterrupt raised inside netCDF/HDF5 code can leave xarray's file lock held,
    and the next close then waits on it forever (Ctrl-C during a write hung the run). Short
    critical sections (writing, reading, updating the manifest) run whole instead. A no-op
    outside the main thread (only it can set handlers) and when already deferring.
    """
    if threading.current_thread() is not threading.main_thread() or \
            getattr(defer_signals, "_active", False):
        yield []
        return
    pending: list[int] = []
    old: dict[signal.Signals, Any] = {}
    try:
        for sig in DEFERRED_SIGNALS:
            old[sig] = signal.signal(sig, lambda signum, _frame: pending.append(signum))
        # attr-defined: the flag is an attribute of this function, set here only
        defer_signals._active = True  # type: ignore[attr-defined]
        yield pending
    finally:
        defer_signals._active = False  # type: ignore[attr-defined]  # (the same flag)
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)  # the restored handler runs now (KeyboardInterrupt...)


def _open(path: Path, group: str | None, take: Callable[[xr.Dataset], Any] | None = None
          ) -> Any:
    """``take`` of the open dataset (default: all of it loaded, in gpumem's units), or one
    ResultsFileError line saying why the file cannot be read."""
    path = Path(path)
    if not path.exists():
        raise ResultsFileError(f"{path}: no such results file")
    if not path.is_file():
        raise ResultsFileError(f"{path}: not a file")
    try:
        with defer_signals(), xr.open_dataset(path, group=group, engine="netcdf4") as ds:
            if take is not None:
                return take(ds)
            return decode(ds.load())  # units as gpumem shows them (see results.units)
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


def open_attrs(path: str | Path) -> dict[str, Any]:
    """The global attributes of one results file (which versions made it), its data not
    read."""
    return _open(Path(path), None, lambda ds: dict(ds.attrs))


def open_findings(path: str | Path) -> xr.Dataset:
    """The findings group of one results file."""
    return _open(Path(path), FINDINGS_GROUP)
