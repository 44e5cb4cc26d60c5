"""The Hopper data-movement experiments on the simulator: the ILP sweep and cp.async grids
are complete and analysed as documented; the per-SM L2 map recovers planted partitions."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.l2_map import L2SmMap
from gpumem.experiments.loads import _footprints
from gpumem.sim.config import CacheLevel, Dram, SimConfig, TlbLevel
from gpumem.sim.device import SimDevice


def test_ilp_l2_resident_footprint_holds_a_k8_chunk():
    """132 SMs x 1024 threads x 8 loads x 16 B = 17.3 MB: a quarter of a 60 MB L2 (15 MB)
    cannot hold one K = 8 iteration (the first H200 run lost those points)."""
    dev = DeviceInfo(kind="cuda", name="h200", compute_capability="9.0", sm_count=132,
                     l2_bytes=60 << 20, memory_bytes=141 << 30, clock_mhz=1980.0)
    sizes = _footprints(RunContext("hopper", dev))
    assert sizes[0] >= 132 * 1024 * 8 * 16 and sizes[0] < (60 << 20) // 2
    assert sizes[1:] == tuple(f * (60 << 20) for f in (2, 8, 32))


def test_ilp_and_cpasync_on_the_simulator(cli, tmp_path):
    import json

    res = cli("run", "--arch", "hopper", "ilp", "cpasync", "--device", "sim", "--quick",
              "--out", str(tmp_path))
    assert res.code == 0, res.err
    found = {}
    for nc in sorted(tmp_path.rglob("*.nc")):
        out = cli("analyze", str(nc), "--json")
        assert out.code == 0, out.err
        found.update(json.loads(out.out)["findings"])
    k8 = found["ilp.k8_vs_k2"]
    assert k8["index"] == {"dim": "order", "values": ["coalesced", "thread", "warp"]}
    assert all(0 < v <= 1.5 for v in k8["value"])
    assert found["cpasync.speedup"]["index"] == {"dim": "groups", "values": [1, 4, 16]}


def test_cpasync_needs_sm80(cli, tmp_path):
    res = cli("run", "--arch", "fermi", "cpasync", "--device", "sim", "--quick",
              "--out", str(tmp_path))
    assert res.code == 0 and "needs cp.async (compute capability 8.0 or newer)" in res.out


def _partitioned(sm_count: int, **slow: float) -> SimConfig:
    l2 = CacheLevel("l2", 4 << 20, 128, 16, 200.0, scope="gpu", translate=True,
                    partitions=2, partition_masks=[(1 << 7) | (1 << 12)], far_latency=320.0,
                    **slow)
    return SimConfig(name="p", arch="p", compute_capability="9.0", sm_count=sm_count,
                     clock_mhz=1000.0, caches=[l2], paths={"cg": ["l2"], "ca": ["l2"]},
                     tlbs=[TlbLevel("tlb_l1", 2 << 20, 64, 64, 10.0)], dram=Dram(600.0),
                     memory_bytes=1 << 32).validate()


def _sm_map(cfg: SimConfig) -> dict:
    """l2_sm_map's findings on ``cfg``, measured from every SM."""
    import xarray as xr

    dev = SimDevice(cfg, "p")
    ctx = RunContext("p", dev.info)
    exp = L2SmMap()
    plan = exp.plan(ctx)
    n = cfg.sm_count
    rows = [exp.measure(dev, {"sm": s}, ctx) for s in range(n)]
    ds = xr.Dataset(
        {"latency": (("sm", "access"), np.stack([r["latency"] for r in rows])),
         "element": (("sm", "access"), np.stack([r["element"] for r in rows])),
         "timer_overhead": (("sm",), np.array([r["timer_overhead"] for r in rows])),
         "point_status": (("sm",), np.zeros(n, np.int8))},
        coords={"sm": np.arange(n), "access": plan.inner["access"]},
        attrs={"footprint": plan.attrs["footprint"]})
    return {x.name: x for x in exp.analyze(ds)}


