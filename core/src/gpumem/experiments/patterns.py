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

Findings: ``lat.pattern.P1`` ... ``lat.pattern.P6`` (cycles, timer overhead removed), each
the median with its 95 % interval. A DRAM access spreads over -27 % to +250 % of its median
on an H200, so a median of a few accesses moves by a tenth from run to run: the warm patterns
are chased for SAMPLES accesses, P5 over 512 lines (16 fell near or far in the L2 by chance),
P1 over 2048 fresh pages; a cold pattern is one chase, since a second one would find the
first one's lines in the L2 and its translations in the TLBs. P6 is bounded by the 16 GiB a
4-byte chain spans (31 regions), so it is chased :data:`P6_CHAINS` times (twice with
--quick), the L2 evicted before each, each chain behind the next placement pad (other
pages, other addresses), and their accesses pooled. On an H200 P6's accesses fall into two
modes, about 630 and 830 cycles, some 58 % in the upper one in no order by position, so the
median of one chain's 29 jumped between them: 647-822 over eleven runs (version 1), 753
against 822 in two runs of one GPU job, their intervals apart. Later chains are not warmed
by earlier ones (benchmarks/p6_chains.py, 2026-12-04, four processes of eight chains: the
same share and modes in every chain); eight pooled gave medians 774.5-783 in the four. The
page size is taken as 2 MB, as Mei & Chu measured on all three GPUs (see ``tlb_structure``
for a device's own).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr

from gpumem.analysis.chases import chases_from_dataset
from gpumem.contracts.device import PLACEMENT_PADS, Device, StreamRequest
from gpumem.contracts.estimates import order_interval
from gpumem.contracts.experiment import Experiment, Plan, RunContext
from gpumem.contracts.findings import Finding, unresolved
from gpumem.contracts.presentation import Presentation
from gpumem.experiments.chaselog import ChaseLog
from gpumem.experiments.figures import LATENCY

PAGE = 2 << 20
LINE = 128
REGION = 512 << 20
SAMPLES = 2048          # timed accesses of a warm pattern at least (4 passes at least)
LINES_PER_PAGE = 8      # P3, P4: lines of each page (the L2 hit latency depends on the line)
LINE_STEP = 4096 + 128
CHAIN_SPAN = 16 << 30   # 4-byte chain elements reach 16 GiB
P6_CHAINS, P6_QUICK_CHAINS = 8, 2  # P6 chases pooled (each: 30 fresh regions at most)


def pattern_offsets(name: str, memory: int) -> tuple[tuple[int, ...], int, bool]:
    """(byte offsets, footprint, warm?) of one pattern's chain."""
    page = lambda k: k * (PAGE + LINE)  # noqa: E731 - one line per page, shifted per page

    def lines(n: int) -> tuple[int, ...]:
        return tuple(page(k) + j * LINE_STEP for j in range(LINES_PER_PAGE) for k in range(n))

    if name == "P5":
        offs = tuple(i * 4 * LINE for i in range(512))
        return offs, PAGE, True
    if name == "P2":
        offs = tuple(i * (8 * LINE + LINE) for i in range(PAGE // (9 * LINE)))
        return offs, PAGE, False
    if name == "P3":  # eight lines per page, visited in turn: the same pages between two
        # visits of one page (the TLBs see no difference), a median over 8 x 32 lines
        return lines(32), page(32), True
    if name == "P4":
        n = min(512, memory // (2 * (PAGE + LINE)))
        return lines(n), page(n), True
    if name == "P1":
        n = min(2048, memory // (4 * (PAGE + LINE)), CHAIN_SPAN // (PAGE + LINE) - 1)
        return tuple(page(k) for k in range(n)), page(n), False
    if name == "P6":
        n = max(2, min(32, memory // REGION - 1, CHAIN_SPAN // (REGION + PAGE + LINE) - 1))
        return tuple(k * (REGION + PAGE + LINE) for k in range(n)), n * (REGION + PAGE + LINE), \
            False
    raise ValueError(name)


PATTERNS = ("P1", "P2", "P3", "P4", "P5", "P6")


class Patterns(Experiment):
    name = "patterns"
    summary = "Mei & Chu's global-memory access patterns P1-P6 (TLB x L2 hit/miss cases)"
    probes = ("pointer_chase",)
    version = "2"  # 2: P6 pooled over P6_CHAINS chains
    changed_in = {"2": ("lat.pattern.P6",)}  # P1-P5 chased as before
    findings = ("lat.pattern.P1", "lat.pattern.P2", "lat.pattern.P3", "lat.pattern.P4",
                "lat.pattern.P5", "lat.pattern.P6")
    references = ("Mei & Chu, Dissecting GPU Memory Hierarchy through Microbenchmarking, "
                  "IEEE TPDS 28(1), 2017, sec. 5.2 (pattern_fermi.cu, pattern_kepler.cu)")

    def presentation(self) -> Presentation:
        return Presentation(LATENCY, rank=1)  # findings only, under latency

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
            chains = 1 if name != "P6" else P6_QUICK_CHAINS if ctx.quick else P6_CHAINS
            for k in range(chains):
                if not warm:
                    evict_l2(device)
                log.run(path=path, stage=name, footprint=footprint, stride=4, order="pattern",
                        pattern=offs, warmup=2 * len(offs) if warm else 0,
                        record=max(4, -(-SAMPLES // len(offs))) * len(offs) if warm
                        else len(offs), placement=k % len(PLACEMENT_PADS))
        return log.dataset()

    def analyze(self, raw: xr.Dataset) -> list[Finding]:
        out = self._medians(raw)
        by = {f.name: f for f in out}
        hit = by.get("lat.pattern.P5")
        for name in ("lat.pattern.P1", "lat.pattern.P2", "lat.pattern.P6"):
            f = by.get(name)
            if f is not None and hit is not None and isinstance(f.value, (int, float)) \
                    and isinstance(hit.value, (int, float)) and f.value < 1.25 * hit.value:
                # a cold pattern as fast as an L2 hit found its lines in the L2 (an H200 run
                # before the L2 was evicted first: P2 290 cycles against 440-453 in four)
                out[out.index(f)] = unresolved(
                    name, "cycle", [], f.method,
                    f"the cold chain ran at {f.value:g} cycles, L2-hit speed (P5 "
                    f"{hit.value:g}): its lines were still in the L2, so it did not measure "
                    f"the pattern")
        return out

    def _medians(self, raw: xr.Dataset) -> list[Finding]:
        by: dict[str, list] = {}
        for c in chases_from_dataset(raw):
            lat = c.ev_latency[np.argsort(c.ev_access)]  # every access kept (no threshold)
            if c.stage in ("P1", "P2", "P6"):
                lat = lat[1:]  # the cold first access is a different case
            by.setdefault(c.stage, []).append((lat, c))
        out = []
        for stage, parts in by.items():
            lat = np.concatenate([p for p, _c in parts])
            if lat.size == 0:
                continue
            med = float(np.median(lat))
            lo, hi = order_interval(lat)
            out.append(Finding(
                f"lat.pattern.{stage}", round(med, 2), "cycle",
                float(np.clip(1 - 20 * (hi - lo) / max(med, 1e-9), 0, 1)),
                f"median of {lat.size} accesses of the {stage} chain"
                + (f"s ({len(parts)} pooled, L2 evicted before each)" if len(parts) > 1
                   else "") + f" ({parts[0][1].path} path)",
                interval=(round(lo, 2), round(hi, 2))))
        return sorted(out, key=lambda f: f.name)



def evict_l2(device: Device) -> None:
    """Read a buffer of four L2 capacities through the L2 (a stream), so that a cold
    pattern's chain finds none of its lines there: its buffer may take memory a chase just
    freed. A device without streams is left as it is."""
    if "stream" not in device.probes or device.info.l2_bytes <= 0:
        return
    footprint = max(4 * device.info.l2_bytes, 64 << 20) // 4096 * 4096
    if 3 * footprint > device.info.memory_bytes:
        return
    try:
        device.stream(StreamRequest(footprint=footprint, ctas=4 * max(1, device.info.sm_count),
                                    threads=256, ilp=4, width=16, path="cg", kind="read"))
    except Exception:  # noqa: BLE001 - best effort: the analysis checks the premise
        pass
