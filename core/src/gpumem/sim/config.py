"""``SimConfig``: the typed, validated description of a simulated GPU memory hierarchy.

A config is plain data: loaded from and saved to TOML, embedded verbatim in every simulated
dataset's attributes, and compiled into flat arrays by :mod:`gpumem.sim.engine` (latency)
and read by :mod:`gpumem.sim.throughput` (bandwidth). TOML is converted field by field from
the dataclasses' type hints, so a wrong type, a missing field or an unknown key fails with
the field's path; :meth:`SimConfig.validate` then checks the rules between fields. Every
error starts with the path: ``cache[l1d].ways: must divide size / line = 128``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import sys
import types
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import tomli_w

from gpumem.chains import splitmix64

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

POLICIES = ("lru", "fifo", "random", "weighted")
INDEX_FUNCTIONS = ("modulo", "bits", "xor", "table", "hashed")
SCOPES = ("sm", "gpu")


class SimConfigError(ValueError):
    """A config field breaks a rule; the message starts with the field's path."""


def _fail(where: str, rule: str) -> None:
    raise SimConfigError(f"{where}: {rule}")


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


# Bounds that keep a simulation's memory and arithmetic sane whatever a config file says.
#: Every float in a config: finite, and no larger than this in magnitude (a latency or a rate
#: past it is a typo, not a GPU); integers (seeds, address masks) must fit the engine's int64.
MAX_NUMBER = 2 ** 53
#: Bytes of cache and TLB state the engine may allocate for one hierarchy (each worker
#: process holds its own). The engine keeps 16 bytes per line or TLB entry and about 64 per
#: set (arrays, and the lists it builds them from), so this admits about 16 million lines,
#: e.g. a 2 GiB cache of 128-byte lines: over ten times the largest L2 of a real GPU, and a
#: bound on memory by design rather than a MemoryError (or swapping) halfway into a run.
MAX_STATE_BYTES = 256 << 20
#: Bounds on counts that size lists and sweeps (SMs, peer GPUs of a node).
MAX_SMS = 4096
MAX_PEERS = 255


def _max_ways(ways: int | list[int]) -> int:
    """The largest way count, without building a list of one entry per set."""
    return max(ways) if isinstance(ways, list) else ways


