"""The simulator's bandwidth and shared-memory models (closed form, no per-access loop).

Streaming bandwidth follows Little's law: an SM with ``S`` sector requests in flight against
a level of latency ``L`` cycles moves ``32 S / L`` bytes per cycle. ``S`` grows with resident
warps x ILP x sectors per load instruction until the SM's request-tracking limit; the GPU's
rate then saturates at the tightest cap on the way: the SMs' issue rate, each cache level's
bandwidth, DRAM's. The saturation is a smooth minimum ``(a^-p + b^-p)^(-1/p)`` whose
sharpness ``p`` comes from the config, so a planted cap gives a predictable curve.

Coalescing is computed, not assumed: the addresses of one warp's load instruction are
generated for the requested ordering and the distinct 32-byte sectors counted. With
per-thread contiguous ordering and wide loads, each instruction touches more sectors than it
uses, and without an L1 on the path (``cg``) every instruction fetches them again: L2
traffic grows while DRAM traffic does not - the mechanism the H100 plain-load study suspects.

Requests, not only bytes: a level with ``requests_per_cycle`` serves that many tag look-ups,
one per line a warp's load instruction touches (plus ``fill_lookups`` per line it fills), so
per-thread contiguous loads, which carry fewer useful bytes per request as each thread's run
grows, lose bandwidth with K (the H100 study's ILP drop; an H200's L2: 76 look-ups per
cycle). Plain loads keep at most ``loads_per_thread`` in flight per thread (their
destination registers), cp.async copies their groups; the DRAM's knee has its own sharpness
(round trips lengthen as its queues fill). Bulk (TMA) copies: see :func:`bulk_model`.

Shared memory: a warp's access splits by bank; the busiest bank's count of distinct bank
words is the conflict degree; latency and bank-limited throughput follow from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpumem.contracts.device import BulkRequest, DsmemRequest, SmemRequest, StreamRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.sim.config import CacheLevel, SimConfig

SECTOR = 32
WARP = 32


def smooth_min(a: float, b: float, p: float) -> float:
    """``min(a, b)`` with a rounded knee of sharpness ``p`` (exact for p -> infinity)."""
    if a <= 0 or b <= 0:
        return 0.0
    if math.isinf(a):
        return b
    if math.isinf(b):
        return a
    lo, hi = min(a, b), max(a, b)
    return lo * (1.0 + (lo / hi) ** p) ** (-1.0 / p)


def warp_sectors(order: str, width: int, ilp: int, granule: int = SECTOR) -> tuple[int, int]:
    """(sectors per load instruction, distinct sectors over the ``ilp`` instructions) of one
    warp, for the orderings of :data:`gpumem.contracts.device.STREAM_ORDERS`; with ``granule`` a
    line
    size, the same in lines (the requests the instructions make)."""
    t = np.arange(WARP)
    per_instr = []
    union: set[int] = set()
    for k in range(ilp):
        if order == "thread":
            elem = t * ilp + k
        else:  # coalesced and warp: consecutive elements across the warp in each instruction
            elem = k * WARP + t
        sectors = set((elem * width // granule).tolist())
        per_instr.append(len(sectors))
        union |= sectors
    return int(np.mean(per_instr)), len(union)


@dataclass
class StreamModel:
    """The pieces of a modelled bandwidth run (kept for tests and explanations)."""

    serving: str                 # cache level name or "dram"
    warps_per_sm: int
    active_sms: int
    inflight_sectors_per_sm: float
    latency_cycles: float
    fetch_ratio: float           # sectors fetched from the serving path per useful byte x 32
    demand: float                # useful bytes/cycle the concurrency asks for (Little)
    caps: dict[str, float]       # useful bytes/cycle each limit allows
    rate: float                  # useful bytes/cycle achieved (whole GPU)


def _serving_level(cfg: SimConfig, req: StreamRequest, active_sms: int,
                   ctas_per_sm: int) -> CacheLevel | None:
    """The first level on the path that holds what it is asked to re-read: an SM's share of
    the footprint (order "block": the slices of the blocks resident on it at once, at most
    the footprint), or the whole footprint for a level the SMs share."""
    per_sm = (min(req.footprint, req.footprint / req.slices * ctas_per_sm)
              if req.order == "block" else req.footprint / active_sms)
    for name in cfg.paths[req.path]:
        lv = cfg.level(name)
        working = per_sm if lv.scope == "sm" else req.footprint
        if working <= lv.size:
            return lv
    return None


def stream_model(cfg: SimConfig, req: StreamRequest, asynchronous: bool = False,
                 remote: bool = False) -> StreamModel:
    """Model a streaming run; raises PointSkipped for a launch the device could not run.
    ``remote``: the data is in a peer GPU's memory (its L2-only path, plus the link's latency
    and bandwidth cap)."""
    tp = cfg.throughput
    if req.threads > tp.max_threads_per_cta:
        raise PointSkipped(f"{req.threads} threads per CTA exceed the limit "
                           f"{tp.max_threads_per_cta}")
    if req.path not in cfg.paths:
        raise PointSkipped(f"no '{req.path}' load path in this config")
    warps_per_cta = -(-req.threads // WARP)
    resident = min(tp.max_ctas_per_sm, tp.max_warps_per_sm // warps_per_cta)
    if asynchronous:
        smem_per_cta = req.threads * req.ilp * req.width
        if smem_per_cta > cfg.smem.size:
            raise PointSkipped(f"{smem_per_cta} B of shared memory per CTA exceed "
                               f"{cfg.smem.size} B")
        resident = min(resident, cfg.smem.size // smem_per_cta)
    if resident < 1:
        raise PointSkipped(f"a CTA of {req.threads} threads cannot be resident")
    active_sms = min(cfg.sm_count, req.ctas)
    ctas_per_sm = min(resident, -(-req.ctas // cfg.sm_count))
    warps = ctas_per_sm * warps_per_cta

    per_instr, distinct = warp_sectors(req.order, req.width, req.ilp)
    useful = req.ilp * WARP * req.width
    path = cfg.paths[req.path]
    l1_on_path = cfg.level(path[0]).scope == "sm"
    fetched = (distinct if l1_on_path else per_instr * req.ilp) * SECTOR
    fetch_ratio = fetched / useful

    lv = _serving_level(cfg, req, active_sms, ctas_per_sm)
    latency = cfg.path_latency.get(req.path, 0.0)
    if remote:
        latency += cfg.interconnect.latency
    if asynchronous:
        latency += tp.async_latency
    elif req.kind != "write":
        latency += tp.iteration_cycles / max(1, req.ilp)
    if lv is None:
        latency += cfg.dram.latency
        serving = "dram"
    else:
        latency += lv.hit_latency
        serving = lv.name
    limit = tp.inflight_async_sectors_per_sm if asynchronous and \
        tp.inflight_async_sectors_per_sm else tp.inflight_sectors_per_sm
    per_thread = req.ilp if asynchronous or not tp.loads_per_thread else tp.loads_per_thread
    inflight = warps * per_thread * per_instr
    if limit:
        inflight = min(inflight, limit)
    demand = active_sms * inflight * SECTOR / latency / fetch_ratio if latency > 0 \
        else math.inf

    caps: dict[str, float] = {}
    if tp.issue_bytes_per_cycle:
        caps["issue"] = active_sms * tp.issue_bytes_per_cycle / fetch_ratio
    readers = req.ctas / req.slices if req.order == "block" else 1.0  # blocks a line has
    for name in path:
        level = cfg.level(name)
        bandwidth, merged = level.bandwidth, False
        if level is lv and level.scope == "gpu":
            bandwidth, merged = _shared_read_cap(level, readers)
        if bandwidth:
            scale = active_sms if level.scope == "sm" else 1
            # traffic into an L1 is what the warps ask for; below it, what the L1 fetches
            ratio = per_instr * req.ilp * SECTOR / useful if level.scope == "sm" else fetch_ratio
            caps[name] = bandwidth * scale / ratio
        if level.requests_per_cycle and not merged:  # merged requests reach no tag
            caps[f"{name}.requests"] = _request_cap(level, req, l1_on_path, level is not lv,
                                                    useful) * (active_sms if level.scope == "sm"
                                                               else 1)
        if level is lv:
            break
    if lv is None and cfg.dram.bandwidth_gbs:
        dram = _dram_rate(cfg, cfg.dram.efficiency)
        if req.kind == "write":
            dram *= cfg.dram.write_efficiency
        elif req.kind == "copy":
            dram *= cfg.dram.mix_efficiency / (0.5 + 0.5 / cfg.dram.write_efficiency)
        caps["dram"] = dram
    if remote:
        caps["link"] = cfg.interconnect.bandwidth_gbs * 1e9 / (cfg.clock_mhz * 1e6)
    if req.kind == "write":
        demand = math.inf  # stores are posted: no round trip holds them back
    elif req.kind == "copy":
        demand *= 2.0      # a load in flight is matched by a store of the same size
    # the DRAM's knee is where the bytes in flight meet its rate; then the other caps,
    # tightest last
    rate = smooth_min(demand, caps["dram"], _dram_knee(cfg)) if "dram" in caps else demand
    for name, cap in sorted(caps.items(), key=lambda kv: -kv[1]):
        if name != "dram":
            rate = smooth_min(rate, cap, tp.sharpness)
    if math.isinf(rate):
        raise PointSkipped("nothing limits this stream in the config (set bandwidths)")
    return StreamModel(serving, warps, active_sms, inflight, latency, fetch_ratio, demand,
                       caps, rate)


def _shared_read_cap(level: CacheLevel, readers: float) -> tuple[float, bool]:
    """(bytes per cycle, merged) a GPU-scope level serves where each line is read by
    ``readers`` blocks (order "block", :attr:`StreamRequest.share`): from ``coalesced_share``
    readers their requests merge before the level (``coalesced_bandwidth``), from two the
    level serves at ``shared_bandwidth``, else at its ``bandwidth`` (each unset one: the
    next)."""
    if level.coalesced_share and readers >= level.coalesced_share:
        return level.coalesced_bandwidth, True
    if readers >= 2 and level.shared_bandwidth:
        return level.shared_bandwidth, False
    return level.bandwidth, False


def _dram_rate(cfg: SimConfig, efficiency: float) -> float:
    """Bytes per core cycle the DRAM sustains at ``efficiency`` of its peak."""
    return cfg.dram.bandwidth_gbs * efficiency * 1e9 / (cfg.clock_mhz * 1e6)


def _dram_knee(cfg: SimConfig) -> float:
    """Sharpness where the bytes in flight meet the DRAM's rate (its own, else the
    throughput section's)."""
    return cfg.dram.sharpness or cfg.throughput.sharpness


