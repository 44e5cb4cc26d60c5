"""Hook implementations of the accelsim plugin."""

from __future__ import annotations

from gpumem.api import hookimpl


@hookimpl
def gpumem_register_simulators(register):
    from gpumem_accelsim.simulator import AccelSim

    register(AccelSim())


@hookimpl
def gpumem_register_formats(register):
    from gpumem_accelsim.formats import AccelSimFormat

    register(AccelSimFormat())
