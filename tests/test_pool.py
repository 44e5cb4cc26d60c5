"""Runs pooled finding by finding (:mod:`gpumem.interop.pool`): each finding the median
run's, kept whole, so every number stays one that was measured."""

from __future__ import annotations

import pytest
from gpumem.contracts.findings import Finding
from gpumem.contracts.formats import Source
from gpumem.interop.pool import median_finding, median_source


def _f(value, interval=None, kind="measured", method=""):
    return Finding("x", value, "cycle", interval=interval, kind=kind, method=method)


def test_a_scalar_is_the_median_run_with_its_own_interval():
    runs = [_f(8.0, (7.0, 9.0), method="a"), _f(11.0, (10.0, 12.0), method="b"),
            _f(10.0, (9.0, 11.0), method="c")]
    got = median_finding(runs)
    assert (got.value, got.interval, got.method) == (10.0, (9.0, 11.0), "c")


def test_an_even_count_takes_the_lower_middle_run_never_an_average():
    got = median_finding([_f(4.0), _f(1.0), _f(3.0), _f(2.0)])
    assert got.value == 2.0


def test_a_list_takes_the_run_nearest_the_elementwise_median():
    runs = [_f([1.0, 0.54, 1.0]), _f([1.0, 0.60, 1.0]), _f([1.03, 0.541, 1.0])]
    assert median_finding(runs).value == [1.0, 0.54, 1.0]


def test_a_structural_finding_takes_what_most_runs_agree_on():
    runs = [_f(16, kind="structural"), _f(12, kind="structural"), _f(16, kind="structural")]
    assert median_finding(runs).value == 16
    tie = [_f([1, 1, 5], kind="structural"), _f([1, 1, 4], kind="structural")]
    assert median_finding(tie).value == [1, 1, 5]  # a tie: the earliest run's


def test_unresolved_runs_give_way_to_resolved_ones():
    open_ = Finding("x", None, "byte", candidates=[1, 2])
    assert median_finding([open_, _f(7.0)]).value == 7.0
    assert median_finding([open_]).candidates == [1, 2]


def test_a_source_pools_each_finding_over_the_runs_that_have_it():
    a = Source("a", "hopper", None, {("e", "x"): _f(1.0), ("e", "only_a"): _f(5.0)})
    b = Source("b", "hopper", None, {("e", "x"): _f(3.0)})
    c = Source("c", "hopper", None, {("e", "x"): _f(2.0)})
    got = median_source([a, b, c], "pooled")
    assert got.label == "pooled" and got.arch == "hopper"
    assert got.value("e", "x") == 2.0 and got.value("e", "only_a") == 5.0
    with pytest.raises(ValueError):
        median_source([], "none")
