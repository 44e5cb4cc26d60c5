"""cache_structure's one walk (issue 32, item 1): every stage on planted caches in the
simulator (the planted geometry is the truth), and the live search and the analysis of its
own stored chases give the same findings, for each in-tree architecture's simulator."""

from __future__ import annotations

import pytest
import xarray as xr
from gpumem.analysis.chases import chases_from_dataset
from gpumem.experiments.cache_structure import CacheStructure, confidence
from gpumem.experiments.cache_structure.ahead import Ahead
from gpumem.experiments.cache_structure.l2 import l2_stages
from gpumem.experiments.cache_structure.stages import (
    calibrate,
    capacity,
    closing,
    index_bits,
    line_and_sets,
    policy,
)
from gpumem.experiments.cache_structure.walk import _LiveSource, _StoredSource, _Walk, walk
from gpumem.experiments.chaselog import ChaseLog
from gpumem.plugin.registry import get_plugins
from gpumem.sim.config import CacheLevel, Dram, SetIndex, SimConfig, Timer
from gpumem.sim.device import SimDevice
from helpers import slow_beyond

L2 = 2 << 20


def _device(l1: CacheLevel | None, l2_sector: int = 32, l2_hashed: bool = False) -> SimDevice:
    """A planted L1 (path ``ca``) in front of a 2 MB L2 of 128-B lines (path ``cg``)."""
    l2 = CacheLevel("l2", L2, 128, 16, 200.0, sector=l2_sector, scope="gpu",
                    index=SetIndex("hashed") if l2_hashed else SetIndex())
    caches = [l1, l2] if l1 else [l2]
    cfg = SimConfig(name="planted", arch="planted", compute_capability="9.0", sm_count=1,
                    clock_mhz=1000.0, caches=caches,
                    paths={"ca": ["l1d", "l2"], "cg": ["l2"]} if l1 else {"cg": ["l2"]},
                    tlbs=[], dram=Dram(500.0),
                    timer=Timer(overhead=4.0, jitter=1.0, outlier_rate=0.001),
                    memory_bytes=1 << 30).validate()
    return SimDevice(cfg, "planted")


def _l1(sets: int = 32, ways: int = 4, line: int = 128, sector: int = 0,
        policy: str = "lru", weights: tuple[float, ...] = (), index: SetIndex | None = None
        ) -> CacheLevel:
    return CacheLevel("l1d", sets * ways * line, line, ways, 30.0, sector=sector,
                      policy=policy, way_weights=list(weights), index=index or SetIndex())


def _walk(dev: SimDevice) -> _Walk:
    info = dev.info
    src = _LiveSource(ChaseLog(Ahead(dev)), info.load_paths, info.l2_bytes, info.memory_bytes)
    return _Walk(src, "ca")


def _found(w: _Walk) -> dict:
    return {f.name: f for f in w.out}


def test_calibration_finds_the_hit_latency_and_the_next_levels():
    w = _walk(_device(_l1()))
    assert calibrate(w)
    assert w.first.footprint == 512 and w.first.median == pytest.approx(30.0, abs=1)
    assert 30 * 1.25 < w.rule.lo < 200  # a miss: from between the L1 hit and the L2 hit up


def test_capacity_stage_finds_the_planted_capacity_and_reproduces_its_edge():
    w = _walk(_device(_l1(sets=32, ways=4, line=128)))
    assert calibrate(w)
    cap = capacity(w)
    assert cap is not None and (cap.cap, cap.nxt, cap.verified) == (16384, 16416, True)
    size = _found(w)["l1d.overflow_size"]
    assert (size.value, size.confidence) == (16384, confidence.SURE)
    assert len([c for c in w.of("size") if c.footprint in (16384, 16416)]) >= 4


@pytest.mark.parametrize("line, sector", [(64, 0), (128, 32)])
def test_line_and_sets_stages_find_line_sector_ways_sets(line, sector):
    w = _walk(_device(_l1(sets=16, ways=6, line=line, sector=sector)))
    assert calibrate(w)
    geo = line_and_sets(w, capacity(w))
    assert geo is not None and (geo.line, geo.ways, len(geo.lines)) == (line, 6, 7)
    f = _found(w)
    assert f["l1d.line"].value == line and f["l1d.line"].confidence == confidence.SURE
    assert f["l1d.sector"].value == (sector or line)
    assert (f["l1d.ways"].value, f["l1d.sets"].value) == (6, 16)


def test_index_bits_stage_finds_xor_folded_bits():
    # 8 sets of 128-B lines: set bit i is address bit 7 + i, bit 7 folded with bit 12
    masks = [(1 << 7) | (1 << 12), 1 << 8, 1 << 9]
    w = _walk(_device(_l1(sets=8, ways=4, index=SetIndex("xor", masks=masks))))
    assert calibrate(w)
    cap = capacity(w)
    index_bits(w, cap, line_and_sets(w, cap))
    bits = _found(w)["l1d.index_bits"]
    assert bits.value == "8-9, 7^12" and bits.confidence == confidence.SURE


