"""``gpumem plugin new NAME --from RUN [RUN ...]``: a measured GPU becomes a plugin.

A dissection tool measures what nobody has written down; this turns what it measured into
what the next user installs. From one or more runs of one kind of GPU (the generic
architecture's or any other's) it derives

* the expected values: per finding, the median of the runs, with a band from their spread
  and the finding's own interval (each value's source says which runs, which card, and how
  the band was chosen), plus what the device's own properties say for any other card of the
  compute capability (:func:`gpumem.contracts.generic.expected_values`);
* the simulator config: the runs' calibrated ``export sim`` (:func:`~gpumem.interop.calibrate.
  calibrated`; a base built from the runs where the architecture ships none);
* which measured values that config reproduces: it is simulated here (a full and a quick
  run), and a value the model does not reproduce applies to the hardware only, said in the
  README with the simulated value;

and writes a pip-installable package (:mod:`gpumem.authoring.files`) whose own tests pass.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpumem.contracts.errors import UsageError
from gpumem.contracts.findings import NOT_MODELLED, Expected, Finding, kind_of, status_of
from gpumem.contracts.generic import is_generic
from gpumem.interop.compare import Source, analyze_file, load_sources
from gpumem.interop.formats import Format
from gpumem.plugin.registry import Plugins

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")

#: Findings of one card that another card of the same product need not share.
CARD_SPECIFIC = {
    "l2.sm_partition": "which SMs sit near which L2 partition follows the card's disabled SMs",
}
#: Narrowest band of a measured value (relative), and of a latency (cycles: the clock counts
#: whole cycles).
MIN_BAND, MIN_CYCLES = 0.01, 2.0
#: A band from one run cannot know the run-to-run spread: at least this, until more runs.
ONE_RUN_BAND = 0.03
#: The band is the runs' largest deviation from their median times this (a fourth run may
#: stray a little further than three did).
SPREAD_FACTOR = 1.5


@dataclass
class Value:
    """One expected value the plugin will carry, with where it came from."""

    name: str
    experiment: str
    value: Any
    units: str
    rel_tol: float
    abs_tol: float
    source: str
    runs: list[Any] = field(default_factory=list)   # each run's value
    reproduced: bool = False                        # it passes in the full and quick runs
    index: tuple[str, tuple] | None = None          # a list's coordinates (sweep axis)
    why_not: str = ""                               # how the simulator differs, if it does

    def expected(self) -> Expected:
        return Expected(self.name, self.value, self.source, self.units, rel_tol=self.rel_tol,
                        abs_tol=self.abs_tol, index=self.index)


@dataclass
class Left:
    """A finding of the runs the plugin does not expect, and why."""

    name: str
    experiment: str
    why: str


@dataclass
class NewPlugin:
    """What ``plugin new`` derived: everything the package's files are written from."""

    name: str
    out: Path
    compute_capability: str
    products: list[str]
    cards: list[str]
    runs: list[str]
    values: list[Value]
    left: list[Left]
    sim_toml: str
    gpumem_version: str
    runs_provenance: list[dict[str, str]] = field(default_factory=list)

    @property
    def package(self) -> str:
        return "gpumem_" + self.name.replace("-", "_")


def check_name(plugins: Plugins, name: str) -> None:
    """A plugin name is an entry point, a distribution suffix and a package: say what fails."""
    if not _NAME.match(name):
        raise UsageError(f"plugin name '{name}': use lower-case letters, digits and single "
                         f"'-' or '_' inside, starting with a letter (e.g. a100, rtx-4090)")
    if is_generic(name):
        raise UsageError(f"plugin name '{name}' is the generic architecture of a compute "
                         f"capability; choose a product or family name (e.g. h200x)")
    taken = {r.name for r in plugins.records} | set(plugins.architectures())
    if name in taken or name == "auto":
        raise UsageError(f"plugin name '{name}' is taken by an installed plugin or "
                         f"architecture (gpumem list-plugins); choose another")


def load_runs(plugins: Plugins, runs: Sequence[Path]) -> list[Source]:
    """Every device of every run, its findings derived afresh by this gpumem's analyses (as
    the plugin's own simulated runs will derive them)."""
    sources: list[Source] = []
    for run in runs:
        if not Path(run).exists():
            raise UsageError(f"--from {run}: no such run directory")
        for s in load_sources(Path(run), analyze=lambda f: analyze_file(plugins, f)[1]):
            s.label = str(run)
            sources.append(s)
    ccs = {s.device.compute_capability for s in sources if s.device is not None}
    if len(ccs) != 1 or any(s.device is None for s in sources):
        raise UsageError(f"--from: the runs must measure GPUs of one compute capability "
                         f"(found {', '.join(sorted(ccs)) or 'none recorded'})")
    if any(s.device.kind == "sim" for s in sources):  # type: ignore[union-attr]
        raise UsageError("--from: a plugin describes hardware; give runs measured on a GPU "
                         "(a simulated run measures its config, not a GPU)")
    return sources


