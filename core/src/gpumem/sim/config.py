"""``SimConfig``: the typed, validated description of a simulated memory hierarchy.

A config is plain data: loaded from and saved to TOML, embedded verbatim in every simulated
dataset's attributes, and compiled into flat arrays by :mod:`gpumem.sim.engine`. Validation
errors name the field and the rule (``cache[l1d].ways: must divide size / line``), so a
hand-written file fails loudly before any simulation runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

POLICIES = ("lru", "fifo", "random", "weighted")
INDEX_FUNCTIONS = ("modulo", "bits", "xor", "table")
SCOPES = ("sm", "gpu")


class SimConfigError(ValueError):
    """A config field breaks a rule; the message starts with the field's path."""


def _fail(where: str, rule: str) -> None:
    raise SimConfigError(f"{where}: {rule}")


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


@dataclass
class SetIndex:
    """How an address picks a set.

    ``modulo``: block number mod sets. ``bits``: the address bits listed (LSB first) form the
    set number, e.g. ``[7, 8]`` for the texture L1 of Fermi. ``xor``: set bit i is the parity
    of ``address & masks[i]``. ``table``: ``table[block number mod len(table)]``, for mappings
    measured rather than understood (Fermi's L2 TLB).
    """

    function: str = "modulo"
    bits: list[int] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)
    table: list[int] = field(default_factory=list)

    def validate(self, where: str, sets: int) -> None:
        if self.function not in INDEX_FUNCTIONS:
            _fail(f"{where}.index", f"must be one of {', '.join(INDEX_FUNCTIONS)}")
        if self.function == "bits":
            if not self.bits:
                _fail(f"{where}.index_bits", "required when index = 'bits'")
            if any(b < 0 or b > 62 for b in self.bits):
                _fail(f"{where}.index_bits", "bits must be in 0..62")
            if 2 ** len(self.bits) != sets:
                _fail(f"{where}.index_bits", f"{len(self.bits)} bits select {2 ** len(self.bits)} sets, not {sets}")
        if self.function == "xor":
            if 2 ** len(self.masks) != sets:
                _fail(f"{where}.xor_masks", f"{len(self.masks)} masks select {2 ** len(self.masks)} sets, not {sets}")
            if any(m <= 0 for m in self.masks):
                _fail(f"{where}.xor_masks", "masks must be positive address masks")
        if self.function == "table":
            if not self.table:
                _fail(f"{where}.index_table", "required when index = 'table'")
            if any(s < 0 or s >= sets for s in self.table):
                _fail(f"{where}.index_table", f"entries must be set numbers 0..{sets - 1}")
            if sorted(set(self.table)) != list(range(sets)):
                _fail(f"{where}.index_table", "every set must appear at least once")


