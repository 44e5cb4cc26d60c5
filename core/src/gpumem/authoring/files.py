"""The files of a plugin that ``gpumem plugin new`` writes (:class:`~gpumem.authoring.new.
NewPlugin` in, a pip-installable package out).

The package is laid out as the plugin guide's example: ``pyproject.toml`` with the entry
point, ``plugin.py`` (the architecture), ``expected.py`` (the measured values as data, each
with its source, and the rule of which devices they apply to), ``sim.toml`` (the calibrated
config, every line commented with its finding or assumption), a README (the findings table,
the provenance, what the simulator does not reproduce, what a human should add) and tests
that pass as written (the checks every plugin must pass, :mod:`gpumem.api.checks`, one test
each, and its own architecture). Everything it imports from gpumem is :mod:`gpumem.api`.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import tomli_w

from gpumem.authoring.new import NewPlugin, Value
from gpumem.safe_write import write_text


def _py(v: Any) -> str:
    """A Python literal of a value (lists, numbers, strings): ``repr``, which escapes
    whatever a string holds (quotes, triple quotes, newlines, any character), so text from a
    run (a device name, a source) stays data and never becomes code."""
    return repr(v)


def _toml(v: str) -> str:
    """A TOML basic string holding ``v`` exactly, whatever it holds (quotes, an emoji)."""
    return tomli_w.dumps({"v": v}).split("=", 1)[1].strip()


def _md(v: Any) -> str:
    """Text from a run in a Markdown table cell: pipes, backticks, angle brackets and line
    breaks escaped, so a device name cannot end the cell or the table, or open HTML."""
    text = str(v)
    for a, b in (("\\", "\\\\"), ("|", "\\|"), ("`", "\\`"), ("<", "&lt;"),
                 (">", "&gt;"), ("\r", " "), ("\n", " ")):
        text = text.replace(a, b)
    return text


def _gpumem_pin(version: str) -> str:
    major, minor = (int(x) for x in version.split(".")[:2])
    return f"gpumem-dissect>={major}.{minor},<{major}.{minor + 1}"


def _products(p: NewPlugin) -> str:
    return ", ".join(p.products)


def pyproject(p: NewPlugin) -> str:
    what = (f"gpumem architecture plugin: {_products(p)} (compute capability "
            f"{p.compute_capability}), from gpumem's measurements")
    return f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "gpumem-{p.name}"
version = "0.1.0"
description = {_toml(what)}
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["{_gpumem_pin(p.gpumem_version)}"]

[project.optional-dependencies]
test = ["pytest>=8"]

# Group "gpumem": the plugin's name, and the object that implements its hooks.
[project.entry-points.gpumem]
{p.name} = "{p.package}.plugin:plugin"

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
{p.package} = ["*.toml"]
'''


def init_py(p: NewPlugin) -> str:
    return (f'"""gpumem architecture plugin {p.name}, written by gpumem plugin new (its '
            f'products: expected.PRODUCTS)."""\n\n__version__ = "0.1.0"\n')


def plugin_py(p: NewPlugin) -> str:
    what = f"{_products(p)}, compute capability {p.compute_capability} (measured by gpumem)"
    return f'''"""The {p.name} plugin: its architecture and where its data live.

gpumem.api.ArchitecturePlugin reads expected.py and sim.toml from this package. The entry
point names ``plugin``.
"""

from __future__ import annotations

from gpumem.api import Architecture, ArchitecturePlugin

ARCH = Architecture(
    name={_py(p.name)},
    description={_py(what)},
    compute_capabilities=({_py(p.compute_capability)},),
)

plugin = ArchitecturePlugin(ARCH, {_py(p.package)})
'''


def _row(v: Value) -> str:
    return (f"    ({_py(v.name)}, {_py(v.experiment)}, {_py(v.value)}, {_py(v.units)}, "
            f"{v.rel_tol!r}, {v.abs_tol!r}, {v.reproduced!r}, {v.index!r},\n"
            f"     {_py(v.source)}),")


