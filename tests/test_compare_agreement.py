"""``gpumem compare A B``: how far B (a simulation, say) is from A (the hardware), finding by
finding, and how many findings agree (issue 19, item 3: the per-finding error and its
summary)."""

from __future__ import annotations

import json
from pathlib import Path

from gpumem.cli import main
from gpumem.compare import agreement_summary, row_error

H200_RUN = Path(__file__).parent / "data" / "h200-run"


def _row(name, a, b, kind="measured"):
    return {"experiment": "x", "finding": name, "kind": kind, "values": {"hw": a, "sim": b}}


def test_the_error_is_relative_to_the_first_run_and_elementwise_for_lists():
    assert row_error(_row("l", 100.0, 104.0), "hw", "sim") == 0.04
    assert row_error(_row("l", [1.0, 0.5], [1.0, 1.0]), "hw", "sim") == 1.0
    assert row_error(_row("l", [1.0, 0.5], [1.0]), "hw", "sim") is None   # shapes differ
    assert row_error(_row("s", "lru", "fifo"), "hw", "sim") is None


def test_the_summary_counts_measured_within_5_percent_and_structural_equal():
    rows = [_row("a", 100.0, 104.0), _row("b", 100.0, 106.0), _row("c", [1.0], [1.0]),
            _row("d", 128, 128, "structural"), _row("e", "lru", "fifo", "structural"),
            {"experiment": "x", "finding": "f", "kind": "measured", "values": {"hw": 1.0}}]
    s = agreement_summary(rows, "hw", "sim")
    assert (s["measured"], s["measured_within"]) == (3, 2)
    assert (s["structural"], s["structural_equal"]) == (2, 1)
    assert s["in_one_run_only"] == ["x/f"]
    assert rows[1]["error"] == 0.06


def test_a_run_against_itself_agrees_everywhere(capsys, tmp_path):
    assert main(["compare", str(H200_RUN), str(H200_RUN), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    s = data["agreement"]
    assert s["measured"] > 30 and s["measured_within"] == s["measured"]
    assert s["structural_equal"] == s["structural"] and not s["in_one_run_only"]
    assert main(["compare", str(H200_RUN), str(H200_RUN)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert f"{s['measured']} of {s['measured']} measured findings within 5%" in line
