"""Hook implementations of the hopper plugin (nothing else lives here)."""

from __future__ import annotations

from importlib.resources import files

from gpumem import Architecture, hookimpl

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
    (accelsim/: gpgpusim.config, PROVENANCE.md says where it comes from)."""
    if arch != ARCH.name:
        return None
    if simulator == "accelsim":
        from pathlib import Path

        return Path(str(files("gpumem_hopper").joinpath("accelsim")))
    if simulator != "sim":
        return None
    from gpumem.sim import SimConfig

    return SimConfig.from_toml(files("gpumem_hopper").joinpath("sim.toml").read_text())
