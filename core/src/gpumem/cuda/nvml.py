"""NVML readings stored with every measured point: clocks, throttle reasons, ECC, power.

We only read; gpumem never sets clocks, power limits or modes. Any reading NVML cannot give
is left out rather than guessed. Without nvidia-ml-py or a driver, :func:`snapshot` is empty.
"""

from __future__ import annotations

from typing import Any

# nvmlClocksEventReason* bits (nvidia-ml-py 12+; "throttle" is the old name)
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
#: Reasons that mean the clocks were held down while measuring (idle alone is expected).
THROTTLING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def decode_reasons(mask: int) -> str:
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    return ",".join(names) if names else "none"


class Nvml:
    """A handle on one GPU through NVML; every method degrades to {} when NVML is absent."""

    def __init__(self, index: int) -> None:
        self.ok = False
        self.index = index
        try:
            import pynvml

            pynvml.nvmlInit()
            self._n = pynvml
            self._h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.ok = True
        except Exception:  # noqa: BLE001 - no library, no driver, no permission
            self._n = None
            self._h = None

    def _get(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._n, fn)(self._h, *args)
        except Exception:  # noqa: BLE001
            return None

    def static(self) -> dict[str, Any]:
        if not self.ok:
            return {}
        n = self._n
        out: dict[str, Any] = {}
        uuid = self._get("nvmlDeviceGetUUID")
        if uuid:
            out["uuid"] = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        try:
            drv = n.nvmlSystemGetDriverVersion()
            out["driver_version"] = drv.decode() if isinstance(drv, bytes) else str(drv)
        except Exception:  # noqa: BLE001
            pass
        for key, fn, args in (("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", (n.NVML_CLOCK_SM,)),
                              ("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", (n.NVML_CLOCK_MEM,)),
                              ("power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit", ())):
            v = self._get(fn, *args)
            if v is not None:
                out[key] = int(v)
        ecc = self._get("nvmlDeviceGetEccMode")
        if ecc is not None:
            out["ecc_enabled"] = int(ecc[0])
        mig = self._get("nvmlDeviceGetMigMode")
        if mig is not None:
            out["mig_mode"] = int(mig[0])
        pers = self._get("nvmlDeviceGetPersistenceMode")
        if pers is not None:
            out["persistence_mode"] = int(pers)
        return out

    def snapshot(self) -> dict[str, Any]:
        """Clocks, throttle reasons, temperature, power, utilisation and ECC errors now."""
        if not self.ok:
            return {}
        n = self._n
        out: dict[str, Any] = {k: int(v) for k, v in self.quick().items()}
        pstate = self._get("nvmlDeviceGetPerformanceState")
        if pstate is not None:
            out["pstate"] = int(pstate)
        if "clock_event_reasons" in out:
            out["clock_event_reason_names"] = decode_reasons(out["clock_event_reasons"])
        try:
            ecc = n.nvmlDeviceGetTotalEccErrors(self._h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                n.NVML_VOLATILE_ECC)
            out["ecc_uncorrected_volatile"] = int(ecc)
        except Exception:  # noqa: BLE001
            pass
        util = self._get("nvmlDeviceGetUtilizationRates")
        if util is not None:
            out["gpu_utilization_pct"] = int(util.gpu)
        procs = self._get("nvmlDeviceGetComputeRunningProcesses")
        if procs is not None:
            out["compute_processes"] = len(procs)
        return out

    def quick(self) -> dict[str, float]:
        """The readings that can change from one sweep point to the next (a few NVML calls)."""
        if not self.ok:
            return {}
        n = self._n
        out: dict[str, float] = {}
        for key, fn, args in (("sm_clock_mhz", "nvmlDeviceGetClockInfo", (n.NVML_CLOCK_SM,)),
                              ("mem_clock_mhz", "nvmlDeviceGetClockInfo", (n.NVML_CLOCK_MEM,)),
                              ("temperature_c", "nvmlDeviceGetTemperature",
                               (n.NVML_TEMPERATURE_GPU,)),
                              ("power_mw", "nvmlDeviceGetPowerUsage", ())):
            v = self._get(fn, *args)
            if v is not None:
                out[key] = float(v)
        reasons = self._get("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = self._get("nvmlDeviceGetCurrentClocksThrottleReasons")
        if reasons is not None:
            out["clock_event_reasons"] = float(int(reasons))
            out["throttled"] = float(bool(int(reasons) & THROTTLING))
        return out

    def close(self) -> None:
        if self.ok:
            try:
                self._n.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
            self.ok = False
