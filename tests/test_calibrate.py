"""``gpumem export sim RUN``: a built-in simulator config calibrated from a measured run
(issue 19, item 1), every calibrated parameter commented with its finding."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from gpumem.cli import main
from gpumem.interop.compare import load_source
from gpumem.sim.config import SimConfig

RUN = Path(__file__).parent / "data" / "h200-reruns" / "run1"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "h200.toml"
    assert main(["export", "sim", str(RUN), "--out", str(out)]) == 0
    return out


def test_findings_of_an_earlier_experiment_version_are_said(tmp_path, capsys):
    """run1's bandwidth, bandwidth_levels, bulk_copy and patterns files were
    measured by versions this gpumem has since changed: the export says which, and that the
    parameters set from them describe that version's measurement; latency (today's version)
    is not named."""
    assert main(["export", "sim", str(RUN), "--out", str(tmp_path / "c.toml")]) == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "earlier version" in x)
    assert "bandwidth_levels" in line and "patterns" in line and "latency" not in line
    assert "run those experiments again" in line


def test_every_calibrated_parameter_names_a_finding_of_the_run(exported):
    text = exported.read_text()
    cfg = SimConfig.from_toml(text)
    from gpumem.plugin.registry import get_plugins

    src = load_source(RUN, reanalyze_with=get_plugins())  # as export sim reads it
    found = {f"{e}/{n}" for e, n in src.findings}
    named = re.findall(r"# measured: ([\w.]+/[\w.]+)", text)
    assert len(named) >= 15
    assert set(named) <= found
    assert "ASSUMED" in text.splitlines()[2]
    value = {f"{e}/{n}": f.value for (e, n), f in src.findings.items()}
    assert cfg.level("l1d").hit_latency == value["latency/lat.l1"]
    assert cfg.level("l2").hit_latency == value["latency/lat.l2"]
    assert cfg.dram.latency == value["latency/lat.dram"]
    assert cfg.smem.latency == value["smem_latency/lat.smem"]
    assert cfg.path_latency["nc"] == (value["cache_structure/ro.hit_latency"]
                                      - value["cache_structure/l1d.hit_latency"])
    # the DRAM's rates: the model, at the bandwidth sweep's busiest point, moves what the H200
    # moved (efficiencies solved through the model, whose knee keeps reads under the cap)
    from gpumem.interop.calibrate import _busiest_stream
    from gpumem.sim.throughput import stream_model

    assert cfg.dram.bandwidth_gbs == round(src.device.peak_bandwidth_gbs, 1)
    ghz = cfg.clock_mhz / 1e3
    for kind in ("read", "write", "copy"):
        model = stream_model(cfg, _busiest_stream(cfg, kind)).rate * ghz
        assert model == pytest.approx(value[f"bandwidth/bw.dram_{kind}"], rel=0.002), kind
    assert 0.8 < cfg.dram.mix_efficiency < 1.0  # an H200's copy loses ~9 % to the mix
    # the L2's look-ups: the model's per-thread contiguous K=8/K=2 ratios, L2-resident and
    # HBM-resident, are the measured ones
    from gpumem.contracts.device import StreamRequest

    def ratio(footprint: int) -> float:
        def bw(k: int) -> float:
            return stream_model(cfg, StreamRequest(
                footprint=footprint, ctas=cfg.sm_count, threads=1024, ilp=k, width=16,
                path="cg", order="thread", kind="read", work=2 << 30)).rate
        return bw(8) / bw(2)
    def thread(name: str) -> float:
        f = src.findings[("ilp", name)]
        return f.value[list(f.index[1]).index("thread")]
    l2, hbm = thread("ilp.l2_k8_vs_k2"), thread("ilp.k8_vs_k2")
    assert ratio(cfg.level("l2").size // 2) == pytest.approx(l2, rel=0.01)
    assert ratio(1 << 30) == pytest.approx(hbm, rel=0.01)


def test_the_simulator_on_the_calibrated_config_reproduces_the_ladder(exported, tmp_path,
                                                                        capsys):
    """The latency ladder on the calibrated config against the H200's: its levels land within
    1 % (lat.l1, lat.l2, lat.dram), where the packaged config is 6-12 % off."""
    sim = tmp_path / "sim"
    assert main(["run", "--arch", "hopper", "latency", "--device", "sim", "--sim-config",
                 str(exported), "--out", str(sim)]) == 0
    hw = load_source(RUN).findings
    got = load_source(sim).findings
    for name in ("lat.l1", "lat.l2", "lat.dram"):
        want = hw[("latency", name)].value
        assert got[("latency", name)].value == pytest.approx(want, rel=0.01), name


def test_bad_requests_are_one_line_usage_errors(tmp_path, capsys):
    assert main(["export", "sim", str(RUN), "--out", str(tmp_path / "x.toml"),
                 "--arch", "nosuch"]) == 2
    assert "unknown architecture 'nosuch'" in capsys.readouterr().err
    assert main(["export", "sim", str(RUN), "--out", str(tmp_path / "x.toml"),
                 "--target", "v2"]) == 2
    assert "no --target" in capsys.readouterr().err
    assert not (tmp_path / "x.toml").exists()


def test_a_cluster_load_of_the_blocks_own_shared_memory_has_its_own_latency(exported):
    """smem.cluster_latency (new model parameter): distance 0 of the DSMEM probe is served at
    it, plain shared loads stay at smem.latency; 0 keeps the old behaviour."""
    from dataclasses import replace

    from gpumem.contracts.device import DsmemRequest
    from gpumem.sim.throughput import dsmem_model

    cfg = SimConfig.from_toml(exported.read_text())
    hw = {n: f.value for (_e, n), f in load_source(RUN).findings.items()}
    own = DsmemRequest(cluster=2, distance=0)
    other = DsmemRequest(cluster=2, distance=1)
    assert dsmem_model(cfg, own)[0] == hw["lat.dsmem_local"]
    assert dsmem_model(cfg, other)[0] == hw["lat.dsmem"]
    plain = replace(cfg, smem=replace(cfg.smem, cluster_latency=0.0))
    assert dsmem_model(plain, own)[0] == cfg.smem.latency == hw["lat.smem"]
    # the own block's rate and the rank-by-rank latencies of a cluster of 8, from the run
    ghz = cfg.clock_mhz / 1e3
    assert cfg.smem.cluster_bytes_per_cycle == round(hw["bw.dsmem_local"] / ghz, 2)
    assert cfg.smem.remote_latency_by_rank == hw["dsmem.latency_by_distance"][1:]


def test_a_bulk_copy_waits_its_own_round_trip(exported):
    """throughput.bulk_latency: Little's law for TMA bulk copies uses the measured round trip
    (plus the copy engine's time for the chunk), so the lone 1-KB copy per SM moves what the
    H200's did; and the model's best over the bulk_copy sweep's grid (the finding is the
    sweep's best point) is the H200's best."""
    from gpumem.contracts.device import BulkRequest
    from gpumem.experiments.bulk import CHUNKS, CTAS_PER_SM, STAGES
    from gpumem.sim.throughput import bulk_model

    cfg = SimConfig.from_toml(exported.read_text())
    hw = {n: f.value for (_e, n), f in load_source(RUN).findings.items()}
    tp = cfg.throughput
    assert tp.bulk_latency == hw["bulk.latency_estimate"]
    lone = bulk_model(cfg, BulkRequest(footprint=1 << 30, chunk=1024, stages=1))
    assert cfg.sm_count * 1024 / lone == pytest.approx(
        tp.bulk_latency + 1024 / tp.bulk_bytes_per_cycle, rel=0.01)
    best = max(bulk_model(cfg, BulkRequest(footprint=1 << 30, chunk=c, stages=s,
                                           ctas_per_sm=b))
               for c in CHUNKS for s in STAGES for b in CTAS_PER_SM
               if c * s * b <= cfg.smem.size)
    assert best * cfg.clock_mhz / 1e3 == pytest.approx(hw["bw.dram_read_bulk"], rel=0.002)


# a run, then a report drawing the figures of every experiment of run1: 19 s of CPU
@pytest.mark.slow
def test_the_report_of_two_runs_shows_their_agreement(tmp_path):
    """gpumem report HW SIM: a section with each finding's error and the same summary as
    gpumem compare (issue 19, item 3)."""
    import contextlib
    import io
    import json

    from gpumem.plugin.registry import get_plugins
    from gpumem.report import build_report

    sim = tmp_path / "sim"
    assert main(["run", "--arch", "hopper", "latency", "smem_latency", "--device", "sim",
                 "--out", str(sim)]) == 0
    page = build_report([RUN, sim], tmp_path / "rep",
                        experiments=get_plugins().experiments()).read_text()
    section = page[page.index('<section id="agreement">'):]
    section = section[:section.index("</section>")]
    assert "lat.l1" in section and "differs" in section and "agrees" in section
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["compare", str(RUN), str(sim), "--json"]) == 0
    s = json.loads(buf.getvalue())["agreement"]
    assert (f"{s['measured_within']} of {s['measured']} measured findings within 5%"
            in section)


def test_each_sm_gets_its_measured_partition(exported, tmp_path):
    """cache.sm_partition (new model parameter): the H200's SM-to-partition map, which
    alternates in a pattern of the die, not in halves by SM number; on the calibrated config
    the simulator's l2_sm_map finds the H200's map again."""
    cfg = SimConfig.from_toml(exported.read_text())
    far = next(lv for lv in cfg.caches if lv.partitions > 1)
    hw = load_source(RUN).findings[("l2_sm_map", "l2.sm_partition")].value
    assert far.sm_partition == list(hw)
    sim = tmp_path / "sim"
    assert main(["run", "--arch", "hopper", "l2_sm_map", "--device", "sim", "--sim-config",
                 str(exported), "--out", str(sim)]) == 0
    assert load_source(sim).findings[("l2_sm_map", "l2.sm_partition")].value == hw
    bad = SimConfig.from_toml(exported.read_text())
    bad.level(far.name).sm_partition = [0, 2]
    with pytest.raises(ValueError, match="sm_partition"):
        bad.validate()


@pytest.mark.parametrize("measured", [32_700.0, 20_000.0])
def test_a_measured_l1_bandwidth_comes_back_from_the_simulator(tmp_path, measured):
    """The L1's cap is solved through the model, so the simulated bandwidth_levels sweep reads
    what the GPU read: near the SM's issue rate (an H200's 125.1 of 128 B/cycle/SM) the cap
    read off as GB/s per clock gave 7 % less (the smooth minimum of two nearly equal caps);
    well under it, the cap is about the measured rate itself."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins

    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    src = Source("planted", "hopper", None,
                 {("bandwidth_levels", "bw.l1"): Finding("bw.l1", measured, "GB/s")})
    cal = calibrate(base, src)
    per_clk = measured / (base.clock_mhz / 1e3) / base.sm_count
    cap = cal.config.level("l1d").bandwidth
    assert cap >= per_clk
    assert cal.sources["cache:l1d.bandwidth"].startswith("bandwidth_levels/bw.l1 (the cap at")
    path = tmp_path / "cal.toml"
    cal.config.save(path)
    out = tmp_path / "run"
    assert main(["run", "--arch", "hopper", "bandwidth_levels", "--device", "sim",
                 "--sim-config", str(path), "--out", str(out)]) == 0
    got = load_source(out).findings[("bandwidth_levels", "bw.l1")].value
    assert got == pytest.approx(measured, rel=0.01)
    if measured > 30_000:  # the case that read 116 B/cycle/SM of a measured 125
        assert cap > 1.1 * per_clk


