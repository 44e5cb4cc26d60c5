"""A simulator config of a GPU that no plugin describes, built from its measured run alone.

``gpumem export sim`` calibrates an architecture's packaged config from a run. A GPU measured
as the generic architecture (``sm_90``) has no packaged config, so :func:`base_config` builds
one from what the run found: the geometry the dissection decided (lines, sectors, ways, the
L2's partitions, the TLB's page and entries), the device's own properties (SMs, clock, memory,
shared memory, the warps an SM holds) and, for what nothing measured, a stated assumption.
:func:`gpumem.interop.calibrate.calibrate` then sets every parameter a finding measures, as it
does for a packaged base. Each assumption is returned with its reason, for the file's
comments: the result says what it does not know.

What the model cannot learn from a run stays at the simulator's defaults, which change
nothing (plain loads in flight per thread, cp.async's extra cycles, the copy engine's rate,
the DRAM's knee): the findings those mechanisms shape (``cpasync.*``, ``ilp.*``, ``bulk.*``)
then differ from the GPU's, and ``gpumem plugin new`` says which.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gpumem.sim.config import (
    CacheLevel,
    Dram,
    SetIndex,
    SharedMemory,
    SimConfig,
    Throughput,
    Timer,
    TlbLevel,
)

if TYPE_CHECKING:
    from gpumem.interop.compare import Source

#: A partitioned L2's home hash, where nothing measured it: any balanced one behaves alike for
#: the chases (parity of address bits 12, 17 and 22).
PARTITION_MASKS = [0x421000]
#: Ways of a level whose sets no chase could isolate (a hashed index): a common choice.
HASHED_WAYS = 4
#: Ways of an L2 whose associativity was not measured.
L2_WAYS = 16


class Assumed(dict):
    """Parameter path -> why its value is what it is (nothing measured it)."""


def _int(v: Any) -> int | None:
    try:
        x = int(v)
    except (TypeError, ValueError):
        return None
    return x if x > 0 else None


def positive(v: Any) -> float | None:
    """``v`` as a positive, finite number, or ``None`` (a finding's value, read for a
    parameter: a missing or non-numeric one sets nothing)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x == x and x > 0 else None


def _whole_sets(size: int, ways: int, line: int) -> int:
    unit = ways * line
    return max(unit, round(size / unit) * unit)


def _l1(src: Source, level: str, prefix: str, assumed: Assumed) -> CacheLevel | None:
    """The first level of a load path (``l1d`` for ``ca``, ``ro`` for ``nc``): its line,
    sector, ways and policy as the dissection decided, its size from the ladder."""
    cs = "cache_structure"
    size = _int(src.value("latency", "l1d.size")) if prefix == "l1d" else None
    size = size or _int(src.value(cs, f"{prefix}.overflow_size")) or \
        _int(src.value(cs, f"{prefix}.half_miss_size"))
    hit = positive(src.value(cs, f"{prefix}.hit_latency")) or \
        (positive(src.value("latency", "lat.l1")) if prefix == "l1d" else None)
    if size is None or hit is None:
        return None
    line = _int(src.value(cs, f"{prefix}.line"))
    if line is None:
        line = 128
        assumed[f"cache:{level}.line"] = "ASSUMED 128 B: no chase decided the line"
    sector = _int(src.value(cs, f"{prefix}.sector")) or 0
    ways = _int(src.value(cs, f"{prefix}.ways"))
    if ways is None:  # a hashed index (misses ramp): modulo keeps the ladder's knee where
        ways = HASHED_WAYS  # the GPU's is; a hashed one of a few ways would miss far sooner
        assumed[f"cache:{level}.ways"] = (f"ASSUMED {HASHED_WAYS} ways, index modulo the "
                                          f"sets: no chase could overflow one set (misses "
                                          f"ramp: a hashed index), and modulo puts the "
                                          f"latency ladder's knee at the measured capacity")
    policy = str(src.value(cs, f"{prefix}.policy") or "lru")
    if policy not in ("lru", "fifo", "random"):
        assumed[f"cache:{level}.policy"] = f"ASSUMED lru: measured '{policy}'"
        policy = "lru"
    return CacheLevel(level, _whole_sets(size, ways, line), line, ways, hit,
                      sector=sector if sector and sector < line else 0, policy=policy,
                      scope="sm")


def _same_cache(a: CacheLevel, b: CacheLevel) -> bool:
    """Two load paths see one cache (Volta's and later unified L1): same line, sizes within
    10 %."""
    return a.line == b.line and abs(a.size - b.size) <= 0.1 * b.size


