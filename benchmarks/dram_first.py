"""Is a process's first DRAM buffer fast for being first, or are later buffers slow for
reusing freed memory? (issue 42)

    python benchmarks/dram_first.py [--json OUT.json] [--mib 480]

On two H100s (tests/data/h100-s26) and one H200 (tests/data/h200-s25) ``dram_placement.py``
read its first allocation of each footprint 16 % (H100) and 13-15 % (H200) faster than every
later one, with or without a pad in front, clocks steady. It frees each trial's buffers before
the next, so "later" meant both "allocated after others were freed" and "measured later in the
process". Here one process reads, with one plain streaming kernel (16-byte ``.cg`` loads,
1056 blocks of 1024 threads, a buffer read 4 times a run, best and median of 6 runs):

1. A, the first buffer;  2. B, allocated while A lives (no memory freed yet);
3. A again;  4. C, allocated after A is freed (may take A's memory);  5. B again;
6. E, an 8 GiB buffer;  7. D, a 480 MB buffer allocated after E is freed;  8. B again.

Predictions: if being first is what counts, A reads fast and B, C slow; if reusing freed
memory is, A and B read fast and only C slow; if time in the process is, every later reading
slows, A's second one too. On an H200 (GPU-cb0e3c21, 2026-12-06) steps 1-5 all read within
0.7 % (4447-4478 GB/s medians) while ``dram_placement.py`` in the same job read its first
trial 13-15 % faster than its later ones, those coming after 2 and 8 GiB buffers were freed:
steps 6-8 ask whether freeing a large buffer is what slows the buffers allocated after it
(D slow, B still fast) or something that follows every buffer (D and B slow).
Changes no setting of the GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

SOURCE = r"""
extern "C" __global__ void read16(const uint4* __restrict__ a, unsigned long long n,
                                  int passes, unsigned int* sink) {
    unsigned int acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p)
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
             i < n; i += stride) {
            uint4 v;
            asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a + i));
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}
"""
PASSES, RUNS = 4, 6


def timed(kernel):  # noqa: ANN001, ANN201 - CuPy kernel in, a function of a buffer out
    """reads(buf, nbytes, runs, warm): GB/s of ``runs`` launches of ``kernel`` (SOURCE's
    read16) over ``nbytes`` of ``buf`` (a CuPy array or a device pointer), each timed with
    CUDA events, after one untimed launch where ``warm`` (8 blocks of 1024 per SM)."""
    import cupy as cp

    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    sink = cp.zeros(1, dtype=cp.uint32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def reads(buf, nbytes: int, runs: int, warm: bool = True) -> list[float]:  # noqa: ANN001
        arg = cp.uint64(buf) if isinstance(buf, int) else buf
        args = (arg, cp.uint64(nbytes // 16), cp.int32(PASSES), sink)
        if warm:
            kernel((8 * sms,), (1024,), args)
        gbs = []
        for _ in range(runs):
            start.record()
            kernel((8 * sms,), (1024,), args)
            stop.record()
            stop.synchronize()
            gbs.append(PASSES * nbytes / (cp.cuda.get_elapsed_time(start, stop) / 1e3) / 1e9)
        return gbs
    return reads


def reader(kernel):  # noqa: ANN001, ANN201 - CuPy kernel in, a function of a buffer out
    """read(buf): ``kernel`` over ``buf``, one untimed launch, then the best and median GB/s
    of RUNS timed launches (:func:`timed`)."""
    reads = timed(kernel)

    def read(buf) -> dict:  # noqa: ANN001
        gbs = reads(buf, buf.nbytes, RUNS)
        return {"best": round(max(gbs), 1), "median": round(statistics.median(gbs), 1)}
    return read


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mib", type=int, default=480)
    a = ap.parse_args()
    import cupy as cp

    read = reader(cp.RawKernel(SOURCE, "read16"))
    nbytes = a.mib << 20

    steps = []
    buf_a = cp.zeros(nbytes // 4, dtype=cp.uint32)
    steps.append(("A, first", read(buf_a)))
    buf_b = cp.zeros(nbytes // 4, dtype=cp.uint32)
    steps.append(("B, while A lives", read(buf_b)))
    steps.append(("A again", read(buf_a)))
    del buf_a
    cp.get_default_memory_pool().free_all_blocks()
    buf_c = cp.zeros(nbytes // 4, dtype=cp.uint32)
    steps.append(("C, after A freed", read(buf_c)))
    steps.append(("B again", read(buf_b)))
    buf_e = cp.zeros((8 << 30) // 4, dtype=cp.uint32)
    steps.append(("E, 8 GiB", read(buf_e)))
    del buf_e
    cp.get_default_memory_pool().free_all_blocks()
    buf_d = cp.zeros(nbytes // 4, dtype=cp.uint32)
    steps.append(("D, after E freed", read(buf_d)))
    steps.append(("B again, last", read(buf_b)))
    for name, r in steps:
        print(f"{name:18s} best {r['best']:8.1f} GB/s  median {r['median']:8.1f}")
    if a.json:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        a.json.write_text(json.dumps({"device": name.decode() if isinstance(name, bytes)
                                      else str(name), "mib": a.mib,
                                      "steps": dict(steps)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
