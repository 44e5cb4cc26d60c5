"""Speed and memory of the built-in simulator, recorded by pytest-benchmark (not CI tests).

    pip install -r benchmarks/requirements.txt
    python -m pytest -p no:xdist -o addopts="" benchmarks/test_speed.py \
        --benchmark-json=benchmarks/results/speed.json
    python benchmarks/speed_table.py benchmarks/results/speed.json > benchmarks/SPEED.md

Why pytest-benchmark and not asv: these are a handful of Python-level timings of one
checkout, on whatever machine runs them; pytest-benchmark times them with warm-up and
rounds, stores every round and the machine (CPU, Python, commit) in one JSON file, and
compares two such files (``--benchmark-compare``). asv's strength, building every commit of
a history in its own environment, is more than a 2-core CI box can afford. The figures in
benchmarks/SPEED.md are produced from that JSON by speed_table.py, never pasted.

Targets (issues 3 and 31, checked by speed_table.py, never asserted here: machines are
noisy): >= 50 M simulated accesses/s on one core in every regime of the pointer chase;
every in-tree architecture's default grid in <= 60 s; ``run --arch hopper all`` with 16
workers in <= 8 s (judged only on a machine of at least 16 CPUs); an 8 GB TLB sweep in
< 1 GB resident memory.

    GPUMEM_BENCH_WORKERS=16 python -m pytest benchmarks/test_speed.py -k workers ...

times the hopper run with that many workers (default: this machine's CPU count).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bench_sim import REGIMES, TLB_SWEEP_CODE, run_env  # noqa: E402 - as bench_sim.py runs them

CHASE_ACCESSES = 4_000_000
WORKERS = int(os.environ.get("GPUMEM_BENCH_WORKERS", "0")) or os.cpu_count() or 1


@pytest.fixture(scope="module")
def hopper_sim():
    from gpumem.contracts.device import ChaseRequest
    from gpumem.plugin.registry import get_plugins
    from gpumem.sim import engine, specialise
    from gpumem.sim.device import SimDevice

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = SimDevice(cfg, "hopper")
    # compile (or load from Numba's cache) both kernels before anything is timed
    dev.pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16))
    dev.pointer_chase(ChaseRequest(footprint=4096, stride=128, record=16,
                                   warmup=engine.SPECIALISE_MIN))
    # every long chase of a regime runs the kernel specialised to its path, as the
    # experiments' long chases do once the path has run 30 M accesses in the process (or its
    # kernel is in the disk cache): on a fresh machine 3 rounds of 4 M would time the generic
    # kernel (the H200 host's first SPEED.md: 9.2 M/s far L2, against 23.8 specialised)
    after, specialise.COMPILE_AFTER = specialise.COMPILE_AFTER, 0
    yield dev
    specialise.COMPILE_AFTER = after


@pytest.mark.parametrize("regime", list(REGIMES))
def test_chase_accesses_per_second(benchmark, hopper_sim, regime):
    """One simulated pointer chase of 4 M accesses (4096 recorded), hopper config."""
    from gpumem.contracts.device import ChaseRequest

    req = ChaseRequest(stride=128, record=4096, warmup=CHASE_ACCESSES - 4096,
                       **REGIMES[regime])
    benchmark.pedantic(hopper_sim.pointer_chase, args=(req,), rounds=3, iterations=1,
                       warmup_rounds=1)  # the warm-up round compiles the path's kernel
    benchmark.extra_info["accesses"] = CHASE_ACCESSES


@pytest.mark.parametrize("arch", ["fermi", "kepler", "maxwell", "hopper"])
def test_run_all_on_the_simulator(benchmark, tmp_path, arch):
    """``gpumem run --arch A all --device sim``, default grid, in a fresh process."""
    runs = iter(range(100))

    def run() -> None:
        out = tmp_path / f"r{next(runs)}"
        subprocess.run([sys.executable, "-m", "gpumem", "run", "--arch", arch, "all",
                        "--device", "sim", "--out", str(out)], check=True,
                       capture_output=True, text=True)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)


def test_run_hopper_all_with_workers(benchmark, tmp_path):
    """``gpumem run --arch hopper all --device sim --workers N`` (N = GPUMEM_BENCH_WORKERS,
    else the CPU count), in a fresh process, as a user runs it (the adaptive searches on one
    thread: more made them slower on 16 cores)."""
    runs = iter(range(100))

    def run() -> None:
        out = tmp_path / f"r{next(runs)}"
        subprocess.run([sys.executable, "-m", "gpumem", "run", "--arch", "hopper", "all",
                        "--device", "sim", "--workers", str(WORKERS), "--out", str(out)],
                       check=True, capture_output=True, text=True, env=run_env(1))

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    benchmark.extra_info["workers"] = WORKERS


def test_tlb_sweep_to_8_gb_peak_memory(benchmark):
    """A child process chases footprints 2 MB ... 8 GB: its peak resident memory."""
    rss: list[int] = []

    def sweep() -> None:
        res = subprocess.run([sys.executable, "-c", TLB_SWEEP_CODE], capture_output=True,
                             text=True, check=True)
        rss.append(int(res.stdout.strip().splitlines()[-1]))

    benchmark.pedantic(sweep, rounds=1, iterations=1)
    benchmark.extra_info["peak_rss_mib"] = round(max(rss) / 1024, 1)

