"""Expected values for Fermi, from Mei & Chu's dissection of a GTX560Ti.

Every number comes from shared/reference/mei-chu-2016.md ("sec. N" below is a section of that
page) and carries its tag: [P] the paper, [D] the authors' released raw data, [S] the vendor
specification; "derived" marks arithmetic on those. Values the reference leaves unverified or
null (the 48 KB L1 configuration, L2 line and associativity, P6, which L1 way is favoured) are
left out.

Cycles are the authors' clock() counts, most likely shader-clock cycles (1645 MHz on the
GTX560Ti; sec. 0 and 1, unverified), so the ns values divide by 1645 MHz. Latencies get a
5 % band, structural values none, the two capacities a ladder finds 10 %.
"""

from __future__ import annotations

from gpumem import DeviceInfo, Expected
from gpumem.findings import exact, latency_pair

REF = "mei-chu-2016.md"
#: Shader clock of the GTX560Ti [S]: the clock the authors' cycle counts most likely tick at.
CLOCK_MHZ = 1645.0
LAT_TOL = 0.05

# Mei & Chu's global-memory access patterns, GTX560Ti with L1 off [D] (sec. 4.1).
P1, P2, P3, P4, P5 = 1245.0, 639.2, 398.2, 482.1, 370.6
PATTERNS = f"[D] {REF} sec. 4.1, pattern_demo_Fermi.xlsx (L1 off, mean of 10 runs)"
PAGE = 2 << 20


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ,
                        "shader clock, assumed to be the clock() domain", LAT_TOL)


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    # ---- latency ladder ----
    out += _lat("l1", 116.0, f"[D] {REF} sec. 3.3/4.1, pattern_demo_Fermi.xlsx, L1 hit with "
                "L1 on (the L1-structure run Fermi_L1datacache_15KB-24KB-128bytestride.txt "
                "gave 64: the datasets disagree)")
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 370.6 (330 in the L1-structure "
                "run)")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1 TLB hit) 639.2")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 639.2 + 111.5")
    out.append(Expected("lat.smem", 49.6, f"[D] {REF} sec. 5.2/6, latency.txt: shared memory, "
                        "no bank conflict", "cycle", rel_tol=LAT_TOL))
    for n, v in (("P1", P1), ("P2", P2), ("P3", P3), ("P4", P4), ("P5", P5)):
        out.append(Expected(f"lat.pattern.{n}", v, PATTERNS, "cycle", rel_tol=LAT_TOL))
    # P6 (page-table context switch) is not observed on Fermi [P]: no expected value.

    # ---- L2 ----
    out += [
        Expected("l2.size", 512 << 10, f"[S] {REF} sec. 1: GTX560Ti L2 512 KB", "byte",
                 rel_tol=0.10),
        exact("l2.partitions", 1, f"[D] {REF} sec. 4.1: a single L2-hit latency class (P5); "
               "no near/far L2 reported (inference)"),
    ]

    # ---- L1 data cache, 16 KB configuration [P, D] sec. 3.3 ----
    l1 = f"[P, D] {REF} sec. 3.3 (16 KB configuration)"
    out += [
        Expected("l1d.size", 16 << 10, f"{l1}: no miss up to 16 KB, first miss at 16.125 KB",
                 "byte", rel_tol=0.10),
        exact("l1d.line", 128, f"{l1}: 128 B lines", "byte"),
        exact("l1d.sets", 32, f"{l1}: 32 sets"),
        exact("l1d.ways", 4, f"{l1}: 4 ways"),
        Expected("l1d.way_weights", [3.0, 1.0, 1.0, 1.0],
                 f"[P] {REF} sec. 3.3: one way is evicted 3x as often as each other; sorted "
                 f"largest first, so the ambiguous way numbering does not matter", "1",
                 rel_tol=0.17),
        exact("l1d.index_bits", "9-11, 7^13, 8^14",
               f"[D] {REF} sec. 3.3: fitted set = (L mod 32) ^ bit6(L) ^ (bit7(L) << 1) over all "
               f"129 mapped lines, L = address >> 7 (the constant term depends on the array "
               f"base and is dropped)", ""),
        exact("l1d.policy", "non-lru", f"[P] {REF} sec. 3.3: aperiodic misses; one way is "
               "evicted 3x as often as each other way (which one is ambiguous)", ""),
    ]

    # ---- texture L1 [P, D] sec. 3.1 ----
    tex = f"[P, D] {REF} sec. 3.1"
    out += [
        exact("tex_l1.size", 12 << 10, f"{tex}: 3072 ints, first miss at N = 3073", "byte"),
        exact("tex_l1.line", 32, f"{tex}: one miss per 8 ints", "byte"),
        exact("tex_l1.sets", 4, f"[P] {REF} sec. 3.1: 4 sets x 96 lines"),
        exact("tex_l1.ways", 96, f"[P] {REF} sec. 3.1: 4 sets x 96 lines"),
        exact("tex_l1.index_bits", "7-8", f"{tex}: address bits 7-8 select the set (raw "
               "data matches exactly)", ""),
        exact("tex_l1.policy", "lru", f"[D] {REF} sec. 3.1: with one extra line every "
               "access to the overflowed set misses", ""),
        Expected("tex_l1.hit_latency", 247.7, f"[D] {REF} sec. 3.1: texture L1 hit 244-250, "
                 "mean 247.7 (miss about 470)", "cycle", rel_tol=LAT_TOL),
    ]

    # ---- TLBs [P, D] sec. 3.5 ----
    tlb = f"[P, D] {REF} sec. 3.5"
    out += [
        exact("tlb.page", PAGE, f"[P] {REF} sec. 3.5: 2 MB pages", "byte"),
        exact("tlb_l1.entries", 16, f"{tlb}: L1 TLB 16 entries, fully associative"),
        exact("tlb_l1.sets", 1, f"{tlb}: fully associative"),
        exact("tlb_l1.ways", 16, f"{tlb}: fully associative (16-way)"),
        exact("tlb_l1.reach", 16 * PAGE, f"{tlb}: reach 32 MB", "byte"),
        exact("tlb_l2.entries", 65, f"{tlb}: L2 TLB 65 entries; all 65 pages hit at 130 MB "
               "(Fermi_L2TLB_mapping.xlsx)"),
        exact("tlb_l2.sets", 7, f"{tlb}: 7 unequal sets"),
        exact("tlb_l2.ways", [17, 8, 8, 8, 8, 8, 8], f"{tlb}: one 17-entry set and six "
               "8-entry sets"),
        exact("tlb_l2.policy", "lru", f"{tlb}: L2 TLB LRU", ""),
        exact("tlb_l2.reach", 65 * PAGE, f"{tlb}: reach 130 MB", "byte"),
        Expected("tlb_l1.miss_penalty", round(P3 - P5, 1), f"derived from {PATTERNS}: P3 - P5 "
                 "(difference of two means: 3 cycles absolute band)", "cycle",
                 rel_tol=LAT_TOL, abs_tol=3.0),
        Expected("tlb_l2.miss_penalty", round(P4 - P3, 1), f"derived from {PATTERNS}: P4 - P3 "
                 "(difference of two means: 3 cycles absolute band)", "cycle",
                 rel_tol=LAT_TOL, abs_tol=3.0),
    ]

    # ---- shared memory sec. 5 ----
    out += [
        exact("smem.banks", 32, f"[S] {REF} sec. 1: 32 banks x 4 B"),
        exact("smem.bank_width", 4, f"[S] {REF} sec. 1: 32 banks x 4 B", "byte"),
        Expected("smem.conflict_latency", [49.6, 87.0, 161.8, 311.4, 610.7, 1209.2],
                 f"[D] {REF} sec. 5.2, latency.txt: cycles per access at 1, 2, 4, 8, 16, 32-way "
                 "conflicts (n = gcd(stride, 32))", "cycle", rel_tol=LAT_TOL),
        Expected("bw.smem", 34.90, f"[P, D] {REF} sec. 5.1, Fermi.txt: best shared-memory "
                 f"throughput per SM (16 warps, ILP 4)", "GB/s", rel_tol=0.05),
        exact("smem.peak_warps", 16, f"[P, D] {REF} sec. 5.1, Fermi.txt: peak 34.90 GB/s per "
               "SM at 16 active warps (ILP 4)"),
    ]
    return out
