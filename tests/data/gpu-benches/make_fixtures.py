"""Writes the three gpu-benches fixtures of this folder (see README.md).

The lines are printed exactly as the benchmarks' ``cout`` statements print them (field widths,
precision, the ``fixed`` flag that sticks after the first row), over the grids their loops
walk; the numbers are a made-up, H200-like model chosen so that the expected findings can be
read off the files by hand. Run ``python tests/data/gpu-benches/make_fixtures.py``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

HERE = Path(__file__).parent
CLOCK = 1980     # MHz, what gpu-clock.cuh would read on an H200
SMS = 132        # multiProcessorCount
MAX_THREADS_SM, MAX_THREADS_BLOCK = 2048, 1024


def latency() -> str:
    """gpu-latency/main.cu: LEN lines of 128 B, LEN = LEN * 1.042 + 1 + rand() % 11."""
    rng = random.Random(42)
    out = ["clock: " + " ".join([str(CLOCK)] * 24) + " "]
    trans = {"l1": [61.3, 118.0, 205.0], "l2": [288.0, 410.8], "far": [560.0]}
    length, first = 16, True
    while length < (1 << 24):
        if length * 128 > 120 * 1024 * 1024:
            length = int(length * 1.1)
        iters = max(length, 100000)
        kb = length * 128 / 1024.0
        if kb <= 210:
            med = 32.0 if kb < 100 else 32.1
        elif trans["l1"]:
            med = trans["l1"].pop(0)
        elif kb <= 24576:
            med = (280.4, 280.5, 280.4, 280.3)[int(kb) % 4]
        elif trans["l2"]:
            med = trans["l2"].pop(0)
        elif kb <= 60000:
            med = 503.4 + 28 * math.sin(kb)                # the far L2 partition: noisy
        elif trans["far"]:
            med = trans["far"].pop(0)
        elif kb <= 131072:
            med = 622.0 + 4 * math.sin(kb)                 # DRAM, TLB hits
        else:
            med = 680.0 + 9.2 * math.log2(kb / 131072) / math.log2(2097152 / 131072)
        med = round(med, 1)
        mean, p5, p95 = med, round(med - 0.1, 1), round(med + 0.1, 1)
        ms = mean * iters / (CLOCK * 1e6) * 1000
        size = f"{kb:g}" if first else f"{kb:.1f}"        # `fixed` is set after the size
        out.append(f"{iters:9d} {CLOCK:5d} {size:>8} {ms:8.1f} {mean:7.1f} {med:.1f} "
                   f"{p5:.1f} {p95:.1f}")
        first = False
        length = int(length * 1.042 + 1 + rng.randrange(11))
    return "\n".join(out) + "\n\n"


def stream() -> str:
    """gpu-stream/main.cu: measureKernels over block sizes and blocks per SM."""
    peaks = (3942, 2775, 3174, 3783, 3138, 3120)
    t0 = (60000, 190000, 90000, 40000, 90000, 90000)
    out = ["block smBlocks   threads    occ%   |                init       read       "
           "scale     triad       3pt        5pt"]
    configs = [(b, 1) for b in (16, 32, 48, 64, 80, 96, 112)]
    for warps in range(4, 81):
        threads = warps * 32
        if threads // 32 % 2 == 0:
            configs.append((threads // 2, 2))
        elif warps < 6:
            configs.append((threads, 1))
    first = True
    for block, per_sm in configs:
        if block * per_sm > MAX_THREADS_SM or block > MAX_THREADS_BLOCK:
            continue
        threads = SMS * block * per_sm
        occ = block * per_sm / MAX_THREADS_SM * 100.0
        occ_s = f"{occ:.1g}" if first else f"{occ:.1f}"  # `fixed` comes with the first value
        first = False
        line = f"{block:4d}   {threads:7d}  {per_sm:6d}  {occ_s:>5}%     |  GB/s: "
        for k, (peak, t) in enumerate(zip(peaks, t0, strict=True)):
            bw = peak * (1 - math.exp(-threads / t))
            if k == 0 and threads > 250000:                 # init: a dip at full occupancy
                bw -= 30
            line += f"{' ':>6}{bw:5.0f}"
        out.append(line)
    return "\n".join(out) + "\n"


def l2_cache() -> str:
    """gpu-l2-cache/main.cu: blockRun i = 3, i += max(1.0, i * 0.1), 512 kB per block."""
    block_dv, block_count = 64 * 1024 * 8, 200000
    out = [f"{'data set':>13}{'exec time':>12}{'spread':>11}" + "Eff. bw".rjust(14)]
    i = 3
    while i < 10000:
        total_kb = block_dv * i / 1024
        mib = total_kb / 1024
        if i == 3:
            bw = 13100.0                                   # L1 reuse at 3 distinct blocks
        elif mib <= 24:
            bw = 10400.0 - 400.0 * math.log2(mib / 2) / math.log2(12)
        elif mib <= 100:
            bw = 10000.0 * (3890.0 / 10000.0) ** ((mib - 24) / 76)
        else:
            bw = 3890.0 + (0.4 if i % 2 else -0.3)
        bw = round(bw, 1)
        secs = block_dv * block_count / bw / 1e9
        spread = 0.1 if i > 3 else 1.0
        out.append(f"{block_dv / 1024:10.0f} kB{total_kb:10.0f} kB{secs * 1000:10.0f}ms"
                   f"{spread:10.1f}%{bw:10.1f} GB/s   " + "".join(f"{0:6.0f} GB/s " for _ in
                                                            range(4)))
        i = int(i + max(1.0, i * 0.1))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    (HERE / "gpu-latency-h200-like.txt").write_text(latency())
    (HERE / "gpu-stream-h200-like.txt").write_text(stream())
    (HERE / "gpu-l2-cache-h200-like.txt").write_text(l2_cache())
