"""``cuda``: discovers CUDA GPUs through CuPy and opens them as gpumem devices."""

from __future__ import annotations

from typing import Any

from gpumem.contracts.device import Device, DeviceBackend, DeviceInfo, Discovery, KernelLookup
from gpumem.contracts.errors import DeviceUnavailable

#: Shared-memory bank widths CUDA lets a program choose, by compute capability major: only
#: cudaDeviceSetSharedMemConfig on 3.x changes the width (CUDA C++ Programming Guide,
#: "Shared Memory" of compute capability 3.x); every other generation has 4-byte banks. A fact
#: of the CUDA runtime this backend drives, not of any one architecture plugin.
SELECTABLE_BANK_MODES: dict[int, tuple[int, ...]] = {3: (4, 8)}

CUPY_HINT = "pip install 'gpumem-dissect[cuda12]' or 'gpumem-dissect[cuda13]'"


def import_cupy() -> Any:
    """CuPy, or DeviceUnavailable with the reason (missing package, no driver, no device)."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken CUDA library load
        raise DeviceUnavailable(f"CuPy is not installed or failed to import "
                                f"({type(e).__name__}: {e}); {CUPY_HINT}") from None
    try:
        available = bool(cupy.cuda.is_available())
    except Exception as e:  # noqa: BLE001
        raise DeviceUnavailable(f"no usable CUDA driver ({type(e).__name__}: {e})") from None
    if not available:
        raise DeviceUnavailable("no CUDA device or driver found (cupy.cuda.is_available() "
                                "is False)")
    return cupy


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}" if v else ""


def _peers(rt: Any, index: int) -> list[int]:
    """This device and every other it can load from directly (NVLink or PCIe peer access)."""
    out = [index]
    try:
        for j in range(rt.getDeviceCount()):
            if j != index and rt.deviceCanAccessPeer(index, j):
                out.append(j)
    except Exception:  # noqa: BLE001 - no peer query: a lone device
        pass
    return sorted(out)


def device_info(cupy: Any, index: int) -> DeviceInfo:
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(index)
    with cupy.cuda.Device(index) as dev:
        attrs = dev.attributes
        cc = f"{props['major']}.{props['minor']}"
    from gpumem.cuda.nvml import Nvml

    nv = Nvml(index)
    static = nv.static()
    nv.close()
    uuid = static.get("uuid") or _text(props.get("uuid", b"")).encode().hex()[:32]
    clock_khz = attrs.get("ClockRate") or props.get("clockRate", 0)
    mem_khz = attrs.get("MemoryClockRate") or props.get("memoryClockRate", 0)
    bus = int(attrs.get("GlobalMemoryBusWidth") or props.get("memoryBusWidth", 0))
    major = int(props["major"])
    return DeviceInfo(
        kind="cuda",
        index=index,
        name=_text(props["name"]),
        compute_capability=cc,
        sm_count=int(props["multiProcessorCount"]),
        l2_bytes=int(props["l2CacheSize"]),
        memory_bytes=int(props["totalGlobalMem"]),
        clock_mhz=float(clock_khz) / 1000.0,
        memory_clock_mhz=float(mem_khz) / 1000.0,
        memory_bus_bits=bus,
        # double data rate: two transfers per memory clock on every bus bit
        peak_bandwidth_gbs=2.0 * float(mem_khz) * 1e3 * bus / 8 / 1e9,
        smem_bank_modes=SELECTABLE_BANK_MODES.get(major, (4,)),
        uuid=uuid,
        driver=static.get("driver_version") or _version(rt.driverGetVersion()),
        runtime=_version(rt.runtimeGetVersion()),
        extra={
            "cupy_version": cupy.__version__,
            "cuda_driver_api_version": _version(rt.driverGetVersion()),
            "shared_memory_per_sm": int(attrs.get("MaxSharedMemoryPerMultiprocessor", 0)),
            "shared_memory_per_block_optin": int(attrs.get("MaxSharedMemoryPerBlockOptin", 0)),
            "max_warps_per_sm": int(attrs.get("MaxThreadsPerMultiProcessor", 2048)) // 32,
            "persisting_l2_max_bytes": int(props.get("persistingL2CacheMaxSize", 0)),
            "peers": _peers(rt, index),
            **{f"nvml_{k}": v for k, v in static.items() if k not in ("uuid",)},
        },
    )


class CudaBackend(DeviceBackend):
    name = "cuda"
    summary = "NVIDIA GPUs through CuPy (kernels compiled with NVRTC)"

    def discover(self) -> Discovery:
        try:
            cupy = import_cupy()
            count = cupy.cuda.runtime.getDeviceCount()
        except DeviceUnavailable as e:
            return Discovery([], str(e))
        except Exception as e:  # noqa: BLE001 - cudaErrorNoDevice, cudaErrorInsufficientDriver
            return Discovery([], f"CUDA reports no usable device ({type(e).__name__}: {e})")
        infos, problems = [], []
        for i in range(count):
            try:
                infos.append(device_info(cupy, i))
            except Exception as e:  # noqa: BLE001
                problems.append(f"device {i}: {type(e).__name__}: {e}")
        return Discovery(infos, "; ".join(problems) if problems else
                         ("" if infos else "CUDA reports 0 devices"))

    def open(self, index: int, arch: str, kernel_source: KernelLookup | None = None) -> Device:
        cupy = import_cupy()
        count = cupy.cuda.runtime.getDeviceCount()
        if not 0 <= index < count:
            raise DeviceUnavailable(f"cuda:{index} does not exist ({count} CUDA device(s))")
        from gpumem.cuda.device import CudaDevice

        return CudaDevice(cupy, device_info(cupy, index), arch, kernel_source)
