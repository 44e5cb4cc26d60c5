"""NVML readings stored with every measured point: clocks, throttle reasons, ECC, power,
and the other processes on the GPU.

We only read; gpumem never sets clocks, power limits or modes. Any reading NVML cannot give
is left out rather than guessed. Without nvidia-ml-py or a driver, :func:`snapshot` is empty.

Other processes (issue 30): a GPU shared with another job gives numbers that describe the
sharing, not the hardware (an H200 whose neighbour copied 2 GB in a loop showed a 1.46 MB
L2). :meth:`Nvml.neighbours` lists every compute, graphics and MPS process on the GPU but
this one, with its memory and, where the driver samples it, its SM utilisation; a process
that holds a context but has not used the SMs in the last :data:`ACTIVE_WINDOW_S` seconds
is present but not *active* (a notebook with a framework imported). Where the driver gives
no per-process samples, a present process counts as active: gpumem cannot tell.
"""

from __future__ import annotations

import os
import time
from typing import Any

from gpumem.contracts.contention import Neighbour

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
#: a neighbour's SM sample counts as current for this long (NVML samples every 1/6 s to 1 s)
ACTIVE_WINDOW_S = 3.0
#: the other processes are listed at most this often (seconds): listing them and their SM
#: samples costs about 2.6 ms on an H200, more than many points take; a reading reused
#: for the points of the next 0.25 s still catches a neighbour that arrives mid-sweep
NEIGHBOUR_REFRESH_S = 0.25
#: the process name of the MPS control daemon's server (clients then share its context)
MPS_SERVER = "nvidia-cuda-mps-server"


def decode_reasons(mask: int) -> str:
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    return ",".join(names) if names else "none"


class Nvml:
    """A handle on one GPU through NVML; every method degrades to {} when NVML is absent."""

    def __init__(self, index: int) -> None:
        self.ok = False
        self.index = index
        self.own_pid = os.getpid()
        #: pid -> (sample time in s, SM or memory %) of the newest per-process sample seen
        self._samples: dict[int, tuple[float, float]] = {}
        self._last_sample_us = 0
        self._per_process = True   # until the driver says it has no per-process samples
        #: every other process seen during the run, by pid (its largest SM share)
        self.seen: dict[int, Neighbour] = {}
        self._counts: tuple[float, dict[str, float]] = (-1e9, {})
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
        for key, fn, args in (
                ("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", (n.NVML_CLOCK_SM,)),
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
        out.update(self.neighbour_counts())
        reasons = self._get("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = self._get("nvmlDeviceGetCurrentClocksThrottleReasons")
        if reasons is not None:
            out["clock_event_reasons"] = float(int(reasons))
            out["throttled"] = float(bool(int(reasons) & THROTTLING))
        return out

    # ---- other processes ---------------------------------------------------------------
    def _sm_samples(self) -> None:
        """Fold the per-process SM samples taken since the last call into ``_samples``."""
        if not self._per_process:
            return
        n = self._n
        try:
            got = n.nvmlDeviceGetProcessUtilization(self._h, self._last_sample_us)
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "value", None)
            if code == getattr(n, "NVML_ERROR_NOT_FOUND", -1):
                return  # no sample since the last call: the ones kept stand
            self._per_process = False  # not supported here: present counts as active
            return
        for smp in got:
            ts = int(getattr(smp, "timeStamp", 0))
            self._last_sample_us = max(self._last_sample_us, ts)
            # a neighbour that only copies (cudaMemcpy on the copy engines) shows in the
            # memory controllers, not the SMs: either counts as activity
            share = max(float(smp.smUtil), float(getattr(smp, "memUtil", 0) or 0))
            self._samples[int(smp.pid)] = (ts / 1e6, share)

    def neighbours(self) -> list[Neighbour] | None:
        """The other processes on the GPU now; ``None`` when NVML cannot list them."""
        if not self.ok:
            return None
        found: dict[int, Neighbour] = {}
        listed = False
        for kind, fn in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                         ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
                         ("mps", "nvmlDeviceGetMPSComputeRunningProcesses")):
            procs = self._get(fn)
            if procs is None:
                continue
            listed = True
            for p in procs:
                pid = int(p.pid)
                if pid == self.own_pid or pid in found:
                    continue
                found[pid] = Neighbour(pid, self._name(pid), int(p.usedGpuMemory or 0),
                                       kind)
        if not listed:
            return None
        self._sm_samples()
        now = time.time()
        out = []
        for pid, nb in found.items():
            util = None
            if self._per_process:
                ts, pct = self._samples.get(pid, (0.0, 0.0))
                util = pct if now - ts <= ACTIVE_WINDOW_S else 0.0
            nb = Neighbour(nb.pid, nb.name, nb.used_bytes, nb.kind, util)
            out.append(nb)
            before = self.seen.get(pid)
            if before is None or (util or 0) > (before.busy_pct or 0):
                self.seen[pid] = nb
        return out

    def _name(self, pid: int) -> str:
        try:
            name = self._n.nvmlSystemGetProcessName(pid)
        except Exception:  # noqa: BLE001 - another container's process: no name
            return "?"
        return name.decode(errors="replace") if isinstance(name, bytes) else str(name)

    def neighbour_counts(self) -> dict[str, float]:
        """Per-point readings: other processes, the active ones, their largest SM share,
        and whether an MPS server shares the GPU (only what NVML can say), at most
        :data:`NEIGHBOUR_REFRESH_S` old."""
        at, counts = self._counts
        if time.monotonic() - at < NEIGHBOUR_REFRESH_S:
            return dict(counts)
        counts = self._neighbour_counts()
        self._counts = (time.monotonic(), counts)
        return dict(counts)

    def _neighbour_counts(self) -> dict[str, float]:
        nbs = self.neighbours()
        if nbs is None:
            return {}
        out = {"other_processes": float(len(nbs)),
               "other_active_processes": float(sum(nb.active for nb in nbs)),
               "mps_server": float(any(nb.name.rsplit("/", 1)[-1] == MPS_SERVER
                                       for nb in nbs))}
        shares = [nb.busy_pct for nb in nbs if nb.busy_pct is not None]
        if self._per_process:
            out["other_busy_pct"] = float(max(shares, default=0.0))
        util = self._get("nvmlDeviceGetUtilizationRates")
        if util is not None:
            out["gpu_utilization_pct"] = float(util.gpu)
        return out

    def close(self) -> None:
        if self.ok:
            try:
                self._n.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
            self.ok = False
