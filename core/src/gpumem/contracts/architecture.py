"""``Architecture``: what ``--arch NAME`` resolves to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    """A GPU architecture a plugin knows how to measure, model and simulate.

    ``compute_capabilities`` are the CUDA compute capabilities (``"9.0"``) the plugin claims:
    ``--device auto`` takes a CUDA device whose capability is listed here. ``generic`` marks
    core's architecture of a GPU that no plugin describes (``sm_90``:
    :mod:`gpumem.contracts.generic`).
    """

    name: str
    description: str
    compute_capabilities: tuple[str, ...] = ()
    vendor: str = "NVIDIA"
    generic: bool = False

    def claims(self, compute_capability: str) -> bool:
        return compute_capability in self.compute_capabilities
