"""Reading Accel-Sim's standard output: per-kernel statistics, or why the run failed.

Accel-Sim prints a block of ``key = value`` statistics each time a kernel finishes
(``kernel_name = ...`` first). Most counters in it accumulate over the whole run, not the
kernel: ``gpu_tot_*``, the L1D / L2 totals, ``total dram reads`` and the cache breakdown
tables. :func:`parse_log` therefore returns each kernel's own share, the difference from the
previous kernel's block, next to the numbers as printed. Builds with per-stream statistics
(Aug 2024 on) print the breakdown tables of the finished kernel's CUDA stream only, so those
are differenced against the previous kernel of the same stream; a table printed once per
stream within one block is summed. ``averagemflatency`` is a running mean over the run and is
kept as printed.

A run that did not finish normally (deadlock, option error, abort, assertion, an unsupported
trace, or a log without ``*** exit detected ***``) raises :class:`AccelSimRunError` with a
one-line message.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpumem.api import GpumemError

EXIT_LINE = "GPGPU-Sim: *** exit detected ***"

#: Totals lines of the L1D and L2 caches (``\tL1D_total_cache_accesses = 8``).
CACHE_TOTAL_KEYS = ("accesses", "misses", "miss_rate", "pending_hits", "reservation_fails")
_COUNTER_TOTALS = ("accesses", "misses", "pending_hits", "reservation_fails")

#: Failures recognised in a log: (pattern, message prefix). The first match wins.
_FAILURES = (
    (re.compile(r"ERROR \*\* deadlock detected.*"), "Accel-Sim deadlocked"),
    (re.compile(r"GPGPU-Sim \*\* ERROR: Unknown Option: .*"), "Accel-Sim rejected an option"),
    (re.compile(r"Cannot parse value .*"), "Accel-Sim rejected an option value"),
    (re.compile(r"unsupported binary version: .*"), "Accel-Sim cannot run this trace"),
    (re.compile(r"ERROR: +undefined instruction.*"), "Accel-Sim cannot run this trace"),
    (re.compile(r"Unable to open file: .*"), "Accel-Sim cannot read the trace"),
    (re.compile(r".*Assertion .* failed\.?"), "Accel-Sim aborted"),
    (re.compile(r"GPGPU-Sim PTX: ERROR.*|GPGPU-Sim uArch: ERROR.*|.*\bAborted\b.*"),
     "Accel-Sim aborted"),
)

_KV = re.compile(r"^\s*([A-Za-z_][\w\[\]]*(?: [\w\[\]]+)*)\s*=\s*(.*?)\s*$")
_BREAKDOWN = re.compile(r"^\s*(Total_core_cache_stats_breakdown|L2_cache_stats_breakdown)"
                        r"\[(\w+)\]\[(\w+)\]\s*=\s*(\d+)\s*$")
_CACHE_TOTAL = re.compile(r"^\s*(L1D|L2)_total_cache_(\w+)\s*=\s*(\S+)\s*$")
_PARTITION = re.compile(r"^Memory Partition \d+:")
_RATE = re.compile(r"^gpgpu_simulation_rate\s*=\s*(\d+)\s*\((inst|cycle)/sec\)")
_SIM_TIME = re.compile(r"^gpgpu_simulation_time\s*=.*\((\d+) sec\)")
_ACCELSIM_BUILD = re.compile(r"^Accel-Sim \[build ([^\]]+)\]")
_GPGPUSIM_VERSION = re.compile(r"GPGPU-Sim Simulator Version (\S+)\s+\[build ([^\]]+)\]")


class AccelSimRunError(GpumemError):
    """Accel-Sim did not finish normally; ``str(err)`` is one line saying why."""


@dataclass
class KernelStats:
    """Statistics of one finished kernel.

    ``l1d`` and ``l2`` hold this kernel's ``accesses``, ``misses``, ``pending_hits``,
    ``reservation_fails`` and ``miss_rate`` (misses / accesses, NaN without accesses);
    ``core_breakdown`` and ``l2_breakdown`` map (access type, status) to this kernel's counts
    (``("GLOBAL_ACC_R", "HIT")``...); ``dram_reads`` is this kernel's DRAM reads.
    ``printed`` keeps every scalar of the block exactly as printed (cumulative ones too).
    """

    kernel_name: str
    kernel_launch_uid: int
    stream_id: int | None
    gpu_sim_cycle: int
    gpu_sim_insn: int
    gpu_tot_sim_cycle: int
    gpu_tot_sim_insn: int
    averagemflatency: float
    dram_reads: int
    l1d: dict[str, float]
    l2: dict[str, float]
    core_breakdown: dict[tuple[str, str], int]
    l2_breakdown: dict[tuple[str, str], int]
    printed: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class AccelSimLog:
    """A parsed run: versions, the kernels in completion order, and the simulation speed
    (``simulation_seconds`` has Accel-Sim's 1 s resolution; ``silicon_slowdown`` is NaN where
    the build prints ``Nan``)."""

    accelsim_build: str
    gpgpusim_version: str
    gpgpusim_build: str
    kernels: list[KernelStats]
    simulation_seconds: float = math.nan
    rate_inst_per_s: float = math.nan
    rate_cycle_per_s: float = math.nan
    silicon_slowdown: float = math.nan

    def kernel(self, uid: int) -> KernelStats:
        """The kernel whose ``kernel_launch_uid`` is ``uid``."""
        for k in self.kernels:
            if k.kernel_launch_uid == uid:
                return k
        raise KeyError(f"no kernel with launch uid {uid} in this log "
                       f"(uids: {', '.join(str(k.kernel_launch_uid) for k in self.kernels)})")


def check_log(text: str, returncode: int | None = None) -> None:
    """Raise :class:`AccelSimRunError` unless ``text`` is the log of a run that finished."""
    lines = text.splitlines()
    for pattern, what in _FAILURES:
        for line in lines:
            m = pattern.search(line)
            if m:
                raise AccelSimRunError(f"{what}: {_one_line(m.group(0))}")
    if EXIT_LINE not in text:
        tail = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
        rc = f" (exit status {returncode})" if returncode not in (None, 0) else ""
        raise AccelSimRunError(f"Accel-Sim stopped before '*** exit detected ***'{rc}; "
                               f"last line: {_one_line(tail) or '(empty log)'}")
    if returncode not in (None, 0):
        raise AccelSimRunError(f"Accel-Sim exited with status {returncode} after a complete "
                               f"log")


def _one_line(s: str, limit: int = 200) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _number(s: str) -> float:
    s = s.strip().rstrip("%x").strip()
    try:
        return float(s)
    except ValueError:
        return math.nan


@dataclass
class _Block:
    printed: dict[str, str] = field(default_factory=dict)
    core: dict[tuple[str, str], int] = field(default_factory=dict)
    l2b: dict[tuple[str, str], int] = field(default_factory=dict)
    caches: dict[str, dict[str, float]] = field(default_factory=lambda: {"L1D": {}, "L2": {}})


def parse_log(text: str, returncode: int | None = None) -> AccelSimLog:
    """Per-kernel statistics of a finished run (see the module docstring); raises
    :class:`AccelSimRunError` for a run that failed, and for a log without kernels."""
    check_log(text, returncode)
    accelsim_build = gpgpusim_version = gpgpusim_build = ""
    blocks: list[_Block] = []
    rates: dict[str, float] = {}
    seconds = math.nan
    slowdown = math.nan
    cur: _Block | None = None
    in_partition = False
    for line in text.splitlines():
        # per memory partition DRAM details repeat the same keys 32 times or more: skipped
        if _PARTITION.match(line):
            in_partition = True
        if in_partition:
            in_partition = not line.startswith("mrqq:")
            continue
        if not accelsim_build and (m := _ACCELSIM_BUILD.search(line)):
            accelsim_build = m.group(1)
            continue
        if not gpgpusim_version and (m := _GPGPUSIM_VERSION.search(line)):
            gpgpusim_version, gpgpusim_build = m.group(1), m.group(2)
            continue
        if line.startswith("kernel_name = "):
            cur = _Block()
            blocks.append(cur)
        if m := _RATE.match(line):
            rates[m.group(2)] = float(m.group(1))
            continue
        if m := _SIM_TIME.match(line):
            seconds = float(m.group(1))
            continue
        if line.startswith("gpgpu_silicon_slowdown"):
            slowdown = _number(line.split("=", 1)[1])
            continue
        if cur is None:
            continue
        if m := _BREAKDOWN.match(line):
            table = cur.core if m.group(1).startswith("Total") else cur.l2b
            key = (m.group(2), m.group(3))
            table[key] = table.get(key, 0) + int(m.group(4))  # one table per stream: summed
            continue
        if m := _CACHE_TOTAL.match(line):
            cur.caches[m.group(1)][m.group(2)] = _number(m.group(3))
        if m := _KV.match(line):
            cur.printed.setdefault(m.group(1), m.group(2))
    if not blocks:
        raise AccelSimRunError("Accel-Sim finished without completing a kernel "
                               "(no 'kernel_name =' block in its output)")
    kernels = _per_kernel(blocks)
    return AccelSimLog(accelsim_build, gpgpusim_version, gpgpusim_build, kernels,
                       simulation_seconds=seconds,
                       rate_inst_per_s=rates.get("inst", math.nan),
                       rate_cycle_per_s=rates.get("cycle", math.nan),
                       silicon_slowdown=slowdown)


def parse_file(path: str | Path, returncode: int | None = None) -> AccelSimLog:
    """:func:`parse_log` of a log file."""
    return parse_log(Path(path).read_text(errors="replace"), returncode)


def _int(printed: dict[str, str], key: str) -> int:
    v = _number(printed.get(key, "nan"))
    if math.isnan(v):
        raise AccelSimRunError(f"Accel-Sim's kernel statistics lack '{key} ='")
    return int(v)


def _diff(now: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in now.items()}


def _cache(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    out = {k: now.get(k, 0.0) - before.get(k, 0.0) for k in _COUNTER_TOTALS}
    out["miss_rate"] = out["misses"] / out["accesses"] if out["accesses"] > 0 else math.nan
    return out


def _per_kernel(blocks: list[_Block]) -> list[KernelStats]:
    kernels = []
    prev: _Block | None = None
    prev_in_stream: dict[int | None, _Block] = {}
    empty = _Block()
    for b in blocks:
        p = b.printed
        stream = int(p["kernel_stream_id"]) if "kernel_stream_id" in p else None
        last = prev or empty
        last_stream = prev_in_stream.get(stream, empty)
        dram_now = int(_number(p.get("total dram reads", "0")))
        dram_before = int(_number(last.printed.get("total dram reads", "0")))
        kernels.append(KernelStats(
            kernel_name=p.get("kernel_name", "").strip(),
            kernel_launch_uid=_int(p, "kernel_launch_uid"),
            stream_id=stream,
            gpu_sim_cycle=_int(p, "gpu_sim_cycle"),
            gpu_sim_insn=_int(p, "gpu_sim_insn"),
            gpu_tot_sim_cycle=_int(p, "gpu_tot_sim_cycle"),
            gpu_tot_sim_insn=_int(p, "gpu_tot_sim_insn"),
            averagemflatency=_number(p.get("averagemflatency", "nan")),
            dram_reads=dram_now - dram_before,
            l1d=_cache(b.caches["L1D"], last.caches["L1D"]),
            l2=_cache(b.caches["L2"], last.caches["L2"]),
            core_breakdown=_diff(b.core, last_stream.core),
            l2_breakdown=_diff(b.l2b, last_stream.l2b),
            printed=dict(p),
        ))
        prev = b
        prev_in_stream[stream] = b
    return kernels
