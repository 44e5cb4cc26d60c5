"""Wall time of a simulator sweep run locally and on a Dask LocalCluster of 1 and 2 workers
(issue 8), and whether the outputs are identical.

    python benchmarks/bench_dask.py [--arch hopper] [--experiment latency]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import xarray as xr


def _run(arch: str, experiment: str, out: Path, **kw) -> float:
    from gpumem.plugin.registry import get_plugins
    from gpumem.run.runner import RunRequest, run

    t = time.perf_counter()
    run(RunRequest(arch, [experiment], device="sim", out=out, **kw), plugins=get_plugins())
    return time.perf_counter() - t


def _data(out: Path) -> xr.Dataset:
    return xr.open_dataset(next(out.glob("*/*.nc"))).drop_attrs()


def main() -> None:
    from distributed import LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="hopper")
    ap.add_argument("--experiment", default="latency")
    a = ap.parse_args()
    out: dict = {"arch": a.arch, "experiment": a.experiment, "wall_s": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _run(a.arch, a.experiment, tmp / "warm")              # JIT caches, imports
        out["wall_s"]["local, 1 process"] = round(_run(a.arch, a.experiment, tmp / "l"), 2)
        out["wall_s"]["local, --workers 2"] = round(
            _run(a.arch, a.experiment, tmp / "w2", workers=2), 2)
        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                              dashboard_address=None, silence_logs=40) as c:
                _run(a.arch, a.experiment, tmp / f"dwarm{n}", executor="dask",
                     scheduler=c.scheduler_address)           # workers JIT-compile once
                out["wall_s"][f"dask, {n} worker(s)"] = round(
                    _run(a.arch, a.experiment, tmp / f"d{n}", executor="dask",
                         scheduler=c.scheduler_address), 2)
        ref = _data(tmp / "l")
        out["identical_to_local"] = {name: bool(_data(tmp / name).identical(ref))
                                     for name in ("w2", "d1", "d2")}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
