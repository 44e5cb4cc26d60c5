"""Resolution: what the user typed (``--arch``, experiments, ``--device``, ``--sim-config``)
turned into objects, with no side effects: anything wrong is a :class:`UsageError` before a
byte is written.

``--arch auto`` (what ``gpumem run`` does without ``--arch``) is :func:`choose_arch`: the
device is found first, then its architecture: the plugin that claims its compute capability,
else the generic ``sm_XY`` (:mod:`gpumem.contracts.generic`). On a simulator the config says: the
architecture it names where a plugin provides it, else the generic one of its compute
capability.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpumem.contracts.architecture import Architecture
from gpumem.contracts.device import Device
from gpumem.contracts.errors import DeviceUnavailable, GpumemError, UsageError
from gpumem.contracts.experiment import Experiment
from gpumem.contracts.generic import (
    ArchChoice,
    choose_architecture,
    generic_architecture,
    generic_name,
    is_generic,
)
from gpumem.plugin.registry import Plugins

_DEVICE_RE = re.compile(r"^(?P<backend>[A-Za-z][\w-]*):(?P<index>\d+)$")


@dataclass
class DeviceChoice:
    """A resolved ``--device``: a backend index, or a simulator with its config."""

    kind: str  # "backend" | "simulator"
    name: str
    index: int = 0
    config: Any = None
    notice: str = ""


def _choices(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


def resolve_arch(plugins: Plugins, arch: str) -> Architecture:
    """A plugin's architecture, or the generic ``sm_XY`` of a GPU no plugin describes."""
    archs = plugins.architectures()
    if arch in archs:
        return archs[arch]
    if is_generic(arch):
        return generic_architecture(arch)
    raise UsageError(f"unknown architecture '{arch}' (choose from: {_choices(archs)}); or "
                     f"auto, the default: the device's own; or sm_XY, the generic "
                     f"architecture of any GPU of compute capability X.Y")


def _claims(plugins: Plugins) -> list[tuple[str, Architecture]]:
    """(plugin, architecture) in load order: gpumem's own plugins before third parties."""
    return [(c.plugin.name, c.obj) for c in plugins.registry["architectures"].values()]


def choose_arch(plugins: Plugins, spec: str, sim_config: Path | None
                ) -> tuple[ArchChoice, str]:
    """``--arch auto``: (the architecture and the line saying why, the ``--device`` to open).

    ``--device auto`` becomes the first GPU a plugin claims, else the first GPU found; a
    simulator needs ``--sim-config`` (its config names the architecture)."""
    sims = plugins.simulators()
    if spec in sims:
        return _arch_of_config(plugins, spec, sims[spec], sim_config), spec
    backends = plugins.devices()
    m = _DEVICE_RE.match(spec)
    if spec != "auto" and not (m and m["backend"] in backends):
        raise UsageError(f"unknown device '{spec}' (choose from: {_device_choices(plugins)})")
    reasons, first = [], None
    for bname, backend in backends.items():
        if m and bname != m["backend"]:
            continue
        found = backend.discover()
        devices = [d for d in found.devices if not m or d.index == int(m["index"])]
        if m and not devices:
            raise UsageError(f"device {spec} is not available: "
                             f"{found.message or 'no such device'}")
        for d in devices:
            what = f"{bname}:{d.index} ({d.name})"
            choice = choose_architecture(_claims(plugins), d.compute_capability, what)
            if not choice.arch.generic:
                return choice, f"{bname}:{d.index}"
            first = first or (choice, f"{bname}:{d.index}")
        if not devices:
            reasons.append(f"{bname}: {found.message or 'no device'}")
    if first is not None:
        return first
    raise UsageError(f"no GPU found ({'; '.join(reasons) or 'no device backend'}); to run on "
                     f"the built-in simulator give --arch ARCH (one of: "
                     f"{_choices(plugins.architectures())}) or --device sim --sim-config FILE")


def _arch_of_config(plugins: Plugins, spec: str, simulator: Any,
                    sim_config: Path | None) -> ArchChoice:
    """The architecture a simulator config names, if a plugin provides it, else the generic
    one of the config's compute capability."""
    if sim_config is None:
        raise UsageError(f"--device {spec} without --arch needs --sim-config FILE (the "
                         f"simulated GPU), or --arch ARCH for a plugin's own config (choose "
                         f"from: {_choices(plugins.architectures())})")
    cfg = simulator_config(plugins, "", simulator, sim_config)
    named = str(getattr(cfg, "arch", "") or "")
    cc = str(getattr(cfg, "compute_capability", "") or "")
    archs = plugins.architectures()
    if named in archs:
        owner = plugins.owner("architectures", named).name
        return ArchChoice(archs[named], f"architecture {named}: named by {sim_config} "
                                        f"(plugin '{owner}')")
    try:
        arch = generic_architecture(generic_name(cc))
    except ValueError:
        raise UsageError(f"{sim_config} names no architecture a plugin provides "
                         f"({named or 'none'}) and no compute capability: give --arch") from None
    return ArchChoice(arch, f"architecture {arch.name} (generic): {sim_config} names "
                            f"'{named or 'no architecture'}', which no installed plugin "
                            f"provides; its compute capability is {cc}")


