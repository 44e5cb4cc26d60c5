"""Every number with its uncertainty (issue 42, items 1 and 2): every measured finding of a
run carries a 95 % interval and its precision (runs taken, relative standard error reached,
why the runs stopped); a structural one shows "exact"; the statistics are the framework's,
checked on planted data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from gpumem.cells import fmt_interval
from gpumem.contracts.estimates import (
    MIN_RUNS_95,
    Estimate,
    constant,
    median_estimate,
    order_interval,
    rel_error,
)
from gpumem.contracts.findings import (
    STOP_REASONS,
    Finding,
    Precision,
    from_dataset,
    kind_of,
    to_dataset,
    with_precision,
)


@pytest.fixture(scope="module")
def quick_hopper(tmp_path_factory):
    """Every hopper experiment on the simulator, --quick (fixed repeats)."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out = tmp_path_factory.mktemp("unc") / "run"
    reset_plugins()
    assert main(["run", "--arch", "hopper", "all", "--device", "sim", "--quick",
                 "--out", str(out)]) == 0
    reset_plugins()
    return out


def _findings(run):
    manifest = json.loads((run / "manifest.json").read_text())
    return [(e["experiment"], n, f) for e in manifest["entries"].values()
            for n, f in (e.get("findings") or {}).items()]


def test_every_measured_finding_of_a_run_has_an_interval_and_a_precision(quick_hopper):
    rows = _findings(quick_hopper)
    measured = [(x, n, f) for x, n, f in rows if f["kind"] == "measured" and
                f.get("value") is not None]
    assert len(measured) >= 45
    missing = [(x, n) for x, n, f in measured if "interval" not in f]
    assert not missing, missing
    no_precision = [(x, n) for x, n, f in measured if "precision" not in f]
    assert not no_precision, no_precision
    for _x, n, f in measured:
        p = f["precision"]
        assert p["stopped"] in STOP_REASONS, (n, p)
        values = f["value"] if isinstance(f["value"], list) else [f["value"]]
        lo, hi = f["interval"]
        los = lo if isinstance(lo, list) else [lo]
        his = hi if isinstance(hi, list) else [hi]
        for v, a, b in zip(values, los, his, strict=True):
            assert a <= v <= b, (n, v, a, b)


def test_no_finding_shows_an_empty_interval_in_the_tables(quick_hopper):
    """What the run, show and report tables print in the interval column: a range for a
    measured finding, "exact" for a structural one, never '-'."""
    for _x, n, f in _findings(quick_hopper):
        if f.get("value") is None:
            continue  # unresolved: its candidates are shown instead
        assert fmt_interval(f.get("interval"), f["kind"]) != "-", n


def test_the_precision_survives_the_file(quick_hopper):
    from gpumem.results.io import open_findings

    (path,) = quick_hopper.glob("*/bandwidth-*.nc")
    fs = {f.name: f for f in from_dataset(open_findings(path))}
    p = fs["bw.dram_read"].precision
    assert p is not None and p.repeats == 3 and p.stopped == "fixed repeats"
    assert 0 <= p.rel_error < 0.05


@pytest.mark.parametrize("n, k", [(6, 0), (9, 1), (10, 1), (16, 3), (30, 9)])
def test_the_median_interval_is_the_innermost_pair_that_still_covers_95(n, k):
    lo, hi = order_interval(np.arange(n, dtype=float))
    assert (lo, hi) == (k, n - 1 - k)
    cover = 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    assert cover >= 0.95
    if k + 1 < n - 2 - k:
        tighter = 1 - 2 * sum(math.comb(n, i) for i in range(k + 2)) / 2 ** n
        assert tighter < 0.95


def test_the_interval_covers_the_median_95_percent_of_the_time():
    """Planted: 2000 sets of MIN_RUNS_95 and of 10 runs of a skewed distribution (a
    lognormal: slow launches) around a known median."""
    rng = np.random.default_rng(3)
    for n in (MIN_RUNS_95, 10, 16):
        hits = 0
        for _ in range(2000):
            x = rng.lognormal(0.0, 0.3, n)  # median exactly 1
            lo, hi = order_interval(x)
            hits += lo <= 1.0 <= hi
        assert hits / 2000 >= 0.94, (n, hits)


