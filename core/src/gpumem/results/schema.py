"""The raw-dataset schema: sweep points assembled into one labeled, CF-attributed Dataset.

Every experiment's raw data has dimensions named after its sweep axes plus the inner
dimensions of its variables, each with a coordinate; ``units`` and ``long_name`` on every
variable; a ``point_status`` flag variable over the sweep axes (CF flag_values/flag_meanings)
saying which points ran, were skipped or failed; and the global attributes listed in
``docs/results.md``. Attribute values are only str, numbers or arrays (netCDF refuses bool,
None and dict: those are encoded as 0/1, empty strings and JSON strings).
"""

from __future__ import annotations

import getpass
import json
import platform
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from itertools import product
from typing import Any

import numpy as np
import xarray as xr

from gpumem import __version__
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.experiment import POINT_RUNS, Axis, Plan
from gpumem.contracts.findings import STOP_REASONS
from gpumem.contracts.units import human_long_name

SCHEMA_VERSION = 1
CONVENTIONS = "CF-1.12"
POINT_OK, POINT_SKIPPED, POINT_FAILED = 0, 1, 2
#: Key of the device's per-point readings among a point's values (see Device.point_state).
POINT_STATE = "__point_state__"
#: Key of what a point added to the device's counters (see Device.point_counters).
POINT_COUNTS = "__point_counts__"
_STATE_UNITS = {"sm_clock_mhz": "MHz", "mem_clock_mhz": "MHz", "temperature_c": "degC",
                "power_mw": "mW", "clock_event_reasons": "1", "throttled": "1",
                "other_processes": "1", "other_active_processes": "1", "mps_server": "1",
                "other_busy_pct": "percent", "gpu_utilization_pct": "percent"}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def points(axes: list[Axis]) -> list[dict[str, Any]]:
    """All sweep points, in axis order (the order results are merged in)."""
    names = [a.name for a in axes]
    return [dict(zip(names, combo, strict=True)) for combo in product(*(a.values for a in axes))]


def point_key(point: Mapping[str, Any]) -> tuple:
    return tuple(_scalar(v) for v in point.values())


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def attr_safe(value: Any) -> Any:
    """Encode a Python value as a netCDF-safe attribute value."""
    if isinstance(value, bool):
        return int(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple)) and not _numeric_seq(value):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, np.ndarray)):
        return value
    return str(value)


def _numeric_seq(v: Any) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) > 0
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v))


def assemble(plan: Plan, axes: list[Axis], results: Mapping[tuple, tuple[int, str, Mapping]]
             ) -> xr.Dataset:
    """Build the raw Dataset from per-point results ``{key: (status, reason, values)}``.

    Points missing from ``results`` count as failed ("not run"); values of skipped and failed
    points are NaN (or -1 for integer variables).
    """
    shape = tuple(len(a.values) for a in axes)
    index = {a.name: {_scalar(v): i for i, v in enumerate(a.values)} for a in axes}
    data: dict[str, np.ndarray] = {}
    for var in plan.variables:
        inner_shape = tuple(len(plan.inner[d]) for d in var.dims)
        dtype = np.dtype(var.dtype)
        fill = np.nan if dtype.kind == "f" else -1
        data[var.name] = np.full(shape + inner_shape, fill, dtype=dtype)
    status = np.full(shape, POINT_FAILED, dtype=np.int8)
    reasons: dict[str, str] = {}
    for point in points(axes):
        key = point_key(point)
        pos = tuple(index[a.name][_scalar(point[a.name])] for a in axes)
        st, reason, values = results.get(key, (POINT_FAILED, "not run", {}))
        status[pos] = st
        if st != POINT_OK:
            reasons[json.dumps([_scalar(v) for v in key])] = reason
            continue
        for var in plan.variables:
            v = np.asarray(values[var.name])
            want = data[var.name].shape[len(shape):]
            if v.shape != want:
                raise ValueError(f"variable {var.name!r} at {point} has shape {v.shape}, "
                                 f"expected {want}")
            data[var.name][pos] = v
    axis_dims = tuple(a.name for a in axes)
    ds = xr.Dataset(
        {var.name: (axis_dims + var.dims, data[var.name],
                    {"units": var.units, "long_name": var.long_name or var.name})
         for var in plan.variables},
        coords={
            **{a.name: (a.name, np.asarray(a.values),
                        {"units": a.units, "long_name": a.long_name or a.name}) for a in axes},
            **{d: (d, np.asarray(v), {"long_name": human_long_name(d), "units": "1"})
               for d, v in plan.inner.items()},
        },
    )
    ds["point_status"] = (axis_dims, status, {
        "long_name": "outcome of each sweep point",
        "units": "1",
        "flag_values": np.array([POINT_OK, POINT_SKIPPED, POINT_FAILED], dtype=np.int8),
        "flag_meanings": "ok skipped failed",
        "reasons": json.dumps(reasons, sort_keys=True),
    })
    _add_point_state(ds, axes, index, results)
    _add_point_counts(ds, axes, index, results)
    _add_point_runs(ds, axes, index, results)
    for k, v in plan.attrs.items():
        ds.attrs[f"plan_{k}"] = attr_safe(v)
    return ds


