"""On a CUDA GPU (skipped elsewhere): a real second process streaming memory on the same GPU
makes every finding of the run ``contended`` and ``--check`` exit 1 with that reason; the
same run without it passes; ``--exclusive`` refuses while it runs (issue 30, item 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpumem.results.store import MANIFEST

pytestmark = pytest.mark.gpu

#: the neighbour: copies a 2 GB buffer in a loop (as the issue's second process did)
NEIGHBOUR = """
import sys, time
import cupy as cp
a = cp.ones(1 << 29, dtype=cp.float32)
b = cp.empty_like(a)
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b[...] = a
    cp.cuda.runtime.deviceSynchronize()
"""
#: --quick runs: a quick bandwidth grid misses the full grid's best copy rate (an idle H200:
#: 3959 GB/s against 4031-4129), so the run alone would not pass for that reason
EXPERIMENTS = os.environ.get("GPUMEM_CONTENTION_EXPERIMENTS", "latency").split()


@pytest.fixture(scope="module")
def gpu():
    """A GPU, found through NVML only: a CUDA context in this test process would itself be
    another process on the GPU (a first try counted pytest's, at 1 % SM, as contention)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as e:  # noqa: BLE001 - no library, no driver
        pytest.skip(f"no NVML ({type(e).__name__}): no GPU, or gpumem cannot see others")
    if not count:
        pytest.skip("NVML reports no GPU")


def gpumem(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True,
                          text=True, timeout=timeout)


class Neighbour:
    """A second process on GPU 0, streaming memory until stopped."""

    def __enter__(self) -> Neighbour:
        self.p = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, "3600"],
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"
        time.sleep(2.0)  # NVML's per-process samples come every 1/6 s to 1 s
        return self

    def __exit__(self, *exc: object) -> None:
        self.p.terminate()
        self.p.wait(timeout=30)
        time.sleep(2.0)


def findings_of(run_dir: Path) -> dict:
    entries = json.loads((run_dir / MANIFEST).read_text())["entries"]
    return {e["experiment"]: e for e in entries.values()}


def test_a_run_beside_a_streaming_process_is_contended_and_fails_check(gpu, tmp_path):
    out = tmp_path / "shared"
    with Neighbour() as nb:
        r = gpumem("run", "--arch", "hopper", *EXPERIMENTS, "--quick", "--check",
                   "--out", str(out))
        pid = nb.p.pid
    assert r.returncode == 1, r.stderr[-2000:]
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("gpumem: contended:")]
    assert len(line) == 1, r.stderr[-2000:]
    assert f"pid {pid}" in line[0]
    assert "check failed" in r.stderr and "contended" in r.stderr
    runs = findings_of(out)
    assert set(runs) == set(EXPERIMENTS)
    for exp, e in runs.items():
        statuses = {f["status"] for f in e["findings"].values()}
        assert statuses <= {"contended", "not modelled"} and "contended" in statuses, \
            (exp, statuses)


def test_the_same_run_without_the_neighbour_passes(gpu, tmp_path):
    out = tmp_path / "alone"
    r = gpumem("run", "--arch", "hopper", *EXPERIMENTS, "--quick", "--check",
               "--out", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "contended" not in r.stderr
    for exp, e in findings_of(out).items():
        assert "contention" not in e, exp


def test_exclusive_refuses_while_the_neighbour_runs(gpu, tmp_path):
    out = tmp_path / "excl"
    with Neighbour() as nb:
        t0 = time.monotonic()
        r = gpumem("run", "--arch", "hopper", "latency", "--quick", "--exclusive", "3",
                   "--out", str(out))
        waited = time.monotonic() - t0
        pid = nb.p.pid
    assert r.returncode == 75, r.stderr[-2000:]
    assert f"pid {pid}" in r.stderr.strip().splitlines()[-1]
    assert waited >= 3 and not out.exists()
