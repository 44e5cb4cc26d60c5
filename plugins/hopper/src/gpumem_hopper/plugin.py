"""The hopper plugin: the architecture and where its data live (gpumem.api.ArchitecturePlugin
reads expected.py, sim.toml and accelsim/; the entry point names ``plugin``)."""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="hopper",
    description="NVIDIA Hopper (GH100: H100, H200), compute capability 9.0",
    compute_capabilities=("9.0",),
)

plugin = ArchitecturePlugin(ARCH, "gpumem_hopper")