def resolve_experiments(plugins: Plugins, arch: str, names: Sequence[str]
                        ) -> list[type[Experiment]]:
    available = plugins.experiments()
    applicable = {n: c for n, c in available.items() if c().applies_to(arch)}
    names = list(names) or ["all"]
    if "all" in names:
        if len(names) > 1:
            raise UsageError("give experiment names or 'all', not both")
        return _dram_first([applicable[n] for n in sorted(applicable)
                            if applicable[n].in_all])
    out = []
    for n in names:
        if n not in available:
            raise UsageError(f"unknown experiment '{n}' (choose from: "
                             f"{_choices(list(applicable) + ['all'])})")
        if n not in applicable:
            raise UsageError(f"experiment '{n}' does not apply to '{arch}' (it is for "
                             f"{', '.join(available[n].archs or [])})")
        if available[n] not in out:
            out.append(available[n])
    return _dram_first(out)


def _dram_first(classes: list[type[Experiment]]) -> list[type[Experiment]]:
    """``classes`` with those that measure DRAM bandwidth first (:attr:`Experiment.runs_first`:
    DRAM reads slower while the driver clears memory a run freed), each group in its order."""
    return [c for c in classes if c.runs_first] + [c for c in classes if not c.runs_first]


def simulator_config(plugins: Plugins, arch: str, simulator: Any,
                     sim_config: Path | None) -> Any:
    """The config ``simulator`` runs ``arch`` on: the user's ``--sim-config`` file (refused
    when it simulates another architecture than ``arch``: :func:`_check_config_arch`), else
    the first plugin's ``gpumem_simulator_config`` answer that the simulator can take. A
    plugin that raises, hangs or answers what is no config is named in one warning and the
    next plugin is asked; when none answers, one error names each."""
    if sim_config is not None:
        if not Path(sim_config).is_file():
            what = ("no such file" if not os.path.lexists(sim_config) else
                    "a folder, not a config file" if Path(sim_config).is_dir() else
                    "not a regular file (a device or a pipe): give a TOML file")
            raise UsageError(f"--sim-config {sim_config}: {what}")
        try:
            cfg = simulator.load_config(Path(sim_config))
        except GpumemError:
            raise
        except NotImplementedError as e:
            raise UsageError(str(e)) from None
        if arch:
            _check_config_arch(plugins, arch, cfg, sim_config)
        return cfg
    cfg = plugin_config(plugins, arch, simulator)
    if cfg is None:
        raise UsageError(f"no '{simulator.name}' config for architecture '{arch}' "
                         f"(pass one with --sim-config FILE)")
    return cfg


def plugin_config(plugins: Plugins, arch: str, simulator: Any) -> Any:
    """The first ``gpumem_simulator_config`` answer for ``arch`` that ``simulator`` can run
    (:func:`config_problem`), each plugin asked on its own and bounded in time; ``None``
    when no plugin has one. A plugin that raises, hangs or answers garbage is named in one
    warning when another answers, in a one-line :class:`GpumemError` when none does."""
    try:
        return plugins.first_result("gpumem_simulator_config", arch=arch,
                                    simulator=simulator.name,
                                    accept=lambda c: config_problem(simulator, c))
    except Exception as e:  # noqa: BLE001 - a plugin's config is the plugin's bug
        raise GpumemError(f"no usable '{simulator.name}' config for '{arch}' from the "
                          f"plugins: {e}") from None


def config_problem(simulator: Any, cfg: Any) -> str:
    """What keeps ``simulator`` from running on ``cfg``, a plugin's answer ("" when nothing):
    the built-in simulator takes a :class:`~gpumem.sim.config.SimConfig` only; another
    simulator is asked through its own ``config_problem(cfg)`` where it has one (Accel-Sim
    also takes a path)."""
    from gpumem.sim.config import SimConfig
    from gpumem.sim.simulator import BuiltinSimulator

    if isinstance(simulator, BuiltinSimulator):
        return "" if isinstance(cfg, SimConfig) else \
            f"a {type(cfg).__name__}, not a SimConfig (the built-in simulator's config)"
    check = getattr(simulator, "config_problem", None)
    return str(check(cfg) or "") if callable(check) else ""


