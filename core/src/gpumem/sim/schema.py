"""The ``sim.toml`` schema, generated from :class:`~gpumem.sim.config.SimConfig`'s
declarations: a JSON Schema (draft 2020-12) of the TOML document, which editors validate
``sim.toml`` files with, and the docs page ``docs/sim-config.md``.

Both are committed (:data:`SCHEMA_PATH`, beside this module and installed with it, and
``docs/sim-config.md``) and a test checks them against what this module generates, so they
cannot drift from the declarations: after changing one, ``python -m gpumem.sim.schema``
rewrites both.

The JSON Schema has the shape of the TOML document, not of the dataclasses: ``caches`` is
``[[cache]]``, ``tlbs`` is ``[[tlb]]``, and a level's set index is flattened onto the level
(``index``, ``index_bits``, ``xor_masks``, ``index_table``, ``index_seed``). It is written by
walking the declarations rather than by pydantic's generator, so that it states exactly what
the loader accepts (every table closed to unknown keys, as the loader is) and comes out the
same on every pydantic version: the committed file cannot differ between two contributors'
environments. What a JSON Schema cannot say (a power of two, the rules between fields) is
in the descriptions, and checked when the config loads.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any, get_args, get_origin

from gpumem.sim.config import (
    _INDEX_KEYS,
    _UNIONS,
    CacheLevel,
    Declared,
    SetIndex,
    SimConfig,
    _limit,
    _toml_key,
    declared,
    declared_fields,
    range_text,
)

#: The JSON Schema, as committed and installed beside this module.
SCHEMA_PATH = Path(__file__).with_name("sim-config.schema.json")
#: The docs page, in a source checkout (``python -m gpumem.sim.schema`` rewrites it).
DOCS_PATH = Path(__file__).resolve().parents[4] / "docs" / "sim-config.md"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}
_KEYWORDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum",
             "lt": "exclusiveMaximum", "multiple_of": "multipleOf", "min_length": "minItems",
             "max_length": "maxItems"}


# ---------------------------------------------------------------------------------------------
# JSON Schema
# ---------------------------------------------------------------------------------------------


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a ``sim.toml`` document."""
    defs: dict[str, Any] = {}
    root = _object(SimConfig, defs)
    return {"$schema": DRAFT, "title": "gpumem sim.toml",
            **root, "$defs": dict(sorted(defs.items()))}


