"""``p2p``: loads from another GPU's memory (NVLink, PCIe), latency and read bandwidth.

The device reads data that lives in each GPU of the node in turn, its own included (the
baseline on the diagonal): a pointer chase for latency, at a footprint that the owner's L2
holds and at one far beyond it, and a streaming read for bandwidth. Run with ``--devices
all``, every GPU writes its row, so the run directory holds the whole matrix over GPU pairs
(``gpumem compare RUN`` lines the rows up).

Findings (indexed by peer device): ``p2p.latency_l2`` and ``p2p.latency_dram`` (cycles),
``p2p.read_bw`` (GB/s); ``p2p.remote_latency_ratio`` (the worst remote DRAM latency over the
local one) and ``p2p.remote_bw_ratio`` (the best remote read over the local one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.device import ChaseRequest, Device, StreamRequest
from gpumem.contracts.estimates import (
    Estimate,
    estimate_at,
    finding,
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
from gpumem.contracts.findings import STOP_SAMPLE, Finding, Precision, rel_from_interval

RECORD = 2048
STRIDE = 256               # bytes between chased elements (random order): one per line
SMALL = 1 << 20            # in every L2
REPEATS = 5                # timed reads of each peer (3 with --quick)
THREADS, ILP, WIDTH = 512, 4, 16


class PeerAccess(Experiment):
    name = "p2p"
    summary = "latency and read bandwidth of loads from each GPU's memory (NVLink / PCIe)"
    probes = ("pointer_chase", "stream", "peer_access")
    version = "1"
    findings = ("p2p.latency_l2", "p2p.latency_dram", "p2p.read_bw", "p2p.remote_latency_ratio",
                "p2p.remote_bw_ratio")
    references = ("new; peer reads as in NVIDIA's p2pBandwidthLatencyTest "
                  "(github.com/NVIDIA/cuda-samples)")

    def plan(self, ctx: RunContext) -> Plan:
        dev = ctx.device
        peers = tuple(int(p) for p in dev.extra.get("peers", [dev.index]))
        big = max(4 * max(dev.l2_bytes, 1 << 20), 64 << 20)
        big = min(big, max(dev.memory_bytes // 8, SMALL * 2))
        return Plan(
            axes=[Axis("peer", peers, "1", "device whose memory holds the data (own index: "
                                           "local)")],
            variables=[Var("latency_l2", (), "cycle", "median chase latency, footprint in "
                                                      "the owner's L2, timer overhead removed",
                           repeated=False),
                       Var("latency_dram", (), "cycle", "median chase latency, footprint far "
                                                        "beyond the L2", repeated=False),
                       *(Var(f"latency_{where}_{end}", (), "cycle",
                             f"{'low' if end == 'lo' else 'high'} end of the 95 % interval "
                             f"of latency_{where}'s median", repeated=False)
                         for where in ("l2", "dram") for end in ("lo", "hi")),
                       Var("read_gbs", (), "GB/s", "streaming read bandwidth")],
            attrs={"small_footprint": SMALL, "large_footprint": big, "stride": STRIDE,
                   "record": RECORD, "threads": THREADS, "ilp": ILP, "width": WIDTH,
                   "own_index": dev.index},
            repeats=repeat_count(ctx, REPEATS),
        )

    def prepare(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        """The two chases (once per point), and the request of the timed reads."""
        big = int(self.plan(ctx).attrs["large_footprint"])
        peer = int(point["peer"])

        def chase(where: str, footprint: int) -> dict[str, float]:
            res = device.pointer_chase(ChaseRequest(
                footprint=footprint, stride=STRIDE, record=RECORD,
                warmup=min(footprint // STRIDE, 1 << 16), order="random", path="cg",
                seed=ctx.seed, peer=peer))
            lat = res.latency - res.timer_overhead
            lo, hi = order_interval(lat)
            return {f"latency_{where}": float(np.median(lat)), f"latency_{where}_lo": lo,
                    f"latency_{where}_hi": hi}

        sms = max(1, device.info.sm_count)
        return {**chase("l2", SMALL), **chase("dram", big),
                "request": StreamRequest(
                    footprint=big, ctas=2 * sms, threads=THREADS, ilp=ILP, width=WIDTH,
                    path="cg", kind="read", work=max(big, 1 << 30), peer=peer)}

    def measure(self, device: Device, point: Mapping[str, Any], ctx: RunContext
                ) -> Mapping[str, Any]:
        return {"read_gbs": device.stream(replace(point["request"], seed=ctx.run_seed)).gbs}

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        peers = [int(p) for p in raw["peer"].values]
        own = int(raw.attrs.get("plan_own_index", peers[0] if peers else 0))
        idx = ("peer", peers)
        big_mb = int(raw.attrs.get("plan_large_footprint", 0)) >> 20

        def chased(where: str) -> list[Estimate]:
            """Each peer's chase median and its interval (files before it: the value)."""
            med = point_medians(raw, f"latency_{where}").values
            known = f"latency_{where}_lo" in raw
            ends = [raw[f"latency_{where}_{e}"].values if known else med for e in ("lo", "hi")]
            return [Estimate(float(m), float(a), float(b), Precision(
                        0, rel_from_interval(float(m), float(a), float(b)) if known
                        else math.nan, STOP_SAMPLE))
                    for m, a, b in zip(med, *ends, strict=True)]

        l2, dram = chased("l2"), chased("dram")
        bw = [estimate_at(raw, "read_gbs", {"peer": p}) for p in peers]
        out = [list_finding("p2p.latency_l2", l2, "cycle", 0.9,
                            "median chase latency, data in the peer's L2 (1 MB, random, .cg)",
                            index=idx, digits=1),
               list_finding("p2p.latency_dram", dram, "cycle", 0.9,
                            f"median chase latency, {big_mb} MB in the peer's memory",
                            index=idx, digits=1),
               list_finding("p2p.read_bw", bw, "GB/s", 0.9,
                            "median streaming read of the peer's memory", index=idx,
                            digits=1)]
        remote = [i for i, p in enumerate(peers) if p != own]
        if own in peers and remote:
            i = peers.index(own)
            far = [j for j in remote if np.isfinite(dram[j].value)]
            if np.isfinite(dram[i].value) and far:
                worst = max(far, key=lambda j: dram[j].value)
                out.append(finding("p2p.remote_latency_ratio", dram[worst].over(dram[i]), "1",
                                   0.9, "worst remote DRAM latency over the local one",
                                   digits=3))
            fast = [j for j in remote if np.isfinite(bw[j].value)]
            if np.isfinite(bw[i].value) and fast:
                top = max(fast, key=lambda j: bw[j].value)
                out.append(finding("p2p.remote_bw_ratio", bw[top].over(bw[i]), "1", 0.9,
                                   "best remote read bandwidth over the local one", digits=3))
        return out
