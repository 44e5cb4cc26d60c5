"""Cache-level bandwidth searched over kernel shapes (issue 31): the simulator's planted L1
and L2 caps come back as the best shape's figure, per clock and as a fraction of the width;
the per-block order keeps an SM's share to its resident blocks' slices; runs are sized in
time from a first run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gpumem.contracts.device import StreamRequest
from gpumem.contracts.experiment import MIN_REPEATS, POINT_RUNS, RunContext, measure_point
from gpumem.contracts.level_widths import l1_width
from gpumem.experiments.bandwidth import Bandwidth
from gpumem.experiments.bandwidth_levels import BandwidthLevels
from gpumem.plugin.registry import get_plugins
from gpumem.sim.device import SimDevice, sim_device_info
from gpumem.sim.throughput import stream_model

#: An L1 cap well under the issue rate (128 B/cycle/SM), so the best shape reaches it: the
#: H200's measured 125.1 sits so close to the issue rate that the model's smooth minimum of
#: the two reads 116, so the packaged config's cap is solved through the model (156.2:
#: tests/test_calibrate.py).
PLANTED_L1 = 75.6


@pytest.fixture(scope="module")
def hopper():
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    cfg.level("l1d").bandwidth = PLANTED_L1
    return cfg.validate()


def _planted(tmp_path, cfg) -> str:
    path = tmp_path / "planted.toml"
    cfg.save(path)
    return str(path)


def test_planted_caps_come_back_per_clock_and_as_width_fractions(cli, tmp_path, hopper):
    out = tmp_path / "run"
    assert cli("run", "--arch", "hopper", "bandwidth_levels", "--device", "sim",
               "--sim-config", _planted(tmp_path, hopper), "--out", str(out)).code == 0
    res = cli("analyze", str(next(out.rglob("*.nc"))), "--json")
    f = json.loads(res.out)["findings"]
    l1 = hopper.level("l1d").bandwidth
    assert f["bw.l1_bytes_per_clk"]["value"] == pytest.approx(l1, rel=0.02)
    assert f["bw.l2_bytes_per_clk"]["value"] == pytest.approx(hopper.level("l2").bandwidth,
                                                               rel=0.02)
    width, source = l1_width("9.0")
    assert f["bw.l1_width_fraction"]["value"] == pytest.approx(l1 / width, rel=0.02)
    assert "128 bytes per clock per SM" in f["bw.l1_width_fraction"]["method"]
    assert source in f["bw.l1_width_fraction"]["method"]
    # no published L2 width for Hopper: bytes per clock, no fraction made up
    assert "bw.l2_width_fraction" not in f
    # the method names the shape that won
    assert "blocks/SM" in f["bw.l1"]["method"] and "threads" in f["bw.l1"]["method"]


def test_the_best_shape_of_the_grid_reaches_the_planted_l1_cap(hopper):
    """Over the searched shapes the modelled L1 read reaches the config's cap, and no shape
    passes it."""
    info = sim_device_info(hopper)
    sms, l1 = info.sm_count, hopper.level("l1d")
    fp = sms * 32 * 1024

    def rate(ctas_per_sm, threads, ilp):
        return stream_model(hopper, StreamRequest(
            footprint=fp, ctas=sms * ctas_per_sm, threads=threads, ilp=ilp, width=16,
            path="ca", order="block")).rate

    rates = [rate(c, t, k) for c in (1, 2, 4, 8) for t in (256, 1024) for k in (2, 8)]
    assert max(rates) == pytest.approx(sms * l1.bandwidth, rel=0.02)
    assert max(rates) <= sms * l1.bandwidth * 1.0001


def test_block_order_keeps_an_sms_share_to_its_resident_slices(hopper):
    """Eight blocks per SM of 1024 threads cannot all be resident: in order 'block' an SM
    reads only the slices of those that are, so the L1 serves a footprint whose grid-strided
    share per SM would not fit it."""
    sms = sim_device_info(hopper).sm_count
    l1 = hopper.level("l1d").size
    fp = sms * (l1 * 3 // 2) // (1 << 16) * (1 << 16)  # 1.5 L1s per SM
    req = dict(footprint=fp, ctas=8 * sms, threads=1024, ilp=2, width=16, path="ca")
    assert stream_model(hopper, StreamRequest(**req, order="block")).serving == "l1d"
    assert stream_model(hopper, StreamRequest(**req, order="coalesced")).serving != "l1d"


def test_shared_slices_are_re_read_from_other_sms_so_an_sms_share_grows():
    """``share``: the grid's blocks read ctas // share slices. Every block on one slice (share
    = ctas): each SM reads the whole footprint, which its L1 no longer holds; the kernel's
    address of block b is slice b mod slices; share needs order 'block'."""
    hopper = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    sms = sim_device_info(hopper).sm_count
    l1 = hopper.level("l1d").size
    fp = sms * (l1 // 2) // (1 << 16) * (1 << 16)  # half an L1 per SM
    req = dict(footprint=fp, ctas=2 * sms, threads=512, ilp=2, width=16, path="ca",
               order="block")
    assert stream_model(hopper, StreamRequest(**req)).serving == "l1d"
    one = StreamRequest(**req, share=2 * sms)
    assert one.slices == 1 and stream_model(hopper, one).serving != "l1d"
    assert StreamRequest(**req, share=4).slices == sms // 2
    with pytest.raises(ValueError, match="only with order 'block'"):
        StreamRequest(**{**req, "order": "coalesced"}, share=2).validate()
    with pytest.raises(ValueError, match="share must be >= 1"):
        StreamRequest(**req, share=0).validate()


class _Recorder:
    """A device whose streams run at a fixed rate after a fixed launch overhead (seconds),
    recording each request's bytes."""

    def __init__(self, gbs: float, overhead: float = 0.0):
        self.gbs, self.overhead, self.works = gbs, overhead, []

    def stream(self, req):
        from gpumem.contracts.device import StreamResult

        self.works.append(req.bytes_per_direction)
        moved = req.bytes_per_direction * (2 if req.kind == "copy" else 1)
        return StreamResult(bytes=moved, seconds=self.overhead + moved / (self.gbs * 1e9),
                            cycles=0.0)


