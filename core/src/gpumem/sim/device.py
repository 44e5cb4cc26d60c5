"""``SimDevice``: the built-in simulator answering the device probes from a ``SimConfig``."""

from __future__ import annotations

import os
import queue
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gpumem.contracts.device import (
    HAMMER_INFLIGHT,
    PLACEMENT_PADS,
    BulkRequest,
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceInfo,
    DsmemRequest,
    SmemRequest,
    SmemResult,
    StreamRequest,
    StreamResult,
)
from gpumem.contracts.errors import PointSkipped, ProbeUnsupported, UsageError
from gpumem.sim import engine, noise
from gpumem.sim.config import SimConfig
from gpumem.sim.throughput import (
    bulk_model,
    dsmem_model,
    slice_wait,
    smem_model,
    stream_bytes,
    stream_model,
)


def sim_device_info(cfg: SimConfig) -> DeviceInfo:
    return DeviceInfo(
        kind="sim",
        name=f"sim {cfg.name}",
        compute_capability=cfg.compute_capability,
        sm_count=cfg.sm_count,
        l2_bytes=cfg.l2_bytes,
        memory_bytes=cfg.memory_bytes,
        clock_mhz=cfg.clock_mhz,
        uuid=f"sim-{cfg.digest()[:16]}",
        peak_bandwidth_gbs=cfg.dram.bandwidth_gbs,
        load_paths=tuple(cfg.paths),
        smem_bank_modes=(cfg.smem.bank_width,
                         *(m for m in cfg.smem.modes if m != cfg.smem.bank_width)),
        extra={"page_bytes": cfg.page_bytes, "smem_bytes_per_sm": cfg.smem.size,
               "max_warps_per_sm": cfg.throughput.max_warps_per_sm,
               **({"peers": list(range(cfg.interconnect.peers + 1))}
                  if cfg.interconnect.peers else {})},
    )