def _doc(cls: type) -> str:
    """A table's description: its docstring's first paragraph, on one line."""
    return " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """A config table as a closed JSON object: its fields by TOML key, the set index
    flattened, the fields without a default required."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for key, f, d, hint in _toml_fields(cls):
        props[key] = _property(f, d, hint, defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(key)
    out = {"type": "object", "description": _doc(cls), "properties": props,
           "additionalProperties": False}
    return {**out, "required": required} if required else out


def _toml_fields(cls: type) -> list[tuple[str, dataclasses.Field, Declared, Any]]:
    """``(TOML key, field, declaration, hint)`` of a table's keys, as the TOML spells them."""
    out = []
    for f, d, hint in declared_fields(cls):
        if d.base is SetIndex:
            out += [(_INDEX_KEYS[g.name], g, gd, gh) for g, gd, gh in declared_fields(SetIndex)]
        else:
            out.append((_toml_key(f), f, d, hint))
    return out


def _property(f: dataclasses.Field, d: Declared, hint: Any, defs: dict[str, Any]
              ) -> dict[str, Any]:
    """One key's schema: its type and range, description and default."""
    if isinstance(d.base, type) and dataclasses.is_dataclass(d.base):
        return {"$ref": _ref(d.base, defs), "description": _describe(d)}
    out = {**_type(hint, defs), "description": _describe(d)}
    default = _default(f)
    if default is not dataclasses.MISSING:
        out["default"] = default
    return out


def _ref(cls: type, defs: dict[str, Any]) -> str:
    if cls.__name__ not in defs:
        defs[cls.__name__] = {}  # placeholder against recursion
        defs[cls.__name__] = _object(cls, defs)
    return f"#/$defs/{cls.__name__}"


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a declared type: base type, limits, enum, items."""
    d = declared(hint)
    origin = get_origin(d.base)
    if origin in _UNIONS:
        out: dict[str, Any] = {"anyOf": [_type(a, defs) for a in get_args(d.base)]}
    elif origin is list:
        item = get_args(d.base)[0]
        items = ({"$ref": _ref(item, defs)}
                 if isinstance(item, type) and dataclasses.is_dataclass(item)
                 else _type(item, defs))
        out = {"type": "array", "items": items}
    elif origin is dict:
        out = {"type": "object", "additionalProperties": _type(get_args(d.base)[1], defs)}
    else:
        out = {"type": _JSON_TYPES[d.base]}
    for c in d.limits:
        kind, bound = _limit(c)
        if kind:
            out[_KEYWORDS[kind]] = bound
    if d.extra.get("enum"):
        out["enum"] = list(d.extra["enum"])
    return out


def _describe(d: Declared) -> str:
    """The description an editor shows: meaning, units, what a power of two or the unset
    value means."""
    units = d.extra.get("units", "")
    text = d.meaning + (f" [{units}]" if units and units != "1" else "")
    if d.extra.get("pow2"):
        text += "; a power of two"
    if d.extra.get("unset"):
        text += f"; {d.extra['unset']}"
    return text


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return dataclasses.MISSING if dataclasses.is_dataclass(value) else value
    return dataclasses.MISSING


def schema_text() -> str:
    """The JSON Schema as committed: indented, keys in declaration order, a final newline."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# The docs page
# ---------------------------------------------------------------------------------------------

_INTRO = """\
# sim.toml: the simulator's config, key by key

<!-- Generated by `python -m gpumem.sim.schema` from the declarations in
core/src/gpumem/sim/config.py: edit those, then run it; a test fails while this page differs. -->

The built-in simulator (`--device sim`) runs every experiment on a memory hierarchy described
by a `sim.toml` file (`gpumem run ... --device sim --sim-config FILE`; each plugin ships one).
Every key is declared once, with its type, units, range, default and meaning, in
`core/src/gpumem/sim/config.py`; this page and the JSON Schema
`core/src/gpumem/sim/sim-config.schema.json` are generated from those declarations.

Loading a file checks the types, then each key's range, then the rules between keys (a
`ways` that divides `size / line`, paths that name levels), and an error starts with the
key's path: `cache[l1d].ways: must divide size / line = 128`.

## Editors: checking a sim.toml as you type

The JSON Schema (draft 2020-12) describes the TOML document: completion, hover text and
errors for unknown keys, wrong types and out-of-range values in any editor that validates
TOML with a JSON Schema through [taplo](https://taplo.tamasfe.dev) (VS Code's *Even Better
TOML*, Neovim, Helix and Zed through taplo's language server; tombi reads the same
directive). It is installed with gpumem as `gpumem/sim/sim-config.schema.json`
(`python -c "import gpumem.sim.schema as s; print(s.SCHEMA_PATH)"` prints where).

* One file: a directive on its first line, a path relative to the file (or absolute, or a
  URL), e.g. in `plugins/NAME/src/gpumem_NAME/sim.toml`:

  ```toml
  #:schema ../../../../core/src/gpumem/sim/sim-config.schema.json
  ```

* Every `sim.toml` of a tree: a `.taplo.toml` at its root (taplo's command line, `taplo
  lint`, follows it too):

  ```toml
  [[rule]]
  include = ["**/sim.toml"]
  [rule.schema]
  path = "core/src/gpumem/sim/sim-config.schema.json"
  ```

What no JSON Schema can say (a power of two, the rules between keys) the descriptions say,
and loading checks.

## Not modelled

A key left at its unset value (0, an empty list: *unset* in the tables below) leaves the
simulator without a model of what it limits: an L1 with no `bandwidth` serves whatever the
SMs ask for, and `bw.l1` came out at 74 TB/s on an imported Accel-Sim V100 config (302 TB/s
in the issue that asked for this page). `SimConfig.unmodelled()` names the findings a
config cannot give, each with its reason, from the declarations: a key that models findings
lists them (*models* below), and a finding all of whose keys are unset is not modelled, so
that a run can report it as such rather than the value the unset key leaves. `bw.l1` and
`bw.l2` in a level's *models* are by its scope (`sm`: `bw.l1`, `gpu`: `bw.l2`).
"""

_PARTITIONS = """\
### A partitioned L2

An H100 or H200 L2 is two partitions, each SM attached to one. A line's *home* partition is
chosen by a hash of its address (`partition_masks`, by default a balanced one), and each
partition also keeps a copy of the lines its SMs read. A single SM's latency ladder shows
two L2 plateaus: hits in its partition's copy (`lat.l2`), and past the copy's capacity
(`l2.near_size`) lines served by their home partition (`lat.l2_far`); `l2_sm_map` then sees
each SM's own partition (`l2.sm_map_near_latency`) and the other (`l2.sm_map_far_latency`).
One `[[cache]]` level says all of it:

```toml
[paths]
ca = ["l1d", "l2"]
cg = ["l2"]

[[cache]]
name = "l2"
scope = "gpu"
size = 59123712        # both partitions
line = 128
sector = 32
ways = 16
translate = true
partitions = 2
near_size = 28641280   # the SM's own partition's copy: lat.l2 up to here
hit_latency = 283.0    # a hit in the copy
home_latency = 456.0   # past the copy, a line homed in the SM's own partition
far_latency = 530.0    # past the copy, a line homed in the other partition
# partition_masks = [0x421000]  # the default for two partitions
# sm_partition = [0, 0, 1, 1, ...]  # default: SM s is near s * partitions // sm_count
```

Loading writes it as the two levels the engine runs, which is also how the hopper plugin's
`sim.toml` spells it out by hand (both load, and mean the same): the copy `l2`
(`near_size` bytes, `hit_latency`, the level's `bandwidth` and `requests_per_cycle`) and
the whole L2 `l2_far` (`size` bytes, partitioned, hits at `home_latency` in the SM's
partition and `far_latency` in the other, no caps of its own), with `l2_far` after `l2` in
every path. A latency ladder on it reports `l2.partitions = 2`.

An H200's far hits are not all alike: about a tenth of them take 735-1040 cycles where the
rest take 530, in every SM's `l2_sm_map` chase (`l2.far_slow_share`, `l2.far_slow_latency`),
while hits in the SM's own partition almost never do. `far_slow_share` and `far_slow_latency`
say so: each hit in another partition is drawn slow with that probability and then costs
that latency (`export sim` sets both from the findings). The slow ones leave the L2 hits'
body, so `l2.near_fraction` reads above one half as the card's does.

Without `near_size`, a partitioned level keeps no copy: every hit costs `hit_latency` if the
line's home is the SM's partition, `far_latency` if not. Any footprint is then about half
far, so what a latency ladder reports depends on the hash's granularity: one plateau at the
median of mixed hits (a latency no access has, and `l2.partitions = 1`), or, with the
default page-grained hash, near hits while a footprint stays within one home and mixed ones
past it (a spurious `l2.partitions = 2` whose `l2.near_size` is the whole L2). This form is
what `l2_sm_map` maps SM by SM; it is not the two plateaus of an H100, which `near_size`
gives.

Both defaults run, but neither silently: a `--sim-config` (and `gpumem plugin check`) says in
one line each when a partitioned level leaves `partition_masks` to the balanced default, when
`sm_partition` has fewer or more entries than `sm_count` (it repeats over the SMs; the line
says how many SMs each partition is then near: three entries for 132 SMs put 88 near one
and 44 near the other), and when no SM is near some partition.
"""

_SECTION_NOTES: dict[type, str] = {CacheLevel: _PARTITIONS}
#: A Sphinx role (``:meth:`x```) in a docstring, shown as plain code on the page.
_ROLE = re.compile(r":\w+:`~?")


def markdown() -> str:
    """The docs page ``docs/sim-config.md``: each table of the TOML, each key with type,
    units, range, default and meaning."""
    parts = [_INTRO]
    parts.append(_section("The top level", SimConfig))
    for _key, f, d, _hint in _toml_fields(SimConfig):
        cls = _table_class(d)
        if cls is not None:
            parts.append(_section(_heading(_toml_key(f), d), cls))
    return "\n".join(parts)


def _table_class(d: Declared) -> type | None:
    """The config class a top-level key holds (a table, or a list of tables)."""
    if isinstance(d.base, type) and dataclasses.is_dataclass(d.base):
        return d.base
    item = get_args(d.base)[0] if get_origin(d.base) is list else None
    if isinstance(item, type) and dataclasses.is_dataclass(item):
        return item
    return None


def _heading(key: str, d: Declared) -> str:
    return f"`[[{key}]]`" if get_origin(d.base) is list else f"`[{key}]`"


def _section(title: str, cls: type) -> str:
    doc = "\n".join(line.strip() for line in (cls.__doc__ or "").strip().splitlines())
    doc = _ROLE.sub("`", doc).replace("``", "`")
    rows = ["| key | type | units | range | default | meaning |",
            "|---|---|---|---|---|---|"]
    rows += [_row(key, f, d, hint) for key, f, d, hint in _toml_fields(cls)]
    note = _SECTION_NOTES.get(cls)
    return "\n".join([f"## {title}", "", doc, "", *rows, ""] + ([note] if note else []))


def _row(key: str, f: dataclasses.Field, d: Declared, hint: Any) -> str:
    default = _default(f)
    shown = ("required" if default is dataclasses.MISSING and _table_class(d) is None
             else "" if default is dataclasses.MISSING else f"`{_toml_value(default)}`")
    meaning = d.meaning
    if d.extra.get("unset"):
        meaning += f"; *unset* {d.extra['unset']}"
    if d.extra.get("models"):
        found = ", ".join(f"`{m.replace('{role}', 'l1')}`/`{m.replace('{role}', 'l2')}`"
                          if "{role}" in m else f"`{m}`" for m in d.extra["models"])
        meaning += f"; *models* {found}"
    cells = [f"`{key}`", _type_name(hint), d.extra.get("units", "") or "",
             _range_words(hint), shown, meaning]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _range_words(hint: Any) -> str:
    """The range of a key and of its entries, in words."""
    d = declared(hint)
    own = range_text(d)
    origin = get_origin(d.base)
    inner = ""
    if origin is list and not dataclasses.is_dataclass(get_args(d.base)[0]):
        inner = _range_words(get_args(d.base)[0])
    elif origin is dict:
        inner = _range_words(get_args(d.base)[1])
    elif origin in _UNIONS:
        inner = "; ".join(w for w in (_range_words(a) for a in get_args(d.base)) if w)
    if inner and origin in (list, dict) and not inner.startswith("each "):
        inner = f"each {inner}"  # a list of lists: each entry's entries, said once
    return "; ".join(w for w in (own, inner) if w)


def _type_name(hint: Any) -> str:
    d = declared(hint)
    origin = get_origin(d.base)
    if origin in _UNIONS:
        return " or ".join(_type_name(a) for a in get_args(d.base))
    if origin is list:
        item = get_args(d.base)[0]
        return ("array of tables" if dataclasses.is_dataclass(item)
                else f"list of {_type_name(item)}")
    if origin is dict:
        return f"table of {_type_name(get_args(d.base)[1])}"
    if dataclasses.is_dataclass(d.base):
        return "table"
    return _JSON_TYPES[d.base]


def _toml_value(value: Any) -> str:
    """A default as TOML writes it (``true``, ``"lru"``, ``[4]``)."""
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------
# Writing both
# ---------------------------------------------------------------------------------------------


def write(schema_path: Path = SCHEMA_PATH, docs_path: Path = DOCS_PATH) -> list[Path]:
    """Rewrite the JSON Schema and the docs page from the declarations; returns the files
    that changed."""
    changed = []
    for path, text in ((schema_path, schema_text()), (docs_path, markdown())):
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def main() -> int:
    for path in write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