@pytest.mark.parametrize("planted, weights, name, conf", [
    ("lru", (), "lru", confidence.SURE),
    ("fifo", (), "fifo", confidence.SURE),
    ("weighted", (1.0, 1.0, 6.0, 1.0), "non-lru", confidence.REPLAYED),
])
def test_policy_stage_tells_the_planted_policy(planted, weights, name, conf):
    w = _walk(_device(_l1(sets=16, ways=4, policy=planted, weights=weights)))
    assert calibrate(w)
    cap = capacity(w)
    policy(w, cap, line_and_sets(w, cap))
    f = _found(w)
    assert (f["l1d.policy"].value, f["l1d.policy"].confidence) == (name, conf)
    if planted == "weighted":
        weights_found = f["l1d.way_weights"].value
        assert weights_found[0] == max(weights_found) > 3 * weights_found[-1]


def test_closing_gives_the_half_miss_footprint_and_the_scattered_line():
    w = _walk(_device(_l1(sets=32, ways=4, line=128)))
    assert calibrate(w)
    capacity(w)
    out = {f.name: f for f in closing(w)}
    assert 16384 <= out["l1d.half_miss_size"].value <= 32768
    assert "unresolved" not in repr(out["l1d.half_miss_size"])


def test_a_hashed_index_stops_the_search_where_the_analysis_stops():
    """Misses that ramp: where conflicts begin is no capacity, so the walk takes no line
    chases (the analysis would not read them) and the line comes from the scattered chases."""
    table = [(7 * i + i // 5) % 32 for i in range(512)]
    w = _walk(_device(_l1(sets=32, ways=4, line=128, index=SetIndex("table", table=table))))
    assert calibrate(w)
    assert capacity(w) is None
    assert w.onset is not None and not w.of("line")
    out = {f.name: f for f in closing(w)}
    assert out["l1d.line"].value == 128 and "conflicts began" in \
        out["l1d.half_miss_size"].note


@pytest.mark.parametrize("sector", [32, 64])
def test_l2_stages_find_fill_unit_line_and_ways(sector):
    dev = _device(None, l2_sector=sector)
    info = dev.info
    src = _LiveSource(ChaseLog(Ahead(dev)), info.load_paths, info.l2_bytes, info.memory_bytes)
    out = {f.name: f for f in l2_stages(src, [])}
    assert out["l2.fill_unit"].value == sector
    assert out["l2.line"].value == 128
    assert (out["l2.ways"].value, out["l2.sets"].value) == (16, L2 // (16 * 128))


def test_a_hashed_l2_whose_line_is_not_found_gets_no_ways():
    """A random-table hash already misses at the hit reference's footprint, so no line is
    read; the eviction-set search (tests/test_l2_evict.py) needs the line and stays out."""
    dev = _device(None, l2_hashed=True)
    info = dev.info
    src = _LiveSource(ChaseLog(Ahead(dev)), info.load_paths, info.l2_bytes, info.memory_bytes)
    assert "l2.ways" not in {f.name for f in l2_stages(src, [])}


def test_a_stored_walk_runs_nothing():
    dev = _device(_l1())
    log = ChaseLog(Ahead(dev))
    info = dev.info
    walk(_LiveSource(log, info.load_paths, info.l2_bytes, info.memory_bytes))
    chases = chases_from_dataset(log.dataset())
    src = _StoredSource(chases, float(info.l2_bytes))
    walk(src)
    assert src.chases == chases and len(chases) == len(log.chases)


# kepler's and maxwell's walks (four paths each) take 10-12 s of CPU: in CI only
@pytest.mark.parametrize("arch", slow_beyond(["fermi", "kepler", "maxwell", "hopper"],
                                             keep=["fermi", "hopper"]))
def test_the_live_walk_and_the_analysis_of_its_stored_chases_agree(arch, tmp_path):
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    dev = SimDevice(cfg, arch)
    info = dev.info
    log = ChaseLog(Ahead(dev), seed=0)
    live = walk(_LiveSource(log, info.load_paths, info.l2_bytes, info.memory_bytes))
    ds = log.dataset()
    ds.attrs["l2_bytes"] = info.l2_bytes
    ds.to_netcdf(tmp_path / "raw.nc")
    with xr.open_dataset(tmp_path / "raw.nc") as raw:
        stored = CacheStructure().analyze(raw.load())
    assert [repr(f) for f in live] == [repr(f) for f in stored]
    assert len(live) > 15
