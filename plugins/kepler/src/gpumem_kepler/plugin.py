"""The kepler plugin: the architecture and where its data live (gpumem.api.ArchitecturePlugin
reads expected.py, sim.toml, accelsim/ and kernels/; the entry point names ``plugin``)."""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="kepler",
    description="NVIDIA Kepler (GK1xx: GTX780 as dissected by Mei & Chu), compute capability 3.x",
    compute_capabilities=("3.0", "3.2", "3.5", "3.7"),
)

plugin = ArchitecturePlugin(
    ARCH, "gpumem_kepler",
    # core's pointer chase plus this architecture's texture path (kernels/*.cu say why
    # and which toolkit the real GPU needs)
    kernels={"pointer_chase": "pointer_chase_paths.cu"},
)
