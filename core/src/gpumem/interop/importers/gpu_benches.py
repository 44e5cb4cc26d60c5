"""``gpumem import gpu-benches FILE``: the stdout of an RRZE gpu-benches benchmark as a run.

FILE is what ``gpu-latency``, ``gpu-stream`` or ``gpu-l2-cache`` (github RRZE-HPC/gpu-benches,
read at commit 1038c5d) printed. Which one is told by the content alone (a file with rows of
two benchmarks is refused). A line that is not that benchmark's (its header, its data rows,
gpu-latency's ``clock:`` line, blank lines) -- a shell's ``Command exited with non-zero status
124`` after a ``timeout``, a comment, a row cut off mid-way -- is skipped with one warning
naming every skipped line; the import fails only when no data row is left:

* **gpu-latency** (``gpu-latency/main.cu``): ``clock: MHz ...`` then rows ``iters clock
  footprint[kB] time[ms] mean median p5 p95`` (cycles per load of a single-thread chase
  through randomly ordered 128-B lines; statistics over 21 runs, the mean without the fastest
  and slowest). Raw: those columns over ``footprint``. Findings (``latency``): plateaus of
  the median curve (gpumem's own ``find_plateaus``, 8 % tolerance, a level spanning at
  least 2x in footprint): ``lat.l1`` = the first plateau where the next one is at least 4x
  slower (an NVIDIA L1, not AMD's 1.7-1.9x L0/L1
  steps), ``l1d.size`` = its last footprint, ``lat.l2`` = the next plateau; and
  ``lat.dram_tlb_miss`` = the median at the largest footprint where that is >= 1 GiB (a
  random walk over lines, nearly every load on a new page: gpumem's method for that name).
  ``_ns`` twins use the printed clock. Not mapped: ``lat.l2_far``, ``lat.dram`` and the L2
  sizes: the curve alone does not tell a far L2 partition from DRAM or another cache level.
* **gpu-stream** (``gpu-stream/main.cu``, the format since commit 2952d3f): rows ``block
  threads blocks/SM occupancy% | GB/s: init read scale triad 3pt 5pt`` (the printed header
  swaps the names of columns 2 and 3), each the median of 31 runs over 2 GiB per array.
  Raw: bandwidth over ``launch`` x ``kernel``. Findings (``bandwidth``): ``bw.dram_read`` =
  best ``read``, ``bw.dram_write`` = best ``init`` (one store per thread), ``bw.dram_copy``
  = best ``scale`` (A = 1.2 B: one read and one write stream, both counted, as gpumem counts
  a copy). Not mapped: triad and the stencils (no gpumem name), ``bw.dram_read_fraction``
  (no memory clock or bus width printed).
* **gpu-l2-cache** (``gpu-l2-cache/main.cu``): rows ``per-block kB, data set kB, time ms,
  spread %, bandwidth GB/s`` and four counter columns (0 unless the tool was built with its
  counter measurement on). Raw: those over ``footprint`` (the data set). Finding
  (``bandwidth_levels``): ``bw.l2_gpu_l2_cache`` = the best bandwidth on the first plateau
  of the bandwidth curve (8 % tolerance, spanning at least 2x in data set; isolated points
  at the smallest data sets, which other caches inflate, are not on it), given the curve
  later falls below 1/1.5 of it (so the plateau is a cache level, not DRAM). It is not
  gpumem's ``bw.l2`` and is not filed as one: gpu-l2-cache's blocks on many SMs read each
  chunk, and part of what they receive the L2's request coalescer merged before the slices
  (on an H200 22.5 % of the sectors at 1.5 MB, where it read 11.9 TB/s and ``bw.l2``, each
  block its own lines, 9.0: benchmarks/README.md), so lined up as one name ``gpumem
  compare`` would print a 25 % "difference" between two measurements of different things.
  Not mapped: the DRAM plateau (one fixed launch, not gpumem's best over a launch grid;
  gpu-stream's import gives ``bw.dram_read``).

None of the three prints the device name; it is recorded as not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from gpumem.analysis.plateaus import Plateau, find_plateaus
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

TOOL = "gpu-benches"
REPO = "github RRZE-HPC/gpu-benches"
COMMIT = "1038c5d0d0f48cfe9912930d34eb2d8a31b72b9b"
EXPECTED = "the stdout of gpu-latency, gpu-stream or gpu-l2-cache (RRZE-HPC/gpu-benches)"
GIB = 2**30
L1_STEP = 4.0          # next plateau this much slower: the first one is an NVIDIA L1
LEVEL_DROP = 1.5       # a later plateau this much lower: the first one is a cache level
#: gpu-l2-cache's figure: its own name, never lined up with gpumem's ``bw.l2``
L2_NAME = "bw.l2_gpu_l2_cache"
LEVEL_SPAN = 2.0       # a level spans at least this factor in footprint; shorter runs are
                       # steps of a gradual transition (an L40's L1 -> L2 passes 111, 171, 219)
#: the largest number a row may hold: the rows' digits have no limit, and beyond it
#: footprints in bytes would wrap in int64 (silently) and int() refuses 4300 digits
MAX_NUMBER = 1e15
KERNELS = ("init", "read", "scale", "triad", "stencil1d3pt", "stencil1d5pt")
STREAMS = (1, 1, 2, 4, 2, 2)  # arrays whose bytes each kernel counts (gpu-stream main.cu)

_N = r"(\d+(?:\.\d+)?)"
_CLOCK = re.compile(r"^clock:((?:\s+\d+)*)\s*$")
_LAT = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+" + r"\s+".join([_N] * 6) + r"\s*$")
_STREAM_HEAD = re.compile(r"^\s*block\s+smBlocks\s+threads\s+occ%\s*\|\s*init\s+read\s+scale"
                          r"\s+triad\s+3pt\s+5pt\s*$")
_STREAM_OLD = re.compile(r"^\s*blockSize\s+threads\s+%occ\s*\|")
_STREAM = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+" + _N + r"%\s*\|\s*GB/s:"
                     + r"\s+" + r"\s+".join([_N] * 6) + r"\s*$")
_L2_HEAD = re.compile(r"^\s*data set\s+exec time\s+spread\s+Eff\. bw\s*$")
_L2 = re.compile(r"^\s*(\d+) kB\s+(\d+) kB\s+(\d+)ms\s+" + _N + r"%\s+" + _N + r" GB/s"
                 + r"((?:\s+\S+ GB/s){4})?\s*$")

#: per benchmark: (data-row pattern, other lines it prints, what a row holds)
GRAMMAR = {
    "gpu-latency": (_LAT, (_CLOCK,), "'iters clock kB ms mean median p5 p95' rows after a "
                                     "'clock:' line"),
    "gpu-stream": (_STREAM, (_STREAM_HEAD,), "'block threads blocks/SM occ% | GB/s: init read "
                                             "scale triad 3pt 5pt' rows"),
    "gpu-l2-cache": (_L2, (_L2_HEAD,), "'N kB  N kB  Nms  N%  N GB/s' rows"),
}


@dataclass
class Lines:
    """The file's non-blank lines with their line numbers."""

    src: Source
    rows: list[tuple[int, str]]