class SimDevice(Device):
    """A simulated GPU. Each probe starts from a cold hierarchy and a fresh random stream
    seeded from (config seed, request seed, SM), so a sweep point gives the same answer in any
    process and in any order."""

    source = "simulated"

    def __init__(self, config: SimConfig, arch: str, seed: int = 0) -> None:
        super().__init__(sim_device_info(config), arch)
        self.config = config
        self.seed = seed
        self._hierarchy, self._ids = engine.compile_hierarchy(config, seed)
        self._tlb_first = len(config.caches)
        self._chases = 0  # chases served: when a configured clock step happens
        #: chases :meth:`pointer_chases` may run at once (``GPUMEM_SIM_THREADS``, else 1)
        self.threads = _threads_from_env()
        self._spare: list[engine.Hierarchy] = []  # the hierarchies of those threads

    def unmodelled(self) -> dict[str, str]:
        """What the config leaves unset (:meth:`SimConfig.unmodelled`)."""
        return self.config.unmodelled()

    @property
    def probes(self) -> frozenset[str]:
        probes = {"pointer_chase", "stream", "smem"}
        if self.config.interconnect.peers:
            probes.add("peer_access")
        if _major(self.config.compute_capability) >= 8:
            probes.add("async_copy")  # as on hardware: cp.async exists from sm_80
        if self.config.smem.remote_latency > 0:
            probes.add("dsmem")
        if _major(self.config.compute_capability) >= 9:
            probes.add("bulk_copy")  # as on hardware: the TMA exists from sm_90
        if any(c.slice_bandwidth for c in self.config.caches):
            probes.add("slice_contention")
        return frozenset(probes)

    def _remote(self, peer: int) -> bool:
        """Is ``peer`` another GPU of the simulated node (this one is index 0)?"""
        if peer in (-1, self.info.index):
            return False
        if not 0 <= peer <= self.config.interconnect.peers:
            raise PointSkipped(f"no peer GPU {peer} (the simulated node has "
                               f"{self.config.interconnect.peers + 1} GPUs)")
        return True

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        request, remote = self._chase_request(request)
        out = self._simulate(self._hierarchy, request, remote, self._chases)
        self._chases += 1
        return out

    @property
    def independent_probes(self) -> bool:
        """Is every probe's answer a function of its request alone, whichever probes came
        before it, in this process or another? Yes unless a configured clock step counts the
        chases served. The runner then runs experiments at once (``gpumem run -j N``)."""
        return self.config.timer.clock_step_after <= 0

    @property
    def chase_threads(self) -> int:
        """How many chases :meth:`pointer_chases` runs at once: ``threads``, or 1 where a
        chase's result depends on how many came before it (a configured clock step)."""
        return 1 if self.config.timer.clock_step_after > 0 else max(1, self.threads)

    def pointer_chases(self, requests: Sequence[ChaseRequest]
                       ) -> list[ChaseResult | Exception]:
        """Several chases at once, on up to :attr:`chase_threads` threads (the kernels
        release the GIL), each on a hierarchy of its own. Every chase starts cold from
        streams seeded by its request, so each result is the one :meth:`pointer_chase`
        gives; they do not count as chases served (a search runs them ahead, and may never
        ask for some). A request the device refuses gives its error in the list."""
        jobs: list[tuple[ChaseRequest, bool] | Exception] = []
        for r in requests:
            try:
                jobs.append(self._chase_request(r))
            except (PointSkipped, ProbeUnsupported) as e:
                jobs.append(e)
        todo = [j for j in jobs if not isinstance(j, Exception)]
        n = min(self.chase_threads, len(todo))
        while len(self._spare) < n:
            self._spare.append(engine.compile_hierarchy(self.config, self.seed)[0])
        free: queue.SimpleQueue = queue.SimpleQueue()
        for h in self._spare[:n]:
            free.put(h)

        def one(job: tuple[ChaseRequest, bool]) -> ChaseResult:
            h = free.get()
            try:
                return self._simulate(h, job[0], job[1], self._chases)
            finally:
                free.put(h)

        # a pool per call: no idle threads are left behind when the runner forks workers
        with ThreadPoolExecutor(max_workers=max(1, n)) as pool:
            done = iter(list(pool.map(one, todo)))
        return [j if isinstance(j, Exception) else next(done) for j in jobs]

    def _chase_request(self, request: ChaseRequest) -> tuple[ChaseRequest, bool]:
        """The request as simulated (a peer's memory: its L2-only path) and whether it is
        remote; the errors of one the device cannot serve."""
        request.validate()
        cfg = self.config
        remote = self._remote(request.peer)
        if remote:  # a peer's memory: its L2-only path, behind the link
            from dataclasses import replace

            request = replace(request, path="cg")
        if request.path not in cfg.paths:
            raise ProbeUnsupported(
                f"simulated {cfg.name} has no '{request.path}' load path "
                f"(config paths: {', '.join(sorted(cfg.paths))})")
        if not 0 <= request.sm < cfg.sm_count:
            raise PointSkipped(f"SM {request.sm} does not exist ({cfg.sm_count} SMs)")
        if request.footprint > cfg.memory_bytes:
            raise PointSkipped(
                f"footprint {request.footprint} B exceeds device memory {cfg.memory_bytes} B")
        return request, remote

    def _simulate(self, h: engine.Hierarchy, request: ChaseRequest, remote: bool,
                  chase_number: int) -> ChaseResult:
        """One chase on hierarchy ``h``, from cold; ``chase_number`` chases came before it
        (the clock step's count)."""
        cfg = self.config
        engine.reset(h)
        engine.reseed(h, cfg.seed, self.seed, request.seed, request.sm)
        path = np.array([self._ids[name] for name in cfg.paths[request.path]], np.int64)
        lat, idx, level = engine.simulate_chase(
            h, path, self._tlb_first, len(cfg.tlbs), cfg.dram.latency,
            base=cfg.base_address + PLACEMENT_PADS[request.placement],  # the pad in front
            footprint=request.footprint, stride=request.stride,
            page_walk=cfg.page_walk_latency, sm=request.sm, sm_count=cfg.sm_count,
            element=request.element, order=request.order, seed=request.seed,
            warmup=request.warmup, record=request.record,
            overhead=cfg.timer.overhead + cfg.path_latency.get(request.path, 0.0)
            + (cfg.interconnect.latency if remote else 0.0),
            jitter=cfg.timer.jitter, outlier_rate=cfg.timer.outlier_rate,
            outlier_cycles=cfg.timer.outlier_cycles,
            noise_seed=engine.stream_seed(cfg.seed, self.seed, request.seed, request.sm, 7),
            pattern=request.pattern,
        )
        overhead = cfg.timer.overhead
        lat = noise.add_noise(lat, level, len(path), overhead, cfg.timer,
                              engine.stream_seed(cfg.seed, self.seed, request.seed, request.sm,
                                                 13), chase_number)
        if cfg.neighbour.active:
            lat = _shared(lat, level, overhead, cfg.neighbour,
                          engine.stream_seed(cfg.seed, self.seed, request.seed, request.sm, 17))
        if request.hammer:
            lat = self._hammered(request, lat, idx, level, cfg.paths[request.path])
        if not request.fine_grained:  # a mean chase: one number, as a two-clock-read kernel
            return ChaseResult(latency=np.array([float(lat.mean())]),
                               index=np.empty(0, np.int64), timer_overhead=overhead,
                               sm=request.sm)
        return ChaseResult(latency=lat, index=idx, timer_overhead=overhead, sm=request.sm,
                           hammered=len(request.hammer_sms))

    def _hammered(self, request: ChaseRequest, lat: np.ndarray, idx: np.ndarray,
                  level: np.ndarray, path: Sequence[str]) -> np.ndarray:
        """A chase's latencies while ``request.hammer_sms`` load ``request.hammer``: each
        access that reaches the path's sliced level (a hit there, or a miss through it) and
        is homed in a slice they load waits :func:`~gpumem.sim.throughput.slice_wait`, that
        wait drawn anew each time within +-20 % (a queue's length moves)."""
        cfg = self.config
        at = next((i for i, name in enumerate(path)
                   if cfg.level(name).slice_bandwidth > 0), None)
        if at is None:
            raise ProbeUnsupported(f"simulated {cfg.name}'s '{request.path}' path reaches no "
                                   "level with a slice queue (slice_bandwidth)")
        lv = cfg.level(path[at])
        base = cfg.base_address + PLACEMENT_PADS[request.placement]
        home = lv.slice_of(base + np.asarray(request.hammer, np.int64), base,
                           request.footprint)
        rows = np.asarray(lv.slice_latency, float)
        rows = rows[np.arange(cfg.sm_count) % len(rows)]
        out = lat.astype(float, copy=True)
        rng = np.random.default_rng(engine.stream_seed(cfg.seed, self.seed, request.seed,
                                                       request.sm, 19))
        mine = lv.slice_of(base + idx * request.element, base, request.footprint)
        for s in np.unique(home):
            wait = slice_wait(len(request.hammer_sms), HAMMER_INFLIGHT, lv.line,
                              lv.slice_bandwidth,
                              float(rows[list(request.hammer_sms), s].mean()))
            hit = (level >= at) & (mine == s)
            out[hit] += wait * rng.uniform(0.8, 1.2, int(hit.sum()))
        return out

    def _timed(self, nbytes: int, rate: float, seed: int) -> StreamResult:
        """Seconds for ``nbytes`` at ``rate`` bytes/cycle, with the config's run-to-run noise."""
        cycles = nbytes / rate
        nb = self.config.neighbour
        if nb.active and nb.stream_share_every and np.random.default_rng(engine.stream_seed(
                self.config.seed, self.seed, seed, int(cycles) & 0xFFFFFFFF, 19)
        ).random() < 1 / nb.stream_share_every:  # drawn per request: any order, any worker
            cycles *= 2.0  # this timed run shared the GPU with the neighbour's
        sigma = self.config.timer.throughput_jitter
        if sigma > 0:
            rng = np.random.default_rng(engine.stream_seed(self.config.seed, self.seed, seed, 11))
            cycles *= max(0.5, 1.0 + sigma * float(rng.standard_normal()))
        return StreamResult(bytes=nbytes, seconds=cycles / (self.config.clock_mhz * 1e6),
                            cycles=cycles)

    def stream(self, request: StreamRequest) -> StreamResult:
        request.validate()
        remote = self._remote(request.peer)
        if remote:
            from dataclasses import replace

            request = replace(request, path="cg")
        model = stream_model(self.config, request, remote=remote)
        return self._timed(stream_bytes(request), model.rate, request.seed)

    def async_copy(self, request: StreamRequest) -> StreamResult:
        request.validate()
        if request.kind != "read":
            raise PointSkipped("cp.async copies global to shared memory: kind must be 'read'")
        model = stream_model(self.config, request, asynchronous=True)
        return self._timed(stream_bytes(request), model.rate, request.seed)

    def smem(self, request: SmemRequest) -> SmemResult:
        request.validate()
        latency, rate, _ways = smem_model(self.config, request)
        return SmemResult(latency=latency, bytes_per_cycle=rate)

    def bulk_copy(self, request: BulkRequest) -> StreamResult:
        request.validate()
        if "bulk_copy" not in self.probes:
            raise ProbeUnsupported("bulk copies (TMA) need compute capability 9.0")
        rate = bulk_model(self.config, request)
        return self._timed(request.bytes_per_direction, rate, request.seed)

    def dsmem(self, request: DsmemRequest) -> SmemResult:
        request.validate()
        if "dsmem" not in self.probes:
            raise ProbeUnsupported(f"config '{self.config.name}' has no distributed shared "
                                   f"memory (smem.remote_latency)")
        if request.kind == "throughput" and request.cluster > self.config.sm_count:
            raise PointSkipped(f"a cluster of {request.cluster} blocks needs "
                               f"{request.cluster} SMs")
        latency, rate = dsmem_model(self.config, request)
        return SmemResult(latency=latency, bytes_per_cycle=rate)

    def point_state(self) -> dict[str, float]:
        """A configured neighbour as NVML would report it beside each point (nothing else
        changes between a simulator's points)."""
        nb = self.config.neighbour
        if not nb.processes:
            return {}
        return {"other_processes": float(nb.processes),
                "other_active_processes": float(nb.processes if nb.active else 0),
                "other_busy_pct": float(nb.busy_pct)}

    def neighbours(self) -> list[Any]:
        from gpumem.contracts.contention import Neighbour

        nb = self.config.neighbour
        return [Neighbour(SIM_NEIGHBOUR_PID + i, "simulated neighbour", 0, "compute",
                          float(nb.busy_pct)) for i in range(nb.processes)]

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sim_config_name": self.config.name,
            "sim_config_sha256": self.config.digest(),
            "sim_seed": self.seed,
        }
        if self.config.neighbour.active:
            from gpumem.contracts.contention import describe_all

            out["neighbours_seen"] = describe_all(self.neighbours())
        return out

    def config_toml(self) -> str:
        return self.config.to_toml()

    def reopen_spec(self) -> dict[str, Any]:
        return {"simulator": "sim", "arch": self.arch, "config": self.config, "seed": self.seed}


