"""Other tools' traces, honestly (issue 30, item 3): a chase log converted as
docs/results.md ("Converting another tool's chases") says, in that tool's units, analysed by
`gpumem analyze`: the right answer, or one line saying why not; never a traceback or a
confident wrong value.

The traces come from a tool written here, independently of gpumem's simulator and search:
an LRU set-associative cache (modulo set index) chased by a Mei & Chu style search of its own
(a size sweep bisected to 32 B, the line from a 4-B stride chase past the size, the ways from
one set overflowed at line stride), every access timed, latencies in cycles or in ns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.errors import ResultsFileError
from gpumem.results.io import open_raw

HIT, MISS = 30.0, 200.0     # cycles
CLOCK_MHZ = 1500.0
DATA = Path(__file__).parent / "data"
BYTES_PER = {"byte": 1, "bytes": 1, "B": 1, "KiB": 1024, "1024 byte": 1024, "kB": 1000}


# ---- the independent tool: an LRU cache and its own chase search -----------------------------

class LRU:
    def __init__(self, size: int, line: int, ways: int) -> None:
        self.size, self.line, self.ways = size, line, ways
        self.sets = size // (line * ways)

    def chase(self, footprint: int, stride: int, passes: int) -> tuple[np.ndarray, np.ndarray]:
        """(element index, latency in cycles) of every access of ``passes`` passes over a
        sequential cyclic chain, after one untimed warm-up pass from a cold cache."""
        sets: list[list[int]] = [[] for _ in range(self.sets)]
        offs = np.arange(0, footprint, stride)
        lines = offs // self.line
        hits = np.empty((passes, offs.size), bool)
        for p in range(passes + 1):
            last = -1
            for i, ln in enumerate(lines.tolist()):
                if ln == last:  # the line just touched is the most recent: a hit
                    hit = True
                else:
                    s = sets[ln % self.sets]
                    hit = ln in s
                    if hit:
                        s.remove(ln)
                    elif len(s) == self.ways:
                        s.pop(0)
                    s.append(ln)
                    last = ln
                if p:
                    hits[p - 1, i] = hit
        lat = np.where(hits, HIT, MISS).ravel()
        return np.tile(offs // 4, passes), lat


def search(cache: LRU, passes: int = 24, line_chase: bool = True) -> list[tuple]:
    """The tool's chases, as (stage, footprint, stride, element index[], latency[]):
    the requirements of docs/results.md, met by a search of the tool's own."""
    runs: list[tuple] = []

    def run(stage: str, footprint: int, stride: int, n: int = passes) -> np.ndarray:
        idx, lat = cache.chase(footprint, stride, n)
        runs.append((stage, footprint, stride, idx, lat))
        return lat

    def overflows(footprint: int) -> bool:  # some element misses in every pass
        lat = run("size", footprint, 32)
        per_element = (lat > (HIT + MISS) / 2).reshape(passes, -1).sum(axis=0)
        return bool(per_element.max() >= passes)

    run("size", 512, 32, max(passes, 64))            # calibration: cannot miss
    n = 1024
    while (run("size", n, 32) > (HIT + MISS) / 2).mean() < 0.1:
        n *= 2
    lo, hi = n // 2, n
    while hi - lo > 32:
        mid = (lo + hi) // 2 // 32 * 32
        if overflows(mid):
            hi = mid
        else:
            lo = mid
    run("size", lo, 32)
    run("size", hi, 32)                               # both sides of the edge twice
    size = lo

    def per_pass(k: int) -> float:
        lat = run("line", size + 4 * k, 4)
        return float((lat > (HIT + MISS) / 2).sum()) / max(passes, 1)

    if line_chase:
        base = per_pass(1)                            # the size plus one element
        lo_k, hi_k = 1, 257
        per_pass(hi_k)
        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            if per_pass(mid) > 1.5 * base:
                hi_k = mid
            else:
                lo_k = mid
        per_pass(hi_k - 1)
        per_pass(hi_k)                                # both sides of the jump twice
        line = 4 * (hi_k - 1)
    else:
        line = cache.line
        for k in (64, 65, 128, 129):
            per_pass(k)
    run("sets", size + line, line)
    return runs