def test_l2_sm_map_recovers_planted_partitions():
    """SMs 0..n/2-1 are near partition 0 (lines with even parity of bits 7 and 12), the
    others near partition 1: two complementary groups, half the lines near each, no far hit
    slower than the rest beyond the timer's mis-timings."""
    f = {k: x.value for k, x in _sm_map(_partitioned(8)).items()}
    assert f["l2.sm_groups"] == 2
    assert f["l2.sm_partition"] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert f["l2.sm_map_near_latency"] == pytest.approx(200.0, abs=2)
    assert f["l2.sm_map_far_latency"] == pytest.approx(320.0, abs=2)
    assert 0.4 <= f["l2.near_fraction"] <= 0.6
    assert f["l2.far_slow_share"] < 0.01


def test_l2_sm_map_measures_a_planted_share_of_slow_far_hits():
    """A sixth of the far hits planted at 700 cycles: l2.far_slow_share and
    l2.far_slow_latency give them back, and l2.near_fraction reads above one half by as much
    as the slow ones leave its count (0.5 / (0.5 + 0.5 x 5/6) = 0.545), as an H200's does."""
    f = _sm_map(_partitioned(8, far_slow_share=1 / 6, far_slow_latency=700.0))
    share = f["l2.far_slow_share"]
    assert share.value == pytest.approx(1 / 6, abs=0.02)
    assert share.interval[0] <= share.value <= share.interval[1]
    assert f["l2.far_slow_latency"].value == pytest.approx(700.0, abs=2)
    assert f["l2.near_fraction"].value == pytest.approx(0.545, abs=0.02)
    assert f["l2.sm_map_far_latency"].value == pytest.approx(320.0, abs=2)


def test_l2_sm_map_without_partitions_is_one_group(cli, tmp_path):
    res = cli("run", "--arch", "kepler", "l2_sm_map", "--device", "sim", "--quick",
              "--out", str(tmp_path))
    assert res.code == 0, res.err
    assert "l2.sm_groups" in res.out


