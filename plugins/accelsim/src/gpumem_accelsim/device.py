"""``AccelSimDevice``: gpumem's probes answered by running Accel-Sim on synthetic traces.

Every probe call writes its traces (:mod:`gpumem_accelsim.traces`) and the two option files
into a fresh temporary directory, runs the binary once there and reads the cycle counts of
its kernels from the log (:mod:`gpumem_accelsim.stats`). Nothing is shared between calls, so
calls can run in parallel worker processes and give the same answer in any order.

What Accel-Sim can and cannot say:

* it reports cycles per *kernel*, not per load, so a pointer chase gives a mean latency
  (``fine_grained=False``) and a fine-grained request raises ``ProbeUnsupported``: per-access
  data would have to be made up;
* streams time the whole grid (``timed`` minus ``empty`` kernel), so bandwidth is exact in
  simulated cycles; the seconds use the core clock of the config;
* there is no shared-memory or ``cp.async`` probe (the traces have no form for them yet).

A run is deterministic (the simulator seeds its own generator with ``srand(1)``), so a request
already answered in this process is answered again from memory: repeats of a point cost one
simulation, and give the same numbers a second run would.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gpumem.api import (
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceInfo,
    DeviceUnavailable,
    PointSkipped,
    ProbeUnsupported,
    StreamRequest,
    StreamResult,
)

from gpumem_accelsim.config import GPGPUSIM, TRACE, AccelSimConfig, AccelSimConfigError
from gpumem_accelsim.locate import run_group
from gpumem_accelsim.pace import PACE_ENV, Pace, PaceError
from gpumem_accelsim.pace import cache_key as pace_key
from gpumem_accelsim.pace import cached as cached_pace
from gpumem_accelsim.pace import declared as declared_pace
from gpumem_accelsim.pace import keep as keep_pace
from gpumem_accelsim.stats import AccelSimLog, AccelSimRunError, parse_log
from gpumem_accelsim.traces import (
    L1_WARM_WARPS,
    MAX_WARP_INSTS,
    WARP,
    TraceSet,
    TraceTooLarge,
    chase_trace,
    chase_warp_insts,
    check_size,
    stream_elements,
    stream_shape,
    stream_trace,
    stream_warp_insts,
    warm_split,
)

if TYPE_CHECKING:
    from gpumem_accelsim.translate import PipelineCycles

#: Options given after the two config files. The launch latency (5000 cycles in Volta and
#: later configs) is in every kernel's count and cancels in the differences the probes take;
#: dropping it saves that much simulation per kernel.
DEFAULT_OPTIONS = ("-gpgpu_kernel_launch_latency", "0")
#: SASS opcode map of the traces (``-binary version``) where the config gives branches a unit
#: of their own (``-specialized_unit_1 ... BRA``: every Volta-and-later trace.config). Volta's
#: map sends BRA to that unit; a config without it aborts at the first branch
#: (``shader.cc:1486 spec_id < m_specialized_unit.size()``, seen on SM6_TITANX and
#: SM3_KEPLER_TITAN), so those get their own generation's map (:func:`binary_version`).
BINARY_VERSION = 70


def binary_version(config: AccelSimConfig) -> int:
    """The opcode map of the traces for ``config``: :data:`BINARY_VERSION` where it defines
    ``-specialized_unit_1`` (branches on their own unit), else the newest map of its compute
    capability or older (Pascal 61 or 60, Kepler 35), where a branch is a plain branch and
    loads, stores and barriers are the same classes."""
    from gpumem_accelsim.traces import BINARY_VERSIONS

    m = config.merged()
    if "-specialized_unit_1" in m:
        return BINARY_VERSION
    major = m.int("-gpgpu_compute_capability_major", 0)
    minor = m.int("-gpgpu_compute_capability_minor", 0)
    older = [v for v in BINARY_VERSIONS if v <= 10 * major + minor and v < BINARY_VERSION]
    return max(older, default=min(BINARY_VERSIONS))
#: Device memory reported to experiments. Accel-Sim models no capacity; this bounds footprints
#: well below the second stream buffer (:data:`gpumem_accelsim.traces.GLOBAL_BASE_B`).
NOMINAL_MEMORY_BYTES = 64 << 30
#: Options only Accel-Sim's trace-driven front end reads (from ``trace.config``); without
#: them the simulator aborts at the first branch ("spec_id < m_specialized_unit.size()").
TRACE_OPTION_PREFIXES = ("-specialized_unit_", "-trace_opcode_latency_initiation_")
#: GPGPU-Sim's deadlock message, and the option that turns the check off (see _simulate).
DEADLOCK_REPORT = "ERROR ** deadlock detected"
DEADLOCK_OFF = ("-gpgpu_deadlock_detect", "0")
#: Bytes of one memory request (a sector of GPGPU-Sim's sectored caches).
SECTOR = 32

#: What a resident warp costs the simulator per cycle, in streamed DRAM sectors (its
#: scheduler, operand and memory pipelines are ticked whether it issues or waits). Fitted on
#: nine SM7_QV100 streams (2-20 MiB; reads, writes, copies; 640-5,120 resident warps;
#: 2026-12-02, one process): 0.0045, with which each run took 0.71-1.40 times its price,
#: against 0.73-1.82 when sectors alone were priced (a write of 20 MiB by 5,120 warps took
#: 2.2 times as long as by 2,560, with the same sectors and cycles).
WARP_CYCLE_SECTORS = 0.0045


@dataclass(frozen=True, eq=False)
class AccelSimSetup:
    """Everything that makes one Accel-Sim device: config, binary and how it is run.
    Picklable, so :meth:`AccelSimDevice.reopen_spec` can hand it to worker processes."""

    config: AccelSimConfig
    binary: str
    options: tuple[str, ...] = DEFAULT_OPTIONS
    max_warp_insts: int = MAX_WARP_INSTS
    timeout_s: float | None = None
    stream_warmup: bool = True
    #: How fast it runs here (:mod:`gpumem_accelsim.pace`); ``None``: declared by
    #: ``GPUMEM_ACCELSIM_PACE``, else measured once per machine, binary and config.
    pace: Pace | None = None


def check_config(config: AccelSimConfig) -> None:
    """Raise :class:`AccelSimConfigError` for a config the device cannot run: totals that
    cannot be computed, or no trace-driven options (``trace.config`` missing beside it)."""
    _ = (config.sm_count, config.l2_bytes, config.clocks_mhz, config.dram_bandwidth_gbs)
    if not any(name.startswith(TRACE_OPTION_PREFIXES) for name in config.merged()):
        where = f" ({config.source})" if config.source else ""
        raise AccelSimConfigError(
            f"{config.name}{where}: no trace-driven options (-specialized_unit_N, "
            f"-trace_opcode_latency_initiation_*): put Accel-Sim's trace.config beside "
            f"gpgpusim.config")


def config_digest(config: AccelSimConfig) -> str:
    """SHA-256 of the two option files as the device writes them."""
    h = hashlib.sha256()
    for part in (config.gpgpusim, config.trace):
        h.update(part.dumps().encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def accelsim_device_info(config: AccelSimConfig, binary: str = "") -> DeviceInfo:
    bus_bits = (config.int("-gpgpu_n_mem") * config.int("-gpgpu_n_mem_per_ctrlr")
                * config.int("-gpgpu_dram_buswidth") * 8)
    return DeviceInfo(
        kind="accelsim",
        name=config.name,
        compute_capability=config.compute_capability,
        sm_count=config.sm_count,
        l2_bytes=config.l2_bytes,
        memory_bytes=NOMINAL_MEMORY_BYTES,
        clock_mhz=config.core_clock_mhz,
        memory_clock_mhz=config.clocks_mhz[3],
        memory_bus_bits=bus_bits,
        uuid=f"accelsim-{config_digest(config)[:16]}",
        peak_bandwidth_gbs=config.dram_bandwidth_gbs,
        load_paths=("ca", "cg", "nc"),
        extra={"accelsim_binary": binary, "accelsim_config_source": config.source,
               "memory_bytes_nominal": 1,
               # -gpgpu_memory_partition_indexing 4 (RANDOM): each line's L2 slice drawn
               # with rand(); the latency ladder then times more lines around the L2's
               # size, to sample its sets (gpumem.experiments.latency.RAMP_RECORD; issue 45)
               **({"l2_random_sets": 1} if config.merged().get(
                   "-gpgpu_memory_partition_indexing", "0").strip() == "4" else {})},
    )


class AccelSimDevice(Device):
    """A GPU simulated by Accel-Sim with one config. Each probe call is one simulator run in
    its own temporary directory; see the module docstring for what the probes can give."""

    source = "simulated"

    def __init__(self, setup: AccelSimSetup, arch: str, seed: int = 0) -> None:
        check_config(setup.config)
        super().__init__(accelsim_device_info(setup.config, setup.binary), arch)
        self.setup = setup
        self.config = setup.config
        self.seed = seed  # recorded only: the simulator seeds itself (srand(1))
        self._files = {GPGPUSIM: setup.config.gpgpusim.dumps(),
                       TRACE: setup.config.trace.dumps()}
        self._digest = config_digest(setup.config)
        self.binary_version = binary_version(setup.config)
        self._memo: dict[Any, ChaseResult | StreamResult] = {}
        self._builds: set[str] = set()
        self.runs = 0
        self.deadlock_reruns = 0
        self.sim_seconds = 0.0
        pace = setup.pace or self._known_pace()
        self.setup = setup = replace(setup, pace=pace)  # workers reopen with it, not measure
        self.info = replace(self.info, cycles_per_second=pace.cycles_per_s)

    # ---- pace --------------------------------------------------------------------------
    def _known_pace(self) -> Pace:
        """Declared, kept from an earlier measurement here, or measured now."""
        try:
            pace = declared_pace()
        except PaceError as e:
            raise AccelSimConfigError(str(e)) from None
        if pace is not None:
            return pace
        key = pace_key(self.setup.binary, self._digest)
        pace = cached_pace(key)
        if pace is None:
            try:
                pace = self._measure_pace()
            except AccelSimRunError as e:
                raise AccelSimConfigError(f"measuring how fast it runs ({PACE_ENV} can "
                                          f"declare it): {e}") from None
            keep_pace(key, pace, time.strftime("%Y-%m-%d"))
        return pace

    def _measure_pace(self) -> Pace:
        """Four short runs (not counted as the run's): a one-access chase (the start), a
        cold chase of 64 accesses (idle-waiting cycles), a stream over 2 MiB from DRAM
        (32-byte sectors) and a chase's parallel warm-up of 32 K lines (its lines)."""
        counts = (self.runs, self.deadlock_reruns, self.sim_seconds)

        def timed(make) -> tuple[float, dict[str, int]]:
            """Wall seconds of simulating the traces ``make(dir)`` writes, and each
            kernel's cycles by role."""
            with self._workdir() as d:
                ts = make(d)
                t0 = time.monotonic()
                log = self._simulate(ts)
                wall = time.monotonic() - t0
            return wall, {k.role: self._cycles(log, ts, k.role) for k in ts.kernels}

        def chase(req: ChaseRequest, **windows: int | None):
            windows = windows or dict(zip(("l1_window", "l2_window"),
                                          self._warm_windows(req), strict=True))
            return timed(lambda d: chase_trace(d, req, binary_version=self.binary_version,
                                               max_warp_insts=1 << 30,
                                               warm_ctas=self.info.sm_count, **windows))

        try:
            run_s, _c = chase(ChaseRequest(4096, 128, 1, path="cg", fine_grained=False))
            wall, cycles = chase(ChaseRequest(4096, 128, 64, path="cg", fine_grained=False))
            idle = sum(c for role, c in cycles.items() if not role.startswith("warmup")) / \
                max(wall - run_s, 1e-3)
            # a busy grid: one pass of 16-byte loads over 2 MiB from a cold L2 (DRAM-bound:
            # more cycles per sector than L1 or L2 hits; an H200 config: 1,389-1,773
            # sectors/s, 2,537-2,549 with an L2-warm pass added; QV100 7,103-10,263), its
            # resident warps' cycles counted as WARP_CYCLE_SECTORS each
            req = StreamRequest(2 << 20, self.info.sm_count, 256, 1, 16, "cg")
            wall, cycles = timed(lambda d: stream_trace(
                d, req, binary_version=self.binary_version, warmup=False, max_warp_insts=1 << 30))
            work = self._stream_sectors(req) + \
                WARP_CYCLE_SECTORS * self._resident_warps(req) * sum(cycles.values())
            busy = work / max(wall - run_s, 1e-3)
            # a chase's parallel warm-up alone (no L1 window): 32 K lines into the L2
            warm = ChaseRequest(4 << 20, 128, 1, warmup=32768, fine_grained=False)
            wall, _c = chase(warm, l1_window=0)
            lines = warm.warmup / max(wall - run_s, 1e-3)
        finally:
            self.runs, self.deadlock_reruns, self.sim_seconds = counts
        return Pace(round(idle, 1), round(busy, 1), round(run_s, 3),
                    f"measured {time.strftime('%Y-%m-%d')}", round(lines, 1))

    def estimate_seconds(self, request: Any) -> float | None:
        """Wall seconds of one probe call, from the pace: starts, the cycles a lone thread
        waits (a chase's ``record`` accesses at the config's latency for its footprint)
        and the work of parallel loads (the chase's warm-up lines; a stream's sectors and
        its resident warps' cycles, :meth:`_stream_work`). Refuses what the probe refuses,
        a trace over ``max_warp_insts`` (``GPUMEM_ACCELSIM_MAX_WARP_INSTS``) included: such
        a point is skipped, not simulated, and costs nothing; a repeat already answered from
        memory is free."""
        pace = self.setup.pace
        if pace is None or not pace.slow:
            return 0.0
        if isinstance(request, ChaseRequest):
            request = self._checked_chase(request)
            l1_window, l2_window = self._warm_windows(request)
            self._fits("chase", chase_warp_insts(request, warm_ctas=self.info.sm_count,
                                                 l1_window=l1_window, l2_window=l2_window))
            if ("chase", request) in self._memo:
                return 0.0
            # the L1 warm-up is L1_WARM_WARPS warps' dependent loads, in base and in timed;
            # the L2 warm-up's recorded lines one dependent load each, from DRAM (cold)
            l1_loads = 2 * -(-self._warm_windows_used(request)[0] // (WARP * L1_WARM_WARPS))
            lo, first = warm_split(request, l2_window)
            far = replace(request, footprint=2 * self.info.l2_bytes + (1 << 20))
            cycles = request.record * self._latency_guess(request) + l1_loads * \
                self._latency_guess(replace(request, footprint=self.info.l2_bytes)) + \
                max(0, first - lo) * self._latency_guess(far)
            return pace.seconds(1, cycles, 0.0, self._warm_requests(request))
        if isinstance(request, StreamRequest):
            self._check_path(request.path)
            try:
                _chunk, _chunks, iters = stream_shape(request)
            except ValueError as e:
                raise PointSkipped(str(e)) from None
            self._fits("stream", stream_warp_insts(request,
                                                   warmup=self._stream_warms(request)))
            if ("stream", replace(request, seed=0)) in self._memo:
                return 0.0
            return pace.seconds(1, 0.0, self._stream_work(request))
        return None

    def _fits(self, what: str, warp_insts: int) -> None:
        """Raise the probe's ``PointSkipped`` for a trace over the size limit."""
        try:
            check_size(warp_insts, self.setup.max_warp_insts)
        except TraceTooLarge as e:
            raise PointSkipped(f"Accel-Sim {what} too long to simulate: {e}") from None

    def _stream_work(self, request: StreamRequest) -> float:
        """What one simulation of ``request`` costs, in streamed DRAM sectors: the sectors
        its warps ask for in each pass (warm-up and timed), and its resident warps times
        the cycles the passes should take (the config's DRAM bandwidth, or one DRAM latency
        per iteration where the grid is too small to reach it) at WARP_CYCLE_SECTORS."""
        passes = 2 if self._stream_warms(request) else 1
        _chunk, _chunks, iters = stream_shape(request)
        moved = request.bytes_per_direction * (2 if request.kind == "copy" else 1)
        bytes_per_cycle = self.config.dram_bandwidth_gbs * 1e3 / self.info.clock_mhz
        far = ChaseRequest(2 * self.info.l2_bytes + (1 << 20), 128, 1, path=request.path,
                           fine_grained=False)
        cycles = max(moved / bytes_per_cycle, iters * self._latency_guess(far))
        return passes * (self._stream_sectors(request) + WARP_CYCLE_SECTORS
                         * self._resident_warps(request) * cycles)

    def _resident_warps(self, request: StreamRequest) -> int:
        """Warps of ``request``'s grid resident at once: CTAs per SM bounded by the config's
        threads and CTAs per SM, times the SMs, at most the grid."""
        try:
            sm_threads = self.config.sm_threads_and_warp[0]
            sm_ctas = self.config.merged().int("-gpgpu_shader_cta", 8)
        except ValueError:  # AccelSimConfigError, OptionFileError: priced as CC 9.0's limits
            sm_threads, sm_ctas = 2048, 8
        per_sm = max(1, min(sm_threads // max(1, request.threads), sm_ctas))
        ctas = min(request.ctas, per_sm * self.info.sm_count)
        return ctas * -(-request.threads // WARP)

    @staticmethod
    def _stream_sectors(request: StreamRequest) -> float:
        """Sector requests of one pass: a warp instruction asks for each 32-byte sector its
        lanes touch, so a per-thread contiguous order (lanes K x 16 bytes apart) asks twice
        as often as a coalesced one for the same bytes."""
        lanes = np.arange(min(WARP, request.threads), dtype=np.int64)
        per_inst = np.mean([np.unique(stream_elements(request, lanes, 0, k) * request.width
                                      // SECTOR).size for k in range(request.ilp)])
        insts = request.bytes_per_direction / (lanes.size * request.width)
        return insts * float(per_inst) * (2 if request.kind == "copy" else 1)

    def _latency_guess(self, request: ChaseRequest) -> float:
        """Cycles per access the config gives a chase over ``request.footprint`` (L1, L2 or
        DRAM by size, with the build's own pipeline cycles), for pricing."""
        m, p = self.config, self._pipeline
        l1 = m.int("-gpgpu_l1_latency") + p.l1
        l2 = m.int("-gpgpu_l2_rop_latency") + p.l2 + (l1 if request.path != "cg" else 0)
        l1_bytes = self._l1_bytes()
        if request.path != "cg" and l1_bytes and request.footprint <= l1_bytes:
            return l1
        if request.footprint <= self.info.l2_bytes:
            return l2
        return l2 + m.int("-dram_latency") + p.dram

    @functools.cached_property
    def _pipeline(self) -> PipelineCycles:
        """The cycles the driven build adds to this config's levels (worked out once: the
        price of every point asks)."""
        from gpumem_accelsim.known_options import VERSIONS
        from gpumem_accelsim.simulator import VERSION_ENV
        from gpumem_accelsim.translate import pipeline_cycles

        return pipeline_cycles(self.config,
                               os.environ.get(VERSION_ENV, "").strip() or VERSIONS[0])[0]

    @property
    def probes(self) -> frozenset[str]:
        return frozenset({"pointer_chase", "stream"})

    # ---- probes ------------------------------------------------------------------------
    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        request = self._checked_chase(request)
        key = ("chase", request)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        l1_window, l2_window = self._warm_windows(request)
        ts, cycles = self._timed("chase", "base", lambda d: chase_trace(
            d, request, binary_version=self.binary_version,
            max_warp_insts=self.setup.max_warp_insts, warm_ctas=self.info.sm_count,
            l1_window=l1_window, l2_window=l2_window))
        res = ChaseResult(latency=np.array([cycles / ts.accesses]),
                          index=np.empty(0, np.int64), timer_overhead=0.0, sm=0)
        self._memo[key] = res
        return res

    def _checked_chase(self, request: ChaseRequest) -> ChaseRequest:
        """``request`` if this device can run it, else what the probe raises."""
        request.validate()
        if request.fine_grained:
            raise ProbeUnsupported(
                "Accel-Sim reports cycles per kernel, not per access: it gives a pointer "
                "chase's mean latency only (ChaseRequest(fine_grained=False))")
        self._check_path(request.path)
        if request.sm != 0:
            raise PointSkipped(f"the Accel-Sim chase trace is one CTA, which runs on SM 0; "
                               f"SM {request.sm} cannot be chosen")
        if request.footprint > self.info.memory_bytes:
            raise PointSkipped(f"footprint {request.footprint} B exceeds the nominal "
                               f"{self.info.memory_bytes} B of the Accel-Sim device")
        return request

    def _warm_windows(self, request: ChaseRequest) -> tuple[int | None, int | None]:
        """Warm-up positions worth loading into L1 and into L2 (see :func:`chase_trace`):
        those spanning twice the cache's capacity; earlier ones it could not keep. A pattern
        chase revisits its few offsets, so it loads all of them."""
        if request.order == "pattern":
            return None, None
        l1 = self._l1_bytes()
        return (-(-2 * l1 // request.stride) if l1 else None,
                -(-2 * self.info.l2_bytes // request.stride) if self.info.l2_bytes else None)

    def _l1_bytes(self) -> int:
        """The most the config's L1 can hold (the unified L1 or the dl1 cache), 0 if none."""
        try:
            dl1 = self.config.cache("-gpgpu_cache:dl1")
        except AccelSimConfigError:
            dl1 = None
        return max(self.config.unified_l1_bytes, dl1.size if dl1 is not None else 0)

    def _warm_windows_used(self, request: ChaseRequest) -> tuple[int, int]:
        """Positions a chase's warm-up loads into L1 and into L2."""
        l1, l2 = self._warm_windows(request)
        warm = request.warmup
        return min(warm, l1 or warm), min(warm, l2 or warm)

    def _warm_requests(self, request: ChaseRequest) -> int:
        """Loads of a chase's warm-up: its L2 window once, its L1 window in base and timed."""
        l1, l2 = self._warm_windows_used(request)
        return l2 + 2 * l1

    def _timed(self, what: str, reference: str, make) -> tuple:
        """Simulate the traces ``make(dir)`` writes: (traces, cycles of the timed kernel
        minus the ``reference`` kernel, which holds what is not to be timed)."""
        with self._workdir() as d:
            try:
                ts = make(d)
            except TraceTooLarge as e:
                raise PointSkipped(f"Accel-Sim {what} too long to simulate: {e}") from None
            log = self._simulate(ts)
        cycles = self._cycles(log, ts, "timed") - self._cycles(log, ts, reference)
        if cycles <= 0:
            raise AccelSimRunError(f"Accel-Sim timed {what} took {cycles} cycles more than "
                                   f"its {reference} kernel (expected > 0)")
        return ts, cycles

    def stream(self, request: StreamRequest) -> StreamResult:
        request.validate()
        self._check_path(request.path)
        if request.order == "block":  # stream_elements writes the grid-strided orders only
            raise PointSkipped("the Accel-Sim stream traces have no order 'block' (each "
                               "block its own slice)")
        try:
            stream_shape(request)
        except ValueError as e:
            raise PointSkipped(str(e)) from None
        key = ("stream", replace(request, seed=0))  # the trace does not depend on the seed
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        ts, cycles = self._timed("stream", "empty", lambda d: stream_trace(
            d, request, binary_version=self.binary_version, warmup=self._stream_warms(request),
            max_warp_insts=self.setup.max_warp_insts))
        res = StreamResult(bytes=ts.bytes, seconds=cycles / (self.info.clock_mhz * 1e6),
                           cycles=float(cycles))
        self._memo[key] = res
        return res

    def _stream_warms(self, request: StreamRequest) -> bool:
        """Whether a stream runs a warm-up pass first: not for reads of a buffer larger than
        the L2, whose lines a streaming pass evicts before the next one reaches them (the
        simulator starts from a cold L2, so every line comes from DRAM either way): there
        the warm-up would only double the simulation. Writes keep it: it leaves the L2 full
        of dirty lines, so the timed pass writes back as a steady stream does, where from a
        clean L2 most of it would stay in the write-back L2."""
        return self.setup.stream_warmup and (request.footprint <= self.info.l2_bytes
                                             or request.kind != "read")

    # ---- running the simulator ---------------------------------------------------------
    def _check_path(self, path: str) -> None:
        if path not in self.info.load_paths:
            raise ProbeUnsupported(f"Accel-Sim traces have no '{path}' load path (paths: "
                                   f"{', '.join(self.info.load_paths)})")

    def _workdir(self) -> tempfile.TemporaryDirectory:
        return tempfile.TemporaryDirectory(prefix="gpumem-accelsim-")

    def _simulate(self, ts: TraceSet) -> AccelSimLog:
        """Run the binary on ``ts`` (config files written beside it); the parsed log.

        GPGPU-Sim's deadlock check compares the instruction count every 50000 cycles with the
        previous sample, also across kernels, and the count restarts with each kernel. The
        probes' kernels share a prefix (``timed`` begins with ``base``'s loads, from the same
        state), so a timed kernel can match its base's last sample exactly and be called
        deadlocked while it runs (seen on QV100: a 64 KiB chase, every run). A deadlock report
        is therefore checked by one run without the check, stopped at 10x the first run's
        time (or ``timeout_s``): one that finishes was not a deadlock.
        """
        d = ts.directory
        for name, text in self._files.items():
            (d / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        cmd = [self.setup.binary, "-trace", str(ts.kernelslist),
               "-config", str(d / GPGPUSIM), "-config", str(d / TRACE), *self.setup.options]
        text, rc, seconds = self._run(cmd, d, self.setup.timeout_s)
        if DEADLOCK_REPORT in text and DEADLOCK_OFF[0] not in self.setup.options:
            guard = self.setup.timeout_s or 10 * seconds + 60
            self.deadlock_reruns += 1
            try:
                text, rc, _ = self._run([*cmd, *DEADLOCK_OFF], d, guard)
            except AccelSimRunError:
                line = next(ln for ln in text.splitlines() if DEADLOCK_REPORT in ln)
                raise AccelSimRunError(f"Accel-Sim deadlocked: {line.strip()}; without the "
                                       f"check it ran past {guard:g} s") from None
        log = parse_log(text, rc)
        if log.accelsim_build:
            self._builds.add(log.accelsim_build)
        return log

    def _run(self, cmd: list[str], cwd: Path, timeout: float | None) -> tuple[str, int, float]:
        """(merged stdout and stderr, exit status, seconds) of one simulator run."""
        t0 = time.monotonic()
        try:
            text, rc = run_group(cmd, cwd, timeout)
        except subprocess.TimeoutExpired:
            raise AccelSimRunError(f"Accel-Sim ran longer than {timeout:g} s and was "
                                   f"stopped (with every process it started)") from None
        except OSError as e:
            raise DeviceUnavailable(f"cannot run Accel-Sim {self.setup.binary}: {e}") from None
        finally:
            seconds = time.monotonic() - t0
            self.sim_seconds += seconds
            self.runs += 1
        return text, rc, seconds

    @staticmethod
    def _cycles(log: AccelSimLog, ts: TraceSet, role: str) -> int:
        uid = ts.uid(role)
        want = next(k.name for k in ts.kernels if k.uid == uid)
        try:
            k = log.kernel(uid)
        except KeyError as e:
            raise AccelSimRunError(f"Accel-Sim's log lacks the {role} kernel: "
                                   f"{e.args[0]}") from None
        if k.kernel_name != want:
            raise AccelSimRunError(f"Accel-Sim's kernel {uid} is {k.kernel_name!r}, "
                                   f"not the trace's {want!r}")
        return k.gpu_sim_cycle

    # ---- contract ----------------------------------------------------------------------
    def point_counters(self) -> dict[str, float]:
        return {"accelsim_runs": float(self.runs),
                "accelsim_deadlock_reruns": float(self.deadlock_reruns),
                "accelsim_seconds": self.sim_seconds}

    def provenance(self) -> dict[str, Any]:
        return {
            "accelsim_binary": self.setup.binary,
            # the simulations' logs say; where none ran here (every point in a worker
            # process), the build line of the binary's trial run (locate.probe)
            "accelsim_build": ", ".join(sorted(self._builds)) or self._probed_build(),
            "accelsim_config_name": self.config.name,
            "accelsim_config_source": self.config.source,
            "accelsim_config_sha256": self._digest,
            "accelsim_options": " ".join(self.setup.options),
            "accelsim_max_warp_insts": self.setup.max_warp_insts,
            "accelsim_runs": self.runs,
            "accelsim_deadlock_reruns": self.deadlock_reruns,
            "accelsim_seconds": round(self.sim_seconds, 3),
            "accelsim_pace": (f"{pace.cycles_per_s:g} cycles/s, {pace.requests_per_s:g} "
                              f"sectors/s, {pace.run_s:g} s per start, "
                              f"{pace.warm_lines_per_s:g} warm-up lines/s ({pace.source})"
                              if (pace := self.setup.pace) and pace.slow else "not slow"),
            "sim_seed": self.seed,
        }

    def _probed_build(self) -> str:
        from gpumem_accelsim.locate import probe

        try:
            return probe(Path(self.setup.binary))[0]
        except OSError:
            return ""

    def reopen_spec(self) -> dict[str, Any]:
        return {"simulator": "accelsim", "arch": self.arch, "config": self.setup,
                "seed": self.seed}


def open_device(setup: AccelSimSetup, arch: str, seed: int = 0) -> AccelSimDevice:
    """An :class:`AccelSimDevice`, with an unusable config as ``DeviceUnavailable``."""
    try:
        return AccelSimDevice(setup, arch, seed)
    except (AccelSimConfigError, ValueError) as e:
        raise DeviceUnavailable(f"unusable Accel-Sim config: {e}") from None