def _l2(src: Source, assumed: Assumed, device_l2: int) -> list[CacheLevel]:
    """The L2: one level, or a near level backed by a partitioned one where the ladder saw
    two L2 latencies (each SM near one partition)."""
    lat = "latency"
    size = _int(src.value(lat, "l2.size")) or device_l2
    line = _int(src.value("cache_structure", "l2.line")) or 128
    sector = _int(src.value("cache_structure", "l2.fill_unit")) or 32
    ways = _int(src.value("cache_structure", "l2.ways"))
    if ways is None:
        ways = L2_WAYS
        assumed["cache:l2.ways"] = f"ASSUMED {L2_WAYS}: the L2's ways were not measured"
    hit = positive(src.value(lat, "lat.l2")) or 200.0
    sector = sector if sector <= line and line % sector == 0 else 0
    near = _int(src.value(lat, "l2.near_size"))
    if _int(src.value(lat, "l2.partitions")) != 2 or near is None:
        return [CacheLevel("l2", _whole_sets(size, ways, line), line, ways, hit, sector=sector,
                           scope="gpu", translate=True)]
    far_hit = positive(src.value("l2_sm_map", "l2.sm_map_near_latency")) or \
        positive(src.value(lat, "lat.l2_far")) or 2 * hit
    far_lat = positive(src.value("l2_sm_map", "l2.sm_map_far_latency")) or far_hit
    assumed["cache:l2_far.partition_masks"] = ("ASSUMED: home = parity of address bits 12, "
                                               "17 and 22 (the GPU's hash is not measured; "
                                               "any balanced one behaves alike)")
    # the whole L2 spreads each page's lines over the sets (past its knee its sets overflow
    # one at a time, and half the accesses leave about a page later, as a hashed L2's do)
    return [CacheLevel("l2", _whole_sets(near, ways, line), line, ways, hit, sector=sector,
                       scope="gpu", translate=True),
            CacheLevel("l2_far", _whole_sets(size, ways, line), line, ways, far_hit,
                       sector=32, scope="gpu", translate=True, partitions=2,
                       partition_masks=list(PARTITION_MASKS), far_latency=max(far_lat, far_hit),
                       index=SetIndex("spread"))]


def _tlbs(src: Source, assumed: Assumed) -> list[TlbLevel]:
    t = "tlb_structure"
    page = _int(src.value(t, "tlb.page"))
    out = []
    for level in ("tlb_l1", "tlb_l2"):
        entries = _int(src.value(t, f"{level}.entries"))
        if page is None or entries is None:
            break
        ways = src.value(t, f"{level}.ways")
        if not (isinstance(ways, list) and sum(ways) == entries) and _int(ways) is None:
            ways = entries
        penalty = positive(src.value(t, f"{level}.miss_penalty")) or 0.0
        out.append(TlbLevel(level, page, entries, ways if isinstance(ways, list)
                            else int(ways), penalty))
    return out


def _smem(src: Source, dev: Any, clock_mhz: float) -> SharedMemory:
    s = "smem_latency"
    smem = SharedMemory(size=int(dev.extra.get("shared_memory_per_sm", 0) or 49152)
                        if dev is not None else 49152)
    smem.banks = _int(src.value(s, "smem.banks")) or smem.banks
    smem.bank_width = _int(src.value(s, "smem.bank_width")) or smem.bank_width
    smem.modes = [smem.bank_width]
    bw = positive(src.value("smem_bandwidth", "bw.smem"))
    if bw is not None and clock_mhz:
        smem.bytes_per_cycle = round(bw / (clock_mhz / 1e3), 1)
    remote = positive(src.value("dsmem_latency", "lat.dsmem"))
    rate = positive(src.value("dsmem_bandwidth", "bw.dsmem"))
    if remote is not None and rate is not None and clock_mhz:
        smem.remote_latency = remote
        smem.remote_bytes_per_cycle = round(rate / (clock_mhz / 1e3), 2)
        own = positive(src.value("dsmem_bandwidth", "bw.dsmem_local"))
        if own is not None:
            smem.cluster_bytes_per_cycle = round(own / (clock_mhz / 1e3), 2)
    return smem


def base_config(src: Source) -> tuple[SimConfig, Assumed]:
    """A config of the GPU ``src`` measured, before calibration, and what it assumes."""
    dev = src.device
    if dev is None:
        raise ValueError("the run records no device")
    assumed = Assumed()
    caches: list[CacheLevel] = []
    paths: dict[str, list[str]] = {}
    l2 = _l2(src, assumed, dev.l2_bytes)
    names = [lv.name for lv in l2]
    for path, level, prefix in (("ca", "l1d", "l1d"), ("nc", "ro", "ro"),
                                ("tex", "tex_l1", "tex_l1")):
        first = _l1(src, level, prefix, assumed)
        if first is not None and caches and _same_cache(first, caches[0]):
            paths[path] = ["l1d", *names]  # one unified L1: the path's extra cycles apart
            continue
        if first is not None:
            caches.append(first)
            paths[path] = [first.name, *names]
    paths.setdefault("ca", list(names))
    paths["cg"] = list(names)
    caches += l2
    clock = float(dev.clock_mhz or 1000.0)
    slug = re.sub(r"[^a-z0-9]+", "-", (dev.name or "gpu").lower()).strip("-") or "gpu"
    dram = Dram(latency=positive(src.value("latency", "lat.dram")) or 500.0,
                bandwidth_gbs=round(float(dev.peak_bandwidth_gbs or 0.0), 1))
    warps = int(dev.extra.get("max_warps_per_sm", 0) or 64)
    assumed["timer"] = ("ASSUMED: 1 cycle of timer jitter and rare mis-timed accesses, as on "
                        "hardware; the experiments subtract the overhead the device reports")
    cfg = SimConfig(
        name=slug, arch=src.arch or "", compute_capability=dev.compute_capability or "0.0",
        sm_count=int(dev.sm_count or 1), clock_mhz=clock, caches=caches, paths=paths,
        dram=dram, tlbs=_tlbs(src, assumed),
        timer=Timer(overhead=4.0, jitter=1.0, outlier_rate=0.002, outlier_cycles=400.0,
                    throughput_jitter=0.005),
        smem=_smem(src, dev, clock), throughput=Throughput(max_warps_per_sm=warps),
        memory_bytes=int(dev.memory_bytes or 16 << 30),
        description=f"{dev.name} (compute capability {dev.compute_capability}) as gpumem "
                    f"measured it",
        source="built from a measured run by gpumem (no architecture plugin's base config)")
    page = max([t.page for t in cfg.tlbs] or [1 << 21])
    cfg.base_address = -(-cfg.base_address // page) * page
    return cfg.validate(), assumed
