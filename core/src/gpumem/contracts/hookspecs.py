"""The hook specifications every gpumem plugin implements a subset of.

A plugin is a module (or object) found through the ``gpumem`` entry-point group; it implements
hooks by defining functions with these names, decorated with :data:`gpumem.hookimpl`. It imports
from gpumem only :mod:`gpumem.api` (the declared surface). An architecture plugin usually
implements none by hand: :class:`gpumem.api.ArchitecturePlugin` implements them from the
package's layout (``expected.py``, ``sim.toml``, ``kernels/``).
Registration hooks receive a ``register`` callback: call it once per contributed object. Each
object has a unique ``name``; core refuses a name another plugin already holds and reports the
plugin that tried (see :mod:`gpumem.plugin.registry`). Importing the plugin and every hook call must
return within ``GPUMEM_PLUGIN_TIMEOUT`` seconds (15 by default): an import or registration
that takes longer makes the plugin broken; a later hook (expected values, simulator configs,
kernel sources) that takes longer is named in one warning and the plugin is left out of every
later hook call of the command. Hooks run on a daemon worker thread, each call in a copy of
the caller's :mod:`contextvars` context (a ``ContextVar`` the caller set is seen; what the hook
sets stays in its call). What a run calls on
registered objects (an experiment's ``measure``, a device's or simulator's methods) is the
run itself and is not timed. Every hook is called plugin by plugin,
through one path (:meth:`gpumem.plugin.registry.Plugins.answers`; registration through
:meth:`~gpumem.plugin.registry.Plugins.add`): one plugin that raises is named in a warning and the
others still answer. A ``firstresult`` hook asks plugins in pluggy's order (``tryfirst``, then
the last registered first, then ``trylast``); every other hook asks them in registration order
(core first: the first registered plugin's answer of a name wins), so ``tryfirst``/``trylast``
on such a hook are refused at load, as hook wrappers are.

The families follow the product: **Architecture** (what ``--arch NAME`` resolves to),
**Experiment** (sweeps and their analysis, plus expected values), **Device** (hardware backends)
and **Simulator** (simulated devices and their configs). A backend's own hooks are added by
its plugin through :func:`gpumem_addhooks`: the CUDA backend's ``gpumem_kernel_source`` (the
kernel of each probe) lives in :mod:`gpumem.cuda.hookspecs`.
``tests/test_hookspecs.py`` fails when a hook here lacks a docstring with an example, or when no
test exercises it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from gpumem.contracts.architecture import Architecture
    from gpumem.contracts.device import DeviceBackend, DeviceInfo
    from gpumem.contracts.experiment import Experiment
    from gpumem.contracts.findings import Expected
    from gpumem.contracts.formats import Format
    from gpumem.contracts.simulator import Simulator

hookspec = pluggy.HookspecMarker("gpumem")

# ---------------------------------------------------------------------------------------------
# Hooks that add hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add hook specifications of your own, as pytest's ``pytest_addhooks`` does.

    Called once for each plugin that implements it, when it registers (through the same
    bounded, isolated path as every hook), before its other hooks are checked; plugins
    registered later may then implement the added hooks. Core's CUDA backend adds
    :mod:`gpumem.cuda.hookspecs` (``gpumem_kernel_source``) this way: hooks only one backend
    calls belong to that backend, not to every plugin's contract. A plugin whose specs clash
    with existing ones, or whose hook raises, fails to load, named in one line.

    :param pluginmanager: the ``pluggy.PluginManager``: call its ``add_hookspecs(module)``.

    Example::

        from gpumem.api import hookimpl

        @hookimpl
        def gpumem_addhooks(pluginmanager):
            from gpumem_rocm import hookspecs  # defines gpumem_hip_kernel_source
            pluginmanager.add_hookspecs(hookspecs)
    """


# ---------------------------------------------------------------------------------------------
# Architecture hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_register_architectures(register: Callable[[Architecture], None]) -> None:
    """Contribute GPU architectures that ``gpumem run --arch NAME`` can resolve.

    An :class:`gpumem.Architecture` names the compute capabilities it claims, so
    ``--device auto`` can pick a CUDA device the plugin knows how to measure.

    :param register: call once per :class:`gpumem.Architecture`.

    Example::

        from gpumem.api import Architecture, hookimpl

        @hookimpl
        def gpumem_register_architectures(register):
            register(Architecture(name="hopper", description="NVIDIA Hopper (GH100)",
                                  compute_capabilities=("9.0",)))
    """


# ---------------------------------------------------------------------------------------------
# Experiment hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_register_experiments(register: Callable[[type[Experiment]], None]) -> None:
    """Contribute experiments: named sweeps that run on any device and analyse into findings.

    Register the class, not an instance; core instantiates it per run. An experiment limited to
    some architectures sets ``archs = ("hopper",)``; ``gpumem run --arch X all`` runs every
    experiment whose ``archs`` is ``None`` or contains ``X``. ``findings`` declares every
    finding name its analysis can report (exact names or ``fnmatch`` patterns); expected
    values are checked against the declared names, and one that declares none covers none.

    :param register: call once per :class:`gpumem.Experiment` subclass.

    Example::

        from gpumem.api import Experiment, hookimpl

        class CpAsync(Experiment):
            name = "cpasync"
            summary = "cp.async against matched plain loads"
            archs = ("hopper",)
            findings = ("cpasync.speedup",)
            ...

        @hookimpl
        def gpumem_register_experiments(register):
            register(CpAsync)
    """


