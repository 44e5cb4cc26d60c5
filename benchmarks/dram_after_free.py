"""After a large buffer is freed, why does every buffer read DRAM slower? (issue 42)

    python benchmarks/dram_after_free.py [--json OUT.json] [--mib 480] [--big-gib 8]
        [--heat-s 8] [--idle-s 20]

``dram_first.py`` on an H100 (GPU-fd31130a, 2026-12-06): five readings of 480 MB buffers
(first, beside it, again, after a free, again) all within 0.2 % (3156-3162 GB/s medians), an
8 GiB buffer 3197; then, once the 8 GiB buffer was freed, a new 480 MB buffer read 2651 and
**the buffer allocated at the start, untouched since, 2646** (-16 %). Its pages did not move,
so what slowed is a state of the context or the device, not a placement. The same happened
to ``dram_placement.py``'s later trials (13-15 % on an H200, 16 % on H100s), which free 2 and
8 GiB buffers between trials.

Two hypotheses. **The translation**: if the freeing left the context's page tables mapping
the buffer with small pages (64 KB) where they had used 2 MB ones, a stream over 480 MB would
miss the TLBs far more often. Probe: besides each reading, one thread chases the buffer at a
64 KB stride (7,680 hops over 480 MB) and at a 2 MB stride (240 hops), cycles per hop.
**Heat**: ``dram_first.py`` read the 8 GiB buffer (seconds of full-rate DRAM traffic) before
it freed it, so "after the free" was also "after the HBM warmed"; HBM above about 85 C
refreshes twice as often, which costs bandwidth. Probe: beside each reading, NVML's GPU and
memory temperatures, clocks, power and clock-event reasons, and steps that separate the two.
One buffer A throughout:

1. A alone;  2. an 8 GiB buffer E allocated beside it;  3. A after E was read for about 8 s
(heat, nothing freed);  4. A after 20 s idle (cooled);  5. E released to CuPy's pool (no
cudaFree);  6. the pool emptied (cudaFree of E);  7. a fresh buffer D after that;  8. A again
after 20 s idle.

Predictions: heat: step 3 slow with the memory temperature up, step 4 fast again, 6-7 as
fast as 4. The free: 3 and 4 fast, 6-8 slow, the 64 KB chase costing more a hop in 6-8 if
the translation changed. Changes no setting of the GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from dram_first import SOURCE as READ16  # noqa: E402
from dram_first import reader  # noqa: E402

SOURCE = READ16 + r"""
extern "C" __global__ void link(unsigned long long* a, unsigned long long hops,
                                unsigned long long step) {
    // hop h points to hop h + 1 (the last to the first), step words apart
    for (unsigned long long h = threadIdx.x; h < hops; h += blockDim.x)
        a[h * step] = ((h + 1) % hops) * step;
}

