"""Expected values for Fermi, from Mei & Chu's dissection of a GTX560Ti.

The source is Xinxin Mei and Xiaowen Chu, "Dissecting GPU Memory Hierarchy through
Microbenchmarking", IEEE TPDS 28(1):72-86, 2017 (arXiv:1509.02308), cited as "Mei & Chu, TPDS
2017, sec. N" (sec. 3 overview, 4 cache structures, 5 global memory, 6.1/6.2 shared memory),
and the authors' released code and raw results, cited by file name in
github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem (initial commit). Vendor figures are
NVIDIA's GTX 560 Ti specifications. "derived" marks arithmetic on those; "ASSUMED:" marks a
value no source measures, with the reason it is expected anyway. Values no source establishes
are left out: the 48 KB L1 configuration (not recovered), the L2 line, associativity and
policy (the paper does not dissect the L2, sec. 4), P6 (not observed on Fermi, sec. 5), which
L1 way is favoured, the L1's half-miss footprint, and the texture L1's (the authors' runs,
fermi-3080element-8stride.txt and fermi-3112element-8stride.txt, put it at about 12445 B, half
of the accesses missing at 389 lines; the experiment brackets it by 4-line steps and reports
12538 B, which tests/test_structure.py compares exactly). The L2 TLB's LRU policy (sec. 4) has no
expected value because no experiment reports a ``tlb_l2.policy`` finding (it would come from
replaying the miss order at one overflow of a set, as ``cache_structure`` does for caches).

Cycles are the authors' clock() counts, most likely shader-clock cycles (1645 MHz on the
GTX560Ti: Fermi's counts are about twice Kepler's, sec. 5; an inference), so the ns values
divide by 1645 MHz.

Tolerances. The access patterns P1-P5 and the TLB miss penalties (their differences) carry the
standard error of the authors' 10-run mean, at least one cycle (clock() counts whole cycles),
computed from the per-run class means of pattern_demo_Fermi.xlsx (sheet data_L2). Ladder
latencies get 5 % (the authors' datasets disagree by more: L2 hit 330 or 370.6), structural
values none, the two capacities a ladder finds 10 %.
"""

from __future__ import annotations

