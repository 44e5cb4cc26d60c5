"""The ``accelsim`` simulator as gpumem sees it: find the binary, read a config, open a device."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpumem import Device, Simulator
from gpumem.errors import DeviceUnavailable, UsageError

from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.locate import LIMIT_ENV, find_binary, max_warp_insts


class AccelSim(Simulator):
    name = "accelsim"
    summary = "Accel-Sim / GPGPU-Sim on synthetic traces (mean chases, streams), when installed"

    def available(self) -> tuple[bool, str]:
        path, why = find_binary()
        return (True, "") if path is not None else (False, why)

    def load_config(self, path: Path) -> AccelSimConfig:
        """``--sim-config``: a ``gpgpusim.config`` (``trace.config`` read from beside it) or a
        directory holding both. A config the device could not run is a usage error now,
        before anything is written."""
        from gpumem_accelsim.device import check_config

        try:
            cfg = AccelSimConfig.load(path)
            check_config(cfg)
        except ValueError as e:  # AccelSimConfigError, OptionFileError, CacheStringError
            raise UsageError(f"--sim-config {path}: {e}") from None
        return cfg

    def create_device(self, arch: str, config: Any, *, seed: int = 0) -> Device:
        """``config``: an :class:`AccelSimConfig`, a path to one (what architecture plugins
        return from ``gpumem_simulator_config``), or the :class:`AccelSimSetup` of
        ``reopen_spec`` (worker processes)."""
        from gpumem_accelsim.device import AccelSimSetup, open_device

        if isinstance(config, AccelSimSetup):
            binary = Path(config.binary)
            if not (binary.is_file() and os.access(binary, os.X_OK)):
                raise DeviceUnavailable(f"Accel-Sim binary {binary} is not an executable file")
            return open_device(config, arch, seed)
        path, why = find_binary()
        if path is None:
            raise DeviceUnavailable(why)
        if config is None:
            raise DeviceUnavailable(f"no Accel-Sim config for {arch}; give --sim-config")
        if isinstance(config, (str, os.PathLike)):
            try:
                config = AccelSimConfig.load(config)
            except ValueError as e:
                raise DeviceUnavailable(f"Accel-Sim config for {arch}: {e}") from None
            if config.name == "accelsim":  # a plugin's packaged folder: name it by arch
                config.name = arch
        if not isinstance(config, AccelSimConfig):
            raise DeviceUnavailable(f"Accel-Sim config for {arch} must be an AccelSimConfig or "
                                    f"a path, not {type(config).__name__}")
        try:
            limit = max_warp_insts()
        except ValueError as e:
            raise DeviceUnavailable(f"{LIMIT_ENV}: {e}") from None
        return open_device(AccelSimSetup(config, str(path), max_warp_insts=limit), arch, seed)
