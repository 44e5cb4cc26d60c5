"""Accel-Sim configs <-> gpumem's SimConfig, the export of a measured run, and the
``gpumem import/export accelsim`` commands (hook ``gpumem_register_formats``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpumem.plugin.registry import get_plugins
from gpumem.sim import SimConfig
from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.export import export_run
from gpumem_accelsim.formats import base_config
from gpumem_accelsim.known_options import VERSIONS, unknown_options
from gpumem_accelsim.options import OptionFile
from gpumem_accelsim.translate import PIPELINE, from_accelsim, to_accelsim

DATA = Path(__file__).parent / "data" / "accelsim"
REAL = ["SM2_GTX480", "SM3_KEPLER_TITAN", "SM7_QV100", "SM90_H100"]
H200_RUN = Path(__file__).parent / "data" / "h200-run"


def _load(name: str) -> AccelSimConfig:
    return AccelSimConfig.load(DATA / name)


@pytest.mark.parametrize("name", REAL)
def test_accelsim_to_simconfig_and_back_is_exact(name):
    """Every option survives Accel-Sim -> SimConfig -> Accel-Sim on the same base."""
    cfg = _load(name)
    sim, _ = from_accelsim(cfg, "x")
    back, comments, warnings = to_accelsim(sim, cfg)
    assert dict(back.merged().items()) == dict(cfg.merged().items())
    assert warnings == []
    assert "-gpgpu_cache:dl2" in comments and "-dram_latency" in comments


@pytest.mark.parametrize("name, sms, l2, l1, lat", [
    # (SMs, L2 total, L1 as gpumem's probes see it, (L1, L2, DRAM) load-to-use cycles)
    ("SM2_GTX480", 15, 12 * 64 * 128 * 8, 16 << 10, (35, 35 + 120, 35 + 120 + 100)),
    # global loads skip Kepler's L1 (-gpgpu_gmem_skip_L1D 1): the L2 without the L1's 82
    ("SM3_KEPLER_TITAN", 14, 24 * 32 * 128 * 16, 16 << 10, (82, 120, 120 + 100)),
    ("SM7_QV100", 80, 6 << 20, 128 << 10, (20, 20 + 160, 20 + 160 + 100)),
    ("SM90_H100", 132, 50 << 20, 256 << 10, (41, 41 + 237, 41 + 237 + 194)),
])
def test_totals_and_latencies(name, sms, l2, l1, lat):
    """L2 = per-slice size x channels x sub-partitions; SMs = clusters x cores; unified
    L1 at its no-shared-memory size; latencies add up level by level."""
    sim, warnings = from_accelsim(_load(name), "x")
    levels = {c.name: c for c in sim.caches}
    assert sim.sm_count == sms
    assert levels["l2"].size == l2
    assert levels["l1d"].size == l1
    assert (levels["l1d"].hit_latency, levels["l2"].hit_latency, sim.dram.latency) == lat
    assert any("no TLB" in w for w in warnings)


def test_kepler_global_loads_skip_the_l1_as_in_accel_sim():
    """-gpgpu_gmem_skip_L1D 1: global loads (.ca, .cg) go to the L2 at no L1 latency; .nc
    (__ldg) loads are cached in the L1, as the config's own comment says."""
    sim, warnings = from_accelsim(_load("SM3_KEPLER_TITAN"), "kepler")
    assert sim.paths["ca"] == ["l2"] and sim.paths["cg"] == ["l2"]
    assert sim.paths["nc"] == ["l1d", "l2"] and "l1d" in {c.name for c in sim.caches}
    assert any("skip_L1D" in w and "no L1 latency" in w for w in warnings)