def test_precision_is_what_the_interval_says():
    x = np.array([100, 101, 99, 100.5, 99.5, 100.2, 100.1, 99.9, 100.0, 100.3])
    e = median_estimate(x)
    assert e.precision.repeats == 10
    assert e.precision.rel_error == pytest.approx((e.hi - e.lo) / (2 * 1.96 * e.value))
    assert rel_error([5.0] * 6) == 0.0 and math.isnan(rel_error([1.0]))


def test_derived_values_keep_their_uncertainty():
    a = Estimate(200.0, 190.0, 210.0, Precision(6, 0.025, "precision reached"))
    b = Estimate(100.0, 99.0, 101.0, Precision(8, 0.005, "most repeats"))
    r = a.over(b)
    assert r.value == 2.0 and r.lo == pytest.approx(190 / 101) and r.hi == pytest.approx(210 / 99)
    assert r.precision.repeats == 6 and r.precision.stopped == "precision reached"
    assert r.precision.rel_error == pytest.approx(math.hypot(0.025, 0.005))
    d = a.minus(b)
    assert (d.value, d.lo, d.hi) == (100.0, 89.0, 111.0)
    s = constant(4.0).over(b)
    assert s.lo == pytest.approx(4 / 101) and s.hi == pytest.approx(4 / 99)
    w = a.rounded(0)
    assert w.lo <= w.value <= w.hi


def test_a_finding_without_runs_takes_its_precision_from_its_interval():
    f = Finding("lat.l2", 280.0, "cycle", interval=(276.0, 284.0))
    (g,) = with_precision([f])
    assert g.precision == Precision(0, pytest.approx(8 / (2 * 1.96 * 280)), "fixed sample")
    s = Finding("l1d.line", 128, "byte")
    assert kind_of(s) == "structural" and with_precision([s])[0].precision is None
    assert fmt_interval(None, "structural") == "exact" and fmt_interval(None) == "-"


def test_precision_round_trips_through_the_netcdf_attributes():
    f = Finding("bw.l1", 32000.0, "GB/s", interval=(31900.0, 32100.0),
                precision=Precision(7, 0.0016, "precision reached"))
    (g,) = from_dataset(to_dataset([f]))
    assert g.precision == f.precision
    assert f.as_dict()["precision"] == {"repeats": 7, "rel_error": 0.0016,
                                        "stopped": "precision reached"}


def test_a_committed_h200_run_reanalysed_gives_every_measured_finding_an_interval():
    """Files measured before the stopping rule (ten fixed repeats) analysed by this gpumem:
    every measured finding has its interval; their precision says 'fixed repeats'."""
    from pathlib import Path

    from gpumem.interop.compare import analyze_file
    from gpumem.plugin.registry import get_plugins

    run = Path(__file__).parent / "data" / "h200-reruns" / "run1"
    plugins = get_plugins()
    missing, judged = [], 0
    for path in sorted(run.glob("*/*.nc")):
        for f in analyze_file(plugins, path)[1]:
            if f.resolved and kind_of(f) == "measured":
                judged += 1
                if f.interval is None or f.precision is None:
                    missing.append(f.name)
    assert judged >= 50 and not missing, missing


def test_show_gives_each_findings_precision(quick_hopper, cli):
    from gpumem.cells import fmt_precision

    assert fmt_precision({"repeats": 6, "rel_error": 0.0029, "stopped": "precision reached"}) \
        == "+-0.29%, 6 runs, precision reached"
    assert fmt_precision({"repeats": 0, "rel_error": 0.001, "stopped": "fixed sample"}) \
        == "+-0.10%, fixed sample"
    assert fmt_precision(None) == "-"
    (path,) = quick_hopper.glob("*/bandwidth-*.nc")
    res = cli("show", str(path), "--json")
    assert res.code == 0
    text = res.out
    assert '"precision"' in text and '"fixed repeats"' in text


def test_a_huge_band_prints_short():
    from gpumem.cells import fmt_band, fmt_interval

    assert fmt_band([1e300, 2e300]) == "1e+300-2e+300"
    assert len(fmt_interval((1e308, 1.5e308))) < 30
    assert fmt_band([0, 17163222912]) == "0-17,163,222,912"
