"""On a GPU: what one L1-TLB entry of this card maps, and how far the TLB levels reach.

    python benchmarks/tlb_probe.py [--gib 64] [--json FILE]

A research probe beside ``tlb_structure``, with what the experiment cannot control: one big
``cudaMalloc`` (so the virtual alignment of every page is known and fixed), 8-byte chain
elements (footprints past 16 GiB), and fresh allocations of the experiment's own sizes (does
the answer move with the allocation?). One thread chases pairs: the first word of a "page"
and the next word of the same sector; the pair difference (first minus second latency) is
what the first access alone pays, a TLB miss (the same statistic as ``tlb_structure``).

Sections (each chase is repeated; the table prints the median pair difference and the share of
pairs at >= 5 cycles):

* ``span``: n pages at stride s (+128 B), s = 2 ... 64 MB, n around each candidate overflow;
  with 16 entries of E bytes, the first n that misses is 16 E / s + 1 (s < E), or 17 (s >= E);
* ``phase``: 16-MB stride, the first page at 0 ... 24 MB past a 64-MB boundary;
* ``reach``: n pages at 16 and 32 MB up to the allocation: a second level's overflow;
* ``alloc``: fresh allocations of 272 MB and 544 MB (the experiment's sizes) at 8 and 16 MB.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

KERNEL = r"""
extern "C" __global__ void chase64(unsigned long long start, int warmup, int record,
                                   unsigned int* out_lat, unsigned long long* out_addr) {
    extern __shared__ unsigned long long smem[];
    unsigned long long* s_addr = smem;
    unsigned int* s_lat = reinterpret_cast<unsigned int*>(smem + record);
    unsigned long long p = start;
    for (int i = 0; i < warmup; ++i) {
        unsigned long long n;
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(n) : "l"(p) : "memory");
        p = n;
    }
    for (int i = 0; i < record; ++i) {
        unsigned long long t0, t1, n;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(n) : "l"(p) : "memory");
        s_addr[i] = n;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
        s_lat[i] = (unsigned int)(t1 - t0);
        p = n;
    }
    for (int i = 0; i < record; ++i) { out_lat[i] = s_lat[i]; out_addr[i] = s_addr[i]; }
}
"""

MB = 1 << 20
SHIFT = 128
MAX_RECORD = 16384


class Prober:
    def __init__(self) -> None:
        import cupy as cp

        self.cp = cp
        self.kern = cp.RawKernel(KERNEL, "chase64")
        self.kern.max_dynamic_shared_size_bytes = 12 * MAX_RECORD

    def alloc(self, nbytes: int) -> tuple[int, object]:
        cp = self.cp
        ptr = cp.cuda.runtime.malloc(nbytes)
        return ptr, cp.cuda.UnownedMemory(ptr, nbytes, None)

    def free(self, ptr: int) -> None:
        self.cp.cuda.runtime.free(ptr)

    def chase(self, mem, base: int, first: int, pages: int, stride: int,
              passes: int = 16) -> np.ndarray:
        """Pair differences of a pattern chase: page i at ``first + i * stride``."""
        cp = self.cp
        addrs = first + np.arange(pages, dtype=np.uint64) * np.uint64(stride)
        nodes = np.empty(2 * pages, np.uint64)
        nodes[0::2], nodes[1::2] = addrs, addrs + np.uint64(8)
        nxt = np.roll(nodes, -1)
        view = cp.ndarray((mem.size // 8,), dtype=cp.uint64,
                          memptr=cp.cuda.MemoryPointer(mem, 0))
        idx = cp.asarray(((nodes - np.uint64(base)) // np.uint64(8)).astype(np.int64))
        view[idx] = cp.asarray(nxt)
        per = 2 * pages
        record = min(MAX_RECORD, max(per, per * passes)) // 2 * 2
        lat = cp.empty(record, dtype=cp.uint32)
        out = cp.empty(record, dtype=cp.uint64)
        self.kern((1,), (1,), (np.uint64(nodes[0]), np.int32(per), np.int32(record), lat, out),
                  shared_mem=12 * record)
        cp.cuda.runtime.deviceSynchronize()
        got = out.get()
        if not np.array_equal(got[:per], nxt[:min(per, record)][:got[:per].size]):
            raise RuntimeError("chase did not follow the chain")
        lat_h = lat.get().astype(np.int64)
        return lat_h[0::2] - lat_h[1::2]


def summary(d: np.ndarray) -> dict:
    return {"median": float(np.median(d)), "share5": float(np.mean(d >= 5)),
            "p90": float(np.percentile(d, 90)), "n": int(d.size)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    p = Prober()
    free, total = p.cp.cuda.runtime.memGetInfo()
    size = min(a.gib << 30, free - (8 << 30))
    ptr, mem = p.alloc(size)
    t = time.time()
    rows = []

    def run(section: str, first: int, pages: int, stride: int, **extra) -> None:
        if first + pages * stride + 64 > ptr + size:
            return
        reps = [summary(p.chase(mem, ptr, first, pages, stride)) for _ in range(a.reps)]
        row = {"section": section, "pages": pages, "stride_mb": (stride - SHIFT) / MB,
               "first_mod_64mb": (first % (64 * MB)) / MB,
               "medians": [r["median"] for r in reps], "share5": [r["share5"] for r in reps],
               **extra}
        rows.append(row)
        print(f"{section:6s} s={row['stride_mb']:6.1f}MB n={pages:6d} "
              f"phase={row['first_mod_64mb']:5.1f}MB med={row['medians']} "
              f"share>=5={[round(x, 2) for x in row['share5']]}", flush=True)

    print(f"allocation: {size >> 30} GiB at {ptr:#x} (mod 2 MB {ptr % (2 * MB)}, "
          f"mod 32 MB {(ptr % (32 * MB)) / MB} MB, mod 1 GB {(ptr % (1 << 30)) / MB} MB)")
    a64 = (ptr + 64 * MB - 1) // (64 * MB) * (64 * MB)
    span_ns = {2: [64, 96, 120, 127, 128, 129, 130, 136, 160, 256],
               4: [32, 48, 60, 64, 65, 66, 72, 96, 128],
               8: [16, 17, 24, 31, 32, 33, 34, 40, 64],
               16: [8, 12, 15, 16, 17, 18, 20, 24, 32, 33, 34, 48],
               32: [8, 12, 15, 16, 17, 18, 20, 24, 32],
               64: [8, 15, 16, 17, 18, 24]}
    for s, ns in span_ns.items():
        for n in ns:
            run("span", a64, n, s * MB + SHIFT)
    for n in (17, 33):
        run("noshift", a64, n, 16 * MB)
    for phase in (0, 2, 4, 8, 16, 24, 40):
        for n in (17, 24, 32, 33):
            run("phase", a64 + phase * MB, n, 16 * MB + SHIFT)
    for s in (16, 32, 2):
        n = 64
        while n * s * MB < size:
            run("reach", a64, n, s * MB + SHIFT)
            n *= 2
        run("reach", a64, (size - (a64 - ptr)) // (s * MB + SHIFT) - 1, s * MB + SHIFT)
    p.free(ptr)
    for nbytes in (272 * MB + 17 * SHIFT, 544 * MB + 34 * SHIFT, 1 << 30):
        for rep in range(4):
            q, m = p.alloc(nbytes)
            for s, n in ((16, 17), (8, 17), (8, 33), (16, 33)):
                if n * (s * MB + SHIFT) + 64 <= nbytes:
                    d = [summary(p.chase(m, q, q, n, s * MB + SHIFT)) for _ in range(a.reps)]
                    row = {"section": "alloc", "alloc_mb": nbytes / MB, "rep": rep,
                           "ptr_mod_32mb": (q % (32 * MB)) / MB, "pages": n, "stride_mb": s,
                           "medians": [x["median"] for x in d],
                           "share5": [x["share5"] for x in d]}
                    rows.append(row)
                    print(f"alloc  {nbytes / MB:7.1f}MB rep={rep} ptr%32MB="
                          f"{row['ptr_mod_32mb']:5.1f} s={s}MB n={n} med={row['medians']} "
                          f"share>=5={[round(x, 2) for x in row['share5']]}", flush=True)
            p.free(q)
    print(f"{len(rows)} rows in {time.time() - t:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
