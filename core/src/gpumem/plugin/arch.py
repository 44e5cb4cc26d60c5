"""``ArchitecturePlugin``: the hooks of an architecture plugin, from the package's layout.

An architecture plugin differs from another only in its data: the :class:`Architecture`,
its expected values, its simulator configs, its kernels and perhaps experiments of its own.
The hooks that hand these to gpumem are the same for every architecture, so they live here
once, and a plugin's ``plugin.py`` is one object the entry point names
(``hopper = "gpumem_hopper.plugin:plugin"``). The package layout it reads:

* ``expected.py`` with ``expected_values(device) -> list[Expected]`` (optional);
* a simulator config named after the simulator: ``sim.toml`` for the built-in simulator
  (a :class:`gpumem.sim.SimConfig`), and for any other simulator the file or directory whose
  name is the simulator's, handed to it as a path (``accelsim/`` for Accel-Sim);
* ``kernels/FILE.cu`` for each probe named in ``kernels`` (appended to core's generic
  kernel source of that probe, so the file adds paths rather than replacing the probe).

Everything is read lazily, when a hook asks for this architecture, so loading the plugin
costs nothing and a broken file is reported by the hook that needed it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from gpumem import hookimpl
from gpumem.contracts.architecture import Architecture

BUILTIN_SIMULATOR = "sim"


class ArchitecturePlugin:
    """Hook implementations for the architecture ``arch`` packaged as ``package``.

    ``kernels`` maps a probe to the file under ``kernels/`` that adds to it; ``experiments``
    returns this plugin's own experiment classes (a callable, so that importing them waits
    until gpumem asks)."""

    def __init__(self, arch: Architecture, package: str, *,
                 kernels: Mapping[str, str] | None = None,
                 experiments: Callable[[], Sequence[type]] | None = None) -> None:
        self.arch = arch
        self.package = package
        self.kernels = dict(kernels or {})
        self._experiments = experiments

    def __repr__(self) -> str:
        return f"ArchitecturePlugin({self.arch.name!r}, {self.package!r})"

    def _resource(self, name: str) -> Any:
        return files(self.package).joinpath(name)

    @hookimpl
    def gpumem_register_architectures(self, register):
        register(self.arch)

    @hookimpl
    def gpumem_register_experiments(self, register):
        for experiment in (self._experiments() if self._experiments else ()):
            register(experiment)

    @hookimpl
    def gpumem_expected_values(self, arch, device):
        if arch != self.arch.name:
            return None
        try:
            module = importlib.import_module(f"{self.package}.expected")
        except ModuleNotFoundError as e:
            if e.name != f"{self.package}.expected":
                raise  # expected.py exists and imports something missing: its bug, reported
            return None
        return module.expected_values(device)

    @hookimpl
    def gpumem_simulator_config(self, arch, simulator):
        """The config named after ``simulator`` in the package, or ``None``."""
        if arch != self.arch.name:
            return None
        if simulator == BUILTIN_SIMULATOR:
            toml = self._resource("sim.toml")
            if not toml.is_file():
                return None
            from gpumem.sim import SimConfig

            return SimConfig.from_toml(toml.read_text())
        for entry in files(self.package).iterdir():
            if entry.name.endswith((".py", ".pyc")) or entry.name == "__pycache__":
                continue  # the package's code is never a config
            if entry.name == simulator or entry.name.partition(".")[0] == simulator:
                return Path(str(entry))
        return None

    @hookimpl
    def gpumem_kernel_source(self, arch, probe):
        if arch != self.arch.name or probe not in self.kernels:
            return None
        from gpumem.cuda.device import generic_kernel_source

        extra = self._resource("kernels").joinpath(self.kernels[probe]).read_text()
        return generic_kernel_source(probe, extra)