def test_an_import_applies_the_builds_cycles_and_names_its_architecture_and_memory(cli,
                                                                                   tmp_path):
    """Imported as the build gpumem drives runs it: each level's latency the options plus
    the cycles that build adds (measured: QV100's L1 read 24 where its option says 20),
    the generic architecture of the config's compute capability, and the memory size it
    assumes, each said."""
    toml = tmp_path / "qv100.toml"
    res = cli("import", "accelsim", str(DATA / "SM7_QV100" / "gpgpusim.config"), "--out",
              str(toml))
    assert res.code == 0, res.err
    sim = SimConfig.load(toml)
    levels = {c.name: c for c in sim.caches}
    assert sim.arch == "sm_70"
    # what a real build measured on QV100 (tests/data/accelsim/runs): L1 23.89, L2 192.89,
    # DRAM 330.72; the DRAM's +37.8 is derived from its detailed DRAM model's options
    # (translate.dram_cycles: CL 12 at 1132/850 MHz, half the chase's loads precharging and
    # activating their row; tests/test_accelsim_dram_model.py)
    assert (levels["l1d"].hit_latency, levels["l2"].hit_latency, sim.dram.latency) == \
        pytest.approx((24, 24 + 160 + 8.9, 24 + 160 + 8.9 + 100 + 37.8))
    assert "L1 +4, L2 +8.9, DRAM +37.8" in res.err and "16 GiB assumed" in res.err
    assert "architecture 'sm_70'" in res.err


def test_qv100_peak_dram_bandwidth():
    assert _load("SM7_QV100").dram_bandwidth_gbs == pytest.approx(870.4)


def test_simconfig_features_accel_sim_lacks_are_each_warned():
    hopper = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    planted = SimConfig.from_dict(hopper.to_dict())
    planted.caches[0].policy = "random"
    _out, _comments, warnings = to_accelsim(planted, _load("SM90_H100"))
    text = "\n".join(warnings)
    assert "policy 'random'" in text
    assert "near/far" in text            # l2 + l2_far: two latencies, one written
    assert "TLB level(s)" in text
    assert "60 MB" not in text           # sizes are given in bytes, not rounded words
    # the packaged L2's slice map: homed by a table (no XOR masks to name), one latency written
    assert "slices homed by a table over 2048 address classes" in text
    assert "XOR masks []" not in text


def test_simconfig_geometry_round_trips_through_accel_sim():
    """A SimConfig Accel-Sim can express comes back with the same caches."""
    sim, _ = from_accelsim(_load("SM7_QV100"), "x")
    sim.caches[1].size = 4 << 20           # a different L2: 64 slices x 8 sets x 128 B x 64
    sim.caches[1].ways = 64
    written, _c, _w = to_accelsim(sim, _load("SM7_QV100"))
    again, _ = from_accelsim(written, "x")
    assert [(c.name, c.size, c.line, c.ways, c.sector, c.hit_latency) for c in again.caches] \
        == [(c.name, c.size, c.line, c.ways, c.sector, c.hit_latency) for c in sim.caches]


def test_non_power_of_two_sets_keep_the_capacity_in_the_ways():
    sim, _ = from_accelsim(_load("SM7_QV100"), "x")
    sim.caches[1].size = 64 * 24 * 128 * 24   # 64 slices of 24 sets: not a power of two
    written, _c, warnings = to_accelsim(sim, _load("SM7_QV100"))
    dl2 = written.cache("-gpgpu_cache:dl2")
    assert (dl2.sets, dl2.assoc) == (16, 36)
    assert any("not a power of two" in w for w in warnings)


@pytest.mark.parametrize("arch", ["fermi", "kepler", "maxwell", "hopper"])
def test_every_architecture_ships_a_base_config_the_translator_reads(arch):
    base = base_config(get_plugins(), arch)
    sim, _ = from_accelsim(base, arch)
    assert sim.sm_count > 0 and base.l2_bytes > 0
    for required in ("-gpgpu_cache:il1", "-gpgpu_tex_cache:l1", "-gpgpu_const_cache:l1",
                     "-gpgpu_cache:dl2"):
        assert required in base.merged()


def test_maxwell_base_is_4x_and_carries_the_paper_numbers():
    base = base_config(get_plugins(), "maxwell")
    assert unknown_options(base.merged(), VERSIONS[0]) == []
    assert base.sm_count == 16 and base.l2_bytes == 2 << 20      # GTX980, Mei & Chu
    assert base.int("-gpgpu_l1_latency") == 98                   # [D] -dlcm=ca run


