"""The h200t plugin: its architecture and where its data live.

gpumem.api.ArchitecturePlugin reads expected.py and sim.toml from this package. The entry
point names ``plugin``.
"""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name='h200t',
    description='NVIDIA H200, compute capability 9.0 (measured by gpumem)',
    compute_capabilities=('9.0',),
)

plugin = ArchitecturePlugin(ARCH, 'gpumem_h200t')
