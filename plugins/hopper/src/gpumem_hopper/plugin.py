"""The hopper plugin: the architecture, its own experiment and where its data live.

gpumem.api.ArchitecturePlugin reads expected.py, sim.toml and accelsim/; ``experiments``
adds ``bulk_copy`` (bulk.py: the TMA's bulk copies, with its report section and figure). The
entry point names ``plugin``. A third party's architecture plugin starts from this file.
"""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name="hopper",
    description="NVIDIA Hopper (GH100: H100, H200), compute capability 9.0",
    compute_capabilities=("9.0",),
)


def experiments():
    """Hopper's own experiments (imported when gpumem asks for them)."""
    from gpumem_hopper.bulk import BulkCopy

    return [BulkCopy]


plugin = ArchitecturePlugin(ARCH, "gpumem_hopper", experiments=experiments)
