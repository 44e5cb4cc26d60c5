"""Hook implementations of the hopper plugin (nothing else lives here)."""

from __future__ import annotations

from gpumem import Architecture, hookimpl
from gpumem.simulator import packaged_config

ARCH = Architecture(
    name="hopper",
    description="NVIDIA Hopper (GH100: H100, H200), compute capability 9.0",
    compute_capabilities=("9.0",),
)


@hookimpl
def gpumem_register_architectures(register):
    register(ARCH)


@hookimpl
def gpumem_expected_values(arch, device):
    if arch != ARCH.name:
        return None
    from gpumem_hopper.expected import expected_values

    return expected_values(device)


@hookimpl
def gpumem_simulator_config(arch, simulator):
    """The built-in simulator's config (sim.toml), or Accel-Sim's base config directory
    (accelsim/: gpgpusim.config; PROVENANCE.md there says where it comes from)."""
    return packaged_config("gpumem_hopper", simulator) if arch == ARCH.name else None