def _request_cap(level: CacheLevel, req: StreamRequest, l1_on_path: bool, misses: bool,
                 useful: int) -> float:
    """Useful bytes per cycle that ``level.requests_per_cycle`` lookups allow (per SM for an
    SM-scope level): a warp's ``ilp`` instructions make one request per line each touches
    (below an L1, one per distinct line: the L1 merges them), and a level that misses makes
    ``fill_lookups`` more per line it fills."""
    per_instr, distinct = warp_sectors(req.order, req.width, req.ilp, level.line)
    below_l1 = l1_on_path and level.scope != "sm"
    lookups: float = distinct if below_l1 else per_instr * req.ilp
    if misses:
        lookups += distinct * level.fill_lookups
    return level.requests_per_cycle * useful / lookups


def stream_bytes(req: StreamRequest) -> int:
    return req.bytes_per_direction * (2 if req.kind == "copy" else 1)


def bank_conflict_ways(stride: int, width: int, bank_mode: int, banks: int) -> int:
    """Conflict degree of one warp: thread t reads ``width`` bytes at ``t * stride * width``.

    Each access is cut into bank-width words; a bank serves one distinct word per cycle, so
    the degree is the largest number of distinct words any bank is asked for (equal words
    are broadcast)."""
    per_bank: dict[int, set[int]] = {}
    for t in range(WARP):
        addr = t * stride * width
        for piece in range(max(1, width // bank_mode)):
            word = (addr + piece * bank_mode) // bank_mode
            per_bank.setdefault(word % banks, set()).add(word)
    return max(len(w) for w in per_bank.values())


def smem_model(cfg: SimConfig, req: SmemRequest) -> tuple[float, float, int]:
    """(latency in cycles, bytes per cycle per SM, conflict ways) of a shared-memory access."""
    sm = cfg.smem
    if req.bank_mode not in sm.modes:
        raise PointSkipped(f"{req.bank_mode}-byte bank mode is not available (modes: "
                           f"{', '.join(map(str, sm.modes))})")
    n = bank_conflict_ways(req.stride, req.width, req.bank_mode, sm.banks)
    latency = sm.conflict_latency(n)
    per_instr = WARP * req.width
    wavefronts = max(1, -(-per_instr // (sm.banks * req.bank_mode))) * n
    bank_rate = min(per_instr / wavefronts, sm.peak_bytes_per_cycle)
    warps = min(req.warps, cfg.throughput.max_warps_per_sm)
    if req.kind == "latency":
        warps, ilp = 1, 1
    else:
        ilp = req.ilp
    if sm.load_issue_cycles and req.kind != "latency":
        # what the warp issues: its loop iterations overlap, so latency does not bound it
        per_warp = ilp * per_instr / (ilp * sm.load_issue_cycles + sm.iteration_cycles)
    else:
        per_warp = ilp * per_instr / latency if latency > 0 else math.inf
    if sm.warp_bytes_per_cycle:
        per_warp = min(per_warp, sm.warp_bytes_per_cycle)
    demand = warps * per_warp
    rate = smooth_min(demand, bank_rate, sm.sharpness or cfg.throughput.sharpness)
    return latency, rate, n


def dsmem_model(cfg: SimConfig, req: DsmemRequest) -> tuple[float, float]:
    """(latency in cycles, bytes per cycle per SM) of loads from a cluster block's shared
    memory: the block's own at the cluster-load latency (``cluster_latency``, else the
    shared-memory latency) and rate (``cluster_bytes_per_cycle``, else the bank rate),
    another's at the remote latency (by rank in a cluster of 8, where measured), capped at
    the remote rate (for the cluster's size, where measured). Throughput follows Little's
    law per warp (a warp keeps ``ilp`` coalesced 128-byte loads in flight) up to the cap."""
    sm = cfg.smem
    remote = req.distance > 0
    latency = sm.remote_load_latency(req.cluster, req.distance) if remote else \
        (sm.cluster_latency or sm.latency)
    cap = sm.remote_rate(req.cluster) if remote else \
        (sm.cluster_bytes_per_cycle or sm.peak_bytes_per_cycle)
    if req.kind == "latency":
        return latency, float("nan")
    per_warp = req.ilp * WARP * 4 / latency if latency > 0 else math.inf
    if sm.warp_bytes_per_cycle:
        per_warp = min(per_warp, sm.warp_bytes_per_cycle)
    rate = smooth_min(req.warps * per_warp, cap, sm.sharpness or cfg.throughput.sharpness)
    return latency, rate


def bulk_model(cfg: SimConfig, req: BulkRequest) -> float:
    """Bytes per cycle (whole GPU) of HBM -> shared memory bulk copies.

    A chunk's round trip is the copy's latency (``throughput.bulk_latency``, else the DRAM
    load latency) plus the time the SM's copy engine takes to move it
    (``bulk_bytes_per_cycle``). A block keeps ``stages`` chunks in flight (Little's law), but
    its one thread issues a copy at most every ``bulk_issue_cycles``; the SM's blocks add up,
    and the GPU's rate meets what the DRAM sustains for bulk copies at the DRAM's knee. The
    copy engine, not warps, issues, so the plain loads' limits on sectors in flight and issue
    rate do not apply."""
    if req.inflight_per_sm > cfg.smem.size:
        raise PointSkipped(f"{req.inflight_per_sm} B of shared memory per SM exceed "
                           f"{cfg.smem.size} B")
    tp = cfg.throughput
    latency = (tp.bulk_latency or cfg.path_latency.get("cg", 0.0) + cfg.dram.latency)
    if tp.bulk_bytes_per_cycle:
        latency += req.chunk / tp.bulk_bytes_per_cycle
    per_block = req.stages * req.chunk / latency if latency > 0 else math.inf
    if tp.bulk_issue_cycles:
        per_block = smooth_min(per_block, req.chunk / tp.bulk_issue_cycles, tp.sharpness)
    demand = cfg.sm_count * req.ctas_per_sm * per_block
    if not cfg.dram.bandwidth_gbs:
        if math.isinf(demand):
            raise PointSkipped("nothing limits this stream in the config (set bandwidths)")
        return demand
    efficiency = cfg.dram.bulk_efficiency or cfg.dram.efficiency
    return smooth_min(demand, _dram_rate(cfg, efficiency),
                      cfg.dram.bulk_sharpness or _dram_knee(cfg))


def slice_wait(hammer_sms: int, inflight: int, line: int, bandwidth: float,
               latency: float) -> float:
    """Cycles a request waits in an L2 slice's queue while ``hammer_sms`` SMs load lines
    homed there, each keeping ``inflight`` lines in flight against a round trip of
    ``latency`` cycles, the slice serving ``bandwidth`` bytes a cycle. Asked for faster than
    it serves, the slice holds every hammering request at once and serves one line every
    ``line / bandwidth`` cycles, so a round trip takes that times their count (Little's
    law) and the queue is what it adds to the unloaded trip; below that, the waiting time of
    a queue with constant service (M/D/1) at the load asked for."""
    if hammer_sms <= 0 or bandwidth <= 0:
        return 0.0
    service = line / bandwidth
    queued = hammer_sms * inflight
    load = min(queued * service / max(latency, service), 0.95)
    return max(queued * service - latency, 0.0) + service * load / (2 * (1 - load))
