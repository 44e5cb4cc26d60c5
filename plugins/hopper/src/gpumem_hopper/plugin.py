"""The hopper plugin: the architecture and where its data live.

gpumem.api.ArchitecturePlugin reads expected.py, sim.toml and accelsim/. Every experiment a
Hopper GPU runs is core's (bulk copies and clusters included: any sm_90 device has them), so
the plugin adds none. The entry point names ``plugin``.
"""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="hopper",
    description="NVIDIA Hopper (GH100: H100, H200), compute capability 9.0",
    compute_capabilities=("9.0",),
)

plugin = ArchitecturePlugin(ARCH, "gpumem_hopper")
