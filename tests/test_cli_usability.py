"""Usability of the CLI (issue 17, items 6 and 7): tables readable at 80 columns, honest
progress for open-ended searches, what --resume kept, run --help listing what is there, one
exit code per error class, and importers that take real captures (a shell's trailing line)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Finding
from gpumem.run.request import Outcome, RunReport
from rich.console import Console
from rich.text import Text

DATA = Path(__file__).parent / "data"
BENCH = DATA / "gpu-benches"


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    """A quick kepler run of two experiments on the simulator."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out = tmp_path_factory.mktemp("usability") / "run"
    reset_plugins()
    assert main(["run", "--arch", "kepler", "latency", "bandwidth", "--device", "sim",
                 "--quick", "--out", str(out)]) == 0
    return out


def render(renderable: object, width: int = 80) -> str:
    con = Console(file=io.StringIO(), width=width, color_system=None, soft_wrap=True)  # as stdout()
    con.print(renderable)
    return con.file.getvalue()


def widest(text: str) -> int:
    return max(Text(line).cell_len for line in text.splitlines())


# ---- 1. tables at 80 columns: finding names whole ------------------------------------------

LONG = ["bw.dram_read_fraction", "lat.dram_tlb_miss_ns", "tlb_l2.coverage_per_set_bytes",
        "l2.half_miss_size"]


def _report() -> RunReport:
    info = DeviceInfo(kind="sim", name="gtx780", compute_capability="3.5", sm_count=12,
                      l2_bytes=1 << 20, memory_bytes=1 << 30, clock_mhz=1000.0)
    fs = [Finding(n, 123456.789 * (k + 1), "byte", 0.9, "a long method " * 8,
                  expected=[1, 2, 3, 4, 5, 6, 7, 8], status="pass")
          for k, n in enumerate(LONG)]
    return RunReport(Path("/tmp/some/long/run/directory"), info, "kepler", [
        Outcome("cache_structure", "complete", Path("x.nc"), fs),
        Outcome("bandwidth_levels", "failed", error="RuntimeError: " + "a long error " * 12),
    ])


@pytest.mark.parametrize("width", [60, 80, 120])
def test_run_summary_keeps_every_finding_name_whole(width):
    from gpumem.cli.run import summary_table

    out = render(summary_table(_report()), width)
    for name in LONG + ["cache_structure", "bandwidth_levels"]:
        assert name in out, out
    assert "…" not in out, out
    if width >= 80:  # below the width of the names themselves, lines may be longer
        assert widest(out) <= width, out
    assert out.count("long") >= 12  # the error of a failed experiment wraps, whole


def test_findings_table_leaves_out_columns_rather_than_cut_names():
    from gpumem.cli._common import FitTable
    from gpumem.cli.show import FINDINGS_DROP, findings_table

    t = findings_table()
    for n in LONG:
        # finding, value, interval, units, band, expected, status, confidence, method
        t.add_row(n, "unresolved: 16777216 | 33554432", "-", "byte", "-", "-", "unresolved",
                  "0.50", "a long method " * 10)
    out = render(FitTable(t, drop=FINDINGS_DROP), 80)
    assert all(n in out for n in LONG) and "…" not in out and widest(out) <= 80, out
    assert "left out:" in out and "confidence" in out.split("left out:")[1]
    wide = render(FitTable(t, drop=FINDINGS_DROP), 300)  # room: nothing left out
    assert "left out" not in wide and "confidence" in wide


@pytest.mark.parametrize("args", [["show"], ["compare"], ["compare", "--expected"],
                                  ["compare", "--check"], ["compare", "TWICE"]])