@pytest.mark.parametrize("gbs", [5.0, 4500.0])
def test_bandwidth_runs_are_sized_in_time_within_their_floor_and_cap(hopper, gbs):
    info = sim_device_info(hopper)
    ctx = RunContext("hopper", info)
    exp = Bandwidth()
    a = exp.plan(ctx).attrs
    dev = _Recorder(gbs)
    out = measure_point(exp, dev, {"kind": "read", "width": 16, "ctas": 132, "threads": 1024,
                                   "ilp": 4}, ctx.with_repeats(exp.plan(ctx)))
    n = out[POINT_RUNS]["repeats"]  # the stopping rule's runs (a quiet device: its fewest)
    assert n == MIN_REPEATS
    probes, timed = dev.works[:-n], dev.works[-n:]
    assert probes[0] == a["min_work_bytes"]
    # a probe too short to size the runs (four L2s at 4.5 TB/s: 56 us) is run again
    assert len(probes) == (1 if gbs < 100 else 2)
    want = min(max(a["min_work_bytes"], gbs * 1e9 * a["run_seconds"]), a["work_bytes"])
    assert all(w == int(want) for w in timed)
    # a slow point moves the floor (four L2s: still streamed from DRAM), not 2 GiB
    if gbs < 100:
        assert timed[0] == 4 * info.l2_bytes < a["work_bytes"]
    assert np.allclose(out["gbs"][:n], gbs) and np.isnan(out["gbs"][n:]).all()


def test_bandwidth_levels_runs_last_about_run_seconds(hopper):
    info = sim_device_info(hopper)
    ctx = RunContext("hopper", info)
    exp = BandwidthLevels()
    a = exp.plan(ctx).attrs
    dev = _Recorder(30000.0)
    fp = info.sm_count * 64 * 1024
    out = measure_point(exp, dev, {"path": "ca", "ctas_per_sm": 2, "threads": 256, "ilp": 8,
                                   "footprint": fp}, ctx.with_repeats(exp.plan(ctx)))
    n = out[POINT_RUNS]["repeats"]
    assert dev.works[-n:] == [int(30000e9 * a["run_seconds"])] * n


def test_bandwidth_levels_runs_last_run_seconds_despite_the_launch_overhead(hopper):
    """An H200 read the L1 at 32 TB/s, so the 256 MiB probe took 8 us of reading and as
    much of launch: sized from it alone, runs meant to last 0.5 ms lasted 0.15-0.3 ms. The
    probes go on until one lasts long enough to show the rate."""
    info = sim_device_info(hopper)
    ctx = RunContext("hopper", info)
    exp = BandwidthLevels()
    a = exp.plan(ctx).attrs
    dev = _Recorder(32000.0, overhead=8e-6)
    out = measure_point(exp, dev, {"path": "ca", "ctas_per_sm": 2, "threads": 256, "ilp": 8,
                                   "footprint": info.sm_count * 64 * 1024},
                        ctx.with_repeats(exp.plan(ctx)))
    n = out[POINT_RUNS]["repeats"]
    seconds = [8e-6 + w / 32000e9 for w in dev.works[-n:]]
    assert min(seconds) >= 0.95 * a["run_seconds"]
    assert len(dev.works) - n <= 3  # probes: at most three


def test_version_2_files_still_analyse(hopper):
    """A raw file of the two-occupancy version (no shape axes) gives its two findings."""
    import xarray as xr

    foot = np.array([1 << 20, 8 << 20, 64 << 20])
    gbs = np.array([[[30000.0] * 3, [9000.0, 9000.0, 3000.0]]] * 2).transpose(1, 0, 2)
    ds = xr.Dataset({"gbs": (("path", "ctas", "footprint", "repeat"),
                             np.repeat(gbs[..., None], 3, axis=-1)),
                     "point_status": (("path", "ctas", "footprint"),
                                      np.zeros(gbs.shape, int))},
                    coords={"path": ["ca", "cg"], "ctas": [132, 528], "footprint": foot},
                    attrs={"sm_count": 132, "l2_bytes": 60 << 20})
    f = {x.name: x.value for x in BandwidthLevels().analyze(ds)}
    assert f == {"bw.l1": 30000.0, "bw.l2": 9000.0}


def test_sim_device_serves_block_order(hopper):
    dev = SimDevice(hopper, "hopper")
    sms = dev.info.sm_count
    res = dev.stream(StreamRequest(footprint=sms * 32 * 1024, ctas=2 * sms, threads=256,
                                   ilp=8, width=16, path="ca", order="block", work=1 << 30))
    assert res.gbs == pytest.approx(sms * hopper.level("l1d").bandwidth
                                    * hopper.clock_mhz / 1e3, rel=0.03)
