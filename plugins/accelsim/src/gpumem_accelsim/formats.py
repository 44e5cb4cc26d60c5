"""The ``accelsim`` format: ``gpumem import accelsim CONFIG`` and ``gpumem export accelsim RUN``.

Import turns any Accel-Sim / GPGPU-Sim 4.x config into a SimConfig TOML that the built-in
simulator runs (``gpumem run --device sim --sim-config FILE.toml``); export writes a
``gpgpusim.config`` (and ``trace.config``) from a measured run: the built-in simulator's
config calibrated from it (as ``gpumem export sim``), translated onto the architecture
plugin's base config (:mod:`gpumem_accelsim.export`).
"""

from __future__ import annotations

from pathlib import Path

from gpumem.api import UsageError
from gpumem.api.formats import (
    Converted,
    Format,
    FormatError,
    OutputError,
    PluginSet,
    write_text,
)
from gpumem.api.simulator import SimConfig, SimConfigError

from gpumem_accelsim.cachestring import CacheStringError, check_required
from gpumem_accelsim.config import AccelSimConfig, AccelSimConfigError
from gpumem_accelsim.known_options import VERSIONS
from gpumem_accelsim.options import OptionFileError


def base_config(plugins: PluginSet, arch: str) -> AccelSimConfig:
    """The architecture plugin's base Accel-Sim config (hook ``gpumem_simulator_config``,
    asked plugin by plugin: one that raises is named and the others still answer)."""
    found = plugins.first_result("gpumem_simulator_config", arch=arch, simulator="accelsim")
    if found is None:
        raise UsageError(f"architecture '{arch}' ships no Accel-Sim base config")
    cfg = AccelSimConfig.load(Path(found))
    cfg.name = f"{arch} base ({cfg.name})"
    return cfg


def _shareable_config(source: Path) -> str:
    """``SM90_H100`` for a config folder, ``SM90_H100/gpgpusim.config`` for a file in it."""
    p = Path(source)
    name = Format.shareable(p)
    return name if p.is_dir() else f"{Format.shareable(p.resolve().parent)}/{name}"


class AccelSimFormat(Format):
    name = "accelsim"
    summary = "Accel-Sim / GPGPU-Sim 4.x gpgpusim.config + trace.config"
    imports = "sim-config"
    exports = "gpgpusim.config + trace.config"

    def import_file(self, source: Path, out: Path, *, arch: str | None = None,
                    plugins: PluginSet) -> Converted:
        from gpumem_accelsim.export import DEFAULT_TARGET
        from gpumem_accelsim.translate import NO_PIPELINE, from_accelsim, pipeline_cycles

        if out.suffix != ".toml":
            raise UsageError(f"{out}: the imported config is written as TOML (give FILE.toml)")
        self.refuse_existing(out)  # as the other imports: a new file, never an overwrite
        try:
            cfg = AccelSimConfig.load(source)
            if not len(cfg.merged()):
                raise AccelSimConfigError(f"{source}: no options (empty, or not an Accel-Sim "
                                          f"config)")
            missing = check_required(cfg.merged())
            # latencies as the build gpumem drives measures them (pipeline_cycles), stated
            try:
                pipeline, estimated = pipeline_cycles(cfg, DEFAULT_TARGET)
            except AccelSimConfigError:  # no clocks: from_accelsim names what the file lacks
                pipeline, estimated = NO_PIPELINE, []
            sim, warnings = from_accelsim(cfg, arch, pipeline)
            warnings += estimated
        except (OptionFileError, CacheStringError, AccelSimConfigError) as e:
            raise FormatError(str(e)) from None
        except SimConfigError as e:  # a value the options hold but no SimConfig can
            raise FormatError(f"{source}: {e}") from None
        # the TOML is meant to be shared: the config's own name, not the user's local path
        sim.source = f"Accel-Sim config {_shareable_config(source)}"
        if missing:
            warnings.insert(0, f"{source}: {', '.join(missing)} not set: the simulator's "
                               f"compiled-in defaults abort in 4.x builds")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"--out {out}: cannot create {out.parent}: "
                              f"{e.strerror or e}") from None
        write_text(out, sim.to_toml())  # replaces a symlink at OUT, never writes through it
        return Converted([out], warnings)

    def export_run(self, run: Path, out: Path, *, arch: str | None = None,
                   target: str | None = None, plugins: PluginSet) -> Converted:

        from gpumem_accelsim.export import DEFAULT_TARGET, export_run

        if out.exists() and not out.is_dir():  # before the work, and before any traceback
            raise UsageError(f"--out {out}: exists and is not a directory")
        target = target or DEFAULT_TARGET
        if target not in VERSIONS:
            raise UsageError(f"unknown Accel-Sim version '{target}' (choose from: "
                             f"{', '.join(VERSIONS)})")
        src = self.load_run(run)  # a damaged run is refused here, not filled with the base's
        arch = arch or src.arch
        if not arch:
            raise UsageError(f"{run}: the run records no architecture (give --arch)")
        # the built-in simulator's packaged config, calibrated as gpumem export sim does
        sim = plugins.first_result("gpumem_simulator_config", arch=arch, simulator="sim")
        try:
            done = export_run(run, base_config(plugins, arch), target=target,
                              sim=sim if isinstance(sim, SimConfig) else None,
                              plugins=plugins)
        except (OptionFileError, CacheStringError, AccelSimConfigError) as e:
            raise FormatError(str(e)) from None
        paths = done.config.save(out, comments=done.comments, header=done.header)
        return Converted(paths, done.warnings)