# ---- export of a measured run ---------------------------------------------------------------


def _packaged(arch: str = "hopper") -> SimConfig:
    return get_plugins().first_result("gpumem_simulator_config", arch=arch, simulator="sim")


@pytest.fixture(scope="module")
def h200_export():
    """As ``gpumem export accelsim`` does it: the packaged built-in simulator config,
    calibrated from the run, translated onto the Accel-Sim base."""
    return export_run(H200_RUN, base_config(get_plugins(), "hopper"), sim=_packaged())


def test_export_comments_each_measured_value_with_its_finding(h200_export):
    """Each option names the SimConfig parameters it is written from and, per parameter,
    the finding that measured it (the comment was ``lat.l1 = 34 cycle (latency, ...)``
    while the export read the findings itself; it now translates the calibrated config,
    so it names parameter and finding as ``gpumem export sim`` does)."""
    c = h200_export.comments
    assert "cache:l1d.hit_latency = 34 (measured: latency/lat.l1)" in c["-gpgpu_l1_latency"]
    # the packaged L2's slice map, moved by the run's lat.l2 (the run has no slice map)
    assert "cache:l2.slice_latency" in c["-gpgpu_l2_rop_latency"]
    assert "(measured: latency/lat.l2 (the base config's slice latencies +4 cycles" \
        in c["-gpgpu_l2_rop_latency"]
    assert "(measured: latency/lat.l1)" in c["-gpgpu_l2_rop_latency"]
    assert "dram.latency = 702.25 (measured: latency/lat.dram)" in c["-dram_latency"]
    assert "(measured: latency/l2.size" in c["-gpgpu_cache:dl2"]
    assert "cache:l2_far.ways = 16 (assumed: the packaged SimConfig 'h200')" \
        in c["-gpgpu_cache:dl2"]                                   # not measured: assumed
    assert c["-gpgpu_n_clusters"].startswith("sm_count = 132 (measured: the run's device")
    assert c["-gpgpu_shader_core_pipeline"].startswith("base: ")   # not measured: the base's
    assert h200_export.params["-dram_latency"] == ["dram.latency", "cache:l2.slice_latency"]


def test_export_values_follow_the_findings(h200_export):
    """The tuner's rules on the run's own findings: rop = L2 - L1, DRAM = DRAM - L2, the L2
    hit being the packaged slice map's median over SMs and lines moved by the run's lat.l2
    (287 here, the packaged map's 283: +4)."""
    from gpumem.interop.compare import load_source
    from gpumem_accelsim.translate import _hit, pipeline_cycles

    f = {name: x.value for (exp, name), x in load_source(H200_RUN).findings.items()
         if exp in ("latency", "cache_structure")}
    cfg = h200_export.config
    # the cycles the target build adds on the base's clocks, taken out (as the export does)
    p, _ = pipeline_cycles(base_config(get_plugins(), "hopper"))
    assert cfg.int("-gpgpu_l1_latency") == round(f["lat.l1"] - p.l1) == 34 - 4
    l2 = _hit(h200_export.calibrated.config.level("l2"))
    assert l2 == _hit(_packaged().level("l2")) + f["lat.l2"] - _packaged().level("l2").hit_latency
    assert cfg.int("-gpgpu_l2_rop_latency") == round(l2 - f["lat.l1"] - p.l2)
    assert cfg.int("-dram_latency") == round(f["lat.dram"] - l2 - p.dram)
    assert 400 <= cfg.int("-dram_latency") <= 440               # about 704 - 281 - 1
    assert cfg.sm_count == 132 and cfg.core_clock_mhz == 1980
    # the calibrated SimConfig's DRAM bandwidth (Accel-Sim sets it as a DRAM clock, to a
    # tenth of a MHz), the device's peak about
    cal = h200_export.calibrated.config
    assert cfg.dram_bandwidth_gbs == pytest.approx(cal.dram.bandwidth_gbs, rel=1e-4)
    assert cfg.dram_bandwidth_gbs == pytest.approx(4814, rel=0.01)
    l2 = cfg.cache("-gpgpu_cache:dl2")
    one_way = l2.sets * l2.line * cfg.l2_bytes // (l2.sets * l2.line * l2.assoc)
    assert abs(cfg.l2_bytes - f["l2.size"]) <= one_way   # whole ways per set and slice
    # the SimConfig's line, which the run's l2.line confirms (calibrate takes no line)
    assert cfg.cache("-gpgpu_cache:dl2").line == f["l2.line"] == 128


