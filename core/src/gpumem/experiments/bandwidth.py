"""``bandwidth``: global-memory throughput over CTAs x threads x ILP (read, write, copy).

The footprint is at least eight times the L2 (and 256 MiB), so every pass streams from DRAM.
Each run lasts about :data:`RUN_S` at the rate probe runs of the point show (at most 2 GiB,
at least four L2s' worth of bytes, which stream from DRAM however the L2 replaces lines), so
launch overhead stays under 1 % and a point of low concurrency, which reads at a few GB/s,
costs milliseconds instead of the 0.2 s a fixed 2 GiB took (it was 70 % of the experiment's
time on an H200).
Each point is timed ``repeats`` times; the findings take, per kind, the best point of the grid
by its median repeat. That is how peak bandwidth is usually reported (Mei & Chu sec. 5.1,
gpu-benches gpu-stream), and the whole surface stays in the file for the curves: throughput
rising with concurrency until it saturates.

Findings: ``bw.dram_read``, ``bw.dram_write``, ``bw.dram_copy`` (GB/s, 10^9 B/s; copy counts
bytes read plus written), ``bw.dram_read_fraction`` (of the device's theoretical peak).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import Device, StreamRequest, StreamResult
from gpumem.contracts.estimates import argmax_at, estimate_at, finding
from gpumem.contracts.experiment import (
    Axis,
    Experiment,
    Plan,
    RunContext,
    Var,
    point_medians,
    repeat_count,
    repeat_seed,
)
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.figures import BANDWIDTH

KINDS = ("read", "write", "copy")
#: Bytes each run moves per direction, at most: one pass over a 480 MB buffer took 110 us on
#: an H200, and the launch (some 5 us) cost 3 % of the bandwidth; 2 GiB runs make it 0.2 %.
WORK = 2 << 30
#: Seconds a run lasts, about (its bytes sized by probe runs of the point; none shorter
#: than four L2s' worth of bytes, none longer than WORK).
RUN_S = 5e-4


def work_for(first: StreamResult, seconds: float, floor: int, cap: int,
             directions: int = 1) -> int:
    """Bytes per direction a run moves to last about ``seconds`` at the rate ``first`` showed
    (``directions``: 2 for a copy, whose bytes count both), at least ``floor``, at most
    ``cap``: a slow point costs no more time than a fast one."""
    rate = first.bytes / directions / first.seconds if first.seconds > 0 else 0.0
    return int(min(max(floor, rate * seconds), cap))


#: A probe shorter than this fraction of the run it sizes is run again at the size it gives:
#: its time is mostly the launch's ramp and tail, not the rate.
PROBE_FRACTION = 0.25
#: Probes at most per point (the first, and re-probes at the sizes they give).
PROBES = 3


def sized_work(run: Callable[[int], StreamResult], probe: int, seconds: float, floor: int,
               cap: int, directions: int = 1) -> int:
    """Bytes per direction for runs of about ``seconds``: ``run(probe)`` first, then, while a
    probe lasted under :data:`PROBE_FRACTION` of ``seconds``, again at the size it gives;
    the largest size any probe gives (a probe slowed by a clock still ramping up undersizes).
    One probe alone undersized fast points: 256 MiB through an H200's L1 took some 8 us of
    reading and as much again of launch, so the rate seemed half the real one and the runs
    of bandwidth_levels, meant to last 0.5 ms, lasted 0.15-0.3 ms, their ramp and tail a
    few percent of the figure (issue 31)."""
    work, best = probe, 0
    for _ in range(PROBES):
        first = run(work)
        sized = work_for(first, seconds, floor, cap, directions)
        best = max(best, sized)
        if first.seconds >= PROBE_FRACTION * seconds or sized <= work:
            break
        work = sized
    return best


class Bandwidth(Experiment):
    name = "bandwidth"
    summary = "DRAM read, write and copy bandwidth over CTAs x threads x ILP"
    probes = ("stream",)
    version = "3"  # 2: runs sized in time; 3: sized by probes until one lasts long enough
    runs_first = True  # DRAM bandwidth: before the chases free GiBs
    findings = ("bw.dram_read", "bw.dram_write", "bw.dram_copy", "bw.dram_read_fraction")
    references = ("Mei & Chu, IEEE TPDS 28(1), 2017, sec. 5.1 (global throughput); "
                  "RRZE gpu-benches gpu-stream")

    def presentation(self) -> Presentation:
        return Presentation(BANDWIDTH, (
            ReportFigure("dram_heatmaps",
                         "DRAM bandwidth over CTAs x threads per CTA, at the ILP and access width "
                         "of each kind's best point (median of repeats).",
                         "gpumem.experiments.figures.bandwidth:dram_heatmaps"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        sms = max(1, dev.sm_count)
        footprint = min(max(8 * dev.l2_bytes, 256 << 20), max(dev.memory_bytes // 4, 1 << 20))
        ctas: tuple[int, ...]
        threads: tuple[int, ...]
        ilps: tuple[int, ...]
        widths: tuple[int, ...]
        if ctx.quick:
            ctas = (sms, 4 * sms)
            threads, ilps, widths = (256, 1024), (1, 4), (16,)
        else:
            ctas = tuple(sorted({max(1, sms * f // 4) for f in (1, 2, 4, 8, 16, 32)}))
            threads, ilps, widths = (64, 128, 256, 512, 1024), (1, 2, 4, 8), (4, 16)
        repeats, work = repeat_count(ctx), max(footprint, WORK)
        floor, sized = min(footprint, 4 * max(dev.l2_bytes, 1 << 20)), 1
        if ctx.slow:
            # a cycle-level simulator pays per memory request: a buffer a quarter larger
            # than the L2 (a read pass from a cold L2 takes every line from DRAM: Accel-Sim
            # runs no warm-up pass for it; a write pass follows one, so the L2 it writes into
            # is full of dirty lines), one pass, once (it is deterministic), over the quick
            # grid's full-width occupancies
            ctas, threads, ilps, widths = (sms, 4 * sms), (1024,), (1, 4), (16,)
            chunk = max(ctas) * max(threads) * max(ilps) * max(widths)  # the largest grid's
            footprint = max(-(-5 * max(dev.l2_bytes, 1 << 20) // 4 // (1 << 20)) << 20, chunk)
            repeats, work = 1, footprint
            floor, sized = footprint, 0
        return Plan(
            axes=[Axis("kind", KINDS, "1", "read, write or copy"),
                  Axis("width", widths, "byte", "bytes per load or store"),
                  Axis("ctas", ctas, "1", "thread blocks in the grid"),
                  Axis("threads", threads, "1", "threads per block"),
                  Axis("ilp", ilps, "1", "independent loads per thread per iteration")],
            variables=[Var("gbs", (), "GB/s",
                           "bytes moved (read + written) per second, 10^9 byte/s"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"footprint": footprint, "order": "coalesced", "path": "cg",
                   "repeats": repeats, "work_bytes": work, "min_work_bytes": floor,
                   "sized_runs": sized, "run_seconds": RUN_S},
            repeats=repeats,
        )

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """The request of the point's timed runs, its bytes sized for RUN_S at the rate a
        probe run shows (seeded as the first timed run; :func:`sized_work`)."""
        attrs = self.plan(ctx).attrs
        req = StreamRequest(
            footprint=int(attrs["footprint"]), ctas=int(point["ctas"]),
            threads=int(point["threads"]), ilp=int(point["ilp"]), width=int(point["width"]),
            path="cg", kind=str(point["kind"]), work=int(attrs["work_bytes"]),
            seed=repeat_seed(ctx, 0))
        if int(attrs.get("sized_runs", 0)):
            floor = int(attrs["min_work_bytes"])
            req = replace(req, work=sized_work(
                lambda work: device.stream(replace(req, work=work)), floor,
                float(attrs["run_seconds"]), floor, req.work,
                2 if point["kind"] == "copy" else 1))
        return {"request": req}

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        res = device.stream(replace(point["request"], seed=ctx.run_seed))
        return {"gbs": res.gbs, "seconds": res.seconds}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        med = point_medians(raw, "gbs")
        out: list[Finding] = []
        for kind in KINDS:
            if kind not in raw["kind"].values:
                continue
            m = med.sel(kind=kind)
            if not np.isfinite(m.values).any():
                continue
            where = argmax_at(m)
            est = estimate_at(raw, "gbs", {"kind": kind, **where})
            reps = raw["gbs"].sel(kind=kind, **where).values
            spread = float((np.nanmax(reps) - np.nanmin(reps)) / np.nanmedian(reps))
            method = (f"best median of {est.precision.repeats} runs over the grid "
                      f"(at {where['ctas']} CTAs x {where['threads']} threads, ILP "
                      f"{where['ilp']}, {where['width']} B)")
            confidence = float(np.clip(1 - spread, 0, 1))
            out.append(finding(f"bw.dram_{kind}", est, "GB/s", confidence, method))
            peak = float(raw.attrs.get("peak_bandwidth_gbs", 0) or 0)
            if kind == "read" and peak > 0:
                out.append(finding("bw.dram_read_fraction", est.scaled(1 / peak), "1",
                                   confidence,
                                   f"bw.dram_read / theoretical {peak:.1f} GB/s (device "
                                   f"memory clock x bus width x 2)", digits=4))
        return out
