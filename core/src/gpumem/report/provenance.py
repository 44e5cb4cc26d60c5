"""What was measured on what: device, software, run time, clocks and throttled points.

Everything comes from the results files' global attributes and per-point state variables
(``point_throttled``, ``point_sm_clock_mhz_before/_after``, ...; docs/results.md) and from the
manifest, so the page says exactly what the files say, and where a reading was not taken
(the simulator has no NVML) it says that rather than showing a zero. Experiments are listed
in the page's order (:func:`in_page_order`): its sections' experiments, then the rest sorted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpumem.contracts.series import Series


def in_page_order(names: Iterable[str], order: Sequence[str]) -> list[str]:
    """``names`` as the page lists experiments (its tables, the summary, the provenance):
    first those of ``order``, the experiments of the page's sections (section order, then
    rank within a section: :func:`gpumem.report.page.page_order`), then the rest sorted."""
    names = set(names)
    return [e for e in order if e in names] + sorted(names - set(order))


@dataclass
class ExperimentRow:
    """One line of a series' experiment table."""

    experiment: str
    status: str
    points: str
    wall_s: str
    throttled: str
    note: str


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def _size(n: Any) -> str:
    v = _num(n)
    if not v:
        return ""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v:.0f} B"


def _mhz(v: Any) -> str:
    f = _num(v)
    return f"{f:g} MHz" if f else ""


def _span(values: list[float], unit: str) -> str:
    vals = [v for v in values if v is not None and np.isfinite(v) and v >= 0]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    return f"{lo:g} {unit}" if lo == hi else f"{lo:g} - {hi:g} {unit}"


def _point_values(s: Series, name: str) -> list[float]:
    out: list[float] = []
    for exp in s.experiments():
        ds = s.raw(exp)
        if ds is None:
            continue
        for suffix in ("_before", "_after"):
            var = f"point_{name}{suffix}"
            if var in ds:
                v = np.asarray(ds[var].values, dtype=float).ravel()
                out += v[np.isfinite(v) & (v >= 0)].tolist()
    return out


def _attr_values(s: Series, name: str) -> list[float]:
    out = []
    for exp in s.experiments():
        ds = s.raw(exp)
        if ds is None:
            continue
        for when in ("before", "after"):
            v = _num(ds.attrs.get(f"{when}_nvml_{name}"))
            if v is not None:
                out.append(v)
    return out


def device_rows(s: Series) -> list[tuple[str, str]]:
    """(label, value) pairs describing the device and the software that measured it."""
    a = s.attrs
    kind = str(a.get("gpumem_source_kind") or str(a.get("source", "")).split(" ", 1)[0])
    versions = sorted({str(ds.attrs.get("gpumem_version", "")) for exp in s.experiments()
                       if (ds := s.raw(exp)) is not None} - {""})
    plugins = sorted({f"{ds.attrs.get('gpumem_plugin', '')} "
                      f"{ds.attrs.get('gpumem_plugin_version', '')}".strip()
                      for exp in s.experiments() if (ds := s.raw(exp)) is not None} - {""})
    peak = _num(a.get("peak_bandwidth_gbs"))
    rows = [
        ("device", s.device_name),
        ("measured or simulated", kind),
        ("device key", s.device_key),
        ("UUID", str(a.get("device_uuid", ""))),
        ("compute capability", str(a.get("compute_capability", ""))),
        ("SMs", str(a.get("sm_count", ""))),
        ("SM clock", _mhz(a.get("clock_mhz"))),
        ("memory clock", _mhz(a.get("memory_clock_mhz"))),
        ("memory bus", f"{int(_num(a.get('memory_bus_bits')) or 0)} bit"
         if _num(a.get("memory_bus_bits")) else ""),
        ("memory", _size(a.get("memory_bytes"))),
        ("L2", _size(a.get("l2_bytes"))),
        ("theoretical DRAM bandwidth", f"{peak:g} GB/s" if peak else ""),
        ("driver", str(a.get("cuda_driver_version") or a.get("device_nvml_driver_version")
                       or "")),
        ("CUDA runtime", str(a.get("cuda_runtime_version", ""))),
        ("CUDA driver API", str(a.get("device_cuda_driver_api_version", ""))),
        ("CuPy", str(a.get("device_cupy_version", ""))),
        ("simulator config", " ".join(str(x) for x in (
            a.get("before_sim_config_name", ""),
            str(a.get("before_sim_config_sha256", ""))[:12]) if x)),
        ("architecture plugin", str(a.get("gpumem_arch", ""))),
        ("contributing plugins", ", ".join(plugins)),
        ("gpumem version", ", ".join(versions)),
        ("Python", str(a.get("python_version", ""))),
    ]
    return [(k, v) for k, v in rows if v and v != "0"]


