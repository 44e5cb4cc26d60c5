"""Accel-Sim configs to gpumem's :class:`~gpumem.sim.SimConfig` and back.

The two models overlap only in part. Accel-Sim has no TLB, one L2 latency, LRU or FIFO only,
and configures the L2 per memory sub-partition and the L1 as a base size stretched by the
unified L1/shared carve-out; gpumem's simulator has TLBs, near/far L2 partitions, random and
skewed policies, but no write policies, interconnect or DRAM timing. Both directions return
warnings for everything the other side cannot express, one line each, so nothing is lost in
silence.

Latencies: Accel-Sim adds them up (``-gpgpu_l1_latency``, then ``-gpgpu_l2_rop_latency`` on
an L1 miss, then ``-dram_latency`` on an L2 miss, all in core cycles), where gpumem gives each
level's load-to-use latency. So L2 = L1 + rop and DRAM = L2 + dram_latency.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpumem.api import CacheLevel, Dram, SharedMemory, SimConfig, Throughput, Timer

from gpumem_accelsim.cachestring import CacheString, CacheStringError
from gpumem_accelsim.config import AccelSimConfig, AccelSimConfigError

_POLICY = {"L": "lru", "F": "fifo"}
_INDEX_NAMES = {"L": "linear", "H": "Fermi hash", "P": "IPOLY hash", "X": "XOR hash",
                "C": "custom"}
_L1 = "-gpgpu_cache:dl1"
_L2 = "-gpgpu_cache:dl2"
_TEX = "-gpgpu_tex_cache:l1"


# ---------------------------------------------------------------------------------------------
# Accel-Sim -> SimConfig
# ---------------------------------------------------------------------------------------------


def from_accelsim(cfg: AccelSimConfig, arch: str = "accelsim") -> tuple[SimConfig, list[str]]:
    """The built-in simulator's config for ``cfg``, and what could not be carried over."""
    warn: list[str] = []
    m = cfg.merged()
    l1_lat = float(cfg.int("-gpgpu_l1_latency"))
    l2_lat = l1_lat + cfg.int("-gpgpu_l2_rop_latency")
    dram_lat = l2_lat + cfg.int("-dram_latency")
    caches: list[CacheLevel] = []
    dl1 = cfg.cache(_L1)
    if dl1 is not None:
        size, ways = dl1.size, dl1.assoc
        if cfg.adaptive_l1 and cfg.unified_l1_bytes > dl1.size:
            if cfg.unified_l1_bytes % dl1.size:
                warn.append(f"{_L1}: unified size {cfg.unified_l1_bytes} B is not a multiple "
                            f"of the base {dl1.size} B; the base size is used")
            else:
                factor = cfg.unified_l1_bytes // dl1.size
                size, ways = dl1.size * factor, dl1.assoc * factor
                warn.append(f"{_L1}: adaptive carve-out; the L1 is taken at its size for "
                            f"kernels without shared memory ({size >> 10} KB, {ways} ways), as "
                            f"gpumem's probes run")
        caches.append(_level("l1d", dl1, size, ways, l1_lat, "sm", warn, _L1))
    dl2 = cfg.cache(_L2)
    if dl2 is None:
        raise AccelSimConfigError(f"{cfg.name}: {_L2} is 'none'; gpumem needs an L2")
    slices = cfg.l2_slices
    caches.append(_level("l2", dl2, dl2.size * slices, dl2.assoc, l2_lat, "gpu", warn, _L2))
    warn.append(f"{_L2}: {slices} slices of {dl2.size} B (channels x sub-partitions) become "
                f"one {dl2.size * slices} B cache indexed modulo its sets; the address mapping "
                f"to slices is not modelled")
    tex = cfg.cache(_TEX)
    if tex is not None:
        caches.append(_level("tex_l1", tex, tex.size, tex.assoc, l1_lat, "sm", warn, _TEX))
        warn.append(f"{_TEX}: Accel-Sim sets no texture hit latency of its own; "
                    f"-gpgpu_l1_latency ({l1_lat:g}) is used")
    skip_l1 = m.int("-gpgpu_gmem_skip_L1D", 0) != 0
    via_l1 = ["l1d", "l2"] if dl1 is not None and not skip_l1 else ["l2"]
    paths = {"ca": via_l1, "cg": ["l2"], "nc": via_l1}
    if tex is not None:
        paths["tex"] = ["tex_l1", "l2"]
    if skip_l1 and dl1 is not None:
        warn.append("-gpgpu_gmem_skip_L1D 1: traced global loads bypass the L1, so path 'ca' "
                    "goes to the L2 as in Accel-Sim")
    warn.append("Accel-Sim models no TLB: the config has no TLB levels (and no page walk)")
    warn.append("write policies, MSHR sizes, interconnect and DRAM timing have no "
                "counterpart in gpumem's simulator and are dropped")
    pipe = m.get("-gpgpu_shader_core_pipeline", "2048:32")
    try:
        threads, warp = (int(x) for x in pipe.split(":")[:2])
    except ValueError:
        raise AccelSimConfigError(f"{cfg.name}: -gpgpu_shader_core_pipeline must be "
                                  f"THREADS:WARP, got {pipe!r}") from None
    major = m.int("-gpgpu_compute_capability_major", 0)
    minor = m.int("-gpgpu_compute_capability_minor", 0)
    if not major:
        warn.append("no -gpgpu_compute_capability_major: compute capability 0.0 recorded")
    sim = SimConfig(
        name=cfg.name, arch=arch, compute_capability=f"{major}.{minor}",
        sm_count=cfg.sm_count, clock_mhz=cfg.core_clock_mhz, caches=caches, paths=paths,
        dram=Dram(dram_lat, bandwidth_gbs=round(cfg.dram_bandwidth_gbs, 3)),
        tlbs=[], timer=Timer(),
        smem=SharedMemory(size=m.int("-gpgpu_shmem_size", 16384),
                          banks=m.int("-gpgpu_shmem_num_banks", 16), bank_width=4, modes=[4],
                          latency=float(cfg.int("-gpgpu_smem_latency")), conflict_cycles=1.0),
        throughput=Throughput(max_warps_per_sm=max(1, threads // max(1, warp)),
                              max_ctas_per_sm=m.int("-gpgpu_shader_cta", 8),
                              inflight_sectors_per_sm=dl1.mshr_entries if dl1 else 0),
        description=f"imported from Accel-Sim config {cfg.name}",
        source=cfg.source or cfg.name,
    )
    warn.append("shared memory: GPGPU-Sim serialises an n-way bank conflict into n shared-"
                "memory cycles; modelled as 1 cycle per extra way (limited broadcast and warp "
                "parts are not modelled)")
    return sim.validate(), warn


def _level(name: str, cs: CacheString, size: int, ways: int, latency: float, scope: str,
           warn: list[str], option: str) -> CacheLevel:
    if cs.set_index != "L":
        warn.append(f"{option}: set index '{cs.set_index}' ({_INDEX_NAMES[cs.set_index]}) is "
                    f"approximated by a modulo index")
    sector = 32 if cs.kind == "S" else 0
    return CacheLevel(name, size, cs.line, ways, latency, sector=sector,
                      policy=_POLICY[cs.replacement], scope=scope)


# ---------------------------------------------------------------------------------------------
# SimConfig -> Accel-Sim (on a base config that supplies everything gpumem does not model)
# ---------------------------------------------------------------------------------------------


def to_accelsim(sim: SimConfig, base: AccelSimConfig
                ) -> tuple[AccelSimConfig, dict[str, str], list[str]]:
    """``base`` with the memory hierarchy of ``sim``: the new config, a comment per option
    set from ``sim``, and what ``sim`` holds that Accel-Sim cannot express."""
    out = AccelSimConfig(base.gpgpusim.copy(), base.trace.copy(),
                         name=sim.name, source=f"gpumem SimConfig {sim.name} on {base.name}")
    comments: dict[str, str] = {}
    warn: list[str] = []
    put = _Writer(out, comments)
    put.sms(sim.sm_count, f"SimConfig sm_count = {sim.sm_count}")
    put.core_clock(sim.clock_mhz, f"SimConfig clock_mhz = {sim.clock_mhz:g}")
    # the L1 data cache: 'l1d', else the first SM-scope level of the 'ca' path (a config
    # whose global loads skip the L1 still has one)
    levels = {c.name: c for c in sim.caches}
    via_l1 = [levels[n] for n in sim.paths.get("ca", []) if levels[n].scope == "sm"]
    l1 = levels.get("l1d") or (via_l1[0] if via_l1 else None)
    gpu = [c for c in sim.caches if c.scope == "gpu"]
    if not gpu:
        raise AccelSimConfigError(f"SimConfig {sim.name}: no GPU-scope (L2) level to write "
                                  f"as {_L2}")
    l2 = max(gpu, key=lambda c: c.size)
    near = min((c.hit_latency for c in gpu), default=l2.hit_latency)
    if len(gpu) > 1 or l2.partitions > 1:
        far = max([c.far_latency or c.hit_latency for c in gpu] + [l2.hit_latency])
        warn.append(f"L2 near/far partitions (hits {near:g} and {far:g} cycles) cannot be "
                    f"expressed: one L2 of {l2.size} B at the near latency is written")
    for c in sim.caches:
        _policy_warnings(c, warn)
    l1_lat = l1.hit_latency if l1 else near
    if l1 is not None:
        put.l1(l1, f"SimConfig cache '{l1.name}'", warn)
    put.l2(l2, f"SimConfig cache '{l2.name}' (total; per slice = total / slices)", warn)
    put.latencies(l1_lat, near, sim.dram.latency,
                  f"SimConfig hit latencies: L1 {l1_lat:g}, L2 {near:g}, DRAM "
                  f"{sim.dram.latency:g} cycles")
    if sim.dram.bandwidth_gbs:
        put.dram_bandwidth(sim.dram.bandwidth_gbs, f"SimConfig dram.bandwidth_gbs = "
                                                   f"{sim.dram.bandwidth_gbs:g}")
    put.smem(sim.smem.banks, sim.smem.latency, f"SimConfig smem: {sim.smem.banks} banks, "
                                               f"{sim.smem.latency:g} cycles")
    if sim.tlbs:
        warn.append(f"{len(sim.tlbs)} TLB level(s) ({', '.join(t.name for t in sim.tlbs)}) "
                    f"and the page walk cannot be expressed: Accel-Sim models no TLB")
    if sim.path_latency:
        warn.append(f"path latencies {sim.path_latency} cannot be expressed")
    return out, comments, warn


def _policy_warnings(c: CacheLevel, warn: list[str]) -> None:
    if c.policy not in ("lru", "fifo"):
        warn.append(f"cache '{c.name}': policy '{c.policy}' cannot be expressed (Accel-Sim "
                    f"has LRU and FIFO); LRU is written")
    if isinstance(c.ways, list):
        warn.append(f"cache '{c.name}': unequal sets {c.ways} cannot be expressed; "
                    f"{max(c.ways)} ways per set are written")
    if c.index.function not in ("modulo",):
        warn.append(f"cache '{c.name}': set index '{c.index.function}' cannot be expressed; "
                    f"the linear index 'L' is written")
    if c.sm_offsets:
        warn.append(f"cache '{c.name}': per-SM latency offsets cannot be expressed")


class _Writer:
    """Sets options on a config being built, keeping a comment for each one."""

    def __init__(self, cfg: AccelSimConfig, comments: dict[str, str]) -> None:
        self.cfg, self.comments = cfg, comments

    def set(self, name: str, value: object, why: str) -> None:
        """Set ``name`` (in trace.config if it lives there) unless it already has that value
        (as written, or as the simulator's default); either way ``why`` annotates it."""
        self.comments[name] = why
        if self._same(name, value):
            return
        target = self.cfg.trace if name in self.cfg.trace else self.cfg.gpgpusim
        target[name] = str(value)

    def _same(self, name: str, value: object) -> bool:
        current = self.cfg.merged().get(name)
        if current is not None and current == str(value):
            return True
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(self.cfg.float(name)) == float(value)
            except (AccelSimConfigError, ValueError):
                return False
        if name == "-gpgpu_clock_domains" and current is not None:
            try:
                return [float(x) for x in current.split(":")] == \
                    [float(x) for x in str(value).split(":")]
            except ValueError:
                return False
        return False

    def sms(self, count: int, why: str) -> None:
        per = self.cfg.int("-gpgpu_n_cores_per_cluster")
        if count % per:
            per = 1
        self.set("-gpgpu_n_clusters", count // per, why)
        self.set("-gpgpu_n_cores_per_cluster", per, why + f" ({count // per} x {per})")

    def core_clock(self, mhz: float, why: str) -> None:
        core, icnt, l2, dram = self.cfg.clocks_mhz
        if core == mhz:
            self.comments["-gpgpu_clock_domains"] = why
            return
        self.set("-gpgpu_clock_domains", f"{_fmt(mhz)}:{_fmt(icnt)}:{_fmt(l2)}:{_fmt(dram)}",
                 why + "; interconnect, L2 and DRAM clocks from the base")

    def dram_bandwidth(self, gbs: float, why: str) -> None:
        per_mhz = self.cfg.dram_bandwidth_gbs / self.cfg.clocks_mhz[3]
        core, icnt, l2, _dram = self.cfg.clocks_mhz
        mhz = gbs / per_mhz
        self.set("-gpgpu_clock_domains", f"{_fmt(core)}:{_fmt(icnt)}:{_fmt(l2)}:{_fmt(mhz)}",
                 self.comments.get("-gpgpu_clock_domains", "") + f"; DRAM clock {_fmt(mhz)} "
                 f"MHz gives {gbs:g} GB/s over the base's {self.cfg.int('-gpgpu_n_mem')} "
                 f"channels ({why})")

    def l1(self, c: CacheLevel, why: str, warn: list[str]) -> None:
        base = self.cfg.cache(_L1)
        unified = self.cfg.unified_l1_bytes if self.cfg.adaptive_l1 else 0
        kind, line = _kind(c, warn)
        if base is not None and unified and base.line == line:
            # keep the base's sets, line and ways; the unified size stretches the ways, in
            # whole units of the base's size
            units = max(1, round(c.size / base.size))
            size = units * base.size
            if size != c.size:
                warn.append(f"L1 of {c.size} B is not a whole number of the base's "
                            f"{base.size} B units: {size} B is written")
                why += f"; rounded to {units} x {base.size} B"
            self.set("-gpgpu_unified_l1d_size", size // 1024,
                     why + f": {size} B with no shared memory in use (unified L1)")
            return
        ways = max(c.way_list)
        sets = c.size // (line * ways)
        sets, ways = _pow2_sets(sets, ways, c.name, warn)
        cs = _string(base, kind, sets, line, ways, c.policy, warn, c.name)
        self.set(_L1, cs.format(), why + f": {c.size} B = {sets} sets x {line} B x {ways} ways")

    def l2(self, c: CacheLevel, why: str, warn: list[str]) -> None:
        base = self.cfg.cache(_L2)
        slices = self.cfg.l2_slices
        kind, line = _kind(c, warn)
        ways = max(c.way_list)
        per_slice = c.size // slices
        sets = per_slice // (line * ways)
        if sets * line * ways * slices != c.size:
            warn.append(f"L2 of {c.size} B does not split into {slices} equal slices of whole "
                        f"sets; {sets * line * ways * slices} B is written")
        sets, ways = _pow2_sets(sets, ways, c.name, warn)
        cs = _string(base, kind, sets, line, ways, c.policy, warn, c.name)
        self.set(_L2, cs.format(), why + f": {slices} slices x {sets} sets x {line} B x "
                                         f"{ways} ways = {sets * line * ways * slices} B")

    def latencies(self, l1: float, l2: float, dram: float, why: str) -> None:
        self.set("-gpgpu_l1_latency", int(round(l1)), why)
        self.set("-gpgpu_l2_rop_latency", int(round(l2 - l1)), why + ": L2 - L1")
        self.set("-dram_latency", int(round(dram - l2)), why + ": DRAM - L2")

    def smem(self, banks: int, latency: float, why: str) -> None:
        self.set("-gpgpu_shmem_num_banks", banks, why)
        self.set("-gpgpu_smem_latency", int(round(latency)), why)


def _kind(c: CacheLevel, warn: list[str]) -> tuple[str, int]:
    """('S', 128) for 128-B lines of 32-B sectors, ('N', line) otherwise."""
    if c.sector and c.sector < c.line:
        if c.line == 128 and c.sector == 32:
            return "S", 128
        warn.append(f"cache '{c.name}': {c.line}-B lines of {c.sector}-B sectors cannot be "
                    f"expressed (Accel-Sim sectors are 4 x 32 B of 128-B lines); an unsectored "
                    f"{c.line}-B line is written")
    return "N", c.line


def _pow2_sets(sets: int, ways: int, name: str, warn: list[str]) -> tuple[int, int]:
    """Accel-Sim masks the set index, so sets must be a power of two: keep the capacity by
    moving the factor into the ways."""
    if sets > 0 and sets & (sets - 1) == 0:
        return sets, ways
    p = 1 << max(0, int(math.floor(math.log2(max(1, sets)))))
    new_ways = max(1, round(sets * ways / p))
    warn.append(f"cache '{name}': {sets} sets is not a power of two (Accel-Sim masks the index); "
                f"written as {p} sets x {new_ways} ways")
    return p, new_ways


def _string(base: CacheString | None, kind: str, sets: int, line: int, ways: int,
            policy: str, warn: list[str], name: str) -> CacheString:
    """The base's cache string with a new geometry. The base's set-index function is kept
    where it allows the new set count (Fermi and IPOLY hashes need 16-64 sets), else the
    linear index is written."""
    rp = "F" if policy == "fifo" else "L"
    if base is None:  # a read-only, allocate-on-miss cache with a modest MSHR
        return CacheString(kind, sets, line, ways, rp, "R", "m", "N", "L",
                           "S" if kind == "S" else "A", 256, 8, 16, 0, 32)
    mshr = base.mshr
    if kind == "N" and base.kind == "S" and mshr == "S":  # sector MSHRs need sectors
        mshr = "A"
    port = base.data_port if base.data_port is None or line % base.data_port == 0 else 0
    fields = dict(kind=kind, sets=sets, line=line, assoc=ways, replacement=rp, mshr=mshr,
                  data_port=port)
    try:
        return replace(base, **fields)
    except CacheStringError:
        if base.set_index == "L":
            raise
        warn.append(f"cache '{name}': the base's set index '{base.set_index}' "
                    f"({_INDEX_NAMES[base.set_index]}) does not allow {sets} sets; the linear "
                    f"index 'L' is written")
        return replace(base, set_index="L", **fields)


def _fmt(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")
