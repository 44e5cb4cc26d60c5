"""Findings: the pass / undecided / fail rule and the netCDF round trip."""

from __future__ import annotations

import pytest
from gpumem.contracts.findings import (
    Expected,
    Finding,
    evaluate,
    from_dataset,
    status_of,
    to_dataset,
)


@pytest.mark.parametrize("value, exp, status", [
    (100.0, Expected("x", 100.0, "s", rel_tol=0.05), "pass"),
    (104.9, Expected("x", 100.0, "s", rel_tol=0.05), "pass"),
    (108.0, Expected("x", 100.0, "s", rel_tol=0.05), "fail"),  # no interval: no "warn"
    (111.0, Expected("x", 100.0, "s", rel_tol=0.05), "fail"),
    (16384, Expected("x", 16384, "s", rel_tol=0.0), "pass"),
    (16512, Expected("x", 16384, "s", rel_tol=0.0), "fail"),
    ("LRU", Expected("x", "lru", "s"), "pass"),
    ("fifo", Expected("x", "lru", "s"), "fail"),
    ([17, 8, 8], Expected("x", [17, 8, 8], "s", rel_tol=0), "pass"),
    ([17, 8, 9], Expected("x", [17, 8, 8], "s", rel_tol=0), "fail"),
    ([17, 8], Expected("x", [17, 8, 8], "s", rel_tol=0), "fail"),
])
def test_status_rules(value, exp, status):
    assert status_of(value, exp) == status


def test_evaluate_marks_unexpected_findings_na():
    fs = evaluate([Finding("a", 1.0, "1"), Finding("b", 2.0, "1")],
                  [Expected("a", 1.0, "src")])
    assert [f.status for f in fs] == ["pass", "n/a"]
    assert fs[0].expected_source == "src"


def test_an_expected_value_of_one_experiment_judges_only_its_findings():
    """l2_hash reports l2_slices' findings from every line of a page: its hash accuracy is
    1.00 where l2_slices' random lines give the fleet's 0.10 (an H200's l2_hash --check
    failed on it)."""
    exp = [Expected("acc", 0.10, "fleet", rel_tol=0.1, experiment="l2_slices"),
           Expected("n", 94, "cards", rel_tol=0.0)]
    fs = [Finding("acc", 1.0, "1"), Finding("n", 94, "1")]
    assert [f.status for f in evaluate(fs, exp, "l2_hash")] == ["n/a", "pass"]
    assert [f.status for f in evaluate(fs, exp, "l2_slices")] == ["fail", "pass"]
    assert [f.status for f in evaluate(fs, exp)] == ["fail", "pass"]  # experiment unknown
    # of two values of one name, each experiment's own
    both = [Expected("acc", 0.10, "sparse", rel_tol=0.1, experiment="l2_slices"),
            Expected("acc", 1.0, "dense", rel_tol=0.01, experiment="l2_hash")]
    assert evaluate(fs[:1], both, "l2_hash")[0].expected_source == "dense"
    assert evaluate(fs[:1], both, "l2_slices")[0].expected_source == "sparse"


def test_the_fleets_values_name_the_experiment_that_measured_them():
    from gpumem.contracts.allowances import fleet_expected

    by = {e.name: e for e in fleet_expected("fleet")}
    assert by["l2_slices.latency_min"].experiment == "l2_slices"
    assert by["lat.l2"].experiment == "latency"
    # a sparse run's hash, never found, has no fleet value (its accuracy judged sampling luck)
    assert "l2_slices.hash_accuracy" not in by


