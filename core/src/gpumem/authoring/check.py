"""What each check of ``gpumem plugin check [NAME | PATH]`` does: is a plugin consistent with
itself and with gpumem?

The plugin is loaded in isolation (core and this plugin only, whatever else is installed),
from its installed entry point (NAME) or from a source tree (PATH: the folder of its
``pyproject.toml``). Which checks it gets, their names and their order are
:mod:`gpumem.authoring.checks`' (one generator: the command, the tests ``gpumem plugin new``
writes and the example plugin's tests iterate the same checks); each is one function here:

* it loads and registers what it says;
* each architecture's built-in simulator config validates and names that architecture and
  one of its compute capabilities;
* a quick simulated run of every experiment passes its own expected values (none fails);
* every expected-value name is one some experiment declares (``Experiment.findings``): a
  misspelt name (``lat.lat.l1``) would otherwise never be checked against anything;
* every expected value has a source;
* every expected value the hook gave is valid (a finite number, text or list of them, a
  tolerance >= 0): one that is not is dropped where values are used, so it is named here;
* core's structure search recovers a planted cache (:mod:`gpumem.testing`) run under each
  architecture;
* the package imports from gpumem only its public API (``gpumem.api``).

A problem makes the command exit 1.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from gpumem.contracts.errors import UsageError
from gpumem.plugin.registry import GROUP, Plugins, entry_points, load_plugins

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

#: What a plugin may import from gpumem (its tests may also use gpumem.testing and the checks
#: every plugin must pass, gpumem.api.checks, which needs pytest).
ALLOWED_IMPORTS = frozenset({"gpumem.api", "gpumem.api.figures", "gpumem.api.simulator",
                             "gpumem.api.formats"})
ALLOWED_IN_TESTS = ALLOWED_IMPORTS | {"gpumem.testing", "gpumem.api.checks"}

#: Each check's line, by its key (``{arch}``: the architecture checked), in the order the
#: checks run: the one wording of each (:mod:`gpumem.authoring.checks` names them).
WHAT = {
    "loads": "loads",
    "architectures": "architectures",
    "simulator_config": "{arch}: simulator config",
    "quick_run": "{arch}: quick simulated run meets its expected values",
    "expected_names": "{arch}: every expected value names a finding an experiment reports",
    "expected_sources": "{arch}: every expected value has a source",
    "expected_valid": "{arch}: every expected value is valid (its hook's answer kept whole)",
    "planted_cache": "{arch}: the structure search recovers a planted cache under it",
    "imports": "imports from gpumem only gpumem.api",
}
#: The planted caches (:func:`gpumem.testing.random_cache` seeds) each architecture is run on.
PLANTED_SEEDS = (0, 1)


@dataclass
class Check:
    """One line of the report: what was checked, whether it holds, the evidence, and the
    name of the check that made it (:mod:`gpumem.authoring.checks`)."""

    what: str
    ok: bool
    detail: str = ""
    name: str = ""


def gpumem_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of a gpumem module in ``source``, anywhere in it."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names
                    if a.name == "gpumem" or a.name.startswith("gpumem.")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "gpumem" or node.module.startswith("gpumem."):
                out.append((node.lineno, node.module))
    return out


def imports_past_api(folder: Path, allowed: frozenset[str] = ALLOWED_IMPORTS,
                     root: Path | None = None) -> list[str]:
    """``path:line imports module`` for every import of gpumem beyond ``allowed`` under
    ``folder`` (build trees and caches left out)."""
    bad = []
    for path in sorted(folder.rglob("*.py")):
        if "build" in path.parts or "__pycache__" in path.parts:
            continue
        where = path.relative_to(root or folder)
        try:
            found = gpumem_imports(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            bad.append(f"{where}: not UTF-8 (byte {e.start}): its imports cannot be read")
            continue
        except (SyntaxError, ValueError) as e:  # ValueError: a null byte
            line = getattr(e, "lineno", None)
            bad.append(f"{where}{f':{line}' if line else ''}: not Python "
                       f"({type(e).__name__}: {getattr(e, 'msg', e)}): its imports cannot "
                       f"be read")
            continue
        for line, module in found:
            if module not in allowed:
                bad.append(f"{where}:{line} imports {module}")
    return bad


# ---- loading one plugin on its own ----------------------------------------------------------

@contextlib.contextmanager
def _alone() -> Iterator[None]:
    """The allow and block lists of the environment do not apply to the plugin checked."""
    saved = {k: os.environ.pop(k) for k in ("GPUMEM_LOAD_PLUGINS", "GPUMEM_DISABLE_PLUGINS")
             if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _from_tree(path: Path) -> metadata.EntryPoint:
    """The ``gpumem`` entry point a source tree's pyproject.toml declares; its ``src/`` (or
    the tree itself) goes first on ``sys.path`` so that this tree's code is what loads."""
    try:
        project = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"{path}: no readable pyproject.toml ({e})") from None
    eps = project.get("project", {}).get("entry-points", {}).get(GROUP, {})
    if len(eps) != 1:
        raise UsageError(f"{path}/pyproject.toml declares {len(eps)} entry points in the "
                         f"'{GROUP}' group; a plugin declares one")
    (name, value), = eps.items()
    code = path / "src" if (path / "src").is_dir() else path
    sys.path.insert(0, str(code))  # taken out when the check ends (checks.check_plugin)
    return metadata.EntryPoint(name=name, value=str(value), group=GROUP)


