"""The L2 read bandwidth when every SM reads only lines its own L2 partition holds (issue 44,
item 6: "L2 read bandwidth ... with the near partition's peak").

    python benchmarks/l2_near_peak.py [--mb 2,4,8,16,32] [--json OUT.json]

``bw.l2`` (each block re-reading its own lines, 9.0 TB/s on an H200) reads lines of both
partitions from every SM, so half of what an SM reads crosses between the partitions. Here
each line is read by one SM only, no line by two (nothing for the L2's request coalescer to
merge across SMs), and the lines are chosen by where they sit:

1. **Where each line sits.** A 32 MB buffer whose lines each point to themselves; from one
   SM at a time (the kernel works on the block that lands there, by ``%smid``), one thread
   chases each line 8 times after one untimed load, cycles per load. Every SM reads the
   first ``PROBE_LINES`` lines; its side is the sign of its latency profile's correlation with
   SM 0's. All lines are then timed from SM 0 and from the SM most unlike it: a line is near
   SM 0's side where SM 0 reads it faster. The difference's histogram shows whether the two
   classes are apart (a line within ``AMBIGUOUS`` cycles is counted and reported).
2. **Bandwidth.** For a footprint F (the buffer's first F bytes), each SM gets its own share
   of lines by ``mode``: ``near`` (lines of its side, shared out over its side's SMs), ``far``
   (the other side's), ``mixed`` (all lines shuffled, shared out over all SMs: what
   ``bw.l2``'s kernel reads, but line by line), ``contiguous`` (all lines, each SM a run of
   consecutive lines, as ``bw.l2``'s blocks read) and ``side0`` (all lines, read by SM 0's
   side alone, the other side idle). ``--split median`` puts half the lines on each side
   (the difference's median, not zero, divides them). Each block on an SM (by ``%smid`` and a
   per-SM counter) reads its part of the SM's share: 16-byte ``ld.global.cg.v4`` loads, eight
   threads a line, four loads in flight, passes over the share until ~``TARGET_BYTES`` are
   read; bytes counted in the kernel, time by CUDA events, the SM clock from ``%clock64``
   against ``%globaltimer`` in block 0. Best and median of ``TRIALS`` launches per shape.

Changes no setting of the GPU; prints a short table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

LINE = 128
BUFFER = 32 << 20
PROBE_LINES = 2048
CHASE = 8
AMBIGUOUS = 10.0      # cycles: a line whose two latencies differ by less is not placed
TARGET_BYTES = 400e9  # bytes a timed launch reads (~40 ms at 10 TB/s)
TRIALS = 5
SHAPES = ((1, 1024), (2, 1024), (2, 512), (4, 512), (8, 256))  # blocks per SM, threads
MAX_SHARE = 12288     # lines a block keeps in shared memory

SOURCE = r"""
extern "C" __global__ void line_latency(unsigned long long* buf, const int* lines, int n,
                                        int target, unsigned short* out, int* claimed) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid != (unsigned)target || threadIdx.x != 0) return;
    if (atomicAdd(claimed, 1) != 0) return;          // one block of the SM does the work
    for (int j = 0; j < n; ++j) {
        unsigned long long q = (unsigned long long)(buf + (long long)lines[j] * 16);
        unsigned long long t0, t1;
        asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(q) :: "memory");   // untimed
        if (q == 0ull) break;            // a branch on the value: the clock waits for it
        t0 = clock64();
        #pragma unroll
        for (int k = 0; k < CHASE; ++k)
            asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(q) :: "memory");
        if (q == 0ull) break;
        t1 = clock64();
        unsigned long long c = (t1 - t0) / CHASE;
        out[j] = (unsigned short)(c > 65535ull ? 65535ull : c);
    }
}

