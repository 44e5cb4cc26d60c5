"""``gpumem import mt4g FILE.json``: MT4G's result JSON as a gpumem run directory.

MT4G (github caps-tum/mt4g, ``src/main.cpp``) writes one ``<GPU>.json``: device properties
under ``general``, ``compute`` and ``meta``, and per memory level under ``memory`` (``l1``,
``l2``, ``readOnly``, ``texture``, ``constant`` -> ``l1``/``l1.5``, ``shared``, ``main``; AMD
adds ``scalarL1``, ``l3``) what it measured: ``latency`` (mean, p50, p95, stdev of single timed
loads, cycles), ``size``/``lineSize``/``fetchGranularity``/``segmentSize`` (``{size, unit,
confidence, method}`` from a p-chase change point, or ``{value, unit}`` from a device query),
``missPenalty`` (cycles) and ``readBandwidth``/``writeBandwidth`` (GiB/s, 2^30 B/s).

The raw data (root group of every file) is that table, one row per level, in MT4G's units,
plus the file verbatim (``source_text``). Findings (``MAPPING`` below; converted to gpumem's
units, each ``method`` says how):

=================================  ================================  ======================
gpumem finding (experiment)        MT4G value                        conversion
=================================  ================================  ======================
lat.l1, l1d.hit_latency            memory.l1.latency.p50             cycles as is
lat.l2, l2.hit_latency             memory.l2.latency.p50             cycles as is
lat.dram_tlb_miss                  memory.main.latency.p50           cycles as is
lat.l1_ns, lat.l2_ns, ..._ns       the same p50                      / general.clockRate
ro.hit_latency, tex_l1.*, const_l1 readOnly / texture / constant.l1  cycles as is
l1d.size (latency)                 memory.l1.size                    bytes as is
l2.size (latency)                  memory.l2.size (device query)     bytes as is
l2.near_size (latency)             memory.l2.segmentSize < l2.size   bytes as is
LEVEL.overflow_size/.line/.sector  size / lineSize / fetchGranularity  bytes as is
lat.smem (smem_latency)            memory.shared.latency.p50         cycles as is
bw.dram_read / bw.dram_write       memory.main.read/writeBandwidth   GiB/s x 1.073741824
bw.dram_read_fraction              bw.dram_read / peak               peak = mem clock x bus x 2
bw.l2 (bandwidth_levels)           memory.l2.readBandwidth           GiB/s x 1.073741824
=================================  ================================  ======================

Not mapped (kept in the raw data): miss penalties, the constant L1.5 cache, L2 write
bandwidth, per-SM amounts, ``sharedWith``, AMD's scalar L1 and L3: gpumem has no finding of
that meaning. MT4G reads ``%clock`` around each load and does not subtract the timer's cost
(gpumem does), and its main-memory chase is a cold random walk over 1 GiB with
``ld.global.cv`` + ``membar.gl``: the methods say so, so a gap to gpumem's numbers is explained
in the comparison itself.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Finding
from gpumem.contracts.formats import Converted, Format, FormatError
from gpumem.interop.importers import (
    Imported,
    Source,
    check_out,
    point_status,
    read_source,
    resolve_arch,
    var,
    write_run,
)

if TYPE_CHECKING:
    from gpumem.contracts.formats import PluginSet

TOOL = "MT4G"
EXPECTED = "MT4G's result JSON (<GPU>.json, github caps-tum/mt4g)"
REFERENCES = ("MT4G, github caps-tum/mt4g (src/main.cpp writes the JSON); "
              "arXiv 2511.05958, doi 10.1145/3731599.3767518")
GIB_PER_GB = 2**30 / 1e9  # 1 GiB/s = 1.073741824 GB/s

#: gpumem's prefix per MT4G cache level, and how the level is named in methods.
CACHES = {"l1": ("l1d", "L1"), "l2": ("l2", "L2"), "readOnly": ("ro", "read-only"),
          "texture": ("tex_l1", "texture"), "constant.l1": ("const_l1", "constant L1")}
#: what each MT4G latency benchmark does (src/benchmarks/*/latency/*.cpp)
BENCH = {"l1": "1 KiB p-chase with ld.global.ca",
         "l2": "1 KiB p-chase with ld.global.cg",
         "main": "cold random p-chase over 1 GiB at 1 KiB stride with ld.global.cv + membar.gl",
         "shared": "shared-memory p-chase",
         "readOnly": "1 KiB p-chase with ld.global.nc",
         "texture": "1 KiB p-chase with tex1Dfetch",
         "constant.l1": "constant-memory p-chase"}
TIMER = "%clock read around each load, timer overhead not removed"

#: x clock_mhz -> cycles (None: cycles already)
_TIME: dict[str, float | None] = {"cycles": None, "cycle": None, "ns": 1e-3, "us": 1.0}
_BYTES = {"bytes": 1, "byte": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_BW = {"GiB/s": 1.0, "GB/s": 1e9 / 2**30, "MiB/s": 2**-10, "MB/s": 1e6 / 2**30,
       "TB/s": 1e12 / 2**30, "TiB/s": 2**10}                      # -> GiB/s
_CLOCK = {"kHz": 1e-3, "MHz": 1.0, "GHz": 1e3, "Hz": 1e-6}         # -> MHz
_SIZE_FIELDS = {"size": "size", "lineSize": "line_size", "fetchGranularity": "fetch_granularity",
                "segmentSize": "segment_size"}
_STATS = ("mean", "p50", "p95", "stdev")
_RESULTS = (*_SIZE_FIELDS, "missPenalty", "readBandwidth", "writeBandwidth")

# Bounds on what a file may hold, so that a hostile or broken one is one line, never a
# RecursionError, an OverflowError or a file name the OS refuses
#: levels of nesting (MT4G's files nest 5: memory.constant.l1.latency.mean)
MAX_DEPTH = 32
#: characters of the device name, which becomes the run's folder name (CUDA's and HIP's
#: names are at most 255 bytes; the folder is "mt4g-" + the name's letters and digits)
MAX_NAME = 200
#: magnitude of any number read (bytes, cycles, MHz, GiB/s: all far below)
MAX_NUMBER = 1e15
#: bytes after unit conversion: exact in a float, and within a 64-bit netCDF attribute
MAX_BYTES = 2**53
_SURROGATE = re.compile("[\ud800-\udfff]")
_META_NAME = re.compile(r"[A-Za-z0-9_]{0,40}")


@dataclass
class Level:
    """One MT4G memory level, in canonical units (cycle, byte, GiB/s)."""

    name: str
    latency: dict[str, float] = field(default_factory=dict)     # mean/p50/p95/stdev, cycles
    counts: dict[str, float] = field(default_factory=dict)      # measurements, sampleSize
    latency_note: str = ""                                      # unit conversion done
    sizes: dict[str, tuple[float, float, str, str]] = field(default_factory=dict)
    # field -> (bytes, confidence or NaN, method ("p-chase", "device query"), note)
    values: dict[str, tuple[float, str]] = field(default_factory=dict)  # missPenalty ...
    amount: float = math.nan
    shared_with: str = ""


@dataclass
class Parsed:
    doc: dict[str, Any]
    device: DeviceInfo
    levels: dict[str, Level]
    version: str
    warnings: list[str] = field(default_factory=list)


class Mt4gFormat(Format):
    name = "mt4g"
    summary = "MT4G result JSON (<GPU>.json) -> a gpumem run directory"
    imports = "run"

    def import_file(self, source: Path, out: Path, *, arch: str | None = None,
                    plugins: PluginSet) -> Converted:
        check_out(out)
        src = read_source(source)
        parsed = parse(src)
        arch = resolve_arch(plugins, arch, parsed.device.compute_capability,
                            str(parsed.device.extra.get("vendor", "")))
        files = build(parsed, src)
        if not any(f.findings for f in files):
            raise FormatError(f"{src.path}: no value that maps to a gpumem finding (no "
                              f"latency, size or bandwidth under 'memory'); expected {EXPECTED}")
        meta = parsed.doc.get("meta", {}) if isinstance(parsed.doc.get("meta"), dict) else {}
        provenance = {
            "import_tool": TOOL, "import_tool_version": parsed.version,
            "import_benchmark": "memory benchmarks (all groups in the file)",
            "import_source_file": src.path.name, "import_source_sha256": src.sha256,
            "import_device_name": parsed.device.name,
            **{_meta_name(k): _meta_value(v) for k, v in sorted(meta.items())
               if isinstance(v, (str, int, float))},
        }
        renamed = [k for k in sorted(meta) if _meta_name(k) != f"mt4g_meta_{k}"]
        if renamed:
            shown = ", ".join(f"{k[:40]!r} -> {_meta_name(k)}" for k in renamed[:5])
            more = f", and {len(renamed) - 5} more" if len(renamed) > 5 else ""
            parsed.warnings.append(f"{src.path}: meta key(s) netCDF cannot take as attribute "
                                   f"names (only letters, digits and '_', at most 40) "
                                   f"renamed: {shown}{more}")
        write_run(out, [f for f in files if f.findings], source=src, tool=TOOL,
                  benchmark="memory benchmarks", device=parsed.device, arch=arch,
                  provenance=provenance, references=REFERENCES, fmt=self.name, plugins=plugins)
        if not arch:
            parsed.warnings.append(
                f"no architecture plugin claims {parsed.device.extra.get('vendor', '')} "
                f"compute capability '{parsed.device.compute_capability}': the run has no "
                f"architecture (give --arch to compare against expected values)")
        return Converted([Path(out)], parsed.warnings)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def _bad(src: Source, where: str, want: str) -> FormatError:
    return FormatError(f"{src.path}: {where}: expected {want} ({EXPECTED})")


def _num(src: Source, x: Any, where: str) -> float:
    """A number of the file: finite, at most :data:`MAX_NUMBER` in magnitude (JSON holds
    integers of any length and, as Python reads it, NaN and Infinity)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise _bad(src, where, "a number")
    try:
        v = float(x)
    except OverflowError:  # an integer beyond a float
        v = math.inf
    if not math.isfinite(v) or abs(v) > MAX_NUMBER:
        raise _bad(src, where, f"a finite number of magnitude at most {MAX_NUMBER:g}")
    return v


