"""GPGPU-Sim 4.x cache strings (``-gpgpu_cache:dl1 S:4:128:64,L:T:m:L:L,A:512:8,16:0,32``).

The simulator reads them with one ``sscanf`` in ``cache_config::init`` (``gpu-cache.h``) and
checks them with a handful of asserts and aborts scattered over its cache code; a bad string
costs a simulator start and an ``abort`` (rc 134) or, worse, runs with every access in one
set. :class:`CacheString` holds the fifteen fields, checks the same rules up front with a
one-line message naming the field and the rule, and writes the string back unchanged.

Format: ``<ct>:<nsets>:<line>:<assoc>,<rp>:<wp>:<ap>:<wap>:<sif>,<mshr>:<N>:<merge>,<mq>``
optionally followed by ``:<rf>`` and then ``,<port>``. We read the canonical form only (plain
decimal numbers, nothing after the last field), where ``sscanf`` would also take signs, spaces
and trailing text, and we need the miss-queue field that the simulator would leave
uninitialised when it is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REQUIRED_CACHE_OPTIONS = (
    "-gpgpu_cache:il1",
    "-gpgpu_tex_cache:l1",
    "-gpgpu_const_cache:l1",
    "-gpgpu_cache:dl2",
)
"""Cache options every config must set: the compiled-in defaults of these four are in 3.x
syntax and abort when parsed. (``-gpgpu_cache:dl1`` defaults to ``none``.)"""

KINDS = {"N": "normal", "S": "sectored"}
REPLACEMENT = {"L": "LRU", "F": "FIFO"}
WRITE = {"R": "read-only", "B": "write-back", "T": "write-through", "E": "write-evict",
         "L": "local write-back, global write-through"}
ALLOC = {"m": "on miss", "f": "on fill", "s": "streaming"}
WRITE_ALLOC = {"N": "no write-allocate", "W": "write-allocate", "F": "fetch-on-write",
               "L": "lazy-fetch-on-read"}
SET_INDEX = {"L": "linear", "H": "Fermi hash", "P": "IPOLY hash", "X": "XOR of upper bits",
             "C": "custom"}
MSHR = {"A": "associative", "S": "sector-associative", "F": "texture FIFO",
        "T": "sector texture FIFO"}

SECTOR_LINE = 128  # 4 hard-coded sectors of 32 bytes (SECTOR_CHUNCK_SIZE x SECTOR_SIZE)
HASH_SETS = {"H": (32, 64), "P": (16, 32, 64)}

# (field name, separator before it, 'c' one character or 'u' decimal number), as the sscanf
# format "%c:%u:%u:%u,%c:%c:%c:%c:%c,%c:%u:%u,%u:%u,%u"
_FORMAT = (
    ("kind", None, "c"), ("sets", ":", "u"), ("line", ":", "u"), ("assoc", ":", "u"),
    ("replacement", ",", "c"), ("write", ":", "c"), ("alloc", ":", "c"),
    ("write_alloc", ":", "c"), ("set_index", ":", "c"),
    ("mshr", ",", "c"), ("mshr_entries", ":", "u"), ("mshr_merge", ":", "u"),
    ("miss_queue", ",", "u"), ("result_fifo", ":", "u"), ("data_port", ",", "u"),
)
_CHOICES = {"kind": KINDS, "replacement": REPLACEMENT, "write": WRITE, "alloc": ALLOC,
            "write_alloc": WRITE_ALLOC, "set_index": SET_INDEX, "mshr": MSHR}
_DIGITS = re.compile(r"[0-9]+")
_V3 = re.compile(r"[0-9]+:[0-9]+:[0-9]+,")


class CacheStringError(ValueError):
    """A cache string breaks a rule; the one-line message names the field and the rule."""


def _field(i: int) -> str:
    return f"field {i + 1} ({_FORMAT[i][0]})"


def _choices(table: dict[str, str]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in table.items())


@dataclass(frozen=True)
class CacheString:
    """One cache's geometry and policies, as GPGPU-Sim 4.x spells them.

    ``size`` is per cache instance: per SM for L1s, per memory sub-partition for ``dl2``.
    For MSHR types ``F``/``T`` (texture FIFOs) ``mshr_entries`` and ``mshr_merge`` are the
    fragment and request FIFO sizes and ``miss_queue`` the reorder buffer.
    """

    kind: str
    sets: int
    line: int
    assoc: int
    replacement: str
    write: str
    alloc: str
    write_alloc: str
    set_index: str
    mshr: str
    mshr_entries: int
    mshr_merge: int
    miss_queue: int
    result_fifo: int | None = None
    data_port: int | None = None

    @property
    def size(self) -> int:
        return self.sets * self.line * self.assoc

    @property
    def n_fields(self) -> int:
        return 13 + (self.result_fifo is not None) + (self.data_port is not None)

    def __post_init__(self) -> None:
        for name, table in _CHOICES.items():
            value = getattr(self, name)
            if value not in table:
                i = [f[0] for f in _FORMAT].index(name)
                raise CacheStringError(f"{_field(i)} is {value!r}: must be one of "
                                       f"{_choices(table)}")
        for i, (name, _, kind) in enumerate(_FORMAT):
            value = getattr(self, name)
            if kind == "u" and value is not None and (
                    isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise CacheStringError(f"{_field(i)} is {value!r}: must be an integer >= 0")
        self._check()

    def _check(self) -> None:
        def fail(rule: str) -> None:
            raise CacheStringError(rule)

        if self.sets < 1 or self.sets & (self.sets - 1):
            fail(f"sets is {self.sets}: must be a power of two (the set index is masked with "
                 f"sets - 1)")
        if self.line < 1 or self.line & (self.line - 1):
            fail(f"line is {self.line}: must be a power of two (tags and offsets are cut with "
                 f"log2(line))")
        if self.assoc < 1:
            fail("assoc is 0: a cache needs at least one way")
        if self.kind == "S" and self.line != SECTOR_LINE:
            fail(f"line is {self.line}: a sectored cache ('S') needs a {SECTOR_LINE}-byte line "
                 f"(4 hard-coded 32-byte sectors)")
        if self.alloc in "fs" and self.write == "B":
            fail(f"alloc {self.alloc!r} ({ALLOC[self.alloc]}) with write 'B' (write-back) is "
                 f"forbidden: a write-back cache that allocates on fill deadlocks (the "
                 f"simulator asserts)")
        if self.write_alloc in "FL" and self.alloc in "fs":
            fail(f"write_alloc {self.write_alloc!r} ({WRITE_ALLOC[self.write_alloc]}) needs "
                 f"alloc 'm' (on miss), not {self.alloc!r} ({ALLOC[self.alloc]}; streaming "
                 f"counts as on fill): the simulator asserts")
        if self.data_port is not None and self.result_fifo is None:
            fail("data_port is set without result_fifo: the port is field 15 and needs "
                 "field 14 before it")
        if self.mshr in "FT" and (self.result_fifo is None or self.data_port is not None):
            fail(f"mshr {self.mshr!r} ({MSHR[self.mshr]}) needs exactly 14 fields "
                 f"(...,<mq>:<rf>), not {self.n_fields}: the simulator asserts")
        if self.data_port and self.line % self.data_port:
            fail(f"data_port is {self.data_port}: must divide the line ({self.line}); "
                 f"0 means the line size")
        if self.set_index == "C":
            fail("set_index 'C' (custom) is not implemented: the simulator sends every "
                 "access to set 0; use L, H, P or X")
        allowed = HASH_SETS.get(self.set_index)
        if allowed and self.sets not in allowed:
            fail(f"set_index {self.set_index!r} ({SET_INDEX[self.set_index]}) works only with "
                 f"{' or '.join(map(str, allowed))} sets, not {self.sets} (the simulator "
                 f"asserts)")

    # ---- text ---------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> CacheString:
        def fail(rule: str) -> CacheStringError:
            shown = text if len(text) <= 120 else text[:120] + "..."  # one readable line
            return CacheStringError(f"cache string {shown!r}: {rule}")

        if not isinstance(text, str):
            raise TypeError(f"a cache string is a str, not {type(text).__name__}")
        if text == "none":
            raise fail("'none' means no cache, not a geometry (OptionFile.cache() gives None)")
        if _V3.match(text):
            raise fail("this is GPGPU-Sim 3.x syntax (no leading cache-type field), which "
                       "4.x aborts on; 4.x needs the leading 'N:' (normal) or 'S:' (sectored) "
                       "type field, e.g. 'N:" + text.split(",", 1)[0] + ",...'")
        values: list[object] = []
        pos = 0
        for _name, sep, kind in _FORMAT:
            start = pos
            if sep is not None:
                if not text.startswith(sep, pos):
                    break
                pos += 1
            if kind == "c":
                if pos >= len(text):
                    pos = start
                    break
                values.append(text[pos])
                pos += 1
            else:
                m = _DIGITS.match(text, pos)
                if m is None:
                    pos = start
                    break
                if len(m.group().lstrip("0")) > 20:  # int() refuses 4300; no field needs 20
                    raise fail(f"{_field(len(values))} has {len(m.group())} digits: more "
                               f"than a 64-bit integer holds")
                values.append(int(m.group()))
                pos = m.end()
        n = len(values)
        if n < 12:
            raise fail(f"{_field(n)} is missing or malformed at {text[pos:][:60]!r}: a cache "
                       f"string needs at least 12 fields, <ct>:<nsets>:<line>:<assoc>,<rp>:<wp>:"
                       f"<ap>:<wap>:<sif>,<mshr>:<N>:<merge>,<mq> (the simulator aborts)")
        if n == 12:
            raise fail("field 13 (miss_queue) is missing: the simulator accepts 12 fields but "
                       "leaves the miss-queue size uninitialised; add ',<mq>'")
        if pos != len(text):
            raise fail(f"unexpected {text[pos:]!r} after {_field(n - 1)} (the simulator would "
                       f"ignore it)")
        try:
            return cls(*values)  # type: ignore[arg-type]
        except CacheStringError as e:
            raise fail(str(e)) from None

    def format(self) -> str:
        s = (f"{self.kind}:{self.sets}:{self.line}:{self.assoc},"
             f"{self.replacement}:{self.write}:{self.alloc}:{self.write_alloc}:{self.set_index},"
             f"{self.mshr}:{self.mshr_entries}:{self.mshr_merge},{self.miss_queue}")
        if self.result_fifo is not None:
            s += f":{self.result_fifo}"
            if self.data_port is not None:
                s += f",{self.data_port}"
        return s

    def __str__(self) -> str:
        return self.format()


def check_required(optfile: object) -> list[str]:
    """The :data:`REQUIRED_CACHE_OPTIONS` that ``optfile`` (an ``OptionFile``) does not set."""
    return [name for name in REQUIRED_CACHE_OPTIONS if name not in optfile]  # type: ignore[operator]
