"""``SimConfig``: the typed, declared and validated description of a simulated GPU memory
hierarchy.

A config is plain data: loaded from and saved to TOML, embedded verbatim in every simulated
dataset's attributes, and compiled into flat arrays by :mod:`gpumem.sim.engine` (latency)
and read by :mod:`gpumem.sim.throughput` (bandwidth).

Every field is declared once, beside its type: ``Annotated[float, spec("meaning", "cycle",
ge=0, unset="0: no limit", models=("bw.l1",))]`` gives its meaning in one line, its units,
its range, what its unset value (0, an empty list) means and which findings it models. From
the declarations come the range checks of loading and :meth:`SimConfig.validate`, the JSON
Schema and the docs page (:mod:`gpumem.sim.schema`: ``sim-config.schema.json`` beside this
module, ``docs/sim-config.md``) and :meth:`SimConfig.unmodelled`. TOML is converted field by
field from the type hints, so a wrong type, a missing field or an unknown key fails with the
field's path; then the declared ranges are checked, then the rules between fields. Every
error starts with the path: ``cache[l1d].ways: must divide size / line = 128``.

Why pydantic declarations on stdlib dataclasses. A declaration is a pydantic v2 ``Field``:
its limits are annotated-types constraints (``Ge``, ``Gt``, ``MaxLen``, ...) that this
module enforces and :mod:`gpumem.sim.schema` renders, and ``pydantic.TypeAdapter`` validates
these very classes as a second, independent reading of the declarations (the tests do). It
is pydantic rather than msgspec or attrs because ``Annotated`` metadata leaves stdlib
dataclasses exactly as they are, its ``Field`` is the declaration vocabulary most readers
know, and newer typer releases install it anyway. The classes stay stdlib dataclasses, not
pydantic models or dataclasses: the engine, the calibration and the tests build them
positionally, mutate them and ``dataclasses.replace`` them, and a config built in Python is
checked when :meth:`SimConfig.validate` is called, with the same path-prefixed messages as a
TOML file's; a pydantic class validates on construction and words its errors its own way.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import sys
import types
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, NamedTuple, NoReturn, Union, get_args, get_origin, get_type_hints

import numpy as np
import tomli_w
from pydantic import Field
from pydantic.fields import FieldInfo

from gpumem.contracts.chains import mix_vec, splitmix64
from gpumem.contracts.device import LARGEST_CLUSTER
from gpumem.contracts.xor_hash import class_index, codes_of, gf2_basis
from gpumem.sim.model import BUFFER_MIX
from gpumem.sim.noise import SPREADS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

POLICIES = ("lru", "fifo", "random", "weighted")
INDEX_FUNCTIONS = ("modulo", "bits", "xor", "table", "hashed", "spread")
#: The pages whose lines an ``index = "spread"`` level scrambles: 2 MiB, the pages within
#: which a Hopper's virtual and physical addresses agree (issue 44).
SPREAD_PAGE = 2 << 20
SCOPES = ("sm", "gpu")
_UNIONS = (Union, getattr(types, "UnionType", Union))


class SimConfigError(ValueError):
    """A config field breaks a rule; the message starts with the field's path."""


def _fail(where: str, rule: str) -> NoReturn:
    raise SimConfigError(f"{where}: {rule}")


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


# ---------------------------------------------------------------------------------------------
# Declarations: spec() writes one, declared() reads it back
# ---------------------------------------------------------------------------------------------


def spec(meaning: str, units: str = "", *, unset: str = "", models: tuple[str, ...] = (),
         enum: tuple[Any, ...] = (), pow2: bool = False, unset_value: Any = None,
         omit_default: bool = False, **limits: Any) -> Any:
    """One field's declaration, a pydantic ``Field``: ``meaning`` (one line), ``units``
    (gpumem's spelling: cycle, byte, GB/s, byte/cycle; ``1`` for a plain number), ``limits``
    (pydantic's ``ge``, ``gt``, ``le``, ``lt``, ``multiple_of``, ``min_length``,
    ``max_length``), ``enum`` (the values allowed), ``pow2`` (a power of two).

    ``unset``: what the field's unset value means (``"0: no limit"``); the unset value is
    ``unset_value`` where given, else any false one (0, empty). ``models``: the findings the
    field, once set, gives a model of (fnmatch patterns; ``{role}`` is ``l1`` on an SM-scope
    cache level, ``l2`` on a GPU-scope one): a finding all of whose fields are unset is
    :meth:`SimConfig.unmodelled`. ``omit_default``: a field added after configs were first
    hashed, left out of the TOML a config writes while at its default, so every older
    config keeps its text and digest."""
    extra = {"units": units, "unset": unset, "models": list(models), "enum": list(enum),
             "pow2": pow2, "unset_value": unset_value, "omit_default": omit_default}
    return Field(description=meaning,
                 json_schema_extra={k: v for k, v in extra.items()
                                    if v is not None and v is not False and v != [] and v != ""},
                 **limits)


class Declared(NamedTuple):
    """A declaration read back from a type hint: the type without its ``Annotated`` layers,
    the meaning, spec()'s extras and the limits (annotated-types constraints, read by their
    attribute: ``ge``, ``gt``, ``le``, ``lt``, ``multiple_of``, ``min_length``,
    ``max_length``)."""

    base: Any
    meaning: str
    extra: dict[str, Any]
    limits: tuple[Any, ...]


def declared(hint: Any) -> Declared:
    """Read the declaration of a type hint (``Annotated[T, spec(...)]``; a plain ``T`` has
    none). Nested ``Annotated`` layers (a declared alias such as :data:`Count`) merge."""
    meaning, limits = "", []
    extra: dict[str, Any] = {}
    while get_origin(hint) is Annotated:
        for info in hint.__metadata__:
            if isinstance(info, FieldInfo):
                meaning = info.description or meaning
                more = info.json_schema_extra or {}
                if callable(more):  # pydantic's other form: gpumem declares none
                    raise TypeError(f"{hint}: a callable json_schema_extra is not read")
                extra.update(more)
                limits.extend(info.metadata)
        hint = hint.__origin__
    return Declared(hint, meaning, extra, tuple(limits))


@functools.cache
def declared_fields(cls: type) -> tuple[tuple[dataclasses.Field, Declared, Any], ...]:
    """``(field, declaration, declared type hint)`` of each field of a config class, in
    order; cached, since evaluating the hints builds every declaration anew."""
    hints = get_type_hints(cls, include_extras=True)
    return tuple((f, declared(hints[f.name]), hints[f.name]) for f in fields(cls))


@functools.cache
def _plain_hints(cls: type) -> dict[str, Any]:
    """The type hints without declarations: what the TOML converter reads."""
    return get_type_hints(cls)


def _limit(c: Any) -> tuple[str, Any]:
    """``(kind, bound)`` of one annotated-types constraint, by its attribute."""
    for kind in ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length"):
        if hasattr(c, kind):
            return kind, getattr(c, kind)
    return "", None


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def range_text(d: Declared) -> str:
    """A declaration's range in words, as errors and the docs say it: ``>= 0``,
    ``in 1..4096``, ``in (0, 1]``, ``a power of two``, ``one of 4, 8``, ``at most 3
    entries``."""
    b = dict(_limit(c) for c in d.limits)
    parts = []
    lo, hi = ("gt" if "gt" in b else "ge"), ("lt" if "lt" in b else "le")
    if lo in b and hi in b:
        if lo == "ge" and hi == "le" and isinstance(b["ge"], int):
            parts.append(f"in {b['ge']}..{b['le']}")
        else:
            parts.append(f"in {'(' if lo == 'gt' else '['}{_num(b[lo])}, {_num(b[hi])}"
                         f"{')' if hi == 'lt' else ']'}")
    else:
        ops = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
        parts += [f"{ops[k]} {_num(b[k])}" for k in (lo, hi) if k in b]
    if "multiple_of" in b:
        parts.append(f"a multiple of {b['multiple_of']}")
    if d.extra.get("pow2"):
        parts.append("a power of two")
    if d.extra.get("enum"):
        parts.append("one of " + ", ".join(repr(v) if v == "" else str(v)
                                           for v in d.extra["enum"]))
    if "min_length" in b:
        parts.append(f"at least {b['min_length']} entr{'y' if b['min_length'] == 1 else 'ies'}")
    if "max_length" in b:
        parts.append(f"at most {b['max_length']} entries")
    return ", ".join(parts)


def _within(value: Any, c: Any) -> bool:
    kind, bound = _limit(c)
    if kind == "ge":
        return value >= bound
    if kind == "gt":
        return value > bound
    if kind == "le":
        return value <= bound
    if kind == "lt":
        return value < bound
    if kind == "multiple_of":
        return value % bound == 0
    return True


def _gloss(d: Declared) -> str:
    """`` (cycle; 0: no limit)``: the units of a bound and the unset value's meaning, for an
    error."""
    bounded = any(_limit(c)[0] in ("ge", "gt", "le", "lt") for c in d.limits)
    units = d.extra.get("units", "") if bounded and d.extra.get("units") != "1" else ""
    said = "; ".join(x for x in (units, d.extra.get("unset", "")) if x)
    return f" ({said})" if said else ""


def _check_limits(where: str, value: Any, d: Declared) -> None:
    """One value against its own declaration (not its items'): enum, length, range."""
    enum = d.extra.get("enum")
    if enum and value not in enum:
        _fail(where, f"must be {range_text(Declared(d.base, '', {'enum': enum}, ()))}")
    if isinstance(value, (list, dict)):
        for c in d.limits:
            kind, n = _limit(c)
            if (kind == "min_length" and len(value) < n) or (
                    kind == "max_length" and len(value) > n):
                _fail(where, f"must have {range_text(d)}, got {len(value)}")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if not all(_within(value, c) for c in d.limits) or (
            d.extra.get("pow2") and not (isinstance(value, int) and _is_pow2(value))):
        _fail(where, f"must be {range_text(d)}{_gloss(d)}, got {_num(value)}")


def _union_member(hint: Any, value: Any) -> Any:
    """The member of ``int | list[int]`` a value has the shape of (None: neither)."""
    for opt in get_args(hint):
        if (get_origin(declared(opt).base) is list) == isinstance(value, list):
            return opt
    return None