class GpuBenchesFormat(Format):
    name = "gpu-benches"
    summary = ("stdout of RRZE gpu-benches gpu-latency, gpu-stream or gpu-l2-cache (told "
               "apart by content) -> a gpumem run directory")
    imports = "run"

    def import_file(self, source: Path, out: Path, *, arch: str | None = None,
                    plugins: PluginSet) -> Converted:
        check_out(out)
        src = read_source(source)
        lines = _lines(src)
        bench, skipped = detect_lines(lines)
        imported, device, extra, warnings = PARSERS[bench](lines)
        if skipped:
            warnings.insert(0, skipped_warning(src, bench, skipped))
        arch = resolve_arch(plugins, arch)
        if not imported.findings:
            warnings.append(f"{src.path}: no {bench} value maps to a gpumem finding; the run "
                            f"holds its raw data only")
        provenance = {
            "import_tool": f"{TOOL} {bench}", "import_tool_version":
                f"unknown (the output does not say; format read at {REPO} {COMMIT[:7]})",
            "import_benchmark": bench, "import_source_file": src.path.name,
            "import_source_sha256": src.sha256,
            "import_device_name": f"not reported ({bench} does not print it)",
            "import_format_source": f"{REPO} {bench}/main.cu at {COMMIT}",
            **extra,
        }
        write_run(out, [imported], source=src, tool=TOOL, benchmark=bench, device=device,
                  arch=arch, provenance=provenance, references=f"{REPO} ({bench})",
                  fmt=self.name, plugins=plugins)
        return Converted([Path(out)], warnings)


