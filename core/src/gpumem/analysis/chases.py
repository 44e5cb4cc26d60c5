"""Logged fine-grained chases as data: the ``Chase`` record and its dataset form.

The pure half of a chase log, what the analysis reads; running the chases on a device is
:class:`gpumem.experiments.chaselog.ChaseLog`.


A structure search runs dozens of chases of up to hundreds of thousands of accesses, nearly
all of them hits. The log keeps, per chase, its parameters (path, stage, footprint, stride,
order, pattern, warm-up and record counts, timer overhead, median latency) and, per access,
only the *events*: accesses at or above the chase's event threshold (misses, and mis-timed
accesses), with their position in the record, element index and latency. Every other access
was below the threshold; which element it touched follows from the chain's definition
(:func:`gpumem.contracts.chains.chain_offsets`), so nothing an analysis needs is lost. A threshold
of
``-inf`` keeps every access (the small calibration chases).

A *paired* chase visits a pattern of (first, second) offsets, the second in the same 32-byte
sector as the first; its statistic is the pair difference (first minus second latency), which
cancels whatever the two share (the line's L2 slice, near or far) and leaves what only the
first pays (a TLB miss). For a paired chase the events are pairs: ``event_access`` is the
first access's position, ``event_latency`` the difference, and ``median_latency`` the median
difference.

Dataset schema (documented in docs/results.md): dimension ``chase`` with ``path``, ``stage``,
``footprint``, ``stride``, ``order``, ``warmup``, ``record``, ``timer_overhead``,
``median_latency``, ``event_threshold``, ``paired``, ``pattern_len``; dimension ``pattern_pos`` with
``pattern`` (chase, pattern_pos; -1 padded); dimension ``event`` with ``event_chase``,
``event_access``, ``event_index``, ``event_latency``. Latencies exclude the timer overhead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from gpumem.contracts.chains import chain_offsets

MAX_EVENTS_PER_CHASE = 200_000


@dataclass
class Chase:
    """One logged chase, as the analysis sees it."""

    number: int
    path: str
    stage: str
    footprint: int
    stride: int
    order: str
    warmup: int
    record: int
    timer_overhead: float
    median: float
    threshold: float
    pattern: tuple[int, ...]
    seed: int
    ev_access: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ev_index: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ev_latency: np.ndarray = field(default_factory=lambda: np.empty(0))
    paired: bool = False

    def elements(self) -> np.ndarray:
        """Element index of every recorded access (reconstructed from the chain)."""
        return chain_offsets(self.footprint, self.stride, self.order, self.seed, self.record,
                             start=self.warmup, pattern=self.pattern) // 4

    @property
    def per_pass(self) -> int:
        if self.order == "pattern":
            return len(self.pattern)
        return self.footprint // self.stride

    @property
    def observed(self) -> int:
        """Recorded accesses the events cover: all of them, unless the event log was cut at
        MAX_EVENTS_PER_CHASE (a chase that misses nearly always); then up to the last event
        kept, so that per-pass rates stay right."""
        if self.ev_access.size >= MAX_EVENTS_PER_CHASE:
            return int(self.ev_access[-1]) + 1
        return self.record

    def in_band(self, lo: float, hi: float) -> np.ndarray:
        """Mask of events whose latency lies in [lo, hi)."""
        return (self.ev_latency >= lo) & (self.ev_latency < hi)


def chases_to_dataset(chases: list[Chase]) -> xr.Dataset:
    n = len(chases)
    plen = max([len(c.pattern) for c in chases] + [1])
    pattern = np.full((n, plen), -1, np.int64)
    for i, c in enumerate(chases):
        pattern[i, :len(c.pattern)] = c.pattern
    ev_chase = np.concatenate([np.full(c.ev_access.size, c.number, np.int64) for c in chases]
                              or [np.empty(0, np.int64)])
    def cat(f: str, dt: type) -> np.ndarray:
        return np.concatenate([getattr(c, f) for c in chases] or [np.empty(0, dt)])

    def v(dim: str, data, units: str, long_name: str):
        return (dim, data, {"units": units, "long_name": long_name})

    ds = xr.Dataset(
        {
            "path": v("chase", np.array([c.path for c in chases], dtype=object), "",
                      "load path (ca, cg, nc, tex)"),
            "stage": v("chase", np.array([c.stage for c in chases], dtype=object), "",
                       "search stage the chase belongs to"),
            "footprint": v("chase", np.array([c.footprint for c in chases], np.int64), "byte",
                           "bytes spanned by the chain"),
            "stride": v("chase", np.array([c.stride for c in chases], np.int64), "byte",
                        "chain stride"),
            "order": v("chase", np.array([c.order for c in chases], dtype=object), "",
                       "chain order"),
            "warmup": v("chase", np.array([c.warmup for c in chases], np.int64), "1",
                        "untimed accesses before the record"),
            "record": v("chase", np.array([c.record for c in chases], np.int64), "1",
                        "timed accesses"),
            "seed": v("chase", np.array([c.seed for c in chases], np.int64), "1", "chain seed"),
            "timer_overhead": v("chase", np.array([c.timer_overhead for c in chases]), "cycle",
                                "timer overhead removed from every latency"),
            "median_latency": v("chase", np.array([c.median for c in chases]), "cycle",
                                "median latency of the recorded accesses"),
            "event_threshold": v("chase", np.array([c.threshold for c in chases]), "cycle",
                                 "accesses at or above this latency are kept as events"),
            "paired": v("chase", np.array([c.paired for c in chases], np.int8), "1",
                        "1: events and median are pair differences (first - second)"),
            "pattern": (("chase", "pattern_pos"), pattern,
                        {"units": "byte", "long_name": "pattern offsets (-1: none)"}),
            # compact types: a record fits 32 bits, an element index of a 4-byte chain too,
            # and a latency is a whole number of cycles (or a half: medians of pairs) far
            # below float32's 2^24 exact range
            "event_chase": v("event", ev_chase.astype(np.int32), "1",
                             "chase the event belongs to"),
            "event_access": v("event", cat("ev_access", np.int64).astype(np.int32), "1",
                              "position of the access in the record"),
            "event_index": v("event", _index_array(cat("ev_index", np.int64)), "1",
                             "element index read"),
            "event_latency": v("event", cat("ev_latency", float).astype(np.float32), "cycle",
                               "latency of the access, timer overhead removed"),
        },
        coords={"chase": np.arange(n), "pattern_pos": np.arange(plen),
                "event": np.arange(ev_chase.size)},
    )
    ds["point_status"] = ("chase", np.zeros(n, np.int8),
                          {"long_name": "outcome of each chase", "units": "1",
                           "flag_values": np.array([0, 1, 2], np.int8),
                           "flag_meanings": "ok skipped failed"})
    return ds


def _index_array(index: np.ndarray) -> np.ndarray:
    """Element indices as uint32 where they fit (4-byte chains: always), else int64."""
    if index.size == 0 or (index.min() >= 0 and index.max() < 1 << 32):
        return index.astype(np.uint32)
    return index


#: What a chase log must hold (per chase, per event), and what it may leave out, with the
#: value then taken (docs/results.md, "Chase logs").
REQUIRED = ("stage", "footprint", "stride", "record", "event_chase", "event_access",
            "event_index", "event_latency")
DEFAULTS = {"path": "ca", "order": "sequential", "warmup": 0, "timer_overhead": 0.0,
            "event_threshold": -np.inf, "paired": 0}


def check_chase_log(ds: xr.Dataset) -> None:
    """One-line errors for a chase log that cannot be analysed: a required variable missing,
    a random or scattered chase without its ``seed``, a pattern chase without ``pattern``,
    a chase without ``median_latency`` whose events are not every access."""
    from gpumem.contracts.errors import ResultsFileError

    missing = [v for v in REQUIRED if v not in ds.variables]
    if missing:
        raise ResultsFileError(f"chase log lacks {', '.join(repr(m) for m in missing)} "
                               f"(docs/results.md, 'Chase logs', lists what each needs)")
    orders = {str(o) for o in ds["order"].values} if "order" in ds else {"sequential"}
    if orders & {"random", "scattered"} and "seed" not in ds:
        raise ResultsFileError("chase log lacks 'seed': its random/scattered chains cannot "
                               "be rebuilt without it")
    if "pattern" in orders and "pattern" not in ds:
        raise ResultsFileError("chase log lacks 'pattern': its pattern chases visit offsets "
                               "it does not give")
    if "median_latency" not in ds and "event_threshold" in ds and \
            np.isfinite(ds["event_threshold"].values).any():
        raise ResultsFileError("chase log lacks 'median_latency' while keeping only some "
                               "accesses (event_threshold finite): give the median, or every "
                               "access with event_threshold -inf")


def chases_from_dataset(ds: xr.Dataset) -> list[Chase]:
    check_chase_log(ds)
    n = ds.sizes[ds["stage"].dims[0]]

    def col(name: str) -> np.ndarray:
        if name in ds:
            return ds[name].values
        return np.full(n, DEFAULTS.get(name, 0), dtype=object if name in ("path", "order")
                       else float if name in ("timer_overhead", "event_threshold") else int)

    out = []
    ev_chase = ds["event_chase"].values
    order = np.argsort(ev_chase, kind="stable")
    starts = np.searchsorted(ev_chase[order], np.arange(n + 1))
    path, order_, warm, ovh, thr, paired, seed = (col(c) for c in (
        "path", "order", "warmup", "timer_overhead", "event_threshold", "paired", "seed"))
    for i in range(n):
        sel = order[starts[i]:starts[i + 1]]
        pat = ds["pattern"].values[i] if "pattern" in ds else np.empty(0, np.int64)
        lat = ds["event_latency"].values[sel].astype(np.float64)
        med = float(ds["median_latency"].values[i]) if "median_latency" in ds else \
            float(np.median(lat)) if lat.size else float("nan")
        out.append(Chase(
            i, str(path[i]), str(ds["stage"].values[i]),
            int(ds["footprint"].values[i]), int(ds["stride"].values[i]),
            str(order_[i]), int(warm[i]), int(ds["record"].values[i]), float(ovh[i]),
            med, float(thr[i]), tuple(int(p) for p in pat[pat >= 0]), int(seed[i]),
            ds["event_access"].values[sel].astype(np.int64),
            ds["event_index"].values[sel].astype(np.int64), lat, bool(paired[i])))
    return out
