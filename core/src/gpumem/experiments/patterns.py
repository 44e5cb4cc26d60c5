"""``patterns``: Mei & Chu's six global-memory access patterns P1-P6, built as chains.

Each pattern is a pattern chase on the L2-only path (``cg``, the authors' "L1 off"), one
chain per pattern, its accesses chosen so that every timed access falls into one class
(one access per page, shifted by a line per page so that the lines spread over L2 sets):

* P5 - L2 hit, TLB hit: 16 lines of one page, warm;
* P2 - L2 miss, L1-TLB hit: fresh lines of one page, cold (the first access is not counted);
* P3 - L2 hit, L1-TLB miss, L2-TLB hit: one line in each of 32 pages, warm (32 pages
  overflow a 16-entry L1 TLB and fit a 65-entry L2 TLB);
* P4 - L2 hit, both TLBs miss: one line in each of 512 pages, warm;
* P1 - cold: a fresh line on a fresh page each access (TLB and L2 misses, page walk);
* P6 - a fresh page in a fresh 512 MB region each access (the "page-table context switch"
  the paper saw every 512 MB on Kepler and Maxwell; on other devices it reads like P1).

Findings: ``lat.pattern.P1`` ... ``lat.pattern.P6`` (cycles, timer overhead removed).
The page size is taken as 2 MB, as Mei & Chu measured on all three GPUs (see
``tlb_structure`` for a device's own).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import xarray as xr

from gpumem.device import Device
from gpumem.experiment import Experiment, Plan, RunContext
from gpumem.experiments.chaselog import ChaseLog, chases_from_dataset
from gpumem.findings import Finding

PAGE = 2 << 20
LINE = 128
REGION = 512 << 20


def pattern_offsets(name: str, memory: int) -> tuple[tuple[int, ...], int, bool]:
    """(byte offsets, footprint, warm?) of one pattern's chain."""
    page = lambda k: k * (PAGE + LINE)  # noqa: E731 - one line per page, shifted per page
    if name == "P5":
        offs = tuple(i * 4 * LINE for i in range(16))
        return offs, PAGE, True
    if name == "P2":
        offs = tuple(i * (8 * LINE + LINE) for i in range(PAGE // (9 * LINE)))
        return offs, PAGE, False
    if name == "P3":
        return tuple(page(k) for k in range(32)), page(32), True
    if name == "P4":
        n = min(512, memory // (2 * (PAGE + LINE)))
        return tuple(page(k) for k in range(n)), page(n), True
    if name == "P1":
        n = min(256, memory // (2 * (PAGE + LINE)))
        return tuple(page(k) for k in range(n)), page(n), False
    if name == "P6":
        n = max(2, min(8, memory // REGION - 1))
        return tuple(k * (REGION + PAGE + LINE) for k in range(n)), n * (REGION + PAGE + LINE), \
            False
    raise ValueError(name)


PATTERNS = ("P1", "P2", "P3", "P4", "P5", "P6")


class Patterns(Experiment):
    name = "patterns"
    summary = "Mei & Chu's global-memory access patterns P1-P6 (TLB x L2 hit/miss cases)"
    probes = ("pointer_chase",)
    version = "1"
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 5.2 (pattern_fermi.cu, pattern_kepler.cu)")

    def plan(self, ctx: RunContext) -> Plan:
        return Plan(axes=[], variables=[], attrs={"page": PAGE, "line": LINE,
                                                  "region": REGION})

    def sweep(self, device: Device, ctx: RunContext, progress: Callable[[int], None]
              ) -> xr.Dataset:
        log = ChaseLog(device, seed=ctx.seed, progress=progress)
        path = "cg" if "cg" in device.info.load_paths else "ca"
        for name in PATTERNS:
            offs, footprint, warm = pattern_offsets(name, device.info.memory_bytes)
            if footprint > device.info.memory_bytes:
                continue
            log.run(path=path, stage=name, footprint=footprint, stride=4, order="pattern",
                    pattern=offs, warmup=2 * len(offs) if warm else 0,
                    record=len(offs) if not warm else 4 * len(offs))
        return log.dataset()

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        out = []
        for c in chases_from_dataset(raw):
            lat = c.ev_latency[np.argsort(c.ev_access)]  # every access kept (no threshold)
            if c.stage in ("P1", "P2", "P6"):
                lat = lat[1:]  # the cold first access is a different case
            if lat.size == 0:
                continue
            med = float(np.median(lat))
            spread = float(np.median(np.abs(lat - med)) / med) if med else 0.0
            out.append(Finding(f"lat.pattern.{c.stage}", round(med, 2), "cycle",
                               float(np.clip(1 - 5 * spread, 0, 1)),
                               f"median of {lat.size} accesses of the {c.stage} chain "
                               f"({c.path} path)"))
        return sorted(out, key=lambda f: f.name)