@hookspec
def gpumem_expected_values(arch: str, device: DeviceInfo) -> list[Expected] | None:
    """Return expected values of findings for ``arch`` measured on ``device``.

    Every plugin is asked; return ``None`` (or nothing) for architectures you do not model.
    Values may be computed from the device's own properties (SM count, L2 size, clocks), so
    two cards of one architecture each get their own. When several plugins return a value for
    the same finding, the first registered plugin's wins: core's built-in plugin, then the
    installed plugins in entry-point name order
    (:meth:`gpumem.plugin.registry.Plugins.expected_values`
    asks them in that order; :func:`gpumem.contracts.findings.evaluate` keeps the first value of a
    name).
    Each plugin's call is isolated: one that raises or hangs is named in a warning and its
    values are left out; the others' still count.

    :param arch: the architecture name given to ``--arch``.
    :param device: the properties of the device being measured (or simulated).
    :return: a list of :class:`gpumem.Expected`, each with its source: a public document
        users can check (paper with section or figure, vendor document, public repository
        and file, or a derivation from device properties), or ``ASSUMED:`` and why. Never a
        note or file users do not have. One entry per finding name.

    Example::

        from gpumem.api import Expected, hookimpl

        @hookimpl
        def gpumem_expected_values(arch, device):
            if arch != "kepler":
                return None
            return [Expected("lat.smem", 46.75, units="cycle", rel_tol=0.05,
                             source="Mei & Chu, TPDS 2017, sec. 6.2; Mei & Chu's released "
                                    "data (github.com/zhanglx13/GPU-Benchmark-Dissecting-"
                                    "GPU-Mem, file latency.txt)")]
    """


# ---------------------------------------------------------------------------------------------
# Device hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_register_devices(register: Callable[[DeviceBackend], None]) -> None:
    """Contribute device backends: hardware gpumem can discover and open (``--device NAME:N``).

    Core registers ``cuda``; a plugin for other hardware registers its own backend, which
    ``gpumem devices`` then lists and ``--device NAME:N`` opens.

    :param register: call once per :class:`gpumem.DeviceBackend` instance.

    Example::

        from gpumem.api import hookimpl
        from gpumem.api.simulator import DeviceBackend

        class RocmBackend(DeviceBackend):
            name = "rocm"
            def discover(self): ...
            def open(self, index, arch, kernel_source=None): ...  # kernel_source(probe)

        @hookimpl
        def gpumem_register_devices(register):
            register(RocmBackend())
    """


# ---------------------------------------------------------------------------------------------
# Simulator hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_register_simulators(register: Callable[[Simulator], None]) -> None:
    """Contribute simulators: programs or models that turn a config into a simulated device.

    Core registers ``sim``, the built-in memory-hierarchy model; the ``accelsim`` plugin
    registers a driver for an installed Accel-Sim. ``--device NAME`` selects one.

    :param register: call once per :class:`gpumem.Simulator` instance.

    Example::

        from gpumem.api import hookimpl
        from gpumem.api.simulator import Simulator

        class MySim(Simulator):
            name = "mysim"
            def available(self): return (True, "")
            def create_device(self, arch, config, *, seed=0): ...

        @hookimpl
        def gpumem_register_simulators(register):
            register(MySim())
    """


@hookspec(firstresult=True)
def gpumem_simulator_config(arch: str, simulator: str) -> Any:
    """Return the configuration ``simulator`` needs to imitate ``arch``, or ``None``.

    Stops at the first non-``None`` result, each plugin asked on its own (one that raises is
    named and the next asked). For the built-in ``sim`` it is a
    :class:`gpumem.api.simulator.SimConfig`; other simulators document their own type (``accelsim``
    takes a :class:`pathlib.Path` of a directory holding ``gpgpusim.config`` and
    ``trace.config``, so an architecture plugin ships its base config as plain files). An
    :class:`~gpumem.api.ArchitecturePlugin` answers with the package's resource named after
    the simulator: ``sim.toml`` read as a SimConfig, otherwise the path of ``<simulator>``
    or ``<simulator>.*`` (``accelsim/``).

    :param arch: the architecture name.
    :param simulator: the simulator name (``sim``, ``accelsim``, ...).

    Example::

        from importlib.resources import files
        from gpumem.api import hookimpl
        from gpumem.api.simulator import SimConfig

        @hookimpl
        def gpumem_simulator_config(arch, simulator):
            if arch == "hopper" and simulator == "sim":
                return SimConfig.from_toml(files("gpumem_hopper").joinpath("sim.toml").read_text())
            return None
    """


# ---------------------------------------------------------------------------------------------
# Interoperability hooks
# ---------------------------------------------------------------------------------------------


@hookspec
def gpumem_register_formats(register: Callable[[Format], None]) -> None:
    """Contribute file formats of other tools: ``gpumem import NAME`` and ``export NAME``.

    A :class:`gpumem.contracts.formats.Format` overrides ``import_file`` (the other tool's file
    into a simulator config or a run directory), ``export_run`` (a measured run into the other
    tool's input files), or both, and returns a :class:`gpumem.contracts.formats.Converted` with
    the paths it wrote and a warning for everything one side cannot express. Both receive
    ``plugins``, the plugin set the command runs with: what a format may ask of it
    (architectures, expected values, base configs) is
    :class:`gpumem.contracts.formats.PluginSet`.

    :param register: call once per format instance.

    Example::

        from gpumem.api import hookimpl
        from gpumem.api.formats import Converted, Format

        class Csv(Format):
            name = "csv"
            summary = "findings as CSV"
            exports = "findings.csv"

            def export_run(self, run, out, *, arch=None, target=None, plugins):
                ...  # write out / "findings.csv"
                return Converted([out / "findings.csv"])

        @hookimpl
        def gpumem_register_formats(register):
            register(Csv())
    """
