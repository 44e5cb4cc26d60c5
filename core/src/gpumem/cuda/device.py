"""``CudaDevice``: the probes as CuPy kernels on a real GPU."""

from __future__ import annotations

import ctypes
import hashlib
import time
from dataclasses import replace
from importlib.resources import files
from typing import Any

import numpy as np

from gpumem.contracts.chains import (
    chain_offsets,
    cycle_length,
    permutation_params,
    recorded_first,
    scatter_key,
    warm_segments,
)
from gpumem.contracts.device import (
    HAMMER_INFLIGHT,
    PLACEMENT_PADS,
    BulkRequest,
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceInfo,
    DsmemRequest,
    KernelLookup,
    KernelSource,
    SmemRequest,
    SmemResult,
    StreamRequest,
    StreamResult,
)
from gpumem.contracts.errors import PointSkipped, ProbeUnsupported
from gpumem.cuda import cupy_cache

GENERIC_SOURCE = "pointer_chase.cu"
_PATH_KERNELS = {"ca": "pointer_chase_ca", "cg": "pointer_chase_cg", "nc": "pointer_chase_nc",
                 "tex": "pointer_chase_tex"}
#: Largest record kept in shared memory (12 B per access; the default dynamic limit).
SHARED_RECORD_MAX = 48 * 1024
ROTATE = 3  # allocations a DRAM-resident stream's timed repeats take turns on
#: Bytes a second the driver clears memory given back to it (cudaFree) at, at least. DRAM
#: reads run some 18 % slower while it does (an H100, benchmarks/dram_scrub.py, 2026-12-06:
#: for about 3 ms after 1 GiB is freed, 13 ms after 4 GiB, 0.1 s after 32 GiB, some 330
#: GB/s), and ``ilp``'s first point at its largest footprint read its first 1-3 repeats 11-15
#: % slow in 17 of 19 whole runs (H100s and H200s), the buffers of the footprint before just
#: freed. A timed DRAM-resident stream waits the clearing out: half the rate seen, for margin.
CLEAR_BYTES_PER_S = 150e9
#: Elements a 1-D texture over linear memory may span (2^27 on every GPU since sm_30).
TEX_LINEAR_MAX_ELEMENTS = 1 << 27
#: cuCtxSetSharedMemConfig values (CUsharedconfig).
_BANK_CONFIG = {0: 0, 4: 1, 8: 2}
#: Carve-out preference of the chase kernels: 0 % shared memory, i.e. the largest L1 the
#: driver allows beside the kernel's own shared memory. Without it the driver picked a
#: shared-memory-heavy split on the H200 and the L1 plateau ended at 22 KB.
CHASE_CARVEOUT_PERCENT = 0
#: The other probes: streams through L1 want it large too; shared-memory probes (and cp.async,
#: which lands in shared memory) want the shared side large. Asked for explicitly every time,
#: so no probe runs on a split another kernel left behind.
STREAM_CARVEOUT_PERCENT = 0
SHARED_CARVEOUT_PERCENT = 100


STREAM_ORDER_CODES = {"coalesced": 0, "thread": 1, "warp": 2, "block": 3}
STREAM_KIND_CODES = {"read": 0, "write": 1, "copy": 2}
SMEM_LATENCY_LOADS = 64
SMEM_THROUGHPUT_ITERATIONS = 1024
DSMEM_LATENCY_LOADS = 256
DSMEM_THROUGHPUT_ITERATIONS = 1024
#: Shared memory an SM can give its blocks (sm_90: 228 KB, 1 KB of it reserved per block).
SM90_SMEM_PER_SM = 227 * 1024
#: The hammered chase (``ChaseRequest.hammer``): threads of each block (16 warps, four lines in
#: flight each: HAMMER_INFLIGHT), how long the chase waits for the hammering blocks to start,
#: and how long they hammer at most if it never ends (cycles: 2 ms and 1 s at 2 GHz).
HAMMER_THREADS = HAMMER_INFLIGHT // 4 * 32
HAMMER_WAIT_CYCLES = 4_000_000
HAMMER_MAX_CYCLES = 2_000_000_000
#: Entries of the kernel's per-SM flags and claims (its constant 1024).
HAMMER_SM_FLAGS = 1024
#: Dynamic shared memory of a DSMEM throughput block: over half an SM's, so that one block
#: runs per SM and each block's own clock span is its SM's (clusters may run in waves).
DSMEM_BLOCK_SMEM = 120 * 1024


def generic_kernel_source(probe: str = "pointer_chase", extra: str = "") -> KernelSource:
    """Core's own kernel for ``probe``; ``extra`` is appended (a plugin's added kernels, which
    may use core's macros, e.g. GPUMEM_CHASE_KERNEL for a texture path)."""
    file = {"pointer_chase": GENERIC_SOURCE, "stream": "stream.cu", "async_copy": "stream.cu",
            "smem": "smem.cu", "dsmem": "dsmem.cu", "bulk_copy": "bulk.cu"}[probe]
    code = files("gpumem.cuda").joinpath("kernels", file).read_text()
    if extra:
        code += "\n" + extra
    return KernelSource(code=code, name=probe, options=("-std=c++17",))


