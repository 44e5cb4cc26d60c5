"""``sim``: the built-in simulator, registered by core like any plugin's simulator."""

from __future__ import annotations

from pathlib import Path

from gpumem.contracts.device import Device
from gpumem.contracts.errors import UsageError
from gpumem.contracts.simulator import Simulator
from gpumem.sim.config import SimConfig, SimConfigError


class BuiltinSimulator(Simulator):
    name = "sim"
    summary = "built-in deterministic memory-hierarchy model (no GPU needed)"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def create_device(self, arch: str, config: SimConfig, *, seed: int = 0) -> Device:
        if not isinstance(config, SimConfig):
            raise UsageError(f"the built-in simulator needs a SimConfig for '{arch}', "
                             f"got {type(config).__name__}")
        from gpumem.sim.device import SimDevice  # imports Numba: only when simulating

        return SimDevice(config, arch, seed=seed)

    def load_config(self, path: Path) -> SimConfig:
        try:
            return SimConfig.load(path)
        except SimConfigError as e:
            raise UsageError(f"invalid --sim-config: {e}") from None
