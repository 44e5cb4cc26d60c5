"""A measured run as an Accel-Sim config: the built-in simulator's calibrated config, written
where Accel-Sim reads it.

Accel-Sim's own tuner pastes numbers from its microbenchmarks into a template and guesses the
L2 associativity; users then edit configs by hand and get them wrong. Here the run is first
turned into the built-in simulator's calibrated config (:func:`gpumem.api.simulator.calibrate`, what
``gpumem export sim`` writes: the architecture's packaged SimConfig with every parameter a
finding measures set from it), and that config is translated into Accel-Sim options
(:func:`gpumem_accelsim.translate.translate`). So both simulators get the same numbers from
one derivation, and each option's comment names, per parameter it is written from, the
finding that measured it (``measured: latency/lat.l1``, as the sim export's TOML says) or
that the packaged SimConfig's value is assumed; options the translation does not touch keep
the architecture plugin's base Accel-Sim config value and say so. Calibrated parameters that
Accel-Sim has no option for are listed as warnings. The result is checked against the options
the target simulator build registers, so it never holds an option that build would reject.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpumem.api.formats import Format, PluginSet, changed_findings, changed_summary
from gpumem.api.simulator import Calibrated, SimConfig, calibrate

from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.known_options import VERSIONS, unknown_options
from gpumem_accelsim.simulator import build_fixes
from gpumem_accelsim.translate import from_accelsim, pipeline_cycles, translate

DEFAULT_TARGET = VERSIONS[0]


@dataclass
class Exported:
    config: AccelSimConfig
    comments: dict[str, str]
    warnings: list[str]
    header: str
    #: the built-in simulator's calibrated config the options were translated from
    calibrated: Calibrated | None = None
    #: per option written from it, the SimConfig parameters (``cache:l1d.hit_latency``)
    params: dict[str, list[str]] = field(default_factory=dict)


def export_run(run: Path, base: AccelSimConfig, *, target: str = DEFAULT_TARGET,
               sim: SimConfig | None = None, plugins: PluginSet | None = None) -> Exported:
    """``base`` with the memory hierarchy of ``sim`` calibrated from ``run`` (``sim``: the
    architecture's packaged built-in simulator config, as ``gpumem export sim`` uses; without
    one, ``base`` read as a SimConfig): options, comments, warnings, file header.
    ``plugins``: the registry whose analyses derive the run's findings afresh from its raw
    data, as ``gpumem export sim`` does (None: the findings the run stores)."""
    src = Format.load_run(run, reanalyze_with=plugins)  # a damaged run: ResultsFileError
    run_name = Format.shareable(run)  # the files are shared: the run's name, not its local path
    # the cycles the target build adds on the base's clocks and DRAM options (estimated
    # ones are warned below)
    pipeline, estimated = pipeline_cycles(base, target)
    if sim is None:
        sim, _lost = from_accelsim(base, src.arch or "accelsim", pipeline)
        start = f"the Accel-Sim base {base.name} read as a SimConfig"
    else:
        start = f"the packaged SimConfig '{sim.name}'"
    cal = calibrate(sim, src)
    stale = changed_findings(plugins, [src]) if plugins is not None else {}
    done = translate(cal.config, base, cal.sources, assumed=start, pipeline=pipeline)
    out, comments, warn = done.config, done.comments, done.warnings + estimated
    out.name, out.source = src.label, f"gpumem export of the run {run_name}"
    if stale:
        warn.append(f"{changed_summary(stale)}: the options set from them describe that "
                    f"version's measurement; run those experiments again for today's")
    written = {p for ps in done.params.values() for p in ps}
    for path, how in cal.sources.items():
        if path not in written:
            warn.append(f"{path} (measured: {how}) has no Accel-Sim option: the built-in "
                        f"simulator uses it, this config does not")
    # the target build must run the files as written: no option it does not register, no
    # interconnect file it would look for, no partition indexing it asserts on
    for name in unknown_options(out.merged(), target):
        comments.pop(name, None)
        warn.append(f"option {name} of the base config is unknown to {target} and was left "
                    f"out (that build exits with 'Unknown Option')")
    fixed, notes = build_fixes(out, target)
    for name in ("-network_mode", "-gpgpu_memory_partition_indexing"):
        if fixed.merged().get(name) != out.merged().get(name):
            note = next(n for n in notes if n.startswith(name))
            comments[name] = f"for {target}: {note}"
            warn.append(note)
    fixed.name, fixed.source = out.name, out.source
    out = fixed
    for name in out.merged():
        comments.setdefault(name, f"base: {base.name}")
    dev = src.device
    header = (f"Accel-Sim config written by gpumem from the measured run {run_name}\n"
              f"device: {dev.name if dev else '?'}; architecture: {src.arch or '?'}; "
              f"target build: {target}\n"
              + (f"Latency options are the measured latencies less the cycles that build "
                 f"adds (L1 {pipeline.l1:g}, L2 {pipeline.l2:g}, DRAM {pipeline.dram:g}; "
                 f"{pipeline.source}).\n" if pipeline.source else "") +
              f"The memory hierarchy is the built-in simulator's config calibrated from the "
              f"run (gpumem export sim; start: {start}), translated.\n"
              f"Per parameter an option is written from: 'measured: EXPERIMENT/FINDING' names "
              f"the finding that set it (the same as in gpumem export sim's file), 'assumed' "
              f"marks the start config's value;\n"
              f"'base: {base.name}' marks options of the architecture plugin's base Accel-Sim "
              f"config.")
    if cal.left:
        header += "\nFindings of the run no parameter takes (as in gpumem export sim's file):"
        for i in range(0, len(cal.left), 4):
            header += "\n  " + ", ".join(cal.left[i:i + 4])
    return Exported(out, comments, warn, header, cal, done.params)
