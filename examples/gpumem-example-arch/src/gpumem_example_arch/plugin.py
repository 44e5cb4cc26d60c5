"""The example plugin: its architecture, its experiment, and where its data live.

:class:`gpumem.api.ArchitecturePlugin` implements the hooks from the package's layout:
``expected.py`` (expected values), ``sim.toml`` (the built-in simulator's config) and, if a
plugin ships them, ``accelsim/`` and ``kernels/``. The entry point names ``plugin``.
"""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="gv100",
    description="NVIDIA GV100 (Tesla V100, TITAN V), compute capability 7.0",
    compute_capabilities=("7.0",),
)


def experiments():
    """This plugin's own experiments (imported when gpumem asks for them)."""
    from gpumem_example_arch.experiment import PathLatency

    return [PathLatency]


plugin = ArchitecturePlugin(ARCH, "gpumem_example_arch", experiments=experiments)
