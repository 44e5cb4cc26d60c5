"""Expected values for Kepler, from Mei & Chu's dissection of a GTX780.

Every number comes from shared/reference/mei-chu-2016.md ("sec. N" below is a section of that
page) and carries its tag: [P] the paper, [D] the authors' released raw data, [D3] third-party
reruns of the authors' code, [S] the vendor specification; "derived" marks arithmetic on
those. Values the reference leaves unverified or null (an L1 data cache for global loads, L2
associativity, the read-only cache's replacement policy) are left out.

Global loads are not L1-cached on the GTX780 (sec. 3.3), so there is no ``lat.l1``. Cycles are
the authors' clock() counts at the 863 MHz base clock (sec. 1), so the ns values divide by
863 MHz. Latencies get a 5 % band, structural values none, the L2 capacity a ladder finds 10 %.
"""

from __future__ import annotations

from gpumem import DeviceInfo, Expected
from gpumem.findings import exact, latency_pair

REF = "mei-chu-2016.md"
#: Base clock of the GTX780 [S]: the clock the authors' cycle counts are taken at.
CLOCK_MHZ = 863.0
LAT_TOL = 0.05

# Mei & Chu's global-memory access patterns on the GTX780 [D] (sec. 4.1).
P1, P2, P3, P4, P5, P6 = 734.0, 371.1, 235.7, 288.8, 230.1, 1002.0
PATTERNS = f"[D] {REF} sec. 4.1, the authors' pattern sheets (pattern_demo_*.xlsx, mean of 10 runs)"
PAGE = 2 << 20


def _lat(name: str, cycles: float, source: str) -> list[Expected]:
    return latency_pair(name, cycles, source, CLOCK_MHZ, "base clock", LAT_TOL)


def expected_values(device: DeviceInfo) -> list[Expected]:
    out: list[Expected] = []
    # ---- latency ladder (no L1 for global loads) ----
    out += _lat("l2", P5, f"{PATTERNS}: P5 (L2 hit, TLB hit) 230.1 (212-227 in the L2-line "
                "runs)")
    out += _lat("dram", P2, f"{PATTERNS}: P2 (L2 miss, L1 TLB hit) 371.1 (330-355 in the "
                "L2-line runs)")
    out += _lat("dram_tlb_miss", round(P2 + (P4 - P5), 1),
                f"derived from {PATTERNS}: P2 + (P4 - P5) = 371.1 + 58.7")
    out.append(Expected("lat.smem", 46.75, f"[D] {REF} sec. 5.2/6, latency.txt: shared "
                        "memory, no bank conflict", "cycle", rel_tol=LAT_TOL))
    for n, v in (("P1", P1), ("P2", P2), ("P3", P3), ("P4", P4), ("P5", P5)):
        out.append(Expected(f"lat.pattern.{n}", v, PATTERNS, "cycle", rel_tol=LAT_TOL))
    out.append(Expected("lat.pattern.P6", P6, f"{PATTERNS}: P6 (page-table context switch "
                        "every 512 MB) about 1002 (1003.9, 1000.1; 979 in the 1090 MB run)",
                        "cycle", rel_tol=LAT_TOL))

    # ---- L2 ----
    out += [
        Expected("l2.size", 1536 << 10, f"[S] {REF} sec. 1: GTX780 L2 1536 KB", "byte",
                 rel_tol=0.10),
        exact("l2.line", 32, f"[D] {REF} sec. 3.4, Kepler_L2_cacheline_stride4byte.xlsx: "
               "1 GB cold array at 4 B stride, 1 access in 8 misses", "byte"),
        exact("l2.partitions", 1, f"[D] {REF} sec. 4.1: a single L2-hit latency class (P5); "
               "no near/far L2 reported (inference)"),
    ]

    # ---- texture L1 [P, D] sec. 3.1 ----
    tex = f"[P, D] {REF} sec. 3.1"
    out += [
        exact("tex_l1.size", 12 << 10, f"{tex}: 12 KB", "byte"),
        exact("tex_l1.line", 32, f"{tex}: 32 B lines", "byte"),
        exact("tex_l1.sets", 4, f"[P] {REF} sec. 3.1: 4 sets x 96 lines"),
        exact("tex_l1.ways", 96, f"[P, D] {REF} sec. 3.1: 4 sets x 96 lines"),
        exact("tex_l1.index_bits", "7-8", f"[P] {REF} sec. 3.1: bits 7-8 for Fermi and "
               "Kepler; but the GTX780 raw data (Kepler-3080element-8stride.xlsx) shows a "
               "hashed 128 B chunk-to-set order", ""),
        exact("tex_l1.policy", "lru", f"[D3] {REF} sec. 3.1: LRU", ""),
        Expected("tex_l1.hit_latency", 148.0, f"[D] {REF} sec. 3.1: texture L1 hit 132-159, "
                 "mean 148 (miss 273), GTX780 texture-style run", "cycle", rel_tol=LAT_TOL),
    ]

    # ---- read-only data cache (__ldg) [P, D] sec. 3.2 ----
    ro = f"[P, D] {REF} sec. 3.2: same organisation as the texture L1"
    out += [
        exact("ro.size", 12 << 10, f"{ro}, 12 KB (every access misses from about 12.5 KB, "
               "Kepler-LineMapping.xlsx)", "byte"),
        exact("ro.line", 32, f"{ro}, 32 B lines", "byte"),
        exact("ro.sets", 4, f"{ro}, 4 sets x 96 lines"),
        exact("ro.ways", 96, f"{ro}, 4 sets x 96 lines"),
    ]

    # ---- TLBs [P, D] sec. 3.5 (same on all three GPUs) ----
    tlb = f"[P, D] {REF} sec. 3.5"
    out += [
        exact("tlb.page", PAGE, f"[P] {REF} sec. 3.5: 2 MB pages", "byte"),
        exact("tlb_l1.entries", 16, f"{tlb}: L1 TLB 16 entries, fully associative"),
        exact("tlb_l1.sets", 1, f"{tlb}: fully associative"),
        exact("tlb_l1.ways", 16, f"{tlb}: fully associative (16-way)"),
        exact("tlb_l1.reach", 16 * PAGE, f"{tlb}: reach 32 MB", "byte"),
        exact("tlb_l2.entries", 65, f"{tlb}: L2 TLB 65 entries (GTX780 sheet: same 17 + 6 x 8 "
               "shape as Fermi)"),
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

    # ---- shared memory sec. 5 (the authors run Kepler in 8-byte bank mode) ----
    out += [
        exact("smem.banks", 32, f"[P, D] {REF} sec. 1, 5.2: 32 banks"),
        exact("smem.bank_width", 8, f"[P, D] {REF} sec. 1, 5.1, 5.2: 8-byte bank mode, as the "
               "authors run it (4-byte mode selectable)", "byte"),
        Expected("smem.conflict_latency", [46.75, 66.13, 96.16, 158.16, 266.66, 483.66],
                 f"[D] {REF} sec. 5.2, latency.txt, 8-byte bank mode: cycles per access at 1, "
                 "2, 4, 8, 16, 32-way conflicts (counted in 8-byte words)", "cycle",
                 rel_tol=LAT_TOL),
        Expected("bw.smem", 83.81, f"[P, D] {REF} sec. 5.1, Kepler.txt: best shared-memory "
                 f"throughput per SM (32 warps, ILP 6)", "GB/s", rel_tol=0.05),
        exact("smem.peak_warps", 32, f"[P, D] {REF} sec. 5.1, Kepler.txt: peak 83.81 GB/s per "
               "SM at 32 active warps (ILP 6)"),
    ]
    return out