def docs_converter():
    """The converter docs/results.md gives ("Converting another tool's chases"), as written."""
    text = (Path(__file__).parent.parent / "docs" / "results.md").read_text()
    section = text[text.index("### Converting another tool's chases"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("\nconvert(my_runs")]
    space: dict = {}
    exec(compile(code, "docs/results.md", "exec"), space)
    return space["convert"]


DOCS_CONVERT = docs_converter()


def convert(runs: list[tuple], latency_unit: str = "cycle", byte_unit: str = "byte",
            clock_mhz: float | None = None) -> xr.Dataset:
    """The tool's output in its own units (bytes in ``byte_unit``, latencies in
    ``latency_unit``), through the converter of docs/results.md."""
    per_byte = BYTES_PER[byte_unit]
    to_unit = {"cycle": 1.0, "ns": 1e3 / CLOCK_MHZ}[latency_unit]
    own = [(stage, fp / per_byte, st / per_byte, idx, lat * to_unit)
           for stage, fp, st, idx, lat in runs]
    return DOCS_CONVERT(own, byte_unit, latency_unit, clock_mhz)


def analyze_in_a_process(path: Path) -> tuple[int, dict, str]:
    """``gpumem analyze PATH --json`` in a child process: its real exit status and stderr."""
    p = subprocess.run([sys.executable, "-m", "gpumem", "analyze", str(path), "--json"],
                       capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout)["findings"] if p.returncode == 0 else {}), \
        p.stderr


def analyze(path: Path) -> tuple[int, dict, str]:
    """:func:`analyze_in_a_process` in this process (``gpumem analyze PATH --json`` through
    the CLI's ``main``, its output captured): the same answer without a Python start (2-3 s
    of imports) per file. Two tests keep the child process, a success and a refusal."""
    import contextlib
    import io

    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out, err = io.StringIO(), io.StringIO()
    reset_plugins()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["analyze", str(path), "--json"])
    return rc, (json.loads(out.getvalue())["findings"] if rc == 0 else {}), err.getvalue()


def one_line_refusal(rc: int, err: str) -> bool:
    return rc != 0 and err.count("\n") == 1 and "Traceback" not in err


CACHE = LRU(8192, 64, 4)


@pytest.fixture(scope="module")
def runs() -> list[tuple]:
    return search(CACHE)


def _right(f: dict, cache: LRU = CACHE) -> bool:
    return (f["l1d.overflow_size"]["value"] == cache.size and f["l1d.line"]["value"] ==
            cache.line and f["l1d.ways"]["value"] == cache.ways and
            f["l1d.sets"]["value"] == cache.sets)


# ---- the tool and its search ------------------------------------------------------------------

def test_the_tool_is_an_lru_cache():
    _i, lat = CACHE.chase(8192, 32, 2)
    assert (lat == HIT).all()
    _i, lat = CACHE.chase(8192 + 64, 64, 2)
    assert (lat == MISS).sum() == 2 * (CACHE.ways + 1)


def test_cycles_and_bytes_give_every_parameter(runs, tmp_path):
    convert(runs).to_netcdf(tmp_path / "t.nc")
    rc, f, err = analyze_in_a_process(tmp_path / "t.nc")
    assert rc == 0, err
    assert _right(f) and f["l1d.hit_latency"]["value"] == HIT


# ---- units ------------------------------------------------------------------------------------

def test_the_unit_table():
    from gpumem.interop.trace_units import byte_factor, seconds_factor
    assert [byte_factor(u) for u in ("B", "byte", "bytes", "kB", "KiB", "MiB", "GiB",
                                     "1024 byte", "1048576 byte", "kbyte", "Mbyte")] == \
        [1, 1, 1, 1000, 1024, 2**20, 2**30, 1024, 2**20, 1000, 10**6]
    assert byte_factor("KB") is None and byte_factor("furlong") is None
    assert byte_factor("b") is None  # bits are not bytes
    assert seconds_factor("ns") == 1e-9 and seconds_factor("\u00b5s") == 1e-6
    assert seconds_factor("cycle") is None


def test_ns_latencies_with_the_clock_are_cycles(runs, tmp_path):
    convert(runs, latency_unit="ns", clock_mhz=CLOCK_MHZ).to_netcdf(tmp_path / "ns.nc")
    rc, f, err = analyze(tmp_path / "ns.nc")
    assert rc == 0, err
    assert f["l1d.hit_latency"]["value"] == pytest.approx(HIT, abs=0.01)
    assert _right(f)


