"""The device contract: what every device (CUDA GPU, built-in simulator, Accel-Sim) offers.

A device runs a small, fixed set of *probes*; experiments are written against probes only, so
one experiment runs unchanged on hardware and on any simulator, and both give datasets of the
same schema. A device that lacks a probe raises :class:`gpumem.contracts.errors.ProbeUnsupported`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gpumem.contracts.chains import ORDERS

#: Probe names. Experiments declare which they need; devices say which they implement.
#: ``peer_access``: ``pointer_chase`` and ``stream`` also take ``peer``, the index of another
#: GPU of the node whose memory holds the data (NVLink / PCIe loads); ``DeviceInfo.extra
#: ["peers"]`` lists the indices this device can reach, its own included.
#: ``dsmem``: loads from the shared memory of another block of a thread block cluster
#: (distributed shared memory, sm_90+). ``bulk_copy``: global -> shared streaming with 1-D
#: bulk copies of the tensor memory accelerator (TMA, sm_90+).
#: ``slice_contention``: ``pointer_chase`` also takes ``hammer`` and ``hammer_sms``, lines other
#: SMs load over and over while the chase runs (an L2 slice's queue, seen from the chase).
PROBES = ("pointer_chase", "stream", "async_copy", "smem", "peer_access", "dsmem",
          "bulk_copy", "slice_contention")

#: What each probe needs of the hardware, in the words of a skipped experiment's reason.
PROBE_NEEDS = {
    "pointer_chase": "timed dependent loads (pointer chases)",
    "stream": "streaming loads",
    "async_copy": "cp.async (compute capability 8.0 or newer)",
    "smem": "shared-memory loads",
    "peer_access": "another GPU of the node it can load from (peer access over NVLink or PCIe)",
    "dsmem": "thread block clusters (distributed shared memory, compute capability 9.0 or "
             "newer)",
    "bulk_copy": "the TMA's bulk copies (compute capability 9.0 or newer)",
    "slice_contention": "loads from other SMs beside a chase (a model of an L2 slice's queue)",
}

#: Lines each hammering SM keeps in flight (``ChaseRequest.hammer``): the CUDA kernel's 16
#: warps, four loads each; a simulator's slice queue takes the same.
HAMMER_INFLIGHT = 64
#: The most lines one chase's hammers load (they are staged in shared memory).
HAMMER_MAX_LINES = 64

#: Address orderings of a streaming probe (which element each thread's k-th load reads):
#: ``coalesced`` - a warp's threads read consecutive elements, the k-th load of a thread is
#: a whole grid-slice further (each load instruction fully coalesced);
#: ``thread`` - each thread reads ``ilp`` consecutive elements (per-thread contiguous);
#: ``warp`` - each warp reads ``ilp`` consecutive warp-wide slices (warp contiguous).
STREAM_ORDERS = ("coalesced", "thread", "warp", "block")
STREAM_KINDS = ("read", "write", "copy")

#: Load paths a pointer chase can take (the cache operator or fetch path of the load).
LOAD_PATHS = ("ca", "cg", "nc", "tex")


def product_slug(name: str) -> str:
    """A GPU model's name as device keys and the learned allowances spell it (``NVIDIA H100
    80GB HBM3``: ``nvidia-h100-80gb-hbm3``): letters and digits, hyphens between."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


