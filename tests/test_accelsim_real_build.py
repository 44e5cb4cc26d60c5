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


#: TITAN X (Pascal) puts each 128-byte line into one of its 24 L2 slices at random
#: (-gpgpu_memory_partition_indexing 4, rand() as the address decoder first meets the line),
#: and the set inside the slice comes from the slices' un-randomised address, so the 24 lines
#: of each 3 KiB share one set index. A (slice, set) then holds Binomial(384, 1/24) of a 3 MiB
#: chase's lines (mean 16 = its ways, sd 3.9), and its misses ramp from 0.5 to 1.7 times the
#: capacity. The knee is where the fullest of the sets the recorded lines sample overflows:
#: it falls as the sample grows (0.56 +- 0.08 of the capacity with 64 lines, 0.42 +- 0.05 with
#: 1,024), no reading of the capacity. The half crossing of the miss share, where the middle
#: set overflows, is: 0.98 +- 0.06 with 64 lines (within 6 % for 77 % of the draws), 0.974 +-
#: 0.017 with 1,024 (always). So the device declares its sets drawn, the ladder times 1,024
#: lines a point around the L2's size, and the analysis reads a single L2 whose misses ramp at
#: that half crossing (gpumem.experiments.latency._l2_ramp); this run: 0.961 of the capacity.
#: An LRU model of the sets, fed the build's own draws, gives its L2 misses exactly at all 47
#: footprints of the ramp (tests/data/accelsim/runs/README.md).
RAMPS = {"SM6_TITANX-latency.nc"}


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_one_l2_at_the_configs_size(run):
    """An unpartitioned L2 is one level: the means along a ramp of misses (TITAN X: 143 to
    235 cycles from 2.1 to 4.2 MB, its sets overflowing one by one; plateaus of them where
    more points fall there) are no far partition, and the DRAM is the plateau after them.
    Where the misses ramp, the size is the half crossing; elsewhere the knee."""
    found = _found(run)
    sim, _ = from_accelsim(_config(run))
    l2 = next(c for c in sim.caches if c.name == "l2").size
    assert found["l2.partitions"].value == 1
    assert "lat.l2_far" not in found and "l2.near_size" not in found
    assert abs(found["l2.size"].value / l2 - 1) < 0.06
    ramp = "half crossing of the miss share" in found["l2.size"].method
    assert ramp == (run.name in RAMPS)
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


def test_only_a_config_that_draws_its_l2_slices_says_so():
    """-gpgpu_memory_partition_indexing 4 (TITAN X) is the device's ``l2_random_sets``: its
    ladder times 1,024 lines a point around the L2's size; the other configs keep 64."""
    from gpumem.contracts.device import DeviceInfo
    from gpumem.contracts.experiment import RunContext
    from gpumem_accelsim.device import accelsim_device_info

    for run in RUNS:
        info = accelsim_device_info(_config(run))
        drawn = _config(run).int("-gpgpu_memory_partition_indexing") == 4
        assert bool(info.extra.get("l2_random_sets")) == drawn == (run.name in RAMPS)
        slow = DeviceInfo(**{**{k: getattr(info, k) for k in info.__dataclass_fields__},
                             "cycles_per_second": 1e5})
        assert ("ramp_record" in LatencyLadder().plan(RunContext("x", slow)).attrs) == drawn