def expected_py(p: NewPlugin) -> str:
    rows = "\n".join(_row(v) for v in p.values)
    today, n = date.today().isoformat(), len(p.runs_provenance)
    one = ("All runs measured one card: each band's card-to-card part is learned from "
           f"{p.learned_from}, not seen among these runs. " if p.one_card else "")
    return f'''"""Expected values for {p.name}: the GPU of PRODUCTS as gpumem measured it, and
what the device's own properties say of any GPU of compute capability {p.compute_capability}.

Written by `gpumem plugin new {p.name}` (gpumem {p.gpumem_version}, {today}) from {n} run(s) on
{len(p.cards)} card(s) (RUNS: card, date, id). Each MEASURED value is the median of those runs;
its band = the runs' own 95 % intervals in quadrature with their run-to-run spread and a
card-to-card allowance learned from gpumem's multi-card data (its source names each part, the
cards and the runs).
{one}They apply to a CUDA device of these products and, where the calibrated simulator
reproduces them (``sim`` True), to this package's simulator config. Any other device of the
compute capability gets the device-property values only.

A human should still add: published sources (a datasheet, a paper, another tool's output) for
the values they cover (replace or extend the source text), and runs from more cards.
"""

from __future__ import annotations

from gpumem.api import DeviceInfo, Expected, device_property_expected

#: The products (CUDA device names) the runs measured.
PRODUCTS = {tuple(p.products)!r}
#: The runs the values come from: card, date, id.
RUNS = {tuple(p.runs)!r}
#: This package's simulator config (sim.toml ``name``): a simulated device named after it.
SIM_MODEL = {_py(p.name)}

#: (finding, the experiment that measured it, value, units, relative band, absolute band,
#: reproduced by the simulator, the sweep coordinates of a list value's elements, source)
MEASURED: tuple[tuple, ...] = (
{rows}
)


def _applies(device: DeviceInfo, reproduced: bool) -> bool:
    if device.kind == "sim":
        model = device.name.removeprefix("sim ")
        return reproduced and (model == SIM_MODEL or model.startswith(SIM_MODEL + "-"))
    return device.name in PRODUCTS


def expected_values(device: DeviceInfo) -> list[Expected]:
    out = [Expected(name, value, source, units, rel_tol=rel, abs_tol=abs_, index=index,
                    experiment=experiment)
           for name, experiment, value, units, rel, abs_, sim, index, source in MEASURED
           if _applies(device, sim)]
    have = {{e.name for e in out}}
    return out + [e for e in device_property_expected(device) if e.name not in have]
'''


def test_py(p: NewPlugin) -> str:
    return f'''"""The plugin's own tests (``pip install -e '.[test]'``, then ``pytest``): every
check ``gpumem plugin check {p.name}`` makes, one test each named after it (gpumem.api.checks:
it loads, its simulator config is its architecture's, a quick simulated run meets its own
expected values, every expected value names a finding and has a source, the structure search
recovers a planted cache under it, it imports only gpumem.api), and what is this plugin's own:
the architecture it registers beside every installed plugin."""

from __future__ import annotations

from gpumem.api import load_plugins
from gpumem.api.checks import parametrize_plugin_checks

NAME = {_py(p.name)}


@parametrize_plugin_checks(NAME)
def test_plugin_check(check):
    check()


def test_it_registers_its_architecture_beside_every_installed_plugin():
    plugins = load_plugins()  # every installed plugin, as `gpumem` itself loads them
    (me,) = [r for r in plugins.records if r.name == NAME]
    assert me.status == "ok", me.error
    assert me.contributes["architectures"] == [NAME]
    assert plugins.architectures()[NAME].compute_capabilities == ({_py(p.compute_capability)},)
'''


def _cell(v: Any) -> str:
    text = json.dumps(v) if isinstance(v, (list, str)) else f"{v:g}" if isinstance(v, float) \
        else str(v)
    return _md(text)