def test_export_is_the_calibrated_config_translated(h200_export):
    """Every option written from the SimConfig holds what translating the calibrated config
    gives, and the latencies are the calibrated ones, level by level."""
    from gpumem.interop.calibrate import calibrate
    from gpumem.interop.compare import load_source
    from gpumem_accelsim.translate import _hit, pipeline_cycles, translate

    base = base_config(get_plugins(), "hopper")
    cal = calibrate(_packaged(), load_source(H200_RUN))
    p, _ = pipeline_cycles(base)
    again = translate(cal.config, base, cal.sources, pipeline=p).config.merged()
    got = h200_export.config.merged()
    assert h200_export.params and set(h200_export.params) <= set(got)
    for option in h200_export.params:
        assert got[option] == again[option], option
    c = cal.config
    l1, l2, dram = c.level("l1d").hit_latency, _hit(c.level("l2")), c.dram.latency
    assert h200_export.config.int("-gpgpu_l1_latency") == round(l1 - p.l1)
    assert h200_export.config.int("-gpgpu_l2_rop_latency") == round(l2 - l1 - p.l2)
    assert h200_export.config.int("-dram_latency") == round(dram - l2 - p.dram)
    # read back for that build, the options give the calibrated latencies again
    back, _ = from_accelsim(h200_export.config, "hopper", p)
    assert back.level("l1d").hit_latency == round(l1)
    assert back.level("l2").hit_latency == pytest.approx(l2, abs=1)  # options whole cycles
    assert back.dram.latency == pytest.approx(dram, abs=1.5)
    # what Accel-Sim cannot take is named, one line per calibrated parameter
    assert any(w.startswith("dram.efficiency (measured: bandwidth/bw.dram_read")
               for w in h200_export.warnings)


def test_a_set_index_accel_sim_lacks_is_named_with_the_index_written(h200_export):
    """The packaged H200's whole L2 spreads each page's lines over its sets (the sim's
    ``spread``), which no Accel-Sim set index is: the warning names the index the L2
    string carries, here the base config's XOR hash, not one it does not."""
    written = h200_export.config.cache("-gpgpu_cache:dl2").set_index
    assert written == "X"
    said = [w for w in h200_export.warnings if "set index 'spread'" in w]
    assert said == ["cache 'l2_far': set index 'spread' cannot be expressed; 'X' (XOR hash, "
                    "the base config's) is written"]
    assert not any("set index" in w and "'l1d'" in w for w in h200_export.warnings)  # modulo


def test_without_a_packaged_simconfig_the_base_is_calibrated():
    """An architecture that ships no built-in simulator config: its Accel-Sim base, read as
    a SimConfig, is what is calibrated."""
    done = export_run(H200_RUN, base_config(get_plugins(), "hopper"))
    assert done.config.int("-gpgpu_l1_latency") == 34 - PIPELINE[VERSIONS[0]].l1
    assert "assumed: the Accel-Sim base" in done.comments["-gpgpu_cache:dl2"]


def test_export_for_an_older_build_leaves_out_what_it_rejects(h200_export):
    assert unknown_options(h200_export.config.merged(), VERSIONS[0]) == []
    assert any("-gpgpu_n_chiplet_partition" in w for w in h200_export.warnings)
    newer = export_run(H200_RUN, base_config(get_plugins(), "hopper"), sim=_packaged(),
                       target="gpgpusim-upstream-h100")
    assert "-gpgpu_n_chiplet_partition" in newer.config.merged()


