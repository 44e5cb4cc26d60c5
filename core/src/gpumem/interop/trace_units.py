"""Units of a chase log, read and converted to what the analyses expect (docs/results.md,
"Converting another tool's chases").

A chase log (``cache_structure``, ``tlb_structure``) may come from another tool, in that
tool's units. Before analysis, :func:`to_analysis_units` reads the stored unit of every
variable the analysis uses (``gpumem_units`` where present, else ``units``:
:func:`gpumem.contracts.units.shown_units`) and converts it to the unit the analysis works in:

* **bytes** (``footprint``, ``stride``, ``pattern``): ``B``, ``byte``, ``bytes``, an SI
  prefix (``kB``, ``MB``, ``GB``, ``TB``, or ``kbyte``, ``Mbyte`` ...: powers of 1000) or an
  IEC one (``KiB``, ``MiB``, ``GiB``, ``TiB``, or ``Kibyte`` ...: powers of 1024), and the
  UDUNITS spelling with a factor (``1024 byte``, ``1048576 byte``, ``4096 B``). ``KB`` and
  ``Kbyte`` are refused: 1000 or 1024 bytes, a file should not leave that open. A value
  that is not a whole number of bytes once converted is refused.
* **clock cycles** (``timer_overhead``, ``median_latency``, ``event_threshold``,
  ``event_latency``): ``cycle``, ``cycles``, ``clock cycle(s)``, ``clk``; ``1`` only with a
  ``long_name`` saying "clock cycles" (gpumem's own convention, :mod:`gpumem.contracts.units`); or a
  **time** (``s``, ``ms``, ``us``, ``µs``, ``ns``, ``ps``, with or without a factor) together
  with the clock the file records in its global attribute ``clock_mhz`` (MHz, the clock the
  latencies were timed at): cycles = seconds x clock_mhz x 1e6.
* **counts** (``warmup``, ``record``, ``seed``, ``paired``, ``event_chase``,
  ``event_access``, ``event_index``): ``1``, ``count`` or none.

A variable with no ``units`` attribute (or an empty one) is read in the unit the schema gives
it (docs/results.md, "Chase logs"): that is the documented default, as for the other
defaults of a converted log, not a guess at a stated unit. Anything else (an unknown unit,
a time without ``clock_mhz``, a byte unit on a latency) is refused in one line naming the
variable and its unit (:class:`gpumem.contracts.errors.ResultsFileError`, exit 1). Other
experiments'
raw files are gpumem's own and pass unchanged.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.units import HUMAN_ATTR, shown_units

#: the clock the latencies were timed at, a global attribute in MHz (gpumem's own files
#: carry it as the device's clock)
CLOCK_ATTR = "clock_mhz"

BYTES, CYCLES, COUNT = "byte", "cycle", "1"
#: experiment -> variable -> the quantity its analysis expects
EXPECTED: dict[str, dict[str, str]] = {
    exp: {"footprint": BYTES, "stride": BYTES, "pattern": BYTES,
          "event_latency": CYCLES, "median_latency": CYCLES, "event_threshold": CYCLES,
          "timer_overhead": CYCLES,
          "warmup": COUNT, "record": COUNT, "seed": COUNT, "paired": COUNT,
          "event_chase": COUNT, "event_access": COUNT, "event_index": COUNT}
    for exp in ("cache_structure", "tlb_structure")}

_SI = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
       "kilo": 10**3, "mega": 10**6, "giga": 10**9, "tera": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
        "kibi": 2**10, "mebi": 2**20, "gibi": 2**30, "tebi": 2**40}
_BYTE_WORDS = ("B", "byte", "bytes")
_TIME = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
         "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
         "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "microsecond": 1e-6,
         "microseconds": 1e-6,
         "ns": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
         "ps": 1e-12, "picosecond": 1e-12, "picoseconds": 1e-12}
_CYCLE_WORDS = ("cycle", "cycles", "clock cycle", "clock cycles", "clk", "clocks")
_COUNT_WORDS = ("", "1", "count", "counts")
_FACTOR = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?:\*\s*)?(.*?)\s*$")


def _split_factor(unit: str) -> tuple[float, str]:
    """``"1024 byte"`` -> (1024, "byte"); ``"ns"`` -> (1, "ns")."""
    m = _FACTOR.match(unit)
    if m and m.group(2) and not m.group(2)[0].isdigit():
        return float(m.group(1)), m.group(2)
    return 1.0, unit.strip()


def byte_factor(unit: str) -> float | None:
    """Bytes per unit of ``unit`` (``KiB`` -> 1024, ``1024 byte`` -> 1024, ``kB`` -> 1000);
    ``None`` where it is no byte unit gpumem accepts (``KB``: ambiguous)."""
    factor, word = _split_factor(unit)
    for base in ("bytes", "byte", "B"):
        if word.endswith(base):
            prefix = word[:-len(base)]
            mult = _IEC.get(prefix, _SI.get(prefix))
            return None if mult is None else factor * mult
    return None


def seconds_factor(unit: str) -> float | None:
    """Seconds per unit of ``unit`` (``ns`` -> 1e-9); ``None`` where it is no time unit."""
    factor, word = _split_factor(unit)
    s = _TIME.get(word)
    return None if s is None else factor * s


def _is_cycles(unit: str, attrs: dict[str, Any]) -> bool:
    u = unit.strip()
    if u.lower() in _CYCLE_WORDS:
        return True
    return u == "1" and "clock cycle" in str(attrs.get("long_name", "")).lower()


def _stated(attrs: dict[str, Any]) -> str | None:
    """The unit a variable states, or ``None`` where it states none."""
    if HUMAN_ATTR not in attrs and "units" not in attrs:
        return None
    unit = shown_units(attrs).strip()
    if unit == "" and str(attrs.get("units", "")).strip() in ("", "1") and \
            "clock cycle" not in str(attrs.get("long_name", "")).lower():
        return None  # empty: no unit stated
    return unit


#: The clocks a GPU's SMs run at, MHz: a clock_mhz outside them is no clock (1e-300 MHz
#: once turned every latency into 0 cycles, read at confidence 1.00).
CLOCK_RANGE = (1.0, 100_000.0)


def _clock_mhz(raw: xr.Dataset) -> float | None:
    try:
        clock = float(raw.attrs.get(CLOCK_ATTR, "nan"))
    except (TypeError, ValueError):
        return None
    lo, hi = CLOCK_RANGE
    return clock if math.isfinite(clock) and lo <= clock <= hi else None


def _short(unit: str) -> str:
    """A unit as an error message quotes it: at most 40 characters (a 1 MB unit string once
    made a 1 MB "one line" error)."""
    return unit if len(unit) <= 40 else unit[:40] + "..."


def to_analysis_units(raw: xr.Dataset, path: Path | str,
                      experiment: str | None = None) -> xr.Dataset:
    """``raw`` with every variable its analysis reads in the unit that analysis expects
    (bytes, clock cycles, counts), or a :class:`ResultsFileError` in one line naming the
    variable and the unit it cannot convert. Files of other experiments, and imported
    files, pass unchanged."""
    if raw.attrs.get("gpumem_imported_from"):
        return raw  # analyze_file refuses these itself
    name = experiment or str(raw.attrs.get("gpumem_experiment", ""))
    expected = EXPECTED.get(name)
    if not expected:
        return raw
    _check_shapes(raw, path)
    converted: dict[str, xr.DataArray] = {}
    for var, want in expected.items():
        if var not in raw.variables:
            continue
        attrs = dict(raw[var].attrs)
        unit = _stated(attrs)
        if unit is None:
            continue  # the schema's unit (docs/results.md): the documented default
        scale = _scale(raw, path, var, unit, want, attrs)
        if scale is None:
            continue
        converted[var] = _apply(raw[var], scale, want, path, var, unit)
    out = raw.assign(converted) if converted else raw
    _check_values(out, path)
    return out


#: Byte variables that must be positive (a zero footprint or stride is no chase).
POSITIVE = ("footprint", "stride")
#: The largest byte count a chase can mean (an int64 of bytes; 1e400 B read as inf), and
#: the most accesses one records or warms up with.
MAX_BYTES, MAX_ACCESSES = 2**62, 2**40


def _check_shapes(raw: xr.Dataset, path: Path | str) -> None:
    """The event variables are one table: each as long as the others (a shorter
    ``event_latency`` than ``event_chase`` once ended in an IndexError)."""
    events = [v for v in ("event_chase", "event_access", "event_index", "event_latency")
              if v in raw.variables]
    sizes = {v: int(raw[v].size) for v in events}
    if len(set(sizes.values())) > 1:
        got = ", ".join(f"'{v}' {n}" for v, n in sizes.items())
        raise ResultsFileError(f"{path}: the event variables differ in length ({got}): one "
                               f"event per row, each in every one")


def _check_values(raw: xr.Dataset, path: Path | str) -> None:
    """What the analysis divides by or measures from must be there: footprints and strides
    finite, positive and within 2**62 bytes; at least one finite latency (a log whose every
    latency is NaN gave a capacity at confidence 0.5 from no data)."""
    for var in POSITIVE:
        if var not in raw.variables:
            continue
        v = np.asarray(raw[var].values, dtype=np.float64)
        bad = ~np.isfinite(v) | (v <= 0) | (v > MAX_BYTES)
        if bad.any():
            raise ResultsFileError(f"{path}: '{var}' = {v[bad].flat[0]:g} bytes: a chase "
                                   f"needs a positive {var} of at most 2**62 bytes")
    for var in ("record", "warmup"):
        if var not in raw.variables:
            continue
        v = np.asarray(raw[var].values, dtype=np.float64)
        bad = ~np.isfinite(v) | (v < 0) | (v > MAX_ACCESSES)
        if bad.any():
            raise ResultsFileError(f"{path}: '{var}' = {v[bad].flat[0]:g} accesses: a chase "
                                   f"records 0 to 2**40 of them")
    lat = [v for v in ("event_latency", "median_latency") if v in raw.variables]
    if lat and not any(np.isfinite(np.asarray(raw[v].values, dtype=np.float64)).any()
                       for v in lat):
        raise ResultsFileError(f"{path}: no finite latency in {' or '.join(lat)}: nothing "
                               f"to analyse")


def _scale(raw: xr.Dataset, path: Path | str, var: str, unit: str, want: str,
           attrs: dict[str, Any]) -> float | None:
    """The factor to ``want`` (``None``: already in it)."""
    if want == COUNT:
        if unit.lower() in _COUNT_WORDS:
            return None
        raise ResultsFileError(f"{path}: '{var}' has units '{_short(unit)}', but it is a count "
                               f"(store '1' or no units; docs/results.md, 'Chase logs')")
    if want == BYTES:
        f = byte_factor(unit)
        if f is not None and not (0 < f < math.inf):
            raise ResultsFileError(f"{path}: '{var}' has units '{_short(unit)}', which scale by "
                                   f"{f:g}: a unit is a positive, finite number of bytes")
        if f is None:
            hint = " (KB is ambiguous: write kB for 1000 or KiB for 1024)" \
                if unit.strip().upper() in ("KB", "KBYTE", "KBYTES") else ""
            raise ResultsFileError(f"{path}: '{var}' has units '{_short(unit)}', not a byte unit "
                                   f"gpumem reads{hint} (accepted: B, byte, kB, MB, GB, KiB, "
                                   f"MiB, GiB, '1024 byte'...; docs/results.md, 'Units')")
        return None if f == 1 else f
    if _is_cycles(unit, attrs):
        return None
    s = seconds_factor(unit)
    if s is not None and not (0 < s < math.inf):
        raise ResultsFileError(f"{path}: '{var}' has units '{_short(unit)}', which scale by {s:g}: "
                               f"a unit is a positive, finite time")
    if s is None:
        raise ResultsFileError(f"{path}: '{var}' has units '{_short(unit)}', neither clock "
                               f"cycles nor a time gpumem reads (accepted: cycle, s, ms, us, "
                               f"ns, ps; "
                               f"docs/results.md, 'Units')")
    clock = _clock_mhz(raw)
    if clock is None:
        raise ResultsFileError(f"{path}: '{var}' is in '{_short(unit)}' but the file records "
                               f"no usable clock to turn time into cycles (global attribute "
                               f"'{CLOCK_ATTR}': {str(raw.attrs.get(CLOCK_ATTR, 'none'))[:20]};"
                               f" the clock in MHz the latencies were timed at, "
                               f"{CLOCK_RANGE[0]:g}-{CLOCK_RANGE[1]:g})")
    return s * clock * 1e6


def _apply(da: xr.DataArray, scale: float, want: str, path: Path | str, var: str,
           unit: str) -> xr.DataArray:
    attrs = {k: v for k, v in da.attrs.items() if k not in ("units", HUMAN_ATTR)}
    attrs["units"] = want
    attrs["gpumem_converted_from"] = unit
    values = np.asarray(da.values, dtype=np.float64) * scale
    if want == BYTES:
        pad = np.asarray(da.values) < 0  # pattern's -1 padding stays -1
        whole = np.round(values)
        bad = ~pad & (np.abs(values - whole) > 1e-6 * np.maximum(1.0, np.abs(values)))
        if bad.any():
            first = np.asarray(da.values)[bad].flat[0]
            raise ResultsFileError(f"{path}: '{var}' = {first} {_short(unit)} is not a whole "
                                   f"number of bytes")
        values = np.where(pad, -1, whole).astype(np.int64)
    return xr.DataArray(values, dims=da.dims, attrs=attrs)
