"""Accel-Sim configs against what a real build measures (issue 45, items 2 and 3).

``tests/data/accelsim/runs`` keeps the raw latency ladders ``gpumem run latency --device
accelsim --sim-config CONFIG`` (no ``--arch``) took on a real build (Accel-Sim dev 73f9fac,
GPGPU-Sim dev 667834c, CUDA 11.8 headers; tests/data/accelsim/runs/README.md). From them:
the analysis sees the one L2 each config has, at its size, and the importer's latencies are
what the binary measured, level by level, within 2 cycles.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr
from gpumem.experiments.latency import LatencyLadder
from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.translate import from_accelsim, pipeline_cycles

DATA = Path(__file__).parent / "data" / "accelsim"
RUNS = sorted((DATA / "runs").glob("*-latency.nc"))


def _config(run: Path) -> AccelSimConfig:
    return AccelSimConfig.load(DATA / run.name.removesuffix("-latency.nc"))


def _found(run: Path) -> dict:
    with xr.open_dataset(run) as raw:
        return {f.name: f for f in LatencyLadder().analyze(raw.load())}


def test_every_recorded_run_has_its_config():
    assert len(RUNS) >= 2
    for run in RUNS:
        assert _config(run).int("-gpgpu_l2_rop_latency") > 0


#: Where no reading of the ladder is the capacity: TITAN X (Pascal) puts each 128-byte line
#: into one of its 24 L2 slices at random (-gpgpu_memory_partition_indexing 4, rand() as the
#: address decoder first meets the line), and the set inside the slice comes from the slices'
#: un-randomised address, so the 24 lines of each 3 KiB share one set index. A (slice, set)
#: then holds Binomial(384, 1/24) of a 3 MiB chase's lines (mean 16 = its ways, sd 3.9), and
#: its misses ramp from 0.5 to 1.7 times the capacity. The 64 lines a slow device's ladder
#: records fall into about 41 of the 1,536 sets: the knee is where the fullest of them
#: overflows (0.56 +- 0.08 of the capacity over the simulator's draws; this run 0.87), the
#: half crossing where the middle one does (0.98 +- 0.06: within 6 % for 77 % of draws). An
#: LRU model of the sets, fed the build's own draws, gives its L2 misses exactly at all 47
#: footprints of the ramp (tests/data/accelsim/runs/README.md).
RAMPS = {"SM6_TITANX-latency.nc"}


@pytest.mark.parametrize("run", [pytest.param(r, marks=pytest.mark.xfail(
    strict=True, reason="L2 slices drawn at random per line: the knee is the first of the 41 "
                        "sets the 64 recorded lines sample to overflow (0.56 +- 0.08 of the "
                        "capacity over draws, 0.87 here); 6 % needs ~1,000 recorded lines"))
    if r.name in RAMPS else r for r in RUNS], ids=lambda p: p.name)
def test_one_l2_at_the_configs_size(run):
    """An unpartitioned L2 is one level: a plateau after its knee that ends within 1.5 L2
    sizes (TITAN X: 201 cycles from 2.9 to 3.5 MB, its sets overflowing one by one) is no far
    partition, and the DRAM is the plateau after it."""
    found = _found(run)
    sim, _ = from_accelsim(_config(run))
    l2 = next(c for c in sim.caches if c.name == "l2").size
    assert found["l2.partitions"].value == 1
    assert "lat.l2_far" not in found and "l2.near_size" not in found
    assert abs(found["l2.size"].value / l2 - 1) < 0.06
    assert found["lat.dram"].value > found["lat.l2"].value + 50


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_imported_latencies_are_what_the_build_measured(run):
    cfg = _config(run)
    sim, _ = from_accelsim(cfg, None, pipeline_cycles(cfg)[0])
    levels = {c.name: c for c in sim.caches}
    found = _found(run)
    first = sim.paths["ca"][0]
    assert levels[first].hit_latency == pytest.approx(
        found["lat.l1" if first == "l1d" else "lat.l2"].value, abs=2)
    assert levels["l2"].hit_latency == pytest.approx(found["lat.l2"].value, abs=2)
    assert sim.dram.latency == pytest.approx(found["lat.dram"].value, abs=2)


def test_a_config_without_a_branch_unit_gets_its_own_generations_opcode_map():
    """Volta's opcode map sends BRA to -specialized_unit_1; Kepler's and Pascal's
    trace.configs define none and the build aborted on gpumem's first branch
    (shader.cc:1486, spec_id < m_specialized_unit.size()). They get their own map."""
    from gpumem_accelsim.device import BINARY_VERSION, binary_version

    assert binary_version(AccelSimConfig.load(DATA / "SM7_QV100")) == BINARY_VERSION == 70
    assert binary_version(AccelSimConfig.load(DATA / "SM75_RTX2060")) == 70
    kepler = AccelSimConfig.load(DATA / "SM3_KEPLER_TITAN")
    assert "-specialized_unit_1" not in kepler.merged() and binary_version(kepler) == 35