@dataclass
class CacheLevel:
    """One cache level (per SM or shared by the GPU).

    ``ways`` is an int for equal sets or a list (one entry per set) for unequal sets.
    ``sector`` is the fill granularity (``line`` when unsectored). ``translate`` says the level
    is looked up with a physical address, so the TLBs are consulted before it; a virtually
    tagged level (Maxwell's L1) hits without translation.
    """

    name: str
    size: int
    line: int
    ways: int | list[int]
    hit_latency: float
    sector: int = 0
    policy: str = "lru"
    way_weights: list[float] = field(default_factory=list)
    index: SetIndex = field(default_factory=SetIndex)
    scope: str = "sm"
    translate: bool = False

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

    def validate(self, where: str) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            _fail(f"{where}.name", "must be a non-empty identifier such as 'l1d'")
        if not _is_pow2(self.line):
            _fail(f"{where}.line", f"must be a power of two, got {self.line}")
        if not _is_pow2(self.sector_size) or self.sector_size > self.line:
            _fail(f"{where}.sector", f"must be a power of two no larger than line ({self.line})")
        if self.line // self.sector_size > 32:
            _fail(f"{where}.sector", "at most 32 sectors per line")
        if self.size <= 0 or self.size % self.line:
            _fail(f"{where}.size", f"must be a positive multiple of line ({self.line})")
        if isinstance(self.ways, list):
            if not self.ways or any(w <= 0 for w in self.ways):
                _fail(f"{where}.ways", "a list of ways needs one positive entry per set")
            if sum(self.ways) * self.line != self.size:
                _fail(f"{where}.ways", f"sum(ways) x line = {sum(self.ways) * self.line}, not size {self.size}")
        else:
            if self.ways <= 0 or (self.size // self.line) % self.ways:
                _fail(f"{where}.ways", f"must divide size / line = {self.size // self.line}")
        if self.policy not in POLICIES:
            _fail(f"{where}.policy", f"must be one of {', '.join(POLICIES)}")
        if self.policy == "weighted":
            if len(self.way_weights) != max(self.way_list):
                _fail(f"{where}.way_weights", f"needs one weight per way ({max(self.way_list)})")
            if any(w < 0 for w in self.way_weights) or sum(self.way_weights) <= 0:
                _fail(f"{where}.way_weights", "weights must be >= 0 with a positive sum")
        if self.scope not in SCOPES:
            _fail(f"{where}.scope", f"must be one of {', '.join(SCOPES)}")
        if not (self.hit_latency >= 0):
            _fail(f"{where}.hit_latency", "must be >= 0 cycles")
        if self.index.function in ("modulo",) and isinstance(self.ways, list):
            pass  # modulo over unequal sets is allowed: set = block mod sets
        self.index.validate(where, self.sets)


@dataclass
class TlbLevel:
    """One TLB level. ``entries`` = sum of ways; ``ways`` int (equal sets) or list per set.

    ``miss_penalty`` is added to an access's latency when this level misses (cumulative over
    levels: an access missing both L1 and L2 TLBs pays both penalties).
    """

    name: str
    page: int
    entries: int
    ways: int | list[int]
    miss_penalty: float
    policy: str = "lru"
    way_weights: list[float] = field(default_factory=list)
    index: SetIndex = field(default_factory=SetIndex)

    @property
    def sets(self) -> int:
        if isinstance(self.ways, list):
            return len(self.ways)
        return self.entries // self.ways

    @property
    def way_list(self) -> list[int]:
        return list(self.ways) if isinstance(self.ways, list) else [self.ways] * self.sets

    def validate(self, where: str) -> None:
        if not _is_pow2(self.page):
            _fail(f"{where}.page", f"must be a power of two, got {self.page}")
        if isinstance(self.ways, list):
            if sum(self.ways) != self.entries or any(w <= 0 for w in self.ways):
                _fail(f"{where}.ways", f"positive ways summing to entries ({self.entries})")
        elif self.ways <= 0 or self.entries % self.ways:
            _fail(f"{where}.ways", f"must divide entries ({self.entries})")
        if self.policy not in POLICIES:
            _fail(f"{where}.policy", f"must be one of {', '.join(POLICIES)}")
        if self.policy == "weighted" and len(self.way_weights) != max(self.way_list):
            _fail(f"{where}.way_weights", f"needs one weight per way ({max(self.way_list)})")
        if self.miss_penalty < 0:
            _fail(f"{where}.miss_penalty", "must be >= 0 cycles")
        self.index.validate(where, self.sets)


@dataclass
class Dram:
    latency: float
    bandwidth_gbs: float = 0.0


@dataclass
class Timer:
    """What a clock read adds to each recorded latency, and the noise of real hardware.

    ``overhead`` is reported by the device (as a CUDA device measures it) and subtracted by the
    experiments. ``jitter`` is a Gaussian sigma in cycles; a fraction ``outlier_rate`` of the
    accesses gets ``outlier_cycles`` more (a mis-timed access).
    """

    overhead: float = 0.0
    jitter: float = 0.0
    outlier_rate: float = 0.0
    outlier_cycles: float = 0.0


@dataclass
class SimConfig:
    """A simulated GPU: SMs and clock, caches, load paths, TLBs, DRAM and timer behaviour.

    ``paths`` maps a load flavour (``ca``, ``cg``, ``nc``, ``tex``) to the cache levels it
    looks up, in order; ``path_latency`` adds a fixed pipeline latency to every load of a
    path (Fermi's texture pipeline adds about 100 cycles to hits and misses alike).
    """

    name: str
    arch: str
    compute_capability: str
    sm_count: int
    clock_mhz: float
    caches: list[CacheLevel]
    paths: dict[str, list[str]]
    tlbs: list[TlbLevel]
    dram: Dram
    timer: Timer = field(default_factory=Timer)
    path_latency: dict[str, float] = field(default_factory=dict)
    memory_bytes: int = 16 << 30
    base_address: int = 1 << 40
    description: str = ""
    source: str = ""
    seed: int = 0

    # ---- validation -------------------------------------------------------------------
    def validate(self) -> SimConfig:
        if self.sm_count <= 0:
            _fail("sm_count", "must be >= 1")
        if self.clock_mhz <= 0:
            _fail("clock_mhz", "must be > 0")
        if not self.caches:
            _fail("cache", "at least one cache level is required")
        names = [c.name for c in self.caches]
        for i, c in enumerate(self.caches):
            c.validate(f"cache[{c.name or i}]")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            _fail("cache", f"duplicate level names {sorted(dup)}")
        if not self.paths:
            _fail("paths", "at least one load path (e.g. ca = ['l1d', 'l2']) is required")
        for p, levels in self.paths.items():
            if not levels:
                _fail(f"paths.{p}", "must list at least one cache level")
            for lv in levels:
                if lv not in names:
                    _fail(f"paths.{p}", f"unknown cache level '{lv}' (levels: {', '.join(names)})")
        for p in self.path_latency:
            if p not in self.paths:
                _fail(f"path_latency.{p}", f"no such path (paths: {', '.join(self.paths)})")
        for i, t in enumerate(self.tlbs):
            t.validate(f"tlb[{t.name or i}]")
        pages = [t.page for t in self.tlbs]
        if pages and self.tlbs and any(p < pages[0] for p in pages):
            _fail("tlb", "the first TLB level must have the smallest page")
        if self.dram.latency < 0:
            _fail("dram.latency", "must be >= 0 cycles")
        if not (0 <= self.timer.outlier_rate < 1):
            _fail("timer.outlier_rate", "must be in [0, 1)")
        if self.timer.jitter < 0:
            _fail("timer.jitter", "must be >= 0")
        if self.base_address % (max(pages) if pages else 4096):
            _fail("base_address", "must be aligned to the largest TLB page")
        return self

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

    def digest(self) -> str:
        """SHA-256 of the canonical TOML: identifies the simulated device in result keys."""
        return hashlib.sha256(self.to_toml().encode()).hexdigest()

    # ---- TOML ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        def level(obj: Any) -> dict[str, Any]:
            d = dataclasses.asdict(obj)
            idx = d.pop("index")
            d["index"] = idx["function"]
            if idx["bits"]:
                d["index_bits"] = idx["bits"]
            if idx["masks"]:
                d["xor_masks"] = idx["masks"]
            if idx["table"]:
                d["index_table"] = idx["table"]
            if not d.get("way_weights"):
                d.pop("way_weights", None)
            return d

        out: dict[str, Any] = {
            "name": self.name,
            "arch": self.arch,
            "description": self.description,
            "source": self.source,
            "compute_capability": self.compute_capability,
            "sm_count": self.sm_count,
            "clock_mhz": self.clock_mhz,
            "memory_bytes": self.memory_bytes,
            "base_address": self.base_address,
            "seed": self.seed,
            "timer": dataclasses.asdict(self.timer),
            "dram": dataclasses.asdict(self.dram),
            "paths": {k: list(v) for k, v in self.paths.items()},
            "path_latency": dict(self.path_latency),
            "cache": [level(c) for c in self.caches],
            "tlb": [level(t) for t in self.tlbs],
        }
        return out

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_toml())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimConfig:
        data = dict(data)

        def take(d: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
            if key not in d:
                _fail(f"{where}{key}", "is required")
            v = d.pop(key)
            if kind is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
                want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
                _fail(f"{where}{key}", f"must be {want}, got {type(v).__name__} {v!r}")
            return v

        def opt(d: dict[str, Any], key: str, default: Any) -> Any:
            return d.pop(key, default)

        def index_of(d: dict[str, Any]) -> SetIndex:
            return SetIndex(
                function=str(opt(d, "index", "modulo")),
                bits=[int(b) for b in opt(d, "index_bits", [])],
                masks=[int(m) for m in opt(d, "xor_masks", [])],
                table=[int(s) for s in opt(d, "index_table", [])],
            )

        def leftovers(d: dict[str, Any], where: str) -> None:
            if d:
                _fail(f"{where}{sorted(d)[0]}", "unknown field")

        caches = []
        for i, raw in enumerate(data.pop("cache", [])):
            d = dict(raw)
            w = f"cache[{d.get('name', i)}]."
            ways = take(d, "ways", w, (int, list))
            c = CacheLevel(
                name=take(d, "name", w, str),
                size=take(d, "size", w, int),
                line=take(d, "line", w, int),
                ways=[int(x) for x in ways] if isinstance(ways, list) else ways,
                hit_latency=take(d, "hit_latency", w, float),
                sector=int(opt(d, "sector", 0)),
                policy=str(opt(d, "policy", "lru")),
                way_weights=[float(x) for x in opt(d, "way_weights", [])],
                index=index_of(d),
                scope=str(opt(d, "scope", "sm")),
                translate=bool(opt(d, "translate", False)),
            )
            leftovers(d, w)
            caches.append(c)
        tlbs = []
        for i, raw in enumerate(data.pop("tlb", [])):
            d = dict(raw)
            w = f"tlb[{d.get('name', i)}]."
            ways = take(d, "ways", w, (int, list))
            t = TlbLevel(
                name=take(d, "name", w, str),
                page=take(d, "page", w, int),
                entries=take(d, "entries", w, int),
                ways=[int(x) for x in ways] if isinstance(ways, list) else ways,
                miss_penalty=take(d, "miss_penalty", w, float),
                policy=str(opt(d, "policy", "lru")),
                way_weights=[float(x) for x in opt(d, "way_weights", [])],
                index=index_of(d),
            )
            leftovers(d, w)
            tlbs.append(t)
        dram_d = dict(data.pop("dram", {}))
        dram = Dram(latency=take(dram_d, "latency", "dram.", float),
                    bandwidth_gbs=float(opt(dram_d, "bandwidth_gbs", 0.0)))
        leftovers(dram_d, "dram.")
        timer_d = dict(data.pop("timer", {}))
        timer = Timer(**{k: float(timer_d.pop(k)) for k in list(timer_d)
                         if k in {f.name for f in dataclasses.fields(Timer)}})
        leftovers(timer_d, "timer.")
        paths_raw = data.pop("paths", None)
        if not isinstance(paths_raw, dict):
            _fail("paths", "is required: a table of load path -> list of cache levels")
        cfg = cls(
            name=take(data, "name", "", str),
            arch=take(data, "arch", "", str),
            compute_capability=str(take(data, "compute_capability", "", str)),
            sm_count=take(data, "sm_count", "", int),
            clock_mhz=take(data, "clock_mhz", "", float),
            caches=caches,
            paths={str(k): [str(x) for x in v] for k, v in paths_raw.items()},
            tlbs=tlbs,
            dram=dram,
            timer=timer,
            path_latency={str(k): float(v) for k, v in dict(opt(data, "path_latency", {})).items()},
            memory_bytes=int(opt(data, "memory_bytes", 16 << 30)),
            base_address=int(opt(data, "base_address", 1 << 40)),
            description=str(opt(data, "description", "")),
            source=str(opt(data, "source", "")),
            seed=int(opt(data, "seed", 0)),
        )
        leftovers(data, "")
        return cfg.validate()

    @classmethod
    def from_toml(cls, text: str) -> SimConfig:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SimConfigError(f"not valid TOML: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> SimConfig:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise SimConfigError(f"cannot read {p}: {e.strerror or e}") from None
        try:
            return cls.from_toml(text)
        except SimConfigError as e:
            raise SimConfigError(f"{p}: {e}") from None


def ceil_log2(x: int) -> int:
    return max(0, math.ceil(math.log2(x))) if x > 1 else 0