extern "C" __global__ void chase(const unsigned long long* a, unsigned long long hops,
                                 unsigned long long* out) {
    unsigned long long j = 0;
    for (unsigned long long h = 0; h < hops; ++h)  // untimed: the chain once
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(j) : "l"(a + j));
    const long long t0 = clock64();
    for (unsigned long long h = 0; h < hops; ++h)
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(j) : "l"(a + j));
    out[0] = clock64() - t0;
    out[1] = j;
}
"""
STRIDES = {"64 KB": 64 << 10, "2 MB": 2 << 20}
#: NVML's field id of the HBM temperature (nvml.h NVML_FI_DEV_MEMORY_TEMP).
FI_MEMORY_TEMP = 82


def nvml_state():  # noqa: ANN201 - () -> {reading: value}, empty where NVML is missing
    """A function reading the GPU's temperatures, clocks, power and clock-event reasons."""
    try:
        import pynvml as n

        n.nvmlInit()
        h = n.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - no NVML: the readings go without
        return dict

    def one(fn, *args):  # noqa: ANN001, ANN202
        try:
            return fn(h, *args)
        except Exception:  # noqa: BLE001
            return None

    def state() -> dict:
        out = {"gpu_c": one(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
               "sm_mhz": one(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
               "mem_mhz": one(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM),
               "power_w": (lambda p: None if p is None else round(p / 1000))(
                   one(n.nvmlDeviceGetPowerUsage)),
               "reasons": one(getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
                              or n.nvmlDeviceGetCurrentClocksThrottleReasons)}
        fv = one(n.nvmlDeviceGetFieldValues, [FI_MEMORY_TEMP])
        if fv and getattr(fv[0], "nvmlReturn", 1) == 0:
            v = fv[0].value
            out["mem_c"] = next((getattr(v, k) for k in ("uiVal", "ullVal", "ulVal")
                                 if getattr(v, k, 0)), None)
        if out["reasons"] is not None:
            out["reasons"] = hex(int(out["reasons"]))
        return out
    return state


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mib", type=int, default=480)
    ap.add_argument("--big-gib", type=int, default=8)
    ap.add_argument("--heat-s", type=float, default=8.0)
    ap.add_argument("--idle-s", type=float, default=20.0)
    a = ap.parse_args()
    import cupy as cp

    mod = cp.RawModule(code=SOURCE)
    link, chase = mod.get_function("link"), mod.get_function("chase")
    read = reader(mod.get_function("read16"))
    out = cp.zeros(2, dtype=cp.uint64)
    nbytes = a.mib << 20

    def probe(buf) -> dict[str, float]:  # noqa: ANN001 - cycles per hop at each stride
        words = buf.nbytes // 8
        got = {}
        for name, stride in STRIDES.items():
            step = stride // 8
            hops = words // step
            link((1,), (256,), (buf, cp.uint64(hops), cp.uint64(step)))
            chase((1,), (1,), (buf, cp.uint64(hops), out))
            got[name] = round(float(out.get()[0]) / hops, 1)
        return got

    pool = cp.get_default_memory_pool()
    steps = []
    nvml = nvml_state()

    def step(name: str, buf) -> None:  # noqa: ANN001
        before = nvml()
        steps.append({"step": name, "gbs": read(buf)["median"], "cycles_per_hop": probe(buf),
                      "before": before, "after": nvml()})
        s = steps[-1]
        print(f"{name:34s} {s['gbs']:8.1f} GB/s   cycles a hop: "
              + "  ".join(f"{k} {v:7.1f}" for k, v in s["cycles_per_hop"].items())
              + f"   {before}", flush=True)

    def heat(buf, seconds: float) -> dict:  # noqa: ANN001 - read buf for about ``seconds``
        t0, got = time.monotonic(), []
        while time.monotonic() - t0 < seconds:
            got.append(read(buf)["median"])
        print(f"   read E {len(got)} times over {seconds:.0f} s: {min(got):.1f}-{max(got):.1f}"
              f" GB/s, then {nvml()}", flush=True)
        return {"readings": len(got), "min": min(got), "max": max(got)}

    def idle(seconds: float) -> None:
        cp.cuda.Device().synchronize()
        time.sleep(seconds)

    buf_a = cp.zeros(nbytes // 8, dtype=cp.uint64)
    step("1. A alone", buf_a)
    buf_e = cp.zeros((a.big_gib << 30) // 8, dtype=cp.uint64)
    step(f"2. A, {a.big_gib} GiB E beside it", buf_a)
    e_read = heat(buf_e, a.heat_s)
    step("3. A, after E read (nothing freed)", buf_a)
    idle(a.idle_s)
    step(f"4. A, after {a.idle_s:.0f} s idle", buf_a)
    del buf_e
    step("5. A, E back in the pool", buf_a)
    pool.free_all_blocks()
    step("6. A, E freed (cudaFree)", buf_a)
    buf_d = cp.zeros(nbytes // 8, dtype=cp.uint64)
    step("7. D, allocated after", buf_d)
    idle(a.idle_s)
    step(f"8. A, after {a.idle_s:.0f} s idle", buf_a)
    if a.json:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        a.json.write_text(json.dumps({"device": name.decode() if isinstance(name, bytes)
                                      else str(name), "mib": a.mib, "big_gib": a.big_gib,
                                      "e_read": e_read, "steps": steps}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