def state_bytes(cfg: SimConfig) -> tuple[int, str]:
    """Bytes of state the engine allocates for ``cfg``'s caches and TLBs (see
    :data:`MAX_STATE_BYTES`), and the name of the level that needs the most."""
    sizes = {}
    for c in cfg.caches:
        sizes[f"cache[{c.name}]"] = 16 * (c.size // c.line) + 64 * c.sets
    for t in cfg.tlbs:
        sizes[f"tlb[{t.name}]"] = 16 * t.entries + 64 * t.sets
    biggest = max(sizes, key=sizes.get) if sizes else "cache"
    return sum(sizes.values()), biggest


def _check_numbers(obj: Any, where: str) -> None:
    """Every float anywhere in ``obj`` is finite and within :data:`MAX_NUMBER`, every int
    fits an int64: NaN passes every ``<`` check that follows, and inf or a huge value makes
    garbage latencies."""
    if isinstance(obj, (bool, str)):
        return
    if isinstance(obj, int):
        if not -(1 << 63) <= obj < 1 << 63:
            _fail(where, f"{obj} does not fit a 64-bit integer")
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            _fail(where, f"must be a finite number, got {obj}")
        if abs(obj) > MAX_NUMBER:
            _fail(where, f"{obj:g} is out of range (at most {MAX_NUMBER:.3g} in magnitude)")
    elif dataclasses.is_dataclass(obj):
        for f in fields(obj):
            v = getattr(obj, f.name)
            name = getattr(obj, "name", None)
            sub = f"{where}[{name}]" if name and where in ("cache", "tlb") else where
            _check_numbers(v, f"{sub}.{_toml_key(f)}" if sub else _toml_key(f))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if dataclasses.is_dataclass(v):
                _check_numbers(v, where)
            else:
                _check_numbers(v, f"{where}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _check_numbers(v, f"{where}.{k}")


@dataclass
class SetIndex:
    """How an address picks a set (TOML keys ``index``, ``index_bits``, ``xor_masks``,
    ``index_table`` on the level).

    ``modulo``: block number mod sets. ``bits``: the address bits listed (LSB first) form the
    set number, e.g. ``[7, 8]`` for the texture L1 of Fermi. ``xor``: set bit i is the parity
    of ``address & masks[i]``. ``table``: ``table[block number mod len(table)]``, for mappings
    measured rather than understood (Fermi's L2 TLB). ``hashed``: a fixed pseudo-random
    mapping, every set equally often (seed ``index_seed``), for a cache whose hash is not
    known but whose behaviour is a hash's: a footprint below capacity already overflows the
    sets it loads more than the others (an H200's L1: half of a sequential chase misses at
    93 % of the capacity its latency ladder shows, as balls in bins predict for 4 ways).
    """

    function: str = "modulo"
    bits: list[int] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)
    table: list[int] = field(default_factory=list)
    seed: int = 0

    def hashed_table(self, sets: int, blocks: int) -> list[int]:
        """The ``hashed`` function as a table: a period of at least four times the level's
        ``blocks`` (a power of two), blocks ranked by a 64-bit mix of their number and the
        seed (splitmix64), the sets dealt round the ranking: balanced and deterministic."""
        period = 1 << max(10, (4 * blocks - 1).bit_length())
        salt = self.seed * 0x632BE59BD9B4E019
        order = sorted(range(period), key=lambda b: splitmix64(b ^ salt))
        table = [0] * period
        for rank, b in enumerate(order):
            table[b] = rank % sets
        return table

    def validate(self, where: str, sets: int) -> None:
        if self.function not in INDEX_FUNCTIONS:
            _fail(f"{where}.index", f"must be one of {', '.join(INDEX_FUNCTIONS)}")
        if self.function == "bits":
            if not self.bits:
                _fail(f"{where}.index_bits", "required when index = 'bits'")
            if any(b < 0 or b > 62 for b in self.bits):
                _fail(f"{where}.index_bits", "bits must be in 0..62")
            if 2 ** len(self.bits) != sets:
                _fail(f"{where}.index_bits",
                      f"{len(self.bits)} bits select {2 ** len(self.bits)} sets, not {sets}")
        if self.function == "xor":
            if 2 ** len(self.masks) != sets:
                _fail(f"{where}.xor_masks",
                      f"{len(self.masks)} masks select {2 ** len(self.masks)} sets, not {sets}")
            if any(m <= 0 for m in self.masks):
                _fail(f"{where}.xor_masks", "masks must be positive address masks")
        if self.function == "table":
            if not self.table:
                _fail(f"{where}.index_table", "required when index = 'table'")
            if any(s < 0 or s >= sets for s in self.table):
                _fail(f"{where}.index_table", f"entries must be set numbers 0..{sets - 1}")
            if sorted(set(self.table)) != list(range(sets)):
                _fail(f"{where}.index_table", "every set must appear at least once")


def _validate_ways(where: str, ways: int | list[int], units: int, unit_name: str) -> None:
    if isinstance(ways, list):
        if not ways or any(w <= 0 for w in ways):
            _fail(f"{where}.ways", "a list of ways needs one positive entry per set")
        if sum(ways) != units:
            _fail(f"{where}.ways", f"the ways add up to {sum(ways)}, not {unit_name} = {units}")
    elif ways <= 0 or units % ways:
        _fail(f"{where}.ways", f"must divide {unit_name} = {units}")


def _validate_policy(where: str, policy: str, weights: list[float], max_ways: int) -> None:
    if policy not in POLICIES:
        _fail(f"{where}.policy", f"must be one of {', '.join(POLICIES)}")
    if policy == "weighted":
        if len(weights) != max_ways:
            _fail(f"{where}.way_weights", f"needs one weight per way ({max_ways})")
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            _fail(f"{where}.way_weights", "weights must be >= 0 with a positive sum")


@dataclass
class CacheLevel:
    """One cache level, per SM (``scope = "sm"``) or shared by the GPU (``"gpu"``).

    ``ways`` is an int for equal sets or a list (one entry per set) for unequal sets.
    ``sector`` is the fill granularity (``line`` when unsectored). ``translate`` says the level
    is looked up with a physical address, so the TLBs are consulted before it; a virtually
    tagged level (Maxwell's L1) hits without translation. ``bandwidth`` (bytes per cycle, per
    SM for an SM-scope level, in all for a GPU-scope one; 0 = no limit) caps the throughput
    model. ``requests_per_cycle`` (same scope; 0 = no limit) caps the tag lookups the level
    serves: one per line a warp's load instruction touches (one request carries a sector
    mask), and ``fill_lookups`` more per line it fills on a miss. It is why per-thread
    contiguous loads lose bandwidth as each thread's run grows (an H200 at K = 8 reads 16
    useful bytes per request, a coalesced warp 128): the ILP drop of the H100 plain-load
    study.

    Partitions: a GPU-scope level may be split in ``partitions`` (a power of two) homes
    chosen by the parity of ``address & partition_masks[i]``; an SM's near partition is
    ``sm * partitions // sm_count`` and a hit in another partition costs ``far_latency``.
    ``sm_offsets`` adds a per-SM latency (cyclic over SMs), as distance on the die does.
    ``sm_partition`` gives each SM's near partition instead (cyclic over SMs), as an H200's
    SMs alternate between the two in a pattern that follows the die, not their numbers.
    """

    name: str
    size: int
    line: int
    ways: int | list[int]
    hit_latency: float
    sector: int = 0
    policy: str = "lru"
    way_weights: list[float] = field(default_factory=list)
    index: SetIndex = field(default_factory=SetIndex)
    scope: str = "sm"
    translate: bool = False
    bandwidth: float = 0.0
    requests_per_cycle: float = 0.0
    fill_lookups: float = 1.0
    partitions: int = 1
    partition_masks: list[int] = field(default_factory=list)
    far_latency: float = 0.0
    sm_offsets: list[float] = field(default_factory=list)
    sm_partition: list[int] = field(default_factory=list)

    @property
    def sets(self) -> int:
        if isinstance(self.ways, list):
            return len(self.ways)
        return self.size // (self.line * self.ways)

    @property
    def way_list(self) -> list[int]:
        return list(self.ways) if isinstance(self.ways, list) else [self.ways] * self.sets

    @property
    def sector_size(self) -> int:
        return self.sector or self.line

    def validate(self, where: str) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            _fail(f"{where}.name", "must be a non-empty identifier such as 'l1d'")
        if not _is_pow2(self.line):
            _fail(f"{where}.line", f"must be a power of two, got {self.line}")
        if not _is_pow2(self.sector_size) or self.sector_size > self.line:
            _fail(f"{where}.sector", f"must be a power of two no larger than line ({self.line})")
        if self.line // self.sector_size > 32:
            _fail(f"{where}.sector", "at most 32 sectors per line")
        if self.size <= 0 or self.size % self.line:
            _fail(f"{where}.size", f"must be a positive multiple of line ({self.line})")
        _validate_ways(where, self.ways, self.size // self.line, "size / line")
        _validate_policy(where, self.policy, self.way_weights, _max_ways(self.ways))
        if self.scope not in SCOPES:
            _fail(f"{where}.scope", f"must be one of {', '.join(SCOPES)}")
        if not self.hit_latency >= 0:
            _fail(f"{where}.hit_latency", "must be >= 0 cycles")
        if self.bandwidth < 0:
            _fail(f"{where}.bandwidth", "must be >= 0 bytes per cycle (0 = unlimited)")
        if self.requests_per_cycle < 0:
            _fail(f"{where}.requests_per_cycle", "must be >= 0 lookups per cycle (0 = unlimited)")
        if self.fill_lookups < 0:
            _fail(f"{where}.fill_lookups", "must be >= 0 lookups per line filled")
        if not _is_pow2(self.partitions):
            _fail(f"{where}.partitions", "must be a power of two (1 = unpartitioned)")
        if self.sm_partition and self.partitions == 1:
            _fail(f"{where}.sm_partition", "only a partitioned level has SM homes")
        if self.partitions > 1:
            if self.scope != "gpu":
                _fail(f"{where}.partitions", "only a GPU-scope level can be partitioned")
            if 2 ** len(self.partition_masks) != self.partitions:
                _fail(f"{where}.partition_masks",
                      f"needs log2(partitions) = {self.partitions.bit_length() - 1} masks")
            if any(not 0 <= int(p) < self.partitions for p in self.sm_partition):
                _fail(f"{where}.sm_partition", f"partitions are 0..{self.partitions - 1}")
            if self.far_latency < self.hit_latency:
                _fail(f"{where}.far_latency", "must be >= hit_latency")
        self.index.validate(where, self.sets)


@dataclass
class TlbLevel:
    """One TLB level. ``entries`` = sum of ways; ``ways`` int (equal sets) or list per set.

    ``miss_penalty`` is added to an access's latency when this level misses (cumulative over
    levels: an access missing both L1 and L2 TLBs pays both penalties).
    """

    name: str
    page: int
    entries: int
    ways: int | list[int]
    miss_penalty: float
    policy: str = "lru"
    way_weights: list[float] = field(default_factory=list)
    index: SetIndex = field(default_factory=SetIndex)

    @property
    def sets(self) -> int:
        if isinstance(self.ways, list):
            return len(self.ways)
        return self.entries // self.ways

    @property
    def way_list(self) -> list[int]:
        return list(self.ways) if isinstance(self.ways, list) else [self.ways] * self.sets

    def validate(self, where: str) -> None:
        if not _is_pow2(self.page):
            _fail(f"{where}.page", f"must be a power of two, got {self.page}")
        _validate_ways(where, self.ways, self.entries, "entries")
        _validate_policy(where, self.policy, self.way_weights, _max_ways(self.ways))
        if self.miss_penalty < 0:
            _fail(f"{where}.miss_penalty", "must be >= 0 cycles")
        self.index.validate(where, self.sets)


@dataclass
class Dram:
    """DRAM: unloaded latency (cycles), theoretical bandwidth (GB/s, 10^9 byte/s), the
    fraction of it streams sustain (``efficiency``), writes' extra loss
    (``write_efficiency``, relative to a read stream's) and what a stream mixing reads and
    writes (a copy) loses beyond the two (``mix_efficiency``: the bus turning around; an
    H200's copy reaches about 90 % of what its read and write rates predict).
    ``bulk_efficiency``: the fraction of the peak that bulk (TMA) copies sustain, which need
    not be the loads' (an H200's: 0.90 against 0.95; 0 = ``efficiency``). ``sharpness``:
    the knee where the bytes in flight meet the DRAM's rate (0 = the throughput section's):
    round trips lengthen as the DRAM's queues fill, so the rate bends well before Little's
    law with the unloaded latency reaches the cap (an H200's loads, cp.async and bulk copies
    all bend at about 2.5)."""

    latency: float
    bandwidth_gbs: float = 0.0
    efficiency: float = 1.0
    write_efficiency: float = 1.0
    mix_efficiency: float = 1.0
    bulk_efficiency: float = 0.0
    sharpness: float = 0.0


@dataclass
class Timer:
    """What a clock read adds to each recorded latency, and the noise of real hardware.

    ``overhead`` is reported by the device (as a CUDA device measures it) and subtracted by the
    experiments. ``jitter`` is a Gaussian sigma in cycles; a fraction ``outlier_rate`` of the
    accesses is mis-timed by an exponential delay of mean ``outlier_cycles``.
    ``throughput_jitter`` is the relative sigma of a timed bandwidth run. Harder noise, for
    robustness tests (:mod:`gpumem.sim.noise`): heavy-tailed mis-timings (``tail_*``), a
    measured card's per-level latency spread (``spread``, e.g. ``"h200"``) and a clock step
    after ``clock_step_after`` chases.
    """

    overhead: float = 0.0
    jitter: float = 0.0
    outlier_rate: float = 0.0
    outlier_cycles: float = 0.0
    throughput_jitter: float = 0.0
    tail_rate: float = 0.0
    tail_cycles: float = 0.0
    tail_shape: float = 1.5
    spread: str = ""
    clock_step_after: int = 0
    clock_step_factor: float = 1.0


@dataclass
class SharedMemory:
    """Shared memory per SM: banks, bank width (and the widths the hardware can switch to),
    the latency of a conflict-free access and what each extra conflicting way adds.

    An access by a warp is split by bank; the number of *distinct* bank words hitting the
    busiest bank is the conflict degree n (threads reading one word share it: broadcast).
    ``bytes_per_cycle`` caps an SM, ``warp_bytes_per_cycle`` one warp (its issue rate; 0 = no
    limit), so throughput needs several warps whatever the ILP, as measured on real GPUs.
    ``sharpness`` rounds the knee where many warps meet the SM cap (0: the throughput
    section's); bank queues make it a soft knee on real GPUs (Kepler reaches 91 % of its
    peak at 16 warps, 100 % at 32). Latency =
    ``latency + conflict_cycles * (min(n, conflict_cap) - 1)`` (no cap when 0), or, when
    ``conflict_latencies`` is given, that table's value for n = 1, 2, 4, ... (measured
    curves that are not straight lines, Kepler's; interpolated between powers of two).
    ``remote_latency`` and ``remote_bytes_per_cycle``: loads from another block's shared
    memory in a thread block cluster (distributed shared memory, Hopper); 0 = no clusters.
    ``cluster_latency``: a cluster load (``ld.shared::cluster``) of the block's own shared
    memory, which an H200 serves in 38 cycles against 27 for a plain shared load; 0 = the
    shared-memory latency. ``remote_rate_by_cluster``: the remote rate measured for clusters
    of 2, 4 and 8 blocks, in that order, where it depends on the cluster's size (an H200's:
    17.0, 14.7 and 16.0 B/cycle per SM, as its SMs' network places the blocks); empty =
    ``remote_bytes_per_cycle`` for every size.
    """

    size: int = 49152
    banks: int = 32
    bank_width: int = 4
    modes: list[int] = field(default_factory=lambda: [4])
    latency: float = 30.0
    conflict_cycles: float = 2.0
    conflict_cap: int = 0
    conflict_latencies: list[float] = field(default_factory=list)
    bytes_per_cycle: float = 0.0
    warp_bytes_per_cycle: float = 0.0
    sharpness: float = 0.0
    remote_latency: float = 0.0
    remote_bytes_per_cycle: float = 0.0
    cluster_latency: float = 0.0
    remote_rate_by_cluster: list[float] = field(default_factory=list)

    def remote_rate(self, cluster: int) -> float:
        """Bytes per cycle per SM from another block's shared memory, clusters of ``cluster``."""
        pos = {2: 0, 4: 1, 8: 2}.get(cluster)
        if pos is not None and pos < len(self.remote_rate_by_cluster):
            return self.remote_rate_by_cluster[pos]
        return self.remote_bytes_per_cycle

    def conflict_latency(self, ways: int) -> float:
        """Cycles of one warp access with ``ways``-way bank conflicts."""
        if self.conflict_latencies:
            table = self.conflict_latencies
            pos = min(max(0.0, math.log2(ways)), len(table) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(table) - 1)
            return table[lo] + (table[hi] - table[lo]) * (pos - lo)
        counted = min(ways, self.conflict_cap) if self.conflict_cap else ways
        return self.latency + self.conflict_cycles * (counted - 1)

    @property
    def peak_bytes_per_cycle(self) -> float:
        return self.bytes_per_cycle or float(self.banks * self.bank_width)

    def validate(self, where: str = "smem") -> None:
        if not _is_pow2(self.banks):
            _fail(f"{where}.banks", "must be a power of two")
        if self.bank_width not in (4, 8):
            _fail(f"{where}.bank_width", "must be 4 or 8 bytes")
        if not self.modes or any(m not in (4, 8) for m in self.modes):
            _fail(f"{where}.modes", "bank widths the hardware supports: a list of 4 and/or 8")
        if self.bank_width not in self.modes:
            _fail(f"{where}.modes", f"must include the default bank_width ({self.bank_width})")
        if self.sharpness < 0:
            _fail(f"{where}.sharpness", "must be >= 0 (0: the throughput section's)")
        if self.cluster_latency < 0:
            _fail(f"{where}.cluster_latency", "must be >= 0 cycles")
        if self.remote_latency < 0 or self.remote_bytes_per_cycle < 0:
            _fail(f"{where}.remote_latency", "remote_latency and remote_bytes_per_cycle must "
                  "be >= 0 (0: no distributed shared memory)")
        if len(self.remote_rate_by_cluster) > 3 or any(
                not r > 0 for r in self.remote_rate_by_cluster):
            _fail(f"{where}.remote_rate_by_cluster", "at most 3 positive rates (clusters of "
                  "2, 4, 8)")
        if (self.remote_latency > 0) != (self.remote_bytes_per_cycle > 0):
            _fail(f"{where}.remote_bytes_per_cycle", "give both remote_latency and "
                  "remote_bytes_per_cycle, or neither")
        if self.latency < 0 or self.conflict_cycles < 0 or self.conflict_cap < 0:
            _fail(f"{where}.latency", "latency, conflict_cycles and conflict_cap must be >= 0")
        t = self.conflict_latencies
        if t and (len(t) > 6 or any(b < a for a, b in zip(t, t[1:], strict=False)) or t[0] < 0):
            _fail(f"{where}.conflict_latencies",
                  "cycles for 1, 2, 4, ... 32 ways: at most 6 entries, non-decreasing")


@dataclass
class Throughput:
    """Per-SM limits that shape bandwidth: occupancy and requests in flight.

    ``inflight_sectors_per_sm``: outstanding 32-byte sector requests an SM can track (its
    MSHRs); ``inflight_async_sectors_per_sm`` the same for cp.async (0 = same limit).
    ``issue_bytes_per_cycle``: what one SM's load path can issue per cycle. ``sharpness`` is
    the exponent of the smooth minimum between demand and a cap (large = a sharp knee).
    ``bulk_latency``: the round trip of a TMA bulk copy (issue, DRAM, the mbarrier's
    completion and the waiting thread's wake-up: an H200's is about 1250 cycles against a
    683-cycle load); 0 = the DRAM load latency. ``bulk_bytes_per_cycle``: what an SM's copy
    engine moves into shared memory per cycle, so a chunk lands ``chunk / rate`` after its
    first byte (0 = at once). ``bulk_issue_cycles``: the shortest time between two copies of
    one block, whose single thread waits for a copy before it issues the next (0 = none).

    ``loads_per_thread``: plain loads one thread keeps in flight whatever the code's own ILP
    (0 = the code's): the compiler overlaps a streaming loop's independent iterations until
    the loads' destination registers run out (an H200's 16-byte stream kernels hold 32
    registers: about 3 loads). cp.async has no destination register: its groups in flight
    are the code's, which is why it overtakes plain loads at low occupancy.
    ``async_latency``: what a cp.async round trip adds to a load's (the write into shared
    memory, the commit and the wait). ``iteration_cycles``: what a streaming loop's iteration
    adds to its K plain loads' round trip (the fold of the loaded values and the branch
    before the next loads issue), shared by the K loads: the reason more loads per iteration
    still help a little when the registers already bound those in flight.
    """

    max_warps_per_sm: int = 64
    max_ctas_per_sm: int = 32
    max_threads_per_cta: int = 1024
    inflight_sectors_per_sm: int = 0
    inflight_async_sectors_per_sm: int = 0
    issue_bytes_per_cycle: float = 0.0
    sharpness: float = 8.0
    bulk_latency: float = 0.0
    loads_per_thread: float = 0.0
    async_latency: float = 0.0
    iteration_cycles: float = 0.0
    bulk_bytes_per_cycle: float = 0.0
    bulk_issue_cycles: float = 0.0

    def validate(self, where: str = "throughput") -> None:
        if self.loads_per_thread < 0 or self.async_latency < 0 or self.iteration_cycles < 0:
            _fail(f"{where}.loads_per_thread", "loads_per_thread, async_latency and "
                  "iteration_cycles must be >= 0 (0 = the code's ILP; no extra cycles)")
        if self.bulk_bytes_per_cycle < 0 or self.bulk_issue_cycles < 0:
            _fail(f"{where}.bulk_bytes_per_cycle", "bulk_bytes_per_cycle and "
                  "bulk_issue_cycles must be >= 0 (0 = no limit)")
        if self.bulk_latency < 0:
            _fail(f"{where}.bulk_latency", "must be >= 0 cycles (0 = the DRAM latency)")
        if self.max_warps_per_sm <= 0 or self.max_ctas_per_sm <= 0:
            _fail(f"{where}.max_warps_per_sm", "occupancy limits must be >= 1")
        if self.max_threads_per_cta <= 0 or self.max_threads_per_cta % 32:
            _fail(f"{where}.max_threads_per_cta", "must be a positive multiple of 32")
        if self.issue_bytes_per_cycle < 0:
            _fail(f"{where}.issue_bytes_per_cycle", "must be >= 0 (0 = unlimited)")
        if self.inflight_sectors_per_sm < 0 or self.inflight_async_sectors_per_sm < 0:
            _fail(f"{where}.inflight_sectors_per_sm", "must be >= 0 (0 = unlimited)")
        if self.sharpness <= 0:
            _fail(f"{where}.sharpness", "must be > 0")


@dataclass
class Interconnect:
    """Other GPUs of a simulated node and the link to them (NVLink, PCIe).

    ``peers``: how many other GPUs (0: a lone GPU, no ``peer_access`` probe). A load from a
    peer's memory takes the peer's L2-only path (``cg``: remote data is cached in its owner's
    L2, not in this GPU's caches) plus ``latency`` cycles of link round trip; streams from a
    peer are capped at ``bandwidth_gbs``.
    """

    peers: int = 0
    latency: float = 0.0
    bandwidth_gbs: float = 0.0

    def validate(self, where: str = "interconnect") -> None:
        if not 0 <= self.peers <= MAX_PEERS:
            _fail(f"{where}.peers", f"must be in 0..{MAX_PEERS}")
        if self.latency < 0 or self.bandwidth_gbs < 0:
            _fail(f"{where}.latency", "latency and bandwidth_gbs must be >= 0")
        if self.peers and self.bandwidth_gbs <= 0:
            _fail(f"{where}.bandwidth_gbs", "a node with peers needs the link's bandwidth")


@dataclass
class SimConfig:
    """A simulated GPU: SMs and clock, caches, load paths, TLBs, DRAM, shared memory,
    throughput limits and timer behaviour.

    ``paths`` maps a load flavour (``ca``, ``cg``, ``nc``, ``tex``) to the cache levels it
    looks up, in order; ``path_latency`` adds a fixed pipeline latency to every load of a
    path (Fermi's texture pipeline adds about 100 cycles to hits and misses alike).
    ``page_walk_latency`` is added when every TLB level misses.
    """

    name: str
    arch: str
    compute_capability: str
    sm_count: int
    clock_mhz: float
    caches: list[CacheLevel] = field(metadata={"toml": "cache"})
    paths: dict[str, list[str]]
    dram: Dram
    tlbs: list[TlbLevel] = field(default_factory=list, metadata={"toml": "tlb"})
    timer: Timer = field(default_factory=Timer)
    smem: SharedMemory = field(default_factory=SharedMemory)
    throughput: Throughput = field(default_factory=Throughput)
    interconnect: Interconnect = field(default_factory=Interconnect)
    path_latency: dict[str, float] = field(default_factory=dict)
    page_walk_latency: float = 0.0
    memory_bytes: int = 16 << 30
    base_address: int = 1 << 40
    description: str = ""
    source: str = ""
    seed: int = 0

    # ---- validation -------------------------------------------------------------------
    def validate(self) -> SimConfig:
        _check_numbers(self, "")
        if not 0 < self.sm_count <= MAX_SMS:
            _fail("sm_count", f"must be in 1..{MAX_SMS}")
        if self.clock_mhz <= 0:
            _fail("clock_mhz", "must be > 0")
        if not self.caches:
            _fail("cache", "at least one cache level is required")
        names = [c.name for c in self.caches]
        for i, c in enumerate(self.caches):
            c.validate(f"cache[{c.name or i}]")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            _fail("cache", f"duplicate level names {sorted(dup)}")
        if not self.paths:
            _fail("paths", "at least one load path (e.g. ca = ['l1d', 'l2']) is required")
        for p, levels in self.paths.items():
            if not levels:
                _fail(f"paths.{p}", "must list at least one cache level")
            for lv in levels:
                if lv not in names:
                    _fail(f"paths.{p}", f"unknown cache level '{lv}' (levels: {', '.join(names)})")
        for p in self.path_latency:
            if p not in self.paths:
                _fail(f"path_latency.{p}", f"no such path (paths: {', '.join(self.paths)})")
        for i, t in enumerate(self.tlbs):
            t.validate(f"tlb[{t.name or i}]")
        pages = [t.page for t in self.tlbs]
        if pages and any(p < pages[0] for p in pages):
            _fail("tlb", "the first TLB level must have the smallest page")
        if self.dram.latency < 0 or self.dram.bandwidth_gbs < 0:
            _fail("dram.latency", "latency and bandwidth_gbs must be >= 0")
        if not 0 < self.dram.write_efficiency <= 1 or not 0 < self.dram.efficiency <= 1:
            _fail("dram.efficiency", "efficiency and write_efficiency must be in (0, 1]")
        if self.dram.sharpness < 0:
            _fail("dram.sharpness", "must be >= 0 (0: the throughput section's)")
        if not 0 <= self.dram.bulk_efficiency <= 1:
            _fail("dram.bulk_efficiency", "must be in [0, 1] (0: efficiency)")
        if not 0 < self.dram.mix_efficiency <= 1:
            _fail("dram.mix_efficiency", "must be in (0, 1]")
        if not 0 <= self.timer.outlier_rate < 1:
            _fail("timer.outlier_rate", "must be in [0, 1)")
        if self.timer.jitter < 0 or self.timer.throughput_jitter < 0:
            _fail("timer.jitter", "jitter and throughput_jitter must be >= 0")
        if not 0 <= self.timer.tail_rate < 1 or self.timer.tail_cycles < 0:
            _fail("timer.tail_rate", "must be in [0, 1), with tail_cycles >= 0")
        from gpumem.sim.noise import SPREADS

        if self.timer.spread and self.timer.spread not in SPREADS:
            _fail("timer.spread", f"unknown spread model '{self.timer.spread}' (choose from: "
                  f"{', '.join(SPREADS)})")
        if self.timer.clock_step_factor <= 0:
            _fail("timer.clock_step_factor", "must be > 0")
        if self.page_walk_latency < 0:
            _fail("page_walk_latency", "must be >= 0 cycles")
        for p, v in self.path_latency.items():
            if v < 0:
                _fail(f"path_latency.{p}", "must be >= 0 cycles")
        if self.timer.overhead < 0 or self.timer.outlier_cycles < 0:
            _fail("timer.overhead", "overhead and outlier_cycles must be >= 0 cycles")
        if self.timer.tail_shape <= 0 or self.timer.clock_step_after < 0:
            _fail("timer.tail_shape", "tail_shape must be > 0, clock_step_after >= 0")
        if self.memory_bytes <= 0 or self.base_address < 0:
            _fail("memory_bytes", "memory_bytes must be > 0 and base_address >= 0")
        if self.base_address + self.memory_bytes >= 1 << 62:
            _fail("base_address", "base_address + memory_bytes must stay below 2**62 "
                  "(the engine's addresses are 64-bit integers)")
        need, biggest = state_bytes(self)
        if need > MAX_STATE_BYTES:
            _fail(biggest, f"the caches and TLBs would need {need / 2**20:,.0f} MiB of "
                  f"simulator state (16 B per line or entry), more than the "
                  f"{MAX_STATE_BYTES >> 20} MiB limit (about 16 million lines, e.g. a 2 GiB "
                  f"cache of 128 B lines)")
        self.smem.validate()
        self.throughput.validate()
        self.interconnect.validate()
        if self.base_address % (max(pages) if pages else 4096):
            _fail("base_address", "must be aligned to the largest TLB page")
        return self

    # ---- derived facts ----------------------------------------------------------------
    def level(self, name: str) -> CacheLevel:
        for c in self.caches:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def l2_bytes(self) -> int:
        """Largest GPU-scope cache: what a CUDA device reports as its L2 size."""
        gpu = [c.size for c in self.caches if c.scope == "gpu"]
        return max(gpu) if gpu else 0

    @property
    def page_bytes(self) -> int:
        return self.tlbs[0].page if self.tlbs else 0

    def digest(self) -> str:
        """SHA-256 of the canonical TOML: identifies the simulated device in result keys."""
        return hashlib.sha256(self.to_toml().encode()).hexdigest()

    # ---- TOML ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return _to_table(self)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_toml` to ``path`` atomically, replacing a symlink there rather
        than writing through it (:mod:`gpumem.safe_write`)."""
        from gpumem.safe_write import write_text

        write_text(path, self.to_toml())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimConfig:
        return _from_table(cls, data, "").validate()

    @classmethod
    def from_toml(cls, text: str) -> SimConfig:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SimConfigError(f"not valid TOML: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> SimConfig:
        p = Path(path)
        try:
            text = p.read_bytes().decode("utf-8")
        except OSError as e:
            raise SimConfigError(f"cannot read {p}: {e.strerror or e}") from None
        except UnicodeDecodeError as e:  # TOML is UTF-8 text: a binary file is not a config
            raise SimConfigError(f"{p}: not a TOML text file (not UTF-8: byte {e.start} is "
                                 f"0x{e.object[e.start]:02x})") from None
        try:
            return cls.from_toml(text)
        except SimConfigError as e:
            raise SimConfigError(f"{p}: {e}") from None


# ---------------------------------------------------------------------------------------------
# TOML <-> dataclasses, driven by the type hints
# ---------------------------------------------------------------------------------------------

_INDEX_KEYS = {"function": "index", "bits": "index_bits", "masks": "xor_masks",
               "table": "index_table", "seed": "index_seed"}


def _toml_key(f: dataclasses.Field) -> str:
    return f.metadata.get("toml", f.name)


def _to_table(obj: Any) -> Any:
    if isinstance(obj, SetIndex):
        return {_INDEX_KEYS[k]: v for k, v in dataclasses.asdict(obj).items()
                if k == "function" or v}
    if dataclasses.is_dataclass(obj):
        out: dict[str, Any] = {}
        for f in fields(obj):
            v = getattr(obj, f.name)
            if isinstance(v, SetIndex):
                out.update(_to_table(v))
            else:
                out[_toml_key(f)] = _to_table(v)
        return out
    if isinstance(obj, list):
        return [_to_table(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _to_table(v) for k, v in obj.items()}
    return obj


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, getattr(types, "UnionType", Union)):
        options = get_args(tp)
        for opt in options:  # int | list[int]: pick by the value's shape
            if get_origin(opt) is list and isinstance(value, list):
                return _convert(opt, value, where)
            if get_origin(opt) is None and not isinstance(value, list):
                return _convert(opt, value, where)
        _fail(where, f"must be {' or '.join(_type_name(o) for o in options)}")
    if dataclasses.is_dataclass(tp):
        return _from_table(tp, value, where + ".")
    if origin is list:
        if not isinstance(value, list):
            _fail(where, f"must be a list, got {type(value).__name__} {value!r}")
        return [_convert(get_args(tp)[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            _fail(where, f"must be a table, got {type(value).__name__}")
        return {str(k): _convert(get_args(tp)[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(where, f"must be a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            _fail(where, f"must be a finite number, got {value}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(where, f"must be an integer, got {type(value).__name__} {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            _fail(where, f"must be true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            _fail(where, f"must be a string, got {type(value).__name__} {value!r}")
        return value
    return value


def _from_table(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        _fail(where.rstrip(".") or "config", "must be a table")
    data = dict(data)
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        hint = hints[f.name]
        if hint is SetIndex:
            idx = {k: data.pop(v) for k, v in _INDEX_KEYS.items() if v in data}
            kwargs[f.name] = _from_table(SetIndex, idx, where)
            continue
        key = _toml_key(f)
        if key in data:
            value = data.pop(key)
            if get_origin(hint) is list and dataclasses.is_dataclass(get_args(hint)[0]):
                if not isinstance(value, list):
                    _fail(f"{where}{key}", "must be a list of tables ([[...]])")
                kwargs[f.name] = [
                    _from_table(get_args(hint)[0], v,
                                f"{where}{key}[{v.get('name', i) if isinstance(v, dict) else i}].")
                    for i, v in enumerate(value)]
            else:
                kwargs[f.name] = _convert(hint, value, f"{where}{key}")
        elif f.default is MISSING and f.default_factory is MISSING:
            _fail(f"{where}{key}", "is required")
    if data:
        _fail(f"{where}{sorted(data)[0]}", "unknown field")
    return cls(**kwargs)