def _bytes(src: Source, v: float, where: str) -> float:
    """A size after unit conversion, refused beyond :data:`MAX_BYTES`."""
    if abs(v) > MAX_BYTES:
        raise _bad(src, where, f"a size of at most 2^53 bytes, not {v:.3g}")
    return v


def _meta_name(key: str) -> str:
    """The attribute a ``meta`` key becomes: netCDF names hold no ``/`` or control
    character and at most 256 bytes, so any other key is reduced to letters, digits and
    ``_`` plus a hash of the original (two keys never meet on one name)."""
    if _META_NAME.fullmatch(key):
        return f"mt4g_meta_{key}"
    slug = re.sub(r"[^A-Za-z0-9_]+", "_", key)[:32].strip("_")
    return f"mt4g_meta_{slug}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def _meta_value(v: Any) -> Any:
    """A ``meta`` value as an attribute: text, a 64-bit integer, a finite float; text
    otherwise (a larger integer, NaN)."""
    if isinstance(v, bool) or (isinstance(v, int) and abs(v) < 2**63) \
            or (isinstance(v, float) and math.isfinite(v)):
        return v
    return str(v)


def _unit(src: Source, d: dict, where: str) -> str:
    u = d.get("unit")
    if not isinstance(u, str):
        raise _bad(src, f"{where}.unit", "a unit string")
    return u


