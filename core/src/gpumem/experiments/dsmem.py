"""Distributed shared memory (Hopper thread block clusters): latency and throughput of loads
from another block's shared memory, against the same loads from the block's own.

``dsmem_latency``: one thread chases a chain in the shared memory of the block ``distance``
ranks away in a cluster of ``cluster`` blocks (distance 0: its own, through the same
cluster-wide load), dependent loads, cycles per load.

``dsmem_bandwidth``: one block per SM, every block reads its neighbour's shared memory
(distance 1) or its own (0) with ``warps`` x ``ilp`` independent coalesced loads; bytes per
cycle per SM.

Every point is timed ten times (three with --quick); findings use medians.

Findings: ``lat.dsmem`` (remote), ``lat.dsmem_local``, ``dsmem.remote_extra``,
``dsmem.latency_by_distance`` (cluster of 8); ``bw.dsmem`` (GB/s per SM, remote),
``bw.dsmem_local``, ``dsmem.remote_fraction``, ``dsmem.bw_by_cluster``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import LARGEST_CLUSTER, Device, DsmemRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.contracts.estimates import (
    Estimate,
    argmax_at,
    estimate_at,
    finding,
    list_finding,
    pooled_estimate,
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
from gpumem.contracts.findings import Finding
from gpumem.contracts.presentation import Presentation, ReportFigure
from gpumem.experiments.figures import DSMEM

CLUSTERS = (2, 4, LARGEST_CLUSTER)
REFERENCES = ("NVIDIA Hopper tuning guide, 'Distributed Shared Memory'; Luo et al., "
              "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, IPDPS 2024 "
              "(arXiv 2402.13499), sec. on distributed shared memory")


class DsmemLatency(Experiment):
    name = "dsmem_latency"
    summary = "distributed shared memory: load latency by cluster size and rank distance"
    probes = ("dsmem",)
    version = "1"
    findings = ("lat.dsmem", "lat.dsmem_local", "dsmem.remote_extra",
                "dsmem.latency_by_distance")
    references = REFERENCES

    def presentation(self) -> Presentation:
        return Presentation(DSMEM, (
            ReportFigure("dsmem",
                         "Latency by rank distance (left); bytes per SM cycle over warps, own "
                         "block solid, next block dashed (right).",
                         "gpumem.experiments.figures.dsmem:dsmem"),
        ))

    def plan(self, ctx: RunContext) -> Plan:
        clusters = (2, 8) if ctx.quick else CLUSTERS
        return Plan(
            axes=[Axis("cluster", clusters, "1", "blocks per thread block cluster"),
                  Axis("distance", tuple(range(max(clusters))), "1",
                       "rank of the block read, counted from the reader's (0: its own)")],
            variables=[Var("latency", (), "cycle",
                           "cycles per dependent load, clock reads cancelled")],
            attrs={"loads": 256},
            repeats=repeat_count(ctx),
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        cluster, distance = int(point["cluster"]), int(point["distance"])
        if distance >= cluster:
            raise PointSkipped(f"a cluster of {cluster} has no block {distance} ranks away")
        return {"latency": device.dsmem(DsmemRequest(
            cluster=cluster, distance=distance, seed=ctx.run_seed)).latency}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        lat = point_medians(raw, "latency")
        local = lat.sel(distance=0)
        remote = lat.where(lat["distance"] > 0)
        if not np.isfinite(local.values).any() or not np.isfinite(remote.values).any():
            return []
        ok = lat.copy(data=np.isfinite(lat.values))
        points = [{"cluster": c.item(), "distance": d.item()}
                  for c in lat["cluster"].values for d in lat["distance"].values
                  if bool(ok.sel(cluster=c, distance=d))]
        rem = pooled_estimate(raw, "latency", [p for p in points if p["distance"] > 0])
        loc = pooled_estimate(raw, "latency", [p for p in points if p["distance"] == 0])
        method = "one thread, dependent loads through mapa + ld.shared::cluster"
        out = [finding("lat.dsmem", rem, "cycle", 1.0,
                       method + f"; median over every remote rank of clusters "
                       f"{', '.join(str(int(c)) for c in lat['cluster'].values)}, their runs "
                       f"pooled"),
               finding("lat.dsmem_local", loc, "cycle", 1.0,
                       method + ", the reader's own block"),
               finding("dsmem.remote_extra", rem.minus(loc), "cycle", 1.0,
                       "lat.dsmem - lat.dsmem_local")]
        biggest = int(lat["cluster"].values.max())
        row = lat.sel(cluster=biggest)
        dist = [int(d) for d, v in zip(row["distance"].values, row.values, strict=True)
                if np.isfinite(v)]
        if len(dist) > 2:
            ests = [estimate_at(raw, "latency", {"cluster": biggest, "distance": d})
                    for d in dist]
            vals = [e.value for e in ests]
            spread = max(vals[1:]) - min(vals[1:])
            out.append(list_finding("dsmem.latency_by_distance", ests, "cycle", 1.0,
                                    f"cluster of {biggest}, by rank distance",
                                    index=("distance", dist), digits=2,
                                    note=f"remote ranks differ by {spread:.1f} cycles at most"))
        return out


class DsmemBandwidth(Experiment):
    name = "dsmem_bandwidth"
    summary = "distributed shared memory: throughput per SM over warps x ILP, own vs remote"
    probes = ("dsmem",)
    version = "1"
    findings = ("bw.dsmem", "bw.dsmem_local", "dsmem.remote_fraction", "dsmem.bw_by_cluster")
    references = REFERENCES

    def presentation(self) -> Presentation:
        return Presentation(DSMEM, rank=1)  # findings only, under dsmem

    def plan(self, ctx: RunContext) -> Plan:
        clusters: tuple[int, ...] = CLUSTERS
        warps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
        ilps: tuple[int, ...] = (1, 2, 4, 8)
        if ctx.quick:
            clusters, warps, ilps = (2,), (4, 32), (1, 4)
        return Plan(
            axes=[Axis("cluster", clusters, "1", "blocks per thread block cluster"),
                  Axis("distance", (0, 1), "1", "0: each block reads its own shared memory; "
                       "1: the next block's in the cluster"),
                  Axis("warps", warps, "1", "warps per block (one block per SM)"),
                  Axis("ilp", ilps, "1", "independent loads per thread per iteration")],
            variables=[Var("bytes_per_cycle", (), "byte/cycle", "bytes loaded per SM cycle")],
            attrs={"width": 4, "iterations": 1024},
            repeats=repeat_count(ctx),
        )

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        # one request, the same every run (the throughput model draws no seed)
        return {"bytes_per_cycle": device.dsmem(DsmemRequest(
            cluster=int(point["cluster"]), distance=int(point["distance"]), kind="throughput",
            warps=int(point["warps"]), ilp=int(point["ilp"]))).bytes_per_cycle}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        bpc = point_medians(raw, "bytes_per_cycle")
        best = bpc.max(["warps", "ilp"], skipna=True)  # (cluster, distance)
        if not np.isfinite(best.sel(distance=1).values).any():
            return []

        def at_best(**sel: int) -> Estimate:
            return estimate_at(raw, "bytes_per_cycle", argmax_at(bpc.sel(sel)) | sel)

        remote = at_best(distance=1)
        has_local = bool(np.isfinite(best.sel(distance=0).values).any())
        local = at_best(distance=0) if has_local else None
        clock = float(raw.attrs.get("clock_mhz", 0) or 0)
        out = []
        if clock > 0:
            out.append(finding("bw.dsmem", remote.scaled(clock / 1e3), "GB/s", 1.0,
                               f"best of warps x ILP x cluster size: {remote.value:.1f} "
                               f"B/cycle per SM x {clock:g} MHz, each block reading the next "
                               f"block's shared memory (per SM)"))
            if local is not None:
                out.append(finding("bw.dsmem_local", local.scaled(clock / 1e3), "GB/s",
                                   1.0, f"the same loads on the block's own shared memory: "
                                   f"{local.value:.1f} B/cycle per SM"))
        if local is not None and local.value > 0:
            out.append(finding("dsmem.remote_fraction", remote.over(local), "1", 1.0,
                               "best remote throughput / best own-block throughput", digits=3))
        per_cluster = best.sel(distance=1)
        cl = [int(c) for c, v in zip(per_cluster["cluster"].values, per_cluster.values,
                                   strict=True)
              if np.isfinite(v)]
        if len(cl) > 1:
            out.append(list_finding("dsmem.bw_by_cluster",
                                    [at_best(distance=1, cluster=c) for c in cl],
                                    "byte/cycle", 1.0, "best remote bytes per SM cycle by "
                                    "cluster size", index=("cluster", cl), digits=2))
        return out
