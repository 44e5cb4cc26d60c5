"""What a second process on the GPU looks like from gpumem's side (issue 30, item 1).

Runs pointer chases and DRAM streams on cuda:0 idle, then while a neighbour process copies a
2 GB buffer in a loop, and prints what NVML reports (processes, utilisation, per-process
samples) and what the data shows (per-access latency outliers, repeat scatter). Needs a GPU.

    python benchmarks/contention_probe.py [--seconds 20] [--out probe.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

NEIGHBOUR = """
import cupy as cp, time, sys
a = cp.ones(2 << 28, dtype=cp.float32); b = cp.empty_like(a)
print('ready', flush=True); end = time.time() + float(sys.argv[1])
while time.time() < end:
    b[...] = a
    cp.cuda.runtime.deviceSynchronize()
"""


def nvml_view() -> dict:
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out: dict = {"my_pid": os.getpid()}
    for key, fn in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                    ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
                    ("mps", "nvmlDeviceGetMPSComputeRunningProcesses")):
        try:
            procs = getattr(pynvml, fn)(h)
            rows = []
            for p in procs:
                try:
                    name = pynvml.nvmlSystemGetProcessName(p.pid)
                    name = name.decode() if isinstance(name, bytes) else str(name)
                except Exception as e:  # noqa: BLE001
                    name = f"<{type(e).__name__}>"
                rows.append([int(p.pid), int(p.usedGpuMemory or 0), name])
            out[key] = rows
        except Exception as e:  # noqa: BLE001
            out[key] = repr(e)
    u = pynvml.nvmlDeviceGetUtilizationRates(h)
    out["util"] = [int(u.gpu), int(u.memory)]
    try:
        samples = pynvml.nvmlDeviceGetProcessUtilization(h, 0)
        out["proc_util"] = [[int(s.pid), int(s.smUtil), int(s.memUtil)] for s in samples]
    except Exception as e:  # noqa: BLE001
        out["proc_util"] = repr(e)
    try:
        out["mig"] = list(pynvml.nvmlDeviceGetMigMode(h))
    except Exception as e:  # noqa: BLE001
        out["mig"] = repr(e)
    try:
        out["compute_mode"] = int(pynvml.nvmlDeviceGetComputeMode(h))
    except Exception as e:  # noqa: BLE001
        out["compute_mode"] = repr(e)
    return out


def measure(dev, label: str) -> dict:
    from gpumem.contracts.device import ChaseRequest, StreamRequest

    clock = dev.info.clock_mhz
    chases = []
    for fp in (1 << 20, 4 << 20, 16 << 20, 40 << 20):
        for rep in range(8):
            req = ChaseRequest(footprint=fp, stride=32, record=1024,
                               warmup=min(fp // 32, 1 << 21), seed=rep)
            t0 = time.perf_counter()
            r = dev.pointer_chase(req)
            wall = time.perf_counter() - t0
            lat = np.asarray(r.latency, float) - r.timer_overhead
            chases.append({"footprint": fp, "rep": rep, "median": float(np.median(lat)),
                           "p99": float(np.percentile(lat, 99)), "max": float(lat.max()),
                           "over_20us": int((lat > 20e-6 * clock * 1e6).sum()),
                           "over_2x_median": int((lat > 2 * np.median(lat)).sum()),
                           "wall_s": wall})
    streams = []
    sms = dev.info.sm_count
    for kind in ("read", "copy"):
        gbs = []
        for rep in range(10):
            req = StreamRequest(footprint=1 << 30, ctas=4 * sms, threads=1024, ilp=4,
                                width=16, path="cg", kind=kind, work=1 << 31, seed=rep)
            gbs.append(dev.stream(req).gbs)
        g = np.asarray(gbs)
        streams.append({"kind": kind, "gbs": g.round(1).tolist(),
                        "spread": float((g.max() - g.min()) / np.median(g)),
                        "cv": float(g.std() / g.mean())})
    return {"label": label, "nvml": nvml_view(), "chases": chases, "streams": streams}


def summary(res: dict) -> None:
    print(f"== {res['label']}: nvml {json.dumps(res['nvml'])}")
    by = {}
    for c in res["chases"]:
        by.setdefault(c["footprint"], []).append(c)
    for fp, cs in by.items():
        print(f"  chase {fp >> 20:>3} MB: median {np.median([c['median'] for c in cs]):8.1f} "
              f"max-of-max {max(c['max'] for c in cs):12.0f} over20us "
              f"{sum(c['over_20us'] for c in cs):4d} over2xmed "
              f"{sum(c['over_2x_median'] for c in cs):5d} medians "
              f"{[round(c['median']) for c in cs]}")
    for s in res["streams"]:
        print(f"  stream {s['kind']}: spread {s['spread']:.3f} cv {s['cv']:.3f} {s['gbs']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--out", default="contention_probe.json")
    a = ap.parse_args()
    from gpumem.cuda.backend import CudaBackend

    dev = CudaBackend().open(0, "hopper")
    results = [measure(dev, "idle")]
    nb = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(a.seconds)],
                          stdout=subprocess.PIPE, text=True)
    assert nb.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    results.append(measure(dev, "neighbour copying 2 GB in a loop"))
    nb.terminate()
    nb.wait()
    time.sleep(1.0)
    results.append(measure(dev, "idle again"))
    with open(a.out, "w") as f:
        json.dump(results, f)
    for r in results:
        summary(r)


if __name__ == "__main__":
    main()