# ---------------------------------------------------------------------------------------------
# Telling the benchmarks apart
# ---------------------------------------------------------------------------------------------


def _lines(src: Source) -> Lines:
    text = src.text(EXPECTED)
    if not text.strip():
        raise FormatError(f"{src.path}: empty file; expected {EXPECTED}")
    return Lines(src, [(i, ln.rstrip("\r")) for i, ln in enumerate(text.split("\n"), 1)
                       if ln.strip()])


def detect(lines: Lines) -> str:
    """The benchmark whose data rows the file holds (lines that are not its own are dropped
    from ``lines``; :func:`detect_lines` also returns them)."""
    return detect_lines(lines)[0]


def detect_lines(lines: Lines) -> tuple[str, list[tuple[int, str]]]:
    """The benchmark whose data rows the file holds, and the lines that are not its own
    (line number, text), which are removed from ``lines.rows``: a real capture can end with
    a shell's "Command exited with non-zero status 124" or carry a comment. Fails when the
    file holds rows of several benchmarks, or none."""
    src = lines.src
    for _i, ln in lines.rows:
        if _STREAM_OLD.match(ln):
            raise FormatError(f"{src.path}: gpu-stream output of a version before commit "
                              f"2952d3f (header 'blockSize threads %occ'): not supported; "
                              f"expected the current format of {EXPECTED}")
    seen = {b for b, (row, _o, _w) in GRAMMAR.items() for _i, ln in lines.rows if row.match(ln)}
    if len(seen) != 1:
        i, first = lines.rows[0]
        why = "rows of several benchmarks" if seen else f"line {i} reads {_clip(first)!r}"
        raise FormatError(f"{src.path}: not gpu-benches output ({why}); expected {EXPECTED}")
    bench = seen.pop()
    row, others, _what = GRAMMAR[bench]
    keep, skipped = [], []
    for i, ln in lines.rows:
        if row.match(ln) or any(o.match(ln) for o in others):
            keep.append((i, ln))
        else:
            skipped.append((i, ln))
    lines.rows = keep
    return bench, skipped


MAX_SKIPPED_SHOWN = 5


def skipped_warning(src: Source, bench: str, skipped: list[tuple[int, str]]) -> str:
    """One line naming the skipped lines (number and text, clipped; the CLI escapes control
    characters when it prints it)."""
    shown = ", ".join(f"line {i} {_clip(ln)!r}" for i, ln in skipped[:MAX_SKIPPED_SHOWN])
    more = len(skipped) - MAX_SKIPPED_SHOWN
    return (f"{src.path}: skipped {len(skipped)} line(s) that are not {bench} output: "
            f"{shown}{f', and {more} more' if more > 0 else ''}")


def _clip(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 3] + "..."


def _bounded(lines: Lines, a: np.ndarray, rows: list[int], what: str) -> None:
    """Refuse a row holding a number beyond :data:`MAX_NUMBER` (``a``: the parsed columns
    to check, one row per line number in ``rows``)."""
    bad = ~(np.abs(a) <= MAX_NUMBER)
    if bad.any():
        k = int(np.argmax(bad.any(axis=1)))
        raise FormatError(f"{lines.src.path}: line {rows[k]}: a number too large for {what} "
                          f"(at most {MAX_NUMBER:g}); expected {EXPECTED}")


def _increasing(lines: Lines, x: list[float], rows: list[int], what: str) -> None:
    for k in range(1, len(x)):
        if x[k] <= x[k - 1]:
            raise FormatError(f"{lines.src.path}: line {rows[k]}: {what} {x[k]:g} is not "
                              f"larger than the previous row's (two runs in one file?)")


