"""``cache_structure``: Mei & Chu's fine-grained P-chase, automated, per load path.

For each load path the device offers (``ca`` -> L1 data cache, ``tex`` -> texture L1, ``nc``
-> read-only cache) one single thread chases cyclic chains and every access is timed:

1. ``size``: 32-byte stride, footprint doubling from 1 KB until accesses miss, then bisected
   to 32 bytes: the capacity C is the largest footprint with no repeated miss;
2. ``line``: 4-byte stride just past C: the count of missing elements jumps at C + b + 4;
   the spacing of the missing elements inside a line gives the sector;
3. ``sets``: line stride at C + b (one set overflows: W + 1 lines miss, so W ways and
   S = C / (W b) sets), then C + 2b ... for more sets, whose lines show the index bits;
4. ``fifo``: where every access to the overflowing set misses (LRU-like), a pattern that
   re-touches one line tells LRU from FIFO; otherwise the misses are replayed to count which
   slot each one evicted (random, or non-LRU with per-way weights).

When the first level a path reaches is at least half the device's L2 (Kepler's global loads
bypass L1), its findings are named ``l2.*``. Then the L2 itself, on the L2-only path ``cg``:
its fill unit, line and ways (:mod:`.l2`; under a hashed index, from a minimal eviction set:
:mod:`.evict`).

The search and the analysis are one walk (:mod:`.walk`): each stage (:mod:`.stages`) takes
its chases, run on the device by ``sweep`` or read back from the stored log
(:mod:`gpumem.experiments.chaselog`) by ``analyze``, and judges them with the same code;
the next stage searches from what the judgement concluded. So a stored run is analysed
again to the findings its search saw, and the confidence levels (:mod:`.confidence`) are
named, each with the rule that earns it.

Findings per level (``l1d``, ``tex_l1``, ``ro``, ``l2``): ``.overflow_size``, ``.line``,
``.sector``, ``.ways``, ``.sets``, ``.index_bits``, ``.policy``, ``.way_weights``,
``.hit_latency`` (``.half_miss_size`` where misses ramp). ``overflow_size`` is the largest
footprint the fine-grained chase holds with no miss (Mei & Chu's first stage): the capacity
of a cache indexed modulo the sets, below it for a hashed one. It is not named ``.size``:
that name is the latency ladder's capacity, one meaning per name in a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import xarray as xr

from gpumem.analysis.chases import chases_from_dataset, chases_to_dataset
from gpumem.analysis.structure import LEVEL_OF_PATH
from gpumem.contracts.device import Device
from gpumem.contracts.experiment import Experiment, Plan, RunContext
from gpumem.contracts.finding_names import family
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.cache_structure.ahead import AHEAD_RECORDS, Ahead, bisection_guesses
from gpumem.experiments.cache_structure.l2 import (
    _l2_fill_chase,
    _l2_fill_unit,
    _l2_line,
    _l2_scatter_chases,
    _l2_ways,
    _l2_ways_chases,
    l2_scatter_shares,
    scatter_shares_by_path,
)
from gpumem.experiments.cache_structure.rules import (
    CALIBRATION_PASSES,
    LINE_PASSES,
    MAX_CAPACITY,
    SETS_PASSES,
    SIZE_PASSES,
    _scatter_shares,
    event_threshold,
    half_miss_bracket,
    half_miss_footprint,
    miss_rule,
    scatter_line,
)
from gpumem.experiments.cache_structure.stages import scatter_chases
from gpumem.experiments.cache_structure.walk import (
    _LiveSource,
    _StoredSource,
    parts,
    take_part,
    walk,
)
from gpumem.experiments.chaselog import ChaseLog
from gpumem.experiments.figures import CACHE_STRUCTURE

__all__ = [
    "AHEAD_RECORDS", "CALIBRATION_PASSES", "LEVEL_FINDINGS", "LINE_PASSES", "MAX_CAPACITY",
    "SETS_PASSES", "SIZE_PASSES", "Ahead", "CacheStructure", "_l2_fill_chase",
    "_l2_fill_unit", "_l2_line", "_l2_scatter_chases", "_l2_ways", "_l2_ways_chases",
    "_scatter_shares", "bisection_guesses", "event_threshold", "half_miss_bracket",
    "half_miss_footprint", "l2_scatter_shares", "miss_rule", "scatter_chases",
    "scatter_line", "scatter_shares_by_path",
]

#: Seeds each part of the search has to itself (a part's chases take consecutive seeds).
PART_SEEDS = 1 << 20

#: What the analysis reports of each level (``LEVEL.NAME``), where the evidence allows.
LEVEL_FINDINGS = ("hit_latency", "overflow_size", "half_miss_size", "line", "sector", "ways",
                  "sets", "index_bits", "policy", "way_weights")


class CacheStructure(Experiment):
    name = "cache_structure"
    summary = "fine-grained P-chase: size, line, sector, sets, ways, index bits, policy"
    probes = ("pointer_chase",)
    version = "3"
    #: 2: an L2 whose set index is hashed gets its ways and sets from a minimal eviction set;
    #: 3: against the near level where the L2's hits come in two levels (near and far
    #: partitions), the candidates' chases growing on past lines that do not overflow alone
    changed_in = {"2": ("l2.ways", "l2.sets"), "3": ("l2.ways", "l2.sets")}
    #: one family per level a path reaches (``l2`` where it is at least half the L2), the
    #: unresolved ones included; ``conflict_onset`` is kept only as a note, never reported
    findings = family((*LEVEL_OF_PATH.values(), "l2"), LEVEL_FINDINGS) + ("l2.fill_unit",)
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 4")

    def presentation(self) -> Presentation:
        return Presentation(CACHE_STRUCTURE, (
            ReportFigure("cache_overflow",
                         "Latency of each stored access at the capacity, just past it and a "
                         "quarter past it (horizontal line: the chase's median).",
                         "gpumem.experiments.figures.cache_structure:cache_overflow"),
            ReportFigure("cache_fill",
                         "Stride-4 chases: the L1 misses once per sector at twice its capacity; a "
                         "cold L2-only chase pays one DRAM fetch per fill unit.",
                         "gpumem.experiments.figures.cache_structure:cache_fill"),
            ReportFigure("cache_lines",
                         "Scattered chases, one access per block at 1.5 times the half-miss "
                         "footprint: the miss share stays on a plateau while the block is within a "
                         "line (dotted: the line found) and falls past it.",
                         "gpumem.experiments.figures.cache_structure:cache_lines"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        paths = [p for p in LEVEL_OF_PATH if p in ctx.device.load_paths]
        return Plan(axes=[], variables=[],
                    attrs={"paths": ",".join(paths), "max_capacity": MAX_CAPACITY,
                           "size_passes": SIZE_PASSES, "line_passes": LINE_PASSES,
                           "sets_passes": SETS_PASSES})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        return self.sweep_in_parts(device, ctx, progress)

    def sweep_parts(self, ctx: RunContext) -> tuple[str, ...]:
        """Each load path's walk and the L2's chases (:func:`.walk.parts`)."""
        return parts(ctx.device.load_paths, ctx.device.l2_bytes)

    def sweep_part(self, device: Device, ctx: RunContext, progress: Callable[[int], None],
                   part: str) -> xr.Dataset:
        """One part's chases, seeded from ``ctx.seed`` plus :data:`PART_SEEDS` per part
        before it, so no part's seeds depend on how many chases another took."""
        k = self.sweep_parts(ctx).index(part)
        log = ChaseLog(Ahead(device), seed=ctx.seed + k * PART_SEEDS, progress=progress)
        info = device.info
        take_part(_LiveSource(log, info.load_paths, info.l2_bytes, info.memory_bytes), part)
        return log.dataset()

    def join_parts(self, parts: Sequence[xr.Dataset]) -> xr.Dataset:
        """The parts' chases in one log, numbered in the parts' order."""
        chases = [c for raw in parts for c in chases_from_dataset(raw)]
        return chases_to_dataset([replace(c, number=i) for i, c in enumerate(chases)])

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        return walk(_StoredSource(chases_from_dataset(raw), l2))