def load(src: Source) -> dict[str, Any]:
    """The JSON document, checked for MT4G's top-level shape."""
    return _load(src)[0]


def _too_deep(src: Source) -> FormatError:
    return FormatError(f"{src.path}: JSON nested too deeply (more than {MAX_DEPTH} levels; "
                       f"MT4G's nest 5); expected {EXPECTED}")


def _clean(src: Source, doc: Any) -> int:
    """Walk ``doc`` without recursion: refuse nesting deeper than :data:`MAX_DEPTH`, and
    replace each lone UTF-16 surrogate (a ``\\ud800`` escape JSON allows, UTF-8 and so no
    file can hold) with U+FFFD in keys and strings; returns how many strings changed."""
    fixed = 0

    def text(x: str) -> str:
        nonlocal fixed
        if _SURROGATE.search(x):
            fixed += 1
            return _SURROGATE.sub("\ufffd", x)
        return x

    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(src)
        if isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for k, v in items:
                node[text(k)] = text(v) if isinstance(v, str) else v
        elif isinstance(node, list):
            node[:] = [text(v) if isinstance(v, str) else v for v in node]
        else:
            continue
        stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict)
                                              else node) if isinstance(v, (dict, list)))
    return fixed


def _around_json(text: str) -> tuple[Any, list[tuple[int, str]]] | None:
    """A captured stdout: lines before the object (from the first line that opens with
    '{') and after it (a shell's "Command exited with non-zero status 124"), as
    (line number, text); None when there is no whole JSON object in it."""
    lines = text.split("\n")
    start = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("{")), None)
    if start is None:
        return None
    offset = sum(len(ln) + 1 for ln in lines[:start])
    try:
        doc, end = json.JSONDecoder().raw_decode(text, offset + (len(lines[start])
                                                                 - len(lines[start].lstrip())))
    except json.JSONDecodeError:
        return None
    last = text.count("\n", 0, end)  # 0-based line of the object's end
    tail = text[end:].split("\n")
    skipped = [(k + 1, ln) for k, ln in enumerate(lines[:start]) if ln.strip()]
    skipped += [(last + 1 + k, ln) for k, ln in enumerate(tail) if ln.strip()]
    return doc, skipped