extern "C" __global__ void read_lines(const uint4* __restrict__ buf, const int* lines,
                                      const int* offs, int sms, int per_sm, int cap,
                                      int passes,
                                      int* sm_count, unsigned long long* moved,
                                      unsigned long long* clocks, unsigned* sink) {
    extern __shared__ int mine[];           // this block's lines (cap: the launch's)
    __shared__ int rank_s;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid >= (unsigned)sms) return;   // an SM id past the count: not given lines
    if (threadIdx.x == 0) rank_s = atomicAdd(sm_count + smid, 1);
    __syncthreads();
    const int rank = rank_s % per_sm;
    const int lo = offs[smid], len = offs[smid + 1] - lo;
    const int a = lo + (int)((long long)len * rank / per_sm);
    const int b = lo + (int)((long long)len * (rank + 1) / per_sm);
    const int k = min(b - a, cap);
    for (int i = threadIdx.x; i < k; i += blockDim.x) mine[i] = lines[a + i];
    __syncthreads();
    unsigned long long c0 = 0, g0 = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    }
    unsigned acc = 0;
    const int vecs = k * 8;                 // 16-byte vectors, eight a line
    const int step = blockDim.x;
    for (int p = 0; p < passes; ++p) {
        int v = threadIdx.x;
        for (; v + 3 * step < vecs; v += 4 * step) {
            uint4 x[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int w = v + u * step;
                const uint4* at = buf + (long long)mine[w >> 3] * 8 + (w & 7);
                asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(x[u].x), "=r"(x[u].y), "=r"(x[u].z), "=r"(x[u].w)
                             : "l"(at));
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
        }
        for (; v < vecs; v += step) {
            const uint4* at = buf + (long long)mine[v >> 3] * 8 + (v & 7);
            uint4 x;
            asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w) : "l"(at));
            acc ^= x.x ^ x.y ^ x.z ^ x.w;
        }
    }
    if (acc == 0x9e3779b9u) sink[threadIdx.x] = acc;
    if (threadIdx.x == 0) atomicAdd(moved, (unsigned long long)k * 128ull * passes);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned long long c1, g1;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
        clocks[0] = c1 - c0;
        clocks[1] = g1 - g0;
    }
}
""".replace("CHASE", str(CHASE))


def _module():  # noqa: ANN202
    import cupy as cp

    return cp.RawModule(code=SOURCE)


def _latencies(mod, buf, lines, target: int, sms: int) -> np.ndarray:  # noqa: ANN001
    """Cycles per load of each line in ``lines``, from SM ``target``."""
    import cupy as cp

    kern = mod.get_function("line_latency")
    out = cp.zeros(len(lines), dtype=cp.uint16)
    for _ in range(8):  # the target SM gets a block almost always; try again if not
        claimed = cp.zeros(1, dtype=cp.int32)
        kern((4 * sms,), (32,), (buf, lines, np.int32(len(lines)), np.int32(target), out,
                                 claimed))
        cp.cuda.Device().synchronize()
        if int(claimed[0]) > 0:
            return cp.asnumpy(out).astype(float)
    raise RuntimeError(f"no block landed on SM {target}")


def place(mod, buf, sms: int, split: str = "sign") -> dict:  # noqa: ANN001
    """Each SM's side and each line's side (0: SM 0's), from the chases."""
    import cupy as cp

    n = BUFFER // LINE
    probe = cp.arange(PROBE_LINES, dtype=cp.int32)
    prof = np.stack([_latencies(mod, buf, probe, s, sms) for s in range(sms)])
    cen = prof - prof.mean(axis=1, keepdims=True)
    corr = (cen @ cen[0]) / (np.linalg.norm(cen, axis=1) * np.linalg.norm(cen[0]))
    side = (corr < 0).astype(int)
    opposite = int(np.argmin(corr))
    every = cp.arange(n, dtype=cp.int32)
    from0 = _latencies(mod, buf, every, 0, sms)
    fromo = _latencies(mod, buf, every, opposite, sms)
    d = from0 - fromo
    line_side = (d > (np.median(d) if split == "median" else 0.0)).astype(int)
    return {"sm_side": side, "corr": corr, "opposite": opposite, "line_side": line_side,
            "d": d, "ambiguous": float(np.mean(np.abs(d) < AMBIGUOUS))}


def shares(mode: str, n_lines: int, sm_side: np.ndarray, line_side: np.ndarray,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """CSR of each SM's lines: (lines, offsets), offsets[s]:offsets[s+1] SM s's."""
    sms = len(sm_side)
    per: list[list[int]] = [[] for _ in range(sms)]
    if mode in ("near", "far"):
        if len(set(sm_side.tolist())) < 2:
            raise SystemExit("every SM's profile correlates with SM 0's: no two sides found")
        for side in (0, 1):
            readers = np.flatnonzero(sm_side == side)
            want = side if mode == "near" else 1 - side
            mine = np.flatnonzero(line_side[:n_lines] == want)
            rng.shuffle(mine)
            for j, part in enumerate(np.array_split(mine, len(readers))):
                per[readers[j]] = sorted(part.tolist())
    elif mode == "side0":  # SM 0's side alone reads every line; the other side idles
        readers = np.flatnonzero(sm_side == 0)
        for j, part in enumerate(np.array_split(rng.permutation(n_lines), len(readers))):
            per[readers[j]] = sorted(part.tolist())
    elif mode == "mixed":
        every = rng.permutation(n_lines)
        for s, part in enumerate(np.array_split(every, sms)):
            per[s] = sorted(part.tolist())
    else:  # contiguous
        for s, part in enumerate(np.array_split(np.arange(n_lines), sms)):
            per[s] = part.tolist()
    offs = np.zeros(sms + 1, dtype=np.int32)
    offs[1:] = np.cumsum([len(p) for p in per])
    return np.concatenate([np.asarray(p, dtype=np.int32) for p in per]), offs


def bandwidth(mod, buf, lines: np.ndarray, offs: np.ndarray, sms: int, per_sm: int,  # noqa: ANN001
              threads: int, footprint: int) -> dict:
    import cupy as cp

    kern = mod.get_function("read_lines")
    cap = -(-int(np.diff(offs).max()) // per_sm) + 1
    if cap > MAX_SHARE:
        return {}
    d_lines, d_offs = cp.asarray(lines), cp.asarray(offs)
    passes = max(1, int(TARGET_BYTES / footprint))
    sink = cp.zeros(threads, dtype=cp.uint32)
    tbs, mhz = [], []
    for trial in range(TRIALS + 1):  # the first one warms (and compiles)
        count = cp.zeros(sms, dtype=cp.int32)  # blocks per SM (an id >= sms returns)
        moved = cp.zeros(1, dtype=cp.uint64)
        clocks = cp.zeros(2, dtype=cp.uint64)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kern((sms * per_sm,), (threads,), (buf, d_lines, d_offs, np.int32(sms),
                                           np.int32(per_sm), np.int32(cap),
                                           np.int32(passes if trial else 2), count, moved,
                                           clocks, sink), shared_mem=4 * cap)
        stop.record()
        stop.synchronize()
        if not trial:
            continue
        s = cp.cuda.get_elapsed_time(start, stop) / 1e3
        tbs.append(int(moved[0]) / s / 1e12)
        c = cp.asnumpy(clocks)
        mhz.append(float(c[0]) / float(c[1]) * 1e3 if c[1] else float("nan"))
        uneven = int(cp.asnumpy(count).max())
    return {"best_tbs": max(tbs), "median_tbs": statistics.median(tbs), "tbs": tbs,
            "sm_mhz": statistics.median(mhz), "max_blocks_on_an_sm": uneven}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", default="2,4,8,16,32")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--modes", default="near,mixed,contiguous,far")
    ap.add_argument("--split", choices=("sign", "median"), default="sign",
                    help="a line is on SM 0's side where SM 0 reads it faster (sign) or "
                         "where the difference is under its median (half the lines each)")
    args = ap.parse_args()
    import cupy as cp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    mod = _module()
    n = BUFFER // LINE
    # every line's first word holds its own address (the chase's pointer)
    buf = cp.zeros(BUFFER // 8, dtype=cp.uint64)
    base = buf.data.ptr
    buf[::16] = cp.arange(n, dtype=cp.uint64) * LINE + base
    cp.cuda.Device().synchronize()
    where = place(mod, buf, sms, args.split)
    d = where["d"]
    print(f"{name}: {sms} SMs, side of SM 0: {int((where['sm_side'] == 0).sum())}, other: "
          f"{int((where['sm_side'] == 1).sum())} (opposite SM {where['opposite']}, corr "
          f"{where['corr'][where['opposite']]:.2f}); lines near SM 0's side "
          f"{float(np.mean(where['line_side'] == 0)):.1%}; |d| < {AMBIGUOUS:g} cycles: "
          f"{where['ambiguous']:.2%}; d quartiles {np.percentile(d, [5, 25, 50, 75, 95])}",
          flush=True)
    hist, edges = np.histogram(d, bins=24)
    cells = (f"{e:.0f}:{h}" for e, h in zip(edges[:-1], hist, strict=True))
    print("d histogram:", " ".join(cells), flush=True)
    rng = np.random.default_rng(7)
    rows = []
    for mb in (float(x) for x in args.mb.split(",")):
        fp = int(mb * (1 << 20)) // LINE * LINE
        for mode in args.modes.split(","):
            lines, offs = shares(mode, fp // LINE, where["sm_side"], where["line_side"], rng)
            for per_sm, threads in SHAPES:
                r = bandwidth(mod, buf, lines, offs, sms, per_sm, threads, fp)
                if not r:
                    continue
                rows.append({"mb": mb, "mode": mode, "per_sm": per_sm, "threads": threads,
                             **r})
                print(f"{mb:5g} MB {mode:10s} {per_sm}x{threads:<5d} best "
                      f"{r['best_tbs']:6.2f} median {r['median_tbs']:6.2f} TB/s  SM "
                      f"{r['sm_mhz']:.0f} MHz  max blocks/SM {r['max_blocks_on_an_sm']}",
                      flush=True)
    if args.json:
        args.json.write_text(json.dumps({
            "device": name, "sms": sms, "sm_side": where["sm_side"].tolist(),
            "corr": where["corr"].round(3).tolist(), "ambiguous": where["ambiguous"],
            "d_hist": [hist.tolist(), edges.round(1).tolist()], "rows": rows}, indent=1))
    print("\nbest per footprint and mode (TB/s, median of the best shape):")
    for mb in sorted({r["mb"] for r in rows}):
        cells = []
        for mode in args.modes.split(","):
            sel = [r for r in rows if r["mb"] == mb and r["mode"] == mode]
            if sel:
                b = max(sel, key=lambda r: r["median_tbs"])
                cells.append(f"{mode} {b['median_tbs']:.2f} ({b['per_sm']}x{b['threads']})")
        print(f"{mb:5g} MB  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
