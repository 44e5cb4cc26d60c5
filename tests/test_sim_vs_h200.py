"""The packaged hopper simulator against the H200 it was calibrated from (issue 19, item 4).

The config is the calibration of ``tests/data/h200-reruns/run1``-``run5`` pooled (each
finding the median run's; ``benchmarks/sim_vs_h200.py``, ``calibration_source``); run
through every experiment it must reproduce those runs (every structural finding equal, at
least 93 % of the measured findings the H200 can decide within 5 %) and the 16 whole runs
of four cards the calibration never saw (issue 45, item 4: the floor of what it does). ``docs/h200-reference.md`` states the comparison;
a change that moves it fails here until ``python benchmarks/sim_vs_h200.py --doc`` is rerun.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from gpumem.plugin.registry import get_plugins
from gpumem.sim.config import SimConfig
from gpumem_hopper.expected import NOT_SIMULATED

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sim_vs_h200",
                                               ROOT / "benchmarks" / "sim_vs_h200.py")
svh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(svh)


@pytest.fixture(scope="module")
def results(sim_run) -> dict[str, dict]:
    """The comparisons on a full hopper simulator run (made once per session: conftest's
    sim_run; the run ``svh.run_comparisons`` makes)."""
    run = sim_run("hopper")
    assert run.ran, run.text[-3000:]
    return svh.run_comparisons(run.out)


@pytest.mark.slow  # the whole hopper run reanalysed against five H200 runs: 23 s of CPU
def test_every_structural_finding_equal_and_nine_in_ten_measured_within_5_percent(results):
    for name in (svh.CALIBRATION, *svh.HELD_OUT):
        s = results[name]["agreement"]
        assert s["structural_equal"] == s["structural"] >= 15, name
        # the five runs the calibration pools (each finding the median run's): 96.2-98.1 %
        # before the ladder read each capacity at its half crossing too (2026-12-07); the
        # near L2's, which the model does not reproduce (hopper's NOT_SIMULATED, as
        # ilp.l2_best_k), put run1 at 53 of 56 (94.6 %). Of what the model claims to give:
        missed = {f"{r['experiment']}/{r['finding']}" for r in results[name]["rows"]
                  if r.get("agrees") is False and r.get("kind") != "structural"}
        known = {m for m in missed if m.split("/")[1] in NOT_SIMULATED}
        claimed = s["measured"] - len(known)
        share = s["measured_within"] / claimed
        assert share >= 0.96, (name, share, sorted(missed))
        assert "ilp/ilp.l2_best_k" in known, (name, sorted(missed))
        # undecided: where the H200's own interval holds the simulated value; bw.l1 and
        # bw.l2 among them since the config's cache bandwidths come from a bandwidth_levels 4
        # run (these runs' version 2 read one kernel shape, lower), and the bulk read, whose
        # version 1 figure here is a lower bound (interval up to the peak), the config's
        # from bulk_copy 2 runs
        assert s["measured"] >= 45 and len(s["undecided"]) <= 8, name


#: The lowest share of a held-out card's run the packaged config reproduces (2026-12-05,
#: with the slow far hits and bulk_copy 2's bulk copies: 94.7 %, gpu59b6b-other1, 54 of 57;
#: 16 runs on four cards, 94.7-98.3 %, 15 of them >= 95 %; every run misses ilp.l2_best_k,
#: which the model lacks: hopper's NOT_SIMULATED): a change to the model or the config that
#: reproduces less of any committed run fails here.
CARD_FLOOR = 0.94


@pytest.mark.slow  # the same comparison as above (its module fixture)
def test_whole_runs_on_cards_the_calibration_never_saw(results):
    cards = {m.parent.name for m in svh.card_runs()}
    assert len(cards) >= 16
    for name in cards:
        s = results[name]["agreement"]
        assert s["structural_equal"] == s["structural"] >= 15, name
        assert s["measured"] >= 50, name
        assert svh.share(results[name]) >= CARD_FLOOR, (name, svh.share(results[name]))


@pytest.mark.slow  # the same comparison as above (its module fixture)
def test_each_held_out_card_its_runs_pooled_at_least_95_percent(results):
    """Issue 45, item 4: a held-out card, its runs pooled as the calibration pools its own
    card's (each finding the median run's), is reproduced at least 95 % within 5 %
    (2026-12-05: 96.6-98.3 %; its single runs 94.7-98.3 %, above)."""
    cards = svh.cards()
    assert len(cards) >= 4
    for card in cards:
        s = results[f"{card}-pooled"]["agreement"]
        assert s["structural_equal"] == s["structural"] >= 15, card
        assert svh.share(results[f"{card}-pooled"]) >= 0.95, card


@pytest.mark.slow  # the same comparison as above (its module fixture)
def test_the_document_states_what_the_comparison_gives(results):
    block = svh.doc_block(svh.DOC.read_text())
    assert block, f"{svh.DOC} lacks the {svh.BEGIN} block"
    fresh = svh.markdown(results, "DATE")
    dated = re.compile(r"\(\d{4}-\d{2}-\d{2}\)")
    assert dated.sub("(DATE)", block, count=1) == fresh, (
        "docs/h200-reference.md is stale: run python benchmarks/sim_vs_h200.py --doc")


def test_the_packaged_config_is_the_calibrated_one(tmp_path):
    """Calibrating the packaged config again from what it was calibrated from (the five
    runs of the calibration card pooled, with the cache bandwidths of a bandwidth_levels 4
    run: issue 45)
    changes no value: the packaged file is a fixed point of the calibration. Exporting the
    calibration run alone gives its own (version 2) cache bandwidths and nothing else new."""
    from gpumem.cli import main
    from gpumem.interop.calibrate import calibrate

    packaged = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    again = calibrate(packaged, svh.calibration_source()).config
    again.name, again.source = packaged.name, packaged.source
    assert again.to_toml() == packaged.to_toml()
    out = tmp_path / "again.toml"
    assert main(["export", "sim", str(svh.RUNS / svh.CALIBRATION), "--out", str(out)]) == 0
    alone = SimConfig.load(out)
    # (75.6 and 4017.4 B/cycle measured; each cap solved through the model: well under the
    # SM's issue rate, about the measured rate itself)
    assert alone.level("l1d").bandwidth == pytest.approx(75.6, abs=0.3)
    assert alone.level("l2").bandwidth == pytest.approx(4017.4, rel=0.001)


@pytest.mark.slow  # compares the conftest's whole hopper simulator run (made once a session)
def test_the_packaged_config_reproduces_held_out_cards_runs_95_percent(sim_run):
    """Issue 45, item 4, on two cards no part of the packaged config was calibrated from:
    GPU-af95c491 (three whole runs of 2026-12-05, tests/data/h200-s24) and GPU-d1c49d44
    (two, measured after the config took its slice map, tests/data/h200-s25). The packaged
    config, its L2 slice map from GPU-ae2f9ce6's dense page, reproduces each run at least
    95 % within 5 % (af95c: 60/62, 61/64, 63/64; d1c49: 63/65, 62/63; without the slice map
    af95c's were 56/60, 58/63, 60/63, its l2_slices.latency_min and latency_max one level of
    283 cycles). Still missed: ilp.l2_best_k in each, cpasync.speedup, l2.far_slow_share,
    tlb_l1.miss_penalty and ro.half_miss_size in one run each. A change that reproduces less
    of any of them fails here."""
    from gpumem.interop.compare import compare

    run = sim_run("hopper")
    assert run.ran, run.text[-3000:]
    data = ROOT / "tests" / "data"
    manifests = sorted([*(data / "h200-s24").glob("gpuaf95c-run*/manifest.json"),
                        *(data / "h200-s25").glob("gpud1c49-run*/manifest.json")])
    assert len(manifests) == 5
    for m in manifests:
        s = compare(get_plugins(), [m, run.out], False)["agreement"]
        assert s["measured"] >= 60 and s["measured_within"] / s["measured"] >= 0.95, (m, s)