def _load(src: Source) -> tuple[dict[str, Any], str]:
    """The document, and a warning naming the lines around it that were skipped ("")."""
    text = src.text(EXPECTED)
    if not text.strip():
        raise FormatError(f"{src.path}: empty file; expected {EXPECTED}")
    warning = ""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise _too_deep(src) from None
    except json.JSONDecodeError as e:
        try:
            found = _around_json(text)
        except RecursionError:
            raise _too_deep(src) from None
        if found is None:
            raise FormatError(f"{src.path}: not JSON ({e.msg} at line {e.lineno} column "
                              f"{e.colno}); expected {EXPECTED}") from None
        doc, skipped = found
        shown = ", ".join(f"line {i} {' '.join(ln.split())[:60]!r}" for i, ln in skipped[:5])
        more = f", and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        warning = (f"{src.path}: skipped {len(skipped)} line(s) around the JSON document: "
                   f"{shown}{more}")
    if not isinstance(doc, dict) or not isinstance(doc.get("general"), dict) \
            or not isinstance(doc.get("memory"), dict):
        raise FormatError(f"{src.path}: JSON of another shape: expected an object with "
                          f"'general' and 'memory' objects ({EXPECTED})")
    fixed = _clean(src, doc)
    if fixed:
        warning = "\n".join(w for w in (warning, (
            f"{src.path}: {fixed} string(s) held lone UTF-16 surrogates (\\ud800-\\udfff "
            f"escapes, which no UTF-8 file can store): each replaced with U+FFFD")) if w)
    name = doc["general"].get("name")
    if not isinstance(name, str):
        raise _bad(src, "general.name", "the device name (a string)")
    if len(name) > MAX_NAME:  # the run's folder is named after it
        raise _bad(src, "general.name", f"a device name of at most {MAX_NAME} characters, "
                                        f"not {len(name)}")
    return doc, warning


