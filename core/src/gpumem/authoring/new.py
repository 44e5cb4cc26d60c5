"""``gpumem plugin new NAME --from RUN [RUN ...]``: a measured GPU becomes a plugin.

A dissection tool measures what nobody has written down; this turns what it measured into
what the next user installs. From one or more runs of one kind of GPU (the generic
architecture's or any other's) it derives

* the expected values: per finding, the median of the runs, with a band that holds on any
  healthy card of the model (:func:`gpumem.contracts.allowances.model_band`: the runs' own
  intervals in quadrature with their run-to-run spread and a card-to-card allowance from gpumem's
  multi-card data; each value's source names the parts, the cards and the runs), plus what
  the device's own properties say for any other card of the compute capability
  (:func:`gpumem.contracts.generic.expected_values`);
* the simulator config: the runs' calibrated ``export sim`` (:func:`~gpumem.interop.calibrate.
  calibrated`; a base built from the runs where the architecture ships none);
* which measured values that config reproduces: it is simulated here (a full and a quick
  run), and a value the model does not reproduce applies to the hardware only, said in the
  README with the simulated value;

and writes a pip-installable package (:mod:`gpumem.authoring.files`) whose own tests pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpumem.contracts.allowances import card_specific, learned_for, model_band
from gpumem.contracts.errors import Interrupted, UsageError
from gpumem.contracts.findings import NOT_MODELLED, Expected, Finding, kind_of, status_of
from gpumem.contracts.generic import is_compute_capability, is_generic
from gpumem.interop.compare import (
    Source,
    analyze_file,
    changed_findings,
    changed_summary,
    load_sources,
)
from gpumem.plugin.registry import Plugins

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")

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
                        abs_tol=self.abs_tol, index=self.index, experiment=self.experiment)


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
    def learned_from(self) -> str:
        """Whose cards the card-to-card allowances were learned from: this model's, or,
        where gpumem has learned none of it or the runs are of several models, the widest of
        the models it has learned."""
        from gpumem.contracts.device import product_slug

        data = learned_for(self.products)
        model = str(data.get("product", ""))
        slugs = {product_slug(x) for x in self.products}
        n = len(data.get("cards", []))
        if model in slugs:
            return f"gpumem's runs on {n} cards of this model ({model})"
        if data.get("widest") and len(slugs) > 1:
            # no one model's spreads are these runs': neither "this model" nor "none of it"
            return (f"gpumem's runs on {n} cards of the models it learned, each spread the "
                    f"widest of theirs ({', '.join(data['widest'])}): these runs are of "
                    f"{len(slugs)} models ({', '.join(sorted(slugs))}), whose cards may "
                    f"stray as far as any")
        if data.get("widest"):
            return (f"gpumem's runs on {n} cards of other models, each spread the widest of "
                    f"theirs ({', '.join(data['widest'])}): none of this model")
        return f"gpumem's runs on {n} cards of another model ({model or 'none'})"

    @property
    def one_card(self) -> bool:
        """Every run measured the same card: the card-to-card part of each band is learned
        from gpumem's multi-card data, not seen on this product."""
        return len(self.cards) == 1

    @property
    def package(self) -> str:
        return "gpumem_" + self.name.replace("-", "_")


#: Longest plugin name: it names a folder, a distribution and a package.
MAX_NAME = 40


def _installed_distributions() -> set[str]:
    """The installed distributions' names, normalised as pip compares them (PEP 503)."""
    from importlib.metadata import distributions

    from packaging.utils import canonicalize_name

    return {canonicalize_name(str(d.metadata["Name"] or "")) for d in distributions()}


