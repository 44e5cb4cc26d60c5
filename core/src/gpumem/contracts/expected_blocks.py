"""Blocks of expected values that several architectures state the same way.

Mei & Chu dissect the TLBs, the global-memory copy and the shared memory of Fermi, Kepler and
Maxwell with the same benchmarks, so the three plugins' expected values for them have one
shape: the geometry and the numbers differ, the findings and how their sources read do not.
These builders write that shape once; a plugin passes its numbers and its citations. They are
part of :mod:`gpumem.api` for any plugin whose source reports the same quantities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpumem.contracts.findings import Expected, exact

#: Xinxin Mei and Xiaowen Chu, "Dissecting GPU Memory Hierarchy through Microbenchmarking",
#: IEEE TPDS 28(1):72-86, 2017, as the Fermi, Kepler and Maxwell plugins cite it.
MEI_CHU = "Mei & Chu, TPDS 2017"
#: Where the authors released their code and raw results.
MEI_CHU_REPO = "github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem"

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
          "ten", "eleven", "twelve")
MIB = 1 << 20


def _count(n: int) -> str:
    return _WORDS[n] if n < len(_WORDS) else str(n)


def _mb(nbytes: int) -> str:
    return f"{nbytes / MIB:g} MB"


def mei_chu_data(files: str) -> str:
    """A citation of Mei & Chu's released code or raw results (one file or several)."""
    return (f"Mei & Chu's released data ({MEI_CHU_REPO}, file{'s' if ',' in files else ''} "
            f"{files})")


def pattern_expected(patterns: Mapping[str, tuple[float, float]], source: str,
                     meaning: Mapping[str, str], band: str) -> list[Expected]:
    """``lat.pattern.Pn`` for Mei & Chu's global-memory access patterns: (mean, standard
    error of the mean) in cycles, each within its standard error (at least one cycle: the
    clock counts whole cycles); ``meaning`` says what each pattern misses and hits."""
    return [Expected(f"lat.pattern.{n}", v, f"{source}: {n} ({meaning[n]}); {band} "
                     f"({sem:g} cycles)", "cycle", rel_tol=0.0, abs_tol=max(1.0, sem))
            for n, (v, sem) in patterns.items()]


def ways_text(ways: Sequence[int]) -> str:
    """Unequal TLB sets in words, largest first: "one 17-entry set and six 8-entry sets"."""
    groups: dict[int, int] = {}
    for w in ways:
        groups[w] = groups.get(w, 0) + 1
    parts = [f"{_count(n)} {w}-entry set{'s' if n > 1 else ''}"
             for w, n in sorted(groups.items(), reverse=True)]
    return " and ".join(parts)


def tlb_expected(*, page: int, page_source: str, source: str, l1_entries: int,
                 l2_ways: Sequence[int], l2_entries_source: str, l2_ways_note: str = "",
                 penalty_source: str, l1_penalty: tuple[float, float, str],
                 l2_penalty: tuple[float, float, str]) -> list[Expected]:
    """A fully associative L1 TLB of ``l1_entries`` and an L2 TLB of unequal sets
    ``l2_ways``, with their reach and miss penalties (value, absolute band, note). ``source``
    cites the geometry, ``l2_entries_source`` the L2 TLB's size in full (the data differ by
    GPU), ``penalty_source`` the penalties."""
    l2_entries = int(sum(l2_ways))
    ways = ways_text(l2_ways) + (f" {l2_ways_note}" if l2_ways_note else "")
    sets = (f"{len(l2_ways)} unequal sets" if len(set(l2_ways)) > 1
            else f"{len(l2_ways)} sets of {l2_ways[0]}")
    return [
        exact("tlb.page", page, page_source, "byte"),
        exact("tlb_l1.entries", l1_entries,
              f"{source}: L1 TLB {l1_entries} entries, fully associative"),
        exact("tlb_l1.sets", 1, f"{source}: fully associative"),
        exact("tlb_l1.ways", l1_entries, f"{source}: fully associative ({l1_entries}-way)"),
        exact("tlb_l1.reach", l1_entries * page, f"{source}: reach {_mb(l1_entries * page)}",
              "byte"),
        exact("tlb_l2.entries", l2_entries, l2_entries_source),
        exact("tlb_l2.sets", len(l2_ways), f"{source}: {sets}"),
        exact("tlb_l2.ways", list(l2_ways), f"{source}: {ways}"),
        exact("tlb_l2.reach", l2_entries * page, f"{source}: reach {_mb(l2_entries * page)}",
              "byte"),
        Expected("tlb_l1.miss_penalty", l1_penalty[0], f"{penalty_source}: {l1_penalty[2]}",
                 "cycle", rel_tol=0.0, abs_tol=l1_penalty[1]),
        Expected("tlb_l2.miss_penalty", l2_penalty[0], f"{penalty_source}: {l2_penalty[2]}",
                 "cycle", rel_tol=0.0, abs_tol=l2_penalty[1]),
    ]


def dram_copy_expected(*, copy_gbs: float, copy_source: str, theoretical_gbs: float,
                       theoretical_source: str, rel_tol: float) -> list[Expected]:
    """DRAM throughput when the source measures only copies: the copy's rate, and reads and
    writes ASSUMED to reach it (and the copy's share of the theoretical bandwidth)."""
    assumed = "(the paper measures copies only)"
    return [
        Expected("bw.dram_copy", copy_gbs, copy_source, "GB/s", rel_tol=rel_tol),
        Expected("bw.dram_read", copy_gbs, f"ASSUMED: a read stream reaches the copy's rate "
                 f"{assumed}; {copy_source}", "GB/s", rel_tol=rel_tol),
        Expected("bw.dram_write", copy_gbs, f"ASSUMED: a write stream reaches the copy's "
                 f"rate {assumed}; {copy_source}", "GB/s", rel_tol=rel_tol),
        Expected("bw.dram_read_fraction", round(copy_gbs / theoretical_gbs, 3),
                 f"ASSUMED: reads reach the copy's share of the theoretical "
                 f"{theoretical_gbs:g} GB/s ({theoretical_source}); {copy_source}", "1",
                 rel_tol=rel_tol),
    ]


def smem_expected(*, banks: tuple[int, str], bank_width: tuple[int, str],
                  conflict_latency: tuple[Sequence[float], str, float],
                  throughput_source: str, bandwidth: float, peak_warps: int, peak_ilp: int,
                  bandwidth_tol: float = 0.05) -> list[Expected]:
    """Shared memory: banks and their width (value, source), the latency per n-way conflict
    (values, source, relative band) and the best throughput per SM, found at ``peak_warps``
    warps with ``peak_ilp`` independent loads each."""
    return [
        exact("smem.banks", banks[0], banks[1]),
        exact("smem.bank_width", bank_width[0], bank_width[1], "byte"),
        Expected("smem.conflict_latency", list(conflict_latency[0]), conflict_latency[1],
                 "cycle", rel_tol=conflict_latency[2]),
        Expected("bw.smem", bandwidth, f"{throughput_source}: best shared-memory throughput "
                 f"per SM ({peak_warps} warps, ILP {peak_ilp})", "GB/s", rel_tol=bandwidth_tol),
        exact("smem.peak_warps", peak_warps, f"{throughput_source}: peak {bandwidth:.2f} GB/s "
              f"per SM at {peak_warps} active warps (ILP {peak_ilp})"),
    ]