@dataclass(frozen=True)
class DeviceInfo:
    """Static properties of a device, measured devices and simulated ones alike.

    ``kind`` is ``cuda``, ``sim`` or another backend's or simulator's name. Sizes in bytes,
    clocks in MHz. ``key`` names the device in result paths and manifests.
    """

    kind: str
    name: str
    compute_capability: str
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    clock_mhz: float
    index: int = 0
    memory_clock_mhz: float = 0.0
    memory_bus_bits: int = 0
    uuid: str = ""
    driver: str = ""
    runtime: str = ""
    peak_bandwidth_gbs: float = 0.0
    smem_bank_modes: tuple[int, ...] = (4,)
    load_paths: tuple[str, ...] = ("ca", "cg", "nc")
    #: Simulated cycles per wall-clock second of one worker, declared by a slow device (a
    #: cycle-level simulator: an Accel-Sim H200 config runs about 2,000 while a thread waits
    #: on memory); 0 for one fast enough that plans need no sizing (hardware, the built-in
    #: simulator). Experiments size their plans down where it is set (``RunContext.slow``).
    cycles_per_second: float = 0.0
    #: Other properties, recorded with the device. ``l2_random_sets`` (1): the device puts
    #: each line into an L2 set at random (Accel-Sim's random partition indexing), so its
    #: misses ramp over a range of footprints; a slow device's latency ladder times more
    #: lines around the L2's size there (:data:`gpumem.experiments.latency.RAMP_RECORD`).
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def product(self) -> str:
        """The GPU model as the learned allowances name it (:func:`product_slug`)."""
        return product_slug(self.name)

    @property
    def key(self) -> str:
        """Filesystem-safe identifier: kind, index or config, name and UUID prefix."""
        slug = product_slug(self.name)
        if slug.startswith(self.kind + "-"):
            slug = slug[len(self.kind) + 1:]
        tail = re.sub(r"[^A-Za-z0-9]", "", self.uuid.removeprefix(self.kind + "-"))[:8].lower()
        parts = [f"{self.kind}{self.index}" if self.kind == "cuda" else self.kind, slug]
        if tail:
            parts.append(tail)
        return "-".join(p for p in parts if p)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        return d


#: Bytes allocated in front of a chain for each ``ChaseRequest.placement``. The pads were
#: picked on an H200 (GPU-55d37422, benchmarks/l2_near_probe.py): chains behind these four
#: ended the near L2 partition at different footprints (25.5-29.3 MB), where pads of 2-14 MB
#: or 258-2050 MB behaved like one of them.
PLACEMENT_PADS = (0, 66 << 20, 130 << 20, 1026 << 20)
#: Loads in flight a one-thread warm-up may keep (``ChaseRequest.warm_ilp``; 1: dependent).
WARM_ILPS = (1, 8)