def test_slow_far_hits_are_set_from_l2_sm_map_and_a_timer_share_is_none():
    """l2.far_slow_share and l2.far_slow_latency set the far level's slow hits, each named
    in its source; a share under 1 % (what the timer's mis-timings give a model without
    slow hits) sets none."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins

    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")

    def found(share: float, latency: float) -> dict:
        return {("l2_sm_map", n): Finding(n, v, u) for n, v, u in (
            ("l2.sm_map_near_latency", 450.0, "cycle"), ("l2.sm_map_far_latency", 520.0, "cycle"),
            ("l2.far_slow_share", share, "1"), ("l2.far_slow_latency", latency, "cycle"))}

    cal = calibrate(base, Source("planted", "hopper", None, found(0.2, 900.0)))
    far = cal.config.level("l2_far")
    assert (far.far_slow_share, far.far_slow_latency) == (0.2, 900.0)
    assert cal.sources["cache:l2_far.far_slow_share"].startswith("l2_sm_map/l2.far_slow_share")
    cal.config.validate()
    none = calibrate(base, Source("planted", "hopper", None, found(0.004, 880.0))).config
    assert none.level("l2_far").far_slow_share == 0.0
    assert none.level("l2_far").far_slow_latency == 0.0
    none.validate()


def test_a_ratio_beyond_the_models_reach_takes_its_closest_and_says_so():
    """The H200's HBM-resident K=8/K=2 ratio (0.538) lies just below what the model gives at
    one look-up per sector filled (0.542): the calibration takes that bound, names the gap,
    and never leaves the base's value standing as if it were fitted."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins

    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    base.level("l2").fill_lookups = 0.7
    orders = ("coalesced", "thread", "warp")

    def ratio(name: str, thread: float) -> tuple[tuple[str, str], Finding]:
        return ("ilp", name), Finding(name, [1.0, thread, 1.0], "1", index=("order", orders))
    src = Source("planted", "hopper", None, dict([ratio("ilp.l2_k8_vs_k2", 0.613),
                                                  ratio("ilp.k8_vs_k2", 0.45)]))
    cal = calibrate(base, src)
    l2 = cal.config.level("l2")
    assert l2.fill_lookups == l2.line / l2.sector_size
    assert "the closest it comes to the measured 0.450" in cal.sources["cache:l2.fill_lookups"]
    reachable = dict([ratio("ilp.l2_k8_vs_k2", 0.613), ratio("ilp.k8_vs_k2", 0.6)])
    solved = calibrate(base, Source("planted", "hopper", None, reachable)).config
    assert 0.01 < solved.level("l2").fill_lookups < l2.line / l2.sector_size


