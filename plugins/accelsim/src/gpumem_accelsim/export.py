"""A measured run as an Accel-Sim config: what gpumem found, written where Accel-Sim reads it.

Accel-Sim's own tuner pastes numbers from its microbenchmarks into a template and guesses the
L2 associativity; users then edit configs by hand and get them wrong. Here every value that a
run measured replaces the architecture plugin's base config value, and carries a comment
naming the finding it came from (value, experiment, confidence); every other option keeps the
base value and says so. The result is checked against the options the target simulator build
registers, so it never holds an option that build would reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpumem.api import CacheLevel, Finding, load_source

from gpumem_accelsim.config import AccelSimConfig
from gpumem_accelsim.known_options import VERSIONS, unknown_options
from gpumem_accelsim.translate import _L1, _L2, _Writer

DEFAULT_TARGET = VERSIONS[0]


@dataclass
class Exported:
    config: AccelSimConfig
    comments: dict[str, str]
    warnings: list[str]
    header: str


def _found(findings: dict[tuple[str, str], Finding], name: str,
           prefer: tuple[str, ...] = ()) -> tuple[Finding, str] | None:
    """The finding ``name`` and its experiment; from the first experiment of ``prefer`` that
    has it, else any."""
    hits = [(f, exp) for (exp, n), f in findings.items() if n == name]
    for exp in prefer:
        for f, e in hits:
            if e == exp:
                return f, e
    return hits[0] if hits else None


def _why(f: Finding, exp: str) -> str:
    value = f.value if not isinstance(f.value, float) else round(f.value, 2)
    return f"{f.name} = {value} {f.units} ({exp}, confidence {f.confidence:.2f})"


def export_run(run: Path, base: AccelSimConfig, *, target: str = DEFAULT_TARGET) -> Exported:
    """``base`` with everything ``run`` measured: options, comments, warnings, file header."""
    src = load_source(run)
    fs = src.findings
    out = AccelSimConfig(base.gpgpusim.copy(), base.trace.copy(), name=f"{src.label}",
                         source=f"gpumem export of {run}")
    comments: dict[str, str] = {}
    warn: list[str] = []
    put = _Writer(out, comments)
    dev = src.device
    if dev is not None and dev.sm_count:
        put.sms(dev.sm_count, f"device: {dev.sm_count} SMs ({dev.name})")
    if dev is not None and dev.clock_mhz:
        put.core_clock(dev.clock_mhz, f"device: SM clock {dev.clock_mhz:g} MHz")

    # L1: the structure search where it is sure of the size, else the ladder's knee
    base_l1 = base.cache(_L1)
    structure = _found(fs, "l1d.overflow_size", ("cache_structure",))
    ladder = _found(fs, "l1d.size", ("latency",))
    size_src = structure if structure and structure[0].confidence >= 0.9 else (ladder or
                                                                                structure)
    if size_src is not None and base_l1 is not None:
        size = int(size_src[0].value)
        line_f = _found(fs, "l1d.line", ("cache_structure",))
        sector_f = _found(fs, "l1d.sector", ("cache_structure",))
        ways_f = _found(fs, "l1d.ways", ("cache_structure",))
        line = int(line_f[0].value) if line_f else base_l1.line
        sector = int(sector_f[0].value) if sector_f else (32 if base_l1.kind == "S" else 0)
        ways = int(ways_f[0].value) if ways_f and not isinstance(ways_f[0].value, list) \
            else max(1, size // (line * max(1, base_l1.sets)))
        adaptive = base.adaptive_l1 and base.unified_l1_bytes > 0
        if not adaptive:  # whole sets of the base's count
            size = max(line * ways, size // (line * ways) * (line * ways))
        why = "; ".join(_why(*x) for x in (size_src, line_f, sector_f, ways_f) if x)
        if not line_f:
            why += f"; line {line} B from the base"
        if not ways_f and not adaptive:
            why += f"; {ways} ways from the base's sets ({base_l1.sets})"
        if structure and size_src is not structure:
            why += f" (the structure search's {_why(*structure)} marks where conflicts begin)"
        put.l1(CacheLevel("l1d", size, line, ways, 0.0, sector=sector), why, warn)
    # L2: capacity from the ladder, line from the scattered chases where measured; ways and
    # slices (not measurable behind a hashed index) from the base
    base_l2 = base.cache(_L2)
    l2f = _found(fs, "l2.size", ("latency",))
    if l2f is not None and base_l2 is not None:
        size = int(l2f[0].value)
        ways = base_l2.assoc
        l2_line = _found(fs, "l2.line", ("cache_structure",))
        line = int(l2_line[0].value) if l2_line else base_l2.line
        unit = line * ways * out.l2_slices
        rounded = max(unit, round(size / unit) * unit)
        why = (_why(*l2f) + (f"; {_why(*l2_line)}" if l2_line else
                             f"; line {line} B from the base")
               + f"; {ways} ways and {out.l2_slices} slices from the base")
        if rounded != size:
            why += f"; {size} B rounded to whole sets per slice ({rounded} B)"
        fill = _found(fs, "l2.fill_unit", ("cache_structure",))
        if fill:
            why += f"; {_why(*fill)} (a DRAM fetch granularity Accel-Sim does not model)"
        put.l2(CacheLevel("l2", rounded, line, ways, 0.0,
                          sector=32 if base_l2.kind == "S" else 0), why, warn)
    # latencies, in core cycles: Accel-Sim adds them level by level
    l1 = _found(fs, "lat.l1", ("latency",))
    l2 = _found(fs, "lat.l2", ("latency",))
    dram = _found(fs, "lat.dram", ("latency",))
    far = _found(fs, "lat.l2_far", ("latency",))
    if l1:
        put.set("-gpgpu_l1_latency", int(round(l1[0].value)), _why(*l1))
    if l1 and l2:
        put.set("-gpgpu_l2_rop_latency", int(round(l2[0].value - l1[0].value)),
                f"lat.l2 - lat.l1 = {l2[0].value:g} - {l1[0].value:g}")
        if far:
            warn.append(f"the far L2 partition ({_why(*far)}) cannot be expressed: Accel-Sim "
                        f"has one L2 latency; the near one is written")
    if l2 and dram:
        put.set("-dram_latency", int(round(dram[0].value - l2[0].value)),
                f"lat.dram - lat.l2 = {dram[0].value:g} - {l2[0].value:g}")
    smem = _found(fs, "lat.smem", ("smem_latency",))
    if smem:
        put.set("-gpgpu_smem_latency", int(round(smem[0].value)), _why(*smem))
    banks = _found(fs, "smem.banks", ("smem_latency",))
    if banks:
        put.set("-gpgpu_shmem_num_banks", int(banks[0].value), _why(*banks))
    # DRAM: the device's theoretical peak sets the DRAM clock over the base's channels
    if dev is not None and dev.peak_bandwidth_gbs:
        read = _found(fs, "bw.dram_read", ("bandwidth",))
        put.dram_bandwidth(dev.peak_bandwidth_gbs,
                           f"device peak {dev.peak_bandwidth_gbs:g} GB/s (memory clock x bus)"
                           + (f"; measured {_why(*read)}" if read else ""))
    tlb = _found(fs, "tlb_l1.entries", ("tlb_structure",))
    if tlb:
        warn.append(f"the TLB measurements ({_why(*tlb)}, ...) cannot be expressed: Accel-Sim "
                    f"models no TLB")
    # the target build must know every option
    for name in unknown_options(out.merged(), target):
        for part in (out.gpgpusim, out.trace):
            if name in part:
                part.remove(name)
        comments.pop(name, None)
        warn.append(f"option {name} of the base config is unknown to {target} and was left "
                    f"out (that build exits with 'Unknown Option')")
    for name in out.merged():
        comments.setdefault(name, f"base: {base.name}")
    header = (f"Accel-Sim config written by gpumem from the measured run {run}\n"
              f"device: {dev.name if dev else '?'}; architecture: {src.arch or '?'}; "
              f"target build: {target}\n"
              f"Options commented with a finding were measured; 'base: {base.name}' marks "
              f"values from the architecture plugin's base config ({base.source}).")
    return Exported(out, comments, warn, header)
