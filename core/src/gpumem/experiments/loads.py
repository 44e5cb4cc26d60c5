"""The H100 study of plain global loads (Manjunath & Ramachandra, "Concurrency Response of
Plain Global Loads on the NVIDIA H100", 2026), reproduced and extended.

``ilp``: bandwidth over per-thread independent loads K = 1..8 at *fixed logical work* (the
bytes moved do not grow with K), with occupancy fixed (one 1024-thread CTA per SM, 16-byte
``.cg`` loads, the study's main grid), forward and reverse, for an L2-resident footprint and
HBM-resident ones of several allocation sizes. The study found the drop from K = 2 to K = 8
(-35 % on an H100) but could not say why; its authors named the missing experiment: the same
K sweep with coalescing and occupancy fixed and only the address *ordering* varied. Here
every point runs in three orderings (see ``gpumem/cuda/kernels/stream.cu``):

* ``coalesced`` (grid-strided): load k of thread t reads element k*T + t: each load
  instruction of a warp reads one contiguous 512-byte run;
* ``warp`` (warp-contiguous): a warp's K loads read K consecutive 512-byte runs;
* ``thread`` (per-thread contiguous): thread t reads K consecutive elements: each load
  instruction of a warp touches 32 addresses K*16 bytes apart.

``cpasync``: cp.async copies into shared memory against matched plain loads (same grid, same
16-byte coalesced addresses), 1..16 groups in flight per thread, at two occupancies.

Findings: ``ilp.best_k``, ``ilp.k8_vs_k2`` (HBM-resident, forward; indexed by ordering),
``ilp.k8_vs_k2_reverse``, ``ilp.l2_best_k``, ``ilp.l2_k8_vs_k2`` (L2-resident),
``ilp.k8_vs_k2_by_footprint`` (thread ordering, indexed by allocation size),
``cpasync.speedup`` (indexed by groups; full occupancy), ``cpasync.speedup_low_occupancy``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import Device, StreamRequest
from gpumem.contracts.estimates import (
    Estimate,
    estimate_at,
    list_finding,
    order_interval,
)
from gpumem.contracts.experiment import (
    Axis,
    Experiment,
    Plan,
    RunContext,
    Var,
    point_medians,
    repeat_count,
)
from gpumem.contracts.findings import Finding, worst_precision
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.figures import CPASYNC, ILP

WIDTH = 16
THREADS = 1024
WORK = 2 << 30           # bytes read per run, whatever K, footprint and ordering
KS = tuple(range(1, 9))
GROUPS = (1, 2, 4, 8, 16)
#: The H100 study's three orderings of a thread's K loads (the grid-strided ones of
#: :data:`gpumem.contracts.device.STREAM_ORDERS`; ``block`` is the cache-level kernels')
ORDERS = ("coalesced", "thread", "warp")


def _footprints(ctx: RunContext) -> tuple[int, ...]:
    """L2-resident (a quarter of the L2, at least one K = 8 chunk of the grid: a smaller
    buffer cannot hold one iteration), then HBM-resident allocations of 2, 8 and 32 L2s."""
    l2 = max(ctx.device.l2_bytes, 1 << 20)
    cap = max(ctx.device.memory_bytes // 4, 64 << 20)
    mib = 1 << 20
    chunk = max(1, ctx.device.sm_count) * THREADS * max(KS) * WIDTH
    resident = -(-max(l2 // 4, chunk) // mib) * mib
    sizes = [resident] + [min(cap, f * l2) // mib * mib for f in (2, 8, 32)]
    if ctx.slow:  # from a cold L2, a quarter past it streams from DRAM (see dram_from)
        sizes = [resident, max(chunk, -(-5 * l2 // 4 // mib) * mib)]
    elif ctx.quick:
        sizes = [sizes[0], sizes[2]]
    return tuple(sorted(set(sizes)))


def dram_from(ctx: RunContext) -> int:
    """Smallest footprint read as HBM-resident: four L2s on hardware, where runs follow each
    other and the L2 keeps the last of the buffer; past the L2 on a slow device, whose single
    pass starts from a cold L2 (Accel-Sim runs no warm-up pass there)."""
    l2 = max(ctx.device.l2_bytes, 1 << 20)
    return l2 + 1 if ctx.slow else 4 * l2


RATIO_NOTE = ("interval: the ratio's range from the 95 % intervals of the two medians over "
              "the timed runs")


def curve_runs(raw: xr.Dataset, footprint: int, order: str, rev: int) -> dict[int, np.ndarray]:
    """K -> the timed runs' bandwidths of one curve (ok points)."""
    g = raw["gbs"].where(raw["point_status"] == 0).sel(footprint=footprint, order=order,
                                                       reverse=rev)
    runs = g.transpose("ilp", ...).values.reshape(g.sizes["ilp"], -1)
    return {int(k): r[np.isfinite(r)] for k, r in zip(g["ilp"].values, runs, strict=True)
            if np.isfinite(r).any()}


