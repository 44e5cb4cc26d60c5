"""Runs kept as their manifest alone (:mod:`gpumem.results.kept`): ``gpumem compare`` and
``gpumem export sim`` read the findings the manifest recorded when its file is named; a run
directory whose files are gone stays damaged, with a note naming the manifest.

The data: ``tests/data/h200-session17`` keeps sixteen whole H200 runs' manifests (no raw files).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gpumem.interop.compare import compare, load_sources
from gpumem.plugin.registry import get_plugins
from gpumem.results.kept import kept_entries
from gpumem.results.verify import verify_target
from gpumem.sim.config import SimConfig

DATA = Path(__file__).parent / "data"
KEPT = DATA / "h200-session17" / "gpuc49e3-hopper1" / "manifest.json"
OTHER = DATA / "h200-session17" / "gpu850e8-hopper1" / "manifest.json"


def test_a_manifest_gives_the_findings_it_recorded():
    recorded = json.loads(KEPT.read_text())["entries"]
    (src,) = load_sources(KEPT)
    assert src.label == "gpuc49e3-hopper1" and src.arch == "hopper" and src.device is None
    n = 0
    for e in recorded.values():
        for name, d in (e.get("findings") or {}).items():
            f = src.findings[(e["experiment"], name)]
            assert f.value == d["value"] and f.units == d["units"]
            assert (f.interval is None) == (d.get("interval") is None)
            n += 1
    assert n == len(src.findings) >= 70
    assert verify_target(KEPT) == []  # nothing to check a manifest against but itself


def test_two_kept_runs_compare_like_two_run_directories(cli):
    res = cli("compare", str(KEPT), str(OTHER), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    s = data["agreement"]
    assert [r["label"] for r in data["runs"]] == ["gpuc49e3-hopper1", "gpu850e8-hopper1"]
    assert s["structural_equal"] == s["structural"] >= 15  # two healthy H200s
    assert s["measured_within"] >= 0.9 * s["measured"] >= 45


def test_a_run_directory_whose_files_are_gone_is_damaged_and_points_to_its_manifest(cli):
    res = cli("compare", str(KEPT.parent), str(OTHER))
    assert res.code == 1
    assert "gpumem: damaged:" in res.err and "missing" in res.err
    note = [ln for ln in res.err.splitlines() if ln.startswith("gpumem: note:")]
    assert len(note) == 1 and str(KEPT) in note[0], res.err


def test_expected_values_need_the_device_a_manifest_does_not_describe(cli):
    res = cli("compare", str(KEPT), str(OTHER), "--check")
    assert res.code == 2
    assert "keeps no description of its device" in res.err
    assert len(res.err.strip().splitlines()) == 1


@pytest.mark.parametrize("text, says", [
    ("{not json", "cannot read run manifest"),
    ('{"entries": []}', "not a gpumem run manifest"),
    ('{"entries": {"k": {"status": "complete", "experiment": "latency", '
     '"findings": ["lat.l1"]}}}', "'findings' is not an object"),
    ('{"entries": {"k": {"status": "complete", "experiment": "latency", '
     '"findings": {"lat.l1": 34}}}}', "finding 'lat.l1': cannot read it back"),
    ('{"entries": {"k": {"status": "complete", "experiment": "latency", '
     '"findings": {"lat.l1": {"value": 34, "index": {"dim": 1}}}}}}',
     "finding 'lat.l1': cannot read it back"),
    ('{"entries": {"k": {"status": "running", "experiment": "latency"}}}',
     "no findings recorded"),
])
def test_a_hostile_manifest_is_one_line_and_exit_1(cli, tmp_path, text, says):
    bad = tmp_path / "run" / "manifest.json"
    bad.parent.mkdir()
    bad.write_text(text)
    res = cli("compare", str(bad), str(OTHER))
    assert res.code == 1, res.err
    assert says in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_a_folder_of_named_manifests_is_read_by_name(tmp_path):
    """``NAME.manifest.json`` (tests/data/h200-generic keeps runs so) is labelled NAME."""
    named = tmp_path / "hopper1.manifest.json"
    shutil.copy(KEPT, named)
    (src,) = load_sources(named)
    assert src.label == "hopper1" and len(src.findings) == len(load_sources(KEPT)[0].findings)
    assert [e.version for e in kept_entries(named) if e.experiment == "bandwidth"] == ["3"]


def test_export_sim_from_a_kept_run_says_what_it_could_not_know(cli, tmp_path):
    out = tmp_path / "h200.toml"
    res = cli("export", "sim", str(KEPT), "--out", str(out))
    assert res.code == 0, res.err
    assert "no device description" in res.err
    text = out.read_text()
    assert "gpuc49e3-hopper1/manifest.json" in text.splitlines()[0]
    assert str(DATA) not in text  # the run's name, not this checkout's path
    assert "the findings are those the run's manifest recorded" in text.lower()
    cfg = SimConfig.load(out)
    (src,) = load_sources(KEPT)
    assert cfg.dram.latency == src.value("latency", "lat.dram")
    assert cfg.level("l1d").hit_latency == src.value("latency", "lat.l1")
    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    assert cfg.clock_mhz == base.clock_mhz and cfg.sm_count == base.sm_count


def test_a_kept_run_against_a_simulated_one(sim_run):
    """What ``benchmarks/sim_vs_h200.py`` does for the held-out cards."""
    run = sim_run("hopper")
    assert run.ran, run.text[-2000:]
    data = compare(get_plugins(), [OTHER, run.out], False)
    s = data["agreement"]
    assert s["measured"] >= 50 and s["structural_equal"] == s["structural"]


def test_one_lost_file_is_damage_with_no_note_about_kept_runs(cli, sim_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(sim_run("hopper").out, run)
    next(run.rglob("latency-*.nc")).unlink()
    res = cli("compare", str(run))
    assert res.code == 1 and "gpumem: damaged:" in res.err
    assert "gpumem: note:" not in res.err


def test_show_of_a_manifest_lists_each_entrys_recorded_findings(cli):
    res = cli("show", str(KEPT), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    latency = next(e for e in data["kept"] if e["experiment"] == "latency")
    (src,) = load_sources(KEPT)
    assert latency["findings"]["lat.dram"]["value"] == src.value("latency", "lat.dram")
    assert latency["version"] == "2"
    table = cli("show", str(KEPT))
    assert table.code == 0 and "as recorded, no raw data kept" in table.out
    assert "lat.dram" in table.out


def test_export_sim_pools_several_runs_each_finding_the_median_runs(cli, tmp_path):
    runs = [DATA / "h200-session17" / n / "manifest.json"
            for n in ("gpuc49e3-hopper1", "gpuc49e3-hopper2", "gpu850e8-hopper1")]
    out = tmp_path / "pooled.toml"
    res = cli("export", "sim", *map(str, runs), "--out", str(out))
    assert res.code == 0, res.err
    assert "(3 pooled)" in res.err
    cfg = SimConfig.load(out)
    penalties = sorted(load_sources(r)[0].value("tlb_structure", "tlb_l1.miss_penalty")
                       for r in runs)  # 10.3, 10.42, 11.0: the middle one, never an average
    assert cfg.tlbs[0].miss_penalty == penalties[1]
    text = out.read_text()
    assert "gpuc49e3-hopper1/manifest.json, gpuc49e3-hopper2/manifest.json" in text
    assert "pooled (each finding the median run's)" in text.splitlines()[0] + text


def test_pooling_refuses_what_it_cannot_pool(cli, tmp_path):
    gen = DATA / "h200-session17" / "gpuc49e3-gen1" / "manifest.json"  # the generic sm_90
    mixed = cli("export", "sim", str(KEPT), str(gen), "--out", str(tmp_path / "m.toml"))
    assert mixed.code == 2 and "different architectures" in mixed.err
    again = cli("export", "sim", str(KEPT), str(KEPT), "--out", str(tmp_path / "a.toml"))
    assert again.code == 2 and "given twice" in again.err
    other = cli("export", "accelsim", str(KEPT), str(OTHER), "--out", str(tmp_path / "cfg"))
    assert other.code == 2 and "exports one run at a time" in other.err
    assert not any(tmp_path.iterdir())
    forced = cli("export", "sim", str(KEPT), str(gen), "--arch", "hopper", "--out",
                 str(tmp_path / "f.toml"))
    assert forced.code == 0, forced.err


@pytest.mark.parametrize("where", ["kept", "run"])
def test_a_manifest_nested_too_deep_is_one_line_not_a_traceback(cli, tmp_path, where):
    deep = ('{"entries": {"k": {"status": "complete", "experiment": "latency", "findings": '
            '{"lat.l1": {"value": ' + "[" * 100_000 + "]" * 100_000 + "}}}}}")
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(deep)
    target = run / "manifest.json" if where == "kept" else run
    res = cli("show", str(target))
    assert res.code == 1 and "Traceback" not in res.err
    assert "cannot read run manifest (RecursionError" in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_a_run_named_to_inject_toml_stays_in_its_comment(cli, tmp_path):
    """The run's folder name goes into the config's header comment: a newline in it must
    not end the comment and make what follows configuration."""
    run = tmp_path / "a\nsm_count = 7\n[dram]\nlatency = 1.0\n# x"
    run.mkdir()
    shutil.copy(KEPT, run / "manifest.json")
    out = tmp_path / "o.toml"
    res = cli("export", "sim", str(run / "manifest.json"), "--out", str(out))
    assert res.code == 0, res.err
    cfg = SimConfig.load(out)
    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    assert cfg.sm_count == base.sm_count
    assert cfg.dram.latency == load_sources(KEPT)[0].value("latency", "lat.dram")
    assert "a\\x0asm_count = 7" in out.read_text().splitlines()[0]
