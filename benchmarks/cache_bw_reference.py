"""Reference L1 and L2 read bandwidth, by a kernel gpumem does not use, beside gpumem's.

    python benchmarks/cache_bw_reference.py [RUN_DIR] [--json OUT.json]

The kernel is written in the style of RRZE's gpu-benches cache kernels (gpu-cache,
gpu-l2-cache), not copied: every block re-reads its own slice of a buffer with 16-byte
loads whose offsets are compile-time constants (the block size and the slice length are
template parameters, so each load is one LDG with an immediate offset and no address
arithmetic). L1: ``ld.global.ca`` and ``ld.global.nc`` (the L1 serves); L2: ``ld.global.cg``
(L1 bypassed) over a buffer that fits the L2. It sweeps blocks per SM, threads per block and
the per-block slice, times each shape with CUDA events (median of 5 launches after a
warm-up), and prints each level's best in TB/s and in bytes per SM clock (per SM for L1),
the SM clock read from NVML around the launches (else the device's maximum clock).

With RUN_DIR of ``gpumem run --arch hopper bandwidth_levels`` (run just before, in the same
GPU job) it prints gpumem's ``bw.l1``/``bw.l2`` beside the reference and their ratio: issue
31 asks gpumem's figures to be at least the reference's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SOURCE = r"""
template <bool NC>
__device__ __forceinline__ float4 ld_l1(const float4* p) {
    float4 v;
    if (NC) asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    else    asm volatile("ld.global.ca.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ float4 ld_l2(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
// FLAVOUR 0: .ca, 1: .nc, 2: .cg. Block b reads float4s [b*N*BLOCK, (b+1)*N*BLOCK) `passes`
// times; thread t reads element i*BLOCK + t of the slice for i < N. `zero` is 0 at run time,
// but the compiler cannot know it: each pass's addresses depend on the pass, so ptxas cannot
// hoist the loads out of the pass loop (PTX loads are not volatile, and nothing is stored).
template <int N, int BLOCK, int FLAVOUR>
__global__ void __launch_bounds__(BLOCK) slice_read(const float4* __restrict__ a, int passes,
                                                    int zero, float* out) {
    const float4* base = a + (size_t)blockIdx.x * N * BLOCK + threadIdx.x;
    float s0 = 0.f, s1 = 0.f;
    for (int r = 0; r < passes; ++r) {
        const float4* p = base + r * zero;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            float4 v = FLAVOUR == 2 ? ld_l2(p + i * BLOCK) : ld_l1<FLAVOUR == 1>(p + i * BLOCK);
            s0 += v.x + v.y;
            s1 += v.z + v.w;
        }
    }
    if (s0 + s1 == 1.2345f) out[0] = s0 + s1;
}
"""

FLAVOURS = {"ca": 0, "nc": 1, "cg": 2}


def sm_clock_mhz(handle) -> float:
    import pynvml

    return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))


def main() -> int:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--l1-gib", type=float, default=16.0, help="GiB a launch reads, L1 "
                    "shapes (default 16: about 0.5 ms on an H200)")
    ap.add_argument("--l2-gib", type=float, default=4.0, help="GiB a launch reads, L2 "
                    "shapes (default 4: about 0.5 ms on an H200)")
    a = ap.parse_args()
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    max_mhz = props["clockRate"] / 1e3
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)

        def clock() -> float:
            return sm_clock_mhz(handle)
        clock_source = "NVML SM clock around the launches"
    except Exception:  # noqa: BLE001 - no NVML binding: the device's maximum clock
        def clock() -> float:
            return max_mhz
        clock_source = "device maximum clock (no NVML)"

    shapes = []  # (level, flavour, blocks per SM, threads, slice KiB): each thread >= 1 load
    for flavour in ("ca", "nc"):
        for bps in (1, 2, 4, 8):
            for threads in (256, 512, 1024):
                for kib in (16, 32, 64):
                    if bps * threads <= 2048 * 2 and bps * kib <= 192 \
                            and kib * 1024 >= 16 * threads:
                        shapes.append(("l1", flavour, bps, threads, kib))
    for bps in (2, 4, 8, 16):
        for threads in (256, 512, 1024):
            for kib in (16, 32, 64):
                if sms * bps * kib * 1024 <= l2 // 2 and kib * 1024 >= 16 * threads:
                    shapes.append(("l2", "cg", bps, threads, kib))
    names = sorted({f"slice_read<{kib * 1024 // 16 // t},{t},{FLAVOURS[f]}>"
                    for _lv, f, _b, t, kib in shapes})
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=names)
    buf = cp.ones((max(sms * 16 * 32 * 1024, sms * 8 * 64 * 1024) // 16, 4), dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    rows = []
    for level, flavour, bps, threads, kib in shapes:
        n = kib * 1024 // 16 // threads
        kern = mod.get_function(f"slice_read<{n},{threads},{FLAVOURS[flavour]}>")
        blocks = sms * bps
        per_pass = blocks * kib * 1024
        launch = (a.l1_gib if level == "l1" else a.l2_gib) * (1 << 30)
        passes = max(1, int(launch // per_pass))
        args = (buf, np.int32(passes), np.int32(0), out)
        kern((blocks,), (threads,), args)
        times, clocks = [], []
        for _ in range(5):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            kern((blocks,), (threads,), args)
            e1.record()
            e1.synchronize()
            clocks.append(clock())
            times.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
        sec, mhz = float(np.median(times)), float(np.median(clocks))
        bps_total = per_pass * passes / sec
        per_clk = bps_total / (mhz * 1e6)
        rows.append(dict(level=level, flavour=flavour, blocks_per_sm=bps, threads=threads,
                         slice_kib=kib, tbs=bps_total / 1e12, sm_mhz=mhz,
                         bytes_per_clk=per_clk / (sms if level == "l1" else 1)))
    best = {lv: max((r for r in rows if r["level"] == lv), key=lambda r: r["tbs"])
            for lv in ("l1", "l2")}
    report = {"device": props["name"].decode() if isinstance(props["name"], bytes)
              else str(props["name"]), "sms": sms, "l2_bytes": l2, "clock": clock_source,
              "launch_gib": {"l1": a.l1_gib, "l2": a.l2_gib},
              "best": best, "rows": rows}
    if a.run_dir is not None:
        report["gpumem"] = gpumem_figures(a.run_dir)
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    for lv, r in best.items():
        unit = "B/clk/SM" if lv == "l1" else "B/clk"
        line = (f"reference {lv}: {r['tbs']:.2f} TB/s = {r['bytes_per_clk']:.1f} {unit} at "
                f"{r['sm_mhz']:.0f} MHz ({r['flavour']}, {r['blocks_per_sm']} blocks/SM x "
                f"{r['threads']} threads, {r['slice_kib']} KiB per block)")
        mine = report.get("gpumem", {}).get(f"bw.{lv}")
        if mine:
            line += f"; gpumem bw.{lv} {mine / 1e3:.2f} TB/s = {mine / 1e3 / r['tbs']:.3f}x"
        print(line)
    return 0


def gpumem_figures(run_dir: Path) -> dict[str, float]:
    """``bw.l1`` and ``bw.l2`` (GB/s) from a gpumem run directory's findings."""
    from gpumem.interop.reruns import run_findings
    from gpumem.plugin.registry import load_plugins

    found = run_findings(run_dir, load_plugins())
    return {name: float(f.value) for (_exp, name), f in found.items()
            if name in ("bw.l1", "bw.l2") and isinstance(f.value, (int, float))}


if __name__ == "__main__":
    sys.exit(main())
