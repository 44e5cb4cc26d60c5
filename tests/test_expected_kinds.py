"""Expected values that are limits (``bound``) and lists labelled by a sweep axis
(``index``): a bandwidth above the theoretical peak fails, one below it passes; a quick run's
smaller grid is compared on the coordinates it has."""

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

PEAK = Expected("bw.dram_read", 4800.0, "peak", "GB/s", rel_tol=0.01, bound="max")


@pytest.mark.parametrize("value, status", [(1000.0, "pass"), (4800.0, "pass"),
                                           (4840.0, "pass"), (4880.0, "fail"),
                                           (5000.0, "fail")])
def test_an_upper_bound_fails_only_beyond_it(value, status):
    assert status_of(value, PEAK) == status


def test_a_lower_bound_and_an_interval_reaching_the_limit():
    floor = Expected("x", 10.0, "s", rel_tol=0.0, bound="min")
    assert status_of(9.0, floor) == "fail" and status_of(11.0, floor) == "pass"
    # above the band, its interval reaching into it: the data cannot say (issue 30)
    assert status_of(5000.0, PEAK, interval=(4700.0, 5100.0)) == "undecided"
    with pytest.raises(ValueError, match="bound must be one of"):
        Expected("x", 1.0, "s", bound="below")


def test_a_bound_survives_the_file_and_reads_as_a_limit():
    (f,) = evaluate([Finding("bw.dram_read", 4500.0, "GB/s")], [PEAK])
    assert f.status == "pass" and f.expected_bound == "max"
    (back,) = from_dataset(to_dataset([f]))
    assert back.expected_bound == "max" and back.as_dict()["expected_bound"] == "max"
    from gpumem.cli._common import fmt_expected

    assert fmt_expected(back.expected, back.expected_bound) == "at most 4,800"


SPEEDUP = Expected("cpasync.speedup", [0.57, 0.87, 1.02, 1.04, 1.03], "ref", rel_tol=0.04,
                   index=("groups", (1, 2, 4, 8, 16)))


def test_a_smaller_grid_is_compared_on_the_coordinates_it_has():
    quick = Finding("cpasync.speedup", [0.57, 1.02, 1.03], "1",
                    index=("groups", [1, 4, 16]))
    (f,) = evaluate([quick], [SPEEDUP])
    assert f.status == "pass"
    off = Finding("cpasync.speedup", [0.57, 1.5, 1.03], "1", index=("groups", [1, 4, 16]))
    assert evaluate([off], [SPEEDUP])[0].status == "fail"
    other = Finding("cpasync.speedup", [0.5], "1", index=("groups", [3]))
    assert evaluate([other], [SPEEDUP])[0].status == "n/a"
    # unlabelled on either side: by position, a different length fails as before
    assert status_of([0.57, 1.02, 1.03], Expected("cpasync.speedup", SPEEDUP.value, "r")) \
        == "fail"