def parse(src: Source) -> Parsed:
    doc, skipped = _load(src)
    warnings: list[str] = skipped.split("\n") if skipped else []
    general, memory = doc["general"], doc["memory"]
    clock_mhz = 0.0
    if isinstance(general.get("clockRate"), dict):
        c = general["clockRate"]
        u = _unit(src, c, "general.clockRate")
        v = _num(src, c.get("value"), "general.clockRate.value")
        if u in _CLOCK:
            clock_mhz = v * _CLOCK[u]
        else:
            warnings.append(f"general.clockRate in '{u}': unknown unit, no _ns findings")
    levels: dict[str, Level] = {}
    facts: dict[str, tuple[float, str]] = {}
    for key, val in memory.items():
        if not isinstance(val, dict):
            continue
        subs = {f"constant.{k}": v for k, v in val.items() if isinstance(v, dict)
                and "unit" not in v} if key == "constant" else {key: val}
        for name, body in subs.items():
            levels[name] = _level(src, name, body, clock_mhz, warnings)
        for k, v in val.items():  # device facts ({value, unit} that are not results)
            if isinstance(v, dict) and "value" in v and k not in _RESULTS:
                facts[f"{key}.{k}"] = (_num(src, v["value"], f"memory.{key}.{k}.value"),
                                       _unit(src, v, f"memory.{key}.{k}"))
    device = _device(src, doc, facts, levels, clock_mhz)
    meta = m if isinstance(m := doc.get("meta"), dict) else {}
    version = str(meta.get("mt4gVersion", "")) or "unknown (the file does not record it)"
    return Parsed(doc, device, levels, version, warnings)


def _level(src: Source, name: str, body: dict, clock_mhz: float,
           warnings: list[str]) -> Level:
    where = f"memory.{name}"
    lv = Level(name)
    lat = body.get("latency")
    if lat is not None:
        if not isinstance(lat, dict):
            raise _bad(src, f"{where}.latency", "an object with mean, p50, p95, stdev")
        u = _unit(src, lat, f"{where}.latency")
        factor = _TIME.get(u)
        if u not in _TIME or (factor is not None and clock_mhz <= 0):
            warnings.append(f"{where}.latency in '{u}': cannot convert to cycles, not mapped")
        else:
            for s in _STATS:
                if s in lat:
                    v = _num(src, lat[s], f"{where}.latency.{s}")
                    lv.latency[s] = v if factor is None else v * factor * clock_mhz
            for s in ("measurements", "sampleSize"):
                if s in lat:
                    lv.counts[s] = _num(src, lat[s], f"{where}.latency.{s}")
            if factor is not None:
                lv.latency_note = f"converted from {u} at {clock_mhz:g} MHz"
            if "p50" not in lv.latency:
                raise _bad(src, f"{where}.latency.p50", "a number")
    for fld in _SIZE_FIELDS:
        d = body.get(fld)
        if d is None:
            continue
        if not isinstance(d, dict):
            raise _bad(src, f"{where}.{fld}", "an object {size, unit, confidence} or "
                                              "{value, unit}")
        u = _unit(src, d, f"{where}.{fld}")
        if "size" in d:
            v = _num(src, d["size"], f"{where}.{fld}.size")
            conf = _num(src, d.get("confidence", math.nan), f"{where}.{fld}.confidence") \
                if "confidence" in d else math.nan
            how = str(d.get("method", "p-chase"))
        elif "value" in d:
            v, conf, how = _num(src, d["value"], f"{where}.{fld}.value"), math.nan, \
                "device query"
        else:
            raise _bad(src, f"{where}.{fld}", "'size' or 'value'")
        if u not in _BYTES:
            warnings.append(f"{where}.{fld} in '{u}': unknown unit, not mapped")
            continue
        note = "" if _BYTES[u] == 1 else f"converted from {u}"
        lv.sizes[fld] = (_bytes(src, v * _BYTES[u], f"{where}.{fld}"), conf, how, note)
    tables: tuple[tuple[str, Mapping[str, float | None]], ...] = (
        ("missPenalty", _TIME), ("readBandwidth", _BW), ("writeBandwidth", _BW))
    for fld, table in tables:
        d = body.get(fld)
        if d is None:
            continue
        if not isinstance(d, dict) or "value" not in d:
            raise _bad(src, f"{where}.{fld}", "an object {value, unit}")
        u = _unit(src, d, f"{where}.{fld}")
        v = _num(src, d["value"], f"{where}.{fld}.value")
        if u not in table or (table is _TIME and table[u] is not None and clock_mhz <= 0):
            warnings.append(f"{where}.{fld} in '{u}': unknown unit, not mapped")
            continue
        scale = table[u]
        if scale is None:  # _TIME's cycles: as they are
            lv.values[fld] = (v, "")
        elif table is _TIME:
            lv.values[fld] = (v * scale * clock_mhz, f"converted from {u}")
        else:
            lv.values[fld] = (v * scale, "" if u == "GiB/s" else f"converted from {u}")
    amount = body.get("amountPerMultiprocessor", body.get("amount"))
    if isinstance(amount, (int, float)) and not isinstance(amount, bool):
        lv.amount = _num(src, amount, f"{where}.amountPerMultiprocessor")
    shared = body.get("sharedWith")
    if isinstance(shared, list):
        lv.shared_with = ", ".join(str(s) for s in shared)
    return lv