def test_sass_audit_parses_cuobjdump(monkeypatch, tmp_path):
    """The audit lists each kernel's global memory opcodes from cuobjdump's listing."""
    from gpumem.cuda import audit

    listing = ("\tcode for sm_90\n\t\tFunction : pointer_chase_cg\n"
               "        /*0100*/                   LDG.E.STRONG.GPU R5, desc[UR4][R2.64] ;\n"
               "        /*0110*/                   STS [R7], R5 ;\n"
               "\t\tFunction : stream_x\n"
               "        /*0200*/                   LDG.E.128.STRONG.GPU R4, desc[UR4][R2.64] ;\n"
               "        /*0210*/                   STG.E desc[UR4][R8.64], R9 ;\n")

    class Done:
        def __init__(self, out=""):
            self.returncode, self.stdout, self.stderr = 0, out, ""

    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd[0])
        if cmd[0].endswith("cuobjdump"):
            return Done(listing)
        return Done()

    monkeypatch.setattr(audit.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(audit.subprocess, "run", fake_run)
    ops = audit.sass_opcodes("// code", "sm_90")
    assert ops == {"pointer_chase_cg": ["LDG.E.STRONG.GPU"],
                   "stream_x": ["LDG.E.128.STRONG.GPU", "STG.E"]}
    assert audit.attr_key("stream<16,4,0,0>") == "stream_16_4_0_0"
    monkeypatch.setattr(audit.shutil, "which", lambda name: None)
    assert audit.sass_opcodes("// code", "sm_90") is None


@pytest.mark.skipif(shutil.which("c++filt") is None and shutil.which("cu++filt") is None,
                    reason="no demangler")
def test_sass_audit_names_template_instances_as_cupy_does(monkeypatch):
    """Template kernels are instantiated for the audit by address, and their mangled
    symbols listed under CuPy's names; DSMEM (generic LD) and bulk copies (UBLKCP) show."""
    import subprocess as real

    from gpumem.cuda import audit

    listing = ("\t\tFunction : _Z6streamILi16ELi4ELi0ELi0EEvPKN3VecIXT_EE1TEPS2_yyiPj\n"
               "        /*0100*/                   LDG.E.128.STRONG.GPU R4, desc[UR4][R2.64] ;\n"
               "\t\tFunction : _Z13dsmem_latencyILi2EEviiPyPj\n"
               "        /*0100*/                   LD.E R5, desc[UR4][R2.64] ;\n"
               "\t\tFunction : _Z9bulk_readILi4EEvPKhyjyPj\n"
               "        /*0100*/                   UBLKCP.S.G [UR8], [UR4], UR6 ;\n")
    written = {}
    run = real.run

    class Done:
        def __init__(self, out=""):
            self.returncode, self.stdout, self.stderr = 0, out, ""

    def fake_run(cmd, **kw):
        if cmd[0].endswith("nvcc"):
            written["src"] = open(cmd[-1]).read()
            return Done()
        if cmd[0].endswith("cuobjdump"):
            return Done(listing)
        return run(cmd, **kw)  # the demangler is real

    real_which = shutil.which
    monkeypatch.setattr(audit.shutil, "which",
                        lambda name: f"/usr/bin/{name}" if name in ("nvcc", "cuobjdump")
                        else real_which(name))
    monkeypatch.setattr(audit.subprocess, "run", fake_run)
    ops = audit.sass_opcodes("// code", "sm_90",
                             templates=("stream<16,4,0,0>", "dsmem_latency<2>", "bulk_read<4>"))
    assert "(void*)&stream<16,4,0,0>" in written["src"]
    assert ops == {"stream<16,4,0,0>": ["LDG.E.128.STRONG.GPU"], "dsmem_latency<2>": ["LD.E"],
                   "bulk_read<4>": ["UBLKCP.S.G"]}
    # cu++filt writes template arguments with casts
    assert audit.kernel_name("void dsmem_throughput<(int)2, (int)4>(int, int, unsigned long "
                             "long*, unsigned int*)") == "dsmem_throughput<2,4>"


def test_bandwidth_levels_step_down_by_level(cli, tmp_path):
    """Hopper's simulated L1 and L2 caps (the H200's, measured) show as plateaus; Kepler,
    whose L1 does not cache global loads, has no L1 plateau."""
    import json

    from gpumem.plugin.registry import get_plugins

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.level("l1d").bandwidth = 75.6  # under the issue rate: the cap shows (the H200's 125.1
    ghz = cfg.clock_mhz / 1e3           # is so close to it that the model reads 116)
    planted = tmp_path / "planted.toml"
    cfg.validate().save(planted)

    for arch in ("hopper", "kepler"):
        out = tmp_path / arch
        extra = ["--sim-config", str(planted)] if arch == "hopper" else []
        assert cli("run", "--arch", arch, "bandwidth_levels", "--device", "sim", "--quick",
                   *extra, "--out", str(out)).code == 0
        res = cli("analyze", str(next(out.rglob("*.nc"))), "--json")
        f = {k: v["value"] for k, v in json.loads(res.out)["findings"].items()}
        if arch == "hopper":
            assert f["bw.l1"] == pytest.approx(
                cfg.sm_count * cfg.level("l1d").bandwidth * ghz, rel=0.02)
            assert f["bw.l2"] == pytest.approx(cfg.level("l2").bandwidth * ghz, rel=0.02)
            assert f["bw.l2"] < f["bw.l1"] / 2
        else:
            assert "bw.l1" not in f and f["bw.l2"] > 0


def test_a_disturbed_point_reports_a_wide_ratio_interval_a_clean_one_a_narrow():
    """Measured on an H200 (GPU-e5d08128, 2026-12-01, the first of three runs): at 1920 MiB,
    six of the ten K=2 runs were slowed by a transient, so that run's K8/K2 median ratio was
    0.576 where the card's other runs gave 0.541 and 0.543. The ratio's interval from the two
    medians' intervals says how uncertain it is (wide), and its precision is short of the
    stopping rule's target, so the rule would have timed the point further (at most
    REPEATS runs); a clean point's interval stays within about 1.5 %, its target met."""
    from gpumem.contracts.estimates import median_estimate
    from gpumem.contracts.experiment import TARGET_REL_ERROR

    k2_disturbed = np.array([4381, 4227, 3872, 3750, 3897, 3898, 4264, 4088, 4092, 3997.0])
    k8 = np.array([2356, 2330, 2311, 2337, 2328, 2314, 2331, 2332, 2322, 2320.0])
    r = median_estimate(k8).over(median_estimate(k2_disturbed))
    assert r.lo <= 0.576 <= r.hi and r.hi - r.lo > 0.05
    assert r.precision.rel_error > TARGET_REL_ERROR
    assert median_estimate(k2_disturbed).precision.rel_error > 2 * TARGET_REL_ERROR
    k2_clean = np.array([4392, 4306, 4334, 4330, 4328, 4335, 4331, 4334, 4324, 4351.0])
    k8_clean = np.array([2360, 2343, 2346, 2345, 2337, 2351, 2346, 2340, 2351, 2358.0])
    c = median_estimate(k8_clean).over(median_estimate(k2_clean))
    assert c.lo <= float(np.median(k8_clean) / np.median(k2_clean)) <= c.hi
    assert (c.hi - c.lo) / 0.541 < 0.03 and c.precision.rel_error < TARGET_REL_ERROR


def test_sass_builds_run_in_the_background_batched_per_probe(monkeypatch, tmp_path):
    """The SASS audit builds while the caller goes on; instances asked for while a build of
    their probe waits join it; an instance asked for twice is built once; results() waits
    for every build asked for."""
    import threading

    from gpumem.cuda import audit

    gate, started, builds = threading.Event(), threading.Event(), []

    def fake(code, arch, options=(), instances="", timeout=120, templates=()):
        started.set()
        gate.wait(5)
        builds.append((code, tuple(templates)))
        return {t: ["LDG.E"] for t in templates} | {"plain": ["STG.E"]}

    monkeypatch.setattr(audit, "sass_opcodes", fake)
    bg = audit.SassInBackground("sm_90", workers=1, cache=audit.SassCache(tmp_path / "sass"))
    bg.ask("stream", "A", (), ("s<1>",))      # starts, blocked on the gate
    assert started.wait(5)
    bg.ask("stream", "A", (), ("s<2>",))      # queued
    bg.ask("stream", "A", (), ("s<3>",))      # joins the queued build
    bg.ask("stream", "A", (), ("s<2>",))      # asked before: nothing
    assert builds == []                       # nothing finished: the caller did not wait
    assert bg.results(wait=False) == {} and bg.pending() == 2  # not waited for
    gate.set()
    found = bg.results()
    assert builds == [("A", ("s<1>",)), ("A", ("s<2>", "s<3>"))]
    assert set(found["stream"]) == {"s<1>", "s<2>", "s<3>", "plain"}
    bg.close()
    # the next run (a new process) finds them on disk: no build, the same answer
    again = audit.SassInBackground("sm_90", workers=1,
                                   cache=audit.SassCache(tmp_path / "sass"))
    again.ask("stream", "A", (), ("s<1>",))
    again.ask("stream", "A", (), ("s<3>",))
    assert again.results(wait=False)["stream"] == found["stream"] and len(builds) == 2
    again.ask("stream", "A", (), ("s<4>",))  # a new instance: built
    again.results()
    assert builds[-1] == ("A", ("s<4>",))
    again.close()
