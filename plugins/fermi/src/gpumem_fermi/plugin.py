"""The fermi plugin: the architecture and where its data live (gpumem.api.ArchitecturePlugin
reads expected.py, sim.toml, accelsim/ and kernels/; the entry point names ``plugin``)."""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="fermi",
    description="NVIDIA Fermi (GF1xx: GTX560Ti as dissected by Mei & Chu), compute capability 2.x",
    compute_capabilities=("2.0", "2.1"),
)

plugin = ArchitecturePlugin(
    ARCH, "gpumem_fermi",
    # core's pointer chase plus this architecture's texture path (kernels/*.cu say why
    # and which toolkit the real GPU needs)
    kernels={"pointer_chase": "pointer_chase_paths.cu"},
)
