"""``Simulator``: a program or model that turns a configuration into a :class:`Device`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from gpumem.contracts.device import Device


class Simulator(ABC):
    """A simulator gpumem can run experiments on (``--device NAME``)."""

    name: str = ""
    summary: str = ""

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(usable here?, why not; where usable, what it is in a few words or ""). The
        built-in simulator is always available."""

    @abstractmethod
    def create_device(self, arch: str, config: Any, *, seed: int = 0) -> Device:
        """A device that simulates ``arch`` with ``config`` (from ``gpumem_simulator_config``
        or :meth:`load_config`)."""

    def load_config(self, path: Path) -> Any:
        """Read a user's config file (``--sim-config``)."""
        raise NotImplementedError(f"simulator {self.name!r} takes no config file")

