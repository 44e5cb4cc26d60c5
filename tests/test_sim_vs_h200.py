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
        share = s["measured_within"] / s["measured"]
        # the five runs the calibration pools (each finding the median run's): 96.2-98.1 %
        assert share >= 0.95, (name, share)
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



@pytest.mark.slow  # an export and a whole hopper simulator run: about a minute of CPU
def test_the_slice_table_of_one_card_lifts_another_cards_runs_to_95_percent(tmp_path):
    """Issue 45, item 4, on a card neither the packaged config nor the slice table saw
    (GPU-af95c491, three whole runs of 2026-12-05 in tests/data/h200-s24): the packaged
    config with the L2 slice table of GPU-ae2f9ce6's dense page (``gpumem export sim
    tests/data/h200-s23/dense``: the packaged base, the table, the slice latencies)
    reproduces each run at least 95 % within 5 % (60/62, 61/64, 63/64: 95.3-98.4 %; the
    packaged config alone 56/60, 58/63, 60/63: 92.1-95.2 %, its l2_slices.latency_min and
    latency_max one level of 283 cycles). Not yet the packaged config: its simulated
    lat.l2 then reads 280-281 (the sequential ladder's records see one 128 KB run of the
    table each, 276-290 cycles, as a card's do), at the edge of the H200's band."""
    from gpumem.cli import main
    from gpumem.interop.compare import compare

    cfg = tmp_path / "sliced.toml"
    assert main(["export", "sim", str(ROOT / "tests" / "data" / "h200-s23" / "dense"),
                 "--out", str(cfg)]) == 0
    sliced = SimConfig.load(cfg)
    assert sliced.level("l2").slices > 60 and sliced.level("l2").slice_footprint == 2 << 20
    run = tmp_path / "run"
    assert main(["run", "--arch", "hopper", "all", "--device", "sim", "--sim-config", str(cfg),
                 "--out", str(run)]) == 0
    manifests = sorted((ROOT / "tests" / "data" / "h200-s24").glob("gpuaf95c-run*/manifest.json"))
    assert len(manifests) == 3
    for m in manifests:
        s = compare(get_plugins(), [m, run], False)["agreement"]
        assert s["measured"] >= 60 and s["measured_within"] / s["measured"] >= 0.95, (m, s)


@pytest.mark.slow  # compares the conftest's whole hopper simulator run (made once a session)
def test_the_packaged_config_on_the_first_card_measured_with_l2_slices(sim_run):
    """The packaged config (no slice map) against GPU-af95c491's three whole runs
    (tests/data/h200-s24, a card no config was calibrated from): 56/60, 58/63, 60/63 measured
    findings within 5 % (92.1-95.2 %, 2026-12-05; its misses: l2_slices.latency_min/max, which
    a slice table gives, l2.sets, ro.half_miss_size, ilp.l2_best_k). A change that reproduces
    less of any of them fails here."""
    from gpumem.interop.compare import compare

    run = sim_run("hopper")
    assert run.ran, run.text[-3000:]
    manifests = sorted((ROOT / "tests" / "data" / "h200-s24").glob("gpuaf95c-run*/manifest.json"))
    assert len(manifests) == 3
    for m in manifests:
        s = compare(get_plugins(), [m, run.out], False)["agreement"]
        assert s["measured"] >= 60 and s["measured_within"] / s["measured"] >= 0.92, (m, s)