def check_name(plugins: Plugins, name: str) -> None:
    """A plugin name is an entry point, a distribution suffix and a package: say what fails."""
    if not _NAME.match(name):
        shown = name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."
        raise UsageError(f"plugin name '{shown}': use lower-case letters, digits and single "
                         f"'-' or '_' inside, starting with a letter (e.g. a100, rtx-4090)")
    if len(name) > MAX_NAME:
        raise UsageError(f"plugin name '{name[:MAX_NAME]}...': {len(name)} characters; at most "
                         f"{MAX_NAME} (it names a folder, a distribution and a package)")
    if is_generic(name):
        raise UsageError(f"plugin name '{name}' is the generic architecture of a compute "
                         f"capability; choose a product or family name (e.g. h200x)")
    taken = {r.name for r in plugins.records} | set(plugins.architectures())
    if name in taken or name == "auto":
        raise UsageError(f"plugin name '{name}' is taken by an installed plugin or "
                         f"architecture (gpumem list-plugins); choose another")
    from packaging.utils import canonicalize_name

    dist = f"gpumem-{name}"
    if canonicalize_name(dist) in _installed_distributions():
        raise UsageError(f"plugin name '{name}': its distribution {dist} is an installed one "
                         f"(pip install would replace it); choose another")


def _manifest(run: Path) -> dict[str, Any]:
    """``run``'s manifest as read before anything is analysed; ``{}`` where it cannot be
    read (load_sources then says what is wrong with it)."""
    from gpumem.results.store import MANIFEST

    try:
        data = json.loads((Path(run) / MANIFEST).read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deep
        return {}
    return data if isinstance(data, dict) else {}


def _entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    entries = manifest.get("entries")
    return [e for e in entries.values() if isinstance(e, dict)] \
        if isinstance(entries, dict) else []


def _simulated_in(manifest: dict[str, Any]) -> list[str]:
    """The devices of a run's manifest that are simulators (their keys begin ``sim`` or
    ``accelsim``)."""
    keys = {str(e.get("device", "")) for e in _entries(manifest)}
    return sorted(k for k in keys if k.startswith(("sim", "accelsim")))


def _unfit(manifest: dict[str, Any]) -> str:
    """Why a run's manifest says its values cannot be a plugin's ("" when they can): an
    experiment that failed there, or one measured beside another process on the GPU."""
    for e in _entries(manifest):
        if e.get("status") == "failed":
            return (f"its experiment {e.get('experiment')} failed ({str(e.get('error'))[:80]}): "
                    f"a plugin's values must rest on complete runs")
        if e.get("contention"):
            return (f"its experiment {e.get('experiment')} ran beside another process on the "
                    f"GPU ({str(e['contention'])[:80]}): a plugin's values must be a healthy, "
                    f"quiet card's (gpumem run --exclusive SECONDS waits for a quiet GPU)")
    return ""


def _unchecked(run: Path) -> int:
    """How many of the run's complete entries name a file but record no checksum (a
    manifest stripped of them was taken without a word)."""
    return sum(1 for e in _entries(_manifest(run)) if e.get("file")
               and e.get("status") == "complete" and not e.get("sha256"))


def _run_started(manifest: dict[str, Any]) -> str:
    """When the run began (its manifest's first run record), "" where it does not say."""
    runs = manifest.get("runs")
    first = runs[0] if isinstance(runs, list) and runs else None
    return str(first.get("started", "")) if isinstance(first, dict) else ""


def run_id(uuid: str, started: str, where: str) -> str:
    """How a generated file names a run: its card, its date and a short id (no local path:
    a plugin is published): ``GPU-b94ce5a3 2026-12-04 #3f9a``."""
    card = uuid[:12] or "unknown card"
    day = started[:10] or "undated"
    tag = hashlib.sha256(f"{uuid}|{started}|{where}".encode()).hexdigest()[:4]
    return f"{card} {day} #{tag}"


def load_runs(plugins: Plugins, runs: Sequence[Path]) -> list[Source]:
    """Every device of every run, its findings derived afresh by this gpumem's analyses (as
    the plugin's own simulated runs will derive them), labelled by card, date and id. A
    simulated run is refused before anything is analysed; a run given twice, once."""
    manifests = []
    for run in runs:
        if not Path(run).exists():
            raise UsageError(f"--from {run}: no such run directory")
        manifest = _manifest(Path(run))
        manifests.append(manifest)
        sims = _simulated_in(manifest)
        if sims:
            raise UsageError(f"--from {run}: a simulated run ({', '.join(sims)}) measures its "
                             f"config, not a GPU; a plugin describes hardware: give runs "
                             f"measured on a GPU (gpumem run all --device cuda:N)")
        unfit = _unfit(manifest)
        if unfit:
            raise UsageError(f"--from {run}: {unfit}; measure again, or leave it out")
    resolved = [Path(r).resolve() for r in runs]
    twice = sorted({str(r) for r in runs if resolved.count(Path(r).resolve()) > 1})
    if twice:
        raise UsageError(f"--from {twice[0]}: given more than once (one run counted twice "
                         f"would narrow the bands)")
    sources: list[Source] = []
    seen: dict[tuple[str, str], str] = {}  # (card, start) -> the run that measured it
    for run, manifest in zip(runs, manifests, strict=True):
        started = _run_started(manifest)
        for s in load_sources(Path(run), analyze=lambda f: analyze_file(plugins, f)[1]):
            uuid = s.device.uuid if s.device is not None else ""
            s.label = run_id(uuid, started, str(Path(run).resolve()))
            sources.append(s)
            key = (uuid, started)
            if started and seen.get(key, str(run)) != str(run):
                raise UsageError(f"--from {run}: the same run as --from {seen[key]} (card "
                                 f"{uuid[:12]}, started {started}): a copy counted twice "
                                 f"would narrow the bands")
            seen[key] = str(run)
    ccs = {s.device.compute_capability for s in sources if s.device is not None}
    if len(ccs) != 1 or any(s.device is None for s in sources):
        raise UsageError(f"--from: the runs must measure GPUs of one compute capability "
                         f"(found {', '.join(sorted(ccs)) or 'none recorded'})")
    if any(s.device is not None and s.device.kind == "sim" for s in sources):
        raise UsageError("--from: a plugin describes hardware; give runs measured on a GPU "
                         "(a simulated run measures its config, not a GPU)")
    bad = [c for c in ccs if not is_compute_capability(c)]
    if bad:
        raise UsageError(f"--from: compute capability {bad[0]!r} is not MAJOR.MINOR")
    return sources


def changed_since(plugins: Plugins, sources: list[Source]) -> list[Left]:
    """Take every finding an earlier version of its experiment measured, and a later one
    changed (:func:`gpumem.interop.compare.changed_findings`), out of ``sources``, from every
    run alike, as left-out findings with why: a plugin made from them had bands of +-35 %
    (bw.l1) and +-161 % (bw.l2) around an old kernel's readings, which no card could fail."""
    stale = changed_findings(plugins, sources)
    for s in sources:
        for key in stale:
            s.findings.pop(key, None)
    return [Left(name, exp, why) for (exp, name), why in sorted(stale.items())]


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


def products_warning(sources: list[Source]) -> str:
    """A warning where the runs measured more than one product ("" where one): their values
    would be merged as one product's (it was done without a word)."""
    products = sorted({s.device.name for s in sources if s.device is not None})
    if len(products) < 2:
        return ""
    return (f"warning: the runs measured {len(products)} products of one compute capability "
            f"({', '.join(products)}): their values are merged, as if one product's; a "
            f"plugin usually describes one (make one per product)")


def derive_values(sources: list[Source], allowances: dict[str, Any] | None = None
                  ) -> tuple[list[Value], list[Left]]:
    """Per finding of the runs: its expected value (median, band, source), or why none.

    The band is :func:`gpumem.contracts.allowances.model_band`'s: the runs' own 95 %
    intervals in quadrature with run to run and card to card, each part named in the value's
    source;
    ``allowances``: the learned spreads to use (default: the shipped ones of the runs' GPU
    model, :func:`gpumem.contracts.allowances.learned_for`)."""
    if allowances is None:
        allowances = learned_for(s.device.name for s in sources if s.device is not None)
    n = len(sources)
    cards = sorted({s.device.uuid[:12] for s in sources if s.device is not None})
    product = ", ".join(sorted({s.device.name for s in sources if s.device is not None}))
    where = (f"gpumem on {product} ({len(cards)} card{'s' if len(cards) > 1 else ''}: "
             f"{', '.join(cards)}), {n} run{'s' if n > 1 else ''} "
             f"({', '.join(s.label for s in sources)})")
    specific = card_specific(allowances)
    keys = sorted({k for s in sources for k in s.findings})
    values, left = [], []
    for exp, name in keys:
        maybe = [s.findings.get((exp, name)) for s in sources]
        if name in specific:
            left.append(Left(name, exp, specific[name]))
            continue
        found = [f for f in maybe if f is not None]
        if len(found) < len(maybe):
            left.append(Left(name, exp, "not in every run"))
            continue
        if any(not f.resolved for f in found):
            left.append(Left(name, exp, "unresolved in at least one run"))
            continue
        if any(f.status == "contended" for f in found):
            left.append(Left(name, exp, "measured beside another process on the GPU in at "
                                        "least one run (contended)"))
            continue
        vals = [f.value for f in found]
        f0: Finding = found[0]
        kind = kind_of(f0)
        labels = {repr(f.index) for f in found}
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
                                f"{where}: the same in every run; a structural value, "
                                f"exact", vals, index=index))
            continue
        if not _same_shape(vals) or any(_numbers(v) is None for v in vals):
            left.append(Left(name, exp, "values of different shapes"))
            continue
        integral = all(isinstance(x, int) for v in vals for x in (v if isinstance(v, list)
                                                                   else [v]))
        m = _median(vals, integral)
        band = model_band(name, f0.units, m, vals,
                          [f.interval for f in found], len(cards), allowances, exp)
        values.append(Value(name, exp, m, f0.units, band.rel_tol, band.abs_tol,
                            f"{where}: median; {band.text}", vals, index=index))
    return values, left


