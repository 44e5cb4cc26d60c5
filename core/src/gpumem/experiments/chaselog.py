"""``ChaseLog``: runs the fine-grained chases of an adaptive search and logs them compactly
(only the events: see :mod:`gpumem.analysis.chases`, which holds the record and its dataset form).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import xarray as xr

from gpumem.analysis.chases import MAX_EVENTS_PER_CHASE, Chase, chases_to_dataset
from gpumem.contracts.device import ChaseRequest, ChaseResult
from gpumem.contracts.errors import PointSkipped


def median(x: np.ndarray) -> float:
    """``np.median(x)``, bit for bit, in a fifth of the time for a long chase: the two middle
    order statistics are read off a sorted copy (NumPy's vectorised sort) instead of a
    partition (np.median on 1.3 M latencies: ~25 ms a chase, most of an adaptive search's
    main-thread time), and averaged by the same ``np.mean``. NaN, short chases: np.median."""
    if x.size < 4096:
        return float(np.median(x))
    s = np.sort(x, axis=None)
    if np.isnan(s[-1]):  # NaN sorts last: np.median's own NaN result
        return float(np.median(x))
    k = (s.size - 1) // 2
    return float(np.mean(s[k:k + 2] if s.size % 2 == 0 else s[k:k + 1]))


class ChaseRunner(Protocol):
    """What the log runs chases on: a :class:`~gpumem.contracts.device.Device`, or a
    stand-in for one (the cache-structure search's ``Ahead``)."""

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult: ...


class ChaseLog:
    """Runs chases on a device and logs them; ``dataset()`` is the raw data to store."""

    def __init__(self, device: ChaseRunner, seed: int = 0, progress=None) -> None:
        self.device = device
        self.seed = seed
        self.progress = progress or (lambda n: None)
        self.chases: list[Chase] = []

    def run(self, *, path: str, stage: str, footprint: int, stride: int, passes: float = 1,
            warmup: int | None = None, order: str = "sequential", threshold: float = -np.inf,
            pattern: tuple[int, ...] = (), record: int | None = None, paired: bool = False,
            placement: int = 0) -> Chase | None:
        """One chase: ``warmup`` accesses (default one pass), then ``passes`` passes recorded.
        ``paired``: a pattern chase of (first, second) offsets, logged as pair differences.
        ``placement``: the chain behind that placement pad (``ChaseRequest.placement``).

        Returns ``None`` (and logs nothing) when the device skips the footprint.
        """
        if paired and (order != "pattern" or len(pattern) % 2):
            raise ValueError("a paired chase needs a pattern of (first, second) offsets")
        per = len(pattern) if order == "pattern" else footprint // stride
        rec = record if record is not None else max(1, int(round(passes * per)))
        warm = per if warmup is None else warmup
        seed = self.seed + len(self.chases)
        req = ChaseRequest(footprint=footprint, stride=stride, record=rec, warmup=warm,
                           order=order, path=path, seed=seed, pattern=pattern,
                           placement=placement)
        try:
            res: ChaseResult = self.device.pointer_chase(req)
        except PointSkipped:
            return None
        self.progress(1)
        lat = res.latency - res.timer_overhead
        index = res.index
        at = np.arange(rec)
        if paired:  # one value per pair: first minus second, at the first's position
            first = np.nonzero((warm + at[:-1]) % 2 == 0)[0]
            lat = lat[first] - lat[first + 1]
            index, at = index[first], first
        keep = np.nonzero(lat >= threshold)[0][:MAX_EVENTS_PER_CHASE]
        c = Chase(len(self.chases), path, stage, footprint, stride, order, warm, rec,
                  float(res.timer_overhead), median(lat), float(threshold),
                  tuple(pattern), seed, at[keep].astype(np.int64), index[keep].astype(np.int64),
                  lat[keep].astype(float), paired)
        self.chases.append(c)
        return c

    def dataset(self) -> xr.Dataset:
        return chases_to_dataset(self.chases)