def _numbers(v: Any) -> list[float] | None:
    items = v if isinstance(v, list) else [v]
    if not items or any(isinstance(x, (bool, str)) or x is None for x in items):
        return None
    try:
        return [float(x) for x in items]
    except (TypeError, ValueError):
        return None


def _same_shape(values: list[Any]) -> bool:
    return len({len(v) if isinstance(v, list) else -1 for v in values}) == 1


def _median(values: list[Any], integral: bool) -> Any:
    if isinstance(values[0], list):
        cols = list(zip(*values, strict=True))
        return [_median(list(c), integral) for c in cols]
    m = statistics.median(values)
    return int(round(m)) if integral else round(float(m), 4)


def _band(f: Finding, values: list[Any], m: Any, n: int) -> tuple[float, float, str]:
    """(relative band, absolute band, how it was chosen) of a measured finding."""
    flat_m = _numbers(m) or [0.0]
    spread = 0.0
    for v in values:
        for x, y in zip(_numbers(v) or [], flat_m, strict=False):
            if y:
                spread = max(spread, abs(x - y) / abs(y))
    interval = 0.0
    if f.interval is not None and not isinstance(f.interval[0], (list, tuple)) and flat_m[0]:
        lo, hi = (float(x) for x in f.interval)
        interval = max(abs(lo - flat_m[0]), abs(hi - flat_m[0])) / abs(flat_m[0])
    floor = ONE_RUN_BAND if n == 1 else MIN_BAND
    rel, why = max(
        (floor, f"one run: {floor:.0%} ASSUMED until more runs show the spread" if n == 1
         else f"the floor of {floor:.0%}"),
        (SPREAD_FACTOR * spread, f"{SPREAD_FACTOR:g} x the runs' largest deviation from "
                                 f"their median ({spread:.1%})"),
        (interval, f"the finding's own 95 % interval (+-{interval:.1%})"),
        key=lambda c: c[0])
    absolute = MIN_CYCLES if f.units == "cycle" else 0.0
    return round(rel, 4), absolute, why


def derive_values(sources: list[Source]) -> tuple[list[Value], list[Left]]:
    """Per finding of the runs: its expected value (median, band, source), or why none."""
    n = len(sources)
    cards = sorted({s.device.uuid[:12] for s in sources if s.device is not None})
    product = ", ".join(sorted({s.device.name for s in sources if s.device is not None}))
    where = (f"gpumem on {product} ({len(cards)} card{'s' if len(cards) > 1 else ''}: "
             f"{', '.join(cards)}), {n} run{'s' if n > 1 else ''} "
             f"({', '.join(s.label for s in sources)})")
    keys = sorted({k for s in sources for k in s.findings})
    values, left = [], []
    for exp, name in keys:
        found = [s.findings.get((exp, name)) for s in sources]
        if name in CARD_SPECIFIC:
            left.append(Left(name, exp, CARD_SPECIFIC[name]))
            continue
        if any(f is None for f in found):
            left.append(Left(name, exp, "not in every run"))
            continue
        if any(not f.resolved for f in found):  # type: ignore[union-attr]
            left.append(Left(name, exp, "unresolved in at least one run"))
            continue
        vals = [f.value for f in found]  # type: ignore[union-attr]
        f0: Finding = found[0]  # type: ignore[assignment]
        kind = kind_of(f0)
        labels = {repr(f.index) for f in found}  # type: ignore[union-attr]
        if len(labels) > 1:
            left.append(Left(name, exp, "the runs' grids differ"))
            continue
        index = (f0.index[0], tuple(f0.index[1])) if f0.index else None
        if kind == "structural" or _numbers(vals[0]) is None:
            if any(str(v) != str(vals[0]) for v in vals):
                left.append(Left(name, exp, "the runs disagree: " +
                                 " | ".join(str(v) for v in vals)))
                continue
            values.append(Value(name, exp, vals[0], f0.units, 0.0, 0.0,
                                f"{where}: the same in every run", vals, index=index))
            continue
        if not _same_shape(vals) or any(_numbers(v) is None for v in vals):
            left.append(Left(name, exp, "values of different shapes"))
            continue
        integral = all(isinstance(x, int) for v in vals for x in (v if isinstance(v, list)
                                                                   else [v]))
        m = _median(vals, integral)
        rel, absolute, why = _band(f0, vals, m, n)
        values.append(Value(name, exp, m, f0.units, rel, absolute,
                            f"{where}: median; band {rel:.1%}"
                            + (f" or {absolute:g} cycles" if absolute else "") + f" = {why}",
                            vals, index=index))
    return values, left


