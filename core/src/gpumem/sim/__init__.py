"""The built-in simulator: ``SimConfig`` (what to simulate) and the engines that run it."""

from gpumem.sim.config import (
    CacheLevel,
    Dram,
    Interconnect,
    Neighbour,
    SetIndex,
    SharedMemory,
    SimConfig,
    SimConfigError,
    Throughput,
    Timer,
    TlbLevel,
)

__all__ = ["CacheLevel", "Dram", "Interconnect", "Neighbour", "SetIndex", "SharedMemory",
           "SimConfig", "SimConfigError", "Throughput", "Timer", "TlbLevel"]