def test_show_and_compare_at_80_columns(cli, sim_run, monkeypatch, args):
    names = {r["finding"] for r in json.loads(cli("compare", str(sim_run), "--json").out)["rows"]}
    assert "bw.dram_read_fraction" in names
    monkeypatch.setenv("COLUMNS", "80")
    extra = [str(sim_run)] if args[-1] == "TWICE" else []
    res = cli(*[a for a in args if a != "TWICE"], str(sim_run), *extra)
    assert res.code in (0, 1), res.err
    for n in names:
        assert re.search(rf"(^|[\s│]){re.escape(n)}([\s│]|$)", res.out, re.M), (n, res.out)
    tables = [ln for ln in res.out.splitlines() if ln[:1] in "┏┃│┡└┗┣╭╰"]
    assert tables and max(Text(ln).cell_len for ln in tables) <= 80, res.out
    assert "…" not in res.out


# ---- 2. progress of an experiment that drives its own search --------------------------------

def test_open_ended_search_has_no_made_up_total():
    from gpumem.cli.run import RichReporter

    rep = RichReporter()
    rep.experiment_started("cache_structure", 0)
    t = rep.tasks["cache_structure"]
    assert rep.progress.tasks[t].total is None          # rich: an indeterminate bar
    for _ in range(329):
        rep.point_done("cache_structure")
    rep.points_added("cache_structure", 5)               # stays open-ended
    assert rep.progress.tasks[t].total is None
    shown = render(rep.progress.make_tasks_table(rep.progress.tasks))
    assert "329/?" in shown and "/0" not in shown, shown
    rep.experiment_finished(Outcome("cache_structure", "complete"))
    task = rep.progress.tasks[t]
    assert task.total == task.completed == 329           # a finished search: a full bar

    rep.experiment_started("latency", 10)                # a planned grid keeps its total
    rep.points_added("latency", 4)
    assert rep.progress.tasks[rep.tasks["latency"]].total == 14


# ---- 3. --resume says what it kept ---------------------------------------------------------

def test_resume_names_the_experiments_it_kept(cli, tmp_path):
    out = tmp_path / "r"
    assert cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
               "--out", str(out)).code == 0
    res = cli("run", "--arch", "kepler", "latency", "bandwidth", "--device", "sim", "--quick",
              "--out", str(out), "--resume")
    assert res.code == 0, res.err
    (line,) = [ln for ln in res.out.splitlines() if ln.startswith("resumed:")]
    assert line == "resumed: kept 1 complete experiment(s) from before: latency"
    plain = cli("run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
                "--out", str(tmp_path / "fresh"))
    assert "resumed:" not in plain.out


# ---- 4. run --help lists architectures and experiments --------------------------------------

def _flat(s: str) -> str:
    return " ".join(s.replace("│", " ").split())


def test_run_help_lists_architectures_and_experiments(cli):
    res = cli("run", "--help")
    assert res.code == 0
    flat = _flat(res.out)
    assert "Architectures: fermi, hopper, kepler, maxwell; sm_XY for any GPU of compute " \
           "capability X.Y." in flat, res.out
    for exp in ("latency", "bandwidth", "cache_structure", "tlb_structure"):
        assert re.search(rf"\b{exp}\b", flat.split("Experiments:")[1]), res.out


def test_run_help_survives_plugins_that_fail(cli, monkeypatch):
    import gpumem.cli.run as run_mod
    from gpumem.contracts.errors import PluginError

    def broken():
        raise PluginError("plugin 'x' failed to load: [bold]boom\x1b[0m")

    monkeypatch.setattr(run_mod, "plugins", broken)
    res = cli("run", "--help")
    assert res.code == 0 and "--arch" in res.out
    assert "could not be listed" in _flat(res.out) and "\x1b" not in res.out


# ---- 5. a path that does not exist: a usage error, exit 2, in every command -----------------

