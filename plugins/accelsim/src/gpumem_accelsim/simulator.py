"""The ``accelsim`` simulator as gpumem sees it: find the binary, read a config, open a device."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpumem.api import Device, DeviceUnavailable, UsageError
from gpumem.api.simulator import Simulator

from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.locate import LIMIT_ENV, find_binary, max_warp_insts, probe


class AccelSim(Simulator):
    name = "accelsim"
    summary = "Accel-Sim / GPGPU-Sim on synthetic traces (mean chases, streams), when installed"

    def available(self) -> tuple[bool, str]:
        """(found and runs as Accel-Sim?, why not; or, found, its build line and path)."""
        path, why = find_binary()
        if path is None:
            return False, why
        return True, f"{probe(path)[0]} ({path})"

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


def build_fixes(config: AccelSimConfig, version: str) -> tuple[AccelSimConfig, list[str]]:
    """``config`` as build ``version`` runs it, and one line per change: options it does not
    register left out (it would exit with 'Unknown Option'), BookSim's interconnect (which
    needs an ``.icnt`` file beside the config) replaced by the built-in crossbar, and a
    partition indexing the build asserts on replaced by linear. Unchanged: the same object
    and no lines."""
    from gpumem_accelsim.known_options import unknown_options

    drop = unknown_options(config.merged(), version)
    booksim = config.merged().get("-network_mode", "1").strip() == "1"
    # partition indexing 6 came with the H100 config; older builds assert on it
    indexing = config.merged().get("-gpgpu_memory_partition_indexing", "0").strip()
    new_indexing = version == "accelsim-dev-2024-10" and indexing not in ("0", "1", "2", "4")
    if not drop and not booksim and not new_indexing:
        return config, []
    out = AccelSimConfig(config.gpgpusim.copy(), config.trace.copy(), name=config.name,
                         source=config.source)
    notes = []
    if booksim:  # the probes run one CTA or stream through L2 slices, where the built-in
        # crossbar does as well
        out.gpgpusim["-network_mode"] = "2"
        notes.append("-network_mode 1 (BookSim, needs its .icnt file) replaced by 2 (the "
                     "built-in local crossbar)")
    if new_indexing:
        out.gpgpusim["-gpgpu_memory_partition_indexing"] = "0"
        notes.append(f"-gpgpu_memory_partition_indexing {indexing} is not in build {version} "
                     f"(0 linear, 1 XOR, 2 IPOLY for 16-64 channels, 4 random): linear (0) is "
                     f"used")
    for name in drop:
        for part in (out.gpgpusim, out.trace):
            if name in part:
                part.remove(name)
    if drop:
        notes.append(f"left out {', '.join(drop)}: unknown to Accel-Sim build {version}")
    return out, notes


def _for_build(config: AccelSimConfig) -> AccelSimConfig:
    """``config`` as the installed build runs it (:func:`build_fixes`): the build is
    ``GPUMEM_ACCELSIM_VERSION`` (default: the oldest version gpumem knows, the Accel-Sim
    ``dev`` of October 2024). What changed is said once, on stderr."""
    import sys

    from gpumem_accelsim.known_options import VERSIONS

    version = os.environ.get(VERSION_ENV, "").strip() or VERSIONS[0]
    if version not in VERSIONS:
        raise UsageError(f"{VERSION_ENV}={version}: unknown Accel-Sim version (choose from: "
                         f"{', '.join(VERSIONS)})")
    out, notes = build_fixes(config, version)
    for note in notes:
        extra = f" (set {VERSION_ENV} for another build)" if note.startswith("left out") else ""
        print(f"gpumem: warning: {config.name}: {note}{extra}", file=sys.stderr)
    return out
