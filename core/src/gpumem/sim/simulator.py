"""``sim``: the built-in simulator, registered by core like any plugin's simulator."""

from __future__ import annotations

import warnings
from pathlib import Path

from gpumem.contracts.device import Device
from gpumem.contracts.errors import SimConfigWarning, UsageError
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
        """The user's config, and a warning for each default or cycle it leaves to chance
        (:meth:`SimConfig.assumptions`): legal, but said."""
        try:
            cfg = SimConfig.load(path)
        except SimConfigError as e:
            raise UsageError(f"invalid --sim-config: {e}") from None
        for line in cfg.assumptions():
            warnings.warn(SimConfigWarning(f"--sim-config {path}: {line}"), stacklevel=2)
        return cfg