def _add_point_counts(ds: xr.Dataset, axes: list[Axis], index: dict,
                      results: Mapping[tuple, tuple[int, str, Mapping]]) -> None:
    """``point_<count>``: what each point, whatever its status, added to a device counter
    (Accel-Sim's runs and deadlock re-runs: which points were affected); times
    (``*_seconds``) are left to the provenance's totals, as they differ from run to run."""
    shape = tuple(len(a.values) for a in axes)
    dims = tuple(a.name for a in axes)
    counts: dict[str, np.ndarray] = {}
    for key, (_st, _reason, values) in results.items():
        added = values.get(POINT_COUNTS)
        if not added:
            continue
        pos = tuple(index[a.name][_scalar(v)] for a, v in zip(axes, key, strict=True))
        for name, v in added.items():
            if not name.endswith("_seconds"):
                if name not in counts:
                    counts[name] = np.full(shape, np.nan)
                counts[name][pos] = v
    for name, arr in sorted(counts.items()):
        ds[f"point_{name}"] = (dims, arr, {"units": "1", "long_name": f"device "
                                           f"{name.replace('_', ' ')} during the point"})


def _add_point_runs(ds: xr.Dataset, axes: list[Axis], index: dict,
                    results: Mapping[tuple, tuple[int, str, Mapping]]) -> None:
    """The stopping rule's record of each point (:data:`gpumem.contracts.experiment.POINT_RUNS`):
    ``point_repeats`` (runs taken), ``point_rel_error`` (the median's relative standard error
    reached, the worst over the values recorded) and ``point_stopped`` (why no more: a flag
    over :data:`gpumem.contracts.findings.STOP_REASONS`); -1 / NaN where a point has none."""
    shape = tuple(len(a.values) for a in axes)
    dims = tuple(a.name for a in axes)
    runs = np.full(shape, -1, dtype=np.int16)
    rel = np.full(shape, np.nan)
    stopped = np.full(shape, -1, dtype=np.int8)
    seen = False
    for key, (st, _reason, values) in results.items():
        rec = values.get(POINT_RUNS) if st == POINT_OK else None
        if not rec:
            continue
        seen = True
        pos = tuple(index[a.name][_scalar(v)] for a, v in zip(axes, key, strict=True))
        runs[pos], rel[pos], stopped[pos] = rec["repeats"], rec["rel_error"], rec["stopped"]
    if not seen:
        return
    ds["point_repeats"] = (dims, runs, {"units": "1", "long_name": "timed runs the point "
                                        "took (-1: none recorded)"})
    ds["point_rel_error"] = (dims, rel, {"units": "1", "long_name": "relative standard "
                                         "error of the point's medians when its runs stopped"})
    ds["point_stopped"] = (dims, stopped, {
        "units": "1", "long_name": "why the point's runs stopped (-1: not recorded)",
        "flag_values": np.arange(len(STOP_REASONS), dtype=np.int8),
        "flag_meanings": " ".join(r.replace(" ", "_") for r in STOP_REASONS)})


def point_totals(results: Mapping[tuple, tuple[int, str, Mapping]]) -> dict[str, float]:
    """Each device counter summed over the points' additions (see Device.point_counters)."""
    out: dict[str, float] = {}
    for _st, _reason, values in results.values():
        for name, v in (values.get(POINT_COUNTS) or {}).items():
            out[name] = out.get(name, 0.0) + float(v)
    return out