def test_ns_latencies_without_a_clock_are_refused_in_one_line(runs, tmp_path):
    convert(runs, latency_unit="ns").to_netcdf(tmp_path / "ns.nc")
    rc, _f, err = analyze_in_a_process(tmp_path / "ns.nc")
    assert one_line_refusal(rc, err), err
    assert "'ns'" in err and "clock_mhz" in err


@pytest.mark.parametrize("unit", ["KiB", "1024 byte", "bytes", "B"])
def test_footprints_in_other_byte_units_give_the_right_answer(runs, tmp_path, unit):
    convert(runs, byte_unit=unit).to_netcdf(tmp_path / "b.nc")
    rc, f, err = analyze(tmp_path / "b.nc")
    assert rc == 0, err
    assert _right(f)


@pytest.mark.parametrize("var,unit", [("footprint", "furlong"), ("event_latency", "furlong"),
                                      ("footprint", "KB"), ("event_latency", "byte"),
                                      ("record", "ns")])
def test_an_unknown_unit_is_refused_in_one_line_naming_it(runs, tmp_path, var, unit):
    ds = convert(runs[:3])
    ds[var].attrs["units"] = unit
    ds.to_netcdf(tmp_path / "u.nc")
    rc, _f, err = analyze(tmp_path / "u.nc")
    assert one_line_refusal(rc, err), err
    assert f"'{var}'" in err and f"'{unit}'" in err


def test_a_fraction_of_a_byte_is_refused(runs, tmp_path):
    ds = convert(runs[:3])
    ds["stride"].attrs["units"] = "kB"  # 32 kB of 32-B strides: fine; 0.5: not
    ds["stride"].values[:] = 0.0005
    ds.to_netcdf(tmp_path / "half.nc")
    rc, _f, err = analyze(tmp_path / "half.nc")
    assert one_line_refusal(rc, err) and "whole number of bytes" in err


def test_gpumem_files_pass_unchanged():
    """Every committed chase log (cycle / '1' + gpumem_units, byte, '1') is read as it is:
    the conversion returns the dataset itself, so its analysis cannot change."""
    from gpumem.interop.trace_units import to_analysis_units
    files = sorted(DATA.rglob("cache_structure-*.nc")) + \
        sorted(DATA.rglob("tlb_structure-*.nc"))
    assert len(files) >= 8
    for path in files:
        raw = open_raw(path)
        assert to_analysis_units(raw, path) is raw, path


def test_a_chase_log_without_units_reads_in_the_schemas_units(runs):
    from gpumem.interop.trace_units import to_analysis_units
    ds = convert(runs[:3])
    for v in ds.variables.values():
        v.attrs.pop("units", None)
    assert to_analysis_units(ds, "x.nc") is ds


def test_the_refusal_is_a_results_file_error(runs):
    from gpumem.interop.trace_units import to_analysis_units
    ds = convert(runs[:3], latency_unit="ns")
    with pytest.raises(ResultsFileError, match="clock_mhz"):
        to_analysis_units(ds, "x.nc")


# ---- data that cannot decide ------------------------------------------------------------------

def test_chases_of_one_pass_leave_the_size_unresolved_naming_passes(tmp_path):
    convert(search(CACHE, passes=1)).to_netcdf(tmp_path / "short.nc")
    rc, f, err = analyze(tmp_path / "short.nc")
    assert rc == 0, err
    size = f["l1d.overflow_size"]
    assert size["value"] is None, size
    assert "passes" in size["note"] and "fewer than twice" in size["note"]
    for name in ("line", "ways", "sets"):  # nothing structural claimed on a guessed size
        assert f.get(f"l1d.{name}", {"value": None})["value"] is None, f


