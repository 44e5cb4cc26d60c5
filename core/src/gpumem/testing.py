"""Planted ground truth: random cache and TLB geometries for the simulator, with the answer.

Inference code is only as good as its recovery of structures whose truth is known. These
generators build a one-cache (or TLB-focused) :class:`~gpumem.sim.SimConfig` with a random
geometry, replacement policy, set-index function and timer noise, and return the findings an
exact inference must produce. The property tests and ``benchmarks/bench_recovery.py`` use
them; plugin authors can use them to test their own inference.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from gpumem.analysis.structure import format_bits
from gpumem.sim.config import CacheLevel, Dram, SetIndex, SimConfig, Timer, TlbLevel

POLICY_CLASS = {"lru": "lru", "fifo": "fifo", "random": "random", "weighted": "non-lru"}


@dataclass
class Planted:
    """A planted geometry: ``truth`` holds the findings recovery is judged on, ``detail``
    finer ones (per-way eviction weights) reported beside the recovery rate."""

    config: SimConfig
    truth: dict[str, Any]
    description: str
    detail: dict[str, Any] = field(default_factory=dict)


def _noise(r: random.Random) -> Timer:
    return Timer(overhead=float(r.choice([0, 4, 8])), jitter=r.uniform(0.0, 2.0),
                 outlier_rate=r.choice([0.0, 0.001, 0.005, 0.01]),
                 outlier_cycles=float(r.choice([300, 1000, 3000])))


POLICIES = ("lru", "fifo", "random", "weighted")


def random_cache(seed: int, max_size: int = 64 << 10, min_size: int = 2 << 10,
                 policies: tuple[str, ...] = POLICIES) -> Planted:
    """A first-level cache (path ``ca``) of random geometry in front of a big L2.

    Sets interleaved in chunks of 2^shift lines (Fermi's texture L1: 4-line chunks) come with
    ways that are a multiple of the chunk, as in real designs: otherwise a sequential stream
    overflows a set before the cache is full and no chase can see the capacity."""
    r = random.Random(seed)
    while True:
        line = r.choice([32, 64, 128])
        ways = r.choice([1, 2, 3, 4, 6, 8, 12, 16])
        index = r.choice(["modulo", "modulo", "bits", "xor"])
        sets = r.choice([2, 4, 8, 16, 32, 64, 128]) if index != "modulo" else \
            r.choice([2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128])
        shift = r.choice([0, 0, 1, 2]) if index == "bits" else 0
        if min_size <= sets * ways * line <= max_size and ways % (1 << shift) == 0:
            break
    size = sets * ways * line
    sector = 32 if line == 128 and r.random() < 0.4 else 0
    policy = r.choice(list(policies))
    weights = []
    if policy == "weighted":
        weights = [1.0] * ways
        weights[r.randrange(ways)] = float(r.choice([3, 4, 6]))
        if ways == 1:
            policy, weights = "lru", []
    lo = line.bit_length() - 1
    nbits = sets.bit_length() - 1
    idx = SetIndex()
    plain: list[int] = []
    pairs: list[tuple[int, int]] = []
    if index == "modulo":
        if sets & (sets - 1) == 0:
            plain = list(range(lo, lo + nbits))
    elif index == "bits":  # shift > 0: sets interleave in chunks of 2^shift lines
        plain = list(range(lo + shift, lo + shift + nbits))
        idx = SetIndex("bits", bits=plain)
    else:  # xor: the low set bits are folded with bits above the set field
        plain = list(range(lo, lo + nbits))
        k = r.randint(1, nbits)
        folded = list(range(lo + nbits + 1, lo + nbits + 1 + k))
        masks = []
        for i, b in enumerate(plain):
            masks.append((1 << b) | ((1 << folded[i]) if i < k else 0))
        pairs = [(plain[i], folded[i]) for i in range(k)]
        plain = plain[k:]
        idx = SetIndex("xor", masks=masks)
    hit = float(r.choice([20, 30, 50, 90, 120]))
    l1 = CacheLevel("l1d", size, line, ways, hit, sector=sector, policy=policy,
                    way_weights=weights, index=idx)
    l2 = CacheLevel("l2", 8 << 20, 128, 16, hit * r.choice([3, 5, 8]), sector=32,
                    scope="gpu", translate=True)
    cfg = SimConfig(name=f"planted-{seed}", arch="planted", compute_capability="9.0",
                    sm_count=1, clock_mhz=1000.0, caches=[l1, l2],
                    paths={"ca": ["l1d", "l2"], "cg": ["l2"]},
                    tlbs=[TlbLevel("tlb_l1", 2 << 20, 32, 32, 10.0)],
                    dram=Dram(hit * 10), timer=_noise(r), memory_bytes=1 << 30,
                    seed=seed).validate()
    truth: dict[str, Any] = {"l1d.overflow_size": size, "l1d.line": line, "l1d.ways": ways,
                             "l1d.sets": sets, "l1d.sector": sector or line}
    if ways > 1:
        truth["l1d.policy"] = POLICY_CLASS[policy]
    if plain or pairs:
        truth["l1d.index_bits"] = format_bits(plain, pairs)
    desc = (f"{size} B = {sets} sets x {ways} ways x {line} B"
            f"{f' ({sector}-B sectors)' if sector else ''}, {policy}"
            f"{weights if weights else ''}, index {index}, noise {cfg.timer}")
    detail = {"l1d.way_weights": sorted(weights, reverse=True)} if weights else {}
    return Planted(cfg, truth, desc, detail)


def random_tlb(seed: int, near_far: bool = False) -> Planted:
    """Two TLB levels of random size, sets (unequal too) and penalties, pages 64 KB-2 MB.

    The L2 TLB holds more than twice the L1's entries: a cyclic chase misses an L2 no bigger
    than the L1 at every footprint the L1 misses, so no sweep can see it (nor would a design).
    ``near_far``: the L2 has two partitions, hashed over the address bits the page-strided
    chases vary, whose hits cost 280 (near) or 530 (far) cycles, as an H200's do: a line's
    placement then moves its latency by ten times a TLB miss.
    """
    r = random.Random(seed)
    page = r.choice([64 << 10, 512 << 10, 2 << 20])
    e1 = r.choice([8, 12, 16, 32])
    ways2 = _l2_tlb_ways(r)
    while sum(ways2) <= 2 * e1:
        ways2 = _l2_tlb_ways(r)
    unequal = len(set(ways2)) > 1
    if unequal:  # unequal sets, as Mei & Chu found (17 + 6 x 8)
        table = [s for s, w in enumerate(ways2) for _ in range(w)]
        r.shuffle(table)  # consecutive pages fill every set to its ways, then overflow
        idx = SetIndex("table", table=table)
    else:
        idx = SetIndex()
    pen1, pen2 = float(r.choice([6, 12, 28])), float(r.choice([50, 84, 120]))
    tlbs = [TlbLevel("tlb_l1", page, e1, e1, pen1),
            TlbLevel("tlb_l2", page, sum(ways2), ways2 if len(set(ways2)) > 1 else ways2[0],
                     pen2, index=idx)]
    if near_far:
        l2 = CacheLevel("l2", 8 << 20, 128, 16, 280.0, sector=32, scope="gpu", translate=True,
                        partitions=2, far_latency=530.0, partition_masks=[0x7FFFF80])
    else:
        l2 = CacheLevel("l2", 8 << 20, 128, 16, 200.0, sector=32, scope="gpu", translate=True)
    cfg = SimConfig(name=f"planted-tlb-{seed}", arch="planted", compute_capability="9.0",
                    sm_count=1, clock_mhz=1000.0, caches=[l2], paths={"cg": ["l2"]},
                    tlbs=tlbs, dram=Dram(600.0), memory_bytes=16 << 30,
                    base_address=1 << 40, seed=seed,
                    timer=Timer(overhead=6.0, jitter=r.uniform(0, 0.5))).validate()
    truth = {"tlb.page": page, "tlb_l1.entries": e1, "tlb_l2.entries": sum(ways2),
             "tlb_l2.sets": len(ways2),
             "tlb_l2.ways": sorted(ways2, reverse=True) if len(set(ways2)) > 1 else ways2[0]}
    return Planted(cfg, truth, f"page {page}, L1 TLB {e1}, L2 TLB {ways2}")


def h200_like_tlb(seed: int = 0) -> Planted:
    """The translation hierarchy an H200 shows (see docs/h200-tlb.md): 16 fully associative
    L1-TLB entries of 16 MB each with a 10-cycle miss, a second level reaching 64 GB (beyond
    what 4-byte chain elements can chase), near (280) and far (530) L2 hits, and pair
    differences spread +-5 cycles (timer jitter of 3.2 cycles per access)."""
    page = 16 << 20
    tlbs = [TlbLevel("tlb_l1", page, 16, 16, 10.0),
            TlbLevel("tlb_l2", page, 4096, 16, 30.0)]
    l2 = CacheLevel("l2", 60 << 20, 128, 16, 280.0, sector=32, scope="gpu", translate=True,
                    partitions=2, far_latency=530.0, partition_masks=[0x7FFFF80])
    cfg = SimConfig(name=f"h200-like-tlb-{seed}", arch="planted", compute_capability="9.0",
                    sm_count=1, clock_mhz=1980.0, caches=[l2], paths={"cg": ["l2"]},
                    tlbs=tlbs, dram=Dram(700.0), memory_bytes=141 << 30,
                    base_address=1 << 40, seed=seed,
                    timer=Timer(overhead=4.0, jitter=3.2)).validate()
    truth = {"tlb.page": page, "tlb_l1.entries": 16}
    return Planted(cfg, truth, "H200-like: L1 TLB 16 x 16 MB, 10 cycles; L2 TLB 4096 x 16 MB")


#: The planted slice hash of :func:`sliced_l2`: masks within one 2 MB page and across the
#: pages of a 32 MB buffer (bits 22 and 23).
SLICE_MASKS = (0x1080 | 1 << 22, 0x20500, 0x4100 | 1 << 23)


def sliced_l2(seed: int = 0, jitter: float = 0.0, sm_count: int = 16,
              cycles_per_hop: float = 20.0,
              masks: tuple[int, ...] = SLICE_MASKS) -> Planted:
    """An L2 of eight slices homed by the XOR hash ``masks`` (three), laid out on a 4 x 2
    grid with the SMs on the same grid (two per position): a hit costs 200 cycles plus
    ``cycles_per_hop`` per grid step (Manhattan) from the SM to the line's slice. Truth: the
    slice count, every SM's latency row (``slice_latency``) and the masks."""
    rows = _grid_rows(random.Random(seed), sm_count, cycles_per_hop)
    l2 = CacheLevel("l2", 4 << 20, 128, 16, 200.0, sector=32, scope="gpu", translate=True,
                    slices=8, slice_masks=list(masks), slice_latency=rows)
    truth = {"l2_slices.groups": 8, "slice_masks": list(masks),
             "slice_latency": rows}
    return Planted(_sliced_config(f"sliced-l2-{seed}", l2, sm_count, seed, jitter), truth,
                   f"8 slices on a 4 x 2 grid, {cycles_per_hop:g} cycles a hop, "
                   f"{sm_count} SMs, jitter {jitter:g}")


#: The planted table hash of :func:`table_sliced_l2`: in-page deltas that keep a line's
#: slice, over 256 KB pages (its table has 512 classes).
SLICE_KERNEL = (0x24a80, 0x100)


def table_sliced_l2(seed: int = 0, jitter: float = 0.0, sm_count: int = 16,
                    cycles_per_hop: float = 20.0) -> Planted:
    """:func:`sliced_l2`'s grid, its eight slices homed by a hash no XOR masks express, as an
    H200's is: a random table of one slice per class of a line's address within a 256 KB
    page modulo the span of ``SLICE_KERNEL``, every page alike. Truth: the kernel, the
    table and every SM's latency row."""
    r = random.Random(seed)
    rows = _grid_rows(r, sm_count, cycles_per_hop)
    table = list(range(8)) + [r.randrange(8) for _ in range(512 - 8)]
    r.shuffle(table)
    l2 = CacheLevel("l2", 4 << 20, 128, 16, 200.0, sector=32, scope="gpu", translate=True,
                    slices=8, slice_kernel=list(SLICE_KERNEL), slice_table=table,
                    slice_latency=rows)
    truth = {"l2_slices.groups": 8, "slice_kernel": list(SLICE_KERNEL), "slice_table": table,
             "slice_latency": rows}
    return Planted(_sliced_config(f"table-sliced-l2-{seed}", l2, sm_count, seed, jitter),
                   truth, f"8 slices by a table over 512 classes of a 256 KB page, "
                   f"{sm_count} SMs, jitter {jitter:g}")


#: Where the six slices of :func:`balanced_sliced_l2` sit on the 4 x 2 grid: the last two at
#: one spot, so no SM's latency tells them apart.
TWIN_SPOTS = ((0, 0), (1, 0), (2, 0), (3, 0), (1, 1), (1, 1))


def balanced_sliced_l2(seed: int = 0, jitter: float = 0.0, sm_count: int = 16,
                       cycles_per_hop: float = 20.0, twin_gap: float = 0.0,
                       slice_bandwidth: float = 0.0) -> Planted:
    """Six slices homed by a table over :data:`SLICE_KERNEL`'s 512 classes of a 256 KB page
    that gives each slice its share (85 or 86 classes), as a real slice hash spreads a
    page's lines evenly (an H100's 2 MB page: 80 slices of 25-26 classes each), the last
    two slices at one spot of the grid (:data:`TWIN_SPOTS`): latency makes five groups of
    the six slices, the twins' one holding two. With ``twin_gap`` the second twin is that
    many cycles farther from every other SM (the twins of an H100 or H200 page: 0.5-1 cycle
    apart at some SMs, less than a line's noise), and the truth counts six groups. With
    ``slice_bandwidth`` (bytes a cycle) each slice queues the requests of SMs that hammer it
    (probe ``slice_contention``): what tells the twins apart where latency cannot.
    Truth: the slice and group counts, the table and every SM's latency row."""
    r = random.Random(seed)
    rows = _grid_rows(r, sm_count, cycles_per_hop, TWIN_SPOTS)
    for row in rows[::2]:
        row[-1] += twin_gap
    table = [k % len(TWIN_SPOTS) for k in range(512)]
    r.shuffle(table)
    l2 = CacheLevel("l2", 4 << 20, 128, 16, 200.0, sector=32, scope="gpu", translate=True,
                    slices=len(TWIN_SPOTS), slice_kernel=list(SLICE_KERNEL),
                    slice_table=table, slice_latency=rows, slice_bandwidth=slice_bandwidth)
    truth = {"l2_slices.slices": len(TWIN_SPOTS),
             "l2_slices.groups": len(set(TWIN_SPOTS)) + (1 if twin_gap else 0),
             "slice_table": table, "twins": [len(TWIN_SPOTS) - 2, len(TWIN_SPOTS) - 1],
             "slice_latency": rows}
    return Planted(_sliced_config(f"balanced-sliced-l2-{seed}", l2, sm_count, seed, jitter),
                   truth, "6 slices by a balanced table, two at one spot"
                   + (f" {twin_gap:g} cycles apart from half the SMs" if twin_gap else "")
                   + f", {sm_count} SMs, jitter {jitter:g}")


def _grid_rows(r: random.Random, sm_count: int, cycles_per_hop: float,
               slice_spots: tuple[tuple[int, int], ...] | None = None) -> list[list[float]]:
    """Slices on a 4 x 2 grid (eight, one per position, unless ``slice_spots`` places them),
    the SMs on it two per position (shuffled): each SM's latency to each slice, 200 cycles
    plus ``cycles_per_hop`` per grid step."""
    spots = [(x, y) for x in range(4) for y in range(2)]
    sm_at = [spots[(i // 2) % len(spots)] for i in range(sm_count)]
    r.shuffle(sm_at)
    return [[200.0 + cycles_per_hop * (abs(a - x) + abs(b - y))
             for x, y in (slice_spots or spots)] for a, b in sm_at]


def _sliced_config(name: str, l2: CacheLevel, sm_count: int, seed: int,
                   jitter: float) -> SimConfig:
    return SimConfig(name=name, arch="planted", compute_capability="9.0",
                     sm_count=sm_count, clock_mhz=1500.0, caches=[l2], paths={"cg": ["l2"]},
                     tlbs=[TlbLevel("tlb_l1", 2 << 20, 64, 64, 10.0)], dram=Dram(600.0),
                     memory_bytes=1 << 32, base_address=1 << 40, seed=seed,
                     timer=Timer(overhead=4.0, jitter=jitter)).validate()


def _l2_tlb_ways(r: random.Random) -> list[int]:
    """Ways per L2 TLB set: unequal (17 + 6 x 8, Mei & Chu's Maxwell) 30% of the time."""
    if r.random() < 0.3:
        return [r.choice([12, 17, 20])] + [r.choice([4, 8])] * r.randint(2, 6)
    return [r.choice([4, 8, 16])] * r.choice([2, 4, 8])


#: Noise a trustworthy inference must survive (``with_noise``): timer jitter as a fraction of
#: the first level's hit latency, heavy-tailed mis-timings, a clock that slows mid-sweep, an
#: H200's measured per-level latency spread, and all of them at once.
NOISE_LEVELS = ("clean", "jitter10", "jitter25", "outliers", "clock_step", "h200", "all")


def with_noise(planted: Planted, level: str) -> Planted:
    """``planted`` with the timer of noise ``level`` (see NOISE_LEVELS) instead of its own."""
    cfg = planted.config
    hit = _first_level(cfg).hit_latency
    base = Timer(overhead=cfg.timer.overhead)
    timers = {
        "clean": base,
        "jitter10": replace(base, jitter=0.10 * hit),
        "jitter25": replace(base, jitter=0.25 * hit),
        "outliers": replace(base, tail_rate=0.01, tail_cycles=4.0 * hit, tail_shape=1.5),
        "clock_step": replace(base, clock_step_after=12, clock_step_factor=0.75),
        "h200": replace(base, spread="h200", tail_rate=0.002, tail_cycles=2.0 * hit),
        "all": replace(base, jitter=0.25 * hit, tail_rate=0.005, tail_cycles=4.0 * hit,
                       spread="h200", clock_step_after=12, clock_step_factor=0.75),
    }
    if level not in timers:
        raise ValueError(f"unknown noise level '{level}' (choose from: {', '.join(timers)})")
    cfg = replace(cfg, timer=timers[level]).validate()
    return replace(planted, config=cfg, description=f"{planted.description} [{level}]")


def _first_level(cfg: SimConfig) -> CacheLevel:
    """The first cache level of the config's first load path."""
    name = next(iter(cfg.paths.values()))[0]
    return next(c for c in cfg.caches if c.name == name)


def recovered(findings: list, truth: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Mismatches ``{name: (planted, found)}`` between ``truth`` and a findings list."""
    found = {f.name: f.value for f in findings}
    bad = {}
    for name, want in truth.items():
        got = found.get(name)
        if isinstance(want, list) and isinstance(got, list):
            ok = [int(x) for x in want] == [int(x) for x in got]
        else:
            ok = got == want
        if not ok:
            bad[name] = (want, got)
    return bad
