"""The maxwell plugin: the architecture and where its data live (gpumem.api.ArchitecturePlugin
reads expected.py, sim.toml, accelsim/ and kernels/; the entry point names ``plugin``)."""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="maxwell",
    description="NVIDIA Maxwell (GM2xx: GTX980 as dissected by Mei & Chu), compute capability 5.x",
    compute_capabilities=("5.0", "5.2", "5.3"),
)

plugin = ArchitecturePlugin(
    ARCH, "gpumem_maxwell",
    # core's pointer chase plus this architecture's texture path (kernels/*.cu say why
    # and which toolkit the real GPU needs)
    kernels={"pointer_chase": "pointer_chase_paths.cu"},
)
