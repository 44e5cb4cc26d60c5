"""Which figures the page shows, in which section, and what it says when data are missing.

A section lists figures by name (:data:`gpumem.report.figures.FIGURES`), each drawing one
experiment. A figure is drawn for the series that have its experiment; a series without it
gets one note (why: skipped, failed, not run), and when no series has it the figure is
replaced by that note. So a run of one experiment still yields a complete, honest page.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from gpumem.report.figures import FIGURES, save
from gpumem.report.page import FigureDoc, SectionDoc
from gpumem.report.runs import Series


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    intro: str
    figures: tuple[tuple[str, str], ...]  # (figure name, caption)
    #: Experiments whose findings the section lists under its figures; empty: those the
    #: figures draw.
    experiments: tuple[str, ...] = ()


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec(
        "latency", "Latency ladder",
        "One thread chases a chain over a growing footprint and times every access: each "
        "cache level is a plateau, ending at its capacity (the knees). Levels and knees are "
        "labelled from the latency findings; the TLB reaches from the tlb_structure findings.",
        (("latency_ladder", "Median latency per footprint (sequential: solid, with its "
                            "10-90 % band; random order: dashed), knees and levels marked."),),
        ("latency", "patterns", "l2_sm_map")),
    SectionSpec(
        "cache_structure", "Cache structure: fine-grained chases",
        "Mei & Chu's fine-grained P-chase, as the cache_structure search ran it: every access "
        "of a chase timed, only the slow ones (events) stored. The size search on the first "
        "load path, and the chases that show the fill granularity.",
        (("cache_overflow", "Latency of each stored access at the capacity, just past it and "
                            "a quarter past it (horizontal line: the chase's median)."),
         ("cache_fill", "Stride-4 chases: the L1 misses once per sector at twice its "
                        "capacity; a cold L2-only chase pays one DRAM fetch per fill unit."),
         ("cache_lines", "Scattered chases, one access per block at 1.5 times the half-miss "
                         "footprint: the miss share stays on a plateau while the block is "
                         "within a line (dotted: the line found) and falls past it.")),
    ),
    SectionSpec(
        "tlb_structure", "TLB structure: paired chases",
        "Each page is touched twice, first element then the next word: the pair difference "
        "cancels the L2 hit both pay and leaves what only the first pays, a TLB miss.",
        (("tlb_pairs", "Pair difference of each stored pair for three chases (TLB hits, one "
                       "page past the L1 TLB, the longest L2-TLB chase)."),
         ("tlb_ladder", "Where each level was decided: every question of the search, its "
                        "pooled median pair difference above the level below with the margin "
                        "it was judged by (error bar), against the threshold (dashed); "
                        "dotted: the finding.")),
    ),
    SectionSpec(
        "bandwidth", "Bandwidth",
        "DRAM throughput over the launch grid, shared-memory throughput over warps and "
        "independent loads, and read bandwidth over footprint through the L1 and the L2.",
        (("dram_heatmaps", "DRAM bandwidth over CTAs x threads per CTA, at the ILP and access "
                           "width of each kind's best point (median of repeats)."),
         ("smem_heatmaps", "Shared-memory bytes per SM cycle over warps x ILP (median)."),
         ("bandwidth_levels", "Read bandwidth over footprint, .ca (solid) and .cg (dashed), "
                              "the better of the two occupancies.")),
        ("bandwidth", "smem_bandwidth", "bandwidth_levels"),
    ),
    SectionSpec(
        "ilp", "ILP sweep by address ordering",
        "Plain-load bandwidth over K independent loads per thread at fixed work and fixed "
        "occupancy; only the address ordering of the K loads changes (the H100 study's "
        "missing experiment).",
        (("ilp_sweep", "Bandwidth over K, one line style per ordering, band = min-max of the "
                       "repeats."),)),
    SectionSpec(
        "cpasync", "cp.async",
        "cp.async copies into shared memory against plain loads of the same addresses, "
        "over the number of groups in flight per thread, at two occupancies.",
        (("cpasync_speedup", "Speed-up of cp.async over plain loads (left) and the two "
                             "bandwidths (right); solid: more threads per CTA."),)),
    SectionSpec(
        "bulk_copy", "TMA bulk copies",
        "One thread per block keeps S bulk copies (cp.async.bulk) of a chunk in flight into "
        "shared memory; the copy engine moves the data. By Little's law the bandwidth follows "
        "the bytes each SM has in flight until HBM saturates.",
        (("bulk_copy", "Bandwidth over bytes in flight per SM, one marker per blocks per SM "
                       "(median of repeats)."),)),
    SectionSpec(
        "dsmem", "Distributed shared memory",
        "Thread block clusters: loads from another block's shared memory (mapa + "
        "ld.shared::cluster) against the same loads from the block's own.",
        (("dsmem", "Latency by rank distance (left); bytes per SM cycle over warps, own "
                   "block solid, next block dashed (right)."),),
        ("dsmem_latency", "dsmem_bandwidth")),
    SectionSpec(
        "bank_conflicts", "Shared-memory bank conflicts",
        "One warp, thread t reading word t x stride: the latency grows with the conflict "
        "degree gcd(stride, banks) and stops growing at the number of banks.",
        (("bank_conflicts", "Latency over stride per bank mode (median, band min-max); "
                            "n-way conflicts labelled from smem.conflict_latency."),)),
)


def _why(s: Series, experiment: str) -> str:
    return f"{s.legend}: {experiment} {s.why_missing(experiment)}"


def _short(e: BaseException, limit: int = 160) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _draw(draw: Callable[[Sequence[Series]], Figure | None], have: list[Series]
          ) -> tuple[Figure | None, list[tuple[Series, Exception]]]:
    """The figure of the series in ``have``; a series whose data cannot be drawn (an
    unforeseen shape: converted or older files) is left out and reported, not the figure
    lost. Warnings of empty slices or flat log axes stay off the console."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return draw(have), []
        except Exception as together:  # noqa: BLE001 - find the series at fault
            failed: list[tuple[Series, Exception]] = []
            for s in have:
                try:
                    draw([s])
                except Exception as e:  # noqa: BLE001
                    failed.append((s, e))
            if not failed:  # each alone draws, not all together: none is drawn
                return None, [(s, together) for s in have]
            good = [s for s in have if all(s is not x for x, _ in failed)]
            try:
                return (draw(good) if good else None), failed
            except Exception as e:  # noqa: BLE001
                return None, failed + [(s, e) for s in good]