def load_alone(target: str) -> tuple[Plugins, metadata.EntryPoint, Path | None]:
    """(core and this plugin only, its entry point, its source tree or None)."""
    path = Path(target)
    if path.is_dir():
        ep, tree = _from_tree(path), path
    else:
        found = [ep for ep in entry_points() if ep.name == target]
        if not found:
            names = sorted(ep.name for ep in entry_points())
            raise UsageError(f"no plugin named '{target}' is installed (installed: "
                             f"{', '.join(names) or 'none'}), and no such folder")
        ep, tree = found[0], None
    with _alone():
        plugins = load_plugins(eps=[ep], warn=lambda _m: None)
    return plugins, ep, tree


def _package_dir(ep: metadata.EntryPoint) -> Path | None:
    """The folder of the top-level package the entry point names (``pkg.plugin:plugin``);
    ``None`` where it names no package of its own: a module outside a package, or one of
    Python's own (``os:getcwd``)."""
    import sysconfig

    top = sys.modules.get(ep.value.split(":")[0].split(".")[0].strip())
    where = getattr(top, "__file__", None)
    if not where or Path(where).name != "__init__.py":
        return None
    folder = Path(where).parent
    stdlib = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")}
    if any(folder.resolve() == s or s in folder.resolve().parents for s in stdlib):
        return None
    return folder


# ---- the checks -------------------------------------------------------------------------------

def _loads(plugins: Plugins, name: str, tree: Path | None,
           ep: metadata.EntryPoint | None = None) -> Check:
    rec = next((r for r in plugins.records if r.name == name), None)
    if rec is None or rec.status != "ok":
        return Check(WHAT["loads"], False, rec.error if rec else "not loaded")
    if tree is not None and ep is not None:  # the folder's code, not an installed package
        pkg = _package_dir(ep)
        if pkg is not None and tree.resolve() not in pkg.resolve().parents:
            return Check(WHAT["loads"], False,
                         f"its package was imported from {pkg}, not from {tree}: an installed "
                         f"package of that name comes first (uninstall it, or check it by name)")
    gave = "; ".join(f"{k}: {', '.join(v)}" for k, v in rec.contributes.items() if v)
    where = f"from {tree}" if tree is not None else f"{rec.distribution} {rec.version}"
    return Check(WHAT["loads"], True, f"{where}: {gave or 'nothing'}")


