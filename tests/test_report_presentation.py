"""The report is a generic renderer (issue 18): sections, figures and their order come from
the registered experiments' ``presentation()``, passed in; ``gpumem.report`` names no
experiment, and an experiment it does not know still shows its findings."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gpumem.cli import main
from gpumem.contracts.presentation import Presentation, ReportFigure, ReportSection
from gpumem.experiments.figures import LATENCY
from gpumem.experiments.latency import LatencyLadder
from gpumem.plugin.registry import reset_plugins
from gpumem.report import build_report
from gpumem.report.provenance import experiment_rows
from gpumem.report.runs import load_runs
from gpumem.report.sections import page_sections

REPORT = Path(__file__).resolve().parents[1] / "core" / "src" / "gpumem" / "report"


def core_experiments() -> dict:
    """The registered experiments: core's and the in-tree plugins'."""
    from gpumem.plugin.registry import get_plugins

    return dict(get_plugins().experiments())


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "maxwell-sim"
    reset_plugins()
    assert main(["run", "--arch", "maxwell", "latency", "smem_latency", "--device", "sim",
                 "--quick", "--out", str(out)]) == 0
    return out


def _section_ids(html: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', html)


def _section(html: str, key: str) -> str:
    start = html.index(f'<section id="{key}"')
    return html[start:html.index("</section>", start)]


def test_the_report_package_names_no_experiment():
    """No registered experiment's name (core's or an installed plugin's) as a string and no
    import of gpumem.experiments (nor a global plugin lookup) in gpumem/report or the figure
    toolkit (gpumem/figures): what they draw comes from the presentations."""
    names = set(core_experiments())
    assert len(names) >= 15
    files = sorted(REPORT.glob("*.py")) + sorted((REPORT.parent / "figures").glob("*.py"))
    assert {p.name for p in files} >= {"__init__.py", "draw.py", "page.py", "provenance.py",
                                       "runs.py", "sections.py", "series.py"}
    bad = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                bad.append(f"{path.name}:{node.lineno}: {node.value!r}")
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                if any(m.startswith("gpumem.experiments") for m in mods):
                    bad.append(f"{path.name}:{node.lineno}: imports {node.module}")
                if any(a.name == "get_plugins" for a in node.names):
                    bad.append(f"{path.name}:{node.lineno}: imports get_plugins")
            elif isinstance(node, ast.Import):
                bad += [f"{path.name}:{node.lineno}: imports {a.name}" for a in node.names
                        if a.name.startswith("gpumem.experiments")]
    assert not bad, bad


def test_loading_the_experiments_loads_no_matplotlib():
    """presentation() imports its figures when called: `gpumem run` never does."""
    code = ("import sys\n"
            "from gpumem.plugin.registry import load_plugins\n"
            "import gpumem.run.runner\n"
            "[c() for c in load_plugins().experiments().values()]\n"
            "print(sorted(m for m in sys.modules if m.startswith('matplotlib'))[:3])\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_sections_and_their_order_come_from_the_presentations():
    specs = page_sections(core_experiments())
    assert [s.section.key for s in specs] == [
        "latency", "cache_structure", "tlb_structure", "bandwidth", "ilp", "cpasync",
        "bulk_copy", "dsmem", "bank_conflicts"]
    by_key = {s.section.key: s for s in specs}
    assert by_key["latency"].experiments == ("latency", "patterns", "l2_sm_map", "l2_slices",
                                             "l2_hash", "l2_twins")
    assert by_key["bandwidth"].experiments == ("bandwidth", "smem_bandwidth", "bandwidth_levels",
                                               "l2_bandwidth")
    assert [f.name for _, f in by_key["bandwidth"].figures] == [
        "dram_heatmaps", "smem_heatmaps", "bandwidth_levels", "l2_bandwidth"]
    assert by_key["dsmem"].figures[0][0] == "dsmem_latency"
    shown = {e for s in specs for e in s.experiments}
    assert set(core_experiments()) - shown == {"p2p"}  # no presentation: other findings


def test_a_run_the_registry_does_not_know_lists_its_findings_under_other(sim_run, tmp_path):
    """smem_latency's plugin 'uninstalled': no bank-conflicts section, its findings are
    listed under other findings, and nothing fails."""
    experiments = {k: v for k, v in core_experiments().items() if k != "smem_latency"}
    page = build_report([sim_run], tmp_path / "r", experiments=experiments)
    html = page.read_text(encoding="utf-8")
    assert "bank_conflicts" not in _section_ids(html)
    assert not (tmp_path / "r" / "bank_conflicts.png").exists()
    assert "<td>smem_latency</td>" in _section(html, "other_findings")
    assert (tmp_path / "r" / "latency_ladder.png").is_file()


def test_without_a_registry_every_finding_is_under_other_findings(sim_run, tmp_path):
    page = build_report([sim_run], tmp_path / "r")
    html = page.read_text(encoding="utf-8")
    assert _section_ids(html) == ["summary", "other_findings", "provenance"]
    assert not list((tmp_path / "r").glob("*.png"))
    other = _section(html, "other_findings")
    assert "<td>latency</td>" in other and "<td>smem_latency</td>" in other


class _FirstLadder(LatencyLadder):
    """The latency experiment presented by someone else: a section of its own, first."""

    def presentation(self):
        from gpumem.figures.draw import finished, panels, with_raw

        @finished
        def draw(series):
            data = with_raw(series, "latency")
            fig, axs = panels(1, 1)
            for s, ds in data:
                axs[0, 0].plot(ds["footprint"].values, color=s.colour)
            return fig

        return Presentation(ReportSection("first", "First", "Drawn by a plugin.", 50),
                            (ReportFigure("first_figure", "A plugin's figure.", draw),))


def test_a_presentation_places_its_section_and_draws_its_figure(sim_run, tmp_path):
    experiments = {"latency": _FirstLadder, "patterns": core_experiments()["patterns"],
                   "smem_latency": core_experiments()["smem_latency"]}
    page = build_report([sim_run], tmp_path / "r", experiments=experiments)
    html = page.read_text(encoding="utf-8")
    assert _section_ids(html) == ["summary", "first", "latency", "bank_conflicts",
                                  "provenance"]
    assert (tmp_path / "r" / "first_figure.png").is_file()
    assert "A plugin&#x27;s figure." in _section(html, "first")
    assert "<td>latency</td>" in _section(html, "first")
    assert not (tmp_path / "r" / "latency_ladder.png").exists()
    # the provenance lists the experiments in page order, those of no section last, sorted
    (series,) = load_runs([sim_run])
    assert [r.experiment for r in experiment_rows(series, ("smem_latency", "patterns"))] == [
        "smem_latency", "latency"]


class _Broken(LatencyLadder):
    def presentation(self):
        raise RuntimeError("oops")


class _SameFigure(LatencyLadder):
    name = "latency_again"

    def presentation(self):
        return Presentation(LATENCY, (ReportFigure("latency_ladder", "twice", print),), 5)


def test_a_broken_presentation_costs_only_its_own_figures(sim_run, tmp_path):
    heard: list[str] = []
    page = build_report([sim_run], tmp_path / "r", warn=heard.append,
                        experiments={"latency": _Broken,
                                     "smem_latency": core_experiments()["smem_latency"]})
    html = page.read_text(encoding="utf-8")
    assert heard == ["experiment 'latency': presentation() raised RuntimeError: oops"]
    assert "<td>latency</td>" in _section(html, "other_findings")
    assert (tmp_path / "r" / "bank_conflicts.png").is_file()
    heard.clear()
    specs = page_sections({"latency": LatencyLadder, "latency_again": _SameFigure},
                          heard.append)
    assert [f.name for s in specs for _, f in s.figures] == ["latency_ladder"]
    assert heard == ["experiment 'latency_again': figure 'latency_ladder' is already drawn "
                     "by 'latency'; left out"]


class _OddNames(LatencyLadder):
    def presentation(self):
        return Presentation(LATENCY, (ReportFigure("../outside", "escapes", print),
                                      ReportFigure("index", "the page's own", print)))


class _TakenKey(LatencyLadder):
    name = "taken"

    def presentation(self):
        return Presentation(ReportSection("provenance", "Mine", "", 1))


def test_figure_names_and_section_keys_must_be_plain_and_free():
    heard: list[str] = []
    specs = page_sections({"latency": _OddNames, "taken": _TakenKey}, heard.append)
    assert [s.section.key for s in specs] == ["latency"] and not specs[0].figures
    assert len(heard) == 3 and all(h.endswith("left out") for h in heard), heard


class _NamedFigures(LatencyLadder):
    """Figures named as "module:function": imported only when the report draws."""

    def presentation(self):
        return Presentation(LATENCY, (
            ReportFigure("by_name", "drawn by name",
                         "gpumem.experiments.figures.latency:latency_ladder"),
            ReportFigure("missing_module", "no such module", "gpumem_no_such_module:draw"),
            ReportFigure("not_a_reference", "no colon", "gpumem.experiments.figures.latency"),
        ))


def test_a_figure_named_by_reference_is_drawn_and_a_bad_reference_is_a_note(sim_run, tmp_path):
    page = build_report([sim_run], tmp_path / "r", experiments={"latency": _NamedFigures})
    html = page.read_text(encoding="utf-8")
    assert (tmp_path / "r" / "by_name.png").is_file()
    section = _section(html, "latency")
    assert "could not draw missing_module" in section and "ModuleNotFoundError" in section
    assert "could not draw not_a_reference" in section and "package.module:function" in section
    assert not (tmp_path / "r" / "missing_module.png").exists()
    with pytest.raises(ValueError, match="package.module:function"):
        ReportFigure("x", "", "no_colon").drawer()