def check_value(where: str, value: Any, hint: Any) -> None:
    """A value, and each of its items, against the declarations of ``hint``. Config tables
    (dataclasses) are walked by :func:`_leaves`, not here."""
    if dataclasses.is_dataclass(value):
        return
    d = declared(hint)
    _check_limits(where, value, d)
    origin = get_origin(d.base)
    if origin in _UNIONS:
        member = _union_member(d.base, value)
        if member is not None:
            check_value(where, value, member)
    elif origin is list and isinstance(value, list):
        for i, v in enumerate(value):
            check_value(f"{where}[{i}]", v, get_args(d.base)[0])
    elif origin is dict and isinstance(value, dict):
        for k, v in value.items():
            check_value(f"{where}.{k}", v, get_args(d.base)[1])


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _leaves(obj: Any, where: str = "", role: str = "") -> Iterator[
        tuple[str, Any, Declared, Any, str]]:
    """``(TOML path, value, declaration, hint, role)`` of every field below the config table
    ``obj``, tables entered (a list of tables yields itself, then its items' fields), the
    set index flattened onto its level as TOML writes it. ``role`` is ``l1`` inside an
    SM-scope cache level, ``l2`` inside a GPU-scope one."""
    cls: type = type(obj)
    for f, d, hint in declared_fields(cls):
        value = getattr(obj, f.name)
        if isinstance(value, SetIndex):
            for g, gd, ghint in declared_fields(SetIndex):
                yield (_join(where, _INDEX_KEYS[g.name]), getattr(value, g.name), gd, ghint,
                       role)
        elif dataclasses.is_dataclass(value):
            yield from _leaves(value, _join(where, _toml_key(f)), role)
        else:
            path = _join(where, _toml_key(f))
            yield path, value, d, hint, role
            for i, item in enumerate(value if isinstance(value, list) else ()):
                if dataclasses.is_dataclass(item):
                    sub = ("l1" if item.scope == "sm" else "l2") if isinstance(
                        item, CacheLevel) else ""
                    yield from _leaves(item, f"{path}[{getattr(item, 'name', '') or i}]", sub)


def _check_declared(cfg: SimConfig) -> None:
    """Every field of ``cfg`` within its declared range."""
    for where, value, _d, hint, _role in _leaves(cfg):
        check_value(where, value, hint)


def _is_set(value: Any, d: Declared) -> bool:
    """Does ``value`` set the field (not its declared unset value: 0, empty, or
    ``unset_value``)?"""
    if "unset_value" in d.extra:
        return value != d.extra["unset_value"]
    return bool(value)


# Bounds that keep a simulation's memory and arithmetic sane whatever a config file says.
#: Every float in a config: finite, and no larger than this in magnitude (a latency or a rate
#: past it is a typo, not a GPU); integers (seeds, address masks) must fit the engine's int64.
MAX_NUMBER = 2 ** 53
#: Bytes of cache and TLB state the engine may allocate for one hierarchy (each worker
#: process holds its own). The engine keeps 16 bytes per line or TLB entry and about 64 per
#: set (arrays, and the lists it builds them from), so this admits about 16 million lines,
#: e.g. a 2 GiB cache of 128-byte lines: over ten times the largest L2 of a real GPU, and a
#: bound on memory by design rather than a MemoryError (or swapping) halfway into a run.
MAX_STATE_BYTES = 256 << 20
#: Bounds on counts that size lists and sweeps (SMs, peer GPUs of a node).
MAX_SMS = 4096
MAX_PEERS = 255
#: The largest page a slice table may repeat over (the engine keeps a slice per line of it,
#: 2**20 lines of 8 bytes at most; an H200's table is over 2 MB pages of 128-byte lines).
MAX_SLICE_PAGE_BITS = 27


def _max_ways(ways: int | list[int]) -> int:
    """The largest way count, without building a list of one entry per set."""
    return max(ways) if isinstance(ways, list) else ways