def test_p6_sets_what_missing_every_tlb_level_costs_beyond_their_penalties(tmp_path):
    """Mei & Chu's P6 misses every TLB level on a DRAM access: the calibrated model's P6 is
    the measured one (the page walk is the rest, the levels' penalties kept)."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins

    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    found = {("latency", "lat.dram"): Finding("lat.dram", 700.0, "cycle"),
             ("patterns", "lat.pattern.P6"): Finding("lat.pattern.P6", 820.0, "cycle")}
    cal = calibrate(base, Source("planted", "hopper", None, found))
    cfg = cal.config
    assert cfg.page_walk_latency == pytest.approx(
        820.0 - 700.0 - sum(t.miss_penalty for t in cfg.tlbs), abs=0.05)
    assert cal.sources["page_walk_latency"].startswith("patterns/lat.pattern.P6")
    path = tmp_path / "cal.toml"
    cfg.save(path)
    out = tmp_path / "run"
    assert main(["run", "--arch", "hopper", "patterns", "--device", "sim", "--sim-config",
                 str(path), "--out", str(out)]) == 0
    assert load_source(out).value("patterns", "lat.pattern.P6") == pytest.approx(820, abs=3)
    # a P6 under what the levels' penalties already add up to sets nothing
    found[("patterns", "lat.pattern.P6")] = Finding("lat.pattern.P6", 650.0, "cycle")
    low = calibrate(base, Source("planted", "hopper", None, found))
    assert "page_walk_latency" not in low.sources


def test_a_warps_issue_cycles_come_from_its_rate_at_each_ilp(exported):
    """smem.load_issue_cycles and iteration_cycles: 128 B / rate = load + iteration / ILP,
    fitted over smem.warp_rate_by_ilp (run1: 20.5 B/cycle at ILP 1 to 29.9 at 8, every ILP
    within 0.5 %); a planted pair comes back exactly, and a warp no faster than ILP loads per
    latency sets nothing (Little's law over the latency stands)."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins
    from gpumem.sim.throughput import WARP

    cfg = SimConfig.from_toml(exported.read_text())
    hw = {n: f for (_e, n), f in load_source(RUN, reanalyze_with=get_plugins()).findings.items()}
    rates = hw["smem.warp_rate_by_ilp"].value
    ilps = hw["smem.warp_rate_by_ilp"].index[1]
    for i, r in zip(ilps, rates, strict=True):
        model = i * WARP * 4 / (i * cfg.smem.load_issue_cycles + cfg.smem.iteration_cycles)
        assert model == pytest.approx(r, rel=0.005), (i, model, r)

    def fitted(values):
        f = Finding("smem.warp_rate_by_ilp", values, "byte/cycle", 1.0, "planted",
                    index=("ilp", [1, 2, 4, 8]))
        src = Source("planted", "hopper", None, {("smem_bandwidth", f.name): f})
        return calibrate(cfg, src).config.smem

    planted = [i * 128 / (i * 3.0 + 5.0) for i in (1, 2, 4, 8)]
    got = fitted(planted)
    assert (got.load_issue_cycles, got.iteration_cycles) == pytest.approx((3.0, 5.0), abs=1e-3)
    slow = [i * 128 / cfg.smem.latency for i in (1, 2, 4, 8)]  # ILP loads per latency
    base = dataclasses.replace(cfg.smem, load_issue_cycles=0.0, iteration_cycles=0.0)
    cfg = dataclasses.replace(cfg, smem=base)
    assert fitted(slow).load_issue_cycles == 0.0


def test_a_run_without_a_slice_map_moves_the_base_configs_by_its_l2_latency(tmp_path):
    """A run that measured lat.l2 but no slice map of its own (the packaged H200's map comes
    from another card's dense l2_slices page) keeps the base's map, every latency moved by
    the run's L2 hit over the base's: the simulated ladder follows the run (17 cycles
    slower here) and the lines keep their spread; the parameter names lat.l2."""
    from gpumem.contracts.findings import Finding
    from gpumem.contracts.formats import Source
    from gpumem.interop.calibrate import calibrate
    from gpumem.plugin.registry import get_plugins

    base = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    l2 = base.level("l2")
    assert l2.slices > 60 and l2.slice_table  # the packaged map
    moved = l2.hit_latency + 17
    src = Source("planted", "hopper", None,
                 {("latency", "lat.l2"): Finding("lat.l2", moved, "cycle")})
    cal = calibrate(base, src)
    got = cal.config.level("l2")
    assert got.slice_table == l2.slice_table and got.slice_kernel == l2.slice_kernel
    assert all(round(b - a, 2) == 17 for ra, rb in zip(l2.slice_latency, got.slice_latency,
                                                      strict=True)
               for a, b in zip(ra, rb, strict=True))
    assert cal.sources["cache:l2.slice_latency"].startswith(
        "latency/lat.l2 (the base config's slice latencies +17 cycles")
    path, out = tmp_path / "moved.toml", tmp_path / "run"
    cal.config.save(path)
    for config, where in ((None, tmp_path / "base"), (path, out)):
        args = ["--sim-config", str(config)] if config else []
        assert main(["run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
                     *args, "--out", str(where)]) == 0
    before = load_source(tmp_path / "base").findings[("latency", "lat.l2")].value
    after = load_source(out).findings[("latency", "lat.l2")].value
    assert after - before == pytest.approx(17, abs=1)