def test_a_one_pass_sweep_gives_no_size_rather_than_a_wrong_one(tmp_path):
    """The issue's case: one pass per footprint over a sweep that brackets the edge. A
    one-pass chase never repeats a miss, so each looked like a fit and the largest
    footprint came out as the size at 0.5; now the size is unresolved, naming the passes."""
    fps = [1024, 2048, 4096, CACHE.size, CACHE.size + 32, 2 * CACHE.size]
    runs = [("size", 512, 32, *CACHE.chase(512, 32, 64))] + \
        [("size", f, 32, *CACHE.chase(f, 32, 1)) for f in fps]
    convert(runs).to_netcdf(tmp_path / "sweep.nc")
    rc, f, err = analyze(tmp_path / "sweep.nc")
    assert rc == 0, err
    size = f["l1d.overflow_size"]
    assert size["value"] is None, size
    assert "fewer than twice" in size["note"] and f"{CACHE.size + 32} B" in size["note"]


def test_without_a_chase_at_the_size_plus_one_element_the_line_is_unresolved(tmp_path):
    convert(search(CACHE, line_chase=False)).to_netcdf(tmp_path / "noline.nc")
    rc, f, err = analyze(tmp_path / "noline.nc")
    assert rc == 0, err
    assert f["l1d.overflow_size"]["value"] == CACHE.size
    line = f["l1d.line"]
    assert line["value"] is None
    assert f"{CACHE.size + 4} B" in line["note"] and "plus one element" in line["note"]


def test_too_few_accesses_are_said(tmp_path):
    """A calibration chase of 16 accesses cannot bound the mis-timing rate tightly, and three
    passes then cannot show a clear overflow: no size is claimed, the note says why."""
    runs = search(CACHE, passes=3)
    stage, fp, st, idx, lat = runs[0]
    runs[0] = (stage, fp, st, idx[:16], lat[:16])
    convert(runs).to_netcdf(tmp_path / "few.nc")
    rc, f, err = analyze(tmp_path / "few.nc")
    assert rc == 0, err
    size = f["l1d.overflow_size"]
    assert size["value"] is None, size
    assert "too few accesses" in size["note"]


# ---- the figure: parameters recovered over several caches -----------------------------

CACHES = [LRU(s, b, w) for s, b, w in [
    (2048, 32, 2), (4096, 64, 2), (4096, 32, 4), (8192, 64, 4), (8192, 128, 2),
    (16384, 64, 8), (16384, 128, 4), (12288, 64, 3), (24576, 128, 6)]]


def recovered(paths_and_caches) -> tuple[int, int, int]:
    """(right, unresolved, confident wrong) over size, line, ways, sets of each cache."""
    right = unres = wrong = 0
    for path, cache in paths_and_caches:
        rc, f, _err = analyze(path)
        truth = {"overflow_size": cache.size, "line": cache.line, "ways": cache.ways,
                 "sets": cache.sets}
        for name, want in truth.items():
            got = f.get(f"l1d.{name}", {"value": None}) if rc == 0 else {"value": None}
            if got["value"] == want:
                right += 1
            elif got["value"] is None:
                unres += 1
            else:
                wrong += 1
    return right, unres, wrong


@pytest.fixture(scope="module")
def nine_searches() -> list[list[tuple]]:
    """The tool's chases of each of the nine caches (in its own units only once converted)."""
    return [search(cache) for cache in CACHES]


@pytest.mark.parametrize("latency_unit,byte_unit", [("ns", "KiB"), ("cycle", "1024 byte")])
def test_thirty_six_parameters_of_nine_caches(tmp_path, nine_searches, latency_unit,
                                              byte_unit):
    cases = []
    for k, cache in enumerate(CACHES):
        path = tmp_path / f"c{k}.nc"
        convert(nine_searches[k], latency_unit, byte_unit, CLOCK_MHZ).to_netcdf(path)
        cases.append((path, cache))
    assert recovered(cases) == (36, 0, 0)


def test_gpumem_cf_files_read_as_cycles_even_without_gpumem_units(runs):
    """gpumem writes a cycle count as units '1' with a long_name saying "clock cycles"
    (docs/results.md, "Units"): with gpumem_units dropped (a CF tool rewrote the file) it is
    still read as cycles; a bare '1' on a latency without that long_name is refused."""
    from gpumem.contracts.units import HUMAN_ATTR, encode
    from gpumem.interop.trace_units import to_analysis_units
    ds = encode(convert(runs[:3]))
    assert ds["event_latency"].attrs["units"] == "1"
    for v in ds.variables.values():
        v.attrs.pop(HUMAN_ATTR, None)
    assert to_analysis_units(ds, "x.nc") is ds
    ds["event_latency"].attrs["long_name"] = "latency"
    with pytest.raises(ResultsFileError, match="'event_latency' has units '1'"):
        to_analysis_units(ds, "x.nc")


