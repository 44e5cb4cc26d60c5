"""``CudaDevice``: the probes as CuPy kernels on a real GPU."""

from __future__ import annotations

import hashlib
from importlib.resources import files
from typing import Any

import numpy as np

from gpumem.chains import chain_offsets, permutation_params
from gpumem.device import ChaseRequest, ChaseResult, Device, DeviceInfo, KernelSource
from gpumem.errors import PointSkipped, ProbeUnsupported

GENERIC_SOURCE = "pointer_chase.cu"
_PATH_KERNELS = {"ca": "pointer_chase_ca", "cg": "pointer_chase_cg", "nc": "pointer_chase_nc"}
#: Carve-out preference of the chase kernels: 0 % shared memory, i.e. the largest L1 the
#: driver allows beside the kernel's own shared memory. Without it the driver picked a
#: shared-memory-heavy split on the H200 and the L1 plateau ended at 22 KB.
CHASE_CARVEOUT_PERCENT = 0


def generic_kernel_source() -> KernelSource:
    code = files("gpumem.cuda").joinpath("kernels", GENERIC_SOURCE).read_text()
    return KernelSource(code=code, name="pointer_chase", options=("-std=c++17",))


class CudaDevice(Device):
    source = "measured"

    def __init__(self, cupy: Any, info: DeviceInfo, arch: str) -> None:
        super().__init__(info, arch)
        self.cp = cupy
        self._dev = cupy.cuda.Device(info.index)
        self._dev.use()
        from gpumem.cuda.nvml import Nvml

        self.nvml = Nvml(info.index)
        self._modules: dict[str, Any] = {}
        self.kernel_sources: dict[str, KernelSource] = {}
        self.carveout: dict[str, int] = {}

    @property
    def probes(self) -> frozenset[str]:
        return frozenset({"pointer_chase"})

    # ---- kernels ---------------------------------------------------------------------
    def _module(self, probe: str) -> Any:
        if probe not in self._modules:
            from gpumem.plugins import get_plugins

            src = get_plugins().hook.gpumem_kernel_source(arch=self.arch, probe=probe)
            src = src or generic_kernel_source()
            self.kernel_sources[probe] = src
            self._modules[probe] = self.cp.RawModule(code=src.code, options=tuple(src.options))
        return self._modules[probe]

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

    def _build_chain(self, mod: Any, req: ChaseRequest) -> Any:
        cp = self.cp
        n = req.footprint // 4
        arr = cp.empty(n, dtype=cp.uint32)
        if req.order == "sequential":
            mod.get_function("chain_sequential")(
                (1024,), (256,), (arr, np.uint64(n), np.uint64(req.stride // 4)))
        else:
            lines = req.footprint // req.stride
            bits, k0, k1, k2, k3, _n = permutation_params(lines, req.seed)
            mod.get_function("chain_random")(
                (1024,), (256,), (arr, np.uint64(lines), np.uint64(req.stride // 4),
                                  np.int32(bits), np.uint64(k0), np.uint64(k1), np.uint64(k2),
                                  np.uint64(k3)))
        return arr

    # ---- probes ----------------------------------------------------------------------
    def pointer_chase(self, req: ChaseRequest) -> ChaseResult:
        req.validate()
        cp = self.cp
        if req.path not in _PATH_KERNELS:
            raise ProbeUnsupported(f"the generic CUDA pointer chase has no '{req.path}' path")
        if req.element != 4:
            raise ProbeUnsupported("the CUDA pointer chase uses 4-byte elements")
        if req.footprint // 4 > 2**32 - 1:
            raise PointSkipped("footprint above 16 GiB needs 8-byte chain elements")
        free, _total = cp.cuda.runtime.memGetInfo()
        if req.footprint > free - (256 << 20):
            raise PointSkipped(f"footprint {req.footprint} B does not fit in free device "
                               f"memory ({free} B)")
        mod = self._module("pointer_chase")
        try:
            arr = self._build_chain(mod, req)
        except cp.cuda.memory.OutOfMemoryError as e:
            cp.get_default_memory_pool().free_all_blocks()
            raise PointSkipped(f"out of device memory for footprint {req.footprint} B: {e}")
        try:
            start = int(chain_offsets(req.footprint, req.stride, req.order, req.seed, 1)[0] // 4)
            lat = cp.empty(req.record, dtype=cp.uint64)
            nxt = cp.empty(req.record, dtype=cp.uint32)
            state = cp.zeros(2, dtype=cp.uint32)
            ovh = cp.empty(req.record, dtype=cp.uint64)
            kern = mod.get_function(_PATH_KERNELS[req.path])
            self.carveout[req.path] = self._set_carveout(kern, CHASE_CARVEOUT_PERCENT)
            kern((1,), (1,), (arr, np.uint32(start), np.int32(req.warmup), np.int32(req.record),
                              lat, nxt, state, ovh), shared_mem=12 * req.record)
            cp.cuda.runtime.deviceSynchronize()
            lat_h, nxt_h, state_h, ovh_h = (x.get() for x in (lat, nxt, state, ovh))
        finally:
            del arr
            cp.get_default_memory_pool().free_all_blocks()
        index = np.empty(req.record, np.int64)
        index[0] = state_h[0]
        index[1:] = nxt_h[:-1]
        total = req.warmup + req.record
        expected_end = chain_offsets(req.footprint, req.stride, req.order, req.seed, 1,
                                     start=total, element=4)[0] // 4
        return ChaseResult(latency=lat_h.astype(np.float64), index=index,
                           timer_overhead=float(np.median(ovh_h)),
                           end_ok=bool(int(state_h[1]) == int(expected_end)))

    def provenance(self) -> dict[str, Any]:
        snap = self.nvml.snapshot()
        out = {f"nvml_{k}": v for k, v in snap.items()}
        for probe in self.kernel_sources:
            out[f"kernel_{probe}_sha256"] = self.kernel_sha256(probe)
        for path, pct in self.carveout.items():
            out[f"kernel_carveout_{path}_percent"] = pct
        return out

    def close(self) -> None:
        self.nvml.close()