from gpumem.api import (
    MEI_CHU,
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

PAPER = MEI_CHU
SPEC = "NVIDIA GeForce GTX 560 Ti specifications"
#: Shader clock of the GTX560Ti (vendor specification): the likely clock of the cycle counts.
CLOCK_MHZ = 1645.0
LAT_TOL = 0.05


data = mei_chu_data  # a citation of the authors' released code or raw results


# Mei & Chu's global-memory access patterns, GTX560Ti with L1 off (sec. 5, global-memory
# latency): (mean of 10 runs, standard error of that mean) in cycles.
PATTERN = {"P1": (1245.0, 1.8), "P2": (639.2, 2.5), "P3": (398.2, 0.1), "P4": (482.1, 0.1),
           "P5": (370.6, 0.3)}
P1, P2, P3, P4, P5 = (PATTERN[k][0] for k in ("P1", "P2", "P3", "P4", "P5"))
PATTERNS = (f"{PAPER}, sec. 5 (global-memory latency); "
            f"{data('pattern_demo_Fermi.xlsx')}, L1 off, mean of 10 runs")
BAND = "band: standard error of the 10-run mean, at least one cycle"
MEANING = {"P1": "cold miss: both TLBs and the L2 miss, page-table walk",
           "P2": "L2 miss, L1-TLB hit", "P3": "L2 hit, L1-TLB miss, L2-TLB hit",
           "P4": "L2 hit, both TLBs miss", "P5": "L2 hit, TLB hit"}
PAGE = 2 << 20
#: Peak of the authors' global copy: 100.69 GiB/s (global_BW.cu divides by 2^30) in GB/s.
COPY_GBS = round(100.69 * 2**30 / 1e9, 1)
#: Theoretical DRAM bandwidth: GDDR5 4.0 Gbps x 256 bit.
DRAM_GBS = 128.3
COPY = (f"{data('Fermi.xlsx')} (global_BW.cu, sec. 5 global-memory throughput): peak copy "
        f"100.69 GiB/s = {COPY_GBS} GB/s (ILP 16, 24 CTAs x 1024 threads); the next-best "
        f"configurations lie within 1.4 %, band 2 %")


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ,
                        "shader clock, assumed to be the clock() domain", LAT_TOL)


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    l1run = data("Fermi_L1datacache_15KB-24KB-128bytestride.txt")
    # ---- latency ladder ----
    out += _lat("l1", 116.0, f"{PAPER}, sec. 4/5; {data('pattern_demo_Fermi.xlsx')}, L1 hit "
                f"with L1 on (the L1-structure run, {l1run}, gave 64: the datasets disagree)")
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 370.6 (330 in the L1-structure "
                "run)")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1-TLB hit) 639.2")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 639.2 + 111.5")
    out.append(Expected("lat.smem", 49.6, f"{PAPER}, sec. 6.2; {data('latency.txt')}: shared "
                        "memory, no bank conflict", "cycle", rel_tol=LAT_TOL))
    out += pattern_expected(PATTERN, PATTERNS, MEANING, BAND)
    # P6 (page-table context switch) is not observed on Fermi (sec. 5): no expected value.

    # ---- L2 ----
    out += [
        *l2_size_pair(512 << 10, f"{SPEC}: L2 512 KB"),
        exact("l2.partitions", 1, f"{PATTERNS}: a single L2-hit latency class (P5); no "
               "near/far L2 reported (inference)"),
        exact("l2.sm_groups", 1, f"ASSUMED: no per-SM L2 latency structure is reported for "
               f"the GTX560Ti ({PATTERNS}: one L2-hit class, P5)"),
    ]

    # ---- L1 data cache, 16 KB configuration (sec. 4) ----
    l1 = f"{PAPER}, sec. 4 (L1 data cache, 16 KB configuration)"
    out += [
        Expected("l1d.size", 16 << 10, f"{l1}; {l1run}: no miss up to 16 KB, first miss at "
                 "16.125 KB (the latency ladder's capacity)", "byte", rel_tol=0.10),
        exact("l1d.overflow_size", 16 << 10, f"{l1}; {l1run}: the largest footprint held "
               "with no miss, 16 KB (first miss at 16.125 KB)", "byte"),
        exact("l1d.line", 128, f"{l1}: 128 B lines", "byte"),
        exact("l1d.sector", 128, f"{l1}: 128 B lines, the smallest unit the L1 fills",
               "byte"),
        exact("l1d.sets", 32, f"{l1}: 32 sets"),
        exact("l1d.ways", 4, f"{l1}: 4 ways"),
        Expected("l1d.hit_latency", 116.0, f"{PAPER}, sec. 4/5; {data('pattern_demo_Fermi.xlsx')}"
                 f", L1 hit with L1 on (the L1-structure run, {l1run}, gave 64: the datasets "
                 "disagree)", "cycle", rel_tol=LAT_TOL),
        Expected("l1d.way_weights", [3.0, 1.0, 1.0, 1.0],
                 f"{l1}: one way is evicted 3x as often as each other; sorted largest first, "
                 "so the ambiguous way numbering does not matter", "1", rel_tol=0.17),
        exact("l1d.index_bits", "9-11, 7^13, 8^14",
               f"derived from {data('Fermi_L1datacache_Mapping.xlsx')}: fitted set = "
               "(L mod 32) ^ bit6(L) ^ (bit7(L) << 1) over all 129 mapped lines, L = address "
               ">> 7 (the constant term depends on the array base and is dropped)", ""),
        exact("l1d.policy", "non-lru", f"{l1}: aperiodic misses; one way is evicted 3x as "
               "often as each other way (which one is ambiguous)", ""),
    ]

    # ---- texture L1 (sec. 4) ----
    tex = f"{PAPER}, sec. 4 (texture L1 cache)"
    out += [
        exact("tex_l1.overflow_size", 12 << 10, f"{tex}; "
               f"{data('fermi-3073element-stride1.txt')}: 3072 ints held with no miss, first "
               "miss at N = 3073", "byte"),
        exact("tex_l1.line", 32, f"{tex}: one miss per 8 ints", "byte"),
        exact("tex_l1.sector", 32, f"{tex}: 32 B lines, the smallest unit", "byte"),
        exact("tex_l1.sets", 4, f"{tex}: 4 sets x 96 lines"),
        exact("tex_l1.ways", 96, f"{tex}: 4 sets x 96 lines"),
        exact("tex_l1.index_bits", "7-8", f"{tex}: address bits 7-8 select the set "
               f"({data('fermi-3080element-8stride.txt')} matches exactly)", ""),
        exact("tex_l1.policy", "lru", f"{tex}; {data('fermi-3080element-8stride.txt')}: with "
               "one extra line every access to the overflowed set misses", ""),
        Expected("tex_l1.hit_latency", 247.7, f"{tex}; "
                 f"{data('fermi-3080element-8stride.txt')}: texture L1 hit 244-250, mean 247.7 "
                 "(miss about 470)", "cycle", rel_tol=LAT_TOL),
    ]

    # ---- TLBs, sec. 4 ----
    tlb = f"{PAPER}, sec. 4 (TLB); {data('fine_grain_TLB.cu')}"
    out += tlb_expected(
        page=PAGE, page_source=f"{PAPER}, sec. 4 (TLB): 2 MB pages", source=tlb,
        l1_entries=16, l2_ways=(17, 8, 8, 8, 8, 8, 8),
        l2_entries_source=f"{tlb}; {data('Fermi_L2TLB_mapping.xlsx')}: L2 TLB 65 entries; "
                          "all 65 pages hit at 130 MB",
        penalty_source=f"derived from {PATTERNS}: band: standard error of the 10 per-run "
                       "differences, at least one cycle",
        l1_penalty=(round(P3 - P5, 1), 1.0, "P3 - P5 = 27.6 (single runs 26.8-28.6, standard "
                    "error 0.2)"),
        l2_penalty=(round(P4 - P3, 1), 1.0, "P4 - P3 = 83.9 (standard error 0.2)"))

    # ---- global-memory throughput, sec. 5 ----
    out += dram_copy_expected(copy_gbs=COPY_GBS, copy_source=COPY, theoretical_gbs=DRAM_GBS,
                              theoretical_source=f"{SPEC}: GDDR5 4.0 Gbps x 256 bit",
                              rel_tol=0.02)

    # ---- shared memory, sec. 6 ----
    lat = f"{PAPER}, sec. 6.2; {data('latency.txt')}"
    out += smem_expected(
        banks=(32, f"{lat}: 32 banks x 4 B (latency stops growing past stride 32)"),
        bank_width=(4, f"{lat}: stride 2 already conflicts (87.0 cycles), so banks are 4 B "
                       "wide"),
        conflict_latency=([49.6, 87.0, 161.8, 311.4, 610.7, 1209.2],
                          f"{lat}, column Fermi: cycles per access at 1, 2, 4, 8, 16, 32-way "
                          "conflicts (n = gcd(stride, 32))", LAT_TOL),
        throughput_source=f"{PAPER}, sec. 6.1; {data('Fermi.txt')}", bandwidth=34.90,
        peak_warps=16, peak_ilp=4)
    return out
