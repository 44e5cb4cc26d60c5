"""Another tool's chase data, converted as docs/results.md ("Converting another tool's
chases") says, analysed by `gpumem analyze` (issue 14, item 5).

The chases come from a generator written here, independently of gpumem's simulator: a plain
LRU set-associative cache in Python, swept the way a simpler tool sweeps (a fixed list of
footprints at a 32-B stride, every access timed). gpumem must not claim more than such a
sweep shows: a capacity between two footprints is reported as such, a line without line
chases as not determinable; a missing field is one line naming it."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import xarray as xr

HIT, MISS = 30.0, 200.0
SIZE, LINE, WAYS = 8192, 64, 4          # the cache the generator models


def tiny_lru_latencies(footprint: int, stride: int, passes: int) -> tuple[np.ndarray, ...]:
    """(element index, latency) of every access of a sequential chase over ``footprint``
    bytes, ``passes`` passes after one warm-up pass, through an LRU cache of SIZE bytes,
    LINE-byte lines, WAYS ways (modulo set index)."""
    sets = SIZE // (LINE * WAYS)
    lru: list[list[int]] = [[] for _ in range(sets)]
    idx, lat = [], []
    for p in range(passes + 1):
        for off in range(0, footprint, stride):
            line = off // LINE
            s = lru[line % sets]
            hit = line in s
            if hit:
                s.remove(line)
            elif len(s) == WAYS:
                s.pop(0)
            s.append(line)
            if p:  # the first pass warms
                idx.append(off // 4)
                lat.append(HIT if hit else MISS)
    return np.array(idx), np.array(lat)


def convert(footprints: list[int], stride: int = 32, passes: int = 8) -> xr.Dataset:
    """The converter of docs/results.md: one chase per footprint, every access an event
    (threshold -inf), stage 'size'."""
    rows = [tiny_lru_latencies(f, stride, passes) for f in footprints]
    ev_chase = np.concatenate([np.full(len(i), k) for k, (i, _l) in enumerate(rows)])
    ds = xr.Dataset(
        {"stage": ("chase", ["size"] * len(rows)),
         "footprint": ("chase", footprints),
         "stride": ("chase", [stride] * len(rows)),
         "warmup": ("chase", [f // stride for f in footprints]),
         "record": ("chase", [len(i) for i, _l in rows]),
         "event_threshold": ("chase", [-np.inf] * len(rows)),
         "event_chase": ("event", ev_chase),
         "event_access": ("event", np.concatenate([np.arange(len(i)) for i, _l in rows])),
         "event_index": ("event", np.concatenate([i for i, _l in rows])),
         "event_latency": ("event", np.concatenate([lat for _i, lat in rows]))})
    ds.attrs["gpumem_experiment"] = "cache_structure"
    return ds


def analyze_in_a_process(path) -> tuple[int, dict, str]:
    """``gpumem analyze PATH --json`` in a child process: its real exit status and stderr."""
    p = subprocess.run([sys.executable, "-m", "gpumem", "analyze", str(path), "--json"],
                       capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout)["findings"] if p.returncode == 0 else {}), \
        p.stderr


def analyze(path) -> tuple[int, dict, str]:
    """:func:`analyze_in_a_process` in this process (the CLI's ``main``, its output
    captured), without a Python start of 2 s; the missing-field refusal keeps the child."""
    import contextlib
    import io

    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out, err = io.StringIO(), io.StringIO()
    reset_plugins()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["analyze", str(path), "--json"])
    return rc, (json.loads(out.getvalue())["findings"] if rc == 0 else {}), err.getvalue()


def test_the_generator_is_an_lru_cache():
    _i, lat = tiny_lru_latencies(SIZE, 32, 2)
    assert (lat == HIT).all()
    _i, lat = tiny_lru_latencies(SIZE + LINE, 32, 2)
    assert (lat == MISS).sum() == 2 * (WAYS + 1)  # one set, W + 1 lines missing each pass


def test_a_doubling_sweep_gives_a_bracket_not_a_capacity(tmp_path):
    """1-64 KB doubling: the capacity lies between 8 and 16 KB, and that is what is said."""
    path = tmp_path / "sweep.nc"
    convert([1024 << k for k in range(7)]).to_netcdf(path)
    rc, f, err = analyze(path)
    assert rc == 0, err
    size = f["l1d.overflow_size"]
    assert size["value"] is None and size["candidates"] == [8192, 16384]
    assert "bisection chases are missing" in size["note"]
    confident = {k: v for k, v in f.items() if v["confidence"] >= 0.9}
    assert "l1d.overflow_size" not in confident


def test_a_sweep_that_brackets_the_edge_gives_the_capacity_and_says_what_else_is_missing(
        tmp_path):
    path = tmp_path / "fine.nc"
    convert([1024, 2048, 4096, SIZE, SIZE, SIZE + 32, SIZE + 32, 16384]).to_netcdf(path)
    rc, f, err = analyze(path)
    assert rc == 0, err
    assert f["l1d.overflow_size"]["value"] == SIZE
    line = f["l1d.line"]
    assert line["value"] is None and "'line' chases" in line["note"]
    assert f["l1d.ways"]["value"] is None


def test_a_missing_field_is_one_line_naming_it(tmp_path):
    ds = convert([1024, 2048]).drop_vars("stage")
    ds.to_netcdf(tmp_path / "nostage.nc")
    rc, _f, err = analyze_in_a_process(tmp_path / "nostage.nc")
    assert rc == 1 and err.count("\n") == 1 and "'stage'" in err and "Traceback" not in err


def test_a_random_chain_without_its_seed_is_refused_in_one_line(tmp_path):
    ds = convert([1024, 2048])
    ds["order"] = ("chase", ["random", "random"])
    ds.to_netcdf(tmp_path / "noseed.nc")
    rc, _f, err = analyze(tmp_path / "noseed.nc")
    assert rc == 1 and err.count("\n") == 1 and "'seed'" in err
