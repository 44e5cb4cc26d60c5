"""Accel-Sim configs to gpumem's :class:`~gpumem.sim.SimConfig` and back.

The two models overlap only in part. Accel-Sim has no TLB, one L2 latency, LRU or FIFO only,
and configures the L2 per memory sub-partition and the L1 as a base size stretched by the
unified L1/shared carve-out; gpumem's simulator has TLBs, near/far L2 partitions, random and
skewed policies, but no write policies, interconnect or DRAM timing. Both directions return
warnings for everything the other side cannot express, one line each, so nothing is lost in
silence.

Latencies: Accel-Sim adds them up (``-gpgpu_l1_latency``, then ``-gpgpu_l2_rop_latency`` on
an L1 miss, then ``-dram_latency`` on an L2 miss, all in core cycles), where gpumem gives each
level's load-to-use latency. So L2 = L1 + rop and DRAM = L2 + dram_latency, plus the cycles
the simulator's own pipeline adds at each level (:class:`PipelineCycles`, measured per build:
an L1 hit takes ``-gpgpu_l1_latency`` + 4 cycles on the 2024-10 build), which a translation
for a known build takes out so that the simulator reproduces the latencies.

Provenance: :func:`translate` records, per option it writes, the SimConfig parameters
(``cache:l1d.hit_latency``, as :class:`gpumem.api.simulator.Calibrated` names them) its value comes
from, and given a calibration's ``sources`` names in the option's comment the finding that
set each one (``gpumem export accelsim``: :mod:`gpumem_accelsim.export`).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from gpumem.api.simulator import CacheLevel, Dram, SharedMemory, SimConfig, Throughput, Timer

from gpumem_accelsim.cachestring import CacheString, CacheStringError
from gpumem_accelsim.config import AccelSimConfig, AccelSimConfigError
from gpumem_accelsim.options import parse_number
from gpumem_accelsim.traces import GLOBAL_BASE

_POLICY = {"L": "lru", "F": "fifo"}
_INDEX_NAMES = {"L": "linear", "H": "Fermi hash", "P": "IPOLY hash", "X": "XOR hash",
                "C": "custom"}
_L1 = "-gpgpu_cache:dl1"
_L2 = "-gpgpu_cache:dl2"
_TEX = "-gpgpu_tex_cache:l1"


# ---------------------------------------------------------------------------------------------
# Accel-Sim -> SimConfig
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineCycles:
    """Cycles a build of Accel-Sim adds to a dependent load beyond its latency options: an L1
    hit takes ``-gpgpu_l1_latency + l1``, an L2 hit through L1 that plus
    ``-gpgpu_l2_rop_latency + l2``, a DRAM access that plus ``-dram_latency + dram``.
    ``source`` says where they were measured."""

    l1: float = 0.0
    l2: float = 0.0
    dram: float = 0.0
    source: str = ""


#: None: the options' values are the latencies (the translation's default, and a build not
#: measured).
NO_PIPELINE = PipelineCycles()
#: Per build (:data:`gpumem_accelsim.known_options.VERSIONS`), measured with the latency
#: ladder on the H200 config exported without them (``-gpgpu_l1_latency 34``, rop 249,
#: ``-dram_latency`` 400; means of 64 accesses, 2026-12-02): L1 37.84-37.89 (2-224 KiB), so
#: +4; L2 292.81-292.86 (344 KiB-57 MiB) = 37.9 + 249 + 6; DRAM 693.83 (128-512 MiB) =
#: 292.83 + 400 + 1. On QV100 (L1 20, rop 160) the same build gave L1 24. These are the
#: H200 config's; :func:`pipeline_cycles` gives any config's.
PIPELINE = {
    "accelsim-dev-2024-10": PipelineCycles(
        4.0, 6.0, 1.0,
        "measured on Accel-Sim dev 73f9fac / GPGPU-Sim dev 667834c, 2026-12-02"),
}

#: The L2's extra cycles on that build: L2_FIXED + L2_PER_ICNT x core / interconnect clock.
#: Measured (``gpumem run latency --device accelsim``, 2026-12-02/05, tests/data/accelsim/
#: runs): 5.85 with the interconnect at twice the core clock (the H200 export), 8.89 at the
#: core clock (QV100, RTX 2060, RTX 3070). Every config measured runs its L2 at the
#: interconnect's clock, so which of the two clocks it follows is not told apart.
L2_FIXED, L2_PER_ICNT = 2.8, 6.1
DETAILED_BUILD = "accelsim-dev-2024-10"

#: gpumem's latency chase where it reaches DRAM on Accel-Sim (a slow device,
#: ``gpumem.experiments.latency``; :func:`gpumem_accelsim.traces.chase_trace`): a warm-up of
#: 8192 lines (1 MiB) from the buffer's base, then 64 timed dependent loads of the lines after
#: them, 128 B apart, each one 32-B sector. Every DRAM footprint of the ladder (16-512 MiB)
#: runs these addresses; which rows the warm-up leaves open decides the timed loads' row hits.
CHASE_WARM_LINES, CHASE_TIMED_LINES, CHASE_STRIDE = 8192, 64, 128
#: Bytes a sectored L2's miss reads from DRAM.
L2_SECTOR = 32
#: GPGPU-Sim's ``-gpgpu_dram_timing_opt`` default, and the order of the fields of that
#: unnamed form.
DRAM_TIMING_DEFAULT = "4:2:8:12:21:13:34:9:4:5:13:1:0:0"
_TIMING_FIELDS = ("nbk", "CCD", "RRD", "RCD", "RAS", "RP", "RC", "CL", "WL", "CDLR", "WR",
                  "nbkgrp", "CCDL", "RTPL")
#: IPOLY hashing (channel indexing 2, bank indexing 2; Rau, ISCA 1991) per number of indices:
#: the GF(2) polynomial an index is reduced by and how many address bits above it fold in, as
#: GPGPU-Sim sizes them (x^4+x+1 over 13 bits, x^5+x^2+1 over 15, x^6+x+1 over 19).
_IPOLY = {16: (0b10011, 13), 32: (0b100101, 15), 64: (0b1000011, 19)}
#: Core cycles of arrival the clocks' phases are averaged over (a chase meets them all).
_PHASES = 1000


def dram_timing(cfg: AccelSimConfig) -> dict[str, int]:
    """``-gpgpu_dram_timing_opt`` as GPGPU-Sim reads it (in DRAM cycles): ``name=value``
    pairs split at ``=``, ``:`` or ``;``, or the unnamed fields in :data:`_TIMING_FIELDS`
    order (the default :data:`DRAM_TIMING_DEFAULT`); one bank group unless given."""
    text = "".join((cfg.merged().get("-gpgpu_dram_timing_opt") or DRAM_TIMING_DEFAULT)
                   .split()).strip('"')
    out = {"nbkgrp": 1, "CCDL": 0, "RTPL": 0}
    tokens = [t for t in re.split("[=:;]", text) if t]
    pairs = zip(tokens[::2], tokens[1::2], strict=False) if "=" in text else \
        zip(_TIMING_FIELDS, tokens, strict=False)
    for name, value in pairs:
        out[name] = parse_number(value, option=f"-gpgpu_dram_timing_opt {name}")
    missing = [k for k in ("nbk", "CCD", "RCD", "RP", "CL") if k not in out]
    if missing:
        raise AccelSimConfigError(f"{cfg.name}: -gpgpu_dram_timing_opt {text!r} sets no "
                                  f"{', '.join(missing)}")
    return out


def _ipoly(high: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """``index`` (one of ``n`` = 2^k) XOR the residue, modulo :data:`_IPOLY`'s polynomial
    over GF(2), of the address bits ``high`` above it (bit i standing for x^(i+k))."""
    poly, width = _IPOLY[n]
    out, residue = index.copy(), poly ^ n  # x^k mod poly
    for i in range(width):
        out ^= ((high >> i) & 1) * residue
        residue <<= 1
        if residue & n:
            residue ^= poly
    return out


def dram_banks(cfg: AccelSimConfig, addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                 list[str]]:
    """(bank, row) of each byte address as GPGPU-Sim's address decoder and DRAM bank indexing
    place it, banks numbered over every channel (channel x banks + bank), and a line for each
    thing followed only in part.

    The ``-gpgpu_mem_addr_mapping`` string (``dramid@S;`` then 64 letters, bit 63 first: R row,
    B bank, C and S column, D channel where no ``dramid@``): with a power-of-two channel count
    its channel bits are inserted at bit S; with another count the channel is the address
    above S modulo the count and bank and row come from the quotient. Channel indexing
    (``-gpgpu_memory_partition_indexing``): 0 as mapped, 1 XOR of the bits above it, 2 IPOLY of
    channel and sub-partition, 4 random (a seeded stand-in drawn line by line in address order
    for the build's ``rand()``: which bank a line lands in differs, how often a row is found
    open does not, the warm-up opening each row in many lines). Bank indexing
    (``-dram_bnk_indexing_policy``): 0 as mapped, 1 XOR with the row, 2 IPOLY of the row."""
    m = cfg.merged()
    notes: list[str] = []
    n = max(1, m.int("-gpgpu_n_mem", 1))
    nsub = max(1, m.int("-gpgpu_n_sub_partition_per_mchannel", 1))
    nbk = dram_timing(cfg)["nbk"]
    text = m.get("-gpgpu_mem_addr_mapping")
    if not text:
        notes.append("no -gpgpu_mem_addr_mapping: the build's built-in mapping is not "
                     "followed, every chase load taken as a row hit")
        zero = np.zeros(addrs.size, np.int64)
        return zero, zero, notes
    text = text.strip().strip('"')
    start = -1
    if text.startswith("dramid@"):
        head, _, text = text.partition(";")
        start = parse_number(head[len("dramid@"):], option="-gpgpu_mem_addr_mapping dramid")
    masks = dict.fromkeys("DBRCS", 0)
    bits = [c.upper() for c in text if c not in ".| "]
    for i, c in enumerate(reversed(bits)):
        if c in masks:
            masks[c] |= 1 << i
    log2n = n.bit_length() - 1
    gap = n != 1 << log2n
    chip_bits = log2n + gap
    bank_mask, row_mask = masks["B"], masks["R"]
    if start >= 0 and not gap:  # the channel's bits are inserted at bit S
        low = (1 << start) - 1
        bank_mask = ((bank_mask & ~low) << chip_bits) | (bank_mask & low)
        row_mask = ((row_mask & ~low) << chip_bits) | (row_mask & low)
    if start >= 0 and gap:
        q = addrs >> start
        chip, high = q % n, q // n
        rest = (high << start) | (addrs & ((1 << start) - 1))
    else:
        chip = _pack(masks["D"], addrs) if start < 0 else (addrs >> start) & (n - 1)
        rest = addrs
        high = addrs >> max(0, start + log2n + nsub.bit_length() - 1)
    bank, row = _pack(bank_mask, rest), _pack(row_mask, rest)
    indexing = m.int("-gpgpu_memory_partition_indexing", 0)
    subs = (1 << chip_bits) * nsub
    if indexing == 1 and not gap:
        chip = chip ^ (high & (n - 1))
    elif indexing == 2 and subs in _IPOLY:
        sub = _ipoly(high, chip * nsub + (bank & (nsub - 1)), subs) % (n * nsub)
        chip = sub // nsub
    elif indexing == 4:
        key = addrs >> max(0, start - (nsub.bit_length() - 1))
        _, first = np.unique(key, return_inverse=True)
        draws = np.random.default_rng(1).integers(0, n * nsub, first.max() + 1)
        chip = draws[first] // nsub
    elif indexing != 0:
        why = {1: "XOR needs a power-of-two channel count",
               2: f"IPOLY needs 16, 32 or 64 sub-partitions, not {subs}"}
        notes.append(f"-gpgpu_memory_partition_indexing {indexing} is not followed "
                     f"({why.get(indexing, 'no function of the build')}); channels taken "
                     f"as mapped")
    policy = m.int("-dram_bnk_indexing_policy", 0)
    if policy == 1:
        bank = bank ^ (row & (nbk - 1))
    elif policy == 2 and nbk in _IPOLY:
        bank = _ipoly(row, bank, nbk)
    elif policy != 0:
        notes.append(f"-dram_bnk_indexing_policy {policy} is not followed; banks taken as "
                     f"mapped")
    return chip * nbk + bank, row, notes


def _pack(mask: int, values: np.ndarray) -> np.ndarray:
    """The bits of ``values`` under ``mask``, packed low to high."""
    out = np.zeros_like(values)
    pos = 0
    for i in range(64):
        if mask >> i & 1:
            out |= ((values >> i) & 1) << pos
            pos += 1
    return out


def chase_row_waits(cfg: AccelSimConfig) -> tuple[list[int], list[str]]:
    """DRAM cycles each timed load of gpumem's chase (:data:`CHASE_TIMED_LINES` after
    :data:`CHASE_WARM_LINES`) waits for its row: 0 where its bank has that row open (a row
    hit), ``tRCD`` where the bank was never opened (activate), ``tRP + tRCD`` where another row
    is open (precharge, activate). Banks stay open (GPGPU-Sim closes a row only for another;
    no refresh): a bank holds the row of its last access, the warm-up's taken in chain order
    (its loads run slab by slab in it); and what was followed only in part."""
    t = dram_timing(cfg)
    lines = GLOBAL_BASE + CHASE_STRIDE * np.arange(CHASE_WARM_LINES + CHASE_TIMED_LINES,
                                                   dtype=np.int64)
    bank, row, notes = dram_banks(cfg, lines)
    w = CHASE_WARM_LINES
    open_row = dict(zip(bank[:w].tolist(), row[:w].tolist(), strict=True))
    waits = []
    for b, r in zip(bank[w:].tolist(), row[w:].tolist(), strict=True):
        now = open_row.get(b)
        waits.append(0 if now == r else t["RCD"] if now is None else t["RP"] + t["RCD"])
        open_row[b] = r
    return waits, notes


def miss_cycles(core: float, l2: float, dram: float, dram_latency: int,
                dram_cycles: float) -> float:
    """Core cycles an L2 miss reaches the L2's reply queue after a hit would, less
    ``dram_latency``; clocks in MHz, ``dram_cycles`` the DRAM cycles from the DRAM's request
    queue to the dram-to-L2 queue. Mean over :data:`_PHASES` consecutive core cycles of
    arrival; event by event (GPGPU-Sim's cycle ticks the DRAM before the L2 and both before
    the core, whose counter ``-dram_latency`` is counted on):

    the request leaves the ROP queue at the first L2 cycle its core cycle has come and is
    looked up at the next (a hit is in the reply queue then); a miss is in the L2-to-DRAM
    queue one L2 cycle later; the next DRAM cycle moves it to the latency queue, ready
    ``dram_latency`` core cycles on; the first DRAM cycle at or after that gives it to the
    DRAM; ``dram_cycles`` later it is in the dram-to-L2 queue; the next L2 cycle fills the
    line and the one after puts the reply in the queue."""
    ell, d = core / l2, core / dram
    eps = 1e-9
    ready = np.arange(1000.0, 1000.0 + _PHASES)
    looked_up = ell * (np.floor((ready - 1) / ell + eps) + 1) + ell
    to_dram = d * (np.floor((looked_up + ell) / d + eps) + 1)
    counted = np.ceil(to_dram - eps)  # core cycles done before that DRAM cycle
    given = d * (np.floor((counted + dram_latency - 1) / d + eps) + 1)
    filled = ell * np.ceil((given + dram_cycles * d) / ell - eps)
    return float(np.mean(filled + ell - looked_up - dram_latency))


def dram_cycles(cfg: AccelSimConfig) -> tuple[float, str, list[str]]:
    """Cycles the detailed DRAM model (``-gpgpu_simple_dram_model 0``) adds to a load of
    gpumem's latency chase that misses the L2, beyond ``-dram_latency``, in core cycles: the
    mean over the chase's timed loads of :func:`miss_cycles` with

        DRAM cycles = 1 + row + CL + columns + 1,

    1 from the DRAM's request queue to its bank (pushed at the end of a DRAM cycle, scheduled
    at the next; FR-FCFS and FIFO alike for a lone request); ``row`` the wait for the row
    (:func:`chase_row_waits`: 0, ``tRCD`` or ``tRP + tRCD``); ``CL`` the read pipe; ``columns``
    the column commands beyond the first, each ``max(tCCD, tCCDL)`` apart, where a DRAM atom
    (burst length x bus width x chips per channel) is smaller than the miss (a 32-B sector,
    or the line of an unsectored L2); 1 from the DRAM's return queue to the dram-to-L2 queue.
    Roughly ``2.5 x core/L2 clock - 0.5 + core/DRAM clock x (DRAM cycles + 1)``; the rest is
    the clocks' rounding. Nothing else enters for a lone dependent load: the data/command
    ratio, bus width and dual bus only set bandwidth, and no queue (scheduler, return,
    partition) fills. Returns (cycles, how, lines for what was followed only in part)."""
    m = cfg.merged()
    core, _icnt, l2, dram = cfg.clocks_mhz
    t = dram_timing(cfg)
    atom = (m.int("-gpgpu_dram_burst_length", 4) * m.int("-gpgpu_dram_buswidth", 4)
            * m.int("-gpgpu_n_mem_per_ctrlr", 1))
    try:
        dl2 = cfg.cache(_L2)
    except AccelSimConfigError:
        dl2 = None
    fetch = L2_SECTOR if dl2 is None or dl2.kind == "S" else dl2.line
    columns = (-(-fetch // max(1, atom)) - 1) * max(t["CCD"], t["CCDL"])
    waits, notes = chase_row_waits(cfg)
    latency = m.int("-dram_latency", 30)
    each = {w: miss_cycles(core, l2, dram, latency, 2 + w + t["CL"] + columns)
            for w in set(waits)}
    cycles = sum(each[w] for w in waits) / len(waits)
    hits = waits.count(0)
    misses = ", ".join(f"{waits.count(w)} waiting {w}" for w in sorted(set(waits) - {0}))
    how = (f"detailed DRAM model: CL {t['CL']}, core/DRAM clock {core / dram:.3g}, "
           f"{hits} of {len(waits)} chase loads row hits"
           + (f", {misses} DRAM cycles for their row" if misses else ""))
    return cycles, how, notes


def pipeline_cycles(cfg: AccelSimConfig, build: str = DETAILED_BUILD
                    ) -> tuple[PipelineCycles, list[str]]:
    """The cycles ``build`` adds to each level of ``cfg`` (see :data:`PIPELINE`), with a
    warning for each that is estimated rather than derived for a config like it.

    L1: +4 on every config measured. L2: :data:`L2_FIXED` + :data:`L2_PER_ICNT` x core /
    interconnect clock. DRAM: +1 under the simple DRAM model (fixed latency, measured);
    under the detailed one :func:`dram_cycles`, from the config's clocks, DRAM timing, burst
    and address mapping (warned where it follows the mapping only in part)."""
    base = PIPELINE.get(build)
    if base is None:
        return NO_PIPELINE, []
    warn: list[str] = []
    core, icnt, _l2, _dram = cfg.clocks_mhz
    l2 = round(L2_FIXED + L2_PER_ICNT * core / icnt, 1)
    if cfg.merged().bool("-gpgpu_simple_dram_model", False):
        dram = base.dram
        how = "simple DRAM model"
    else:
        try:
            cycles, how, notes = dram_cycles(cfg)
        except (AccelSimConfigError, ValueError) as e:
            dram, how, notes = 0.0, "detailed DRAM model, not added", []
            warn.append(f"DRAM latency: the detailed DRAM model's cycles cannot be derived "
                        f"({e}); none are added")
        else:
            dram = round(cycles, 1)
            warn += [f"DRAM latency: {note}, so the detailed DRAM model's +{dram:g} cycles "
                     f"are an estimate (`gpumem run latency --device accelsim` on it measures "
                     f"them)" for note in notes]
    return replace(base, l2=l2, dram=dram,
                   source=f"{base.source}; L2 +{l2:g} at core/interconnect clock "
                          f"{core / icnt:g}, DRAM +{dram:g} ({how})"), warn


def from_accelsim(cfg: AccelSimConfig, arch: str | None = None,
                  pipeline: PipelineCycles = NO_PIPELINE) -> tuple[SimConfig, list[str]]:
    """The built-in simulator's config for ``cfg``, and what could not be carried over.
    ``arch``: the architecture it names (None: the generic one of the config's compute
    capability, ``sm_XY``). ``pipeline``: the cycles the build adds (latencies then are what
    that build measures).

    Loads are routed as GPGPU-Sim routes them: with ``-gpgpu_gmem_skip_L1D 1`` global loads
    (paths ``ca``, ``cg``) go straight to the interconnect, paying no L1 latency, while
    ``.nc`` (``__ldg``) loads are still cached in the L1 (the configs' own comment)."""
    warn: list[str] = []
    m = cfg.merged()
    major = m.int("-gpgpu_compute_capability_major", 0)
    minor = m.int("-gpgpu_compute_capability_minor", 0)
    if arch is None:
        arch = f"sm_{major}{minor}" if major else "accelsim"
        warn.append(f"architecture '{arch}': " + (
            f"the generic one of the config's compute capability {major}.{minor}"
            if major else "the config names no compute capability") +
            " (import --arch names a plugin's instead)")
    skip_l1 = m.int("-gpgpu_gmem_skip_L1D", 0) != 0
    l1_lat = float(cfg.int("-gpgpu_l1_latency")) + pipeline.l1
    # a load that skips the L1 reaches the L2 without the L1's own latency
    l2_lat = (pipeline.l1 if skip_l1 else l1_lat) + cfg.int("-gpgpu_l2_rop_latency") \
        + pipeline.l2
    dram_lat = l2_lat + cfg.int("-dram_latency") + pipeline.dram
    if pipeline.source:
        warn.append(f"latencies: the options plus the cycles the build adds (L1 "
                    f"+{pipeline.l1:g}, L2 +{pipeline.l2:g}, DRAM +{pipeline.dram:g}; "
                    f"{pipeline.source})")
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
    cached = ["l1d", "l2"] if dl1 is not None else ["l2"]
    paths = {"ca": ["l2"] if skip_l1 else cached, "cg": ["l2"], "nc": cached}
    if tex is not None:
        paths["tex"] = ["tex_l1", "l2"]
    if skip_l1 and dl1 is not None:
        warn.append(f"-gpgpu_gmem_skip_L1D 1: global loads bypass the L1 (path 'ca' goes to "
                    f"the L2, at {l2_lat:g} cycles: no L1 latency), .nc loads are cached in "
                    f"it (path 'nc'); the simulator has one L2 latency for every path, so an "
                    f"L2 hit after an .nc miss is given the bypassing loads' {l2_lat:g} too "
                    f"(GPGPU-Sim adds the L1's {l1_lat:g})")
    warn.append("Accel-Sim models no TLB: the config has no TLB levels (and no page walk)")
    warn.append("write policies, MSHR sizes, interconnect and DRAM timing have no "
                "counterpart in gpumem's simulator and are dropped")
    threads, warp = cfg.sm_threads_and_warp
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
    warn.append(f"memory_bytes: an Accel-Sim config sets no memory size; "
                f"{sim.memory_bytes >> 30} GiB assumed (footprints above it are skipped)")
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
    t = translate(sim, base)
    return t.config, t.comments, t.warnings


@dataclass
class Translated:
    """A SimConfig written as Accel-Sim options: the config, a comment per option set from
    the SimConfig, the warnings, and per option the SimConfig parameters (paths as
    :class:`gpumem.api.simulator.Calibrated` names them: ``cache:l1d.hit_latency``) its value comes
    from."""

    config: AccelSimConfig
    comments: dict[str, str]
    warnings: list[str]
    params: dict[str, list[str]] = field(default_factory=dict)


class _Provenance:
    """Each SimConfig parameter as a comment names it: ``path = value``, and with
    ``sources`` (a calibration's) either the finding it was measured by or that it is the
    ``assumed`` config's value."""

    def __init__(self, sources: Mapping[str, str] | None, assumed: str) -> None:
        self.sources, self.assumed = sources, assumed
        self.params: dict[str, list[str]] = {}

    def __call__(self, options: tuple[str, ...], label: str,
                 *params: tuple[str, object]) -> str:
        for o in options:
            have = self.params.setdefault(o, [])
            have += [p for p, _v in params if p not in have]
        text = ", ".join(self.one(p, v) for p, v in params)
        return f"{label}: {text}" if label else text

    def one(self, path: str, value: object) -> str:
        v = f"{value:g}" if isinstance(value, float) else str(value)
        if self.sources is None:
            return f"SimConfig {path} = {v}"
        src = self.sources.get(path)
        return f"{path} = {v} (" + (f"measured: {src})" if src else f"assumed: {self.assumed})")


_SMS = ("-gpgpu_n_clusters", "-gpgpu_n_cores_per_cluster")
_CLOCKS = ("-gpgpu_clock_domains",)


def translate(sim: SimConfig, base: AccelSimConfig, sources: Mapping[str, str] | None = None,
              *, assumed: str = "", pipeline: PipelineCycles = NO_PIPELINE) -> Translated:
    """``base`` with the memory hierarchy of ``sim``. ``sources``: where each parameter of
    ``sim`` came from (a calibration's ``sources``); the comment of each option then names,
    for every parameter it is written from, the finding that measured it, or says the value
    is ``assumed`` (the config ``sim`` was calibrated from). ``pipeline``: the cycles the
    target build adds at each level, taken out of the latency options."""
    out = AccelSimConfig(base.gpgpusim.copy(), base.trace.copy(),
                         name=sim.name, source=f"gpumem SimConfig {sim.name} on {base.name}")
    comments: dict[str, str] = {}
    warn: list[str] = []
    put = _Writer(out, comments)
    why = _Provenance(sources, assumed or f"SimConfig {sim.name}")
    put.sms(sim.sm_count, why(_SMS, "", ("sm_count", sim.sm_count)))
    put.core_clock(sim.clock_mhz, why(_CLOCKS, "core clock", ("clock_mhz", sim.clock_mhz)))
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
    nearest = min(gpu, key=_hit)
    near = _hit(nearest)
    for c in gpu:
        if c.slices > 1:
            cells = [x for row in c.slice_latency for x in row]
            homed = (f"a table over {len(c.slice_table)} address classes" if c.slice_table
                     else "XOR masks [" + ", ".join(f"0x{m:x}" for m in c.slice_masks) + "]")
            warn.append(f"cache '{c.name}': its slice map ({c.slices} slices homed by {homed}, "
                        f"hits {min(cells):g}-{max(cells):g} cycles by SM and slice) "
                        f"cannot be expressed: Accel-Sim homes lines in its memory "
                        f"sub-partitions by its own hash (-gpgpu_memory_partition_indexing) "
                        f"at one L2 latency for every SM and slice; the "
                        f"median, {_hit(c):g} cycles, is written")
    if len(gpu) > 1 or l2.partitions > 1:
        far = max([c.far_latency or c.hit_latency for c in gpu] + [l2.hit_latency])
        warn.append(f"L2 near/far partitions (hits {near:g} and {far:g} cycles) cannot be "
                    f"expressed: one L2 of {l2.size} B at the near latency is written")
    for c in sim.caches:
        _policy_warnings(c, warn)

    def geometry(c: CacheLevel) -> tuple[tuple[str, object], ...]:
        return tuple((f"cache:{c.name}.{a}", getattr(c, a))
                     for a in ("size", "line", "ways", "sector"))

    if l1 is not None:
        put.l1(l1, why((_L1, "-gpgpu_unified_l1d_size"), f"L1 (cache '{l1.name}')",
                       *geometry(l1)), warn)
    put.l2(l2, why((_L2,), f"L2 (cache '{l2.name}', total; per slice = total / slices)",
                   *geometry(l2)), warn)
    near_param = f"cache:{nearest.name}." + ("slice_latency" if nearest.slices > 1
                                              else "hit_latency")
    l1_lat = (f"cache:{l1.name}.hit_latency", l1.hit_latency) if l1 else (near_param, near)
    l2_lat = (near_param, near)
    p = pipeline

    def less(what: str, cycles: float) -> str:
        return f"{what} - {cycles:g} cycles the build adds" if cycles else what

    put.set("-gpgpu_l1_latency", int(round(l1_lat[1] - p.l1)),
            why(("-gpgpu_l1_latency",), less("L1 hit", p.l1), l1_lat))
    if via_l1:
        put.set("-gpgpu_l2_rop_latency", int(round(near - l1_lat[1] - p.l2)),
                why(("-gpgpu_l2_rop_latency",), less("L2 hit - L1 hit", p.l2), l2_lat,
                    l1_lat))
    else:  # global loads skip the L1 (-gpgpu_gmem_skip_L1D 1): no L1 latency on the way
        put.set("-gpgpu_l2_rop_latency", int(round(near - p.l1 - p.l2)),
                why(("-gpgpu_l2_rop_latency",), less("L2 hit (global loads skip the L1)",
                                                     p.l1 + p.l2), l2_lat))
    put.set("-dram_latency", int(round(sim.dram.latency - near - p.dram)),
            why(("-dram_latency",), less("DRAM - L2 hit", p.dram),
                ("dram.latency", sim.dram.latency), l2_lat))
    if sim.dram.bandwidth_gbs:
        put.dram_bandwidth(sim.dram.bandwidth_gbs,
                           why(_CLOCKS, "", ("dram.bandwidth_gbs", sim.dram.bandwidth_gbs)))
    put.set("-gpgpu_shmem_num_banks", sim.smem.banks,
            why(("-gpgpu_shmem_num_banks",), "", ("smem.banks", sim.smem.banks)))
    put.set("-gpgpu_smem_latency", int(round(sim.smem.latency)),
            why(("-gpgpu_smem_latency",), "", ("smem.latency", sim.smem.latency)))
    if sim.tlbs:
        warn.append(f"{len(sim.tlbs)} TLB level(s) ({', '.join(t.name for t in sim.tlbs)}) "
                    f"and the page walk cannot be expressed: Accel-Sim models no TLB")
    if sim.path_latency:
        warn.append(f"path latencies {sim.path_latency} cannot be expressed")
    return Translated(out, comments, warn,
                      {o: ps for o, ps in why.params.items() if o in comments})


def _hit(c: CacheLevel) -> float:
    """A level's hit latency as Accel-Sim takes it (one number): a sliced level's median
    over every SM and line (a table's slices weighted by the classes each holds; XOR masks
    home as many lines in each), else its ``hit_latency``."""
    if c.slices > 1:
        classes = c.slice_table or range(c.slices)
        return float(statistics.median(row[s] for row in c.slice_latency for s in classes))
    return c.hit_latency


def _policy_warnings(c: CacheLevel, warn: list[str]) -> None:
    if c.policy not in ("lru", "fifo"):
        warn.append(f"cache '{c.name}': policy '{c.policy}' cannot be expressed (Accel-Sim "
                    f"has LRU and FIFO); LRU is written")
    if isinstance(c.ways, list):
        warn.append(f"cache '{c.name}': unequal sets {c.ways} cannot be expressed; "
                    f"{max(c.ways)} ways per set are written")
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
        cs = _string(base, kind, sets, line, ways, c.policy, warn, c.name, c.index.function)
        self.set(_L1, cs.format(), why + f": {c.size} B = {sets} sets x {line} B x {ways} ways")

    def l2(self, c: CacheLevel, why: str, warn: list[str]) -> None:
        base = self.cfg.cache(_L2)
        slices = self.cfg.l2_slices
        kind, line = _kind(c, warn)
        ways = max(c.way_list)
        per_slice = c.size // slices
        sets = per_slice // (line * ways)
        sets, ways = _pow2_sets(sets, ways, c.name, warn, lines=per_slice // line)
        if sets * line * ways * slices != c.size:
            warn.append(f"L2 of {c.size} B does not split into {slices} equal slices of whole "
                        f"sets; {sets * line * ways * slices} B is written")
        cs = _string(base, kind, sets, line, ways, c.policy, warn, c.name, c.index.function)
        self.set(_L2, cs.format(), why + f": {slices} slices x {sets} sets x {line} B x "
                                         f"{ways} ways = {sets * line * ways * slices} B")


def _kind(c: CacheLevel, warn: list[str]) -> tuple[str, int]:
    """('S', 128) for 128-B lines of 32-B sectors, ('N', line) otherwise."""
    if c.sector and c.sector < c.line:
        if c.line == 128 and c.sector == 32:
            return "S", 128
        warn.append(f"cache '{c.name}': {c.line}-B lines of {c.sector}-B sectors cannot be "
                    f"expressed (Accel-Sim sectors are 4 x 32 B of 128-B lines); an unsectored "
                    f"{c.line}-B line is written")
    return "N", c.line


def _pow2_sets(sets: int, ways: int, name: str, warn: list[str],
               lines: int = 0) -> tuple[int, int]:
    """Accel-Sim masks the set index, so sets must be a power of two: keep the capacity by
    moving the factor into the ways (the capacity of ``lines`` lines where given, which
    may hold a part of a set more)."""
    if sets > 0 and sets & (sets - 1) == 0:
        return sets, ways
    p = 1 << max(0, int(math.floor(math.log2(max(1, sets)))))
    new_ways = max(1, round((lines or sets * ways) / p))
    warn.append(f"cache '{name}': {sets} sets is not a power of two (Accel-Sim masks the index); "
                f"written as {p} sets x {new_ways} ways")
    return p, new_ways


def _string(base: CacheString | None, kind: str, sets: int, line: int, ways: int,
            policy: str, warn: list[str], name: str, index: str = "modulo") -> CacheString:
    """The base's cache string with a new geometry. The base's set-index function is kept
    where it allows the new set count (Fermi and IPOLY hashes need 16-64 sets), else the
    linear index is written; a level indexed otherwise than modulo (``index``, the
    SimConfig's function) is warned of, naming the index written."""
    cs = _geometry_string(base, kind, sets, line, ways, policy, warn, name)
    if index != "modulo":
        kept = ", the base config's" if base is not None and cs.set_index == base.set_index \
            else ""
        warn.append(f"cache '{name}': set index '{index}' cannot be expressed; "
                    f"'{cs.set_index}' ({_INDEX_NAMES.get(cs.set_index, 'unknown')}{kept}) "
                    f"is written")
    return cs


def _geometry_string(base: CacheString | None, kind: str, sets: int, line: int, ways: int,
                     policy: str, warn: list[str], name: str) -> CacheString:
    """:func:`_string`'s cache string, before its index warning."""
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