def _device(**kw) -> DeviceInfo:
    base: dict[str, Any] = dict(
        kind="gpu-benches", name="", compute_capability="", sm_count=0, l2_bytes=0,
        memory_bytes=0, clock_mhz=0.0, extra={"reported_by": TOOL})
    base.update(kw)
    return DeviceInfo(**base)


def _source_text(src: Source) -> tuple:
    return ((), np.array(src.text(EXPECTED), dtype=object),
            {"units": "1", "long_name": f"the imported file {src.path.name}, verbatim"})


# ---------------------------------------------------------------------------------------------
# gpu-latency
# ---------------------------------------------------------------------------------------------


def _plateau_conf(p: Plateau) -> float:
    """gpumem's latency-ladder confidence of a plateau: its spread and its length."""
    return float(np.clip((1 - 5 * p.spread) * min(1.0, p.count / 3), 0, 1))


def parse_latency(lines: Lines):
    vals, nums, clocks = [], [], []
    for i, ln in lines.rows:
        m = _CLOCK.match(ln)
        if m:
            read = m.group(1).split()
            if any(len(c) > 15 for c in read):
                raise FormatError(f"{lines.src.path}: line {i}: a clock reading too large "
                                  f"(at most 15 digits); expected {EXPECTED}")
            clocks += [int(c) for c in read]
            continue
        row = _LAT.match(ln)
        assert row is not None  # Lines kept only the rows _LAT or _CLOCK matches
        vals.append([float(g) for g in row.groups()])
        nums.append(i)
    a = np.array(vals)
    _bounded(lines, a, nums, "a gpu-latency row")
    foot = np.round(a[:, 2] * 1024).astype(np.int64)
    _increasing(lines, foot.tolist(), nums, "footprint")
    clock = float(np.median(a[:, 1]))
    raw = xr.Dataset({
        "iterations": var("footprint", a[:, 0].astype(np.int64), "1",
                          "dependent loads timed per run"),
        "clock_mhz": var("footprint", a[:, 1], "MHz",
                         "SM clock the tool read from NVML before the sweep; cycles = time x it"),
        "time_ms": var("footprint", a[:, 3], "ms", "kernel time, mean of 21 runs without the "
                                                  "fastest and slowest"),
        "latency_mean": var("footprint", a[:, 4], "cycle", "cycles per load, mean of 21 runs "
                                                         "without the fastest and slowest"),
        "latency_median": var("footprint", a[:, 5], "cycle", "cycles per load, median of "
                                                           "21 runs"),
        "latency_p5": var("footprint", a[:, 6], "cycle", "cycles per load, 5th percentile of "
                                                       "21 runs"),
        "latency_p95": var("footprint", a[:, 7], "cycle", "cycles per load, 95th percentile "
                                                        "of 21 runs"),
        "point_status": point_status("footprint", len(foot)),
        "source_text": _source_text(lines.src),
    }, coords={"footprint": ("footprint", foot, {
        "units": "byte", "long_name": "bytes spanned by the chase (printed in kB = KiB, one "
                                      "decimal: +-51 B)"})})
    if clocks:
        raw.attrs["clock_readings_mhz"] = np.asarray(clocks, dtype=np.int32)
    findings = latency_findings(foot.astype(float), a[:, 5], a[:, 6], a[:, 7], clock)
    return Imported("latency", raw, findings, points=len(foot)), _device(clock_mhz=clock), \
        {}, []