def curve_estimates(raw: xr.Dataset, footprint: int, order: str, rev: int
                    ) -> dict[int, Estimate]:
    """K -> what the timed runs of one curve's point say (ok points)."""
    ok = raw["point_status"].sel(footprint=footprint, order=order, reverse=rev)
    return {int(k): estimate_at(raw, "gbs", {"footprint": footprint, "order": order,
                                             "reverse": rev, "ilp": k})
            for k in ok["ilp"].values if int(ok.sel(ilp=k)) == 0}


SATURATED = 0.02  # within 2 % of the saturation: on it


def saturating_k(runs: dict[int, np.ndarray]) -> tuple[int, int]:
    """(first K the data cannot tell from being on, first K on) the saturation of a
    bandwidth curve.

    The saturation level is the median of the upper half of the K medians (the maximum
    alone is biased up by the noise). A K is on it within SATURATED of it, or two standard
    errors of a difference of medians (from the runs' spread), whichever is larger: the
    first such K is the finding. The data cannot tell it from an earlier K whose 95 %
    interval reaches within that of the level: the first of those is the interval's low
    end (the set of choices the runs do not separate)."""
    ks = sorted(runs)
    med = {k: float(np.median(runs[k])) for k in ks}
    level = float(np.median(sorted(med.values())[len(ks) // 2:]))
    spread = [1.4826 * float(np.median(np.abs(r - np.median(r)))) for r in runs.values()
              if r.size >= 3]
    sigma = float(np.median(spread)) if spread else 0.0
    se_d = float(np.sqrt(2.0)) * 1.2533 * sigma / np.sqrt(
        max(1, min(r.size for r in runs.values())))
    on = next(k for k in ks if level - med[k] <= max(2 * se_d, SATURATED * level))
    maybe = next(k for k in ks
                 if level - order_interval(runs[k])[1] <= max(2 * se_d, SATURATED * level))
    return min(maybe, on), on

class IlpSweep(Experiment):
    name = "ilp"
    summary = ("plain-load bandwidth over per-thread ILP K at fixed work: orderings x "
               "direction x allocation size (the H100 study, with its missing experiment)")
    probes = ("stream",)
    version = "1"
    findings = ("ilp.best_k", "ilp.k8_vs_k2", "ilp.k8_vs_k2_reverse",
                "ilp.k8_vs_k2_by_footprint", "ilp.l2_best_k", "ilp.l2_k8_vs_k2")
    references = ("Manjunath & Ramachandra, Concurrency Response of Plain Global Loads on the "
                  "NVIDIA H100 (2026), sec. 4.2 (ILP response); stream.cu")

    def presentation(self) -> Presentation:
        return Presentation(ILP, (
            ReportFigure("ilp_sweep",
                         "Bandwidth over K, one line style per ordering, band = min-max of the "
                         "repeats.",
                         "gpumem.experiments.figures.loads:ilp_sweep"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        repeats = repeat_count(ctx)
        short = ctx.quick or ctx.slow
        attrs: dict[str, Any] = {}
        if ctx.slow:  # deterministic and paying per request: once, one pass
            repeats, attrs = 1, {"work_bytes": 0, "dram_from": dram_from(ctx)}
        return Plan(
            axes=[Axis("footprint", _footprints(ctx), "byte", "allocation streamed"),
                  Axis("order", ORDERS, "1", "address ordering of the K loads"),
                  Axis("reverse", (0,) if short else (0, 1), "1",
                       "1: the chunks are walked backwards"),
                  Axis("ilp", (1, 2, 4, 8) if short else KS, "1",
                       "independent loads per thread per iteration (K)")],
            variables=[Var("gbs", (), "GB/s", "bytes read per second, 10^9 byte/s"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"ctas": max(1, ctx.device.sm_count), "threads": THREADS, "width": WIDTH,
                   "work_bytes": WORK, "path": "cg", "repeats": repeats, **attrs},
            repeats=repeats,
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        attrs = self.plan(ctx).attrs
        res = device.stream(StreamRequest(
            footprint=int(point["footprint"]), ctas=int(attrs["ctas"]), threads=THREADS,
            ilp=int(point["ilp"]), width=WIDTH, path="cg", order=str(point["order"]),
            kind="read", work=int(attrs["work_bytes"]), reverse=bool(point["reverse"]),
            seed=ctx.run_seed))
        return {"gbs": res.gbs, "seconds": res.seconds}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        med = point_medians(raw, "gbs")
        l2 = float(raw.attrs.get("l2_bytes", 0) or 0)
        foot = [int(f) for f in raw["footprint"].values]
        resident = [f for f in foot if l2 and f <= l2 / 2]
        hbm_from = float(raw.attrs.get("plan_dram_from", 4 * l2))
        hbm = [f for f in foot if not l2 or f >= hbm_from]
        orders = [str(o) for o in raw["order"].values]
        out: list[Finding] = []
        a = {k: int(raw.attrs.get(f"plan_{k}", 0)) for k in ("ctas", "threads", "width",
                                                            "work_bytes")}
        grid = (f"{a['ctas']} CTAs x {a['threads']} threads, {a['width']}-B .cg loads, "
                + (f"{a['work_bytes'] >> 20} MiB per run whatever K; " if a["work_bytes"]
                   else "one pass over the buffer per run whatever K; ") +
                f"median of each point's runs (at most {raw.sizes.get('repeat', 1)})")

        def curve(f: int, order: str, rev: int) -> dict[int, float]:
            c = med.sel(footprint=f, order=order, reverse=rev)
            return {int(k): float(v) for k, v in zip(c["ilp"].values, c.values, strict=True)
                    if np.isfinite(v)}

        def k8_vs_k2(f: int, order: str, rev: int) -> Estimate:
            ests = curve_estimates(raw, f, order, rev)
            return ests[8].over(ests[2])

        def emit(prefix: str, f: int, rev: int, best: bool) -> None:
            curves = {o: curve(f, o, rev) for o in orders}
            ests = {o: curve_estimates(raw, f, o, rev) for o in orders}
            if best and all(curves.values()):
                picks = [saturating_k(curve_runs(raw, f, o, rev)) for o in orders]
                precs = [worst_precision([e.precision for e in ests[o].values()])
                         for o in orders]
                out.append(Finding(
                    f"{prefix}best_k", [hi for _lo, hi in picks], "1", 0.9,
                    f"smallest K whose bandwidth is within {SATURATED:.0%} (or two standard "
                    f"errors) of the curve's saturation, the median of its upper half, at "
                    f"{f >> 20} MiB; {grid}", index=("order", orders),
                    interval=([lo for lo, _hi in picks], [hi for _lo, hi in picks]),
                    kind="measured", precision=worst_precision(precs),
                    note="interval: the choices the runs cannot tell apart, from the first K "
                         "whose 95 % interval reaches the saturation's threshold to the "
                         "first whose median is on it"))
            if all(2 in c and 8 in c for c in curves.values()):
                out.append(list_finding(
                    f"{prefix}k8_vs_k2" + ("_reverse" if rev else ""),
                    [ests[o][8].over(ests[o][2]) for o in orders], "1", 0.9,
                    f"bandwidth at K=8 over K=2 at {f >> 20} MiB"
                    f"{', chunks walked backwards' if rev else ''}; {grid}",
                    index=("order", orders), note=RATIO_NOTE))

        revs = [int(r) for r in raw["reverse"].values]
        if hbm:
            f = min(hbm, key=lambda x: abs(x - 8 * l2)) if l2 else hbm[0]
            emit("ilp.", f, 0, True)
            if 1 in revs:
                emit("ilp.", f, 1, False)
            by_size = {g: curve(g, "thread", 0) for g in hbm} if "thread" in orders else {}
            if by_size and all(2 in c and 8 in c for c in by_size.values()):
                out.append(list_finding("ilp.k8_vs_k2_by_footprint",
                                        [k8_vs_k2(g, "thread", 0) for g in by_size], "1", 0.9,
                                        f"per-thread contiguous ordering, by allocation size; "
                                        f"{grid}", index=("footprint", list(by_size)),
                                        note=RATIO_NOTE))
        if resident:
            emit("ilp.l2_", max(resident), 0, True)
        return out


class AsyncCopy(Experiment):
    name = "cpasync"
    summary = "cp.async into shared memory against matched plain loads, 1..16 groups in flight"
    probes = ("stream", "async_copy")
    version = "1"
    findings = ("cpasync.speedup", "cpasync.speedup_low_occupancy")
    references = ("Manjunath & Ramachandra, Concurrency Response of Plain Global Loads on the "
                  "NVIDIA H100 (2026): cp.async 2.1-2.9x faster than plain loads at 16 groups")

    def presentation(self) -> Presentation:
        return Presentation(CPASYNC, (
            ReportFigure("cpasync_speedup",
                         "Speed-up of cp.async over plain loads (left) and the two bandwidths "
                         "(right); solid: more threads per CTA.",
                         "gpumem.experiments.figures.loads:cpasync_speedup"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        l2 = max(ctx.device.l2_bytes, 1 << 20)
        footprint = min(8 * l2, max(ctx.device.memory_bytes // 4, 64 << 20)) // (1 << 20) << 20
        repeats = repeat_count(ctx)
        return Plan(
            axes=[Axis("method", ("plain", "cpasync"), "1",
                       "plain: 16-B ld.global.cg into registers; cpasync: cp.async.cg into "
                       "shared memory, one commit group per load"),
                  Axis("threads", (128, 512), "1", "threads per CTA (one CTA per SM)"),
                  Axis("groups", (1, 4, 16) if ctx.quick else GROUPS, "1",
                       "independent loads (cp.async groups) in flight per thread")],
            variables=[Var("gbs", (), "GB/s", "bytes read per second, 10^9 byte/s"),
                       Var("seconds", (), "s", "time of one timed run")],
            attrs={"ctas": max(1, ctx.device.sm_count), "footprint": footprint,
                   "width": WIDTH, "work_bytes": WORK, "repeats": repeats, "order": "coalesced"},
            repeats=repeats,
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        attrs = self.plan(ctx).attrs
        probe = device.async_copy if point["method"] == "cpasync" else device.stream
        res = probe(StreamRequest(
            footprint=int(attrs["footprint"]), ctas=int(attrs["ctas"]),
            threads=int(point["threads"]), ilp=int(point["groups"]), width=WIDTH, path="cg",
            order="coalesced", kind="read", work=WORK, seed=ctx.run_seed))
        return {"gbs": res.gbs, "seconds": res.seconds}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        med = point_medians(raw, "gbs")
        out: list[Finding] = []
        threads = sorted(int(t) for t in raw["threads"].values)
        for t, name in ((threads[-1], "cpasync.speedup"),
                        (threads[0], "cpasync.speedup_low_occupancy")):
            if len(threads) == 1 and name.endswith("occupancy"):
                break
            ratio = (med.sel({"method": "cpasync", "threads": t})
                     / med.sel({"method": "plain", "threads": t}))
            ok = np.isfinite(ratio.values)
            if not ok.any():
                continue
            groups = [int(g) for g, k in zip(ratio["groups"].values, ok, strict=True) if k]
            ests = [estimate_at(raw, "gbs", {"method": "cpasync", "threads": t, "groups": g})
                    .over(estimate_at(raw, "gbs", {"method": "plain", "threads": t,
                                                   "groups": g}))
                    for g in groups]
            out.append(list_finding(name, ests, "1", 0.9,
                                    f"median bandwidth of cp.async over matched plain loads, "
                                    f"{int(raw.attrs.get('plan_ctas', 0))} CTAs x {t} threads, "
                                    f"{int(raw.attrs.get('plan_footprint', 0)) >> 20} MiB from "
                                    f"HBM", index=("groups", groups), note=RATIO_NOTE))
        return out