@dataclass(frozen=True)
class ChaseRequest:
    """One pointer chase: a single thread walks a chain over ``footprint`` bytes.

    ``stride`` is the distance between consecutive chain elements (``order="sequential"``) or
    the block size visited once per pass (``order="random"``), see :mod:`gpumem.contracts.chains`.
    ``warmup`` accesses run untimed first (0 = cold start); ``record`` accesses are timed
    individually. ``path`` is the load flavour: ``ca`` (L1-cached global), ``cg`` (L2 only),
    ``nc`` (read-only path) or ``tex`` (texture fetch). ``sm`` picks the SM where it matters.
    ``order="pattern"`` visits the byte offsets in ``pattern`` cyclically. ``peer`` puts the
    chain in another GPU's memory (probe ``peer_access``; -1: this device's).
    ``placement`` picks where the chain is allocated: ``PLACEMENT_PADS[placement]`` bytes are
    held in front of it, so the same chain lands on other physical pages (an H200's near L2
    partition ended anywhere from 25 to 31 MB depending on them).
    ``warm_threads`` > 1 lets a device walk the warm-up with that many threads on the chase's
    SM (:func:`gpumem.contracts.chains.warm_segments`): first, by one thread in chain order, the
    warm-up's accesses to the lines the chase will record, then all the others as chain-order
    segments at once. Every line is touched as often and from the same SM, and no other line
    is touched before a recorded one, so a cache whose eviction depends on which lines came
    after a line (LRU, FIFO, the H200's L2 and its near copies) ends in the state a one-thread
    warm-up leaves for the recorded lines. An H200 took 70 ms per SM for one thread to warm
    45 MB of L2. A device may walk it with one thread: the recorded accesses are the same.
    ``warm_ilp`` (:data:`WARM_ILPS`) > 1 lets a device walk the warm-up with one thread on the
    chase's SM in chain order, that many loads in flight (a sequential or random chain's
    addresses follow from the position, not from the loaded value): the warm-up's accesses
    to the lines the chase records walked dependently, as ever, every other line touched
    once, in the chase's order to within a window of ``warm_ilp``, in a fraction of the
    time. A device may walk it all dependently: the recorded accesses are the same.
    ``hammer`` (probe ``slice_contention``): byte offsets of whole lines of the chain's buffer
    that one block on each SM of ``hammer_sms`` loads over and over through the L2 only
    (``.cg``, a warp a line, :data:`HAMMER_INFLIGHT` lines in flight an SM) from before the
    chase's warm-up until its record is taken: a line the chase visits that shares an L2
    slice with them waits behind their requests, one elsewhere does not.
    """

    footprint: int
    stride: int
    record: int
    warmup: int = 0
    order: str = "sequential"
    path: str = "ca"
    element: int = 4
    seed: int = 0
    sm: int = 0
    fine_grained: bool = True
    pattern: tuple[int, ...] = ()
    peer: int = -1
    placement: int = 0
    warm_threads: int = 1
    warm_ilp: int = 1
    hammer: tuple[int, ...] = ()
    hammer_sms: tuple[int, ...] = ()

    def validate(self) -> None:
        self._validate_hammer()
        if not 1 <= self.warm_threads <= 1024:
            raise ValueError("warm_threads must be 1 ... 1024")
        if self.warm_ilp not in WARM_ILPS:
            raise ValueError(f"warm_ilp must be one of {WARM_ILPS}")
        if self.warm_ilp > 1 and self.warm_threads > 1:
            raise ValueError("a warm-up is walked by many threads or with loads in flight, "
                             "not both")
        if not 0 <= self.placement < len(PLACEMENT_PADS):
            raise ValueError(f"placement must be 0 ... {len(PLACEMENT_PADS) - 1}")
        if self.peer < -1:
            raise ValueError("peer must be a device index, or -1 for the device's own memory")
        if self.order == "pattern":
            from gpumem.contracts.chains import validate_pattern

            validate_pattern(self.pattern, self.footprint, self.element)
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.path not in LOAD_PATHS:
            raise ValueError(f"path must be one of {LOAD_PATHS}, got {self.path!r}")
        if self.element not in (4, 8):
            raise ValueError("element must be 4 or 8 bytes")
        if self.stride <= 0 or self.stride % self.element:
            raise ValueError(f"stride must be a positive multiple of {self.element} bytes")
        if self.footprint < self.stride or self.footprint % self.element:
            raise ValueError("footprint must be >= stride and a multiple of the element size")
        if self.record <= 0 or self.warmup < 0:
            raise ValueError("record must be > 0 and warmup >= 0")

    def _validate_hammer(self) -> None:
        if not self.hammer and not self.hammer_sms:
            return
        if not self.hammer or not self.hammer_sms:
            raise ValueError("hammer and hammer_sms go together: lines, and the SMs that load "
                             "them")
        if len(self.hammer) > HAMMER_MAX_LINES:
            raise ValueError(f"hammer holds at most {HAMMER_MAX_LINES} lines")
        if any(o < 0 or o + 128 > self.footprint or o % 128 for o in self.hammer):
            raise ValueError("hammer lines must be whole 128 B lines inside the footprint")
        if len(set(self.hammer_sms)) != len(self.hammer_sms) or min(self.hammer_sms) < 0:
            raise ValueError("hammer_sms must be distinct SM numbers")
        if self.sm in self.hammer_sms:
            raise ValueError("the chase's own SM cannot hammer")
        if not self.fine_grained or self.peer != -1 or self.warm_threads > 1:
            raise ValueError("a hammered chase is fine-grained, in this device's memory, "
                             "warmed by its own thread")


@dataclass
class ChaseResult:
    """Per-access results of a chase.

    ``latency`` is in cycles as read by the device's timer, *including* ``timer_overhead``
    (experiments subtract it, so the subtraction is visible in the data). ``index`` is the
    element each access read. ``end_ok`` says the chase ended on the element the chain
    predicts (a check against skipped or reordered loads). ``sm`` is the SM it ran on.
    """

    latency: np.ndarray
    index: np.ndarray
    timer_overhead: float
    end_ok: bool = True
    sm: int = 0
    #: SMs whose hammering block had started when the chase began (``ChaseRequest.hammer``)
    hammered: int = 0

    @property
    def mean(self) -> float:
        """Mean cycles per access, timer overhead removed (a mean chase records only this)."""
        return float(np.mean(self.latency)) - self.timer_overhead


