"""Expected values for Maxwell, from Mei & Chu's dissection of a GTX980.

Every number comes from shared/reference/mei-chu-2016.md ("sec. N" below is a section of that
page) and carries its tag: [P] the paper, [D] the authors' released raw data, [S] the vendor
specification; "derived" marks arithmetic on those. Values the reference leaves unverified or
null are left out: the unified cache's line, sets, ways, policy and mapping (third-party
numbers from Pascal only), the read-only cache's size, the L2 line and associativity, and a
separate L1 data-cache size.

Cycles are the authors' clock() counts; the ns values divide by the 1126 MHz base clock that
the paper's 4,612 GFLOP/s implies (sec. 1). Latencies get a 5 % band, structural values none,
the L2 capacity a ladder finds 10 %.
"""

from __future__ import annotations

from gpumem import DeviceInfo, Expected
from gpumem.findings import exact, latency_pair

REF = "mei-chu-2016.md"
#: Base clock of the GTX980 [S], implied by the paper's 4,612 GFLOP/s [P].
CLOCK_MHZ = 1126.0
LAT_TOL = 0.05

# Mei & Chu's global-memory access patterns on the GTX980 [D] (sec. 4.1).
P1, P2, P3, P4, P5, P6 = 2447.0, 399.1, 240.8, 304.6, 229.7, 2765.7
PATTERNS = f"[D] {REF} sec. 4.1, pattern_demo_Maxwell.xlsx (authors' labels, mean of 10 runs)"
PAGE = 2 << 20


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ, "base clock", LAT_TOL)


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    # ---- latency ladder ----
    out += _lat("l1", 98.0, f"[D] {REF} sec. 3.3/4.1: L1 hit with -dlcm=ca, 98 (also when "
                "the TLBs miss)")
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 229.7")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1 TLB hit) 399.1")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 399.1 + 74.9")
    out.append(Expected("lat.smem", 28.0, f"[D] {REF} sec. 5.2/6, latency.txt: shared memory, "
                        "no bank conflict", "cycle", rel_tol=LAT_TOL))
    for n, v in (("P1", P1), ("P2", P2), ("P3", P3), ("P4", P4), ("P5", P5)):
        out.append(Expected(f"lat.pattern.{n}", v, PATTERNS, "cycle", rel_tol=LAT_TOL))
    out.append(Expected("lat.pattern.P6", P6, f"{PATTERNS}: P6 (page-table context switch "
                        "every 512 MB) 2765.7", "cycle", rel_tol=LAT_TOL))

    # ---- L2 ----
    out += [
        Expected("l2.size", 2048 << 10, f"[S] {REF} sec. 1: GTX980 L2 2048 KB", "byte",
                 rel_tol=0.10),
        exact("l2.partitions", 1, f"[D] {REF} sec. 4.1: a single L2-hit latency class (P5); "
               "no near/far L2 reported (inference)"),
    ]

    # ---- unified L1 / texture / read-only cache [P] sec. 1, 3.3 ----
    out.append(exact("tex_l1.size", 24 << 10, f"[D, D3] {REF} sec. 3.1: 24 KB (6144 ints) "
                      "in the authors' code comment and third-party reruns; the paper's own "
                      "figure is unverified", "byte"))

    # ---- TLBs [P, D] sec. 3.5 (same on all three GPUs) ----
    tlb = f"[P, D] {REF} sec. 3.5"
    out += [
        exact("tlb.page", PAGE, f"[P] {REF} sec. 3.5: 2 MB pages", "byte"),
        exact("tlb_l1.entries", 16, f"{tlb}: L1 TLB 16 entries, fully associative"),
        exact("tlb_l1.sets", 1, f"{tlb}: fully associative"),
        exact("tlb_l1.ways", 16, f"{tlb}: fully associative (16-way)"),
        exact("tlb_l1.reach", 16 * PAGE, f"{tlb}: reach 32 MB", "byte"),
        exact("tlb_l2.entries", 65, f"{tlb}, Maxwell_L2TLB_mapping.xlsx: misses per pass 17, "
               "25, ..., 65 at 132-144 MB"),
        exact("tlb_l2.sets", 7, f"{tlb}: 7 unequal sets"),
        exact("tlb_l2.ways", [17, 8, 8, 8, 8, 8, 8], f"{tlb}: one 17-entry set and six "
               "8-entry sets (GTX980: the first 2 MB step overflows the 17-entry set)"),
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
        Expected("smem.conflict_latency", [28.0, 30.0, 34.0, 42.0, 58.0, 90.0],
                 f"[D] {REF} sec. 5.2, latency.txt: cycles per access at 1, 2, 4, 8, 16, 32-way "
                 "conflicts (n = gcd(stride, 32))", "cycle", rel_tol=LAT_TOL),
        Expected("bw.smem", 137.41, f"[P, D] {REF} sec. 5.1, Maxwell.txt: best shared-memory "
                 f"throughput per SM (16 warps, ILP 8)", "GB/s", rel_tol=0.05),
        exact("smem.peak_warps", 16, f"[P, D] {REF} sec. 5.1, Maxwell.txt: peak 137.41 GB/s "
               "per SM at 16 active warps (ILP 8)"),
    ]
    return out
