"""Chases run ahead: the next steps of a bisection, several at once (where the device can)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

from gpumem.contracts.device import ChaseRequest, ChaseResult, Device

AHEAD_RECORDS = 24 << 20   # recorded accesses of the chases held ahead at once (~17 B each)


class _ChasesAtOnce(Protocol):
    """A device that runs several chases at once (``chase_threads`` > 1: the simulator)."""

    def pointer_chases(self, requests: Sequence[ChaseRequest]
                       ) -> list[ChaseResult | Exception]: ...


class _Capture(Exception):  # noqa: N818 - not an error: carries the request a step would send
    def __init__(self, request: ChaseRequest) -> None:
        self.request = request


class Ahead:
    """The device as the search sees it: where the device can run several chases at once
    (``chase_threads`` > 1: the built-in simulator given threads), the chases the next steps
    of a bisection may ask for are run ahead, together; each step then takes its chase from
    here. A chase is a function of its request (seed included) on such a device, so the
    search sends, logs and decides on exactly the chases it would one at a time, and a
    guess it never asks for is dropped. Any other device (a GPU) runs each chase when asked,
    in the search's order, as before."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.threads = int(getattr(device, "chase_threads", 1) or 1)
        self._ready: dict[ChaseRequest, ChaseResult] = {}
        self._capturing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.device, name)

    def pointer_chase(self, request: ChaseRequest) -> ChaseResult:
        if self._capturing:
            raise _Capture(request)
        got = self._ready.pop(request, None)
        return got if got is not None else self.device.pointer_chase(request)

    def ready(self, request: ChaseRequest | None) -> bool:
        return request in self._ready

    def request_of(self, step: Callable[[], Any], later: int = 0) -> ChaseRequest | None:
        """The request ``step`` (a call that runs one chase through the log) would send if
        ``later`` chases were logged before it; None if it sends none."""
        if self.threads < 2:
            return None
        self._capturing = True
        try:
            step()
        except _Capture as c:
            return replace(c.request, seed=c.request.seed + later)
        finally:
            self._capturing = False
        return None

    def run_ahead(self, requests: Sequence[ChaseRequest | None]) -> None:
        """Run these chases together (those not held already), for the steps to take; what
        was held before is dropped (guesses the search went past)."""
        want = [r for r in dict.fromkeys(requests) if r is not None]
        todo = [r for r in want if r not in self._ready]
        if self.threads < 2 or len(todo) < 2:
            return
        self._ready = {r: self._ready[r] for r in want if r in self._ready}
        kept: list[ChaseRequest] = []
        total = 0
        for r in todo:  # the likeliest first: memory for at most AHEAD_RECORDS accesses
            total += r.record
            if kept and total > AHEAD_RECORDS:
                break
            kept.append(r)
        many = cast(_ChasesAtOnce, self.device)  # chase_threads > 1: it has pointer_chases
        for r, res in zip(kept, many.pointer_chases(kept), strict=True):
            if isinstance(res, ChaseResult):
                self._ready[r] = res


def bisection_guesses(lo: int, hi: int, mid_of: Callable[[int, int], int],
                      until: Callable[[int, int], bool], cost: Callable[[int], int],
                      n: int) -> list[tuple[int, int]]:
    """The first ``n`` probes of a bisection of (lo, hi), nearest the root first, as
    (probe, chases logged before it): the probe at (lo, hi) is ``mid_of(lo, hi)``, then
    (lo, mid) or (mid, hi), until ``until(lo, hi)``; a probe logs ``cost(probe)`` chases."""
    out: list[tuple[int, int]] = []
    todo = deque([(lo, hi, 0)])
    while todo and len(out) < n:
        a, b, before = todo.popleft()
        if until(a, b):
            continue
        mid = mid_of(a, b)
        out.append((mid, before))
        after = before + cost(mid)
        todo.extend(((a, mid, after), (mid, b, after)))
    return out


