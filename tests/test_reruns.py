"""Five reruns of `gpumem run --arch hopper all` on one healthy H200 agree (issue 14).

tests/data/h200-reruns/run1 ... run5 were made back to back by
``python benchmarks/reruns.py --runs 5`` on one card (GPU-e3cd7c15, 2026-12-01). Every finding
is re-derived from the raw files by today's analysis and judged across the five
(:mod:`gpumem.interop.reruns`): structural findings (page size, TLB entries and levels, lines,
sectors, partitions, SM groups, banks, ...) identical or unresolved in every run; latencies
within 2 % of the runs' median (or 2 cycles), bandwidths within 3 %, ladder knees within 15 %.

Made after every fix the first series (GPU-4f78dd83) called for: five of its 74 findings
disagreed there (a cold pattern partly in the L2, one allocation for every DRAM stream, the
near L2's end placed by one allocation); these five agree on all 74, and a sixth run on the
same card, not committed, agreed with them on all 74 too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpumem.interop.reruns import agreement, run_findings
from gpumem.plugin.registry import get_plugins

RERUNS = Path(__file__).parent / "data" / "h200-reruns"


@pytest.fixture(scope="module")
def judged():
    plugins = get_plugins()
    runs = [run_findings(RERUNS / f"run{i}", plugins) for i in range(1, 6)]
    assert all(runs), "a rerun holds no findings"
    return {(a.experiment, a.name): a for a in agreement(runs)}


def test_five_reruns_are_committed_complete():
    for i in range(1, 6):
        files = list((RERUNS / f"run{i}").rglob("*.nc"))
        assert len(files) == 14, (i, len(files))


def test_structural_findings_are_identical_or_unresolved_in_every_run(judged):
    structural = [a for a in judged.values() if a.kind == "structural"]
    names = {a.name for a in structural}
    # what the issue names: page size, TLB entries and levels, lines, sectors, partitions,
    # SM groups, banks
    assert {"tlb.page", "tlb_l1.entries", "tlb_l2.no_level_below", "l1d.line", "ro.line",
            "l2.line", "l1d.sector", "l2.fill_unit", "l2.partitions", "l2.sm_groups",
            "smem.banks", "smem.bank_width"} <= names
    bad = {a.name: (a.verdict, a.values) for a in structural if not a.ok}
    assert not bad, bad


def test_the_tlb_answer_is_one_answer(judged):
    for name, value in (("tlb.page", 16 << 20), ("tlb_l1.entries", 16)):
        a = judged[("tlb_structure", name)]
        assert a.ok and a.values == [value] * 5, (name, a.values)


def test_measured_findings_agree_within_their_tolerances(judged):
    measured = [a for a in judged.values() if a.kind == "measured"]
    assert len(measured) >= 40
    bad = {(a.experiment, a.name): a.verdict for a in measured if not a.ok}
    assert not bad, bad



def test_the_near_l2_end_comes_from_chases_on_every_placement(judged):
    """The one finding the first series could not reproduce: 26.1-33.2 MB, one allocation
    per process. Pooled over placements it stays within the knee tolerance and every run's
    interval reaches the same half crossing."""
    import xarray as xr

    for i in range(1, 6):
        (f,) = (RERUNS / f"run{i}").rglob("latency-*.nc")
        with xr.open_dataset(f) as ds:
            assert ds.attrs["plan_placements"] == 4 and ds.attrs["gpumem_experiment_version"] \
                == "2"
    a = judged[("latency", "l2.near_size")]
    assert a.ok, a.verdict


def test_the_l2_size_interval_reaches_where_half_the_accesses_miss(judged):
    """The far L2's knee moves from process to process (56.5-60.8 MB over these five runs:
    where the first of its hashed sets overflows), while the footprint where half the rise
    of its misses is reached stays put (60.6-61.9 MB). Each run's interval runs from its knee
    to at least that half crossing, as for the other knees; the half crossing was once missed
    where the far plateau's medians reach past it (they turn at 50 % misses, the half of the
    rise to DRAM's 58 % comes at 33 %), leaving intervals of 0.3 % around knees 7 % apart.
    Where the four placements left the level apart, the interval reaches further (the knee +
    t x their spread: run3's placements left at 58.5-62.2 MB, its interval to 64.4 MB)."""
    found = [run_findings(RERUNS / f"run{i}", get_plugins()) for i in range(1, 6)]
    runs = [f[("latency", "l2.size")] for f in found]
    halves = [f[("latency", "l2.size_at_half")].value for f in found]
    tops = [f.interval[1] for f in runs]
    knees = [f.value for f in runs]
    assert judged[("latency", "l2.size")].ok
    assert max(knees) / min(knees) > 1.05  # what the interval has to own up to
    assert all(t >= 1.02 * k for t, k in zip(tops, knees, strict=True) if k < 0.97 * max(knees)), \
        (knees, tops)
    assert all(t >= h for t, h in zip(tops, halves, strict=True)), (tops, halves)
    assert max(halves) / min(halves) < 1.03, halves  # the half crossings agree
    assert 60.0e6 < min(halves) and max(halves) < 62.914560e6  # under the card's 60 MiB
    assert max(tops) < 1.1 * 62.914560e6, tops


def test_the_judge_catches_a_run_that_disagrees():
    """The check above can fail: one run with another page size, a latency 5 % off or a
    bandwidth 4 % off is a disagreement; an unresolved TLB in one run only is one too."""
    from dataclasses import replace

    plugins = get_plugins()
    runs = [run_findings(RERUNS / f"run{i}", plugins) for i in (1, 2, 3)]
    for key, change in ((("tlb_structure", "tlb.page"), lambda f: replace(f, value=32 << 20)),
                        (("latency", "lat.l2"), lambda f: replace(f, value=f.value * 1.05,
                                                                   interval=None)),
                        (("bandwidth", "bw.dram_read"),
                         lambda f: replace(f, value=f.value * 0.96, interval=None)),
                        (("tlb_structure", "tlb_l1.entries"),
                         lambda f: replace(f, value=None, status="unresolved",
                                           candidates=[16, 32]))):
        bent = [dict(r) for r in runs]
        bent[2][key] = change(bent[2][key])
        verdict = {(a.experiment, a.name): a for a in agreement(bent)}[key]
        assert not verdict.ok, (key, verdict.verdict)
        assert {(a.experiment, a.name) for a in agreement(bent) if not a.ok} == {key}


def test_a_new_version_of_an_experiment_is_judged_against_its_own_runs():
    """A changed measurement is not a disagreement between reruns: with each run's versions
    (read from its files), the runs of each version must agree among themselves, and a
    finding a version does not give is not missing from its runs; within a version the
    check still bites."""
    from dataclasses import replace

    from gpumem.interop.reruns import run_versions

    plugins = get_plugins()
    dirs = [RERUNS / f"run{i}" for i in (1, 2, 3, 4)]
    runs = [run_findings(d, plugins) for d in dirs]
    versions = [run_versions(d) for d in dirs]
    assert versions[0]["bandwidth_levels"] == "2" and versions[0]["tlb_structure"] == "3"
    key, new = ("bandwidth_levels", "bw.l1"), ("bandwidth_levels", "bw.l1_bytes_per_clk")
    bent = [dict(r) for r in runs]
    for r in bent[2:]:  # runs 3 and 4 measured by a "version 9" reading 1.6x as much
        r[key] = replace(r[key], value=r[key].value * 1.6, interval=None)
        r[new] = replace(r[key], name=new[1], value=125.0, units="B/clk/SM")
    bumped = [dict(v) for v in versions]
    for v in bumped[2:]:
        v["bandwidth_levels"] = "9"
    rows = {(a.experiment, a.name): a for a in agreement(bent, bumped)}
    assert rows[key].ok and rows[new].ok, (rows[key].verdict, rows[new].verdict)
    assert "version 9 (runs 3, 4)" in rows[key].verdict
    assert "not given by this version" in rows[new].verdict
    assert not any(a.ok for a in agreement(bent) if a.name in (key[1], new[1]))
    bent[3][key] = replace(bent[3][key], value=bent[3][key].value * 1.08)  # 3.9 % off
    rows = {(a.experiment, a.name): a for a in agreement(bent, bumped)}
    assert not rows[key].ok and "version 9 (runs 3, 4): 3.9% off" in rows[key].verdict
    bent[3] = {k: f for k, f in bent[3].items() if k[0] != "bandwidth_levels"}
    bumped[3].pop("bandwidth_levels")  # run 4 lacks the experiment: missing, whatever else
    rows = {(a.experiment, a.name): a for a in agreement(bent, bumped)}
    assert not rows[key].ok and "missing" in rows[key].verdict


def test_versions_are_read_from_the_attributes_and_a_damaged_file_is_one_error(tmp_path):
    """run_versions reads each file's attributes only (open_attrs); a truncated file is the
    same one-line ResultsFileError as for its data."""
    from gpumem.contracts.errors import ResultsFileError
    from gpumem.results.io import open_attrs

    (path,) = (RERUNS / "run1").rglob("bulk_copy-*.nc")
    assert open_attrs(path)["gpumem_experiment_version"] == "1"
    cut = tmp_path / "cut.nc"
    cut.write_bytes(path.read_bytes()[:4000])
    with pytest.raises(ResultsFileError, match="cut.nc: cannot read results file"):
        open_attrs(cut)