def median_source(sources: list[Source], values: list[Value]) -> Source:
    """One run's worth of findings for calibration: each value's median (the first run's
    device, architecture and the findings no value keeps)."""
    first = sources[0]
    findings = dict(first.findings)
    for v in values:
        f = findings.get((v.experiment, v.name))
        if f is not None:
            findings[(v.experiment, v.name)] = replace(f, value=v.value)
    return Source(first.label, first.arch, first.device, findings)


def simulate(plugins: Plugins, config_toml: str, arch: str, experiments: list[str], *,
             quick: bool, workers: int, out: Path) -> dict[str, Finding]:
    """The findings a run of the calibrated config gives (as the plugin's own check will
    run it), by finding name."""
    from gpumem.run.runner import RunRequest, run

    cfg = out.with_suffix(".toml")
    cfg.write_text(config_toml)
    report = run(RunRequest(arch=arch, experiments=experiments, device="sim", out=out,
                            quick=quick, workers=workers, sim_config=cfg), plugins=plugins)
    return {f.name: f for o in report.outcomes for f in o.findings}


def judge(values: list[Value], full: dict[str, Finding], quick: dict[str, Finding]) -> None:
    """Mark each value the calibrated simulator reproduces (not ``fail`` in either run) and
    say, where it does not, which run differs and how."""
    for v in values:
        e = v.expected()
        verdicts = []
        for label, run in (("full", full), ("quick", quick)):
            f = run.get(v.name)
            if f is None or not f.resolved:
                verdicts.append(f"the {label} run gives none")
            elif f.status == NOT_MODELLED:
                verdicts.append("not modelled")
            elif status_of(f.value, e, f.interval, f.index) == "fail":
                verdicts.append(f"the {label} run gives {f.value}")
            else:
                verdicts.append("")
        v.reproduced = not any(verdicts)
        v.why_not = "; ".join(dict.fromkeys(x for x in verdicts if x))


def new_plugin(plugins: Plugins, name: str, runs: Sequence[Path], out: Path, *,
               workers: int = 1, progress: Any = None) -> NewPlugin:
    """Derive everything for the package (the caller writes it: :func:`write_plugin`)."""
    from gpumem import __version__
    from gpumem.interop.calibrate import calibrated, commented_toml

    say = progress or (lambda _m: None)
    check_name(plugins, name)
    sources = load_runs(plugins, runs)
    values, left = derive_values(sources)
    src = median_source(sources, values)
    cal, base_name, assumed = calibrated(plugins, src, src.arch)
    cfg = cal.config
    cfg.name, cfg.arch = name, name
    cfg.description = f"{sources[0].device.name} as gpumem measured it ({len(sources)} runs)"
    run_names = ", ".join(Format.shareable(r) for r in runs)  # no local path in a shared file
    cfg.source = f"gpumem plugin new {name}: calibrated from {run_names}"
    toml = commented_toml(cal, run_names, base_name, assumed)
    experiments = sorted({exp for s in sources for exp, _n in s.findings})
    sim_arch = src.arch or "auto"
    with tempfile.TemporaryDirectory(prefix="gpumem-plugin-new-") as tmp:
        say(f"simulating the calibrated config ({', '.join(experiments)}), a full and a quick "
            f"run: which measured values does it reproduce?")
        sim_cfg = cfg.to_toml()
        full = simulate(plugins, sim_cfg, sim_arch, experiments, quick=False,
                        workers=workers, out=Path(tmp) / "full")
        quick = simulate(plugins, sim_cfg, sim_arch, experiments, quick=True,
                         workers=workers, out=Path(tmp) / "quick")
    judge(values, full, quick)
    d0 = sources[0].device
    return NewPlugin(
        name=name, out=out, compute_capability=d0.compute_capability,
        products=sorted({s.device.name for s in sources}),
        cards=sorted({s.device.uuid for s in sources}),
        runs=[str(r) for r in runs], values=values, left=left, sim_toml=toml,
        gpumem_version=__version__,
        runs_provenance=[_provenance(s) for s in sources])


def _provenance(s: Source) -> dict[str, str]:
    d = s.device
    return {"run": s.label, "arch": s.arch, "device": d.name if d else "",
            "uuid": d.uuid if d else "", "driver": d.driver if d else "",
            "compute_capability": d.compute_capability if d else "",
            "clock_mhz": f"{d.clock_mhz:g}" if d else ""}
