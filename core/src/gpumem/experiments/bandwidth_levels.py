"""``bandwidth_levels``: read bandwidth over footprint and kernel shape, through L1 and L2.

Every block re-reads its own slice of one buffer (order ``block``: what the SM holds is the
slices of its resident blocks), with 16-byte loads through ``.ca`` (the L1 serves) and
``.cg`` (L1 bypassed; ``.nc`` is not searched: on Kepler it reads the texture cache, not the
L1, and on Hopper it reads the same L1 as ``.ca``), so the bandwidth steps down where an
SM's share stops fitting its L1, then where the buffer stops fitting the L2. A cache's
bandwidth is the kernel's unless the kernel keeps the level busy, so each footprint is
measured over kernel shapes (blocks per SM, threads per block, loads in flight per thread)
the way ``bandwidth`` searches them for DRAM, and each level reports its best: on an H200 a
fixed shape (4 blocks of 512 threads, 2 loads each) read the L1 at 76 bytes per clock per
SM, the best shape at 125, the L1's width being 128 (issue 31). Each run lasts about
:data:`RUN_S` (its bytes sized from probe runs of the point, :func:`sized_work`), so slow
shapes cost no more than fast ones.

Findings: ``bw.l1`` (aggregate, where ``.ca`` beats ``.cg`` by 1.3x: the L1 serves),
``bw.l2`` (``.cg``, footprint under half the L2), GB/s; each also per clock
(``bw.l1_bytes_per_clk`` per SM, ``bw.l2_bytes_per_clk``) at the SM clock the point ran at,
and as a fraction of the level's width where that is known (:mod:`gpumem.contracts.level_widths`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import Device, DeviceInfo, StreamRequest
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
from gpumem.contracts.level_widths import l1_width, l2_width
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.bandwidth import sized_work
from gpumem.experiments.figures import BANDWIDTH
from gpumem.experiments.latency import footprint_grid

#: Seconds one timed run lasts (its bytes sized by probe runs of the point): 0.5 ms keeps
#: a launch's few microseconds under 1 % of it.
RUN_S = 5e-4
#: Bytes of the first probe run, and the most a run moves.
PROBE_WORK, MAX_WORK = 256 << 20, 16 << 30
WIDTH = 16
L1_GAIN = 1.3       # .ca over .cg at one footprint: the L1 is serving
SHAPE = ("ctas_per_sm", "threads", "ilp")
#: The shapes searched: blocks per SM, threads per block, loads in flight per thread.
CTAS_PER_SM, THREADS, ILPS = (1, 2, 4, 8), (256, 512, 1024), (2, 8)
QUICK = ((2,), (256,), (8,))
#: a slow simulator's one shape, grid-strided: one block of 512 threads per SM, 2 loads each
#: (a chunk of the grid, SMs x 16 KiB, fits the footprints it reads)
SLOW = ((1,), (512,), (2,))
L1_PATHS = ("ca",)


def smallest_footprint(dev: DeviceInfo) -> int:
    """The smallest footprint the L1/L2 sweeps read: 8 KiB per SM, one chunk of the
    smallest shape per block."""
    return max(1, dev.sm_count) * 8 * 1024


class BandwidthLevels(Experiment):
    name = "bandwidth_levels"
    summary = "read bandwidth over footprint and kernel shape through L1 (.ca) and L2 (.cg)"
    probes = ("stream",)
    version = "4"  # 3: per-block slices, shapes searched, runs sized in time; 4: sized by
    # probes until one lasts long enough (3's L1 runs lasted 0.15-0.3 ms, not 0.5)
    findings = ("bw.l1", "bw.l2", "bw.l1_bytes_per_clk", "bw.l2_bytes_per_clk",
                "bw.l1_width_fraction", "bw.l2_width_fraction")
    references = ("RRZE gpu-benches gpu-cache / gpu-l2-cache / gpu-strides; Mei & Chu, "
                  "Dissecting GPU Memory Hierarchy through Microbenchmarking, sec. 5")

    def presentation(self) -> Presentation:
        return Presentation(BANDWIDTH, (
            ReportFigure("bandwidth_levels",
                         "Read bandwidth over footprint, .ca (solid) and .cg (dashed), each at "
                         "its best kernel shape.",
                         "gpumem.experiments.figures.bandwidth:bandwidth_levels"),
        ), rank=2)

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        sms = max(1, dev.sm_count)
        l2 = max(dev.l2_bytes, 1 << 20)
        lo = smallest_footprint(dev)
        hi = min(8 * l2, max(dev.memory_bytes // 4, lo))
        grid = footprint_grid(lo, hi, 1)
        shapes = QUICK if ctx.quick else (CTAS_PER_SM, THREADS, ILPS)
        repeats, sized, order = repeat_count(ctx), 1, "block"
        if ctx.slow:
            # a cycle-level simulator pays per memory request: only the footprints the
            # findings read (up to half the L2), one shape, one pass after the warm-up,
            # once (it is deterministic), grid-strided (the order its traces know)
            lo = sms * SLOW[1][0] * SLOW[2][0] * WIDTH  # one chunk of its grid
            grid = footprint_grid(lo, max(lo, l2 // 2), 1)
            shapes, repeats, sized, order = SLOW, 1, 0, "coalesced"
        widths = {k: v for k, v in (("l1_bytes_per_clk", l1_width(dev.compute_capability)),
                                    ("l2_bytes_per_clk", l2_width(dev.compute_capability)))
                  if v is not None}
        return Plan(
            axes=[Axis("path", tuple(p for p in ("ca", "cg") if p in dev.load_paths),
                       "1", "ca: loads cached in L1 and L2; cg: cached in L2 only"),
                  *shape_axes(shapes),
                  Axis("footprint", tuple(grid), "byte", "buffer read by all blocks, each "
                       "its own slice")],
            variables=[Var("gbs", (), "GB/s", "bytes read per second, 10^9 byte/s"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"width": WIDTH, "order": order, "repeats": repeats, "sized_runs": sized,
                   "work_bytes": MAX_WORK if sized else 0, "run_seconds": RUN_S,
                   **{k: w[0] for k, w in widths.items()},
                   **{f"{k}_source": w[1] for k, w in widths.items()}},
            repeats=repeats,
        )

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """The request of the point's timed runs, its bytes sized for RUN_S at the rate a
        probe run shows (seeded as the first timed run; :func:`sized_work`)."""
        a = self.plan(ctx).attrs
        fp = int(point["footprint"])
        req = StreamRequest(
            footprint=fp, ctas=int(point["ctas_per_sm"]) * max(1, ctx.device.sm_count),
            threads=int(point["threads"]), ilp=int(point["ilp"]), width=WIDTH,
            path=str(point["path"]), kind="read", order=str(a["order"]), work=0,
            seed=repeat_seed(ctx, 0))
        if int(a["sized_runs"]):
            req = replace(req, work=sized_work(
                lambda work: device.stream(replace(req, work=work)), max(fp, PROBE_WORK),
                float(a["run_seconds"]), fp, int(a["work_bytes"])))
        return {"request": req}

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        return timed_stream(device, point, ctx)

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        med = point_medians(raw, "gbs")
        if "ctas_per_sm" not in med.dims:  # version 2: two occupancies, no shape search
            return _analyze_v2(raw, med)
        best = med.max(list(SHAPE))  # per path and footprint: the best shape
        sms = float(raw.attrs.get("sm_count", 0) or 1)
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        foot = raw["footprint"].values.astype(float)
        paths = [str(p) for p in raw["path"].values]
        out: list[Finding] = []
        l1 = [p for p in L1_PATHS if p in paths]
        if l1 and "cg" in paths:  # the L1 serves where .ca/.nc beat .cg clearly
            through = best.sel(path=l1).max("path").values
            served = through >= L1_GAIN * best.sel(path="cg").values
            _level(out, raw, med, l1, served, foot, sms, "l1",
                   f"{'/'.join('.' + p for p in l1)} where it beats .cg by >= {L1_GAIN:g}x "
                   f"(the L1 serves)")
        if l2 and "cg" in paths:
            _level(out, raw, med, ["cg"], foot <= l2 / 2, foot, sms, "l2",
                   ".cg, footprint <= half the L2")
        return out


def shape_axes(shapes: tuple[tuple[int, ...], ...]) -> list[Axis]:
    """The kernel-shape axes a cache-bandwidth sweep searches (:data:`SHAPE`)."""
    return [Axis("ctas_per_sm", shapes[0], "1", "thread blocks per SM"),
            Axis("threads", shapes[1], "1", "threads per block"),
            Axis("ilp", shapes[2], "1", "independent 16-byte loads per thread per iteration")]


def timed_stream(device: Device, point: Mapping[str, Any], ctx: RunContext
                 ) -> Mapping[str, Any]:
    """One timed run of the point's prepared request, at this repeat's seed."""
    res = device.stream(replace(point["request"], seed=ctx.run_seed))
    return {"gbs": res.gbs, "seconds": res.seconds}


def _level(out: list[Finding], raw: xr.Dataset, med: xr.DataArray, paths: list[str],
           mask: np.ndarray, foot: np.ndarray, sms: float, level: str, how: str) -> None:
    """The level's best median over ``paths``, the footprints in ``mask`` and every shape:
    ``bw.<level>``, per clock, and as a fraction of the level's width where it is known."""
    sub = med.sel(path=paths).where(xr.DataArray(mask, dims="footprint",
                                                 coords={"footprint": raw["footprint"]}))
    if not np.isfinite(sub.values).any():
        return
    at = argmax_at(sub)
    est = estimate_at(raw, "gbs", at)
    shape = (f"{at['ctas_per_sm']} blocks/SM x {at['threads']} threads, {at['ilp']} loads in "
             f"flight, .{at['path']}, {int(at['footprint']) >> 10} KiB")
    out.append(finding(f"bw.{level}", est, "GB/s", 0.9,
                       f"best median read bandwidth {how}, over kernel shapes (at {shape}; "
                       f"{est.precision.repeats} runs)", digits=1))
    mhz, clock = _sm_clock(raw, at)
    per_clk = est.scaled(1e9 / (mhz * 1e6) / (sms if level == "l1" else 1))
    unit = "bytes per clock per SM" if level == "l1" else "bytes per clock"
    out.append(finding(f"bw.{level}_bytes_per_clk", per_clk, "byte/cycle", 0.9,
                       f"bw.{level} in {unit}, at {mhz:.0f} MHz ({clock})", digits=1))
    width = float(raw.attrs.get(f"plan_{level}_bytes_per_clk", 0) or 0)
    source = raw.attrs.get(f"plan_{level}_bytes_per_clk_source", "")
    if width > 0:
        out.append(finding(f"bw.{level}_width_fraction", per_clk.scaled(1 / width), "1", 0.9,
                           f"bw.{level}_bytes_per_clk / the {level.upper()}'s width, "
                           f"{width:g} {unit} ({source})", digits=3))


