"""The ``accelsim`` simulator as gpumem sees it: find the binary, read a config, open a device."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpumem.api import Device, DeviceUnavailable, Simulator, UsageError

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
        config = _for_build(config)
        try:
            limit = max_warp_insts()
        except ValueError as e:
            raise DeviceUnavailable(f"{LIMIT_ENV}: {e}") from None
        return open_device(AccelSimSetup(config, str(path), max_warp_insts=limit), arch, seed)


VERSION_ENV = "GPUMEM_ACCELSIM_VERSION"


def _for_build(config: AccelSimConfig) -> AccelSimConfig:
    """``config`` without the options the installed build does not register (it would exit
    with 'Unknown Option' at every point): the build is ``GPUMEM_ACCELSIM_VERSION`` (default:
    the oldest version gpumem knows, the Accel-Sim ``dev`` of October 2024). What is left out
    is said once, on stderr."""
    import sys

    from gpumem_accelsim.known_options import VERSIONS, unknown_options

    version = os.environ.get(VERSION_ENV, "").strip() or VERSIONS[0]
    if version not in VERSIONS:
        raise UsageError(f"{VERSION_ENV}={version}: unknown Accel-Sim version (choose from: "
                         f"{', '.join(VERSIONS)})")
    drop = unknown_options(config.merged(), version)
    booksim = config.merged().get("-network_mode", "1").strip() == "1"
    # partition indexing 6 came with the H100 config; older builds assert on it
    indexing = config.merged().get("-gpgpu_memory_partition_indexing", "0").strip()
    new_indexing = version == "accelsim-dev-2024-10" and indexing not in ("0", "1", "2", "4")
    if not drop and not booksim and not new_indexing:
        return config
    out = AccelSimConfig(config.gpgpusim.copy(), config.trace.copy(), name=config.name,
                         source=config.source)
    if booksim:  # BookSim wants its .icnt file in the working directory; the probes run one
        # CTA or stream through L2 slices, where the built-in crossbar does as well
        out.gpgpusim["-network_mode"] = "2"
        print(f"gpumem: warning: {config.name}: -network_mode 1 (BookSim, needs its .icnt "
              f"file) replaced by 2 (the built-in local crossbar)", file=sys.stderr)
    if new_indexing:
        out.gpgpusim["-gpgpu_memory_partition_indexing"] = "0"
        print(f"gpumem: warning: {config.name}: -gpgpu_memory_partition_indexing {indexing} "
              f"is not in build {version} (0 linear, 1 XOR, 2 IPOLY for 16-64 channels, 4 "
              f"random): linear (0) is used", file=sys.stderr)
    for name in drop:
        for part in (out.gpgpusim, out.trace):
            if name in part:
                part.remove(name)
    if drop:
        print(f"gpumem: warning: {config.name}: left out {', '.join(drop)}: unknown to "
              f"Accel-Sim build {version} (set {VERSION_ENV} for another build)",
              file=sys.stderr)
    return out
