"""Pass means the value is in the band (issue 30 item 2).

``pass``: the value lies inside the expected band ``[e - tol, e + tol]`` (a limit's band is
open on one side); ``fail``: the band and the value's interval (the value alone, without
one) do not overlap; otherwise ``undecided``: the data cannot say. ``contended`` (measured
while another process used the GPU) fails ``--check`` with its reason; undecided findings
are counted and do not. Every table shows the band and the interval, and at 80 columns
``run`` and ``compare --expected`` keep finding, value, band and status.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
import xarray as xr
from gpumem.contracts.findings import (
    STATUSES,
    Expected,
    Finding,
    evaluate,
    from_dataset,
    status_of,
    to_dataset,
    worst_status,
)

L2 = Expected("lat.l2", 200.0, "a plugin author's simulated A100", "cycle", rel_tol=0.15)


def test_the_issues_example_is_undecided_not_a_pass():
    """An L2 latency of 239.5 cycles against 200 +/- 15 % (170-230) passed because its
    interval reached the expected value; it is undecided. With a narrow interval it fails;
    205 passes."""
    assert status_of(239.5, L2, (200.0, 240.0)) == "undecided"
    assert status_of(239.5, L2, (238.0, 241.0)) == "fail"
    assert status_of(239.5, L2) == "fail"        # no interval: the value alone
    assert status_of(205.0, L2, (150.0, 260.0)) == "pass"  # inside: a wide interval is fine
    assert status_of(230.0, L2) == "pass"        # the band's edge is inside
    (f,) = evaluate([Finding("lat.l2", 239.5, "cycle", interval=(200.0, 240.0))], [L2])
    d = f.as_dict()
    assert (d["status"], d["band"], d["interval"]) == ("undecided", [170.0, 230.0],
                                                       [200.0, 240.0])


def test_a_limit_has_a_band_open_on_one_side():
    peak = Expected("bw.dram_read", 4800.0, "peak", "GB/s", rel_tol=0.01, bound="max")
    assert status_of(100.0, peak) == "pass" and status_of(4848.0, peak) == "pass"
    assert status_of(4900.0, peak) == "fail"
    assert status_of(4900.0, peak, (4700.0, 5000.0)) == "undecided"
    (f,) = evaluate([Finding("bw.dram_read", 4900.0, "GB/s")], [peak])
    assert f.expected_band == (-math.inf, 4848.0)
    assert f.as_dict()["band"] == [None, 4848.0]  # JSON: null for the infinite end
    json.dumps(f.as_dict(), allow_nan=False)
    floor = Expected("x", 10.0, "s", abs_tol=1.0, bound="min")
    assert status_of(9.0, floor) == "pass" and status_of(1e9, floor) == "pass"
    assert status_of(8.5, floor) == "fail" and status_of(8.5, floor, (8.0, 9.5)) == "undecided"
    (g,) = evaluate([Finding("x", 8.5, "1")], [floor])
    assert g.as_dict()["band"] == [9.0, None]
    from gpumem.cli._common import fmt_band

    assert fmt_band(f.expected_band) == "<= 4,848" and fmt_band(g.as_dict()["band"]) == ">= 9"


def test_a_list_is_judged_elementwise_and_the_worst_wins():
    exp = Expected("x", [10.0, 20.0, 30.0], "s", rel_tol=0.0, abs_tol=1.0)
    assert status_of([10.5, 20.0, 30.0], exp) == "pass"
    spans = ([10.0, 18.0, 29.0], [11.0, 22.0, 31.0])
    assert status_of([10.5, 22.0, 30.0], exp, spans) == "undecided"
    far = ([10.0, 18.0, 34.0], [11.0, 22.0, 36.0])  # the third's interval misses its band
    assert status_of([10.5, 22.0, 35.0], exp, far) == "fail"
    (f,) = evaluate([Finding("x", [10.5, 22.0, 30.0], "1", interval=spans)], [exp])
    assert f.status == "undecided"
    assert f.as_dict()["band"] == [[9.0, 19.0, 29.0], [11.0, 21.0, 31.0]]
    # labelled by a sweep axis: only the coordinates both have, each against its own band
    lab = Expected("y", [1.0, 2.0, 4.0], "s", rel_tol=0.1, index=("groups", (1, 2, 4)))
    assert status_of([1.0, 4.0], lab, None, ("groups", [1, 4])) == "pass"
    assert status_of([1.0, 4.5], lab, ([0.9, 4.3], [1.1, 4.6]), ("groups", [1, 4])) \
        == "undecided"


def test_text_is_an_exact_match_and_has_no_band():
    exp = Expected("l1d.policy", "LRU", "s")
    (f,) = evaluate([Finding("l1d.policy", "lru", "")], [exp])
    assert f.status == "pass" and f.expected_band is None and f.as_dict()["band"] is None
    assert status_of("fifo", exp) == "fail"
    from gpumem.cli._common import fmt_band

    assert fmt_band(None, "LRU") == "LRU"


def test_the_band_survives_a_netcdf_file_and_an_older_file_still_loads(tmp_path):
    fs = evaluate([Finding("lat.l2", 239.5, "cycle", interval=(200.0, 240.0)),
                   Finding("bw.dram_read", 4900.0, "GB/s"),
                   Finding("x", [10.5, 22.0], "1"),
                   Finding("l1d.policy", "lru", "")],
                  [L2, Expected("bw.dram_read", 4800.0, "p", "GB/s", rel_tol=0.01, bound="max"),
                   Expected("x", [10.0, 20.0], "s", rel_tol=0.1),
                   Expected("l1d.policy", "LRU", "s")])
    path = tmp_path / "f.nc"
    to_dataset(fs).to_netcdf(path, engine="netcdf4")
    with xr.open_dataset(path, engine="netcdf4") as ds:
        back = {f.name: f for f in from_dataset(ds)}
    assert back == {f.name: f for f in fs}
    assert back["lat.l2"].expected_band == (170.0, 230.0)
    assert back["bw.dram_read"].expected_band == (-math.inf, 4848.0)
    assert back["x"].expected_band == ([9.0, 18.0], [11.0, 22.0])
    assert back["l1d.policy"].expected_band is None
    # a file written before the band: loads, nothing recomputed, its status as stored
    old = to_dataset(fs)
    for v in old.data_vars.values():
        v.attrs.pop("expected_band", None)
    old["lat__l2"].attrs["status"] = "warn"
    older = {f.name: f for f in from_dataset(old)}
    assert older["lat.l2"].expected_band is None and older["lat.l2"].status == "warn"
    assert "band" in older["lat.l2"].as_dict() and older["lat.l2"].as_dict()["band"] is None


def test_warn_is_legacy_and_contended_is_a_status_ranked_with_fail():
    assert {"pass", "undecided", "fail", "contended", "warn"} <= set(STATUSES)
    mk = lambda s: Finding("x", 1.0, "1", status=s)  # noqa: E731
    assert worst_status([mk("pass"), mk("warn")]) == "warn"          # old files still read
    assert worst_status([mk("pass"), mk("undecided")]) == "undecided"
    assert worst_status([mk("undecided"), mk("contended")]) == "contended"
    assert worst_status([mk("pass"), mk("some future status")]) == "some future status"
    from gpumem.cli._common import STATUS_STYLE
    from gpumem.cli.show import finding_cells
    from gpumem.report.page import STATUS_CLASS

    assert {"undecided", "contended", "warn"} <= set(STATUS_STYLE) & set(STATUS_CLASS)
    cells = finding_cells("x", dataclasses.replace(mk("warn"), expected=1.0).as_dict())
    assert [c.plain for c in cells][6] == "warn"


# ---------------------------------------------------------------------------------------------
# --check: fail and contended exit 1, undecided is counted and does not
# ---------------------------------------------------------------------------------------------

KEPLER = ("run", "--arch", "kepler", "latency", "--device", "sim", "--quick")


def _rewrite(monkeypatch, change):
    """``gpumem run`` whose findings pass through ``change`` (as the runner would mark
    them) before the command judges them."""
    import gpumem.cli.run as cli_run

    real = cli_run.run

    def fake(req, **kw):
        report = real(req, **kw)
        for o in report.outcomes:
            o.findings = [change(f) for f in o.findings]
        return report

    monkeypatch.setattr(cli_run, "run", fake)


def test_check_passes_a_healthy_run_and_says_so(cli, tmp_path):
    res = cli(*KEPLER, "--out", str(tmp_path / "r"), "--check")
    assert res.code == 0, res.err
    assert "lies in its band" in res.err and "warns" not in res.err


def test_check_counts_undecided_findings_and_exits_0(cli, tmp_path, monkeypatch):
    _rewrite(monkeypatch, lambda f: dataclasses.replace(f, status="undecided")
             if f.name in ("lat.l2", "lat.dram") else f)
    res = cli(*KEPLER, "--out", str(tmp_path / "r"), "--check")
    assert res.code == 0, res.err
    line = res.err.strip().splitlines()[-1]
    assert "2 undecided: the data cannot say" in line and "latency/lat.l2" in line, line


def test_check_fails_a_contended_finding_with_its_reason(cli, tmp_path, monkeypatch):
    why = "process 4242 (python3) used the GPU, 97 % utilisation"
    _rewrite(monkeypatch, lambda f: dataclasses.replace(
        f, status="contended", note=f"contended: {why}") if f.name == "lat.l2" else f)
    res = cli(*KEPLER, "--out", str(tmp_path / "r"), "--check")
    assert res.code == 1, res.err
    line = res.err.strip().splitlines()[-1]
    assert line.startswith("gpumem: check failed: 1 contended (another process on the GPU: ")
    assert why in line and "latency/lat.l2" in line
    tail = res.out[res.out.rindex("failing expectations"):]
    assert "contended" in tail and "lat.l2" in tail


def test_check_fails_a_finding_outside_its_band(cli, tmp_path, monkeypatch):
    _rewrite(monkeypatch, lambda f: dataclasses.replace(f, status="fail")
             if f.name == "lat.l2" else dataclasses.replace(f, status="undecided")
             if f.name == "lat.dram" else f)
    res = cli(*KEPLER, "--out", str(tmp_path / "r"), "--check")
    assert res.code == 1
    line = res.err.strip().splitlines()[-1]
    assert "check failed: 1 fail (latency/lat.l2)" in line and "1 undecided" in line, line


# ---------------------------------------------------------------------------------------------
# 80 columns
# ---------------------------------------------------------------------------------------------


def _header(out: str, title: str) -> list[str]:
    lines = out.splitlines()
    k = next(i for i, ln in enumerate(lines) if title in ln)
    head = next(ln for ln in lines[k + 1:] if "┃" in ln)
    return [c.strip() for c in head.strip("┃ ").split("┃")]


@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")


def test_run_at_80_columns_keeps_finding_value_band_and_status(cli, tmp_path, narrow):
    res = cli(*KEPLER, "--out", str(tmp_path / "r"))
    assert res.code == 0, res.err
    cols = _header(res.out, "gpumem kepler on")
    assert {"finding", "value", "band", "status"} <= set(cols), cols
    table = res.out[:res.out.index("results:")]
    assert max(len(ln) for ln in table.splitlines()) <= 80
    assert "…" not in res.out
    row = next(ln for ln in res.out.splitlines() if " lat.l2 " in ln)
    assert re.search(r"\d+(\.\d+)?-\d+(\.\d+)?", row), row  # the band: low-high
    # compare --expected on the same run, at 80 columns too
    res = cli("compare", str(tmp_path / "r"), "--expected")
    assert res.code == 0, res.err
    cols = _header(res.out, "gpumem compare")
    assert {"finding", "band", "status"} <= set(cols) and "r" in cols, cols
    assert "…" not in res.out


def test_compare_json_gives_the_band_each_run_was_judged_by(cli, tmp_path):
    assert cli(*KEPLER, "--out", str(tmp_path / "r")).code == 0
    data = json.loads(cli("compare", str(tmp_path / "r"), "--expected", "--json").out)
    row = next(r for r in data["rows"] if r["finding"] == "lat.l2")
    lo, hi = row["band"]
    assert lo < row["expected"] < hi and row["status"]["r"] == "pass"
    shown = json.loads(cli("show", str(tmp_path / "r"), "--json").out)
    (f,) = [x["findings"]["lat.l2"] for x in shown["files"] if "lat.l2" in x["findings"]]
    assert f["band"] == [lo, hi]


def test_list_plugins_at_80_columns_never_cuts_a_name(cli, narrow):
    records = json.loads(cli("list-plugins", "--json").out)
    res = cli("list-plugins")
    assert res.code == 0, res.err
    assert "…" not in res.out
    for r in records:
        assert re.search(rf"(^|\s){re.escape(r['name'])}\s", res.out), r["name"]