def _sm_clock(raw: xr.Dataset, at: Mapping[str, Any]) -> tuple[float, str]:
    """The SM clock (MHz) the point ran at: the device's reading before and after it where
    there is one, else the device's clock."""
    readings = [float(raw[v].sel(at)) for v in ("point_sm_clock_mhz_before",
                                                 "point_sm_clock_mhz_after") if v in raw]
    readings = [r for r in readings if np.isfinite(r) and r > 0]
    if readings:
        return float(np.mean(readings)), "the SM clock read before and after the point"
    return float(raw.attrs.get("clock_mhz", 0) or 1), "the device's clock"


def _analyze_v2(raw: xr.Dataset, med: xr.DataArray) -> list[Finding]:
    """Version 2 files (two occupancies, grid-strided): each plateau's best median."""
    med = med.max("ctas")
    l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
    foot = raw["footprint"].values.astype(float)
    paths = [str(p) for p in raw["path"].values]
    out: list[Finding] = []

    # one kernel shape: the level's bandwidth is at least this, at most what the SMs' L1s
    # take in (their width, where known), so a band in between is undecided, not failed
    width = l1_width(str(raw.attrs.get("compute_capability", "")))
    sms = float(raw.attrs.get("sm_count", 0) or 0)
    top = sms * width[0] * float(raw.attrs.get("clock_mhz", 0) or 0) / 1e3 if width else 0.0

    def best(path: str, mask: np.ndarray, name: str, how: str) -> None:
        v = med.sel(path=path).values
        ok = mask & np.isfinite(v)
        if ok.any():
            i = int(np.nanargmax(np.where(ok, v, np.nan)))
            value = round(float(v[i]), 1)
            out.append(Finding(
                name, value, "GB/s", 0.9,
                f"best median read bandwidth {how} (at {int(foot[i]) >> 10} KiB)",
                interval=(value, round(top, 1)) if top > value else None,
                note="bandwidth_levels version 2 read with one kernel shape: a lower bound "
                     "of the level's bandwidth (version 3 searches the shapes)"))

    if "ca" in paths and "cg" in paths:
        served = med.sel(path="ca").values >= L1_GAIN * med.sel(path="cg").values
        best("ca", served, "bw.l1", f".ca where it beats .cg by >= {L1_GAIN:g}x")
    if l2 and "cg" in paths:
        best("cg", foot <= l2 / 2, "bw.l2", ".cg, footprint <= half the L2")
    return out