def test_the_exported_files_run_unchanged_on_their_target_build(h200_export):
    """Issue 20, item 3: the H200 base's BookSim interconnect (which wants
    config_hopper_islip.icnt beside the config) and partition indexing 6 (which the
    2024-10 build asserts on) are replaced in the written files, each with a comment saying
    why, so running them needs no fix at run time. Checked against that build (2026-12-02:
    gpumem run latency on the exported files printed no warning; L1 hits 38 cycles)."""
    from gpumem_accelsim.simulator import build_fixes

    merged = h200_export.config.merged()
    assert merged["-network_mode"] == "2" and merged["-gpgpu_memory_partition_indexing"] == "0"
    assert "BookSim" in h200_export.comments["-network_mode"]
    assert "is not in build" in h200_export.comments["-gpgpu_memory_partition_indexing"]
    same, notes = build_fixes(h200_export.config, VERSIONS[0])
    assert same is h200_export.config and notes == []


def test_exported_file_reads_back_with_the_same_options(h200_export, tmp_path):
    paths = h200_export.config.save(tmp_path, comments=h200_export.comments,
                                    header=h200_export.header)
    again = OptionFile.load(paths[0])
    assert dict(again.items()) == dict(h200_export.config.gpgpusim.items())


# ---- the commands ---------------------------------------------------------------------------


@pytest.mark.slow  # the latency ladder on the imported H100's 50 MB L2 simulates for 20 s
def test_import_writes_a_simconfig_the_builtin_simulator_runs(cli, tmp_path):
    toml = tmp_path / "h100.toml"
    res = cli("import", "accelsim", str(DATA / "SM90_H100"), "--out", str(toml),
              "--arch", "hopper")
    assert res.code == 0, res.err
    assert "no TLB" in res.err                      # warnings on stderr, one line each
    sim = SimConfig.load(toml)
    assert sim.sm_count == 132
    run = cli("run", "--arch", "hopper", "latency", "--quick", "--device", "sim",
              "--sim-config", str(toml), "--out", str(tmp_path / "run"))
    assert run.code == 0, run.err
    assert "lat.l1" in run.out and " 45 " in run.out  # -gpgpu_l1_latency 41 + the build's 4


def test_import_of_a_3x_config_is_one_clear_line_and_exit_1(cli, tmp_path):
    res = cli("import", "accelsim", str(DATA / "GTX750Ti-deprecated-3x-syntax.config"),
              "--out", str(tmp_path / "x.toml"))
    assert res.code == 1
    assert "3.x syntax" in res.err and len(res.err.strip().splitlines()) == 1
    assert not (tmp_path / "x.toml").exists()


def test_import_and_export_usage_errors_exit_2(cli, tmp_path):
    assert cli("import", "nosuch", "f", "--out", str(tmp_path / "a.toml")).code == 2
    missing = cli("import", "accelsim", str(tmp_path / "none"), "--out", str(tmp_path / "a"))
    assert missing.code == 2 and "no such file" in missing.err
    bad = cli("export", "accelsim", str(H200_RUN), "--out", str(tmp_path / "o"),
              "--target", "gpgpusim-9")
    assert bad.code == 2 and "accelsim-dev-2024-10" in bad.err


def test_export_command_writes_a_commented_config(cli, tmp_path):
    res = cli("export", "accelsim", str(H200_RUN), "--out", str(tmp_path / "cfg"))
    assert res.code == 0, res.err
    text = (tmp_path / "cfg" / "gpgpusim.config").read_text()
    assert "cache:l1d.hit_latency = 34 (measured: latency/lat.l1)" in text
    assert "# base: hopper base" in text
    assert text.startswith("# Accel-Sim config written by gpumem")


RERUN = Path(__file__).parent / "data" / "h200-reruns" / "run1"


