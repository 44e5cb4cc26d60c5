"""The simulator against Mei & Chu's data, as the plugins' READMEs state it (issue 19).

``benchmarks/sim_vs_authors.py ARCH`` runs the built-in simulator of fermi, kepler and
maxwell and lines each finding up against the authors' value; each plugin's README holds the
resulting table and summary line between ``<!-- sim_vs_authors:begin/end -->``. These tests
run the comparison afresh (on the session's simulator runs) and fail when a README no
longer says what it gives: regenerate with ``python benchmarks/sim_vs_authors.py ARCH
--readme``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from gpumem.contracts.expected_blocks import mei_chu_data
from gpumem.contracts.findings import Expected
from gpumem.plugin.registry import get_plugins
from helpers import selected

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sim_vs_authors",
                                               ROOT / "benchmarks" / "sim_vs_authors.py")
sva = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sva)

SUMMARY = re.compile(r"^\*\*(.+)\.\*\*$", re.M)


#: Kepler's and maxwell's whole runs simulate for 15-25 s each (fermi's for 5): their cases
#: are marked slow (CI's full job runs them), as in test_expected_sources; fermi's stay.
ARCH_PARAMS = [pytest.param(a, marks=pytest.mark.slow) if a in ("kepler", "maxwell") else a
               for a in sva.ARCHS]


@pytest.fixture(scope="module")
def results(sim_run, request) -> dict[str, dict]:
    """Each architecture's comparison, on its full simulator run (the run
    ``sva.run_comparisons`` makes, made once per session: conftest's sim_run), for the
    architectures the selected tests read."""
    archs = sorted({it.callspec.params["arch"] for it in selected(request, "results")})
    runs = sim_run.many([(arch, False) for arch in archs])
    for (arch, _), r in runs.items():
        assert r.ran, f"{arch}: {r.text[-3000:]}"
    return {arch: sva.comparison(arch, r.out) for (arch, _), r in runs.items()}


def _block(arch: str) -> str:
    block = sva.readme_block(sva.readme_path(arch).read_text())
    assert block, f"plugins/{arch}/README.md has no {sva.BEGIN} ... {sva.END} block"
    return block


def _table(block: str) -> list[list[str]]:
    """The README table's body rows, cell by cell (header and rule left out)."""
    rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in block.splitlines() if line.startswith("| ")]
    return rows[1:]


def _authors_names(arch: str) -> list[str]:
    """The expected values of the simulated device that are the authors' numbers."""
    from gpumem.sim.device import sim_device_info

    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    names: list[str] = []
    for e in get_plugins().expected_values(arch, sim_device_info(cfg)):
        if sva.classify(e)[0] == sva.AUTHORS and e.name not in names:
            names.append(e.name)
    return names


REGENERATE = "stale: run python benchmarks/sim_vs_authors.py {arch} --readme"


@pytest.mark.parametrize("arch", ARCH_PARAMS)
def test_readme_summary_line_is_what_the_comparison_gives(results, arch):
    found = SUMMARY.findall(_block(arch))
    assert found == [sva.summary_line(results[arch])], REGENERATE.format(arch=arch)


@pytest.mark.parametrize("arch", ARCH_PARAMS)
def test_the_table_has_a_row_for_each_authors_value(results, arch):
    names = _authors_names(arch)
    assert names, f"{arch}: no expected value cites the authors"
    rows = {r["finding"] for r in results[arch]["rows"]}
    assert rows == set(names), (f"{arch}: missing {sorted(set(names) - rows)}, extra "
                                f"{sorted(rows - set(names))}")
    readme = [r[0] for r in _table(_block(arch))]
    assert sorted(set(readme)) == sorted(names), REGENERATE.format(arch=arch)


@pytest.mark.parametrize("arch", ARCH_PARAMS)
def test_readme_table_is_what_the_comparison_gives(results, arch):
    """Every cell: a simulator change that moves a value shows in the README."""
    assert _table(_block(arch)) == sva.table_rows(results[arch]), REGENERATE.format(arch=arch)


@pytest.mark.parametrize("arch", ARCH_PARAMS)
def test_each_expected_value_is_in_the_table_or_said_to_be_left_out(results, arch):
    res = results[arch]
    shown = {r["finding"] for r in res["rows"]} | {lo["finding"] for lo in res["left_out"]}
    from gpumem.sim.device import sim_device_info

    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    assert {e.name for e in get_plugins().expected_values(arch, sim_device_info(cfg))} == shown


def test_sources_are_classified_as_documented():
    paper = "Mei & Chu, TPDS 2017"
    cases = {
        Expected("lat.l2", 1.0, f"{paper}, sec. 5; {mei_chu_data('latency.txt')}"):
            "data (latency.txt)",
        Expected("x", 1.0, f"derived from {paper}, sec. 5; {mei_chu_data('a.xlsx, b.txt')}"):
            "derived from data (a.xlsx, b.txt)",
        Expected("y", 1, f"{paper}, sec. 4 (TLB); {mei_chu_data('fine_grain_TLB.cu')}"):
            "paper, sec. 4; their code (fine_grain_TLB.cu)",
        Expected("z", 8, f"{paper}, sec. 6.2: 8-byte bank mode"): "paper, sec. 6.2",
    }
    for e, label in cases.items():
        assert sva.classify(e) == (sva.AUTHORS, label), e.source
    for e in (Expected("a", 1, f"ASSUMED: as the copy; {mei_chu_data('Kepler.xlsx')}"),
              Expected("b", 1, "NVIDIA GeForce GTX 780 specifications: L2 1536 KB"),
              Expected("lat.l2_ns", 1.0, f"{paper}; {mei_chu_data('latency.txt')}")):
        assert sva.classify(e)[0] == "left out", e.name


def test_elementwise_error_and_agreement_follow_gpumem_compare():
    rows = [{"experiment": "e", "finding": "m", "kind": "measured",
             "values": {sva.AUTHORS: [10.0, 20.0], sva.SIM: [10.4, 21.2]}},
            {"experiment": "e", "finding": "s", "kind": "structural",
             "values": {sva.AUTHORS: "lru", sva.SIM: "lru"}},
            {"experiment": "", "finding": "gone", "kind": "structural",
             "values": {sva.AUTHORS: 16, sva.SIM: None}}]
    s = sva.agreement_summary(rows, sva.AUTHORS, sva.SIM)
    assert (s["measured_within"], s["measured"]) == (0, 1)  # 6 % on the second element
    assert (s["structural_equal"], s["structural"]) == (1, 2)  # a missing value disagrees
    assert sva.elementwise_error(rows[0]) == pytest.approx([0.04, 0.06])
