"""Units as stored (CF / UDUNITS-2, also parsed right by pint) and as shown to people.

gpumem's code, its findings and its tables speak in the units people read: ``cycle``,
``GB/s``, ``byte``, ``ns``. Not all of them mean the same to a unit library: UDUNITS-2 and
pint read ``cycle`` as 2 pi radians (280 cycle -> 100800 degrees), and UDUNITS-2 cannot parse
``GB/s`` at all (``B`` is not a byte there). So a results file's ``units`` attribute holds the
CF spelling of the same quantity (:data:`CF_UNITS`), and where that differs from what gpumem
shows, the attribute ``gpumem_units`` holds the human one:

============  =========================  ==================================================
shown         stored ``units``           quantity
============  =========================  ==================================================
cycle         1                          a count of clock cycles (long_name says so)
byte/cycle    byte                       bytes per clock cycle (long_name says so)
GB/s          Gbyte/s                    1e9 bytes per second
GiB/s         1073741824 byte/s          2**30 bytes per second
B, bytes      byte                       bytes
KiB, MiB      1024 byte, 1048576 byte    2**10, 2**20 bytes
(empty)       1                          a label, an index or a count
============  =========================  ==================================================

``byte``, ``ns``, ``us``, ``ms``, ``s``, ``MHz``, ``mW``, ``degC``, ``percent`` and ``1``
parse in both libraries as they are and are stored unchanged.

:func:`encode` applies this to a whole Dataset before it is written (and gives every
coordinate, and every dimension without one, a ``long_name`` and ``units``);
:func:`shown_units` reads a variable's attributes back to the unit gpumem shows, for files of
either generation: files written before this change carry the human unit in ``units`` and no
``gpumem_units``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

#: human unit -> CF/UDUNITS-2 spelling (pint parses each too, with ``UnitRegistry()(s)``)
CF_UNITS: dict[str, str] = {
    "": "1",
    "cycle": "1",
    "cycles": "1",
    "count": "1",
    "GB/s": "Gbyte/s",
    "MB/s": "Mbyte/s",
    "GiB/s": "1073741824 byte/s",
    "MiB/s": "1048576 byte/s",
    "B": "byte",
    "bytes": "byte",
    "kB": "kbyte",
    "MB": "Mbyte",
    "GB": "Gbyte",
    "KiB": "1024 byte",
    "MiB": "1048576 byte",
    "GiB": "1073741824 byte",
    "%": "percent",
    "byte/cycle": "byte",
    "B/cycle": "byte",
}
#: units whose values count clock cycles: their long_name says so
CYCLE_UNITS = ("cycle", "cycles")
HUMAN_ATTR = "gpumem_units"

# coordinates gpumem writes without a long_name of their own (index dimensions)
_COORD_NAMES = {
    "chase": "chase number (index of the chase in the log)",
    "event": "event number (index of the slow access in the log)",
    "pattern_pos": "position in the chase's pattern",
    "launch": "row of the imported output",
    "level": "memory level",
    "access": "position of the access in the chase (timed accesses in order)",
    "repeat": "repetition number (the same measurement, run again)",
}


def cf_units(units: str | None) -> str:
    """The CF/UDUNITS-2 spelling of a unit gpumem shows (``cycle`` -> ``1``)."""
    u = "" if units is None else str(units).strip()
    return CF_UNITS.get(u, u)


def shown_units(attrs: Mapping[str, Any]) -> str:
    """The unit gpumem shows for a variable with these attributes (either file generation)."""
    if HUMAN_ATTR in attrs:
        return str(attrs[HUMAN_ATTR])
    return str(attrs.get("units", ""))


def unit_attrs(units: str | None, long_name: str) -> dict[str, str]:
    """``units`` (CF), ``gpumem_units`` where it differs, and ``long_name`` (saying "clock
    cycles" for a count of cycles) for a variable gpumem measures in ``units``."""
    human = "" if units is None else str(units)
    out = {"units": cf_units(human), "long_name": long_name}
    if human != out["units"]:  # "" too: a label with no unit reads back as one
        out[HUMAN_ATTR] = human
    if "cycle" in human and "cycle" not in long_name.lower():  # say what "1" counts
        what = "clock cycles" if human in CYCLE_UNITS else \
            human.replace("/cycle", " per clock cycle").replace("B ", "bytes ")
        out["long_name"] = f"{long_name} ({what})" if long_name else what
    return out


def human_long_name(name: str) -> str:
    """A readable fallback long_name for a variable or coordinate called ``name``."""
    if name in _COORD_NAMES:
        return _COORD_NAMES[name]
    words = name.replace("__", " ").replace("_", " ").strip()
    return f"{words} number (an index)" if words == name else words


def _encode_attrs(name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    attrs = dict(attrs)
    human = attrs.get(HUMAN_ATTR, attrs.get("units", ""))
    long_name = str(attrs.get("long_name", "") or "")
    if not long_name or long_name == name:
        long_name = human_long_name(name)
    attrs.update(unit_attrs(str(human), long_name))
    return attrs


def encode(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as written: CF ``units`` (human ones kept in ``gpumem_units``), and a
    ``long_name`` and ``units`` on every variable, every coordinate and every dimension (one
    without a coordinate gets its index, 0..n-1, as one). Values are unchanged; idempotent."""
    out = ds.copy()
    missing = [d for d in out.dims if d not in out.variables]
    if missing:
        out = out.assign_coords({d: (d, np.arange(out.sizes[d]),
                                     {"long_name": f"index along {str(d).replace('_', ' ')}",
                                      "units": "1"}) for d in missing})
    for name in list(out.variables):
        var = out.variables[name]
        var.attrs = _encode_attrs(str(name), var.attrs)
    return out


def decode(ds: xr.Dataset) -> xr.Dataset:
    """The inverse of :func:`encode` for gpumem's own use: ``units`` back to the human unit
    (``gpumem_units``) where one is stored. Files written before CF units pass unchanged."""
    for var in ds.variables.values():
        if HUMAN_ATTR in var.attrs:
            var.attrs["units"] = str(var.attrs[HUMAN_ATTR])
    return ds