def latency_findings(x: np.ndarray, med: np.ndarray, p5: np.ndarray, p95: np.ndarray,
                     clock: float) -> list[Finding]:
    out: list[Finding] = []
    levels = find_plateaus(x, med, min_span=LEVEL_SPAN)
    base = ("gpu-latency: median over 21 runs of the mean cycles per load of a single-thread "
            "chase through randomly ordered 128-B lines")

    def lat(name: str, v: float, conf: float, method: str) -> None:
        out.append(Finding(name, round(v, 2), "cycle", conf, method))
        if clock > 0:
            out.append(Finding(f"{name}_ns", round(v / clock * 1e3, 3), "ns", conf,
                               method + f"; cycles / {clock:g} MHz (the clock it printed)"))

    if len(levels) >= 2 and levels[1].latency >= L1_STEP * levels[0].latency:
        l1, l2 = levels[0], levels[1]
        lat("lat.l1", l1.latency, _plateau_conf(l1),
            f"{base}; first plateau ({l1.first_x:.0f}-{l1.last_x:.0f} B), the next one "
            f">= {L1_STEP:g}x slower")
        nxt = float(x[x > l1.last_x].min())
        out.append(Finding("l1d.size", int(l1.last_x), "byte", round(l1.last_x / nxt, 4),
                           f"{base}: last footprint on the first (L1) plateau",
                           note=f"capacity between {int(l1.last_x)} and {int(nxt)} B"))
        lat("lat.l2", l2.latency, _plateau_conf(l2),
            f"{base}; second plateau ({l2.first_x:.0f}-{l2.last_x:.0f} B), the one after L1")
    big = int(np.argmax(x))
    if x[big] >= GIB:
        v = float(med[big])
        conf = float(np.clip(1 - (p95[big] - p5[big]) / (2 * v), 0, 1)) if v > 0 else 0.0
        lat("lat.dram_tlb_miss", v, conf,
            f"{base}; at its largest footprint ({int(x[big]) >> 20} MiB): each load on a new "
            f"line, nearly every one on a new page")
    return out


# ---------------------------------------------------------------------------------------------
# gpu-stream
# ---------------------------------------------------------------------------------------------