def _sim_export_sources(text: str) -> dict[str, str]:
    """Parameter path (``cache:l1d.hit_latency``) -> the finding its line of a ``gpumem
    export sim`` file names."""
    import re

    out, table, names = {}, "", {}
    for line in text.splitlines():
        m = re.match(r"^\[\[?([\w.]+)\]\]?\s*$", line)
        if m:
            table = m.group(1)
            continue
        k = re.match(r"^(\w+)\s*=\s*(.*?)(?:\s+# measured: (.*))?$", line)
        if not k:
            continue
        key, value, finding = k.groups()
        if key == "name" and table in ("cache", "tlb"):
            names[table] = value.strip('"')
        path = (f"{table}:{names.get(table, '')}.{key}" if table in ("cache", "tlb")
                else f"{table}.{key}" if table else key)
        if finding:
            out[path] = finding
    return out


def test_both_exports_name_the_same_finding_for_each_parameter(cli, tmp_path):
    """``gpumem export sim`` and ``gpumem export accelsim`` of one run: every parameter an
    Accel-Sim option is written from names, in its comment, the finding the sim export's
    file names on that parameter's line (the L1, L2 and DRAM latencies among them), and
    has the same value."""
    import re

    from gpumem.sim.config import SimConfig as Sim
    from gpumem_accelsim.translate import _hit

    assert cli("export", "sim", str(RERUN), "--out", str(tmp_path / "h200.toml")).code == 0
    res = cli("export", "accelsim", str(RERUN), "--out", str(tmp_path / "as"))
    assert res.code == 0, res.err
    sim_text = (tmp_path / "h200.toml").read_text()
    sim_sources = _sim_export_sources(sim_text)
    sim = Sim.from_toml(sim_text)
    named: dict[str, str] = {}
    for line in (tmp_path / "as" / "gpgpusim.config").read_text().splitlines():
        for path, value, finding in re.findall(
                r"([\w:.]+) = ([\d.]+) \(measured: ([\w.]+/[\w.]+)", line):
            named[path] = finding
            assert sim_sources[path].split(" ")[0] == finding, path
            obj, _, attr = path.rpartition(".")
            owner = sim.level(obj[6:]) if obj.startswith("cache:") else \
                getattr(sim, obj) if obj else sim
            held = getattr(owner, attr)  # a slice map: the one latency Accel-Sim takes
            assert float(_hit(owner) if attr == "slice_latency" else held) == float(value), path
    assert named["cache:l1d.hit_latency"] == "latency/lat.l1"
    assert named["cache:l2.slice_latency"] == "latency/lat.l2"
    assert named["dram.latency"] == "latency/lat.dram"
    assert named["cache:l2_far.size"] == "latency/l2.size"
    assert len(named) >= 7


def test_formats_are_listed_by_list_plugins(cli):
    """gpumem_register_formats: the accelsim plugin's format shows up."""
    import json

    res = cli("list-plugins", "--json")
    data = json.loads(res.out)
    rec = {p["name"]: p for p in data["plugins"]}["accelsim"] if isinstance(data, dict) \
        else {p["name"]: p for p in data}["accelsim"]
    assert rec["contributes"]["formats"] == ["accelsim"]


def test_a_slice_map_becomes_one_l2_latency_with_a_warning_naming_what_is_lost():
    """Accel-Sim has one L2 latency for every SM and its own address hash: a sliced L2's
    median latency is written (the median of every SM's row), and the warning names the
    slices, the masks and the range of latencies that are lost."""
    sim, _ = from_accelsim(_load("SM7_QV100"), "x")
    l2 = sim.caches[1]
    l2.slices, l2.slice_masks = 4, [0x1080, 0x20500]
    l2.slice_latency = [[200.0, 260.0, 230.0, 250.0], [300.0, 210.0, 220.0, 240.0]]
    sim.validate()
    written, _c, warnings = to_accelsim(sim, _load("SM7_QV100"))
    (w,) = [w for w in warnings if "slice map" in w]
    assert "4 slices" in w and "0x1080, 0x20500" in w and "200-300" in w and "235" in w
    l1 = written.int("-gpgpu_l1_latency")
    assert l1 + written.int("-gpgpu_l2_rop_latency") == 235