def test_the_plain_analyze_table_says_why_a_finding_is_unresolved(tmp_path, capsys):
    """Without --json, the reason (which chase is missing) follows the table."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    reset_plugins()
    path = tmp_path / "short.nc"
    convert(search(CACHE, passes=1)).to_netcdf(path)
    code = main(["analyze", str(path)])
    text = capsys.readouterr().out
    assert code == 0
    why = [ln for ln in text.splitlines() if ".overflow_size (unresolved): " in ln or
           ".size (unresolved): " in ln]
    assert why and "fewer than twice" in why[0], text[-2000:]


def _nan_latencies(ds):
    for v in ("event_latency", "median_latency"):
        if v in ds:
            ds[v].values[...] = np.nan
    return ds


def _short_events(ds):
    import xarray as xr

    d = ds["event_latency"].dims[0]
    short = ds["event_latency"].values[:ds.sizes[d] // 2]
    out = ds.drop_vars("event_latency")
    out["event_latency"] = xr.DataArray(short, dims=(d + "_short",),
                                        attrs=ds["event_latency"].attrs)
    return out


def _units(var, unit):
    def change(ds):
        ds[var].attrs["units"] = unit
        return ds
    return change


def _zero_stride(ds):
    ds["stride"].values[:] = 0
    return ds


@pytest.mark.parametrize("damage, needle", [
    (_units("footprint", "0 byte"), "which scale by 0"),
    (_units("footprint", "1e400 byte"), "which scale by inf"),
    (_units("event_latency", "0 ns"), "which scale by 0"),
    (_nan_latencies, "no finite latency"),
    (_short_events, "the event variables differ in length"),
    (_zero_stride, "'stride' = 0 bytes"),
])
def test_a_log_no_analysis_can_read_is_refused_in_one_line(runs, tmp_path, damage, needle):
    """Issue 43: a zero or 1e400 unit (ZeroDivisionError; a capacity of -2**63), every
    latency NaN (a capacity at confidence 0.5 from no data), event_latency shorter than
    event_chase (IndexError), a zero stride (ZeroDivisionError)."""
    ds = damage(convert(runs, clock_mhz=CLOCK_MHZ))
    ds.to_netcdf(tmp_path / "bad.nc")
    rc, f, err = analyze(tmp_path / "bad.nc")
    assert one_line_refusal(rc, err) and needle in err, err
    assert not f


@pytest.mark.parametrize("clock", [1e-300, 0.0, float("nan"), 1e9])
def test_a_clock_no_gpu_runs_at_is_no_clock(runs, tmp_path, clock):
    """clock_mhz = 1e-300 once turned every latency into 0 cycles, read at confidence 1.00;
    0 and NaN read 'the file records no clock'."""
    convert(runs[:6], latency_unit="ns", clock_mhz=clock).to_netcdf(tmp_path / "c.nc")
    rc, _f, err = analyze(tmp_path / "c.nc")
    assert one_line_refusal(rc, err) and "no usable clock" in err, err


def test_a_megabyte_unit_makes_a_short_error(runs, tmp_path):
    ds = convert(runs[:3])
    ds["footprint"].attrs["units"] = "x" * (1 << 20)
    ds.to_netcdf(tmp_path / "u.nc")
    rc, _f, err = analyze(tmp_path / "u.nc")
    assert one_line_refusal(rc, err) and len(err) < 600, len(err)


@pytest.mark.parametrize("var, value", [("record", 1e12 * 2**10), ("record", -5),
                                        ("footprint", -4096)])
def test_a_count_or_size_no_chase_has_is_refused(runs, tmp_path, var, value):
    """A negative footprint and record = 1e12 passed without a word (issue 43)."""
    ds = convert(runs[:6])
    ds[var].values = np.full(ds[var].shape, value, dtype=np.float64)
    ds.to_netcdf(tmp_path / "n.nc")
    rc, _f, err = analyze(tmp_path / "n.nc")
    assert one_line_refusal(rc, err) and f"'{var}'" in err, err