def _sim_config(plugins: Plugins, arch: Any) -> tuple[Check, Any]:
    from gpumem.sim import SimConfig

    what = WHAT["simulator_config"].format(arch=arch.name)
    try:
        cfg = plugins.first_result("gpumem_simulator_config", arch=arch.name, simulator="sim")
    except Exception as e:  # noqa: BLE001 - the plugin's config is what is checked
        return Check(what, False, f"invalid: {e}"), None
    if not isinstance(cfg, SimConfig):
        return Check(what, False, "none (ship a sim.toml: gpumem plugin new writes one)"), None
    problems = []
    if cfg.arch != arch.name:
        problems.append(f"names architecture '{cfg.arch}', not '{arch.name}'")
    if cfg.compute_capability not in arch.compute_capabilities:
        problems.append(f"compute capability {cfg.compute_capability} is not one the "
                        f"architecture claims ({', '.join(arch.compute_capabilities)})")
    said = "".join(f"; {line}" for line in cfg.assumptions())  # legal, but worth a word
    return Check(what, not problems, "; ".join(problems) or
                 f"'{cfg.name}', compute capability {cfg.compute_capability}{said}"), cfg


def _quick_run(plugins: Plugins, arch: Any, workers: int) -> Check:
    from gpumem.cells import fmt_band, fmt_value
    from gpumem.contracts.findings import CHECK_FAILS
    from gpumem.run.runner import RunRequest, run

    what = WHAT["quick_run"].format(arch=arch.name)
    with tempfile.TemporaryDirectory(prefix="gpumem-plugin-check-") as tmp:
        report = run(RunRequest(arch=arch.name, device="sim", quick=True, workers=workers,
                                out=Path(tmp) / "run"), plugins=plugins)
    failed = [f"{o.experiment} ({o.error})" for o in report.failed]
    checked = [(o.experiment, f) for o in report.outcomes for f in o.findings
               if f.expected is not None]
    bad = [f"{e}/{f.name} = {fmt_value(f.value)}{_interval_text(f)} outside its band "
           f"{fmt_band(f.expected_band, f.expected)}" for e, f in checked
           if f.status in CHECK_FAILS]
    counts = {s: sum(1 for _e, f in checked if f.status == s)
              for s in ("pass", "undecided", "fail")}
    if failed or bad or not checked:
        return Check(what, False, "; ".join(failed + bad) or "no finding had an expected value")
    undecided = [f"{e}/{f.name} = {fmt_value(f.value)}{_interval_text(f)}, band "
                 f"{fmt_band(f.expected_band, f.expected)}" for e, f in checked
                 if f.status == "undecided"]
    return Check(what, True, f"{len(checked)} findings checked: {counts['pass']} pass, "
                             f"{counts['undecided']} undecided, {counts['fail']} fail"
                 + (f" (undecided: the data cannot say: {'; '.join(undecided)})"
                    if undecided else ""))


def _interval_text(f: Any) -> str:
    from gpumem.cells import fmt_interval

    return "" if f.interval is None else f" (interval {fmt_interval(f.interval)})"


def _asked_devices(arch: Any, cfg: Any) -> list[Any]:
    """The devices the expected values are asked for: the simulated card (where there is a
    config), and real cards of the architecture, named as the config and the architecture
    describe them (values for one product)."""
    from gpumem.contracts.device import DeviceInfo
    from gpumem.sim.device import sim_device_info

    cc = (arch.compute_capabilities or ("0.0",))[0]
    base = sim_device_info(cfg) if cfg is not None else DeviceInfo(
        kind="cuda", name=arch.description, compute_capability=cc, sm_count=80,
        l2_bytes=40 << 20, memory_bytes=80 << 30, clock_mhz=1500.0, memory_clock_mhz=1600.0,
        memory_bus_bits=5120, peak_bandwidth_gbs=2048.0, extra={"max_warps_per_sm": 64})
    names = {arch.description, *arch.description.split(", compute")[:1],
             *([cfg.description] if cfg is not None else [])}
    real = [dataclasses.replace(base, kind="cuda", name=n) for n in sorted(names) if n]
    return ([base] if cfg is not None else []) + real


