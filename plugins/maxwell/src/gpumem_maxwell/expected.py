"""Expected values for Maxwell, from Mei & Chu's dissection of a GTX980.

The source is Xinxin Mei and Xiaowen Chu, "Dissecting GPU Memory Hierarchy through
Microbenchmarking", IEEE TPDS 28(1):72-86, 2017 (arXiv:1509.02308), cited as "Mei & Chu, TPDS
2017, sec. N" (sec. 1 introduction, 3 overview, 4 cache structures, 5 global memory, 6.1/6.2
shared memory), and the authors' released code and raw results, cited by file name in
github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem (initial commit). Vendor figures are
NVIDIA's GTX 980 specifications. "derived" marks arithmetic on those; "ASSUMED:" marks a value
no source measures for the GTX980, with the reason it is expected anyway.

The L1, texture and read-only caches are one physical unit on Maxwell (sec. 3), so the
``l1d``, ``tex_l1`` and ``ro`` findings describe one array. Its size, 24 KB, is the authors'
(fine_grain_Maxwell_texture_L1.cu: "should be 24 KB"); its line, sets, ways and policy are
zhanglx13's rerun of the authors' code on a Pascal GTX1080 (32 B, 4 sets, LRU; README.md of
the repository above), not measured on a GTX980: those carry ``ASSUMED:``. Left out: its set
index (the paper finds the GTX980's read-only mapping "rather random", sec. 4, and no mapping
is published), the L2's line, associativity and policy (the paper does not dissect the L2,
sec. 4). The L2 TLB's LRU policy (sec. 4) has no expected value because no experiment reports
a ``tlb_l2.policy`` finding (it would come from replaying the miss order at one overflow of a
set, as ``cache_structure`` does for caches).

Cycles are the authors' clock() counts; the ns values divide by the 1126 MHz base clock that
the paper's 4,612 GFLOP/s implies (sec. 1).

Tolerances. The access patterns P1-P6 and the TLB miss penalties (their differences) carry the
standard error of the authors' 10-run mean, at least one cycle (clock() counts whole cycles),
computed from the per-run class means of pattern_demo_Maxwell.xlsx (sheet non-cache). Ladder
latencies get 5 %, structural values none, the L2 capacity a ladder finds 10 %.
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
SPEC = "NVIDIA GeForce GTX 980 specifications"
#: Base clock of the GTX980 (vendor specification), implied by the paper's 4,612 GFLOP/s.
CLOCK_MHZ = 1126.0
LAT_TOL = 0.05


data = mei_chu_data  # a citation of the authors' released code or raw results


# Mei & Chu's global-memory access patterns on the GTX980 (sec. 5, global-memory latency),
# labelled as in the sheet's Summary_Table: (mean of 10 runs, standard error of that mean).
PATTERN = {"P1": (2447.0, 5.7), "P2": (399.1, 0.7), "P3": (240.8, 0.1), "P4": (304.6, 0.1),
           "P5": (229.7, 0.1), "P6": (2765.7, 9.1)}
P1, P2, P3, P4, P5, P6 = (PATTERN[k][0] for k in ("P1", "P2", "P3", "P4", "P5", "P6"))
PATTERNS = (f"{PAPER}, sec. 5 (global-memory latency); "
            f"{data('pattern_demo_Maxwell.xlsx')}, mean of 10 runs")
BAND = "band: standard error of the 10-run mean, at least one cycle"
MEANING = {"P1": "cold cache miss", "P2": "L2 miss, L1-TLB hit",
           "P3": "L2 hit, L1-TLB miss, L2-TLB hit", "P4": "L2 hit, both TLBs miss",
           "P5": "L2 hit, TLB hit", "P6": "page-table context switch every 512 MB"}
PAGE = 2 << 20
#: Peak of the authors' global copy: 151.52 GiB/s (global_BW.cu divides by 2^30) in GB/s.
COPY_GBS = round(151.52 * 2**30 / 1e9, 1)
#: Theoretical DRAM bandwidth, as the paper's introduction gives it.
DRAM_GBS = 224.0
COPY = (f"{data('Maxwell.xlsx')} (global_BW.cu, sec. 5 global-memory throughput): peak copy "
        f"151.52 GiB/s = {COPY_GBS} GB/s (ILP 4, 160 CTAs x 64 threads); the values are "
        "quantised in steps of about 3 % (151.52, 147.06, ...), band 3 %")
#: The unified cache as zhanglx13's rerun found it on a Pascal GTX1080.
RERUN = (f"zhanglx13's rerun of the authors' code on a Pascal GTX1080 ({REPO}, README.md: "
         "24 KB, 32 B lines, 4 sets, LRU)")
UNIFIED = f"{PAPER}, sec. 3: the L1, texture and read-only caches are one physical unit"
SIZE = (f"{UNIFIED}; {data('fine_grain_Maxwell_texture_L1.cu')}: 6144 ints, \"should be "
        "24 KB\"")


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ, "base clock", LAT_TOL)


def _unified(level: str) -> list[Expected]:
    """The findings of one view (l1d, tex_l1, ro) of the unified L1 / texture array."""
    assumed = f"ASSUMED: not measured on the GTX980; {RERUN}; {UNIFIED}"
    out = [
        exact(f"{level}.line", 32, assumed, "byte"),
        exact(f"{level}.sector", 32, f"{assumed}: the 32 B line is the smallest unit", "byte"),
        exact(f"{level}.sets", 4, assumed),
        exact(f"{level}.ways", 192, f"{assumed}: 24 KB / (4 sets x 32 B)"),
        exact(f"{level}.policy", "lru", assumed, ""),
        Expected(f"{level}.half_miss_size", 24640, f"ASSUMED: derived from the rerun's "
                 f"geometry ({RERUN}): past 24 KB one more 192-way set overflows per 32 B "
                 "line, so at a 32 B stride half the accesses miss once two of the four sets "
                 "overflow, at 24576 + 2 x 32 B; band: 4 lines", "byte", rel_tol=0.0,
                 abs_tol=128),
    ]
    out.append(exact(f"{level}.overflow_size", 24 << 10, f"{SIZE}: the largest footprint "
                     "the first stage holds with no miss", "byte"))
    return out


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    l1hit = f"{PAPER}, sec. 4/5; {data('pattern_demo_Maxwell.xlsx')}, sheet cache (-dlcm=ca)"
    # ---- latency ladder ----
    out += _lat("l1", 98.0, f"{l1hit}: L1 hit 98, also when the TLBs miss")
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 229.7")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1-TLB hit) 399.1")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 399.1 + 74.9")
    out.append(Expected("lat.smem", 28.0, f"{PAPER}, sec. 6.2; {data('latency.txt')}: shared "
                        "memory, no bank conflict", "cycle", rel_tol=LAT_TOL))
    out += pattern_expected(PATTERN, PATTERNS, MEANING, BAND)

    # ---- L2 ----
    out += [
        *l2_size_pair(2048 << 10, f"{SPEC}: L2 2048 KB"),
        exact("l2.partitions", 1, f"{PATTERNS}: a single L2-hit latency class (P5); no "
               "near/far L2 reported (inference)"),
        exact("l2.sm_groups", 1, f"ASSUMED: no per-SM L2 latency structure is reported for "
               f"the GTX980 ({PATTERNS}: one L2-hit class, P5)"),
    ]

    # ---- unified L1 / texture / read-only cache, sec. 3 and 4 ----
    out.append(Expected("l1d.size", 24 << 10, f"{SIZE}: the latency ladder's L1 capacity",
                        "byte", rel_tol=0.10))
    for level in ("l1d", "tex_l1", "ro"):
        out += _unified(level)
    out += [
        Expected("l1d.hit_latency", 98.0, f"{l1hit}: L1 hit 98", "cycle", rel_tol=LAT_TOL),
        Expected("tex_l1.hit_latency", 98.0, f"ASSUMED: a texture hit costs the L1 hit of the "
                 f"same physical array ({UNIFIED}; {l1hit}: 98); no GTX980 texture latency is "
                 "published", "cycle", rel_tol=LAT_TOL),
        Expected("ro.hit_latency", 98.0, f"ASSUMED: a read-only (__ldg) hit costs the L1 hit "
                 f"of the same physical array ({UNIFIED}; {l1hit}: 98); no GTX980 __ldg "
                 "latency is published", "cycle", rel_tol=LAT_TOL),
    ]

    # ---- TLBs, sec. 4 (same on all three GPUs) ----
    tlb = f"{PAPER}, sec. 4 (TLB); {data('fine_grain_TLB.cu')}"
    out += tlb_expected(
        page=PAGE, page_source=f"{PAPER}, sec. 4 (TLB): 2 MB pages", source=tlb,
        l1_entries=16, l2_ways=(17, 8, 8, 8, 8, 8, 8),
        l2_entries_source=f"{tlb}; {data('Maxwell_L2TLB_mapping.xlsx')}: misses per pass 17, "
                          "25, ..., 65 at 132-144 MB",
        l2_ways_note="(GTX980: the first 2 MB step overflows the 17-entry set)",
        penalty_source=f"derived from {PATTERNS}: band: standard error of the 10 per-run "
                       "differences, at least one cycle",
        l1_penalty=(round(P3 - P5, 1), 1.0, "P3 - P5 = 11.1 (single runs 11.0-11.2)"),
        l2_penalty=(round(P4 - P3, 1), 1.0, "P4 - P3 = 63.8 (standard error 0.1)"))

    # ---- global-memory throughput, sec. 5 ----
    out += dram_copy_expected(copy_gbs=COPY_GBS, copy_source=COPY, theoretical_gbs=DRAM_GBS,
                              theoretical_source=f"{PAPER}, sec. 1", rel_tol=0.03)

    # ---- shared memory, sec. 6 ----
    lat = f"{PAPER}, sec. 6.2; {data('latency.txt')}"
    out += smem_expected(
        banks=(32, f"{lat}: 32 banks x 4 B (latency stops growing past stride 32)"),
        bank_width=(4, f"{lat}: stride 2 already conflicts (30.0 cycles), so banks are 4 B "
                       "wide"),
        conflict_latency=([28.0, 30.0, 34.0, 42.0, 58.0, 90.0],
                          f"{lat}, column Maxwell: cycles per access at 1, 2, 4, 8, 16, 32-way "
                          "conflicts (n = gcd(stride, 32)); band 2 %: strides of one degree "
                          "agree within 0.03 cycles, and a conflict adds only 2 cycles per way",
                          0.02),
        throughput_source=f"{PAPER}, sec. 6.1; {data('Maxwell.txt')}", bandwidth=137.41,
        peak_warps=16, peak_ilp=8)
    return out
