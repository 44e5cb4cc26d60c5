"""The line (allocation unit) from scattered chases, where Mei & Chu's overflow search cannot
find it: a hashed set index whose misses ramp (the H200's L1), and the L2 behind near and far
partitions. Planted geometries in the simulator are the ground truth."""

from __future__ import annotations

import dataclasses
import random

import pytest
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.cache_structure import (
    CacheStructure,
    _l2_line,
    _l2_scatter_chases,
    _scatter_shares,
    scatter_chases,
    scatter_line,
)
from gpumem.experiments.chaselog import ChaseLog
from gpumem.plugin.registry import get_plugins
from gpumem.sim.config import CacheLevel, Dram, SetIndex, SimConfig, Timer, TlbLevel
from gpumem.sim.device import SimDevice
from gpumem.testing import random_cache


def test_scatter_line_is_the_last_block_on_the_plateau():
    # sectored 128-B line: below the sector the accesses share sectors, past the line the
    # lines in play halve with each doubling
    assert scatter_line({16: 0.5, 32: 0.97, 64: 0.98, 128: 0.96, 256: 0.04, 512: 0.0}) \
        == (128, 0.9)
    # unsectored 64-B line: the share climbs to the line, then falls
    assert scatter_line({16: 0.25, 32: 0.5, 64: 1.0, 128: 0.3, 256: 0.1})[0] == 64
    # a direct-mapped cache still misses about half one block past its line
    assert scatter_line({32: 1.0, 64: 1.0, 128: 0.55, 256: 0.3}) == (64, 0.9)
    # a slow fall gives the line with less confidence
    assert scatter_line({32: 1.0, 64: 1.0, 128: 0.8, 256: 0.3}) == (64, 0.5)


@pytest.mark.parametrize("shares", [
    {32: 1.0, 64: 1.0, 128: 0.99},   # still on the plateau at the largest block
    {32: 0.05, 64: 0.04, 128: 0.0},  # nothing misses: no plateau
    {32: 1.0, 64: 0.1},              # too few blocks tried
])
def test_scatter_line_declines_without_a_plateau_and_a_fall(shares):
    assert scatter_line(shares) is None


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_planted_lines_of_random_geometries(seed):
    """Every policy and index function of the planted-cache generator, timer noise on."""
    planted = random_cache(seed)
    l1 = planted.config.caches[0]
    log = ChaseLog(SimDevice(planted.config, "planted"), seed=seed)
    scatter_chases(log, "ca", int(1.1 * planted.truth["l1d.overflow_size"]), l1.hit_latency * 1.25)
    found = scatter_line(_scatter_shares(log.chases, l1.hit_latency * 1.5))
    assert found is not None and found[0] == planted.truth["l1d.line"], planted.description


def _hashed(line: int, sector: int, ways: int = 4, sets: int = 64, seed: int = 0) -> SimConfig:
    """An L1 whose set is a random table of the block number: conflicts ramp in long
    before the capacity, and no single set can be overflowed on its own."""
    r = random.Random(seed)
    table = [i % sets for i in range(16 * sets)]
    r.shuffle(table)
    l1 = CacheLevel("l1d", sets * ways * line, line, ways, 30.0, sector=sector,
                    index=SetIndex("table", table=table))
    l2 = CacheLevel("l2", 8 << 20, 128, 16, 200.0, sector=32, scope="gpu", translate=True)
    return SimConfig(name="hashed", arch="planted", compute_capability="9.0", sm_count=1,
                     clock_mhz=1000.0, caches=[l1, l2], paths={"ca": ["l1d", "l2"],
                                                              "cg": ["l2"]},
                     tlbs=[TlbLevel("tlb_l1", 2 << 20, 32, 32, 10.0)], dram=Dram(500.0),
                     timer=Timer(overhead=4.0, jitter=1.0, outlier_rate=0.001),
                     memory_bytes=1 << 30, seed=seed).validate()


@pytest.mark.parametrize("line, sector", [(64, 0), (128, 32), (256, 32)])
def test_hashed_l1_line_and_sector_where_the_overflow_search_fails(line, sector):
    dev = SimDevice(_hashed(line, sector), "planted")
    exp = CacheStructure()
    raw = exp.sweep(dev, RunContext("planted", dev.info), lambda n: None)
    raw.attrs["l2_bytes"] = dev.info.l2_bytes
    found = {f.name: f for f in exp.analyze(raw)}
    assert found["l1d.line"].value == line
    assert "scattered chases" in found["l1d.line"].method
    assert "ways and sets not inferred" in found["l1d.line"].note
    assert "l1d.ways" not in found
    assert found["l1d.sector"].value == (sector or line)
    # the first conflicts come well before the capacity here: no size is claimed from them
    # (a note says where they began), and half the accesses miss only much later, near the
    # capacity
    half = found["l1d.half_miss_size"]
    assert "l1d.overflow_size" not in found and half.kind == "measured" and "ramp" in half.note
    assert half.interval[0] <= half.value <= half.interval[1]
    assert 0.6 * sets_capacity(line) <= found["l1d.half_miss_size"].value \
        <= 1.3 * sets_capacity(line)


def sets_capacity(line: int) -> int:
    return 64 * 4 * line


@pytest.mark.parametrize("line", [64, 128, 256])
def test_l2_line_behind_near_and_far_partitions(line):
    """The hopper config's L2: a near level every access fills, backed by the whole L2 at
    far latency. Far hits must not count as DRAM accesses."""
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    # whole sets of the new line (the measured sizes are whole sets of 128-B lines); another
    # line without the slice map (its classes are of 128-B lines)
    unsliced = {} if line == 128 else {"slices": 1, "slice_kernel": [], "slice_table": [],
                                       "slice_latency": [], "slice_footprint": 0,
                                       "slice_bandwidth": 0.0}
    caches = [dataclasses.replace(c, line=line, size=c.size // (line * c.ways) * line * c.ways,
                                  **unsliced)
              if c.name.startswith("l2") else c for c in cfg.caches]
    cfg = dataclasses.replace(cfg, caches=caches).validate()
    dev = SimDevice(cfg, "hopper")
    log = ChaseLog(dev, seed=1)
    _l2_scatter_chases(log, dev.info.l2_bytes, dev.info.memory_bytes)
    found = _l2_line(log.chases)
    assert found is not None and found.value == line and found.confidence == 0.9, found