def state_bytes(cfg: SimConfig) -> tuple[int, str]:
    """Bytes of state the engine allocates for ``cfg``'s caches and TLBs (see
    :data:`MAX_STATE_BYTES`), and the name of the level that needs the most."""
    sizes = {}
    for c in cfg.caches:
        sizes[f"cache[{c.name}]"] = 16 * (c.size // c.line) + 64 * c.sets
    for t in cfg.tlbs:
        sizes[f"tlb[{t.name}]"] = 16 * t.entries + 64 * t.sets
    biggest = max(sizes, key=sizes.__getitem__) if sizes else "cache"
    return sum(sizes.values()), biggest


def _check_number(where: str, obj: Any) -> None:
    """Every float in ``obj`` (a field's value) is finite and within :data:`MAX_NUMBER`,
    every int fits an int64: NaN passes every ``<`` check that follows, and inf or a huge
    value makes garbage latencies."""
    if isinstance(obj, (bool, str)) or dataclasses.is_dataclass(obj):
        return
    if isinstance(obj, int):
        if not -(1 << 63) <= obj < 1 << 63:
            _fail(where, f"{obj} does not fit a 64-bit integer")
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            _fail(where, f"must be a finite number, got {obj}")
        if abs(obj) > MAX_NUMBER:
            _fail(where, f"{obj:g} is out of range (at most {MAX_NUMBER:.3g} in magnitude)")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_number(f"{where}[{i}]", v)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _check_number(f"{where}.{k}", v)


def _check_numbers(cfg: SimConfig) -> None:
    for where, value, _d, _hint, _role in _leaves(cfg):
        _check_number(where, value)


#: A count of one or more (ways, entries, SMs): the declared alias the way lists use.
Count = Annotated[int, Field(ge=1)]
#: Ways per set: one number for equal sets, or one number per set for unequal sets.
Ways = Count | Annotated[list[Count], Field(min_length=1)]
#: A number that is not negative (cycles, weights).
NonNegative = Annotated[float, Field(ge=0)]


# ---------------------------------------------------------------------------------------------
# The config's tables, each field declared
# ---------------------------------------------------------------------------------------------


@dataclass
class SetIndex:
    """How an address picks a set (TOML keys ``index``, ``index_bits``, ``xor_masks``,
    ``index_table``, ``index_seed`` on the level).

    ``modulo``: block number mod sets. ``bits``: the address bits listed (LSB first) form the
    set number, e.g. ``[7, 8]`` for the texture L1 of Fermi. ``xor``: set bit i is the parity
    of ``address & masks[i]``. ``table``: ``table[block number mod len(table)]``, for mappings
    measured rather than understood (Fermi's L2 TLB). ``hashed``: a fixed pseudo-random
    mapping, every set equally often (seed ``index_seed``), for a cache whose hash is not
    known but whose behaviour is a hash's: a footprint below capacity already overflows the
    sets it loads more than the others (an H200's L1: half of a sequential chase misses at
    93 % of the capacity its latency ladder shows, as balls in bins predict for 4 ways).
    ``spread``: the lines of each 2 MiB page (:data:`SPREAD_PAGE`) in a pseudo-random order
    (a fixed one, seed ``index_seed``, XOR a mix of the page's number), then modulo the sets:
    consecutive pages take the sets one after another as modulo does, so a footprint of whole
    pages loads them within one line of each other, but a page's consecutive lines land far
    apart, and not where another page's do (:meth:`spread_sets`). Past the capacity the sets
    overflow one at a time and any stretch of a sequential chase misses as often as the
    whole: its miss share ramps over about a page from the capacity (an H200's L2: half the
    accesses leave 2-6 % past the knee), where modulo takes every recorded access at once
    with the first overflowing sets, the first lines of the chase, which a record times.
    """

    function: Annotated[str, spec(
        "how an address picks a set: modulo (the line number modulo the sets), bits (the "
        "index_bits), xor (parities of xor_masks), table (index_table), hashed (a pseudo-"
        "random balanced mapping: sets overflow before the capacity, as balls in bins), "
        "spread (each 2 MiB page's lines scrambled, then modulo: past the capacity the sets "
        "overflow one at a time)", enum=INDEX_FUNCTIONS)] = "modulo"
    bits: Annotated[list[Annotated[int, Field(ge=0, le=62)]], spec(
        "index = 'bits': the address bits (LSB first) that form the set number",
        unset="empty: only with another index")] = field(default_factory=list)
    masks: Annotated[list[Count], spec(
        "index = 'xor': one address mask per set-number bit, the bit being the parity of "
        "address & mask", unset="empty: only with another index")] = \
        field(default_factory=list)
    table: Annotated[list[Annotated[int, Field(ge=0)]], spec(
        "index = 'table': the set of each block number mod the table's length",
        unset="empty: only with another index")] = field(default_factory=list)
    seed: Annotated[int, spec("index = 'hashed' or 'spread': the seed of the pseudo-random "
                              "mapping")] = 0

    def hashed_table(self, sets: int, blocks: int) -> list[int]:
        """The ``hashed`` function as a table: a period of at least four times the level's
        ``blocks`` (a power of two), blocks ranked by a 64-bit mix of their number and the
        seed (splitmix64), the sets dealt round the ranking: balanced and deterministic."""
        period = 1 << max(10, (4 * blocks - 1).bit_length())
        salt = self.seed * 0x632BE59BD9B4E019
        order = sorted(range(period), key=lambda b: splitmix64(b ^ salt))
        table = [0] * period
        for rank, b in enumerate(order):
            table[b] = rank % sets
        return table

    def spread_table(self, line: int) -> np.ndarray:
        """The ``spread`` function's order of a page's lines: entry ``k`` the place of line
        ``k`` of every page, the lines ranked by a 64-bit mix of their number and the seed
        (splitmix64's output function): a permutation, deterministic."""
        lines = SPREAD_PAGE // line
        keys = mix_vec(np.arange(lines, dtype=np.uint64) ^ np.uint64(splitmix64(self.seed)))
        order = np.empty(lines, np.int64)
        order[np.argsort(keys, kind="stable")] = np.arange(lines)
        return order

    def spread_sets(self, blocks: np.ndarray, line: int, sets: int,
                    order: np.ndarray | None = None) -> np.ndarray:
        """The sets of ``blocks`` (addresses // line) under ``spread``: each block's page
        start plus its place in the page (:meth:`spread_table`'s, XOR the low bits of
        splitmix64's output function of the page number), modulo the sets (what the
        simulator's kernel computes, :func:`gpumem.sim.model.set_index`); ``order``: the
        table, where the caller keeps it."""
        order = self.spread_table(line) if order is None else order
        n = order.size
        b = np.asarray(blocks, dtype=np.int64)
        shift = (mix_vec((b // n).astype(np.uint64)) & np.uint64(n - 1)).astype(np.int64)
        return ((b - b % n) | (order[b % n] ^ shift)) % sets

    def validate(self, where: str, sets: int, line: int) -> None:
        """The rules between the index and the level's set count and line (ranges are
        declared)."""
        if self.function == "bits":
            if not self.bits:
                _fail(f"{where}.index_bits", "required when index = 'bits'")
            if 2 ** len(self.bits) != sets:
                _fail(f"{where}.index_bits",
                      f"{len(self.bits)} bits select {2 ** len(self.bits)} sets, not {sets}")
        if self.function == "xor" and 2 ** len(self.masks) != sets:
            _fail(f"{where}.xor_masks",
                  f"{len(self.masks)} masks select {2 ** len(self.masks)} sets, not {sets}")
        if self.function == "spread" and (line <= 0 or SPREAD_PAGE % line
                                          or SPREAD_PAGE // line < 2):
            _fail(f"{where}.index", f"'spread' scrambles the lines of {SPREAD_PAGE}-byte "
                  "pages: a line of at most half that, dividing it")
        if self.function == "table":
            if not self.table:
                _fail(f"{where}.index_table", "required when index = 'table'")
            if any(s >= sets for s in self.table):
                _fail(f"{where}.index_table", f"entries must be set numbers 0..{sets - 1}")
            if sorted(set(self.table)) != list(range(sets)):
                _fail(f"{where}.index_table", "every set must appear at least once")


def _validate_ways(where: str, ways: int | list[int], units: int, unit_name: str) -> None:
    if isinstance(ways, list):
        if sum(ways) != units:
            _fail(f"{where}.ways", f"the ways add up to {sum(ways)}, not {unit_name} = {units}")
    elif units % ways:
        _fail(f"{where}.ways", f"must divide {unit_name} = {units}")


def _validate_policy(where: str, policy: str, weights: list[float], max_ways: int) -> None:
    if policy == "weighted":
        if len(weights) != max_ways:
            _fail(f"{where}.way_weights", f"needs one weight per way ({max_ways})")
        if sum(weights) <= 0:
            _fail(f"{where}.way_weights", "weights must be >= 0 with a positive sum")


def default_partition_masks(partitions: int) -> list[int]:
    """The balanced home hash of a level whose ``partition_masks`` are not given: mask ``i``
    takes the parity of address bits ``12 + i``, ``17 + i`` and ``22 + i`` (for two
    partitions 0x421000, the hash the hopper config assumes). Each mask has a lowest bit of
    its own, so the masks are independent and every 2**(12 + log2(partitions)) aligned bytes
    are shared equally by the partitions."""
    return [(1 << (12 + i)) | (1 << (17 + i)) | (1 << (22 + i))
            for i in range(partitions.bit_length() - 1)]


#: The replacement of a cache or TLB level, declared once for both.
Policy = Annotated[str, spec("replacement policy", enum=POLICIES)]
WayWeights = Annotated[list[NonNegative], spec(
    "policy = 'weighted': each way's eviction weight (one per way, positive sum)",
    unset="empty: only with another policy")]
Index = Annotated[SetIndex, spec("the set index, flattened onto the level")]


@dataclass
class CacheLevel:
    """One cache level, per SM (``scope = "sm"``) or shared by the GPU (``"gpu"``).

    ``ways`` is a number for equal sets or a list (one entry per set) for unequal sets.
    ``requests_per_cycle`` caps the tag lookups the level serves: one per line a warp's load
    instruction touches (one request carries a sector mask), and ``fill_lookups`` more per
    line it fills on a miss. It is why per-thread contiguous loads lose bandwidth as each
    thread's run grows (an H200 at K = 8 reads 16 useful bytes per request, a coalesced warp
    128): the ILP drop of the H100 plain-load study.

    **A partitioned L2** (a GPU-scope level): ``partitions`` homes, a line's home chosen by
    ``partition_masks``, each SM near ``sm_partition[sm]``; a hit costs ``hit_latency`` in
    the SM's partition and ``far_latency`` in another. With ``near_size`` the SM's partition
    also keeps a copy of the lines the SM reads, as an H100/H200 does: a hit there costs
    ``hit_latency``, and past it a line comes from its home partition (``home_latency`` in
    the SM's own, ``far_latency`` in another); :meth:`SimConfig.validate` writes such a level
    as the two levels the engine runs (:meth:`split_near_copy`). docs/sim-config.md, "A
    partitioned L2", shows both forms. ``sm_offsets`` adds a per-SM latency (cyclic over
    SMs), as distance on the die does. ``far_slow_share`` of the hits in another partition
    cost ``far_slow_latency`` instead, drawn per access: an H200's are (about 10 % of them at
    about 895 cycles, spread over 735-1040, in every l2_sm_map chase and from 32 MB in the
    latency ladder), while hits in the SM's own partition are not.

    **A sliced L2**: ``slices`` homes a line in one slice by the XOR hash ``slice_masks``,
    or, for a hash no XOR masks express (an H200's), by ``slice_table``: one slice per class
    of the line's address within a page modulo the span of ``slice_kernel`` (the deltas
    that never change a line's slice), the table of one page and every other page a shift
    of it (:meth:`slice_of`), as an H200's physical pages are. A hit the level serves costs
    ``slice_latency[sm][slice]``: each SM's distance to each slice, as an H200's L2 hits
    vary per line and SM (246-332 cycles from one SM). It refines a partitioned level (each
    partition's lines spread over its slices) or stands alone; with a near copy it belongs
    to the homed level.
    """

    name: Annotated[str, spec("the level's name, as paths and findings use it (l1d, l2)")]
    size: Annotated[int, spec("capacity (a multiple of line; for a partitioned level all "
                              "partitions)", "byte", ge=1)]
    line: Annotated[int, spec("line size", "byte", pow2=True)]
    ways: Annotated[Ways, spec("ways per set: one number (equal sets, dividing size / line) "
                               "or one number per set (adding up to size / line)", "1")]
    hit_latency: Annotated[NonNegative, spec(
        "whole latency of a load this level serves (partitioned: a hit in the SM's own "
        "partition or, with near_size, in the near copy)", "cycle")]
    sector: Annotated[int, spec("fill granularity (a power of two up to line)", "byte", ge=0,
                                unset="0: the line (unsectored)")] = 0
    policy: Policy = "lru"
    way_weights: WayWeights = field(default_factory=list)
    index: Index = field(default_factory=SetIndex)
    scope: Annotated[str, spec("'sm': one per SM; 'gpu': one shared by every SM",
                               enum=SCOPES)] = "sm"
    translate: Annotated[bool, spec(
        "looked up with a physical address, so the TLBs are consulted first (false: "
        "virtually tagged, hits without translation)")] = False
    bandwidth: Annotated[float, spec(
        "bytes per cycle the level serves (per SM at scope 'sm', in all at 'gpu')",
        "byte/cycle", ge=0, unset="0: no limit", models=("bw.{role}", "bw.{role}_*"))] = 0.0
    requests_per_cycle: Annotated[float, spec(
        "tag lookups per cycle the level serves (same scope as bandwidth): one per line a "
        "warp's load touches", "lookup/cycle", ge=0, unset="0: no limit",
        models=("bw.{role}", "bw.{role}_*", "ilp.*"))] = 0.0
    fill_lookups: Annotated[float, spec("lookups more per line filled on a miss", "lookup",
                                        ge=0)] = 1.0
    shared_bandwidth: Annotated[float, spec(
        "GPU scope: bytes per cycle the level serves where blocks on several SMs read each "
        "line (a stream's share > 1), as an H200's L2 serves lines that SMs of both "
        "partitions read from a copy near each", "byte/cycle", ge=0,
        unset="0: bandwidth", omit_default=True)] = 0.0
    coalesced_share: Annotated[int, spec(
        "GPU scope: from this many blocks reading each line at once (a stream's share), "
        "their requests merge before the level (an H200's L2 request coalescer) and the SMs "
        "receive up to coalesced_bandwidth", "1", ge=0, unset="0: no merging",
        omit_default=True)] = 0
    coalesced_bandwidth: Annotated[float, spec(
        "GPU scope: bytes per cycle the SMs receive where coalesced_share blocks or more "
        "read each line", "byte/cycle", ge=0, unset="0: no merging",
        omit_default=True)] = 0.0
    partitions: Annotated[int, spec("partitions of a GPU-scope level, each SM near one",
                                    "1", pow2=True, unset="1: unpartitioned")] = 1
    partition_masks: Annotated[list[int], spec(
        "partitioned: bit i of a line's home partition is the parity of address & mask i "
        "(log2(partitions) masks)",
        unset="empty: bits 12+i, 17+i and 22+i (0x421000 for two partitions)")] = \
        field(default_factory=list)
    far_latency: Annotated[NonNegative, spec(
        "partitioned: a hit in another partition than the SM's", "cycle",
        unset="0: hit_latency")] = 0.0
    sm_offsets: Annotated[list[float], spec(
        "latency added to each SM's hits, cyclic over SMs (distance on the die)", "cycle",
        unset="empty: none")] = field(default_factory=list)
    sm_partition: Annotated[list[Annotated[int, Field(ge=0)]], spec(
        "partitioned: each SM's near partition, cyclic over SMs",
        unset="empty: sm * partitions // sm_count")] = field(default_factory=list)
    near_size: Annotated[int, spec(
        "partitioned: bytes of the SM's partition that keep a copy of every line the SM "
        "reads (a multiple of line x ways, below size), hit at hit_latency", "byte", ge=0,
        unset="0: no near copy, every hit is served by the line's home partition",
        omit_default=True)] = 0
    home_latency: Annotated[NonNegative, spec(
        "with near_size: a hit past the near copy in the SM's own partition", "cycle",
        unset="0: far_latency", omit_default=True)] = 0.0
    far_slow_share: Annotated[float, spec(
        "partitioned: the share of hits in another partition than the SM's that are served "
        "at far_slow_latency instead (drawn per access)", "1", ge=0, lt=1,
        unset="0: every such hit at far_latency", omit_default=True,
        models=("l2.far_slow_*",))] = 0.0
    far_slow_latency: Annotated[NonNegative, spec(
        "with far_slow_share: the latency of those slow hits", "cycle",
        unset="0: no slow hits", omit_default=True)] = 0.0
    slices: Annotated[int, spec(
        "slices of a GPU-scope level, each line homed in one (slice_masks, or slice_table), "
        "each SM at its own distance from each (slice_latency)", "1", ge=1,
        unset="1: no slice map", omit_default=True, models=("l2_slices.*",))] = 1
    slice_masks: Annotated[list[int], spec(
        "with slices: bit i of a line's slice is the parity of address & mask i "
        "(log2(slices) masks)", unset="empty: no slice map", omit_default=True)] = \
        field(default_factory=list)
    slice_kernel: Annotated[list[int], spec(
        "with slice_table: the address XOR deltas within a page that never change a line's "
        "slice (a reduced basis, as l2_slices.hash_invariants reports them)",
        unset="empty: none", omit_default=True)] = field(default_factory=list)
    slice_table: Annotated[list[Annotated[int, Field(ge=0)]], spec(
        "with slices, in place of slice_masks (a hash no XOR masks express): the slice of "
        "each class of a line's address within a page modulo slice_kernel's span, classes "
        "numbered by the free bits (l2_slices.hash_table); the page is line x len(table) x "
        "2 ** len(kernel) bytes: the table is the first page's (see slice_footprint), every "
        "other page looks its lines up XOR a shift drawn from its number",
        unset="empty: no table", omit_default=True)] = field(default_factory=list)
    slice_footprint: Annotated[int, spec(
        "with slice_table: the bytes of the buffer whose first page (at base_address) is the "
        "table's page; a chain over a buffer of another size starts on other pages, as each "
        "allocation of a GPU gets its own physical pages (l2_slices.table_buffer)", "byte",
        ge=0, unset="0: every buffer's first page", omit_default=True)] = 0
    slice_latency: Annotated[list[list[NonNegative]], spec(
        "with slices: each SM's latency to each slice, one row (one entry per slice) per SM, "
        "cyclic over SMs: the whole latency of a hit the level serves, in place of "
        "hit_latency, far_latency and sm_offsets", "cycle", unset="empty: no slice map",
        omit_default=True)] = field(default_factory=list)
    slice_bandwidth: Annotated[NonNegative, spec(
        "with slices: the bytes a slice serves per cycle; a request homed in a slice that "
        "other SMs hammer (probe slice_contention) waits behind theirs in its queue "
        "(gpumem.sim.throughput.slice_wait)", "byte/cycle",
        unset="0: no slice queue, no slice_contention probe", omit_default=True)] = 0.0

    @property
    def sets(self) -> int:
        if isinstance(self.ways, list):
            return len(self.ways)
        return self.size // (self.line * self.ways)

    @property
    def way_list(self) -> list[int]:
        return list(self.ways) if isinstance(self.ways, list) else [self.ways] * self.sets

    @property
    def sector_size(self) -> int:
        return self.sector or self.line

    @property
    def home_masks(self) -> list[int]:
        """The partition masks the engine uses: the given ones, else the balanced default."""
        if self.partitions > 1 and not self.partition_masks:
            return default_partition_masks(self.partitions)
        return list(self.partition_masks)

    def validate(self, where: str) -> None:
        """The rules between the level's fields (each field's range is declared)."""
        if not self.name or not self.name.replace("_", "").isalnum():
            _fail(f"{where}.name", "must be a non-empty identifier such as 'l1d'")
        if not _is_pow2(self.sector_size) or self.sector_size > self.line:
            _fail(f"{where}.sector", f"must be a power of two no larger than line ({self.line})")
        if self.line // self.sector_size > 32:
            _fail(f"{where}.sector", "at most 32 sectors per line")
        if self.size % self.line:
            _fail(f"{where}.size", f"must be a positive multiple of line ({self.line})")
        _validate_ways(where, self.ways, self.size // self.line, "size / line")
        _validate_policy(where, self.policy, self.way_weights, _max_ways(self.ways))
        self._validate_partitions(where)
        self._validate_slow_far(where)
        self._validate_slices(where)
        self._validate_shared_reads(where)
        self.index.validate(where, self.sets, self.line)

    def _validate_partitions(self, where: str) -> None:
        if self.sm_partition and self.partitions == 1:
            _fail(f"{where}.sm_partition", "only a partitioned level has SM homes")
        if self.partitions == 1:
            return
        if self.scope != "gpu":
            _fail(f"{where}.partitions", "only a GPU-scope level can be partitioned")
        if self.partition_masks and 2 ** len(self.partition_masks) != self.partitions:
            _fail(f"{where}.partition_masks",
                  f"needs log2(partitions) = {self.partitions.bit_length() - 1} masks "
                  f"(or none: the balanced default)")
        if any(p >= self.partitions for p in self.sm_partition):
            _fail(f"{where}.sm_partition", f"partitions are 0..{self.partitions - 1}")
        if self.far_latency < self.hit_latency:
            _fail(f"{where}.far_latency", "must be >= hit_latency")

    def _validate_slow_far(self, where: str) -> None:
        if not (self.far_slow_share or self.far_slow_latency):
            return
        if self.partitions == 1:
            _fail(f"{where}.far_slow_share", "only a partitioned level has hits in another "
                  "partition")
        if not (self.far_slow_share and self.far_slow_latency):
            _fail(f"{where}.far_slow_share", "far_slow_share and far_slow_latency go together")
        if self.far_slow_latency < (self.far_latency or self.hit_latency):
            _fail(f"{where}.far_slow_latency", "must be >= far_latency (a slow far hit)")
        if self.slices > 1:
            _fail(f"{where}.far_slow_share", "a sliced level's far hits cost slice_latency: "
                  "leave far_slow_share unset")

    def _validate_shared_reads(self, where: str) -> None:
        shared = (self.shared_bandwidth, self.coalesced_share, self.coalesced_bandwidth)
        if any(shared) and self.scope != "gpu":
            _fail(f"{where}.shared_bandwidth", "lines read from several SMs are a GPU-scope "
                  "level's (an SM's L1 sees its own blocks only)")
        if bool(self.coalesced_share) != bool(self.coalesced_bandwidth):
            _fail(f"{where}.coalesced_share", "coalesced_share and coalesced_bandwidth go "
                  "together")
        if self.coalesced_share == 1:
            _fail(f"{where}.coalesced_share", "must be >= 2 (one block's requests have no "
                  "other to merge with)")

    def _validate_slices(self, where: str) -> None:
        if self.slices == 1:
            if (self.slice_masks or self.slice_latency or self.slice_table or self.slice_kernel
                    or self.slice_footprint or self.slice_bandwidth):
                _fail(f"{where}.slices", "slice_masks, slice_table, slice_kernel, "
                      "slice_footprint, slice_latency and slice_bandwidth need slices > 1")
            return
        if self.scope != "gpu":
            _fail(f"{where}.slices", "only a GPU-scope level has slices")
        if self.slice_bandwidth and not self.slice_latency:
            _fail(f"{where}.slice_bandwidth", "a slice queue needs a slice map")
        if self.slice_footprint and not self.slice_table:
            _fail(f"{where}.slice_footprint", "only with slice_table")
        if self.slice_table or self.slice_kernel:
            self._validate_slice_table(where)
        elif 2 ** len(self.slice_masks) != self.slices:
            _fail(f"{where}.slice_masks",
                  f"needs log2(slices) = {self.slices.bit_length() - 1} masks (a slice count "
                  f"that is no power of two needs slice_table)")
        if any(m <= 0 or m & (self.line - 1) or m >= 1 << 62 for m in self.slice_masks):
            _fail(f"{where}.slice_masks", f"each mask is a positive address mask below 2**62 "
                  f"with no bit inside a line (below {self.line})")
        if len(gf2_basis(self.slice_masks)) < len(self.slice_masks):
            _fail(f"{where}.slice_masks", "the masks must be independent (XOR of some is "
                  "another): else some slices hold no line")
        if not self.slice_latency or any(len(r) != self.slices for r in self.slice_latency):
            _fail(f"{where}.slice_latency",
                  f"needs one row per SM (at least one) of {self.slices} latencies")
        if self.sm_offsets:
            _fail(f"{where}.sm_offsets", "a sliced level's slice_latency already holds each "
                  "SM's distance: leave sm_offsets empty")

    def _validate_slice_table(self, where: str) -> None:
        if self.slice_masks:
            _fail(f"{where}.slice_masks", "a slice map is slice_masks or slice_table, not both")
        n = len(self.slice_table)
        if not n or n & (n - 1):
            _fail(f"{where}.slice_table", "needs one slice per class: a power of two of "
                  "entries (classes of a page modulo slice_kernel)")
        page_bits = self.line.bit_length() - 1 + n.bit_length() - 1 + len(self.slice_kernel)
        if page_bits > MAX_SLICE_PAGE_BITS or page_bits - self.line.bit_length() + 1 > 20:
            _fail(f"{where}.slice_table", f"its page (line x entries x 2 ** len(kernel)) "
                  f"must be at most 2**{MAX_SLICE_PAGE_BITS} bytes and 2**20 lines")
        lo, page = self.line - 1, (1 << page_bits) - 1
        if any(k <= 0 or k & lo or k & ~page for k in self.slice_kernel) or \
                gf2_basis(self.slice_kernel) != sorted(self.slice_kernel, reverse=True):
            _fail(f"{where}.slice_kernel", f"must be a reduced basis (leading bits distinct "
                  f"and clear in the others, highest first) of deltas above the line and "
                  f"inside the table's page (below 2**{page_bits})")
        if self.slice_footprint >= 1 << 48:
            _fail(f"{where}.slice_footprint", "must be below 2**48 bytes")
        if any(s >= self.slices for s in self.slice_table) or \
                len(set(self.slice_table)) != self.slices:
            _fail(f"{where}.slice_table", f"every slice 0..{self.slices - 1} must appear, and "
                  f"no other")

    @property
    def slice_page_bits(self) -> int:
        """log2 of the bytes a slice table repeats over (0 without a table)."""
        if not self.slice_table:
            return 0
        return (self.line.bit_length() - 1 + len(self.slice_table).bit_length() - 1
                + len(self.slice_kernel))

    def slice_lines(self) -> np.ndarray:
        """With a slice table: the slice of each line of a page, in address order (what the
        engine looks a line's slice up in)."""
        lb = self.line.bit_length() - 1
        lines = np.arange(1 << (self.slice_page_bits - lb), dtype=np.int64) << lb
        idx = class_index(lines, self.slice_kernel, lb, self.slice_page_bits)
        return np.asarray(self.slice_table, np.int64)[idx]

    def slice_of(self, addresses: np.ndarray, base: int = 0, footprint: int = 0
                 ) -> np.ndarray:
        """Each address's home slice (0 for a level without slices), as the engine homes it
        for a chain over ``footprint`` bytes. With a slice table, the page ``base`` lies in
        (the config's ``base_address``, where a simulated buffer with no pad starts) of a
        buffer of ``slice_footprint`` bytes (any, where that is 0) looks its lines up in the
        table as given; every other page XOR a shift mixed from its number counted from
        there and from the buffer's size, as an H200's physical pages are shifts of each
        other in its hash (``gpumem.sim.model``)."""
        if not self.slice_table:
            return codes_of(addresses, self.slice_masks)
        lut = self.slice_lines()
        bits, ls = lut.size.bit_length() - 1, self.line.bit_length() - 1
        a = np.asarray(addresses, np.int64)
        page = ((a >> np.int64(ls + bits)) - np.int64(base >> (ls + bits))).astype(np.uint64)
        if self.slice_footprint:
            page += np.uint64(((footprint ^ self.slice_footprint) * BUFFER_MIX) % (1 << 64))
        shift = (mix_vec(page) >> np.uint64(64 - bits)).astype(np.int64)
        return lut[((a >> np.int64(ls)) ^ shift) & np.int64(lut.size - 1)]

    def assumptions(self, where: str, sm_count: int) -> list[str]:
        """What a partitioned level leaves to a default or to a cycle the reader may not have
        meant, one line each: legal (both are documented), but a config that maps 132 SMs
        with three entries was most often cut short, so the user is told what runs."""
        out = []
        if self.slices > 1 and len(self.slice_latency) != sm_count:
            out.append(f"{where}.slice_latency: {len(self.slice_latency)} rows for {sm_count} "
                       f"SMs, repeated over them")
        if self.partitions == 1:
            return out
        if not self.partition_masks:
            masks = ", ".join(f"0x{m:x}" for m in self.home_masks)
            out.append(f"{where}.partition_masks: not given; the balanced default [{masks}] "
                       f"decides each line's home partition")
        if self.sm_partition and len(self.sm_partition) != sm_count:
            near = [0] * self.partitions
            for sm in range(sm_count):
                near[self.sm_partition[sm % len(self.sm_partition)]] += 1
            spread = ", ".join(f"partition {p} near {n}" for p, n in enumerate(near))
            out.append(f"{where}.sm_partition: {len(self.sm_partition)} entries for "
                       f"{sm_count} SMs, repeated over them: {spread} SMs")
        elif self.sm_partition:
            idle = [p for p in range(self.partitions) if p not in self.sm_partition]
            if idle:
                out.append(f"{where}.sm_partition: no SM is near partition(s) "
                           f"{', '.join(map(str, idle))}")
        return out

    def check_near_copy(self, where: str, names: list[str]) -> None:
        """The rules of ``near_size`` and ``home_latency``, on the level as declared (before
        :meth:`split_near_copy` writes it as two)."""
        if self.home_latency and not self.near_size:
            _fail(f"{where}.home_latency", "only with near_size (without a near copy, "
                  "hit_latency is the hit in the SM's own partition)")
        if not self.near_size:
            return
        if self.partitions == 1:
            _fail(f"{where}.near_size", "only a partitioned level (partitions > 1) keeps a "
                  "near copy")
        if isinstance(self.ways, list):
            _fail(f"{where}.near_size", "needs equal sets (ways a number, not a list)")
        if self.near_size % (self.line * self.ways) or self.near_size >= self.size:
            _fail(f"{where}.near_size", f"must be a multiple of line x ways = "
                  f"{self.line * self.ways}, below size ({self.size})")
        if self.index.function not in ("modulo", "hashed", "spread"):
            _fail(f"{where}.index", "a level with a near copy needs index 'modulo', "
                  "'hashed' or 'spread' (the copy and the whole level have different set "
                  "counts)")
        if self.far_latency < self.hit_latency:
            _fail(f"{where}.far_latency", "must be >= hit_latency (the near copy is nearest)")
        if self.home_latency and not (self.hit_latency <= self.home_latency
                                      <= self.far_latency):
            _fail(f"{where}.home_latency", "must lie between hit_latency and far_latency")
        if f"{self.name}_far" in names:
            _fail(f"{where}.near_size", f"the whole L2 would be level '{self.name}_far', "
                  f"which the config names already")

    def split_near_copy(self) -> tuple[CacheLevel, CacheLevel]:
        """The two levels the engine runs for a level with a near copy: the copy (this name,
        ``near_size`` bytes, hit at ``hit_latency``, with the bandwidth and request caps)
        and the whole level (``NAME_far``, partitioned, homed hits at ``home_latency`` or
        ``far_latency``, no caps of its own: every stream passes the copy first)."""
        near = dataclasses.replace(self, size=self.near_size, partitions=1, partition_masks=[],
                                   far_latency=0.0, sm_partition=[], slices=1, slice_masks=[],
                                   slice_kernel=[], slice_table=[], slice_footprint=0,
                                   slice_latency=[], slice_bandwidth=0.0, near_size=0,
                                   home_latency=0.0, far_slow_share=0.0, far_slow_latency=0.0)
        far = dataclasses.replace(
            self, name=f"{self.name}_far", hit_latency=self.home_latency or self.far_latency,
            bandwidth=0.0, requests_per_cycle=0.0, fill_lookups=1.0, near_size=0,
            home_latency=0.0, shared_bandwidth=0.0, coalesced_share=0, coalesced_bandwidth=0.0)
        return near, far


@dataclass
class TlbLevel:
    """One TLB level. ``entries`` = sum of ways; ``ways`` a number (equal sets) or a list
    (one entry per set). A miss adds ``miss_penalty``, cumulatively over levels: an access
    missing both L1 and L2 TLBs pays both penalties."""

    name: Annotated[str, spec("the level's name (tlb_l1, tlb_l2, ...)")]
    page: Annotated[int, spec("bytes one entry maps", "byte", pow2=True)]
    entries: Annotated[int, spec("entries, the sum of the ways", "1", ge=1)]
    ways: Annotated[Ways, spec("ways per set: one number (equal sets, dividing entries) or "
                               "one number per set (adding up to entries)", "1")]
    miss_penalty: Annotated[NonNegative, spec("cycles added to an access that misses this level",
                                         "cycle")]
    policy: Policy = "lru"
    way_weights: WayWeights = field(default_factory=list)
    index: Index = field(default_factory=SetIndex)

    @property
    def sets(self) -> int:
        if isinstance(self.ways, list):
            return len(self.ways)
        return self.entries // self.ways

    @property
    def way_list(self) -> list[int]:
        return list(self.ways) if isinstance(self.ways, list) else [self.ways] * self.sets

    def validate(self, where: str) -> None:
        """The rules between the level's fields (each field's range is declared)."""
        _validate_ways(where, self.ways, self.entries, "entries")
        _validate_policy(where, self.policy, self.way_weights, _max_ways(self.ways))
        self.index.validate(where, self.sets, self.page)


#: A fraction in (0, 1].
Fraction = Annotated[float, Field(gt=0, le=1)]


@dataclass
class Dram:
    """DRAM: its unloaded latency, its theoretical peak and what streams sustain of it.

    ``mix_efficiency``: an H200's copy reaches about 90 % of what its read and write rates
    predict (the bus turning around). ``bulk_efficiency``: bulk (TMA) copies need not
    sustain what loads do (an H200's: 0.90 against 0.95). ``sharpness``: round trips
    lengthen as the DRAM's queues fill, so the rate bends well before Little's law with the
    unloaded latency reaches the cap (an H200's loads and cp.async bend at about 2.5);
    ``bulk_sharpness``: the bulk copies' own knee, where their copy engine's whole chunks
    bend differently (an H200's bulk copies reach their plateau at 64 KB in flight per SM
    with bulk_copy 2's rate, which the loads' knee puts at 128 KB)."""

    latency: Annotated[NonNegative, spec("unloaded latency of a load DRAM serves", "cycle")]
    bandwidth_gbs: Annotated[float, spec(
        "theoretical peak (memory clock x bus width)", "GB/s", ge=0, unset="0: no limit",
        models=("bw.dram_*", "bulk.inflight_per_sm"))] = 0.0
    efficiency: Annotated[Fraction, spec(
        "fraction of the peak read streams sustain", "1",
        unset="1: the whole peak, which no real DRAM sustains", unset_value=1.0,
        models=("bw.dram_read_fraction", "bw.dram_read_bulk_fraction"))] = 1.0
    write_efficiency: Annotated[Fraction, spec(
        "write streams' rate relative to read streams'", "1")] = 1.0
    mix_efficiency: Annotated[Fraction, spec(
        "what a stream mixing reads and writes (a copy) keeps of what the two rates predict",
        "1")] = 1.0
    bulk_efficiency: Annotated[float, spec(
        "fraction of the peak bulk (TMA) copies sustain", "1", ge=0, le=1,
        unset="0: efficiency", models=("bw.dram_read_bulk_fraction",))] = 0.0
    sharpness: Annotated[float, spec(
        "the knee where the bytes in flight meet the DRAM's rate (larger: sharper)", "1",
        ge=0, unset="0: throughput.sharpness")] = 0.0
    bulk_sharpness: Annotated[float, spec(
        "the same knee for bulk (TMA) copies", "1", ge=0, unset="0: sharpness",
        omit_default=True, models=("bulk.inflight_per_sm",))] = 0.0


#: A rate of events in [0, 1).
Rate = Annotated[float, Field(ge=0, lt=1)]


@dataclass
class Timer:
    """What a clock read adds to each recorded latency, and the noise of real hardware.

    ``overhead`` is reported by the device (as a CUDA device measures it) and subtracted by
    the experiments. The harder noise (``tail_*``, ``spread``, ``clock_step_*``) is for
    robustness tests (:mod:`gpumem.sim.noise`)."""

    overhead: Annotated[NonNegative, spec("cycles a clock read adds to each recorded latency",
                                     "cycle")] = 0.0
    jitter: Annotated[NonNegative, spec("Gaussian sigma of each access's timing", "cycle",
                                   unset="0: exact timings")] = 0.0
    outlier_rate: Annotated[Rate, spec("fraction of accesses mis-timed by an exponential "
                                       "delay", "1", unset="0: none")] = 0.0
    outlier_cycles: Annotated[NonNegative, spec("mean of that delay", "cycle")] = 0.0
    throughput_jitter: Annotated[float, spec("relative sigma of a timed bandwidth run", "1",
                                             ge=0, unset="0: exact timings")] = 0.0
    tail_rate: Annotated[Rate, spec("fraction of accesses delayed by a heavy-tailed (Lomax) "
                                    "mis-timing", "1", unset="0: none")] = 0.0
    tail_cycles: Annotated[NonNegative, spec("mean of that delay", "cycle")] = 0.0
    tail_shape: Annotated[float, spec("Lomax shape of that delay (smaller: heavier tail)",
                                      "1", gt=0)] = 1.5
    spread: Annotated[str, spec("a measured card's per-level latency spread to resample",
                                enum=("", *SPREADS), unset="'': none")] = ""
    clock_step_after: Annotated[int, spec(
        "chases after which every access past the path's first level takes "
        "clock_step_factor times its cycles", "1", ge=0, unset="0: no clock step")] = 0
    clock_step_factor: Annotated[float, spec("that factor", "1", gt=0)] = 1.0


#: A bank width, in bytes.
BankWidth = Annotated[int, spec("bank width", "byte", enum=(4, 8))]


@dataclass
class SharedMemory:
    """Shared memory per SM: banks, their width, latency, bank conflicts and throughput.

    An access by a warp is split by bank; the number of *distinct* bank words hitting the
    busiest bank is the conflict degree n (threads reading one word share it: broadcast).
    Latency = ``latency + conflict_cycles * (min(n, conflict_cap) - 1)``, or, when
    ``conflict_latencies`` is given, that table's value for n = 1, 2, 4, ... (measured
    curves that are not straight lines, Kepler's; interpolated between powers of two).
    ``bytes_per_cycle`` caps an SM, ``warp_bytes_per_cycle`` one warp, so throughput needs
    several warps whatever the ILP, as on real GPUs; with ``load_issue_cycles`` a warp's rate
    is what it issues, ``ILP x 128 B / (ILP x load_issue_cycles + iteration_cycles)``, not
    ILP loads per latency (an H200's warp overlaps its loop iterations: 20.5 B/cycle at ILP
    1, about 4 cycles a load and 2.3 an iteration); bank queues make the knee soft
    (``sharpness``: Kepler reaches 91 % of its peak at 16 warps, 100 % at 32). ``remote_*``:
    loads from another block's shared memory in a thread block cluster (distributed shared
    memory, Hopper); ``cluster_latency``: a cluster load of the block's own shared memory,
    which an H200 serves in 38 cycles against 27 for a plain shared load, and at
    ``cluster_bytes_per_cycle`` (an H200's 123 against its shared memory's 128);
    ``remote_rate_by_cluster``: an H200's remote rate is 17.0, 14.7 and 16.0 B/cycle per SM
    for clusters of 2, 4 and 8, as its SMs' network places the blocks;
    ``remote_latency_by_rank``: in a cluster of 8, an H200's loads from the blocks 1 ... 7
    ranks away take 208.9-214.3 cycles, the same on every card measured.
    """

    size: Annotated[int, spec("shared memory per SM", "byte", ge=0)] = 49152
    banks: Annotated[int, spec("banks", "1", pow2=True)] = 32
    bank_width: Annotated[BankWidth, spec("bank width (the default mode)", "byte")] = 4
    modes: Annotated[list[BankWidth], spec(
        "bank widths the hardware can switch to (bank_width among them)", "byte",
        min_length=1)] = field(default_factory=lambda: [4])
    latency: Annotated[NonNegative, spec("a conflict-free access", "cycle")] = 30.0
    conflict_cycles: Annotated[NonNegative, spec("cycles each more conflicting way adds",
                                            "cycle")] = 2.0
    conflict_cap: Annotated[int, spec("conflict degree past which no cycles are added", "1",
                                      ge=0, unset="0: no cap")] = 0
    conflict_latencies: Annotated[list[NonNegative], spec(
        "measured cycles at 1, 2, 4, ... 32-way conflicts (non-decreasing)", "cycle",
        max_length=6,
        unset="empty: latency + conflict_cycles x (ways - 1)")] = field(default_factory=list)
    bytes_per_cycle: Annotated[float, spec("bytes per cycle an SM's shared memory serves",
                                           "byte/cycle", ge=0,
                                           unset="0: banks x bank_width")] = 0.0
    warp_bytes_per_cycle: Annotated[float, spec("bytes per cycle one warp issues",
                                                "byte/cycle", ge=0,
                                                unset="0: no limit")] = 0.0
    load_issue_cycles: Annotated[NonNegative, spec(
        "cycles a warp spends issuing each shared load of a throughput loop", "cycle",
        unset="0: ILP loads in flight per warp for the latency (Little's law)")] = 0.0
    iteration_cycles: Annotated[NonNegative, spec(
        "cycles a warp spends on each loop iteration besides its loads (with "
        "load_issue_cycles)", "cycle")] = 0.0
    sharpness: Annotated[float, spec("the knee where many warps meet the SM's cap", "1", ge=0,
                                     unset="0: throughput.sharpness")] = 0.0
    remote_latency: Annotated[NonNegative, spec(
        "a load from another block's shared memory in a cluster", "cycle",
        unset="0: no clusters, no dsmem probe",
        models=("lat.dsmem*", "dsmem.*", "bw.dsmem*"))] = 0.0
    remote_bytes_per_cycle: Annotated[float, spec(
        "bytes per cycle per SM from another block's shared memory (with remote_latency)",
        "byte/cycle", ge=0, unset="0: no clusters")] = 0.0
    cluster_latency: Annotated[NonNegative, spec(
        "a cluster load (ld.shared::cluster) of the block's own shared memory", "cycle",
        unset="0: latency")] = 0.0
    cluster_bytes_per_cycle: Annotated[float, spec(
        "bytes per cycle per SM of cluster loads of the block's own shared memory",
        "byte/cycle", ge=0, unset="0: the shared memory's own rate")] = 0.0
    remote_rate_by_cluster: Annotated[list[Annotated[float, Field(gt=0)]], spec(
        "the remote rate for clusters of 2, 4 and 8 blocks, in that order", "byte/cycle",
        max_length=3, unset="empty: remote_bytes_per_cycle for every size")] = \
        field(default_factory=list)
    remote_latency_by_rank: Annotated[list[Annotated[float, Field(gt=0)]], spec(
        "in a cluster of 8 blocks, a load from the block 1, 2, ... 7 ranks away", "cycle",
        max_length=LARGEST_CLUSTER - 1,
        unset="empty: remote_latency at every rank")] = field(default_factory=list)

    def remote_load_latency(self, cluster: int, distance: int) -> float:
        """Cycles of a load from the block ``distance`` ranks away in a cluster of
        ``cluster`` (the per-rank table holds for the largest cluster, where it is measured)."""
        if cluster == LARGEST_CLUSTER and 0 < distance <= len(self.remote_latency_by_rank):
            return self.remote_latency_by_rank[distance - 1]
        return self.remote_latency

    def remote_rate(self, cluster: int) -> float:
        """Bytes per cycle per SM from another block's shared memory, clusters of ``cluster``."""
        pos = {2: 0, 4: 1, 8: 2}.get(cluster)
        if pos is not None and pos < len(self.remote_rate_by_cluster):
            return self.remote_rate_by_cluster[pos]
        return self.remote_bytes_per_cycle

    def conflict_latency(self, ways: int) -> float:
        """NonNegative of one warp access with ``ways``-way bank conflicts."""
        if self.conflict_latencies:
            table = self.conflict_latencies
            pos = min(max(0.0, math.log2(ways)), len(table) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(table) - 1)
            return table[lo] + (table[hi] - table[lo]) * (pos - lo)
        counted = min(ways, self.conflict_cap) if self.conflict_cap else ways
        return self.latency + self.conflict_cycles * (counted - 1)

    @property
    def peak_bytes_per_cycle(self) -> float:
        return self.bytes_per_cycle or float(self.banks * self.bank_width)

    def validate(self, where: str = "smem") -> None:
        """The rules between shared memory's fields (each field's range is declared)."""
        if self.bank_width not in self.modes:
            _fail(f"{where}.modes", f"must include the default bank_width ({self.bank_width})")
        if (self.remote_latency > 0) != (self.remote_bytes_per_cycle > 0):
            _fail(f"{where}.remote_bytes_per_cycle", "give both remote_latency and "
                  "remote_bytes_per_cycle, or neither")
        t = self.conflict_latencies
        if any(b < a for a, b in zip(t, t[1:], strict=False)):
            _fail(f"{where}.conflict_latencies",
                  "cycles for 1, 2, 4, ... 32 ways: at most 6 entries, non-decreasing")


@dataclass
class Throughput:
    """Per-SM limits that shape bandwidth: occupancy, requests in flight, the cp.async and
    bulk-copy paths.

    ``loads_per_thread``: the compiler overlaps a streaming loop's independent iterations
    until the loads' destination registers run out (an H200's 16-byte stream kernels hold 32
    registers: about 3 loads). cp.async has no destination register: its groups in flight
    are the code's, which is why it overtakes plain loads at low occupancy.
    ``iteration_cycles`` (the fold of the loaded values and the branch before the next loads
    issue) is shared by the K loads of an iteration: the reason more loads per iteration
    still help a little when the registers already bound those in flight. ``bulk_latency``
    (an H200's is about 1250 cycles against a 683-cycle load) covers the issue, DRAM, the
    mbarrier's completion and the waiting thread's wake-up; a chunk lands
    ``chunk / bulk_bytes_per_cycle`` after its first byte; a block's single issuing thread
    waits for a copy before it issues the next (``bulk_issue_cycles``).
    """

    max_warps_per_sm: Annotated[int, spec("resident warps per SM", "1", ge=1)] = 64
    max_ctas_per_sm: Annotated[int, spec("resident thread blocks per SM", "1", ge=1)] = 32
    max_threads_per_cta: Annotated[int, spec("threads per thread block", "1", ge=32,
                                             multiple_of=32)] = 1024
    inflight_sectors_per_sm: Annotated[int, spec(
        "32-byte sector requests an SM tracks in flight (its MSHRs)", "sector", ge=0,
        unset="0: no limit")] = 0
    inflight_async_sectors_per_sm: Annotated[int, spec(
        "the same for cp.async copies", "sector", ge=0,
        unset="0: inflight_sectors_per_sm", models=("cpasync.*",))] = 0
    issue_bytes_per_cycle: Annotated[float, spec(
        "bytes per cycle one SM's load path issues", "byte/cycle", ge=0, unset="0: no limit",
        models=("bw.l1", "bw.l1_*"))] = 0.0
    sharpness: Annotated[float, spec(
        "exponent of the smooth minimum between demand and a cap (larger: a sharper knee)",
        "1", gt=0)] = 8.0
    bulk_latency: Annotated[NonNegative, spec(
        "round trip of a TMA bulk copy, to the waiting thread's wake-up", "cycle",
        unset="0: the DRAM load latency", models=("bulk.latency_estimate",))] = 0.0
    loads_per_thread: Annotated[float, spec(
        "plain loads one thread keeps in flight whatever the code's ILP (its destination "
        "registers)", "1", ge=0, unset="0: the code's ILP",
        models=("ilp.*", "cpasync.*"))] = 0.0
    async_latency: Annotated[NonNegative, spec(
        "what a cp.async round trip adds to a load's (shared-memory write, commit, wait)",
        "cycle", unset="0: nothing", models=("cpasync.*",))] = 0.0
    iteration_cycles: Annotated[NonNegative, spec(
        "what a streaming loop's iteration adds to the round trip of its K plain loads",
        "cycle", unset="0: nothing", models=("ilp.*", "cpasync.*"))] = 0.0
    bulk_bytes_per_cycle: Annotated[float, spec(
        "bytes per cycle an SM's copy engine moves into shared memory", "byte/cycle", ge=0,
        unset="0: a chunk lands at once")] = 0.0
    bulk_issue_cycles: Annotated[NonNegative, spec(
        "shortest time between two bulk copies of one thread block", "cycle",
        unset="0: none")] = 0.0


@dataclass
class Interconnect:
    """Other GPUs of a simulated node and the link to them (NVLink, PCIe). A load from a
    peer's memory takes the peer's L2-only path (``cg``: remote data is cached in its
    owner's L2, not in this GPU's caches) plus ``latency``; streams from a peer are capped at
    ``bandwidth_gbs``."""

    peers: Annotated[int, spec("other GPUs of the node", "1", ge=0, le=MAX_PEERS,
                               unset="0: a lone GPU, no peer_access probe",
                               models=("p2p.*",))] = 0
    latency: Annotated[NonNegative, spec("the link's round trip, added to a peer's loads",
                                    "cycle")] = 0.0
    bandwidth_gbs: Annotated[float, spec("the link's bandwidth (needed with peers)", "GB/s",
                                         ge=0)] = 0.0

    def validate(self, where: str = "interconnect") -> None:
        """The rule between the link's fields (each field's range is declared)."""
        if self.peers and self.bandwidth_gbs <= 0:
            _fail(f"{where}.bandwidth_gbs", "a node with peers needs the link's bandwidth")


@dataclass
class Neighbour:
    """Another process on the simulated GPU, for tests of contention detection
    (:mod:`gpumem.contracts.contention`): what NVML would list beside each point, and what its work
    does to the measurements. The defaults of the effects are what an H200 showed while a
    second process copied a 2 GB buffer in a loop (``benchmarks/contention_probe.py``,
    2026-12-03): L2 hits 410 cycles instead of 283, a time slice of 2.6 million cycles in one
    chase access, one DRAM read of ten at half speed. The effects apply only while the
    neighbour is active (``busy_pct`` > 0)."""

    processes: Annotated[int, spec("other processes with a context on the GPU", "1", ge=0,
                                   le=64, unset="0: the GPU is the run's alone")] = 0
    busy_pct: Annotated[float, spec(
        "their share of the SMs or memory as NVML samples it (0: present but idle, as a "
        "notebook holding a context)", "percent", ge=0, le=100)] = 0.0
    slowdown: Annotated[float, spec(
        "factor on the cycles of every chase access served past the path's first level",
        "1", ge=1)] = 1.45
    slice_every: Annotated[int, spec(
        "chase accesses between the neighbour's time slices", "1", ge=0,
        unset="0: no time slices")] = 4096
    slice_cycles: Annotated[NonNegative, spec(
        "cycles one time slice adds to the access it lands on", "cycle")] = 2.6e6
    stream_share_every: Annotated[int, spec(
        "one timed bandwidth run in this many shares the GPU and runs at half speed", "1",
        ge=0, unset="0: none")] = 10

    @property
    def active(self) -> bool:
        return self.processes > 0 and self.busy_pct > 0


#: The findings a config without TLB levels cannot give: translation is then free.
_TLB_FINDINGS = ("tlb.*", "tlb_l1.*", "tlb_l2.*", "lat.dram_tlb_miss", "lat.dram_tlb_miss_ns")


@dataclass
class SimConfig:
    """A simulated GPU: SMs and clock, caches, load paths, TLBs, DRAM, shared memory,
    throughput limits, the node's other GPUs and timer behaviour.

    ``paths`` maps a load flavour (``ca``: L1-cached global loads, ``cg``: L2 only, ``nc``:
    read-only, ``tex``: texture) to the cache levels it looks up, in order; a flavour the
    config leaves out is a probe the simulated GPU does not offer. ``path_latency`` adds a
    fixed pipeline latency to every load of a path (Fermi's texture pipeline adds about 100
    cycles to hits and misses alike).
    """

    name: Annotated[str, spec("short name of the simulated GPU (in device names)")]
    arch: Annotated[str, spec("the architecture plugin whose expected values judge a run "
                              "on this config (--arch auto)")]
    compute_capability: Annotated[str, spec(
        "CUDA compute capability 'major.minor': which probes exist (cp.async from 8.0, "
        "clusters and TMA bulk copies from 9.0)")]
    sm_count: Annotated[int, spec("streaming multiprocessors", "1", ge=1, le=MAX_SMS)]
    clock_mhz: Annotated[float, spec("SM clock: cycles per microsecond", "MHz", gt=0)]
    caches: Annotated[list[CacheLevel], spec(
        "the cache levels, each a [[cache]] table", min_length=1)] = \
        field(metadata={"toml": "cache"})
    paths: Annotated[dict[str, Annotated[list[str], Field(min_length=1)]], spec(
        "the levels each load flavour (ca, cg, nc, tex) looks up, in order")]
    dram: Annotated[Dram, spec("DRAM")]
    tlbs: Annotated[list[TlbLevel], spec(
        "the TLB levels, each a [[tlb]] table, the smallest page first",
        unset="empty: no TLB, translation is free", models=_TLB_FINDINGS)] = \
        field(default_factory=list, metadata={"toml": "tlb"})
    timer: Annotated[Timer, spec("the timer and the noise of real hardware")] = \
        field(default_factory=Timer)
    smem: Annotated[SharedMemory, spec("shared memory")] = field(default_factory=SharedMemory)
    throughput: Annotated[Throughput, spec("limits that shape bandwidth")] = \
        field(default_factory=Throughput)
    interconnect: Annotated[Interconnect, spec("the node's other GPUs")] = \
        field(default_factory=Interconnect)
    neighbour: Annotated[Neighbour, spec("another process on the GPU (contention tests)")] = \
        field(default_factory=Neighbour)
    path_latency: Annotated[dict[str, NonNegative], spec(
        "cycles added to every load of a path (a texture pipeline)", "cycle",
        unset="empty: none")] = field(default_factory=dict)
    page_walk_latency: Annotated[NonNegative, spec(
        "cycles added to an access that misses every TLB level", "cycle")] = 0.0
    memory_bytes: Annotated[int, spec("device memory", "byte", ge=1)] = 16 << 30
    base_address: Annotated[int, spec(
        "address of the first allocation (aligned to the largest TLB page)", "byte",
        ge=0)] = 1 << 40
    description: Annotated[str, spec("what the config describes, in words")] = ""
    source: Annotated[str, spec("where its values come from")] = ""
    seed: Annotated[int, spec("seed of the replacement and noise streams (a 64-bit "
                              "integer)")] = 0

    # ---- validation -------------------------------------------------------------------
    def validate(self) -> SimConfig:
        """Check every declared range, then the rules between fields, and write each level
        with a near copy as its two levels (:meth:`CacheLevel.split_near_copy`). Returns
        ``self``; raises :class:`SimConfigError`, whose message starts with the field."""
        _check_numbers(self)
        _check_declared(self)
        from gpumem.contracts.generic import is_compute_capability

        if not is_compute_capability(self.compute_capability):
            _fail("compute_capability", f"{self.compute_capability[:40]!r} is not 'major.minor' "
                                        f"(such as 9.0)")
        if len(self.name) > MAX_NAME:  # it names the device and the run's folders
            _fail("name", f"{len(self.name)} characters; at most {MAX_NAME} (it names the "
                          f"simulated device and its results' folder)")
        self._split_near_copies()
        self._validate_caches()
        for i, t in enumerate(self.tlbs):
            t.validate(f"tlb[{t.name or i}]")
        pages = [t.page for t in self.tlbs]
        if pages and any(p < pages[0] for p in pages):
            _fail("tlb", "the first TLB level must have the smallest page")
        if self.base_address + self.memory_bytes >= 1 << 62:
            _fail("base_address", "base_address + memory_bytes must stay below 2**62 "
                  "(the engine's addresses are 64-bit integers)")
        need, biggest = state_bytes(self)
        if need > MAX_STATE_BYTES:
            _fail(biggest, f"the caches and TLBs would need {need / 2**20:,.0f} MiB of "
                  f"simulator state (16 B per line or entry), more than the "
                  f"{MAX_STATE_BYTES >> 20} MiB limit (about 16 million lines, e.g. a 2 GiB "
                  f"cache of 128 B lines)")
        self.smem.validate()
        self.interconnect.validate()
        if self.base_address % (max(pages) if pages else 4096):
            _fail("base_address", "must be aligned to the largest TLB page")
        return self

    def assumptions(self) -> list[str]:
        """Lines on what the config leaves to a default or a cycle it may not mean (see
        :meth:`CacheLevel.assumptions`); the simulator shows each as a warning on a user's
        ``--sim-config`` and ``plugin check`` lists them."""
        return [line for i, c in enumerate(self.caches)
                for line in c.assumptions(f"cache[{c.name or i}]", self.sm_count)]

    def _validate_caches(self) -> None:
        """Each level's rules, unique names, and paths that name levels."""
        names = [c.name for c in self.caches]
        for i, c in enumerate(self.caches):
            c.validate(f"cache[{c.name or i}]")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            _fail("cache", f"duplicate level names {sorted(dup)}")
        if not self.paths:
            _fail("paths", "at least one load path (e.g. ca = ['l1d', 'l2']) is required")
        for p, levels in self.paths.items():
            for lv in levels:
                if lv not in names:
                    _fail(f"paths.{p}", f"unknown cache level '{lv}' (levels: {', '.join(names)})")
        for p in self.path_latency:
            if p not in self.paths:
                _fail(f"path_latency.{p}", f"no such path (paths: {', '.join(self.paths)})")

    def _split_near_copies(self) -> None:
        """Write each level with a near copy (``near_size``) as the near copy and the whole
        level behind it, which every path that names the level then looks up in turn: the
        form the engine, the throughput model and the calibration know. New lists, so a
        config that shares its lists with another (``dataclasses.replace``) leaves it be."""
        names = [c.name for c in self.caches]
        for i, c in enumerate(self.caches):
            c.check_near_copy(f"cache[{c.name or i}]", names)
        split = {c.name: c.split_near_copy() for c in self.caches if c.near_size}
        if not split:
            return
        self.caches = [lv for c in self.caches for lv in split.get(c.name, (c,))]
        self.paths = {p: [x for n in levels for x in ((n, f"{n}_far") if n in split else (n,))]
                      for p, levels in self.paths.items()}

    # ---- derived facts ----------------------------------------------------------------
    def level(self, name: str) -> CacheLevel:
        for c in self.caches:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def l2_bytes(self) -> int:
        """Largest GPU-scope cache: what a CUDA device reports as its L2 size."""
        gpu = [c.size for c in self.caches if c.scope == "gpu"]
        return max(gpu) if gpu else 0

    @property
    def page_bytes(self) -> int:
        return self.tlbs[0].page if self.tlbs else 0

    def unmodelled(self) -> dict[str, str]:
        """Findings this config cannot give, each with the reason in one line: every field
        that would model it is unset (its declaration's ``models``), so the value a run
        reports would be what the unset field leaves (an L1 with no ``bandwidth`` gives
        ``bw.l1`` of 74-302 TB/s, a throughput section with no ILP limits a flat
        ``cpasync.speedup``), not a model of anything.

        Keys are finding names or fnmatch patterns (``tlb_l1.*``), as experiments declare
        their findings: ``{"bw.l1": "not modelled: the config sets none of
        cache[l1d].bandwidth (0: no limit), ..."}``. The fields declaring one key are
        alternatives (any one set models it); a finding that matches several keys needs
        each (``bw.dram_read_fraction``: ``bw.dram_*``, the DRAM's peak, and its own, the
        efficiency). A new field that models a finding declares it (``spec(models=...)``)
        and joins the rule by itself."""
        unset: dict[str, list[str]] = {}
        modelled: set[str] = set()
        for where, value, d, _hint, role in _leaves(self):
            for pattern in d.extra.get("models", ()):
                name = pattern.format(role=role)
                if _is_set(value, d):
                    modelled.add(name)
                else:
                    unset.setdefault(name, []).append(
                        f"{where} ({d.extra['unset']})" if d.extra.get("unset") else where)
        return {name: _unmodelled_reason(fields_) for name, fields_ in unset.items()
                if name not in modelled}

    def digest(self) -> str:
        """SHA-256 of the canonical TOML: identifies the simulated device in result keys."""
        return hashlib.sha256(self.to_toml().encode()).hexdigest()

    # ---- TOML ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return _to_table(self)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_toml` to ``path`` atomically, replacing a symlink there rather
        than writing through it (:mod:`gpumem.safe_write`)."""
        from gpumem.safe_write import write_text

        write_text(path, self.to_toml())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimConfig:
        return _from_table(cls, data, "").validate()

    @classmethod
    def from_toml(cls, text: str) -> SimConfig:
        if len(text) > MAX_TOML:
            raise SimConfigError(f"{len(text)} characters: a simulator config is a few "
                                 f"kilobytes (at most {MAX_TOML})")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SimConfigError(f"not valid TOML: {e}") from None
        except RecursionError:  # arrays or tables nested thousands deep
            raise SimConfigError("not a simulator config: values nested too deeply") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> SimConfig:
        p = Path(path)
        try:
            with p.open("rb") as f:  # no more than the longest config could take
                data = f.read(4 * MAX_TOML + 1)
            if len(data) > 4 * MAX_TOML:
                raise SimConfigError(f"{p}: over {4 * MAX_TOML} bytes: a simulator config is a "
                                     f"few kilobytes (at most {MAX_TOML} characters)")
            text = data.decode("utf-8")
        except OSError as e:
            raise SimConfigError(f"cannot read {p}: {e.strerror or e}") from None
        except UnicodeDecodeError as e:  # TOML is UTF-8 text: a binary file is not a config
            raise SimConfigError(f"{p}: not a TOML text file (not UTF-8: byte {e.start} is "
                                 f"0x{e.object[e.start]:02x})") from None
        try:
            return cls.from_toml(text)
        except SimConfigError as e:
            raise SimConfigError(f"{p}: {e}") from None


#: Longest config ``name`` (it names the simulated device and its results' folder), and the
#: largest config text read (the packaged ones are a few kilobytes).
MAX_NAME, MAX_TOML = 128, 1 << 20


def _unmodelled_reason(unset: list[str]) -> str:
    if len(unset) == 1:
        return f"not modelled: the config does not set {unset[0]}"
    return f"not modelled: the config sets none of {', '.join(unset)}"


# ---------------------------------------------------------------------------------------------
# TOML <-> dataclasses, driven by the type hints
# ---------------------------------------------------------------------------------------------

#: SetIndex field -> its TOML key on the level.
_INDEX_KEYS = {"function": "index", "bits": "index_bits", "masks": "xor_masks",
               "table": "index_table", "seed": "index_seed"}


def _toml_key(f: dataclasses.Field) -> str:
    return f.metadata.get("toml", f.name)


def _omitted(f: dataclasses.Field, d: Declared, value: Any) -> bool:
    """A field declared ``omit_default`` and at its default is left out of the TOML."""
    default = f.default_factory() if f.default_factory is not MISSING else f.default
    return bool(d.extra.get("omit_default")) and value == default


def _to_table(obj: Any) -> Any:
    if isinstance(obj, SetIndex):
        return {_INDEX_KEYS[k]: v for k, v in dataclasses.asdict(obj).items()
                if k == "function" or v}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f, d, _hint in declared_fields(type(obj)):
            v = getattr(obj, f.name)
            if isinstance(v, SetIndex):
                out.update(_to_table(v))
            elif not _omitted(f, d, v):
                out[_toml_key(f)] = _to_table(v)
        return out
    if isinstance(obj, list):
        return [_to_table(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _to_table(v) for k, v in obj.items()}
    return obj


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    if origin in _UNIONS:
        options = get_args(tp)
        for opt in options:  # int | list[int]: pick by the value's shape
            if get_origin(opt) is list and isinstance(value, list):
                return _convert(opt, value, where)
            if get_origin(opt) is None and not isinstance(value, list):
                return _convert(opt, value, where)
        _fail(where, f"must be {' or '.join(_type_name(o) for o in options)}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _from_table(tp, value, where + ".")
    if origin is list:
        if not isinstance(value, list):
            _fail(where, f"must be a list, got {type(value).__name__} {value!r}")
        return [_convert(get_args(tp)[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            _fail(where, f"must be a table, got {type(value).__name__}")
        return {str(k): _convert(get_args(tp)[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(where, f"must be a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            _fail(where, f"must be a finite number, got {value}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(where, f"must be an integer, got {type(value).__name__} {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            _fail(where, f"must be true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            _fail(where, f"must be a string, got {type(value).__name__} {value!r}")
        return value
    return value


def _from_table(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        _fail(where.rstrip(".") or "config", "must be a table")
    data = dict(data)
    hints = _plain_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        hint = hints[f.name]
        if hint is SetIndex:
            idx = {k: data.pop(v) for k, v in _INDEX_KEYS.items() if v in data}
            kwargs[f.name] = _from_table(SetIndex, idx, where)
            continue
        key = _toml_key(f)
        if key in data:
            value = data.pop(key)
            if get_origin(hint) is list and dataclasses.is_dataclass(get_args(hint)[0]):
                if not isinstance(value, list):
                    _fail(f"{where}{key}", "must be a list of tables ([[...]])")
                kwargs[f.name] = [
                    _from_table(get_args(hint)[0], v,
                                f"{where}{key}[{v.get('name', i) if isinstance(v, dict) else i}].")
                    for i, v in enumerate(value)]
            else:
                kwargs[f.name] = _convert(hint, value, f"{where}{key}")
        elif f.default is MISSING and f.default_factory is MISSING:
            _fail(f"{where}{key}", "is required")
    if data:
        _fail(f"{where}{sorted(data)[0]}", "unknown field")
    return cls(**kwargs)
