"""TMA bulk copies on the simulator: planted DRAM latency and bandwidth come back through
Little's law; devices before sm_90 skip the experiment."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from gpumem.contracts.device import BulkRequest
from gpumem.plugin.registry import get_plugins


@pytest.mark.parametrize("latency, gbs", [(617.0, 4800.0), (400.0, 2000.0)])
def test_planted_dram_latency_and_bandwidth_come_back(cli, tmp_path, latency, gbs):
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    # a plain Little's-law copy: the DRAM's latency and rate, none of the H200's fitted
    # bulk mechanisms (round trip, engine rate, issue interval, own ceiling, soft knee)
    cfg = dataclasses.replace(
        cfg, dram=dataclasses.replace(cfg.dram, latency=latency, bandwidth_gbs=gbs,
                                      bulk_efficiency=0.0, sharpness=0.0),
        throughput=dataclasses.replace(cfg.throughput, bulk_latency=0.0,
                                       bulk_bytes_per_cycle=0.0,
                                       bulk_issue_cycles=0.0)).validate()
    conf = tmp_path / "planted.toml"
    cfg.save(conf)
    r = cli("run", "--arch", "hopper", "bulk_copy", "--device", "sim", "--sim-config",
            str(conf), "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    (nc,) = (tmp_path / "r").rglob("*.nc")
    found = json.loads(cli("analyze", str(nc), "--json").out)["findings"]
    cap = gbs * cfg.dram.efficiency
    assert found["bw.dram_read_bulk"]["value"] == pytest.approx(cap, rel=0.02)
    assert found["bulk.latency_estimate"]["value"] == pytest.approx(latency, rel=0.03)
    # Little's law: reaching the cap takes about cap x latency bytes in flight, over the SMs
    need = cap * 1e9 / (cfg.clock_mhz * 1e6) * latency / cfg.sm_count
    assert 0.9 * need <= found["bulk.inflight_per_sm"]["value"] <= 4 * need


def test_devices_before_sm90_skip_bulk_copies(cli, tmp_path):
    r = cli("run", "--arch", "maxwell", "bulk_copy", "--device", "sim", "--out",
            str(tmp_path / "r"))
    assert r.code == 0, r.err
    # one line on stderr says why, naming the device and its compute capability
    assert "bulk_copy: skipped: needs the TMA's bulk copies (compute capability 9.0 or newer), " \
           "which sim gtx980 (compute capability 5.2) does not offer" in r.err


@pytest.mark.parametrize("kw, msg", [({"chunk": 24}, "multiple of 16"),
                                     ({"stages": 0}, "stages must be"),
                                     ({"footprint": 8}, "at least one chunk")])
def test_bad_requests_are_refused(kw, msg):
    args = {"footprint": 1 << 20, "chunk": 1024, "stages": 2, **kw}
    with pytest.raises(ValueError, match=msg):
        BulkRequest(**args).validate()


class _BulkRecorder:
    """A device whose bulk copies run at a fixed rate after a fixed launch overhead
    (seconds), recording each request's bytes."""

    def __init__(self, gbs: float, overhead: float):
        self.gbs, self.overhead, self.works = gbs, overhead, []

    def bulk_copy(self, req):
        from gpumem.contracts.device import StreamResult

        self.works.append(req.bytes_per_direction)
        return StreamResult(bytes=req.bytes_per_direction, cycles=0.0,
                            seconds=self.overhead + req.bytes_per_direction / (self.gbs * 1e9))


@pytest.mark.parametrize("gbs", [60.0, 4300.0])
def test_bulk_runs_last_about_run_seconds_and_read_the_buffer_at_least_once(gbs):
    """Version 1 read the 480 MB buffer once per run, 110 us on an H200, so a 5 us launch
    was some 4 % of the figure and two runs of one GPU job read 4303.6 and 4020.9 GB/s. Now a
    fast point's runs last about RUN_S despite the launch; a slow point still reads the
    whole buffer once (not less: the L2 would serve a part), not 2 GiB."""
    from gpumem.contracts.experiment import POINT_RUNS, RunContext, measure_point
    from gpumem.experiments.bulk import BulkCopy
    from gpumem.sim.device import sim_device_info

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    ctx = RunContext("hopper", sim_device_info(cfg))
    exp = BulkCopy()
    plan = exp.plan(ctx)
    a = plan.attrs
    dev = _BulkRecorder(gbs, overhead=5e-6)
    out = measure_point(exp, dev, {"chunk": 32768, "stages": 1, "ctas_per_sm": 4},
                        ctx.with_repeats(plan))
    n = out[POINT_RUNS]["repeats"]  # the stopping rule's runs
    timed = dev.works[-n:]
    assert len(set(timed)) == 1 and len(dev.works) - n <= 3
    if gbs < 100:
        assert timed[0] == a["footprint"] == 8 * ctx.device.l2_bytes // 32768 * 32768
    else:
        seconds = 5e-6 + timed[0] / (gbs * 1e9)
        assert a["footprint"] < timed[0] <= a["work_bytes"]
        assert seconds >= 0.95 * min(a["run_seconds"], a["work_bytes"] / (gbs * 1e9))
        assert np.median(out["gbs"][:n]) >= 0.985 * gbs  # v1: 0.96
    assert np.allclose(out["seconds"][:n], [5e-6 + w / (gbs * 1e9) for w in timed])


def test_a_cycle_level_simulator_reads_the_buffer_once_without_probes():
    from gpumem.contracts.experiment import RunContext, measure_point
    from gpumem.experiments.bulk import BulkCopy
    from gpumem.sim.device import sim_device_info

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    info = dataclasses.replace(sim_device_info(cfg), cycles_per_second=1e4)
    ctx = RunContext("hopper", info)
    exp = BulkCopy()
    plan = exp.plan(ctx)
    dev = _BulkRecorder(4300.0, overhead=5e-6)
    measure_point(exp, dev, {"chunk": 32768, "stages": 1, "ctas_per_sm": 1},
                  ctx.with_repeats(plan))
    assert dev.works == [plan.attrs["footprint"]] * plan.repeats