def test_round_trip_through_netcdf(tmp_path):
    fs = evaluate([
        Finding("l1d.size", 16384, "byte", 1.0, "ladder"),
        Finding("lat.l2", 230.5, "cycle", 0.9, "ladder"),
        Finding("l1d.policy", "non-lru", "", 0.8, "replay"),
        Finding("tlb_l2.ways", [17, 8, 8, 8, 8, 8, 8], "1", 1.0, "overflow"),
        Finding("smem.conflict_latency", [28.0, 30.0, 34.0], "cycle", 1.0, "stride",
                index=("ways", [1, 2, 4])),
    ], [Expected("l1d.size", 16384, "paper", rel_tol=0), Expected("l1d.policy", "non-lru", "p"),
        Expected("tlb_l2.ways", [17, 8, 8, 8, 8, 8, 8], "p", rel_tol=0)])
    path = tmp_path / "f.nc"
    to_dataset(fs).to_netcdf(path, engine="netcdf4")
    import xarray as xr

    back = from_dataset(xr.open_dataset(path))
    assert {f.name: f for f in back} == {f.name: f for f in fs}


def test_an_unresolved_finding_keeps_its_candidates_and_no_value(tmp_path):
    """Issue 14: where the evidence does not decide, the finding says so, with candidates
    (lists too) and the evidence; its status is 'unresolved' whatever is expected."""
    from gpumem.contracts.findings import unresolved

    fs = [unresolved("tlb.page", "byte", [16 << 20, 32 << 20], "two strides",
                     "16 MB: 17 pages miss; 32 MB: the quarter-stride probe"),
          unresolved("tlb_l2.ways", "1", [[17, 8], [8, 8]], "one page at a time", "?"),
          Finding("lat.l2", 287.0, "cycle", 0.9, "ladder", interval=(281.0, 293.5))]
    path = tmp_path / "f.nc"
    to_dataset(fs).to_netcdf(path)
    import xarray as xr

    back = {f.name: f for f in from_dataset(xr.open_dataset(path))}
    page = back["tlb.page"]
    assert page.value is None and not page.resolved
    assert page.candidates == [16 << 20, 32 << 20] and "quarter-stride" in page.note
    assert back["tlb_l2.ways"].candidates == [[17, 8], [8, 8]]
    assert back["lat.l2"].interval == (281.0, 293.5) and back["lat.l2"].resolved
    judged = evaluate(list(back.values()), [Expected("tlb.page", 16 << 20, "s", rel_tol=0)])
    assert {f.name: f.status for f in judged}["tlb.page"] == "unresolved"
    d = page.as_dict()
    assert d["value"] is None and d["candidates"] == [16 << 20, 32 << 20]


def test_unresolved_findings_show_their_candidates_in_tables():
    from gpumem.cli._common import fmt_finding
    from gpumem.contracts.findings import unresolved

    cell = fmt_finding(unresolved("tlb.page", "byte", [16777216, 33554432], "m", "e").as_dict())
    assert cell == "unresolved: 16777216 | 33554432"
    assert fmt_finding(Finding("x", 3.5, "1").as_dict()) == "3.5"


def test_a_measured_interval_that_holds_the_expectation_is_undecided():
    """A hashed cache's capacity is bracketed by its first misses and its half crossing (an
    H200's L1: 215-238 KB); an expected 233 KiB inside that bracket, the value outside the
    band, is undecided: the data cannot say (issue 30; it passed before)."""
    from gpumem.contracts.findings import Expected, status_of

    exp = Expected("l1d.size", 238592, "MT4G", "byte", rel_tol=0.01)
    assert status_of(215424, exp) == "fail"
    assert status_of(215424, exp, (215424.0, 238436.0)) == "undecided"
    assert status_of(215424, exp, (215424.0, 225000.0)) == "fail"
    # lists: elementwise, each with its own bracket
    lexp = Expected("x", [10.0, 20.0], "s", rel_tol=0.0, abs_tol=0.5)
    assert status_of([8.0, 20.0], lexp, ([7.0, 19.0], [10.2, 21.0])) == "undecided"
    assert status_of([9.6, 20.0], lexp, ([7.0, 19.0], [10.2, 21.0])) == "pass"
    assert status_of([8.0, 20.0], lexp, ([7.0, 19.0], [8.4, 21.0])) == "fail"