class CudaDevice(Device):
    source = "measured"

    def __init__(self, cupy: Any, info: DeviceInfo, arch: str,
                 kernel_source: KernelLookup | None = None) -> None:
        super().__init__(info, arch)
        self.cp = cupy
        self.kernel_source = kernel_source
        self._dev = cupy.cuda.Device(info.index)
        self._dev.use()
        from gpumem.cuda.nvml import Nvml

        self.nvml = Nvml(info.index)
        self._modules: dict[tuple[str, tuple[str, ...]], Any] = {}
        self.kernel_sources: dict[str, KernelSource] = {}
        self.carveout: dict[str, int] = {}
        self._warm_key: tuple | None = None  # the chain whose warm-up segments are held
        self._cleared_at = 0.0  # time.monotonic() by which the driver has cleared what we freed
        self.clearing_waits = 0  # timed DRAM streams that waited for it
        self.clearing_wait_s = 0.0  # and how long, in all (each point records the total)
        self._warm_args: tuple = ()
        self.kernel_audit: dict[str, dict[str, int]] = {}
        from gpumem.cuda.audit import SassInBackground

        self._sass = SassInBackground("sm_" + info.compute_capability.replace(".", ""))
        if "pointer_chase_tex" in self._source("pointer_chase").code:
            # the architecture's kernels add a texture path: structure experiments chase it
            self.info = replace(info, load_paths=tuple(info.load_paths) + ("tex",))

    @property
    def probes(self) -> frozenset[str]:
        probes = {"pointer_chase", "stream", "smem"}
        if int(self.info.compute_capability.split(".")[0]) >= 8:
            probes.add("async_copy")  # cp.async exists from sm_80
        if int(self.info.compute_capability.split(".")[0]) >= 9:
            probes.add("dsmem")  # thread block clusters exist from sm_90
            probes.add("bulk_copy")  # and the tensor memory accelerator
        if len(self.info.extra.get("peers", ())) > 1:
            probes.add("peer_access")
        if "pointer_chase_cg_hammered" in self._source("pointer_chase").code:
            probes.add("slice_contention")  # core's chase kernels (a plugin's may lack it)
        return frozenset(probes)

    def _peer(self, peer: int) -> int | None:
        """The other GPU holding a probe's data, with peer access enabled; None: this one."""
        if peer in (-1, self.info.index):
            return None
        if peer not in self.info.extra.get("peers", ()):
            raise PointSkipped(f"GPU {self.info.index} cannot load from GPU {peer} directly "
                               f"(peers: {self.info.extra.get('peers', [])})")
        if peer not in getattr(self, "_peers_enabled", set()):
            try:
                self.cp.cuda.runtime.deviceEnablePeerAccess(peer)
            except self.cp.cuda.runtime.CUDARuntimeError as e:
                if "AlreadyEnabled" not in str(e):
                    raise PointSkipped(f"peer access {self.info.index} -> {peer}: {e}") from None
            self._peers_enabled = getattr(self, "_peers_enabled", set()) | {peer}
        return peer

    def _peer_array(self, peer: int, host: np.ndarray) -> Any:
        """``host`` copied into GPU ``peer``'s memory."""
        cp = self.cp
        with cp.cuda.Device(peer):
            arr = cp.asarray(host)
            cp.cuda.runtime.deviceSynchronize()
        return arr

    # ---- kernels ---------------------------------------------------------------------
    def _source(self, probe: str) -> KernelSource:
        if probe not in self.kernel_sources:
            src = self.kernel_source(probe) if self.kernel_source else None
            self.kernel_sources[probe] = src or generic_kernel_source(probe)
        return self.kernel_sources[probe]

    def _module(self, probe: str, names: tuple[str, ...] = ()) -> Any:
        """The compiled module of ``probe`` (templates instantiated as ``names``), cached."""
        key = (probe, names)
        if key not in self._modules:
            src = self._source(probe)
            cupy_cache.guard()  # no cubin from a folder another user can write
            self._modules[key] = self.cp.RawModule(
                code=src.code, options=tuple(src.options),
                name_expressions=list(names) if names else None)
        return self._modules[key]

    def _kernel(self, probe: str, name: str) -> Any:
        """A kernel by name; template instances (``stream<16,4,0,0>``) are compiled on demand.
        Its registers, spills and shared memory go into the audit (see :mod:`.audit`), and its
        SASS audit starts building in the background."""
        kern = self._module(probe, (name,) if "<" in name else ()).get_function(name)
        if name not in self.kernel_audit:
            from gpumem.cuda.audit import function_attributes

            self.kernel_audit[name] = function_attributes(kern)
            src = self.kernel_sources.get(probe)
            if src is not None:
                self._sass.ask(probe, src.code, tuple(src.options),
                               (name,) if "<" in name else ())
        return kern

    def _sass_audit(self) -> dict[str, Any]:
        """Load/store opcodes of the kernels used so far, template instances included
        (nvcc + cuobjdump, built in the background as kernels are first used, kept on disk
        for the next run): what is finished; the kernels whose build is still running are
        named in ``kernel_sass_pending`` instead of being waited for (the wait cost a full
        H200 run 18 of its 48 s)."""
        from gpumem.cuda.audit import attr_key

        out: dict[str, Any] = {}
        done: set[str] = set()
        for _probe, kernels in self._sass.results(wait=False).items():
            for name, ops in kernels.items():
                if name in self.kernel_audit:
                    out[f"kernel_sass_{attr_key(name)}"] = " ".join(ops) or "-"
                    done.add(name)
        pending = sorted(set(self.kernel_audit) - done)
        if pending and self._sass.pending():
            out["kernel_sass_pending"] = " ".join(pending)
        return out

    def _set_carveout(self, kern: Any, percent: int) -> int:
        """Ask for an L1/shared split; return the preference read back (-1: unknown)."""
        try:  # RawModule.get_function returns a RawKernel, which exposes the attribute
            kern.preferred_shared_memory_carveout = percent
            return int(kern.preferred_shared_memory_carveout)
        except Exception:  # noqa: BLE001 - older CuPy/driver: record that we could not
            return -1

    def kernel_sha256(self, probe: str) -> str:
        src = self.kernel_sources.get(probe)
        return hashlib.sha256(src.code.encode()).hexdigest() if src else ""

    def close(self) -> None:
        self._bufs: dict[int | None, Any] = {}  # by slot (:meth:`_buffers`)
        self._warm_key, self._warm_args = None, ()
        self._sass.close()
        self.nvml.close()

    def _build_chain(self, mod: Any, req: ChaseRequest) -> Any:
        cp = self.cp
        n = req.footprint // 4
        arr = cp.empty(n, dtype=cp.uint32)
        if req.order == "pattern":
            from gpumem.contracts.chains import pattern_array

            idx, nxt = pattern_array(req.pattern)
            arr[cp.asarray(idx)] = cp.asarray(nxt.astype(np.uint32))
        elif req.order == "sequential":
            mod.get_function("chain_sequential")(
                (1024,), (256,), (arr, np.uint64(n), np.uint64(req.stride // 4)))
        elif req.order == "scattered":
            mod.get_function("chain_scattered")(
                (1024,), (256,), (arr, np.uint64(req.footprint // req.stride),
                                  np.uint64(req.stride // 4), np.uint64(scatter_key(req.seed))))
        else:
            lines = req.footprint // req.stride
            bits, k0, k1, k2, k3, _n = permutation_params(lines, req.seed)
            mod.get_function("chain_random")(
                (1024,), (256,), (arr, np.uint64(lines), np.uint64(req.stride // 4),
                                  np.int32(bits), np.uint64(k0), np.uint64(k1), np.uint64(k2),
                                  np.uint64(k3)))
        return arr

    def _warm_in_parallel(self, req: ChaseRequest, arr: Any) -> int:
        """Walk the chase's warm-up with ``req.warm_threads`` threads on its SM (the
        ``_warm`` kernel of its path, :func:`gpumem.contracts.chains.warm_segments`); the accesses
        walked: the whole warm-up, or 0 where it is not asked for, cannot be split, or the
        kernel source has no such kernel (an architecture plugin's own chase kernels)."""
        if req.warm_threads < 2 or req.path == "tex" or req.order == "pattern":
            return 0
        cycle = cycle_length(req.footprint, req.stride, req.order, req.element)
        split = warm_segments(cycle, req.warmup, req.record, req.warm_threads)
        if split is None:
            return 0
        try:
            kern = self._kernel("pointer_chase", _PATH_KERNELS[req.path] + "_warm")
        except Exception:  # noqa: BLE001 - no such kernel in this source: one thread warms
            return 0
        cp = self.cp
        first, bounds = split
        key = (req.footprint, req.stride, req.order, req.seed, req.warmup, req.record,
               req.warm_threads)
        if self._warm_key != key:  # l2_sm_map chases the same chain from every SM
            pos = np.concatenate(([0], bounds[:-1]))
            offsets = chain_offsets(req.footprint, req.stride, req.order, req.seed,
                                    int(req.warmup), element=req.element)
            self._warm_args = (cp.asarray((offsets[np.minimum(pos, req.warmup - 1)]
                                           // req.element).astype(np.uint32)),
                               cp.asarray(bounds))
            self._warm_key = key
        starts, bnds = self._warm_args
        claim = cp.zeros(2, dtype=cp.uint32)
        for blocks in (2 * self.info.sm_count, 16 * self.info.sm_count):
            kern((blocks,), (req.warm_threads,), (arr, starts, bnds, np.int32(first),
                                                  np.int32(req.sm), claim))
            cp.cuda.runtime.deviceSynchronize()
            if int(claim.get()[0]):
                return req.warmup
        raise PointSkipped(f"no block of the warm-up landed on SM {req.sm}")

    def _pipelined_warm_args(self, req: ChaseRequest) -> tuple | None:
        """The chain's arguments for a chase kernel that walks its warm-up with
        ``req.warm_ilp`` loads in flight (``NAME_ilpK``: the positions walked dependently
        first, the warm-up's accesses to lines the chase records; order, n, s, and the
        random permutation's bits and keys); ``None`` where it is not asked for or the
        chain's addresses do not follow from the position (pattern, scattered, texture)."""
        if (req.warm_ilp < 2 or req.warmup < 1 or req.path == "tex"
                or req.order not in ("sequential", "random")):
            return None
        cycle = cycle_length(req.footprint, req.stride, req.order, req.element)
        first = np.int32(recorded_first(cycle, req.warmup, req.record))
        if req.order == "sequential":
            return (first, np.int32(0), np.uint64(req.footprint // 4),
                    np.uint64(req.stride // 4), np.int32(0), np.uint64(0), np.uint64(0),
                    np.uint64(0), np.uint64(0))
        lines = req.footprint // req.stride
        bits, k0, k1, k2, k3, _n = permutation_params(lines, req.seed)
        return (first, np.int32(1), np.uint64(lines), np.uint64(req.stride // 4),
                np.int32(bits), np.uint64(k0), np.uint64(k1), np.uint64(k2), np.uint64(k3))

    def _texture(self, arr: Any) -> Any:
        """A texture object over the chain (32-bit unsigned elements, element reads)."""
        from cupy.cuda import runtime as rt
        from cupy.cuda import texture

        ch = texture.ChannelFormatDescriptor(32, 0, 0, 0, rt.cudaChannelFormatKindUnsigned)
        res = texture.ResourceDescriptor(rt.cudaResourceTypeLinear, arr=arr, chDesc=ch,
                                         sizeInBytes=arr.nbytes)
        return texture.TextureObject(res, texture.TextureDescriptor())

    # ---- probes ----------------------------------------------------------------------
    def pointer_chase(self, req: ChaseRequest) -> ChaseResult:
        req.validate()
        cp = self.cp
        if req.path not in self.info.load_paths or req.path not in _PATH_KERNELS:
            raise ProbeUnsupported(f"the CUDA pointer chase for '{self.arch}' has no "
                                   f"'{req.path}' path (paths: {', '.join(self.info.load_paths)})")
        if req.path == "tex" and req.footprint // 4 > TEX_LINEAR_MAX_ELEMENTS:
            raise PointSkipped(f"footprint {req.footprint} B exceeds a linear texture "
                               f"({TEX_LINEAR_MAX_ELEMENTS} elements)")
        if not 0 <= req.sm < max(1, self.info.sm_count):
            raise PointSkipped(f"SM {req.sm} does not exist ({self.info.sm_count} SMs)")
        if req.element != 4:
            raise ProbeUnsupported("the CUDA pointer chase uses 4-byte elements")
        if req.footprint // 4 > 2**32 - 1:
            raise PointSkipped("footprint above 16 GiB needs 8-byte chain elements")
        free, _total = cp.cuda.runtime.memGetInfo()
        if req.footprint + PLACEMENT_PADS[req.placement] > free - (256 << 20):
            raise PointSkipped(f"footprint {req.footprint} B does not fit in free device "
                               f"memory ({free} B)")
        mod = self._module("pointer_chase")
        peer = self._peer(req.peer)
        if peer is not None and (req.path == "tex" or req.order == "pattern"):
            raise PointSkipped("a chase in a peer's memory takes the ca, cg or nc path and a "
                               "sequential or random chain")
        pad = None
        try:
            if req.placement:  # held in front of the chain until the chase is done
                pad = cp.empty(PLACEMENT_PADS[req.placement], dtype=cp.uint8)
            if peer is not None:  # built here, placed in the peer's memory
                from gpumem.contracts.chains import chain_array

                arr = self._peer_array(peer, chain_array(req.footprint, req.stride, req.order,
                                                         req.seed))
            else:
                arr = self._build_chain(mod, req)
        except cp.cuda.memory.OutOfMemoryError as e:
            del pad
            self._release()
            behind = f" behind a {PLACEMENT_PADS[req.placement]} B pad" if req.placement else ""
            raise PointSkipped(f"out of device memory for footprint {req.footprint} B{behind}: "
                               f"{e}") from None
        # Where the record goes: paths whose first level is the L1 record to global memory
        # through L2 only (shared memory would take L1 capacity on unified L1/shared GPUs);
        # the L2-only path keeps the record in shared memory, out of L2's way.
        to_global = req.path != "cg" or 12 * req.record > SHARED_RECORD_MAX
        try:
            # a warm-up walked by several threads (req.warm_threads) is done here; the
            # chase then starts where it ended
            warmed = self._warm_in_parallel(req, arr) if peer is None else 0
            name = _PATH_KERNELS[req.path] + ("_global" if to_global else "")
            # a warm-up walked with loads in flight, by the chase's own kernel (an L1 keeps
            # nothing across kernels); a kernel source without it walks dependently
            pipelined = None if warmed or req.hammer else self._pipelined_warm_args(req)
            if pipelined is not None:
                try:  # does the kernel source have it?
                    self._kernel("pointer_chase", f"{name}_ilp{req.warm_ilp}")
                except Exception:  # noqa: BLE001 - an architecture plugin's own kernels
                    pipelined = None
                else:
                    name, warmed = f"{name}_ilp{req.warm_ilp}", req.warmup
            start = int(chain_offsets(req.footprint, req.stride, req.order, req.seed, 1,
                                      start=warmed, pattern=req.pattern)[0] // 4)
            hammer = self._hammer_args(req, to_global) if req.hammer else None
            if hammer is not None:
                name = "pointer_chase_cg_hammered"
            word = cp.uint32 if to_global else cp.uint64
            lat = cp.empty(req.record, dtype=word)
            nxt = cp.empty(req.record, dtype=cp.uint32)
            state = cp.zeros(4, dtype=cp.uint32)
            ovh = cp.empty(2048 if to_global else req.record, dtype=word)
            claim = cp.zeros(1, dtype=cp.uint32)
            kern = self._kernel("pointer_chase", name)
            self.carveout[req.path] = self._set_carveout(kern, CHASE_CARVEOUT_PERCENT)
            chain = self._texture(arr) if req.path == "tex" else arr
            smem = 0 if to_global else 12 * req.record
            # pinned to SM req.sm: enough one-thread blocks that one lands there; only the
            # first block on that SM runs the chase, the others return at once
            for blocks in (2 * self.info.sm_count, 16 * self.info.sm_count):
                args = (chain, np.uint32(start),
                        np.int32(req.warmup if pipelined else req.warmup - warmed),
                        np.int32(req.record), lat, nxt, state, ovh, np.int32(req.sm), claim)
                if hammer is not None:  # every claim and count afresh for each launch
                    for x in (claim, hammer[3], hammer[4]):
                        x.fill(0)
                    kern((blocks,), (HAMMER_THREADS,), args + hammer, shared_mem=smem)
                else:
                    kern((blocks,), (1,), args + (pipelined or ()), shared_mem=smem)
                cp.cuda.runtime.deviceSynchronize()
                if int(claim.get()[0]):
                    break
            else:
                raise PointSkipped(f"no block of the chase landed on SM {req.sm}")
            lat_h, nxt_h, state_h, ovh_h = (x.get() for x in (lat, nxt, state, ovh))
        finally:
            del arr, pad
            self._release()
        if to_global:
            ovh_h = ovh_h[:min(req.record, 1024)]
        index = np.empty(req.record, np.int64)
        index[0] = state_h[0]
        index[1:] = nxt_h[:-1]
        total = req.warmup + req.record
        expected_end = chain_offsets(req.footprint, req.stride, req.order, req.seed, 1,
                                     start=total, element=4, pattern=req.pattern)[0] // 4
        return ChaseResult(latency=lat_h.astype(np.float64), index=index,
                           timer_overhead=float(np.median(ovh_h)),
                           end_ok=bool(int(state_h[1]) == int(expected_end)),
                           sm=int(state_h[2]), hammered=int(state_h[3]))

    def _hammer_args(self, req: ChaseRequest, to_global: bool) -> tuple:
        """The hammered chase kernel's added arguments (``ChaseRequest.hammer``): the lines
        (elements), their count, a flag per SM, a claim per SM, the counts it syncs by, how
        many hammering blocks to wait for, how long to wait for them and how long at most
        to hammer."""
        if req.path != "cg" or to_global:
            raise ProbeUnsupported("a hammered chase takes the cg path, its record in shared "
                                   f"memory (at most {SHARED_RECORD_MAX // 12} accesses)")
        if "slice_contention" not in self.probes:
            raise ProbeUnsupported(f"the chase kernels for '{self.arch}' have no hammered "
                                   "chase (pointer_chase_cg_hammered)")
        n = max(1, self.info.sm_count)
        if max(req.hammer_sms) >= n:
            raise PointSkipped(f"hammer SM {max(req.hammer_sms)} does not exist ({n} SMs)")
        cp = self.cp
        on = np.zeros(HAMMER_SM_FLAGS, np.uint8)  # indexed by %smid, which may pass n
        on[list(req.hammer_sms)] = 1
        return (cp.asarray(np.asarray(req.hammer, np.int64) // 4, dtype=cp.uint32),
                np.int32(len(req.hammer)), cp.asarray(on),
                cp.zeros(HAMMER_SM_FLAGS, dtype=cp.uint32),
                cp.zeros(4, dtype=cp.uint32), np.uint32(len(req.hammer_sms)),
                np.int64(HAMMER_WAIT_CYCLES), np.int64(HAMMER_MAX_CYCLES))

    # ---- streaming -------------------------------------------------------------------
    def _buffers(self, footprint: int, need_b: bool, seed: int | None = None
                 ) -> tuple[Any, Any]:
        """Two device buffers of ``footprint`` bytes. A bandwidth depends on where the
        allocation falls: in the L2 for a cache-resident footprint (an H200's L2 read ran 5 %
        slower over a whole run once), over the memory channels for a DRAM-resident one (its
        HBM read 3.3 % slower over another), so timed repeats (the request's ``seed``) do not
        all use one allocation. Cache-resident: a fresh allocation per repeat. DRAM-resident:
        ROTATE allocations, kept while the footprint stays, repeat r on allocation r mod
        ROTATE (where they fit; one otherwise)."""
        cp = self.cp
        if footprint <= 2 * self.info.l2_bytes:
            slot = seed
        else:
            slot = (seed or 0) % ROTATE
        if getattr(self, "_buf_footprint", None) != footprint or (
                footprint <= 2 * self.info.l2_bytes and slot not in self._bufs):
            self._bufs = {}
            self._release()
            self._buf_footprint = footprint
            self._sink = cp.zeros(1, dtype=cp.uint32)
            self._warm: set = set()
        if slot not in self._bufs:
            free, _ = cp.cuda.runtime.memGetInfo()
            if footprint * 2 > free - (512 << 20):
                if self._bufs:  # no room for another: rotate among those there are
                    slots = sorted(self._bufs, key=lambda s: -1 if s is None else s)
                    return self._bufs[slots[(slot or 0) % len(slots)]]
                raise PointSkipped(f"two buffers of {footprint} B do not fit in free device "
                                   f"memory ({free} B)")
            self._bufs[slot] = (cp.zeros(footprint // 4, dtype=cp.uint32),
                                cp.zeros(footprint // 4, dtype=cp.uint32))
        return self._bufs[slot]

    def _release(self) -> None:
        """Give the memory pool's unused blocks back to the driver (cudaFree), noting by when
        the driver will have cleared them (:data:`CLEAR_BYTES_PER_S`, queued after any
        clearing still under way)."""
        pool = self.cp.get_default_memory_pool()
        freed = int(pool.free_bytes())
        pool.free_all_blocks()
        if freed > 0:
            self._cleared_at = (max(self._cleared_at, time.monotonic())
                                + freed / CLEAR_BYTES_PER_S)

    def _wait_cleared(self) -> None:
        """Sleep until the driver has cleared the memory this device freed (a DRAM stream
        timed meanwhile reads slower), counted in :attr:`clearing_waits` and
        :attr:`clearing_wait_s`."""
        wait = self._cleared_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
            self.clearing_waits += 1
            self.clearing_wait_s += wait

    def _time(self, launch: Any, key: Any, dram: bool = False) -> float:
        """Seconds of one launch, timed with CUDA events after an untimed warm-up the first
        time a configuration runs; a DRAM-resident one (``dram``) after the driver's
        clearing of freed memory (:meth:`_wait_cleared`)."""
        cp = self.cp
        if key not in self._warm:
            launch()
            self._warm.add(key)
        if dram:
            self._wait_cleared()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3

    def _stream_launch(self, req: StreamRequest, asynchronous: bool) -> StreamResult:
        req.validate()
        if req.path not in ("cg", "ca") or (req.path == "ca" and req.kind != "read"):
            raise ProbeUnsupported("the CUDA stream kernels load with .cg (path 'cg'), or read "
                                   "with .ca (path 'ca')")
        if req.threads > 1024:
            raise PointSkipped(f"{req.threads} threads per block exceed 1024")
        elems = req.footprint // req.width
        # one iteration moves ilp elements per thread; async_read moves one (its ilp is the
        # number of commit groups in flight, not of loads per iteration)
        per_block = req.threads * (1 if asynchronous else req.ilp)
        chunk = req.ctas * per_block
        # order "block": each block walks a slice, a (ctas // share)-th of the footprint, in
        # chunks of its own threads (share 1: its own)
        chunks = elems // req.slices // per_block if req.order == "block" else elems // chunk
        if chunks < 1:
            raise PointSkipped("the footprint is smaller than one chunk of the grid")
        iters = -(-(req.bytes_per_direction // req.width) // chunk)
        peer = self._peer(req.peer)
        if peer is not None:
            if asynchronous or req.kind != "read":
                raise PointSkipped("streams from a peer's memory are plain reads")
            key = (peer, req.footprint)
            if getattr(self, "_peer_buf_key", None) != key:
                self._peer_buf = None
                self._peer_buf = self._peer_array(
                    peer, np.zeros(req.footprint // 4, dtype=np.uint32))
                self._peer_buf_key = key
            _own, b = self._buffers(min(req.footprint, 1 << 20), False)
            a = self._peer_buf
        else:
            a, b = self._buffers(req.footprint, req.kind != "read", req.seed)
        if asynchronous:
            smem = req.ilp * req.threads * 16
            if req.width != 16 or req.kind != "read" or req.path != "cg":
                raise PointSkipped("cp.async copies 16-byte elements, reads only, through L2 "
                                   "(path 'cg')")
            if smem > 227 * 1024:
                raise PointSkipped(f"{smem} B of shared memory per block")
            name = f"async_read<{req.ilp}>"
            kern = self._kernel("async_copy", name)
            self.carveout["async_copy"] = self._set_carveout(kern, SHARED_CARVEOUT_PERCENT)
            if smem > 48 * 1024:
                kern.max_dynamic_shared_size_bytes = smem
            args: tuple[Any, ...] = (a, np.uint64(chunks), np.uint64(iters),
                                     np.int32(req.reverse), self._sink)

            def launch() -> None:
                kern((req.ctas,), (req.threads,), args, shared_mem=smem)
        else:
            kind = 3 if req.path == "ca" else STREAM_KIND_CODES[req.kind]
            name = f"stream<{req.width},{req.ilp},{STREAM_ORDER_CODES[req.order]},{kind}>"
            kern = self._kernel("stream", name)
            self.carveout["stream"] = self._set_carveout(kern, STREAM_CARVEOUT_PERCENT)
            args = (a, b, np.uint64(chunks), np.uint64(iters), np.int32(req.reverse),
                    self._sink, np.uint64(req.slices))

            def launch() -> None:
                kern((req.ctas,), (req.threads,), args)
        seconds = self._time(launch, (name, req.ctas, req.threads, req.reverse, req.peer),
                             dram=peer is None and req.footprint > 2 * self.info.l2_bytes)
        moved = iters * chunk * req.width * (2 if req.kind == "copy" else 1)
        return StreamResult(bytes=int(moved), seconds=seconds,
                            cycles=seconds * self.info.clock_mhz * 1e6)

    def stream(self, request: StreamRequest) -> StreamResult:
        return self._stream_launch(request, asynchronous=False)

    def async_copy(self, request: StreamRequest) -> StreamResult:
        if "async_copy" not in self.probes:
            raise ProbeUnsupported("cp.async needs compute capability 8.0 or newer")
        return self._stream_launch(request, asynchronous=True)

    # ---- shared memory ---------------------------------------------------------------
    def smem(self, request: SmemRequest) -> SmemResult:
        request.validate()
        if request.bank_mode not in self.info.smem_bank_modes:
            raise PointSkipped(f"{request.bank_mode}-byte bank mode is not available")
        if request.width != 4:
            raise ProbeUnsupported("the CUDA smem kernels use 4-byte words")
        default = self.info.smem_bank_modes[0] if self.info.smem_bank_modes else 4
        if request.bank_mode != default:
            self._set_bank_mode(request.bank_mode)
        try:
            return self._smem(request)
        finally:
            if request.bank_mode != default:
                self._set_bank_mode(0)

    def _set_bank_mode(self, width: int) -> None:
        """Kepler's shared-memory bank width (4 or 8 bytes; 0: the default) for the current
        context, through the driver API (CuPy has no binding). Newer GPUs ignore it."""
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            rc = lib.cuCtxSetSharedMemConfig(ctypes.c_int(_BANK_CONFIG[width]))
        except (OSError, AttributeError) as e:
            raise PointSkipped(f"cannot set the {width}-byte bank mode: {e}") from None
        if rc != 0:
            raise PointSkipped(f"cuCtxSetSharedMemConfig({width}-byte banks) failed: "
                               f"CUresult {rc}")

    def _smem(self, request: SmemRequest) -> SmemResult:
        cp = self.cp
        sink = cp.zeros(1, dtype=cp.uint32)
        if request.kind == "latency":
            out = cp.zeros(32, dtype=cp.uint64)
            self._kernel("smem", "smem_latency")(
                (1,), (32,), (np.uint32(request.stride), np.int32(SMEM_LATENCY_LOADS), out,
                              sink))
            per_load = float(np.median(out.get())) / 1000.0
            return SmemResult(latency=per_load, bytes_per_cycle=float("nan"))
        per_block = max(1, -(-request.warps // 32))
        threads = request.warps * 32 // per_block
        blocks = self.info.sm_count * per_block
        out = cp.zeros(3 * blocks, dtype=cp.uint64)
        kern = self._kernel("smem", f"smem_throughput<{request.ilp}>")
        self.carveout["smem"] = self._set_carveout(kern, SHARED_CARVEOUT_PERCENT)
        smem = request.ilp * threads * 4
        args = (np.int32(SMEM_THROUGHPUT_ITERATIONS), out, sink)
        kern((blocks,), (threads,), args, shared_mem=smem)  # warm-up
        kern((blocks,), (threads,), args, shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        rec = out.get().reshape(blocks, 3)
        per_block_bytes = threads * request.ilp * 4 * SMEM_THROUGHPUT_ITERATIONS
        rates = []
        for sm in np.unique(rec[:, 2]):  # per SM: its blocks' bytes over their joint span
            mine = rec[rec[:, 2] == sm]
            span = float(mine[:, 1].max() - mine[:, 0].min())
            if span > 0:
                rates.append(len(mine) * per_block_bytes / span)
        return SmemResult(latency=float("nan"), bytes_per_cycle=float(np.median(rates)))

    # ---- bulk copies (TMA) -------------------------------------------------------------
    def bulk_copy(self, request: BulkRequest) -> StreamResult:
        request.validate()
        if "bulk_copy" not in self.probes:
            raise ProbeUnsupported("bulk copies (TMA) need compute capability 9.0")
        smem = request.stages * request.chunk
        if request.ctas_per_sm * smem > SM90_SMEM_PER_SM:
            raise PointSkipped(f"{request.ctas_per_sm} blocks x {smem} B of shared memory "
                               f"exceed an SM's {SM90_SMEM_PER_SM} B")
        chunks = request.footprint // request.chunk
        blocks = self.info.sm_count * request.ctas_per_sm
        iters = -(-(request.bytes_per_direction // request.chunk) // blocks)
        a, _b = self._buffers(request.footprint, False)
        name = f"bulk_read<{request.stages}>"
        kern = self._kernel("bulk_copy", name)
        self.carveout["bulk_copy"] = self._set_carveout(kern, SHARED_CARVEOUT_PERCENT)
        if smem > 48 * 1024:
            kern.max_dynamic_shared_size_bytes = smem
        args = (a, np.uint64(chunks), np.uint32(request.chunk), np.uint64(iters), self._sink)

        def launch() -> None:
            kern((blocks,), (32,), args, shared_mem=smem)

        seconds = self._time(launch, (name, request.chunk, blocks, request.footprint),
                             dram=request.footprint > 2 * self.info.l2_bytes)
        return StreamResult(bytes=int(iters * blocks * request.chunk), seconds=seconds,
                            cycles=seconds * self.info.clock_mhz * 1e6)

    # ---- distributed shared memory --------------------------------------------------
    def dsmem(self, request: DsmemRequest) -> SmemResult:
        request.validate()
        if "dsmem" not in self.probes:
            raise ProbeUnsupported("distributed shared memory needs compute capability 9.0")
        cp = self.cp
        sink = cp.zeros(2, dtype=cp.uint32)
        c = request.cluster
        if request.kind == "latency":
            out = cp.zeros(2, dtype=cp.uint64)
            kern = self._kernel("dsmem", f"dsmem_latency<{c}>")
            self.carveout["dsmem"] = self._set_carveout(kern, SHARED_CARVEOUT_PERCENT)
            kern((c,), (32,), (np.int32(request.distance), np.int32(DSMEM_LATENCY_LOADS), out,
                               sink))
            cp.cuda.runtime.deviceSynchronize()
            return SmemResult(latency=float(out.get()[0]) / 1000.0,
                              bytes_per_cycle=float("nan"))
        threads = request.warps * 32
        blocks = self.info.sm_count // c * c
        if blocks == 0:
            raise PointSkipped(f"a cluster of {c} blocks needs {c} SMs")
        kern = self._kernel("dsmem", f"dsmem_throughput<{c},{request.ilp}>")
        self.carveout["dsmem"] = self._set_carveout(kern, SHARED_CARVEOUT_PERCENT)
        smem = max(DSMEM_BLOCK_SMEM, request.ilp * threads * 4)
        try:
            kern.max_dynamic_shared_size_bytes = smem
        except Exception as e:  # noqa: BLE001 - the driver refuses: no such point here
            raise PointSkipped(f"{smem} B of dynamic shared memory refused: {e}") from None
        out = cp.zeros(3 * blocks, dtype=cp.uint64)
        args = (np.int32(request.distance), np.int32(DSMEM_THROUGHPUT_ITERATIONS), out, sink)
        kern((blocks,), (threads,), args, shared_mem=smem)  # warm-up
        kern((blocks,), (threads,), args, shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        rec = out.get().reshape(blocks, 3).astype(np.float64)
        per_block = threads * request.ilp * 4 * DSMEM_THROUGHPUT_ITERATIONS
        spans = rec[:, 1] - rec[:, 0]
        rate = float(np.median(per_block / spans[spans > 0])) if (spans > 0).any() else \
            float("nan")
        return SmemResult(latency=float("nan"), bytes_per_cycle=rate)

    def point_state(self) -> dict[str, float]:
        """NVML's readings, and the seconds waited for the driver's clearing so far (the
        point's own wait: after less before)."""
        return {**self.nvml.quick(), "clearing_wait_s": round(self.clearing_wait_s, 6)}

    def neighbours(self) -> list[Any] | None:
        return self.nvml.neighbours()

    def provenance(self) -> dict[str, Any]:
        snap = self.nvml.snapshot()
        out = {f"nvml_{k}": v for k, v in snap.items()}
        if self.nvml.seen:  # the other processes seen since the last call (an experiment's
            from gpumem.contracts.contention import (
                describe_all,  # points), at their largest SM share
            )

            out["neighbours_seen"] = describe_all(list(self.nvml.seen.values()), 8)
            self.nvml.seen.clear()
        for probe in self.kernel_sources:
            out[f"kernel_{probe}_sha256"] = self.kernel_sha256(probe)
        for path, pct in self.carveout.items():
            out[f"kernel_carveout_{path}_percent"] = pct
        from gpumem.cuda.audit import attr_key

        for name, attrs in self.kernel_audit.items():
            out[f"kernel_audit_{attr_key(name)}"] = " ".join(f"{k}={v}" for k, v in
                                                             attrs.items()) or "-"
        out.update(self._sass_audit())
        return out