def readme(p: NewPlugin) -> str:
    rows = []
    for v in p.values:
        band = "exact" if not v.rel_tol and not v.abs_tol else \
            f"{v.rel_tol:.1%}" + (f" or {v.abs_tol:g} cycles" if v.abs_tol else "")
        sim = "yes" if v.reproduced else _md(f"no: {v.why_not}")
        rows.append(f"| `{v.name}` | {_cell(v.value)} | {v.units} | {band} | "
                    f"{' / '.join(_cell(x) for x in v.runs)} | {sim} |")
    left = [f"| `{x.name}` | {x.experiment} | {_md(x.why)} |" for x in p.left]
    prov = [f"| {_md(r['run'])} | {_md(r['device'])} | {_md(r['uuid'])} | {_md(r['driver'])} "
            f"| {_md(r['arch'])} |" for r in p.runs_provenance]
    products = ", ".join(_md(x) for x in p.products)
    learned = (f"learned from {_md(p.learned_from)}" if p.one_card else
               f"the larger of what {_md(p.learned_from)} and these cards show")
    cards = (f"one card ({_md(p.cards[0][:12])}): **every run measured the same card**, so "
             f"how far another card of the product may stray is not seen here; each band's "
             f"card-to-card part is learned from {_md(p.learned_from)}. Make it from runs on "
             f"two or more cards before relying on it"
             if p.one_card else
             f"{len(p.cards)} cards ({', '.join(_md(c[:12]) for c in p.cards)})")
    off = [v for v in p.values if not v.reproduced]
    n_sim = sum(v.reproduced for v in p.values)
    return f"""# gpumem-{p.name}

A gpumem architecture plugin for {products} (compute capability
{p.compute_capability}), written by `gpumem plugin new {p.name}` from {len(p.runs_provenance)}
run(s) (gpumem {p.gpumem_version}, {date.today().isoformat()}). It registers the architecture
`{p.name}`, {len(p.values)} expected values, and a built-in simulator config calibrated from
the same runs.

Cards measured: {cards}.

```sh
pip install ./gpumem-{p.name}             # this folder, next to gpumem
gpumem run --arch {p.name} all --check    # on a GPU of this product: does it match?
gpumem run --arch {p.name} all --device sim --check   # the simulated card
gpumem plugin check {p.name}              # the plugin's own consistency checks
```

`gpumem run all` (no `--arch`) picks this plugin for a GPU of compute capability
{p.compute_capability} when no plugin that ships with gpumem claims it.

## Which device each value applies to

- A CUDA device named {" or ".join(_md(x) for x in p.products)}: every measured value below.
- The packaged simulator (`--device sim`): the {n_sim} of {len(p.values)} values it reproduces
  (column "simulator").
- Any other GPU of compute capability {p.compute_capability}: only what its own properties say
  (its L2 size, its theoretical memory bandwidth as an upper bound, its warps per SM).

## Findings

Median of the runs; band: the relative tolerance of a pass (a value passes inside the median
+/- it, fails where neither it nor its interval reaches that band, and is undecided between),
the runs' own 95 % intervals in quadrature with their run-to-run spread and a card-to-card
allowance learned from gpumem's multi-card data (`src/{p.package}/expected.py` gives each part);
runs: each run's value; simulator: whether the calibrated simulator reproduces it, in a full
run and in the quick run that `gpumem plugin check` makes (else what it gives: a quick run's
smaller grid cannot show some values; "not modelled": the config leaves unset what would).

| finding | value | units | band | runs | simulator |
|---|---|---|---|---|---|
{chr(10).join(rows)}

### Not expected

| finding | experiment | why |
|---|---|---|
{chr(10).join(left) or "| - | - | - |"}

## What the simulator does not reproduce

{len(off)} measured value(s) apply to the hardware only: the calibrated model
(`src/{p.package}/sim.toml`, each line commented with the finding that set it or the
assumption it rests on) does not produce them within their band. They are listed above with
the simulated value; mechanisms the model cannot learn from a run (plain loads in flight per
thread, cp.async's and the copy engine's extra cycles, the DRAM's knee) stay at their
defaults.

## Provenance

| run | device | UUID | driver | measured as |
|---|---|---|---|---|
{chr(10).join(prov)}

## What a human should add

- Published sources for the values they cover (a datasheet, a whitepaper, a paper, another
  tool's output): `src/{p.package}/expected.py` gives each value's source as the runs; replace
  or extend it, and widen a band where published numbers disagree.
- Runs from more cards of the product (`gpumem plugin new` again with all runs): with
  {len(p.runs_provenance)} run(s) on {len(p.cards)} card(s), the card-to-card part of each band
  is {learned}.
- A licence file, and a version bump for each release.
"""


def write_plugin(p: NewPlugin) -> list[Path]:
    """Write the package under ``p.out`` (which must not exist or be empty); the paths."""
    src = p.out / "src" / p.package
    files = {
        p.out / "pyproject.toml": pyproject(p),
        p.out / "README.md": readme(p),
        src / "__init__.py": init_py(p),
        src / "plugin.py": plugin_py(p),
        src / "expected.py": expected_py(p),
        src / "sim.toml": p.sim_toml,
        p.out / "tests" / f"test_{p.package.removeprefix('gpumem_')}.py": test_py(p),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    return list(files)