def run_rows(s: Series) -> list[tuple[str, str]]:
    """(label, value) pairs: when and how the run went, clocks, throttling."""
    entries = list(s.entries.values())
    starts = sorted(str(e.get("started", "")) for e in entries if e.get("started"))
    starts += sorted(str(r.get("started", "")) for r in s.runs if r.get("started"))
    ends = sorted(str(e.get("finished", "")) for e in entries if e.get("finished"))
    wall = sum(_num(e.get("wall_s")) or 0.0 for e in entries)
    commands = sorted({" ".join(str(x) for x in r.get("argv", [])) for r in s.runs} - {""})
    hosts = sorted({str(ds.attrs.get("history", "")).split(" ")[1].rstrip(":")
                    for exp in s.experiments()
                    if (ds := s.raw(exp)) is not None
                    and len(str(ds.attrs.get("history", "")).split(" ")) > 2})
    throttled, unread = throttle_counts(s)
    rows = [
        ("run directory", str(s.run_dir)),
        ("command", "; ".join(commands)),
        ("host", ", ".join(hosts)),
        ("started", min(starts) if starts else ""),
        ("finished", max(ends) if ends else ""),
        ("measuring time", f"{wall:.1f} s over {len(entries)} experiment(s)" if entries else ""),
        ("SM clock per point", _span(_point_values(s, "sm_clock_mhz"), "MHz")),
        ("memory clock per point", _span(_point_values(s, "mem_clock_mhz"), "MHz")),
        ("temperature", _span(_point_values(s, "temperature_c")
                              or _attr_values(s, "temperature_c"), "C")),
        ("power", _span([v / 1000 for v in _point_values(s, "power_mw")
                         or _attr_values(s, "power_mw")], "W")),
        ("throttled points", _throttle_text(s, throttled, unread)),
    ]
    return [(k, v) for k, v in rows if v]


def throttle_counts(s: Series) -> tuple[int | None, int]:
    """(points flagged throttled, points whose state was not read); ``None`` when no file
    records per-point state at all (the simulator)."""
    seen, throttled, unread = False, 0, 0
    for exp in s.experiments():
        ds = s.raw(exp)
        if ds is None or "point_throttled" not in ds:
            continue
        seen = True
        v = np.asarray(ds["point_throttled"].values)
        ran = np.asarray(ds["point_status"].values == 0) if "point_status" in ds else \
            np.ones(v.shape, bool)
        throttled += int(((v == 1) & ran).sum())
        unread += int(((v == -1) & ran).sum())
    return (throttled if seen else None), unread


def _throttle_text(s: Series, throttled: int | None, unread: int) -> str:
    if throttled is None:
        return "not recorded (no per-point device state: simulated or converted data)"
    text = f"{throttled}" if throttled else "none"
    if unread:
        text += f" ({unread} point(s) without a reading)"
    return text


def throttled_points(s: Series, experiment: str, limit: int = 4) -> str:
    """The first throttled points of an experiment, with their clock-event reason masks."""
    ds = s.raw(experiment)
    if ds is None or "point_throttled" not in ds:
        return ""
    flag = ds["point_throttled"]
    where = np.argwhere(np.asarray(flag.values) == 1)
    if where.size == 0:
        return ""
    parts = []
    for idx in where[:limit]:
        coords = {d: ds[d].values[i].item() if d in ds.coords else int(i)
                  for d, i in zip(flag.dims, idx, strict=True)}
        reasons = []
        for when in ("before", "after"):
            var = f"point_clock_event_reasons_{when}"
            if var in ds:
                r = ds[var].values[tuple(idx)]
                if np.isfinite(r) and r > 0:
                    reasons.append(f"{when} 0x{int(r):x}")
        parts.append(", ".join(f"{k}={v}" for k, v in coords.items())
                     + (f" ({'; '.join(reasons)})" if reasons else ""))
    more = f"; and {len(where) - limit} more" if len(where) > limit else ""
    return "throttled at " + " | ".join(parts) + more


def experiment_rows(s: Series, order: Sequence[str] = ()) -> list[ExperimentRow]:
    """Every experiment the series ran or tried, in page order (:func:`in_page_order`)."""
    names = in_page_order(set(s.entries) | set(s.missing), order)
    rows = []
    for exp in names:
        e = s.entries.get(exp)
        if e is None:
            why = s.missing.get(exp, "")
            status, _, note = why.partition(": ")
            rows.append(ExperimentRow(exp, status or "missing", "", "", "", note or why))
            continue
        ds = s.raw(exp)
        n = None
        if ds is not None and "point_throttled" in ds:
            n = int((np.asarray(ds["point_throttled"].values) == 1).sum())
        reasons = ""
        if ds is not None and "point_status" in ds:
            try:
                bad = json.loads(str(ds["point_status"].attrs.get("reasons", "{}")))
            except ValueError:
                bad = {}
            if bad:
                first = next(iter(bad.items()))
                reasons = f"{len(bad)} point(s) skipped or failed, e.g. {first[0]}: {first[1]}"
        note = "; ".join(x for x in (str(e.get("error") or ""), reasons,
                                     throttled_points(s, exp)) if x)
        wall = _num(e.get("wall_s"))
        rows.append(ExperimentRow(
            exp, str(e.get("status", "")), str(e.get("points", "")),
            f"{wall:.2f}" if wall is not None else "",
            "-" if n is None else str(n), note))
    return rows
