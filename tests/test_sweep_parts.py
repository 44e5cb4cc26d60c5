"""An adaptive search declared in parts (``Experiment.sweep_parts``): with experiments run
at once, each part runs in a worker of its own, and the data is the same as the parts run in
turn (issue 31, item 3: the simulator's run bound by cache_structure's one long search)."""

from __future__ import annotations

import os
import time

import xarray as xr
from gpumem.contracts.experiment import Experiment, Plan, RunContext
from gpumem.experiments.cache_structure import PART_SEEDS, CacheStructure
from gpumem.plugin.registry import load_plugins
from gpumem.run.points import make_points
from gpumem.run.schedule import tasks
from gpumem.sim.device import SimDevice


class _Parted(Experiment):
    """Three parts, each slow enough that one worker cannot take two of them."""

    name = "toy-parted"
    summary = "three parts that say where they ran"
    probes = ("pointer_chase",)

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[], variables=[])

    def sweep(self, device, ctx, progress):
        return self.sweep_in_parts(device, ctx, progress)

    def sweep_parts(self, ctx):
        return ("a", "b", "c")

    def sweep_part(self, device, ctx, progress, part):
        time.sleep(0.5)
        progress(1)
        return xr.Dataset({"part": ("i", [part]), "pid": ("i", [os.getpid()])})

    def join_parts(self, parts):
        return xr.concat(parts, "i")

    def analyze(self, raw):
        return []


def _hopper() -> SimDevice:
    cfg = load_plugins(warn=lambda _m: None).hook.gpumem_simulator_config(arch="hopper",
                                                                           simulator="sim")
    return SimDevice(cfg, "hopper")


def test_each_part_runs_in_a_worker_of_its_own_and_joins_in_order():
    dev = _hopper()
    ctx = RunContext("hopper", dev.info)
    runner = make_points(dev, 3)
    try:
        runner.start()
        runner.concurrent = True
        assert runner.sweeps_remotely(_Parted())
        raw = runner.sweep(_Parted(), ctx)
    finally:
        runner.close()
    assert list(raw["part"].values) == ["a", "b", "c"]
    pids = set(int(p) for p in raw["pid"].values)
    assert len(pids) == 3 and os.getpid() not in pids


def test_one_experiment_in_parts_is_work_for_several_workers():
    dev = _hopper()
    ctx = RunContext("hopper", dev.info)
    assert tasks([CacheStructure], ctx) == len(CacheStructure().sweep_parts(ctx)) == 4
    assert CacheStructure().sweep_parts(ctx) == ("ca", "tex", "nc", "l2")


def test_cache_structure_in_parts_on_workers_gives_the_data_of_one_process(cli, tmp_path):
    """--workers 3 (the parts at once) and --workers 1 (in turn): identical chases; each
    part's seeds are its own (a part never shifts another's by the chases it took)."""
    for w in ("1", "3"):
        res = cli("run", "--arch", "hopper", "cache_structure", "--device", "sim", "--quick",
                  "--workers", w, "--out", str(tmp_path / f"w{w}"))
        assert res.code == 0, res.err
    a, b = (xr.open_dataset(next((tmp_path / f"w{w}").glob("*/cache_structure-*.nc")))
            for w in ("1", "3"))
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert b.attrs["gpumem_executor"].startswith("local, 3 worker")
    bases = [int(s) // PART_SEEDS for s in a["seed"].values]
    assert bases == sorted(bases) and set(bases) == {0, 1, 2, 3}