@dataclass(frozen=True)
class StreamRequest:
    """A bandwidth run: ``ctas`` x ``threads`` threads stream over ``footprint`` bytes.

    Each thread issues ``ilp`` independent loads of ``width`` bytes per iteration, in the
    address ``order`` of :data:`STREAM_ORDERS`, through load ``path``; ``kind`` is read,
    write or copy (read one buffer, write another). ``work`` is the bytes each direction
    moves in total (0: one pass over the footprint), so a sweep over ``ilp`` at fixed work
    changes concurrency, not the amount moved. ``reverse`` walks the buffer backwards. For
    the ``async_copy`` probe ``ilp`` is the number of cp.async groups in flight per thread.
    ``peer`` reads another GPU's memory (probe ``peer_access``; -1: this device's).
    ``share`` (order ``block`` only): blocks that read each slice. The grid's blocks read
    ``ctas // share`` slices, block b the (b mod that)-th, so a slice is re-read by blocks on
    other SMs, as RRZE gpu-benches' gpu-l2-cache spreads its re-reads (an L2 that keeps a
    copy of a line near each partition serves those from near); 1: each block its own.
    """

    footprint: int
    ctas: int
    threads: int
    ilp: int = 1
    width: int = 4
    path: str = "cg"
    order: str = "coalesced"
    kind: str = "read"
    work: int = 0
    reverse: bool = False
    seed: int = 0
    peer: int = -1
    share: int = 1

    @property
    def bytes_per_direction(self) -> int:
        return self.work or self.footprint

    @property
    def slices(self) -> int:
        """Distinct slices the blocks read (order ``block``): ``ctas // share``, at least 1."""
        return max(1, self.ctas // self.share)

    def validate(self) -> None:
        if self.order not in STREAM_ORDERS:
            raise ValueError(f"order must be one of {STREAM_ORDERS}, got {self.order!r}")
        if self.kind not in STREAM_KINDS:
            raise ValueError(f"kind must be one of {STREAM_KINDS}, got {self.kind!r}")
        if self.path not in LOAD_PATHS:
            raise ValueError(f"path must be one of {LOAD_PATHS}, got {self.path!r}")
        if self.width not in (4, 8, 16):
            raise ValueError("width must be 4, 8 or 16 bytes")
        if self.ctas <= 0 or self.threads <= 0 or self.ilp <= 0:
            raise ValueError("ctas, threads and ilp must be >= 1")
        if self.footprint < self.width * self.threads or self.work < 0:
            raise ValueError("footprint must hold at least one element per thread")
        if self.peer < -1:
            raise ValueError("peer must be a device index, or -1 for the device's own memory")
        if self.share < 1 or (self.share > 1 and self.order != "block"):
            raise ValueError("share must be >= 1, and above 1 only with order 'block'")


@dataclass(frozen=True)
class BulkRequest:
    """HBM -> shared memory with bulk copies: ``ctas_per_sm`` blocks per SM, each keeping
    ``stages`` copies of ``chunk`` bytes in flight (one thread issues them; the TMA moves
    the data). ``work`` bytes in all (0: one pass over ``footprint``)."""

    footprint: int
    chunk: int
    stages: int
    ctas_per_sm: int = 1
    work: int = 0
    seed: int = 0

    @property
    def bytes_per_direction(self) -> int:
        return self.work or self.footprint

    @property
    def inflight_per_sm(self) -> int:
        """Bytes each SM asks for before the first copy lands."""
        return self.ctas_per_sm * self.stages * self.chunk

    def validate(self) -> None:
        if self.chunk < 16 or self.chunk % 16:
            raise ValueError("chunk must be a positive multiple of 16 bytes")
        if not 1 <= self.stages <= 16 or self.ctas_per_sm < 1:
            raise ValueError("stages must be 1..16 and ctas_per_sm >= 1")
        if self.footprint < self.chunk or self.work < 0:
            raise ValueError("footprint must hold at least one chunk")


@dataclass
class StreamResult:
    """What a bandwidth run moved and how long it took (``bytes`` counts read + written)."""

    bytes: int
    seconds: float
    cycles: float

    @property
    def gbs(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class SmemRequest:
    """Shared-memory access by ``warps`` warps per SM, thread t at word ``t * stride``.

    ``width`` bytes per access, ``bank_mode`` the bank width to run in (4 or 8 bytes; 8 only
    where the hardware has the mode). ``kind``: ``latency`` (one warp, dependent loads:
    cycles per access) or ``throughput`` (``warps`` x ``ilp`` independent loads per SM:
    bytes per cycle per SM).
    """

    stride: int
    width: int = 4
    bank_mode: int = 4
    warps: int = 1
    ilp: int = 1
    kind: str = "latency"
    iterations: int = 64
    seed: int = 0

    def validate(self) -> None:
        if self.stride < 0:
            raise ValueError("stride must be >= 0 words")
        if self.width not in (4, 8) or self.bank_mode not in (4, 8):
            raise ValueError("width and bank_mode must be 4 or 8 bytes")
        if self.kind not in ("latency", "throughput"):
            raise ValueError("kind must be 'latency' or 'throughput'")
        if self.warps <= 0 or self.ilp <= 0 or self.iterations <= 0:
            raise ValueError("warps, ilp and iterations must be >= 1")


#: The largest thread block cluster the dsmem experiments form (the largest portable size),
#: where a load's latency is measured rank by rank.
LARGEST_CLUSTER = 8


@dataclass(frozen=True)
class DsmemRequest:
    """Loads from distributed shared memory: blocks in clusters of ``cluster``, each reading
    the shared memory of the block ``distance`` ranks further in its cluster (0: its own,
    through the same cluster-wide load instruction).

    ``kind``: ``latency`` (one thread, dependent loads: cycles per load) or ``throughput``
    (``warps`` warps per block, one block per SM, ``ilp`` independent coalesced 4-byte loads
    per thread per iteration: bytes per cycle per SM).
    """

    cluster: int = 2
    distance: int = 1
    kind: str = "latency"
    warps: int = 1
    ilp: int = 1
    seed: int = 0

    def validate(self) -> None:
        if self.cluster not in (1, 2, 4, 8):
            raise ValueError("cluster must be 1, 2, 4 or 8 blocks (the portable sizes)")
        if not 0 <= self.distance < self.cluster:
            raise ValueError("distance must be 0 (own block) .. cluster - 1")
        if self.kind not in ("latency", "throughput"):
            raise ValueError("kind must be 'latency' or 'throughput'")
        if not 1 <= self.warps <= 32 or self.ilp not in (1, 2, 4, 8):
            raise ValueError("warps must be 1..32 and ilp 1, 2, 4 or 8")


@dataclass
class SmemResult:
    """``latency``: cycles per access (timer overhead removed); ``bytes_per_cycle``: per SM."""

    latency: float
    bytes_per_cycle: float


@dataclass(frozen=True)
class KernelSource:
    """CUDA C++ source of one probe's kernel, as an architecture plugin supplies it."""

    code: str
    name: str
    options: tuple[str, ...] = ()


#: ``kernel_source(probe)`` -> the plugins' kernel for that probe, or ``None``.
KernelLookup = Callable[[str], "KernelSource | None"]


class Device(ABC):
    """An opened device. Use as a context manager, or call :meth:`close`."""

    #: ``measured`` for hardware, ``simulated`` for simulators (the CF ``source`` attribute).
    source: str = "measured"

    def __init__(self, info: DeviceInfo, arch: str) -> None:
        self.info = info
        self.arch = arch

    @property
    @abstractmethod
    def probes(self) -> frozenset[str]:
        """Names of the probes this device implements."""

    def unmodelled(self) -> dict[str, str]:
        """Findings this device cannot give a meaningful value for (finding name or fnmatch
        pattern -> why): a simulator whose config leaves unset what would model them. A
        run marks them ``not modelled``. Hardware models everything: empty."""
        return {}

    def lacks(self, probes: set[str] | frozenset[str]) -> str:
        """Why an experiment needing ``probes`` (those this device lacks) cannot run here:
        one line for the skipped experiment ("needs cp.async (compute capability 8.0 or
        newer), which sim SM7_QV100 (compute capability 7.0) does not offer")."""
        needs = " and ".join(PROBE_NEEDS.get(p, f"the {p} probe") for p in sorted(probes))
        return (f"needs {needs}, which {self.info.name} (compute capability "
                f"{self.info.compute_capability}) does not offer")

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        """Fine-grained (or, with ``fine_grained=False``, mean) pointer chase."""
        raise self._unsupported("pointer_chase")

    def stream(self, request: StreamRequest) -> StreamResult:
        """Streaming loads / stores / copies at a given concurrency."""
        raise self._unsupported("stream")

    def async_copy(self, request: StreamRequest) -> StreamResult:
        """Streaming with asynchronous copies (cp.async) into shared memory."""
        raise self._unsupported("async_copy")

    def smem(self, request: SmemRequest) -> SmemResult:
        """Strided shared-memory access: latency or throughput."""
        raise self._unsupported("smem")

    def dsmem(self, request: DsmemRequest) -> SmemResult:
        """Loads from another block's shared memory in a cluster: latency or throughput."""
        raise self._unsupported("dsmem")

    def bulk_copy(self, request: BulkRequest) -> StreamResult:
        """Streaming global memory into shared memory with TMA bulk copies."""
        raise self._unsupported("bulk_copy")

    def _unsupported(self, probe: str) -> Exception:
        from gpumem.contracts.errors import ProbeUnsupported

        return ProbeUnsupported(f"{self.info.kind} device has no {probe} probe")

    def provenance(self) -> dict[str, Any]:
        """Attributes describing the device's state now (clocks, throttling, versions...)."""
        return {}

    def point_state(self) -> dict[str, float]:
        """Cheap readings taken before and after every sweep point, stored per point
        (hardware: SM and memory clocks, clock-event reasons, ``throttled``, temperature,
        power, the other processes on the GPU). Empty where nothing can change between
        points (simulators, unless one plays a neighbour)."""
        return {}

    def neighbours(self) -> list[Any] | None:
        """The other processes on the device now (:class:`gpumem.contracts.contention.Neighbour`),
        ``None`` where the device cannot list them. A device that can also reports them per
        point in :meth:`point_state` (``other_processes``, ``other_active_processes``)."""
        return None

    def estimate_seconds(self, request: Any) -> float | None:
        """Wall seconds the probe call ``request`` will take here, for a device that
        declares itself slow (``info.cycles_per_second``): the runner prices a plan with it
        before running it (:mod:`gpumem.run.pace`). Raises what the probe would raise for a
        request it refuses (``PointSkipped``, ``ProbeUnsupported``). ``None``: not known."""
        return None

    def point_counters(self) -> dict[str, float]:
        """Cumulative counts the device keeps (a simulator's runs, deadlock re-runs, seconds),
        read before and after every point: what each point added is kept with the point,
        and the run's provenance totals it over the points wherever they ran (a worker
        process's device counts its own). A count named ``*_seconds`` is time: totalled, not
        kept per point (it differs from run to run). Empty by default."""
        return {}

    def config_toml(self) -> str | None:
        """The built-in simulator's TOML config of this device, kept in every results file
        (``gpumem_sim_config``) so that the run can be simulated again; ``None`` for a device
        that has none (hardware, another simulator)."""
        return None

    def reopen_spec(self) -> dict[str, Any] | None:
        """Picklable recipe to open this same device in a worker process, or ``None`` when the
        device must stay in this process (the runner then runs its points here, in order)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the device."""

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Discovery:
    """What a backend found: devices, and why it found none when it found none."""

    devices: list[DeviceInfo]
    message: str = ""


class DeviceBackend(ABC):
    """A kind of hardware gpumem can discover and open, such as ``cuda``."""

    name: str = ""
    summary: str = ""

    @abstractmethod
    def discover(self) -> Discovery:
        """List devices; never raises for a missing driver or library (say so in ``message``)."""

    @abstractmethod
    def open(self, index: int, arch: str, kernel_source: KernelLookup | None = None) -> Device:
        """Open device ``index`` for measuring ``arch``; raise DeviceUnavailable if impossible.

        ``kernel_source(probe)``: the architecture plugins' kernel for a probe, or ``None``
        for the backend's own (the runner passes one that asks each plugin's
        ``gpumem_kernel_source`` in turn and names a plugin that fails)."""
