"""The generic architecture: any GPU that no installed plugin describes.

A dissection tool exists to measure what nobody has written down yet, so gpumem needs no
plugin to measure a GPU: a device of compute capability X.Y that no plugin claims is measured
as the architecture ``sm_XY`` (``sm_90``, ``sm_120``), named after it. Every experiment the
device supports runs (each experiment's probes say what it needs; the device says what it
offers), searches are sized from the device's own properties, and the expected values come
only from those properties, each with the property it rests on: the L2 size the device
reports, the memory bandwidth its memory clock and bus width allow, the warps an SM holds.
Everything else is honestly ``n/a`` until someone turns the measured GPU into a plugin
(``gpumem plugin new``).

:func:`choose_architecture` is ``--arch auto``: the plugin that claims the device's compute
capability, else the generic architecture, with one line saying which and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem.contracts.architecture import Architecture
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.findings import Expected

#: ``--arch`` for "choose for me": what gpumem run does without ``--arch``.
AUTO = "auto"

_NAME = re.compile(r"^sm_(\d+)(\d)$")
_CC = re.compile(r"^(\d+)\.(\d)$")


def is_compute_capability(text: str) -> bool:
    """Is ``text`` written 'major.minor' (such as 9.0): what a config or a run may record
    where it names a folder, a package or an architecture."""
    return re.fullmatch(r"\d{1,2}\.\d{1,2}", text) is not None


def generic_name(compute_capability: str) -> str:
    """``"9.0"`` -> ``"sm_90"``, ``"12.0"`` -> ``"sm_120"`` (CUDA's own spelling of a target)."""
    m = _CC.match(compute_capability.strip())
    if not m:
        raise ValueError(f"not a compute capability: {compute_capability!r} (e.g. 9.0)")
    return f"sm_{int(m[1])}{m[2]}"


def is_generic(name: str) -> bool:
    return bool(_NAME.match(name))


def generic_architecture(name: str) -> Architecture:
    """The generic architecture ``sm_XY`` (ValueError for a name of another shape)."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"not a generic architecture name: {name!r} (e.g. sm_90)")
    cc = f"{int(m[1])}.{m[2]}"
    return Architecture(
        name=name,
        description=f"any GPU of compute capability {cc} (gpumem's generic architecture: "
                    f"expected values only from the device's own properties)",
        compute_capabilities=(cc,), generic=True)


@dataclass(frozen=True)
class ArchChoice:
    """What ``--arch auto`` chose, and the one line that says why."""

    arch: Architecture
    why: str


def choose_architecture(claims: list[tuple[str, Architecture]], compute_capability: str,
                        what: str) -> ArchChoice:
    """The architecture of a device of ``compute_capability`` (``what`` names it in the
    line): the first plugin's (``claims``: (plugin name, architecture) in load order) that
    claims it, else the generic one."""
    owners = [(p, a) for p, a in claims if a.claims(compute_capability)]
    if owners:
        plugin, arch = owners[0]
        also = [a.name for _p, a in owners[1:]]
        return ArchChoice(arch, f"architecture {arch.name}: plugin '{plugin}' claims compute "
                                f"capability {compute_capability} of {what}"
                          + (f" (also claimed by: {', '.join(also)}; give --arch to choose)"
                             if also else ""))
    arch = generic_architecture(generic_name(compute_capability))
    return ArchChoice(arch, f"architecture {arch.name} (generic): no installed plugin claims "
                            f"compute capability {compute_capability} of {what}; every "
                            f"experiment the device supports runs, expected values come only "
                            f"from its own properties (gpumem plugin new turns the run into a "
                            f"plugin)")


def expected_values(device: DeviceInfo) -> list[Expected]:
    """What the device's own properties say its findings must be, each citing the property.

    The L2 size it reports is what a latency ladder's L2 plateau ends near (a band: the
    usable capacity of a hashed or partitioned L2 is measured a little short of it). Its
    theoretical memory bandwidth (memory clock x bus width x 2) bounds every DRAM stream from
    above; the warps an SM holds bound the occupancy of the shared-memory peak."""
    name = device.name or "the device"
    out: list[Expected] = []
    if device.l2_bytes:
        out.append(Expected(
            "l2.size", device.l2_bytes, f"device property L2CacheSize of {name} "
            f"({device.l2_bytes} B); band ASSUMED 15 %: a latency ladder's knee of a hashed or "
            f"partitioned L2 falls a little short of the whole", "byte", rel_tol=0.15))
    peak = device.peak_bandwidth_gbs
    if peak:
        how = (f"{device.memory_clock_mhz:g} MHz x {device.memory_bus_bits} bit x 2"
               if device.memory_clock_mhz and device.memory_bus_bits else "the config's DRAM "
               "bandwidth")
        prop = f"theoretical memory bandwidth of {name}: {peak:.1f} GB/s ({how})"
        for finding in ("bw.dram_read", "bw.dram_write", "bw.dram_copy", "bw.dram_read_bulk"):
            out.append(Expected(finding, round(peak, 1), f"at most the {prop}", "GB/s",
                                rel_tol=0.01, bound="max"))
        for finding in ("bw.dram_read_fraction", "bw.dram_read_bulk_fraction"):
            out.append(Expected(finding, 1.0, f"at most 1: a share of the {prop}", "1",
                                rel_tol=0.01, bound="max"))
    warps = int(device.extra.get("max_warps_per_sm", 0) or 0)
    if warps:
        out.append(Expected("smem.peak_warps", warps, f"at most the {warps} warps an SM of "
                            f"{name} holds (device property MaxThreadsPerMultiProcessor / 32)",
                            "1", rel_tol=0.0, bound="max"))
    return out
