"""Contention: another process used the GPU while gpumem measured (issue 30).

A GPU shared with another job gives numbers that describe the sharing, not the hardware: on
an H200 whose neighbour copied a 2 GB buffer in a loop, L2 hits took 410 cycles instead of
283, a chase access waited 2.6 million cycles (1.3 ms) for the neighbour's time slice, one
DRAM read of ten ran at half speed, and ``latency`` reported a 1.46 MB L2
(``benchmarks/contention_probe.py``). Two kinds of evidence, both kept in the raw file:

* **the neighbour, seen**: NVML's other processes beside each point
  (``point_other_active_processes_before/_after`` and ``point_contended``, see
  :meth:`gpumem.contracts.device.Device.point_state`), and for every experiment at its start, its
  end
  and, in an adaptive search (which has no grid points), every 0.25 s of it (:class:`Watch`:
  the raw file's ``gpumem_neighbour_looks`` and ``gpumem_neighbour_seen``);
* **the data**: a chase access longer than :data:`GAP_S` (no load waits that long on an
  idle GPU: the H200's slowest, a TLB miss to DRAM, takes under 1 µs; only another
  context's time slice does), and bandwidth points whose repeats scatter far beyond the
  experiment's usual spread, in more than a stray point (:data:`SCATTER_MIN`,
  :data:`SCATTER_FACTOR`, :data:`SCATTER_POINTS`: an idle H200 has one such point in 720,
  always the same read configuration, so one is not evidence).

An experiment with either is *contended*: each of its findings gets the status
:data:`CONTENDED` (neither pass nor fail: the value may be right, the data cannot say), the
reason in its note; ``gpumem run`` prints one line and ``--check`` exits 1. The reason is
stored in the raw file's ``gpumem_contention`` attribute, so a later analysis of the file
marks the same findings (:func:`reapply`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import xarray as xr

from gpumem.contracts.errors import GpumemError
from gpumem.contracts.findings import CONTENDED, CONTENDED_PREFIX, NOT_MODELLED

#: a chase access this long (seconds) is a time slice of another context, not a load
GAP_S = 20e-6
#: a bandwidth point's repeats scatter beyond usual when (max - min) / median exceeds this
#: and :data:`SCATTER_FACTOR` times the experiment's median scatter (an idle H200: at most
#: 0.05; with a neighbour copying 2 GB: 0.51)
SCATTER_MIN = 0.25
SCATTER_FACTOR = 5.0
#: ... and an experiment's scattered points count only from this many, and this fraction
#: of its points (five committed idle H200 runs: 1 of 720 each)
SCATTER_POINTS = 3
SCATTER_FRACTION = 0.02
#: the plan attribute naming the axis whose values scatter each their own way (the raw file
#: stores it as ``plan_`` + this, as every plan attribute)
SCATTER_BY = "gpumem_scatter_by"
#: ... and the values of that axis whose points scatter by themselves (not evidence)
SCATTER_INHERENT = "gpumem_scatter_inherent"
#: the raw file's attribute holding the reason (empty: none seen)
ATTR = "gpumem_contention"
#: how often a :class:`Watch` looks during an adaptive search (seconds)
WATCH_EVERY_S = 0.25


@dataclass(frozen=True)
class Neighbour:
    """Another process on the GPU: what the device (NVML) says of it. ``busy_pct`` is the
    larger of its SM and memory-controller shares in the latest sample (a neighbour that
    only copies shows in the memory's), ``None`` where the driver gives no per-process
    samples (then ``active`` is assumed). Any share counts: even 1 % may be a burst of
    DRAM traffic that empties the caches under a chase."""

    pid: int
    name: str
    used_bytes: int
    kind: str                      # compute, graphics or mps
    busy_pct: float | None = None

    @property
    def active(self) -> bool:
        return self.busy_pct is None or self.busy_pct > 0

    def describe(self) -> str:
        """``pid 517 python3, 4.8 GB, 24 % busy`` (the name's last path part)."""
        name = self.name.rsplit("/", 1)[-1] or "?"
        parts = [f"pid {self.pid} {name}"]
        if self.used_bytes:
            parts.append(f"{self.used_bytes / 1e9:.1f} GB")
        if self.busy_pct is not None:
            parts.append(f"{self.busy_pct:g} % busy")
        return ", ".join(parts)


def describe_all(neighbours: Sequence[Neighbour], limit: int = 3) -> str:
    """The neighbours in a few words: ``pid 517 python3, 4.8 GB; pid 9 ... (+2 more)``."""
    text = "; ".join(nb.describe() for nb in neighbours[:limit])
    more = len(neighbours) - limit
    return text + (f" (+{more} more)" if more > 0 else "")


@dataclass(frozen=True)
class Contention:
    """What an experiment's raw data says of other work on the GPU."""

    seen_points: int = 0       # points where the device saw another active process
    read_points: int = 0       # points where the device could look
    seen_looks: int = 0        # looks of a Watch that saw one
    looks: int = 0             # looks of a Watch
    gap_chases: int = 0        # chases with an access longer than GAP_S
    gap_max_s: float = 0.0     # the longest such access
    scattered: int = 0         # bandwidth points scattered beyond usual
    measured: int = 0          # bandwidth points with repeats
    who: str = ""              # the neighbours the device named

    @property
    def found(self) -> bool:
        return bool(self.seen_points or self.seen_looks or self.gap_chases or self.scattered)

    def reason(self) -> str:
        """One phrase: what was seen, for notes, the run's line and ``--check``."""
        parts = []
        who = f" ({self.who})" if self.who else ""
        if self.seen_points:
            parts.append(f"another process used the GPU{who} during {self.seen_points} of "
                         f"{self.read_points} points")
        elif self.seen_looks:
            parts.append(f"another process used the GPU{who} in {self.seen_looks} of "
                         f"{self.looks} looks during the experiment")
        if self.gap_chases:
            parts.append(f"{self.gap_chases} chase(s) waited up to "
                         f"{self.gap_max_s * 1e3:.2f} ms on one access (another context's "
                         f"time slice)")
        if self.scattered:
            parts.append(f"{self.scattered} of {self.measured} bandwidth point(s) scattered "
                         f"far beyond the run's usual spread")
        return "; ".join(parts)


def _units(var: xr.DataArray) -> str:
    return str(var.attrs.get("gpumem_units", var.attrs.get("units", "")))


def _seen(raw: xr.Dataset) -> tuple[int, int]:
    """(points flagged ``point_contended``, points where the device looked)."""
    if "point_contended" not in raw:
        return 0, 0
    flag = np.asarray(raw["point_contended"].values)
    return int((flag == 1).sum()), int((flag >= 0).sum())


def _gaps(raw: xr.Dataset) -> tuple[int, float]:
    """(chases with an access longer than GAP_S, the longest in seconds)."""
    clock = float(raw.attrs.get("clock_mhz", 0) or 0)
    if clock <= 0:
        return 0, 0.0
    limit = GAP_S * clock * 1e6
    chases, longest = 0, 0.0
    for name, var in raw.data_vars.items():
        if _units(var) not in ("cycle", "cycles") or not np.issubdtype(var.dtype, np.number):
            continue
        if var.dims == ("event",):  # a chase log's events: which chases had a slice
            over = np.asarray(var.values, float) > limit
            if over.any():
                ids = raw["event_chase"].values[over] if "event_chase" in raw and \
                    raw["event_chase"].dims == ("event",) else np.flatnonzero(over)
                chases += len(np.unique(ids))
                longest = max(longest, float(np.nanmax(var.values)) / (clock * 1e6))
            continue
        if "access" not in var.dims or name == "timer_overhead":
            continue
        var = var.astype(float)
        lat = var
        if "timer_overhead" in raw and set(raw["timer_overhead"].dims) <= set(var.dims):
            lat = var - raw["timer_overhead"]
        chases += int((lat > limit).any("access").sum())
        top = float(lat.max(skipna=True)) if lat.size else 0.0
        if np.isfinite(top) and top > limit:
            longest = max(longest, top / (clock * 1e6))
    return chases, longest


def _scatter(raw: xr.Dataset) -> tuple[int, int]:
    """(bandwidth points whose repeats scatter far beyond the experiment's usual, points);
    the usual spread per value of the :data:`SCATTER_BY` axis where the file names one, its
    :data:`SCATTER_INHERENT` values left out."""
    scattered = measured = 0
    by = str(_plan_attr(raw, SCATTER_BY, "") or "")
    inherent = {str(v) for v in np.atleast_1d(_plan_attr(raw, SCATTER_INHERENT, []))}
    for var in raw.data_vars.values():
        if "repeat" not in var.dims or var.sizes["repeat"] < 3 or \
                _units(var) not in ("GB/s", "Gbyte/s"):
            continue
        kinds = [var.isel({by: i}) for i in range(var.sizes[by])
                 if str(var[by].values[i]) not in inherent] if by in var.dims else [var]
        for kind in kinds:
            n, m = _scattered(kind)
            scattered, measured = scattered + n, measured + m
    if scattered < max(SCATTER_POINTS, SCATTER_FRACTION * measured):
        scattered = 0  # a stray point: idle GPUs have them too
    return scattered, measured


def _plan_attr(raw: xr.Dataset, name: str, default: Any) -> Any:
    """An experiment's plan attribute as a run stores it (``plan_`` + name)."""
    return raw.attrs.get(f"plan_{name}", default)


def _scattered(var: xr.DataArray) -> tuple[int, int]:
    """(points of ``var`` scattered beyond its usual spread, points with repeats)."""
    v = var.values.astype(float)
    axis = var.dims.index("repeat")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a point that did not run
        med = np.nanmedian(v, axis=axis)
        spread = (np.nanmax(v, axis=axis) - np.nanmin(v, axis=axis)) / med
    spread = spread[np.isfinite(spread)]
    if spread.size == 0:
        return 0, 0
    usual = float(np.median(spread))
    return int((spread > max(SCATTER_MIN, SCATTER_FACTOR * usual)).sum()), int(spread.size)


def assess(raw: xr.Dataset, who: str = "") -> Contention:
    """What ``raw`` says of other work on the GPU (see the module docstring)."""
    seen, read = _seen(raw)
    seen_looks = int(raw.attrs.get("gpumem_neighbour_seen", 0) or 0)
    looks = int(raw.attrs.get("gpumem_neighbour_looks", 0) or 0)
    gap_chases, gap_max = _gaps(raw)
    scattered, measured = _scatter(raw)
    return Contention(seen, read, seen_looks, looks, gap_chases, gap_max, scattered,
                      measured, who if seen or seen_looks else "")


class Watch:
    """Looks for other processes through ``look`` (``Device.neighbours``): at an
    experiment's start and end (``force``) and, from an adaptive search's progress, at most
    every :data:`WATCH_EVERY_S` (not ``timed``: only when forced; a simulator's neighbour
    does not come and go, and a count of looks that followed the wall clock would make its
    files differ from run to run). ``looks``: the looks that could list processes,
    ``seen``: those that found an active one."""

    def __init__(self, look: Callable[[], list[Neighbour] | None], *, timed: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._look, self._clock, self._timed = look, clock, timed
        self._last = -float("inf")
        self.looks = self.seen = 0

    def sample(self, force: bool = False) -> None:
        now = self._clock()
        if not force and (not self._timed or now - self._last < WATCH_EVERY_S):
            return
        self._last = now
        nbs = self._look()
        if nbs is None:
            return
        self.looks += 1
        self.seen += any(nb.active for nb in nbs)

    def attrs(self) -> dict[str, int]:
        """The raw file's record of the looks (none: nothing, the device cannot look)."""
        return {"gpumem_neighbour_looks": self.looks,
                "gpumem_neighbour_seen": self.seen} if self.looks else {}


def mark(findings: Sequence[Any], reason: str) -> list[Any]:
    """``findings`` with each judged one (not a simulator's unmodelled finding) marked
    :data:`CONTENDED`, ``reason`` in its note."""
    if not reason:
        return list(findings)
    note = f"{CONTENDED_PREFIX}{reason}"
    return [f if f.status in (NOT_MODELLED, CONTENDED) else
            replace(f, status=CONTENDED, note=f"{f.note}; {note}" if f.note else note,
                    reason=f"another process on the GPU: {reason}")
            for f in findings]


def reapply(findings: Sequence[Any], attrs: Mapping[str, Any]) -> list[Any]:
    """Mark ``findings`` as the run that measured them was (its ``gpumem_contention``):
    re-judging a contended run against expected values must not turn it into a pass."""
    return mark(findings, str(attrs.get(ATTR, "") or ""))


class DeviceBusy(GpumemError):
    """``--exclusive``: another process kept using the GPU for the whole wait."""

    exit_code = 75  # EX_TEMPFAIL (sysexits.h): busy now, try again later


def check_wait(wait_s: float) -> None:
    """``--exclusive``'s wait: a finite number of seconds >= 0 (NaN or inf would wait for a
    busy GPU forever: ``waited >= nan`` is never true)."""
    if not 0 <= wait_s < math.inf:
        from gpumem.contracts.errors import UsageError

        raise UsageError(f"--exclusive {wait_s:g}: give the seconds to wait, a finite number "
                         f">= 0")


def wait_until_free(look: Callable[[], list[Neighbour] | None], wait_s: float,
                    say: Callable[[str], None], *, poll_s: float = 0.5,
                    clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> None:
    """``gpumem run --exclusive SECONDS``: return once no other process is active on the GPU,
    waiting up to ``wait_s``; raise :class:`DeviceBusy` naming them otherwise. A device
    that cannot list other processes (``look`` answers ``None``) is refused at once: an
    exclusive run cannot be promised there."""
    check_wait(wait_s)
    start = clock()
    told = False
    while True:
        nbs = look()
        if nbs is None:
            raise DeviceBusy("--exclusive: the device cannot list other processes (no NVML), "
                             "so gpumem cannot tell that the GPU is free")
        busy = [nb for nb in nbs if nb.active]
        if not busy:
            return
        waited = clock() - start
        if waited >= wait_s:
            raise DeviceBusy(f"--exclusive: the GPU was still in use after {waited:.0f} s "
                             f"by {describe_all(busy)}; nothing was measured")
        if not told:
            say(f"--exclusive: waiting up to {wait_s:g} s for {describe_all(busy)} to "
                f"leave the GPU")
            told = True
        sleep(min(poll_s, max(0.0, wait_s - waited)))
