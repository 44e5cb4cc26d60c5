"""Hook implementations of the example plugin (the entry point names this module)."""

from __future__ import annotations

from importlib.resources import files

from gpumem import Architecture, hookimpl

from gpumem_example_arch.experiment import PathLatency

ARCH = Architecture(
    name="gv100",
    description="NVIDIA GV100 (Tesla V100, TITAN V), compute capability 7.0",
    compute_capabilities=("7.0",),
)


@hookimpl
def gpumem_register_architectures(register):
    register(ARCH)


@hookimpl
def gpumem_register_experiments(register):
    register(PathLatency)


@hookimpl
def gpumem_expected_values(arch, device):
    if arch != ARCH.name:
        return None  # every plugin is asked, for every architecture
    from gpumem_example_arch.expected import expected_values

    return expected_values(device)


@hookimpl
def gpumem_simulator_config(arch, simulator):
    if arch != ARCH.name or simulator != "sim":
        return None
    from gpumem.sim import SimConfig

    text = files("gpumem_example_arch").joinpath("sim.toml").read_text()
    return SimConfig.from_toml(text)