def _expected_names(plugins: Plugins, arch: Any, cfg: Any) -> tuple[Check, Check, Check]:
    from gpumem.contracts.finding_names import undeclared

    values: dict[str, Any] = {}
    dropped: list[str] = []
    for dev in _asked_devices(arch, cfg):
        for e in plugins.expected_values(arch.name, dev, warn=dropped.append):
            values.setdefault(e.name, e)
    unknown = undeclared(sorted(values), plugins.experiments())
    names = Check(WHAT["expected_names"].format(arch=arch.name), not unknown,
                  f"{len(values)} names" if not unknown else
                  "no experiment reports: " + ", ".join(unknown))
    bare = sorted(n for n, e in values.items() if not str(e.source).strip())
    sources = Check(WHAT["expected_sources"].format(arch=arch.name), not bare,
                    f"{len(values)} values" if not bare else "no source: " + ", ".join(bare))
    seen = list(dict.fromkeys(dropped))  # the same answer for every device asked
    valid = Check(WHAT["expected_valid"].format(arch=arch.name), not seen,
                  "; ".join(seen)[:600] if seen else f"{len(values)} values")
    return names, sources, valid


def _planted_cache(plugins: Plugins, arch: Any) -> Check:
    """Core's ``cache_structure`` run under the architecture on planted caches (random
    geometry and timer noise, the answer known): what the architecture sets for the search
    (its experiments' parameters, its device description) must not keep it from the truth."""
    from gpumem.run.runner import RunRequest, run
    from gpumem.testing import random_cache, recovered

    what = WHAT["planted_cache"].format(arch=arch.name)
    missed, recovered_names = [], 0
    for seed in PLANTED_SEEDS:
        planted = random_cache(seed)
        with tempfile.TemporaryDirectory(prefix="gpumem-plugin-check-") as tmp:
            planted.config.save(Path(tmp) / "planted.toml")
            report = run(RunRequest(arch=arch.name, experiments=["cache_structure"],
                                    device="sim", sim_config=Path(tmp) / "planted.toml",
                                    out=Path(tmp) / "run"), plugins=plugins)
        if report.failed:
            missed += [f"seed {seed}: {o.experiment} ({o.error})" for o in report.failed]
            continue
        lost = recovered(report.outcomes[0].findings, planted.truth)
        missed += [f"seed {seed} ({planted.description}): {n} planted {a!r}, found {b!r}"
                   for n, (a, b) in lost.items()]
        recovered_names += len(planted.truth) - len(lost)
    seeds = ", ".join(map(str, PLANTED_SEEDS))
    return Check(what, not missed, "; ".join(missed)[:600] if missed else
                 f"seeds {seeds}: {recovered_names} planted findings recovered")


def moved_names(folder: Path) -> list[str]:
    """``path:line imports NAME from gpumem.api (moved to MODULE)`` for every name a file
    under ``folder`` takes from ``gpumem.api`` that moved to one of its parts: it works with
    a DeprecationWarning until 0.2, then not at all (a plugin using one passed the check)."""
    from gpumem.contracts.api_moves import MOVED as _MOVED

    out = []
    for path in sorted(folder.rglob("*.py")):
        if "build" in path.parts or "__pycache__" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue  # imports_past_api names it
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "gpumem.api" and \
                    not node.level:
                out += [f"{path.relative_to(folder)}:{node.lineno} imports {a.name} from "
                        f"gpumem.api (moved to {_MOVED[a.name]}; gone in 0.2)"
                        for a in node.names if a.name in _MOVED]
    return out


def _imports(ep: metadata.EntryPoint, tree: Path | None) -> Check:
    folder = _package_dir(ep)
    what = WHAT["imports"]
    if folder is None:
        return Check(what, False, f"the entry point ({ep.value}) names no package of the "
                                  f"plugin's own")
    bad = imports_past_api(folder, ALLOWED_IMPORTS) + moved_names(folder)
    if tree is not None and (tree / "tests").is_dir():
        bad += imports_past_api(tree / "tests", ALLOWED_IN_TESTS)
    return Check(what, not bad, f"{folder}" if not bad else "; ".join(bad))