def values_source(sources: list[Source], values: list[Value]) -> Source:
    """One run's worth of findings for calibration: each derived value's median (the first
    run's device, architecture and the findings no value keeps). ``gpumem export sim`` of
    several runs pools whole findings instead (:func:`gpumem.interop.pool.median_source`):
    a plugin's values are derived, its expected values rest on them."""
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
    try:
        report = run(RunRequest(arch=arch, experiments=experiments, device="sim", out=out,
                                quick=quick, workers=workers, sim_config=cfg), plugins=plugins)
    except Interrupted as e:  # its message names a temporary folder about to be deleted
        err = Interrupted("plugin new interrupted while simulating the calibrated config; "
                          "nothing was written (run gpumem plugin new again)")
        err.exit_code = e.exit_code
        raise err from None
    return {f.name: f for o in report.outcomes for f in o.findings}


def judge(values: list[Value], full: dict[str, Finding], quick: dict[str, Finding]) -> None:
    """Mark each value the calibrated simulator reproduces (not ``fail`` in either run) and
    say, where it does not, which run differs and how."""
    for v in values:
        e = v.expected()
        verdicts = []
        for label, run in (("full", full), ("quick", quick)):
            f = run.get(v.name)
            if f is None or not f.resolved or f.value is None:
                verdicts.append(f"the {label} run gives none")
            elif f.status == NOT_MODELLED:
                verdicts.append("not modelled")
            elif status_of(f.value, e, f.interval, f.index) == "fail":
                verdicts.append(f"the {label} run gives {f.value}")
            else:
                verdicts.append("")
        v.reproduced = not any(verdicts)
        v.why_not = "; ".join(dict.fromkeys(x for x in verdicts if x))


