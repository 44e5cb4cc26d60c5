"""Expected values for Kepler, from Mei & Chu's dissection of a GTX780.

The source is Xinxin Mei and Xiaowen Chu, "Dissecting GPU Memory Hierarchy through
Microbenchmarking", IEEE TPDS 28(1):72-86, 2017 (arXiv:1509.02308), cited as "Mei & Chu, TPDS
2017, sec. N" (sec. 3 overview, 4 cache structures, 5 global memory, 6.1/6.2 shared memory),
and the authors' released code and raw results, cited by file name in
github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem (initial commit). Vendor figures are
NVIDIA's GTX 780 specifications and the CUDA C Programming Guide. "derived" marks arithmetic on
those; "ASSUMED:" marks a value no source measures, with the reason it is expected anyway.
Values no source establishes (L2 associativity, sets and policy: the paper does not dissect
the L2, sec. 2 and 4) are left out. The L2 TLB's LRU policy (sec. 4) has no expected value
because no experiment reports a ``tlb_l2.policy`` finding (it would come from replaying the
miss order at one overflow of a set, as ``cache_structure`` does for caches).

Global loads are not L1-cached on the GTX780 (sec. 3), so there is no ``lat.l1``. Cycles are
the authors' clock() counts at the 863 MHz base clock, so the ns values divide by 863 MHz.

Tolerances. The access patterns P1-P6 and the TLB miss penalties (their differences) carry the
standard error of the authors' 10-run mean, at least one cycle (clock() counts whole cycles):
computed from the per-run class means of pattern_demo_Kepler.xlsx (sheet pattern_demo_1600MB).
On the GTX780 single runs spread far wider (two clusters 18 cycles apart: 7 runs with P5 near
236, 3 near 217), wider than the 5.6 cycles between P3 and P5, so a single-run band would not
tell an L1-TLB miss from a hit. Ladder latencies keep 5 % (one run's P5 or P2 class mean
moves by up to 6 % in that sheet); structural values none.
"""

from __future__ import annotations

from gpumem.api import (
    MEI_CHU,
    MEI_CHU_REPO,
    DeviceInfo,
    Expected,
    dram_copy_expected,
    exact,
    l2_size_pair,
    latency_pair,
    mei_chu_data,
    pattern_expected,
    smem_expected,
    tlb_expected,
)

PAPER, REPO = MEI_CHU, MEI_CHU_REPO
SPEC = "NVIDIA GeForce GTX 780 specifications"
#: Base clock of the GTX780 (vendor specification): the clock of the authors' cycle counts.
CLOCK_MHZ = 863.0
LAT_TOL = 0.05


data = mei_chu_data  # a citation of the authors' released code or raw results


# Mei & Chu's global-memory access patterns on the GTX780 (sec. 5, global-memory latency):
# (mean of 10 runs, standard error of that mean) in cycles, from the per-run class means.
PATTERN = {"P1": (734.0, 1.8), "P2": (371.1, 1.7), "P3": (235.7, 2.2), "P4": (288.8, 2.0),
           "P5": (230.1, 2.9), "P6": (1002.0, 4.8)}
P1, P2, P3, P4, P5, P6 = (PATTERN[k][0] for k in ("P1", "P2", "P3", "P4", "P5", "P6"))
PATTERNS = (f"{PAPER}, sec. 5 (global-memory latency); "
            f"{data('pattern_demo_Kepler.xlsx')}, mean of 10 runs")
BAND = "band: standard error of the 10-run mean"
MEANING = {"P1": "cold miss: both TLBs and the L2 miss, page-table walk",
           "P2": "L2 miss, L1-TLB hit", "P3": "L2 hit, L1-TLB miss, L2-TLB hit",
           "P4": "L2 hit, both TLBs miss", "P5": "L2 hit, TLB hit",
           "P6": "page-table context switch every 512 MB (1003.9, 1000.1; 979 in the 1090 MB "
                 "run)"}
