"""The public API for simulator and device-backend plugins (part of :mod:`gpumem.api`).

An architecture or experiment plugin needs none of this. A simulator plugin (Accel-Sim's)
turns a :class:`~gpumem.sim.config.SimConfig` into its own configuration and back, and may fit
one to a measured run (:func:`calibrate`); a device backend discovers devices
(:class:`DeviceBackend`, :class:`Discovery`) and compiles the pointer chase gpumem defines
(:func:`chain_offsets`, :func:`generic_kernel_source`). Loads no CuPy, Numba or matplotlib.
"""

from __future__ import annotations

from gpumem.contracts.chains import chain_offsets, cycle_length
from gpumem.contracts.device import DeviceBackend, Discovery, KernelSource
from gpumem.contracts.simulator import Simulator
from gpumem.cuda.device import generic_kernel_source
from gpumem.interop.calibrate import Calibrated, calibrate
from gpumem.sim.config import (
    CacheLevel,
    Dram,
    Interconnect,
    SetIndex,
    SharedMemory,
    SimConfig,
    SimConfigError,
    Throughput,
    Timer,
    TlbLevel,
)

__all__ = [
    "CacheLevel", "Calibrated", "calibrate", "chain_offsets", "cycle_length", "DeviceBackend",
    "Discovery", "Dram", "generic_kernel_source", "Interconnect", "KernelSource", "SetIndex",
    "SharedMemory", "SimConfig", "SimConfigError", "Simulator", "Throughput", "Timer", "TlbLevel",
]