@pytest.mark.parametrize("args", [
    ["show", "{missing}"],
    ["show", "{missing}", "--json"],
    ["compare", "{missing}"],
    ["compare", "{run}", "{missing}"],
    ["analyze", "{missing}"],
    ["report", "{missing}", "--out", "{tmp}/report"],
    ["export", "accelsim", "{missing}", "--out", "{tmp}/export"],
    ["import", "gpu-benches", "{missing}", "--out", "{tmp}/import"],
    ["import", "mt4g", "{missing}", "--out", "{tmp}/import"],
])
def test_a_missing_path_is_a_usage_error_in_every_command(cli, sim_run, tmp_path, args):
    missing = tmp_path / "no-such-thing"
    argv = [a.format(missing=missing, run=sim_run, tmp=tmp_path) for a in args]
    res = cli(*argv)
    assert res.code == 2, (res.out, res.err)
    assert res.err.count("\n") == 1 and f"{missing}: no such file or directory" in res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written


# ---- 6. importers take real captures ------------------------------------------------------

def _capture(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "gpu-latency.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_gpu_latency_with_a_shell_trailer_and_a_stray_comment_imports(cli, tmp_path):
    lines = (BENCH / "gpu-latency-h200-like.txt").read_text().splitlines()
    lines.insert(10, "# rerun after a reboot \x1b[31mred\x1b[0m")
    lines.append("Command exited with non-zero status 124")
    src = _capture(tmp_path, lines)
    out = tmp_path / "run"
    res = cli("import", "gpu-benches", str(src), "--out", str(out))
    assert res.code == 0, res.err
    warn = [ln for ln in res.err.splitlines() if "skipped" in ln]
    assert len(warn) == 1, res.err
    assert "skipped 2 line(s) that are not gpu-latency output" in warn[0]
    assert "line 11 " in warn[0] and f"line {len(lines)} " in warn[0]
    assert "Command exited with non-zero status 124" in warn[0]
    assert "\x1b" not in res.err and "\\x1b" in warn[0]     # control characters escaped
    shown = cli("show", str(out), "--json")
    findings = {k for f in json.loads(shown.out)["files"] for k in f["findings"]}
    assert {"lat.l1", "lat.l2"} <= findings


def test_a_capture_with_no_data_row_still_fails(cli, tmp_path):
    src = _capture(tmp_path, ["clock: 1980 1980", "Command exited with non-zero status 124"])
    res = cli("import", "gpu-benches", str(src), "--out", str(tmp_path / "run"))
    assert res.code == 1 and "not gpu-benches output" in res.err
    assert not (tmp_path / "run").exists()


def test_many_skipped_lines_make_one_bounded_warning(cli, tmp_path):
    lines = (BENCH / "gpu-latency-h200-like.txt").read_text().splitlines()
    lines += [f"noise {k}" for k in range(40)]
    res = cli("import", "gpu-benches", str(_capture(tmp_path, lines)),
              "--out", str(tmp_path / "run"))
    assert res.code == 0, res.err
    (warn,) = [ln for ln in res.err.splitlines() if "skipped" in ln]
    assert "skipped 40 line(s)" in warn and "and 35 more" in warn and len(warn) < 600


def test_mt4g_json_with_a_shell_trailer_imports(cli, tmp_path):
    text = (DATA / "mt4g" / "NVIDIA H100 80GB HBM3.json").read_text()
    src = tmp_path / "mt4g.txt"
    src.write_text("mt4g: measuring GPU 0\n" + text.rstrip("\n")
                   + "\nCommand exited with non-zero status 124\n")
    res = cli("import", "mt4g", str(src), "--out", str(tmp_path / "run"))
    assert res.code == 0, res.err
    (warn,) = [ln for ln in res.err.splitlines() if "skipped" in ln]
    n = len(text.rstrip("\n").split("\n"))
    assert "skipped 2 line(s) around the JSON document" in warn
    assert "line 1 'mt4g: measuring GPU 0'" in warn
    assert f"line {n + 2} 'Command exited with non-zero status 124'" in warn
    truncated = tmp_path / "cut.txt"
    truncated.write_text("mt4g: measuring GPU 0\n" + text[: len(text) // 2])
    res = cli("import", "mt4g", str(truncated), "--out", str(tmp_path / "run2"))
    assert res.code == 1 and "not JSON" in res.err