def _device(src: Source, doc: dict, facts: dict[str, tuple[float, str]],
            levels: dict[str, Level], clock_mhz: float) -> DeviceInfo:
    general = doc["general"]
    compute = c if isinstance(c := doc.get("compute"), dict) else {}
    meta = m if isinstance(m := doc.get("meta"), dict) else {}
    cc = general.get("computeCapability")
    ccs = ""
    if isinstance(cc, dict):
        parts = (cc.get("major"), cc.get("minor"))
        if not all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 1000
                   for p in parts):
            raise _bad(src, "general.computeCapability", "{major, minor} as small integers")
        ccs = f"{parts[0]}.{parts[1]}"

    def fact(key: str, scale: Mapping[str, float]) -> float:
        v = facts.get(key)
        return v[0] * scale[v[1]] if v and v[1] in scale else 0.0

    l2 = levels.get("l2")
    l2_bytes = l2.sizes["size"][0] if l2 and "size" in l2.sizes else 0.0
    mem_mhz = fact("main.memoryClockRate", _CLOCK)
    bus = fact("main.memoryBusWidth", {"bit": 1, "bits": 1})
    sms = compute.get("multiProcessorCount", 0)
    if isinstance(sms, (int, float)) and not isinstance(sms, bool):
        sms = _num(src, sms, "compute.multiProcessorCount")
    vendor = str(general.get("vendor", ""))
    # DDR: two transfers per memory clock. Only NVIDIA reports that clock (HIP's is not, and
    # MT4G itself calls its theoretical bandwidth unreliable)
    peak = 2.0 * mem_mhz * 1e6 * bus / 8 / 1e9 if vendor.upper() == "NVIDIA" else 0.0
    return DeviceInfo(
        kind="mt4g", name=general["name"], compute_capability=ccs,
        sm_count=int(sms) if isinstance(sms, (int, float)) else 0, l2_bytes=int(l2_bytes),
        memory_bytes=int(_bytes(src, fact("main.totalGlobalMem", _BYTES),
                                "memory.main.totalGlobalMem")), clock_mhz=clock_mhz,
        memory_clock_mhz=mem_mhz, memory_bus_bits=int(bus),
        driver=str(meta.get("driver", "")), runtime=str(meta.get("runtime", "")),
        peak_bandwidth_gbs=round(peak, 2), extra={"vendor": vendor, "reported_by": TOOL})


# ---------------------------------------------------------------------------------------------
# Raw data and findings
# ---------------------------------------------------------------------------------------------


