"""Hook implementations of the maxwell plugin (nothing else lives here)."""

from __future__ import annotations

from gpumem import Architecture, hookimpl
from gpumem.simulator import packaged_config

ARCH = Architecture(
    name="maxwell",
    description="NVIDIA Maxwell (GM2xx: GTX980 as dissected by Mei & Chu), compute capability 5.x",
    compute_capabilities=("5.0", "5.2", "5.3"),
)


@hookimpl
def gpumem_register_architectures(register):
    register(ARCH)


@hookimpl
def gpumem_expected_values(arch, device):
    if arch != ARCH.name:
        return None
    from gpumem_maxwell.expected import expected_values

    return expected_values(device)


@hookimpl
def gpumem_simulator_config(arch, simulator):
    """The built-in simulator's config (sim.toml), or Accel-Sim's base config directory
    (accelsim/: gpgpusim.config; PROVENANCE.md there says where it comes from)."""
    return packaged_config("gpumem_maxwell", simulator) if arch == ARCH.name else None


@hookimpl
def gpumem_kernel_source(arch, probe):
    """Core's pointer chase plus this architecture's texture path (kernels/*.cu say why and
    which toolkit the real GPU needs)."""
    if arch != ARCH.name or probe != "pointer_chase":
        return None
    from gpumem.cuda.device import packaged_kernel_source

    return packaged_kernel_source("gpumem_maxwell", "pointer_chase_paths.cu", probe)