def _check_config_arch(plugins: Plugins, arch: str, cfg: Any, path: Path) -> None:
    """``--arch ARCH --sim-config FILE``: FILE must simulate a GPU of ARCH. A config whose
    ``arch`` names another architecture gpumem knows (a plugin's, or a generic sm_XY), with
    a compute capability ARCH does not claim, is refused: the run would be recorded as ARCH
    while it measures another GPU, and be judged by ARCH's expected values (an H200 config
    under ``--arch kepler`` fails every Kepler value, and later reads as a Kepler run). One
    naming an architecture no installed plugin provides is taken, with one warning."""
    named = str(getattr(cfg, "arch", "") or "")
    if not named or named == arch:
        return
    cc = str(getattr(cfg, "compute_capability", "") or "")
    try:
        arch_obj = resolve_arch(plugins, arch)
    except UsageError:
        return  # an unknown --arch is reported where it is resolved
    if cc and arch_obj.claims(cc):
        return  # the same GPU under its generic or its plugin's name
    what = (f"--sim-config {path} simulates a '{named}' GPU (compute capability "
            f"{cc or 'not given'}), not one of --arch {arch} (compute capability "
            f"{', '.join(arch_obj.compute_capabilities) or 'none'})")
    if named in plugins.architectures() or is_generic(named):
        raise UsageError(f"{what}: give --arch {named}, or leave out --arch (the config "
                         f"names its architecture), or a config of a {arch} GPU")
    plugins.warn(f"{what}; its findings are judged by {arch}'s expected values")


def resolve_device(plugins: Plugins, arch_obj: Any, spec: str,
                   sim_config: Path | None) -> DeviceChoice:
    """Turn ``--device`` into a :class:`DeviceChoice` (discovers hardware for ``auto``)."""
    sims = plugins.simulators()
    backends = plugins.devices()
    if spec == "auto":
        reasons = []
        for bname, backend in backends.items():
            found = backend.discover()
            claimed = [d for d in found.devices if arch_obj.claims(d.compute_capability)]
            if claimed:
                return DeviceChoice("backend", bname, claimed[0].index)
            if found.devices:
                ccs = ", ".join(sorted({d.compute_capability for d in found.devices}))
                reasons.append(f"{bname}: compute capability {ccs} is not "
                               f"{arch_obj.name}'s ({', '.join(arch_obj.compute_capabilities)})")
            elif found.message:
                reasons.append(f"{bname}: {found.message}")
        sim = sims.get("sim")
        if sim is None:
            raise UsageError("no device for --device auto and the built-in simulator is "
                             "disabled")
        cfg = simulator_config(plugins, arch_obj.name, sim, sim_config)
        why = "; ".join(reasons) or "no device backend"
        return DeviceChoice("simulator", "sim", config=cfg,
                            notice=f"no {arch_obj.name} GPU found ({why}); running on the "
                                   f"built-in simulator")
    if spec in sims:
        sim = sims[spec]
        ok, why = sim.available()
        if not ok:
            raise UsageError(f"simulator '{spec}' is not available here: {why}")
        return DeviceChoice("simulator", spec, config=simulator_config(
            plugins, arch_obj.name, sim, sim_config))
    m = _DEVICE_RE.match(spec)
    if m and m["backend"] in backends:
        if sim_config is not None:
            raise UsageError("--sim-config applies only to a simulator device")
        return DeviceChoice("backend", m["backend"], int(m["index"]))
    raise UsageError(f"unknown device '{spec}' (choose from: {_device_choices(plugins)})")


def _device_choices(plugins: Plugins) -> str:
    return ", ".join(["auto", *(f"{b}:N" for b in plugins.devices()), *plugins.simulators()])


def open_device(plugins: Plugins, choice: DeviceChoice, arch: str, seed: int) -> Device:
    if choice.kind == "simulator":
        return plugins.simulators()[choice.name].create_device(arch, choice.config, seed=seed)
    backend = plugins.devices()[choice.name]
    try:
        return backend.open(choice.index, arch, plugins.kernel_lookup(arch))
    except DeviceUnavailable as e:
        raise UsageError(f"device {choice.name}:{choice.index} is not available: {e}") from None


def default_out(root: Path, arch: str, device_key: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
    return root / f"{arch}-{device_key}-{stamp}"


def latest_run(root: Path, arch: str, device_key: str) -> Path | None:
    runs = sorted(p for p in root.glob(f"{arch}-{device_key}-*") if (p / "manifest.json").exists())
    return runs[-1] if runs else None


def list_devices(plugins: Plugins) -> dict[str, Any]:
    """What ``gpumem devices`` prints: hardware per backend, and the simulators."""
    out: dict[str, Any] = {"backends": [], "simulators": []}
    for name, backend in plugins.devices().items():
        found = backend.discover()
        devices = []
        for d in found.devices:  # with the architecture `gpumem run all` would measure it as
            arch = choose_architecture(_claims(plugins), d.compute_capability, "").arch
            devices.append({**d.as_dict(), "arch": arch.name, "arch_generic": arch.generic})
        out["backends"].append({"name": name, "summary": backend.summary,
                                "devices": devices, "message": found.message})
    for name, sim in plugins.simulators().items():
        ok, why = sim.available()
        out["simulators"].append({"name": name, "summary": sim.summary, "available": ok,
                                  "reason": "" if ok else why, "detail": why if ok else "",
                                  "plugin": plugins.owner("simulators", name).name})
    return out
