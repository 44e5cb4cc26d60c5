"""The built-in simulator: ``SimConfig`` (what to simulate) and the engine that runs it."""

from gpumem.sim.config import CacheLevel, Dram, SetIndex, SimConfig, SimConfigError, Timer, TlbLevel

__all__ = ["CacheLevel", "Dram", "SetIndex", "SimConfig", "SimConfigError", "Timer", "TlbLevel"]