PAGE = 2 << 20
#: Peak of the authors' global copy: 214.25 GiB/s (global_BW.cu divides by 2^30) in GB/s.
COPY_GBS = round(214.25 * 2**30 / 1e9, 1)
#: Theoretical DRAM bandwidth: GDDR5 6.0 Gbps x 384 bit.
DRAM_GBS = 288.4
COPY = (f"{data('Kepler.xlsx')} (global_BW.cu, sec. 5 global-memory throughput): peak copy "
        f"214.25 GiB/s = {COPY_GBS} GB/s (ILP 7, 84 CTAs x 1024 threads); the next-best "
        f"configurations lie within 1 %, band 2 %")


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ, "base clock", LAT_TOL)


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    # ---- latency ladder (no L1 for global loads) ----
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 230.1; 204-231 in the L2-line "
                f"runs ({data('Kepler_L2_cacheline_stride4byte.xlsx')})")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1-TLB hit) 371.1; 316-367 in the "
                f"L2-line runs ({data('Kepler_L2_cacheline_stride4byte.xlsx')})")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 371.1 + 58.7")
    out.append(Expected("lat.smem", 46.75, f"{PAPER}, sec. 6.2; {data('latency.txt')}: "
                        "shared memory, no bank conflict", "cycle", rel_tol=LAT_TOL))
    out += pattern_expected(PATTERN, PATTERNS, MEANING, BAND)

    # ---- L2 ----
    l2line = (f"{PAPER}, sec. 4; {data('Kepler_L2_cacheline_stride4byte.xlsx')}: 1 GB cold "
              "array at 4 B stride, 1 access in 8 misses")
    out += [
        *l2_size_pair(1536 << 10, f"{SPEC}: L2 1536 KB"),
        exact("l2.line", 32, l2line, "byte"),
        exact("l2.fill_unit", 32, f"{l2line}: a miss fills the 32 B line", "byte"),
        exact("l2.sector", 32, f"{l2line}: the 32 B line is the smallest unit", "byte"),
        Expected("l2.hit_latency", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 230.1", "cycle",
                 rel_tol=LAT_TOL),
        exact("l2.partitions", 1, f"{PATTERNS}: a single L2-hit latency class (P5); no "
               "near/far L2 reported (inference)"),
        exact("l2.sm_groups", 1, f"ASSUMED: no per-SM L2 latency structure is reported for "
               f"the GTX780 ({PATTERNS}: one L2-hit class, P5)"),
    ]

    # ---- texture L1 (sec. 4) ----
    tex = f"{PAPER}, sec. 4 (texture L1 cache)"
    geometry = f"{tex}: 12 KB, 32 B lines, 4 sets x 96 lines"
    half = (f"derived from {data('Kepler-LineMapping.xlsx')}: at a 32 B stride 100 of 389 "
            "accesses miss at 388 lines and 200 of 393 at 392 lines, so half miss at 391.8 "
            "lines (12538 B, log-interpolated); band: one step of that sheet, 4 lines")
    lru = (f"{tex}; zhanglx13's rerun of the authors' code on a Kepler TITAN ({REPO}, "
           "README.md): LRU")
    out += [
        exact("tex_l1.overflow_size", 12 << 10, f"{geometry}: the largest footprint held "
               "with no miss", "byte"),
        exact("tex_l1.line", 32, geometry, "byte"),
        exact("tex_l1.sector", 32, f"{geometry}: the 32 B line is the smallest unit", "byte"),
        exact("tex_l1.sets", 4, geometry),
        exact("tex_l1.ways", 96, geometry),
        exact("tex_l1.index_bits", "7-8", f"{tex}: address bits 7-8 select the set on Fermi "
               f"and Kepler (the GTX780 sheet {data('Kepler-3080element-8stride.xlsx')} shows "
               "a hashed order of 128 B chunks over the sets)", ""),
        exact("tex_l1.policy", "lru", lru, ""),
        Expected("tex_l1.hit_latency", 148.0, f"{tex}; {data('Kepler-3080element-8stride.xlsx')}"
                 ": texture L1 hit 132-159, mean 148 (miss 256-283, mean 273)", "cycle",
                 rel_tol=LAT_TOL),
        Expected("tex_l1.half_miss_size", 12538, f"{half} (the texture L1 is organised as the "
                 f"read-only cache, {PAPER}, sec. 4)", "byte", rel_tol=0.0, abs_tol=128),
    ]

    # ---- read-only data cache (__ldg), sec. 4 ----
    ro = f"{PAPER}, sec. 4 (read-only data cache): the texture L1's organisation"
    out += [
        exact("ro.overflow_size", 12 << 10, f"{ro}, 12 KB held with no miss; every access "
               f"misses from about 12.5 KB ({data('Kepler-LineMapping.xlsx')})", "byte"),
        exact("ro.line", 32, f"{ro}, 32 B lines", "byte"),
        exact("ro.sector", 32, f"{ro}, 32 B lines: the line is the smallest unit", "byte"),
        exact("ro.sets", 4, f"{ro}, 4 sets x 96 lines"),
        exact("ro.ways", 96, f"{ro}, 4 sets x 96 lines"),
        exact("ro.index_bits", "7-8", f"{ro}: address bits 7-8 as for the texture L1 (the "
               f"GTX780 sheet {data('Kepler-LineMapping.xlsx')} shows a hashed order of 128 B "
               "chunks over the sets)", ""),
        exact("ro.policy", "lru", f"ASSUMED: as the texture L1 ({lru}), whose organisation "
               f"{PAPER}, sec. 4 finds for the read-only cache", ""),
        Expected("ro.hit_latency", 148.0, f"ASSUMED: the texture L1 hit of "
                 f"{data('Kepler-3080element-8stride.xlsx')}, 148 (no __ldg latency is "
                 "published; the read-only cache is the texture L1's organisation, sec. 4)",
                 "cycle", rel_tol=LAT_TOL),
        Expected("ro.half_miss_size", 12538, half, "byte", rel_tol=0.0, abs_tol=128),
    ]

    # ---- TLBs, sec. 4 (same on all three GPUs) ----
    tlb = f"{PAPER}, sec. 4 (TLB); {data('fine_grain_TLB.cu')}"
    out += tlb_expected(
        page=PAGE, page_source=f"{PAPER}, sec. 4 (TLB): 2 MB pages", source=tlb,
        l1_entries=16, l2_ways=(17, 8, 8, 8, 8, 8, 8),
        l2_entries_source=f"{tlb}; {data('Kepler_L2TLB_mapping.xlsx')}: L2 TLB 65 entries "
                          "(same 17 + 6 x 8 shape as Fermi)",
        penalty_source=f"derived from {PATTERNS}: band: standard error of the 10 per-run "
                       "differences (at least one cycle)",
        l1_penalty=(round(P3 - P5, 1), 1.1, "P3 - P5 = 5.6 (single runs 1.0-11.7, standard "
                    "error 1.1)"),
        l2_penalty=(round(P4 - P3, 1), 1.0, "P4 - P3 = 53.1 (single runs 50.2-54.6, standard "
                    "error 0.5)"))

    # ---- global-memory throughput, sec. 5 ----
    out += dram_copy_expected(copy_gbs=COPY_GBS, copy_source=COPY, theoretical_gbs=DRAM_GBS,
                              theoretical_source=f"{SPEC}: GDDR5 6.0 Gbps x 384 bit",
                              rel_tol=0.02)

    # ---- shared memory, sec. 6 (the authors run Kepler in 8-byte bank mode) ----
    lat = f"{PAPER}, sec. 6.2; {data('latency.txt')}"
    out += smem_expected(
        banks=(32, f"{lat}: 32 banks"),
        bank_width=(8, f"{PAPER}, sec. 6.2: 8-byte bank mode, as the authors run it (4-byte "
                       "mode selectable)"),
        conflict_latency=([46.75, 81.63, 96.16, 158.16, 266.66, 483.66],
                          f"{lat}, column Kepler_8byte: cycles per access at strides 2, 4, 8, "
                          "16, 32, 64 words, the 1, 2, 4, 8, 16, 32-way conflicts of 8-byte "
                          "banks (the other 2-way strides, 12, 20, ..., 60, give 66.13)",
                          LAT_TOL),
        throughput_source=f"{PAPER}, sec. 6.1; {data('Kepler.txt')}", bandwidth=83.81,
        peak_warps=32, peak_ilp=6)
    return out