def _note(doc: SectionDoc, note: str) -> None:
    if note not in doc.notes:
        doc.notes.append(note)


def build_sections(series: Sequence[Series], out_dir: Path,
                   specs: Sequence[SectionSpec] = SECTIONS) -> list[SectionDoc]:
    """Draw every figure into ``out_dir`` and describe the sections for the page."""
    docs = []
    for spec in specs:
        experiments = spec.experiments or tuple(dict.fromkeys(
            FIGURES[name][1] for name, _ in spec.figures))
        doc = SectionDoc(spec.key, spec.title, spec.intro, experiments=experiments)
        for name, caption in spec.figures:
            draw, experiment = FIGURES[name]
            have = [s for s in series if s.raw(experiment) is not None]
            lacking = [s for s in series if s not in have]
            if not have:
                whys = "; ".join(_why(s, experiment) for s in lacking)
                _note(doc, f"Skipped: no run has the {experiment} experiment ({whys}).")
                continue
            fig, failed = _draw(draw, have)
            for s, e in failed:
                _note(doc, f"Not shown for {s.legend}: could not draw {name} from its "
                           f"{experiment} data ({_short(e)}).")
            have = [s for s in have if all(s is not x for x, _ in failed)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                files = save(fig, out_dir, name) if fig is not None else None
            if fig is None or files is None:
                if have:
                    _note(doc, f"Skipped: nothing to draw for {name} in the {experiment} "
                               f"data.")
                continue
            fig.clear()
            doc.figures.append(FigureDoc(name, files[0], files[1], caption))
            for s in lacking:
                _note(doc, f"Not shown for {_why(s, experiment)}.")
        docs.append(doc)
    return docs