def raw_dataset(p: Parsed, src: Source) -> xr.Dataset:
    """MT4G's per-level table as a labeled dataset (dimension ``level``), plus the file."""
    names = list(p.levels)
    n = len(names)
    lv = [p.levels[k] for k in names]
    data: dict[str, tuple] = {}

    def column(get, dtype=float) -> np.ndarray:
        return np.array([get(x) for x in lv], dtype=dtype)

    for s in _STATS:
        col = column(lambda x, s=s: x.latency.get(s, math.nan))
        if np.isfinite(col).any():
            data[f"latency_{s}"] = var("level", col, "cycle",
                                       f"MT4G load latency, {s} over its timed loads",
                                       comment=TIMER)
    for s, vn in (("measurements", "latency_measurements"), ("sampleSize",
                                                               "latency_sample_size")):
        col = column(lambda x, s=s: x.counts.get(s, math.nan))
        if np.isfinite(col).any():
            data[vn] = var("level", col, "1", f"MT4G latency benchmark: {s}")
    for fld, vn in _SIZE_FIELDS.items():
        col = column(lambda x, f=fld: x.sizes[f][0] if f in x.sizes else math.nan)
        if not np.isfinite(col).any():
            continue
        data[vn] = var("level", col, "byte", f"MT4G {fld}")
        data[f"{vn}_confidence"] = var(
            "level", column(lambda x, f=fld: x.sizes[f][1] if f in x.sizes else math.nan),
            "1", f"MT4G's confidence in {fld} (NaN: a device query)")
        data[f"{vn}_method"] = var(
            "level", column(lambda x, f=fld: x.sizes[f][2] if f in x.sizes else "", object),
            "1", f"how MT4G got {fld}")
    for fld, vn, units in (("missPenalty", "miss_penalty", "cycle"),
                           ("readBandwidth", "read_bandwidth", "GiB/s"),
                           ("writeBandwidth", "write_bandwidth", "GiB/s")):
        col = column(lambda x, f=fld: x.values[f][0] if f in x.values else math.nan)
        if np.isfinite(col).any():
            data[vn] = var("level", col, units, f"MT4G {fld}")
    col = column(lambda x: x.amount)
    if np.isfinite(col).any():
        data["amount_per_sm"] = var("level", col, "1", "MT4G: instances per multiprocessor")
    col = column(lambda x: x.shared_with, object)
    if any(col):
        data["shared_with"] = var("level", col, "1", "MT4G: levels that share the storage")
    data["point_status"] = point_status("level", n)
    data["source_text"] = ((), np.array(src.text(EXPECTED), dtype=object),
                           {"units": "1", "long_name": f"the imported file {src.path.name}, "
                                                       f"verbatim"})
    return xr.Dataset(data, coords={"level": ("level", np.array(names, dtype=object), {
        "units": "1", "long_name": "MT4G memory level (its key under 'memory')"})})


def _lat_conf(x: Level) -> float:
    mean, sd = x.latency.get("mean", math.nan), x.latency.get("stdev", math.nan)
    if not (mean > 0 and math.isfinite(sd)):
        return 1.0
    return float(np.clip(1 - sd / mean, 0, 1))