def _add_point_state(ds: xr.Dataset, axes: list[Axis], index: dict,
                     results: Mapping[tuple, tuple[int, str, Mapping]]) -> None:
    """Per-point device readings (``point_<reading>_before/_after``), ``point_throttled``
    (1 when a throttling clock-event reason was set before or after the point) and
    ``point_contended`` (1 when another process was active on the GPU before or after it;
    see :mod:`gpumem.contracts.contention`)."""
    shape = tuple(len(a.values) for a in axes)
    dims = tuple(a.name for a in axes)
    state: dict[str, np.ndarray] = {}
    for key, (st, _reason, values) in results.items():
        readings = values.get(POINT_STATE) if st == POINT_OK else None
        if not readings:
            continue
        pos = tuple(index[a.name][_scalar(v)] for a, v in zip(axes, key, strict=True))
        for name, v in readings.items():
            if name not in state:  # (not setdefault: it would build an array each time)
                state[name] = np.full(shape, np.nan)
            state[name][pos] = v
    for name, arr in sorted(state.items()):
        base = name.rsplit("_", 1)[0]
        ds[f"point_{name}"] = (dims, arr, {"units": _STATE_UNITS.get(base, "1"),
                                           "long_name": f"device {base.replace('_', ' ')} "
                                                        f"{name.rsplit('_', 1)[1]} the point"})
    if "throttled_before" in state:
        flag = np.fmax(state["throttled_before"], state.get("throttled_after", np.nan))
        ds["point_throttled"] = (dims, np.where(np.isnan(flag), -1, flag).astype(np.int8), {
            "units": "1", "long_name": "a throttling clock-event reason was active before "
                                       "or after the point (-1: not read)"})
    if "other_active_processes_before" in state:
        seen = np.fmax(state["other_active_processes_before"],
                       state.get("other_active_processes_after", np.nan))
        ds["point_contended"] = (dims, np.where(np.isnan(seen), -1, seen > 0).astype(np.int8), {
            "units": "1", "long_name": "another process was active on the GPU before or after "
                                       "the point (-1: not read)"})


def global_attrs(*, experiment: str, experiment_version: str, summary: str, arch: str,
                 device: DeviceInfo, source: str, plugin: str, plugin_version: str,
                 params_hash: str, argv: Iterable[str], provenance: Mapping[str, Any],
                 references: str = "", extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The global attributes every raw results file carries (CF + ACDD + gpumem's own)."""
    created = now_iso()
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database in some containers
        user = "unknown"
    attrs: dict[str, Any] = {
        "Conventions": CONVENTIONS,
        "title": f"gpumem {experiment}: {summary}",
        "institution": "",
        "source": f"{source} ({device.kind}: {device.name}); gpumem {__version__}",
        "history": f"{created} {user}@{platform.node()}: {' '.join(argv)}",
        "references": references,
        "comment": "",
        "date_created": created,
        "gpumem_schema_version": SCHEMA_VERSION,
        "gpumem_version": __version__,
        "gpumem_source_kind": source,
        "gpumem_experiment": experiment,
        "gpumem_experiment_version": experiment_version,
        "gpumem_arch": arch,
        "gpumem_plugin": plugin,
        "gpumem_plugin_version": plugin_version,
        "gpumem_params_hash": params_hash,
        "python_version": sys.version.split()[0],
        "device_kind": device.kind,
        "device_key": device.key,
        "device_name": device.name,
        "device_uuid": device.uuid,
        "device_index": device.index,
        "compute_capability": device.compute_capability,
        "sm_count": device.sm_count,
        "l2_bytes": device.l2_bytes,
        "memory_bytes": device.memory_bytes,
        "clock_mhz": device.clock_mhz,
        "memory_clock_mhz": device.memory_clock_mhz,
        "memory_bus_bits": device.memory_bus_bits,
        "peak_bandwidth_gbs": device.peak_bandwidth_gbs,
        "smem_bank_modes": np.asarray(device.smem_bank_modes, dtype=np.int32),
        "load_paths": ",".join(device.load_paths),
        "cuda_driver_version": device.driver,
        "cuda_runtime_version": device.runtime,
    }
    for k, v in device.extra.items():
        attrs[f"device_{k}"] = attr_safe(v)
    for k, v in provenance.items():
        attrs[k] = attr_safe(v)
    for k, v in (extra or {}).items():
        attrs[k] = attr_safe(v)
    return attrs