#: The temporary folders plugin new simulates in: ``gpumem-plugin-new-<pid>-<random>``.
TEMP_PREFIX = "gpumem-plugin-new-"


def remove_stale_temporaries(folder: Path | None = None) -> list[Path]:
    """Remove the temporary folders of ``plugin new`` processes that are gone (a SIGKILL
    leaves its folder behind, and nothing else would remove it): those of this user whose
    process id no longer runs. The folders removed."""
    import shutil

    from gpumem.private_dir import uid
    from gpumem.results.store import pid_alive

    gone = []
    for d in Path(folder or tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        pid = d.name[len(TEMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not d.is_dir() or d.is_symlink():
            continue
        try:
            if d.stat().st_uid != uid():
                continue
        except OSError:
            continue
        if not pid_alive(int(pid)):  # gone: nothing else would remove its folder
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


def new_plugin(plugins: Plugins, name: str, runs: Sequence[Path], out: Path, *,
               workers: int = 1, progress: Any = None) -> NewPlugin:
    """Derive everything for the package (the caller writes it: :func:`write_plugin`)."""
    from gpumem import __version__
    from gpumem.interop.calibrate import calibrated, commented_toml

    say = progress or (lambda _m: None)
    check_name(plugins, name)
    sources = load_runs(plugins, runs)
    mixed = products_warning(sources)
    if mixed:
        say(mixed)
    for run in runs:
        unchecked = _unchecked(Path(run))
        if unchecked:
            say(f"warning: --from {run}: its manifest records no checksum for {unchecked} "
                f"file(s): they could not be checked for changes since they were written")
    d0 = sources[0].device
    if d0 is None:
        raise UsageError(f"--from {sources[0].label}: the run names no device")
    stale = changed_since(plugins, sources)
    if stale:
        say(f"warning: {changed_summary({(x.experiment, x.name): x.why for x in stale})}: "
            f"left out (README.md lists them); run those experiments again to include them")
    values, left = derive_values(sources)
    left = stale + left
    src = values_source(sources, values)
    cal, base_name, assumed = calibrated(plugins, src, src.arch)
    cfg = cal.config
    cfg.name, cfg.arch = name, name
    cfg.description = f"{d0.name} as gpumem measured it ({len(sources)} runs)"
    labels = list(dict.fromkeys(s.label for s in sources))
    run_names = ", ".join(labels)  # card, date, id: no local path in a shared file
    cfg.source = f"gpumem plugin new {name}: calibrated from {run_names}"
    toml = commented_toml(cal, run_names, base_name, assumed)
    experiments = sorted({exp for s in sources for exp, _n in s.findings})
    sim_arch = src.arch or "auto"
    remove_stale_temporaries()
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
        say(f"simulating the calibrated config ({', '.join(experiments)}), a full and a quick "
            f"run: which measured values does it reproduce?")
        sim_cfg = cfg.to_toml()
        full = simulate(plugins, sim_cfg, sim_arch, experiments, quick=False,
                        workers=workers, out=Path(tmp) / "full")
        quick = simulate(plugins, sim_cfg, sim_arch, experiments, quick=True,
                         workers=workers, out=Path(tmp) / "quick")
    judge(values, full, quick)
    devices = [s.device for s in sources if s.device is not None]
    return NewPlugin(
        name=name, out=out, compute_capability=d0.compute_capability,
        products=sorted({d.name for d in devices}),
        cards=sorted({d.uuid for d in devices}),
        runs=labels, values=values, left=left, sim_toml=toml,
        gpumem_version=__version__,
        runs_provenance=[_provenance(s) for s in sources])


def _provenance(s: Source) -> dict[str, str]:
    d = s.device
    return {"run": s.label, "arch": s.arch, "device": d.name if d else "",
            "uuid": d.uuid if d else "", "driver": d.driver if d else "",
            "compute_capability": d.compute_capability if d else "",
            "clock_mhz": f"{d.clock_mhz:g}" if d else ""}