def parse_stream(lines: Lines):
    matched = [(i, m) for i, ln in lines.rows if (m := _STREAM.match(ln))]
    a = np.array([[float(g) for g in m.groups()] for _i, m in matched])
    _bounded(lines, a, [i for i, _m in matched], "a gpu-stream row")
    n = len(a)
    block, threads, per_sm = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), \
        a[:, 2].astype(np.int64)
    sms = {int(t // (b * s)) for t, b, s in zip(threads, block, per_sm, strict=True)
           if b * s and not t % (b * s)}
    raw = xr.Dataset({
        "bandwidth": var(("launch", "kernel"), a[:, 4:10], "GB/s",
                         "bytes of the counted arrays / median time of 31 runs (10^9 B/s)"),
        "point_status": point_status("launch", n),
        "source_text": _source_text(lines.src),
    }, coords={
        "launch": ("launch", np.arange(n), {"units": "1", "long_name": "row of the output"}),
        "block_size": ("launch", block, {"units": "1", "long_name": "threads per block"}),
        "threads": ("launch", threads, {"units": "1",
                                        "long_name": "threads resident at once: SMs x block "
                                                     "x blocks per SM"}),
        "blocks_per_sm": ("launch", per_sm, {"units": "1",
                                             "long_name": "blocks per SM (a shared-memory "
                                                          "spoiler limits occupancy)"}),
        "occupancy": ("launch", a[:, 3], {"units": "percent",
                                          "long_name": "threads per SM / max threads per SM"}),
        "kernel": ("kernel", np.array(KERNELS, dtype=object),
                   {"units": "1", "long_name": "gpu-stream kernel"}),
        "streams": ("kernel", np.array(STREAMS, dtype=np.int64),
                    {"units": "1", "long_name": "2-GiB arrays whose bytes the kernel counts"}),
    })
    out: list[Finding] = []
    what = {"read": ("bw.dram_read", "'read' kernel: one load of a double per thread"),
            "init": ("bw.dram_write", "'init' kernel: one store of a double per thread"),
            "scale": ("bw.dram_copy", "'scale' kernel A = 1.2 B: one read and one write "
                                      "stream, bytes of both counted")}
    for kernel in ("read", "init", "scale"):
        name, how = what[kernel]
        col = a[:, 4 + KERNELS.index(kernel)]
        k = int(np.argmax(col))
        out.append(Finding(name, round(float(col[k]), 2), "GB/s", 0.9,
                           f"gpu-stream {how}, 2 GiB per array; best over its {n} launch "
                           f"configurations of the median of 31 runs (at {block[k]} threads x "
                           f"{per_sm[k]} blocks per SM, {a[k, 3]:g} % occupancy)",
                           note="the tool prints no spread; rounded to 1 GB/s"))
    device = _device(sm_count=sms.pop() if len(sms) == 1 else 0)
    extra = {"import_sm_count_note": "SM count = printed threads / (block x blocks per SM)"}
    return Imported("bandwidth", raw, out, points=n), device, extra, []


# ---------------------------------------------------------------------------------------------
# gpu-l2-cache
# ---------------------------------------------------------------------------------------------


def _counter(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        return float("nan")


def parse_l2(lines: Lines):
    vals: list[list[float]] = []
    nums: list[int] = []
    for i, ln in lines.rows:
        m = _L2.match(ln)
        if not m:
            continue
        found = re.findall(r"(\S+) GB/s", m.group(6) or "")
        counters = [_counter(c) for c in found] or [float("nan")] * 4
        vals.append([float(g) for g in m.groups()[:5]] + counters)
        nums.append(i)
    a = np.array(vals)
    _bounded(lines, a[:, :5], nums, "a gpu-l2-cache row")  # the counters may be NaN
    foot = (a[:, 1] * 1024).astype(np.int64)
    _increasing(lines, foot.tolist(), nums, "data set")
    counter = "the tool's {} counter / time (0: built with its counter measurement off)"
    raw = xr.Dataset({
        "block_bytes": var("footprint", (a[:, 0] * 1024).astype(np.int64), "byte",
                           "bytes each block reads (printed in kB = KiB)"),
        "time_ms": var("footprint", a[:, 2], "ms", "fastest of 11 runs, whole ms"),
        "spread": var("footprint", a[:, 3], "percent", "(slowest - fastest) / mean of 11 runs"),
        "bandwidth": var("footprint", a[:, 4], "GB/s",
                         "bytes read / fastest time of 11 runs (10^9 B/s)"),
        **{f"counter_{c}": var("footprint", a[:, 5 + k], "GB/s", counter.format(c.replace(
            "_", " "))) for k, c in enumerate(("dram_read", "dram_write", "l2_read",
                                                "l2_write"))},
        "point_status": point_status("footprint", len(foot)),
        "source_text": _source_text(lines.src),
    }, coords={"footprint": ("footprint", foot, {
        "units": "byte", "long_name": "data set: bytes the blocks read, re-read across "
                                      "blocks (printed in kB = KiB)"})})
    warnings: list[str] = []
    out = l2_findings(foot.astype(float), a[:, 4], warnings, lines.src)
    return Imported("bandwidth_levels", raw, out, points=len(foot)), _device(), {}, warnings


def l2_findings(x: np.ndarray, bw: np.ndarray, warnings: list[str], src: Source
                ) -> list[Finding]:
    levels = find_plateaus(x, bw, min_span=LEVEL_SPAN)
    if len(levels) < 2 or levels[-1].latency > levels[0].latency / LEVEL_DROP:
        warnings.append(f"{src.path}: the bandwidth never falls below 1/{LEVEL_DROP:g} of its "
                        f"first plateau: cannot tell that plateau is the L2 (no "
                        f"{L2_NAME})")
        return []
    p = levels[0]
    on = (x >= p.first_x) & (x <= p.last_x)
    k = int(np.argmax(np.where(on, bw, -np.inf)))
    return [Finding(L2_NAME, round(float(bw[k]), 1), "GB/s", _plateau_conf(p),
                    f"gpu-l2-cache: best bandwidth (fastest of 11 runs) on the first plateau "
                    f"of bandwidth over data set ({int(p.first_x) >> 10}-{int(p.last_x) >> 10} "
                    f"KiB; 8 % tolerance, >= {LEVEL_SPAN:g}x in data set), at "
                    f"{int(x[k]) >> 10} KiB; the curve later falls to "
                    f"{levels[-1].latency:.0f} GB/s; blocks on other SMs share its lines, so "
                    f"part of it is requests merged before the L2's slices: not bw.l2 (each "
                    f"block its own lines)")]


PARSERS = {"gpu-latency": parse_latency, "gpu-stream": parse_stream, "gpu-l2-cache": parse_l2}