def build(p: Parsed, src: Source) -> list[Imported]:
    """One :class:`Imported` per gpumem experiment, each with the whole raw table."""
    out: dict[str, list[Finding]] = {e: [] for e in ("latency", "cache_structure",
                                                     "smem_latency", "bandwidth",
                                                     "bandwidth_levels")}
    lv = p.levels
    clock = p.device.clock_mhz

    def latency(exp: str, name: str, level: str, twin: bool) -> None:
        x = lv.get(level)
        if x is None or "p50" not in x.latency:
            return
        v = x.latency["p50"]
        n = int(x.counts.get("measurements", 0))
        what = CACHES.get(level, ("", {"main": "main-memory", "shared": "shared-memory"}
                                  .get(level, level)))[1]
        how = f"{n} timed loads" if n else "its timed loads"
        conv = x.latency_note or "cycles as MT4G reports them"
        method = (f"MT4G {what} load latency (its p50 of {how}), {BENCH.get(level, 'p-chase')}; "
                  f"{conv}; {TIMER}")
        conf = _lat_conf(x)
        out[exp].append(Finding(name, round(v, 2), "cycle", conf, method))
        if twin and clock > 0:
            out[exp].append(Finding(f"{name}_ns", round(v / clock * 1e3, 3), "ns", conf,
                                    method + f"; cycles / {clock:g} MHz (MT4G's "
                                             f"general.clockRate)"))

    def size(exp: str, name: str, level: str, fld: str, what: str) -> None:
        x = lv.get(level)
        if x is None or fld not in x.sizes:
            return
        v, conf, how, note = x.sizes[fld]
        if how == "device query":
            method = f"MT4G {what}: a device query (not measured)"
            conf = 1.0
        else:
            if conf == 0:
                p.warnings.append(f"memory.{level}.{fld}: MT4G's confidence is 0 (its "
                                  f"benchmark gave up): not mapped to {name}")
                return
            method = f"MT4G {what} ({how}, change point found by its KS test, confidence " \
                     f"{conf:.3f})" if fld in ("size", "segmentSize") else \
                f"MT4G {what} ({how}, confidence {conf:.3f})"
            conf = 1.0 if math.isnan(conf) else conf
        if note:
            method += f"; {note}"
        out[exp].append(Finding(name, int(round(v)), "byte", float(conf), method))

    latency("latency", "lat.l1", "l1", True)
    latency("latency", "lat.l2", "l2", True)
    latency("latency", "lat.dram_tlb_miss", "main", True)
    size("latency", "l1d.size", "l1", "size", "L1 size")
    size("latency", "l2.size", "l2", "size", "L2 size")
    l2 = lv.get("l2")
    if l2 and "segmentSize" in l2.sizes and "size" in l2.sizes \
            and l2.sizes["segmentSize"][0] < l2.sizes["size"][0]:
        size("latency", "l2.near_size", "l2", "segmentSize",
             "L2 segment size: the share of the L2 one SM sees at the near latency, snapped "
             "by MT4G to a divisor of the L2 size")
    for level, (prefix, what) in CACHES.items():
        latency("cache_structure", f"{prefix}.hit_latency", level, False)
        if level not in ("l1", "l2"):
            size("cache_structure", f"{prefix}.overflow_size", level, "size", f"{what} size")
        size("cache_structure", f"{prefix}.line", level, "lineSize",
             f"{what} line size (its heuristic; MT4G's README: not guaranteed)")
        size("cache_structure", f"{prefix}.sector", level, "fetchGranularity",
             f"{what} fetch granularity: bytes one miss brings in")
    latency("smem_latency", "lat.smem", "shared", False)
    _bandwidths(p, out)
    raw = raw_dataset(p, src)
    return [Imported(exp, raw, fs, points=len(lv)) for exp, fs in out.items()]


def _bandwidths(p: Parsed, out: dict[str, list[Finding]]) -> None:
    note = "MT4G calls its bandwidths not optimal: one fixed launch configuration"

    def bw(exp: str, name: str, level: str, fld: str, what: str) -> float | None:
        x = p.levels.get(level)
        if x is None or fld not in x.values:
            return None
        gib, conv = x.values[fld]
        v = round(gib * GIB_PER_GB, 2)
        method = (f"MT4G {what} (mean over its rounds, one launch configuration); "
                  f"{gib:.2f} GiB/s x {GIB_PER_GB} GB/GiB" + (f" ({conv})" if conv else ""))
        out[exp].append(Finding(name, v, "GB/s", 0.5, method, note=note))
        return v

    read = bw("bandwidth", "bw.dram_read", "main", "readBandwidth",
              "main-memory read bandwidth over a quarter of the device memory")
    bw("bandwidth", "bw.dram_write", "main", "writeBandwidth",
       "main-memory write bandwidth over a quarter of the device memory")
    peak = p.device.peak_bandwidth_gbs
    if read is not None and peak > 0:
        out["bandwidth"].append(Finding(
            "bw.dram_read_fraction", round(read / peak, 4), "1", 0.5,
            f"bw.dram_read / theoretical {peak:.1f} GB/s (MT4G's memory.main.memoryClockRate "
            f"x memoryBusWidth x 2, as gpumem computes it)", note=note))
    bw("bandwidth_levels", "bw.l2", "l2", "readBandwidth",
       "L2 read bandwidth over a footprint of the whole L2 (near and far partitions)")
