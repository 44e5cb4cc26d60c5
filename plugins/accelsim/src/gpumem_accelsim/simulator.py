"""The ``accelsim`` simulator as gpumem sees it."""

from __future__ import annotations

from typing import Any

from gpumem import Device, Simulator
from gpumem.errors import DeviceUnavailable

from gpumem_accelsim.locate import find_binary


class AccelSim(Simulator):
    name = "accelsim"
    summary = "Accel-Sim / GPGPU-Sim, when installed"

    def available(self) -> tuple[bool, str]:
        path, why = find_binary()
        if path is None:
            return False, why
        return False, (f"found {path}, but this gpumem-accelsim release (0.1) cannot drive "
                       f"Accel-Sim yet")

    def create_device(self, arch: str, config: Any, *, seed: int = 0) -> Device:
        ok, why = self.available()
        raise DeviceUnavailable(why)