#: the pids a simulated neighbour is listed with (no real process has them)
SIM_NEIGHBOUR_PID = 4_000_000


def _shared(lat: np.ndarray, level: np.ndarray, overhead: float, nb: Any,
            seed: int) -> np.ndarray:
    """A chase's latencies while a neighbour runs: every access past the first level
    ``slowdown`` times slower, and every ``slice_every``-th access (from an offset drawn
    from ``seed``) waiting ``slice_cycles`` for the neighbour's time slice."""
    out = lat.astype(float, copy=True)
    past = level > 0
    out[past] = overhead + (out[past] - overhead) * nb.slowdown
    if nb.slice_every and out.size:
        first = int(np.random.default_rng(seed).integers(nb.slice_every))
        out[first::nb.slice_every] += nb.slice_cycles
    return out


THREADS_ENV = "GPUMEM_SIM_THREADS"


def _threads_from_env() -> int:
    """``GPUMEM_SIM_THREADS``: threads an adaptive search may chase on (default 1)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    try:
        return max(1, int(raw)) if raw else 1
    except ValueError:
        raise UsageError(f"{THREADS_ENV}={raw!r}: expected a whole number of threads") from None


def _major(cc: str) -> int:
    try:
        return int(str(cc).split(".")[0])
    except ValueError:
        return 0
