"""Names ``gpumem.api`` gave before the API was split (0.1.0), and the part that has them
now: ``gpumem.api`` still gives them with a DeprecationWarning, and ``gpumem plugin check``
names a plugin that imports one (kept below both, so each can read it)."""

from __future__ import annotations

MOVED: dict[str, str] = {name: "gpumem.api.simulator" for name in (
    "CacheLevel", "Calibrated", "calibrate", "chain_offsets", "DeviceBackend", "Discovery",
    "Dram", "generic_kernel_source", "Interconnect", "KernelSource", "SetIndex",
    "SharedMemory", "SimConfig", "SimConfigError", "Simulator", "Throughput", "Timer",
    "TlbLevel")} | {name: "gpumem.api.formats" for name in (
    "Converted", "Format", "FormatError", "load_source", "OutputError", "write_text")}
