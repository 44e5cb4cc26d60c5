"""Findings: inferred or measured parameters, with expected values and a status.

The status of a finding against its expected value (:func:`status_of`) rests on the
expected value's *band* (:func:`band_of`): ``[e - tol, e + tol]`` with
``tol = max(abs_tol, rel_tol * |e|)``, or everything up to ``e + tol`` for a limit
``bound="max"`` (from ``e - tol`` on for ``"min"``). ``pass``: the value lies inside the band;
``fail``: the band and the value's interval (the value itself, where no interval is known)
do not overlap; otherwise ``undecided``: the value is outside, its interval reaches in, and
the data cannot say. ``contended``: measured while another process used the GPU (neither
pass nor fail; ``--check`` fails on it). Files written before this rule may carry ``warn``
(within twice the tolerance), read and shown as it was stored.

Names follow the shared vocabulary (``l1d.size``, ``lat.l2_far``, ``tlb_l2.entries``; see
``docs/findings.md``). In a netCDF file a finding is a variable whose name has the dots
replaced by ``__`` and whose attributes carry units, expected value, source, status,
confidence and method; :func:`to_dataset` and :func:`from_dataset` convert both ways.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import xarray as xr

#: ``not modelled``: a simulated device whose config leaves unset what would give the
#: finding (an L1 with no bandwidth: ``bw.l1`` is whatever "no limit" makes it), so its
#: value is no model of anything: neither pass nor fail (:func:`not_modelled`).
NOT_MODELLED = "not modelled"
#: ``undecided``: the value lies outside the expected band but its interval reaches into it.
UNDECIDED = "undecided"
#: In a finding's note: what the analysis searched for was not found (l2_slices' hash). Such
#: a finding is unresolved; files written before (2026-12-06) gave it a value all the same,
#: which reading them turns back into an unresolved one (:func:`recorded`).
NOT_FOUND = "; not found: "
#: ``contended``: measured while another process used the GPU; the note says what was seen
#: (it starts with :data:`CONTENDED_PREFIX`). Neither pass nor fail, but ``--check`` fails.
CONTENDED = "contended"
CONTENDED_PREFIX = "contended: "
#: ``warn`` is no status this gpumem gives (the rule before the band); files written
#: before may carry it, and it is still read and shown.
LEGACY_STATUSES = ("warn",)
STATUSES = ("pass", UNDECIDED, "fail", CONTENDED, "n/a", "unresolved", NOT_MODELLED,
            *LEGACY_STATUSES)
_ORDER = {"pass": 0, "n/a": 0, NOT_MODELLED: 0, "warn": 1, UNDECIDED: 1, "unresolved": 1,
          "fail": 2, CONTENDED: 2}
#: the statuses ``--check`` fails on
CHECK_FAILS = ("fail", CONTENDED)


def status_rank(status: str) -> int:
    """How bad ``status`` is (0 pass-like, 1 undecided-like, 2 fail-like); an unknown
    status (a newer file's) ranks as undecided, never as a pass and never a crash."""
    return _ORDER.get(status, 1)

Value = float | int | str | list

#: Why a measurement's repeats stopped (:class:`Precision`), from the most to the least
#: favourable: the stopping rule's target was reached; the plan's repeats were fixed (a quick
#: run, a deterministic cycle-level simulator); the value comes from a fixed sample (a
#: chase's accesses: its precision from its interval); the rule's most repeats were taken
#: before the target; the point's time budget ran out first.
STOP_PRECISE = "precision reached"
STOP_FIXED = "fixed repeats"
STOP_SAMPLE = "fixed sample"
STOP_MAX = "most repeats"
STOP_BUDGET = "time budget"
STOP_REASONS = (STOP_PRECISE, STOP_FIXED, STOP_SAMPLE, STOP_MAX, STOP_BUDGET)
#: The normal quantile of a 95 % interval's half-width.
Z95 = 1.96


def rel_from_interval(value: float, lo: float, hi: float) -> float:
    """The relative standard error a 95 % interval ``(lo, hi)`` of ``value`` states,
    ``(hi - lo) / (2 x 1.96 x |value|)``: 0 where the interval is a point, inf where it is
    not and the value is 0."""
    if hi == lo:
        return 0.0
    if value == 0:
        return math.inf
    return (hi - lo) / (2 * Z95 * abs(value))


@dataclass(frozen=True)
class Precision:
    """How precisely a measured finding is known: ``repeats`` timed runs behind it (0 where
    it is a fixed sample, not runs), the relative standard error it reached, and why no more
    runs were taken (:data:`STOP_REASONS`). For a list, its least precise element's."""

    repeats: int = 0
    rel_error: float = math.nan
    stopped: str = ""

    def as_dict(self) -> dict[str, Any]:
        r = self.rel_error
        return {"repeats": int(self.repeats),
                "rel_error": None if math.isnan(r) else (r if math.isfinite(r) else "inf"),
                "stopped": self.stopped}


def worst_precision(ps: Sequence[Precision]) -> Precision:
    """The least precise of ``ps`` (largest relative error; the fewest runs among them; the
    least favourable reason)."""
    if not ps:
        return Precision()
    rel = [p.rel_error for p in ps if not math.isnan(p.rel_error)]
    runs = [p.repeats for p in ps if p.repeats]
    reasons = [p.stopped for p in ps if p.stopped in STOP_REASONS]
    return Precision(min(runs) if runs else 0, max(rel) if rel else math.nan,
                     max(reasons, key=STOP_REASONS.index) if reasons else "")


def precision_from_interval(f: Finding) -> Precision | None:
    """A precision for a measured finding whose analysis gave an interval but no runs (a
    chase's median over its accesses, a knee bracketed by two chases): the relative standard
    error the 95 % interval implies, ``(hi - lo) / (2 x 1.96 x |value|)``, the worst element
    of a list. ``None`` where the finding has no value or no interval."""
    if not f.resolved or f.interval is None or f.value is None:
        return None
    lo, hi = f.interval
    values = f.value if isinstance(f.value, list) else [f.value]
    los = lo if isinstance(lo, (list, tuple)) else [lo]
    his = hi if isinstance(hi, (list, tuple)) else [hi]
    rels = []
    for v, a, b in zip(values, los, his, strict=False):
        try:
            v, a, b = float(v), float(a), float(b)
        except (TypeError, ValueError):
            continue
        if any(math.isnan(x) for x in (v, a, b)):
            continue
        rels.append(rel_from_interval(v, a, b))
    return Precision(0, max(rels), STOP_SAMPLE) if rels else None


def with_precision(findings: Sequence[Finding]) -> list[Finding]:
    """Every measured finding with its :class:`Precision`: the one its analysis gave, else
    what its interval implies (:func:`precision_from_interval`)."""
    out = []
    for f in findings:
        if f.precision is None and kind_of(f) == "measured":
            p = precision_from_interval(f)
            if p is not None:
                f = replace(f, precision=p)
        out.append(f)
    return out
#: ``Expected.bound``: a target value (""), or a limit the finding must stay below or above.
BOUNDS = ("", "max", "min")


@dataclass(frozen=True)
class Expected:
    """What a finding should be, and where that number comes from.

    The band of a numeric value is ``[value - tol, value + tol]`` with ``tol =
    max(abs_tol, rel_tol * |value|)``. A finding passes when its value lies inside the band,
    fails when neither its value nor its interval reaches the band, and is ``undecided``
    otherwise (:func:`status_of`). Structural values (sizes, ways, policies) use
    ``rel_tol=0``: the band is the value itself. Text passes only when equal (case aside).
    ``bound`` makes ``value`` a limit rather than a target: ``"max"`` (the finding must not
    exceed it: a bandwidth above the theoretical peak; band ``(-inf, value + tol]``),
    ``"min"`` (band ``[value - tol, +inf)``). ``index`` labels a list value's elements by
    the sweep axis the finding is indexed by (``("groups", (1, 2, 4, 8, 16))``): a run on a
    smaller grid is then compared on the coordinates it has (:func:`status_of`).
    ``experiment`` names the experiment whose measurement the value describes, where another
    reports the same finding measured otherwise (``l2_hash`` reports ``l2_slices``' findings
    from every line of a page: its hash accuracy is 1.00 where ``l2_slices``' random lines
    give 0.10): that one's finding is then not judged against it (:func:`evaluate`).
    """

    name: str
    value: Value
    source: str
    units: str = ""
    rel_tol: float = 0.05
    abs_tol: float = 0.0
    bound: str = ""
    index: tuple[str, tuple] | None = None
    #: why this finding is not judged on this device (a simulator known to give another
    #: number: "not simulated: the model gives ..."); the finding then shows ``n/a`` with
    #: this as its reason, and the value above as what a card gives
    not_judged: str = ""
    #: the experiment whose measurement this describes ("": whichever reports the finding)
    experiment: str = ""

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"Expected {self.name!r}: bound must be one of "
                             f"{', '.join(repr(b) for b in BOUNDS)}, got {self.bound!r}")


def _scalar_ok(v: Any) -> bool:
    return isinstance(v, (str, numbers.Real)) and not isinstance(v, bool)


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except OverflowError:  # an integer past float's range
        return False


def expected_problem(e: Any) -> str:
    """What makes ``e`` unusable as an expected value ("" when nothing): not an
    :class:`Expected`, no name, a value that is no number, text or list of them, a tolerance
    that is no finite number >= 0, text fields that are not text, an ``index`` that does not
    label the value. Plugins' answers are checked with it where they are collected
    (:meth:`gpumem.plugin.registry.Plugins.expected_values`), so a status is never computed from
    one."""
    if not isinstance(e, Expected):
        what = type(e).__name__
        return f"a {what} ({str(e)[:40]!r}), not an Expected" if isinstance(e, str) \
            else f"a {what}, not an Expected"
    if not isinstance(e.name, str) or not e.name:
        return "an Expected without a name"
    v = e.value
    if isinstance(v, (list, tuple)):
        if not all(_scalar_ok(x) for x in v):
            return f"{e.name!r}: a list value holding other than numbers and text"
    elif not _scalar_ok(v):
        return f"{e.name!r}: a value of type {type(v).__name__}, not a number or text"
    numbers_ = [x for x in (v if isinstance(v, (list, tuple)) else [v])
                if not isinstance(x, str)]
    if any(not _finite(x) for x in numbers_):
        return f"{e.name!r}: a value that is no finite number (NaN or infinite): nothing " \
               f"lies in its band"
    for tol in ("rel_tol", "abs_tol"):
        t = getattr(e, tol)
        if not _scalar_ok(t) or isinstance(t, str) or not math.isfinite(t) or t < 0:
            return f"{e.name!r}: {tol} {t!r:.40} is not a finite number >= 0"
    for text in ("source", "units", "experiment"):
        if not isinstance(getattr(e, text), str):
            return f"{e.name!r}: {text} is a {type(getattr(e, text)).__name__}, not text"
    if e.index is not None:
        ok = isinstance(e.index, tuple) and len(e.index) == 2 and \
            isinstance(e.index[0], str) and isinstance(e.index[1], (list, tuple)) and \
            isinstance(v, (list, tuple)) and len(e.index[1]) == len(v)
        if not ok:
            return f"{e.name!r}: index is not (dimension, coordinates of each element)"
    return ""


def exact(name: str, value: Value, source: str, units: str = "1") -> Expected:
    """An expected structural value: sizes, ways, policies pass only when equal."""
    return Expected(name, value, source, units, rel_tol=0.0)


def l2_size_pair(size: int, source: str, rel_tol: float = 0.10) -> list[Expected]:
    """``l2.size`` and ``l2.size_at_half`` from one published L2 size (a datasheet's): where
    half the accesses leave a W-way LRU cache indexed modulo its sets lies C / (2W + 1) past
    its size C (3 % at 16 ways), inside a 10 % band."""
    return [Expected("l2.size", size, source, "byte", rel_tol=rel_tol),
            Expected("l2.size_at_half", size, f"{source}; half the accesses leave a W-way LRU "
                     "cache indexed modulo its sets C / (2W + 1) past its size C (3 % at 16 "
                     "ways)", "byte", rel_tol=rel_tol)]


def latency_pair(name: str, cycles: float, source: str, clock_mhz: float, clock: str,
                 rel_tol: float = 0.05) -> list[Expected]:
    """``lat.NAME`` in cycles and its ``lat.NAME_ns`` twin at ``clock_mhz`` (``clock`` says
    which clock that is, e.g. "base clock"), with the same relative band."""
    ns = round(cycles / clock_mhz * 1e3, 2)
    return [Expected(f"lat.{name}", cycles, source, "cycle", rel_tol=rel_tol),
            Expected(f"lat.{name}_ns", ns, f"{source}; {cycles:g} cycles / {clock_mhz:g} MHz "
                     f"({clock})", "ns", rel_tol=rel_tol)]


@dataclass
class Finding:
    """One inferred parameter. ``index`` = (dimension name, coordinates) for a list value.

    An *unresolved* finding (``candidates`` set, ``value`` None) is what an analysis reports
    when the evidence does not separate two or more answers: the candidates, and in ``note``
    the evidence for each, never one of them as a guess. Its status is ``unresolved``.
    ``interval`` is the (low, high) range a measured value is known to lie in, where the
    analysis can say (a knee bracketed by two chases, a median's confidence interval).

    ``kind`` says what a rerun on a healthy device must reproduce: a *structural* finding is
    a decision among discrete answers (a line size, a count of entries, a policy) and must
    come out identical, or unresolved; a *measured* one is a number with an error (a
    latency, a bandwidth, a knee's footprint) and must agree within a tolerance. Left empty,
    it follows from the value (see :func:`kind_of`)."""

    name: str
    value: Value | None
    units: str
    confidence: float = 1.0
    method: str = ""
    index: tuple[str, list] | None = None
    note: str = ""
    expected: Value | None = None
    expected_source: str = ""
    status: str = "n/a"
    candidates: list | None = None
    interval: tuple[Any, Any] | None = None  # (lo, hi); (lo list, hi list) for a list
    kind: str = ""
    expected_bound: str = ""
    #: the band a value must lie in to pass (:func:`band_of`): (low, high), infinite ends
    #: for a limit; for a list value (low list, high list), like ``interval``; None for
    #: text or where nothing is expected
    expected_band: tuple | None = None
    #: how precisely a measured value is known: runs, relative standard error, why the runs
    #: stopped (:class:`Precision`); None for a structural finding or an older file
    precision: Precision | None = None
    #: why the status is what it is, in a few words, for every status but pass ("no
    #: expected value", "not simulated: ...", "outside the band", ...: :func:`reason_of`)
    reason: str = ""

    @property
    def resolved(self) -> bool:
        return self.candidates is None

    def with_expected(self, exp: Expected | None) -> Finding:
        if exp is None or exp.not_judged:
            status = "n/a" if self.resolved else "unresolved"
            plain = replace(self, expected=None, expected_source="", expected_bound="",
                            expected_band=None, status=status)
            why = exp.not_judged if exp is not None and self.resolved else ""
            return replace(plain, reason=why or reason_of(plain))
        judged = replace(self, expected=exp.value, expected_source=exp.source,
                         expected_bound=exp.bound, expected_band=band_of(exp),
                         # a resolved finding has a value (only unresolved ones have none)
                         status=status_of(cast(Value, self.value), exp, self.interval,
                                          self.index) if self.resolved else "unresolved")
        return replace(judged, reason=reason_of(judged, exp))

    def as_dict(self) -> dict[str, Any]:
        d = {
            "value": _plain(self.value),
            "units": self.units,
            "expected": _plain(self.expected),
            "expected_source": self.expected_source,
            "status": self.status,
            "confidence": round(float(self.confidence), 4),
            "method": self.method,
        }
        if self.index:
            d["index"] = {"dim": self.index[0], "values": _plain(list(self.index[1]))}
        if self.note:
            d["note"] = self.note
        if not self.resolved:
            d["candidates"] = _plain(list(self.candidates or []))
        if self.interval is not None:
            d["interval"] = _plain(list(self.interval))
        if self.expected_bound:
            d["expected_bound"] = self.expected_bound
        if self.expected is not None:  # null for text (an exact match) or an old file
            d["band"] = plain_band(self.expected_band)
        if self.precision is not None:
            d["precision"] = self.precision.as_dict()
        d["kind"] = kind_of(self)
        if self.reason:
            d["reason"] = self.reason
        return d


MEASURED_UNITS = ("cycle", "ns", "GB/s")


def recorded(f: Finding) -> Finding:
    """A finding as read from a file: one whose note says its search found nothing
    (:data:`NOT_FOUND`) but which a file written before gave a value is unresolved, its value
    the candidate, so nothing judges, learns or compares it."""
    if f.resolved and NOT_FOUND in f.note:
        return replace(f, value=None, status="unresolved", interval=None, candidates=[f.value])
    return f


def from_dict(name: str, d: dict[str, Any]) -> Finding:
    """A finding back from its :meth:`Finding.as_dict` (a manifest's record of it, when the
    raw file is not kept): value, units, interval, index, kind, status, note, precision."""
    index = (str(d["index"]["dim"]), list(d["index"]["values"])) if d.get("index") else None
    iv = d.get("interval")
    interval = (tuple(iv) if iv is not None and len(iv) == 2 else None)
    p = d.get("precision")
    precision = None
    if isinstance(p, dict):
        rel = p.get("rel_error")
        precision = Precision(int(p.get("repeats", 0) or 0),
                              math.inf if rel == "inf" else
                              (math.nan if rel is None else float(rel)),
                              str(p.get("stopped", "")))
    return recorded(Finding(name, d.get("value"), str(d.get("units", "")),
                            float(d.get("confidence", 1.0)), str(d.get("method", "")),
                            index=index, note=str(d.get("note", "")),
                            status=str(d.get("status", "n/a")),
                            candidates=d.get("candidates"), interval=interval,
                            kind=str(d.get("kind", "")), precision=precision))


def kind_of(f: Finding) -> str:
    """``structural`` or ``measured`` (see :class:`Finding`): the finding's own ``kind``, else
    measured for latencies, rates and any fractional value, structural for whole numbers,
    strings and lists of whole numbers."""
    if f.kind:
        return f.kind
    if f.units in MEASURED_UNITS or "/" in f.units:
        return "measured"
    v = f.value if f.resolved else (f.candidates or [None])[0]
    items = v if isinstance(v, (list, tuple)) else [v]
    if any(isinstance(x, float) for x in items):
        return "measured"
    return "structural"


def unresolved(name: str, units: str, candidates: Sequence[Value], method: str,
               evidence: str, confidence: float = 0.0) -> Finding:
    """A finding the evidence does not decide: ``candidates`` (at least one; where it is one,
    the data could not confirm it), ``evidence`` says what each rests on."""
    return Finding(name, None, units, confidence, method, note=evidence, status="unresolved",
                   candidates=list(candidates))


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if math.isnan(f) else f
    return v


def _scalar_band(exp: Expected, e: Any) -> tuple[float, float] | None:
    """The band of one expected number ``e`` under ``exp``'s tolerance and bound; None for
    text or what is no number."""
    if isinstance(e, str) or isinstance(e, bool):
        return None
    try:
        fe = float(e)
    except (TypeError, ValueError):
        return None
    if math.isnan(fe):
        return None
    tol = max(exp.abs_tol, exp.rel_tol * abs(fe))
    lo = -math.inf if exp.bound == "max" else fe - tol
    hi = math.inf if exp.bound == "min" else fe + tol
    return (lo, hi)


def band_of(exp: Expected) -> tuple | None:
    """The band a finding's value must lie in to pass ``exp``: ``(e - tol, e + tol)`` with
    ``tol = max(abs_tol, rel_tol * |e|)``; a limit's is open on one side (``bound="max"``:
    ``(-inf, e + tol)``; ``"min"``: ``(e - tol, inf)``). For a list, ``(lows, highs)`` by
    element (``None`` for a text element); ``None`` for text."""
    e = exp.value
    if isinstance(e, (list, tuple)):
        bands = [_scalar_band(exp, x) for x in e]
        if all(b is None for b in bands):
            return None
        return ([None if b is None else b[0] for b in bands],
                [None if b is None else b[1] for b in bands])
    return _scalar_band(exp, e)


def plain_band(band: tuple | None) -> list | None:
    """A band as JSON: ``[lo, hi]`` (lists of them for a list), ``None`` for an infinite
    end (a limit) or an unknown one."""
    def end(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [end(y) for y in x]
        if x is None:
            return None
        f = float(x)
        return None if math.isnan(f) or math.isinf(f) else f
    return None if band is None else [end(band[0]), end(band[1])]


def _status_scalar(v: Any, exp: Expected, e: Any, span: tuple[Any, Any] | None = None) -> str:
    """pass / undecided / fail of one value ``v`` (its interval ``span``, where known) against
    one expected ``e``: pass inside the band, fail where the band and the interval (the
    value alone, without one) do not overlap, undecided between."""
    if isinstance(e, str) or isinstance(v, str):
        return "pass" if str(v).strip().lower() == str(e).strip().lower() else "fail"
    try:
        fv, fe = float(v), float(e)
    except (TypeError, ValueError):
        return "n/a"
    if math.isnan(fv) or math.isnan(fe):
        return "n/a"
    band = _scalar_band(exp, fe)
    assert band is not None
    slack = 1e-12 * max(1.0, abs(fe))  # a value computed to the band's edge is inside
    blo, bhi = band[0] - slack, band[1] + slack
    if blo <= fv <= bhi:
        return "pass"
    lo = hi = fv
    if span is not None:  # the measurement says the value lies in [lo, hi]
        try:
            lo, hi = sorted((float(span[0]), float(span[1])))
        except (TypeError, ValueError):
            lo = hi = fv
        if math.isnan(lo) or math.isnan(hi):
            lo = hi = fv
        lo, hi = min(lo, fv), max(hi, fv)
    if hi < blo or lo > bhi:
        return "fail"
    return UNDECIDED


def _by_label(value: Value, exp: Expected, interval: tuple | None,
              index: tuple[str, list] | None) -> tuple[list, list, list] | None:
    """(values, expected values, spans) paired by coordinate, where both lists are indexed
    by one dimension (a quick run's cp.async speedups at 1, 4, 16 groups against the full
    grid's 1, 2, 4, 8, 16): only the coordinates both have are compared. ``None`` where the
    two are not labelled alike (then they pair by position)."""
    want = exp.value
    if exp.index is None or index is None or exp.index[0] != index[0] or \
            not isinstance(value, (list, tuple)) or len(index[1]) != len(value) or \
            not isinstance(want, (list, tuple)) or len(exp.index[1]) != len(want):
        return None
    spans: list = [None] * len(value)
    if interval is not None and isinstance(interval[0], (list, tuple)) and \
            len(interval[0]) == len(value) == len(interval[1]):
        spans = list(zip(interval[0], interval[1], strict=True))
    mine = {str(k): (v, sp) for k, v, sp in zip(index[1], value, spans, strict=True)}
    pairs = [(mine[str(k)], x) for k, x in zip(exp.index[1], want, strict=True)
             if str(k) in mine]
    return [v for (v, _s), _x in pairs], [x for _v, x in pairs], [s for (_v, s), _x in pairs]


def status_of(value: Value, exp: Expected, interval: tuple | None = None,
              index: tuple[str, list] | None = None) -> str:
    """pass / undecided / fail of ``value`` against ``exp`` (elementwise for lists: the
    worst).

    ``pass``: the value lies inside the band (:func:`band_of`). ``fail``: the band and the
    value's ``interval`` do not overlap (where the analysis bracketed it: a hashed cache's
    capacity lies between its first misses and its half crossing, an H200 L1's 204-239 KB;
    without one, the value alone). Otherwise ``undecided``: the value is outside the band
    but its interval reaches into it; the data cannot say. A list indexed by a sweep
    axis (``index``, as the finding's) against an expectation labelled by the same axis
    (``Expected.index``) is compared on the coordinates both have; none in common: n/a.
    An expectation that is ``not_judged`` on this device: n/a."""
    if exp.not_judged:
        return "n/a"
    e = exp.value
    if isinstance(e, (list, tuple)):
        paired = _by_label(value, exp, interval, index)
        if paired is not None:
            vals, want, spans = paired
            if not vals:
                return "n/a"
        else:
            if not isinstance(value, (list, tuple)) or len(value) != len(e):
                return "fail"
            vals, want, spans = list(value), list(e), [None] * len(e)
            if interval is not None and isinstance(interval[0], (list, tuple)) and \
                    len(interval[0]) == len(e) == len(interval[1]):
                spans = list(zip(interval[0], interval[1], strict=True))
        statuses = [_status_scalar(v, exp, x, sp)
                    for v, x, sp in zip(vals, want, spans, strict=True)]
        return max(statuses, key=status_rank)
    if isinstance(value, (list, tuple)):
        return "fail"
    span = interval if interval is not None and not isinstance(interval[0], (list, tuple)) \
        else None
    return _status_scalar(value, exp, e, span)


def reason_of(f: Finding, exp: Expected | None = None) -> str:
    """Why ``f`` has its status, in a few words ("" for pass): what a reader of a run's table
    needs beside every other status."""
    if f.status == "pass":
        return ""
    if f.status == "unresolved":
        n = len(f.candidates or [])
        return f"the data fit {n} answers" if n else "the data decide no answer"
    if f.status == "fail":
        return "outside the band" + ("" if f.interval is None else ", interval included")
    if f.status == "undecided":
        return "outside the band, its interval reaching in"
    if f.status == "n/a":
        if exp is None:
            return "no expected value"
        if f.index is not None and exp.index is not None:
            return (f"sweep points differ: the run's {f.index[0]} "
                    f"{_short(f.index[1])}, expected at {_short(exp.index[1])}")
        return "not comparable with the expected value"
    return ""


def _short(values: Sequence[Any], most: int = 5) -> str:
    vs = [str(_plain(v)) for v in values]
    return ", ".join(vs[:most]) + (", ..." if len(vs) > most else "")


def evaluate(findings: Sequence[Finding], expected: Sequence[Expected],
             experiment: str = "") -> list[Finding]:
    """Attach expected values (by name, the first that applies) and statuses; findings
    without one get ``n/a``. Of ``experiment``'s findings, an expected value that names
    another experiment (:attr:`Expected.experiment`) is no judge ("" : unknown, any)."""
    by_name: dict[str, Expected] = {}
    for exp in expected:
        if experiment and exp.experiment and exp.experiment != experiment:
            continue
        by_name.setdefault(exp.name, exp)
    return [f.with_expected(by_name.get(f.name)) for f in findings]


def not_modelled(findings: Sequence[Finding], reasons: dict[str, str]) -> list[Finding]:
    """``findings`` with every one a device cannot model (``reasons``: finding name or
    fnmatch pattern -> why, :meth:`gpumem.contracts.device.Device.unmodelled`) marked
    :data:`NOT_MODELLED`, the reason in its note."""
    from fnmatch import fnmatchcase

    out = []
    for f in findings:
        why = next((r for pat, r in reasons.items() if fnmatchcase(f.name, pat)), None)
        if why is not None:
            f = replace(f, status=NOT_MODELLED, reason=why,
                        note=f"{f.note}; {why}" if f.note else why)
        out.append(f)
    return out


def worst_status(findings: Sequence[Finding]) -> str:
    statuses = [f.status for f in findings if f.status != "n/a"]
    return max(statuses, key=status_rank) if statuses else "n/a"


# ---------------------------------------------------------------------------------------------
# netCDF representation
# ---------------------------------------------------------------------------------------------


def var_name(name: str) -> str:
    """``l1d.size`` -> ``l1d__size`` (netCDF names allow no dots in CF practice)."""
    return name.replace(".", "__")


def _attr_value(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, str) for x in v):
            return ", ".join(v)
        return np.asarray([np.nan if x is None else x for x in v], dtype=float)
    if isinstance(v, bool):
        return int(v)
    return v


def _value_type(v: Any) -> str:
    if isinstance(v, str):
        return "str"
    if isinstance(v, (list, tuple)):
        return "list_int" if all(isinstance(x, (int, np.integer)) for x in v) else "list"
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return "int"
    return "float"


#: the stored value of an integer finding that has none (unresolved), its ``_FillValue``
#: (xarray reads such a variable back as float64 NaN: CF masking); ``resolved = 0`` says why
INT_FILL = -(2**63)  # int64 min: exact in float64, so NaN encodes to it exactly

_PREFIXES = {
    "lat": "latency", "bw": "bandwidth", "l1d": "L1 data cache", "l2": "L2 cache",
    "tex_l1": "texture L1 cache", "ro": "read-only data cache", "tlb": "TLB",
    "tlb_l1": "L1 TLB", "tlb_l2": "L2 TLB", "smem": "shared memory",
    "dsmem": "distributed shared memory", "ilp": "instruction-level parallelism",
    "cpasync": "cp.async", "bulk": "bulk copy", "p2p": "peer-to-peer access",
}
_WORDS = {
    "dram": "DRAM", "l1": "L1", "l2": "L2", "sm": "SM", "sms": "SMs", "bw": "bandwidth",
    "tlb": "TLB", "smem": "shared memory", "dsmem": "distributed shared memory",
    "vs": "over", "ns": "in nanoseconds", "k8": "K=8", "k2": "K=2", "lat": "latency",
}


def long_name(name: str, units: str = "") -> str:
    """A readable CF ``long_name`` for the finding ``name`` (``lat.l2_far`` ->
    "latency: L2 far, in clock cycles (gpumem finding lat.l2_far)")."""
    head, _, rest = name.partition(".")
    words = " ".join(_WORDS.get(w, w) for w in rest.replace(".", " ").replace("_", " ").split())
    text = f"{_PREFIXES.get(head, head)}: {words}" if words else _PREFIXES.get(head, head)
    if units in ("cycle", "cycles"):
        text += ", in clock cycles"
    return f"{text} (gpumem finding {name})"


def _index_units(dim: str) -> str:
    return "byte" if dim in ("footprint", "size", "bytes") else "1"


def _numeric_var(dims: tuple, value: Any, vtype: str, attrs: dict) -> xr.Variable:
    """An integer finding as int64, anything else numeric as float64 (NaN for None)."""
    if vtype in ("int", "list_int"):
        try:
            return xr.Variable(dims, np.asarray(value, dtype=np.int64), attrs)
        except OverflowError:  # beyond int64: as before, a float (value_type says int)
            pass
    return xr.Variable(dims, np.asarray(value, dtype=float), attrs)  # None -> NaN


def to_dataset(findings: Sequence[Finding]) -> xr.Dataset:
    """Findings as a Dataset: one variable per finding, metadata in its attributes.

    ``units`` is the CF/UDUNITS-2 spelling of the finding's unit and ``gpumem_units`` the one
    gpumem shows, where they differ (``cycle`` is stored as ``1``, ``GB/s`` as ``Gbyte/s``:
    :mod:`gpumem.contracts.units`). Integer findings are int64; an unresolved one holds
    :data:`INT_FILL`, declared its ``_FillValue``, and ``resolved = 0``."""
    from gpumem.contracts.units import unit_attrs

    data_vars: dict[str, xr.Variable] = {}
    coords: dict[str, Any] = {}
    for f in findings:
        vn = var_name(f.name)
        attrs: dict[str, Any] = {
            "gpumem_finding": f.name,
            **unit_attrs(f.units, long_name(f.name, f.units)),
            "status": f.status,
            "confidence": float(f.confidence),
            "method": f.method,
            "value_type": _value_type(f.value),
        }
        if f.expected is not None:
            attrs["expected"] = _attr_value(f.expected)
            attrs["expected_source"] = f.expected_source
            if f.expected_bound:
                attrs["expected_bound"] = f.expected_bound
            if f.expected_band is not None:  # (lo, hi) or (lo list, hi list); inf: a limit
                attrs["expected_band"] = np.asarray(
                    [[np.nan if x is None else x for x in np.ravel(part)]
                     for part in f.expected_band], dtype=float).ravel()
        if f.note:
            attrs["note"] = f.note
        if f.interval is not None:  # (lo, hi), or (lo list, hi list) for a list value
            attrs["interval"] = np.asarray(f.interval, dtype=float).ravel()
        if f.precision is not None:
            attrs["precision_repeats"] = int(f.precision.repeats)
            attrs["precision_rel_error"] = float(f.precision.rel_error)
            attrs["precision_stopped"] = f.precision.stopped
        attrs["kind"] = kind_of(f)
        if f.reason:
            attrs["reason"] = f.reason
        if not f.resolved:  # no value: the candidates (JSON: they may be lists) instead
            attrs["resolved"] = 0
            attrs["candidates"] = json.dumps(_plain(list(f.candidates or [])))
            attrs["value_type"] = _value_type((f.candidates or [0.0])[0])
            if attrs["value_type"] in ("int", "list_int"):  # an integer with no value
                data_vars[vn] = xr.Variable((), np.float64(np.nan), attrs, encoding={
                    "dtype": "int64", "_FillValue": INT_FILL})
            else:
                data_vars[vn] = xr.Variable((), np.float64(np.nan), attrs)
        elif f.index is not None:
            dim = f"{vn}__{f.index[0]}"
            coords[dim] = xr.Variable(dim, np.asarray(f.index[1]), {
                "gpumem_index": f.index[0], "units": _index_units(f.index[0]),
                "long_name": f"{f.index[0].replace('_', ' ')} the finding {f.name} is "
                             f"given for"})
            data_vars[vn] = _numeric_var((dim,), f.value, attrs["value_type"], attrs)
        elif isinstance(f.value, str):
            data_vars[vn] = xr.Variable((), np.array(f.value, dtype=object), attrs)
        elif isinstance(f.value, (list, tuple)):
            dim = f"{vn}__i"
            coords[dim] = xr.Variable(dim, np.arange(len(f.value)), {
                "units": "1", "long_name": f"position in the list value of {f.name}"})
            data_vars[vn] = _numeric_var((dim,), f.value, attrs["value_type"], attrs)
        else:
            data_vars[vn] = _numeric_var((), f.value, attrs["value_type"], attrs)
    ds = xr.Dataset(data_vars, coords=coords)
    ds.attrs["gpumem_content"] = "findings"
    return ds


def _from_attr(v: Any, like: Any) -> Any:
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, (np.integer, np.floating)):
        return _plain(v)
    if isinstance(v, str) and isinstance(like, list):
        return [s.strip() for s in v.split(",")]
    return v


def _interval(attr: Any, value: Any) -> tuple:
    flat = [float(x) for x in np.ravel(attr)]
    if isinstance(value, list) and len(flat) == 2 * len(value) and len(flat) > 2:
        return (flat[:len(value)], flat[len(value):])
    return (flat[0], flat[-1])


def _band_attr(attr: Any, expected: Any) -> tuple | None:
    """The stored ``expected_band`` back as :func:`band_of` gave it: (lo, hi), or for a list
    expected value (lo list, hi list), ``None`` for an element that had none (NaN)."""
    flat = [float(x) for x in np.ravel(attr)]
    if isinstance(expected, list):
        n = len(flat) // 2
        if not flat or len(flat) != 2 * n:
            return None
        ends = [None if math.isnan(x) else x for x in flat]
        return (ends[:n], ends[n:])
    if len(flat) != 2 or any(math.isnan(x) for x in flat):
        return None
    return (flat[0], flat[1])


def _precision_attrs(a: Any) -> Precision | None:
    """A finding's stored precision back (``None`` where the attributes are unreadable)."""
    try:
        return Precision(int(a.get("precision_repeats", 0)),
                         float(a.get("precision_rel_error", math.nan)),
                         str(a.get("precision_stopped", "")))
    except (TypeError, ValueError):
        return None


def from_dataset(ds: xr.Dataset) -> list[Finding]:
    """Inverse of :func:`to_dataset` (variables without ``gpumem_finding`` are ignored).

    Reads both file generations: ``units`` is the unit shown unless ``gpumem_units`` is
    stored (files before CF units carried ``cycle``, ``GB/s`` in ``units``)."""
    from gpumem.contracts.units import shown_units

    out = []
    for _vn, var in ds.data_vars.items():
        a = var.attrs
        name = a.get("gpumem_finding")
        if not name:
            continue
        values = var.values
        candidates = None
        value: Value | None
        index: tuple[str, list[Any]] | None
        if int(a.get("resolved", 1)) == 0:
            candidates = json.loads(str(a.get("candidates", "[]")))
            value = None
            index = None
        elif var.ndim == 0:
            v = values.item()
            value = v if isinstance(v, (str, int)) else _plain(float(v))
            if a.get("value_type") == "int" and isinstance(value, float):
                value = int(value)
            index = None
        else:
            value = [_plain(x) for x in values.tolist()]
            if a.get("value_type") == "list_int":
                value = [int(x) for x in value]
            dim = str(var.dims[0])
            # the index's name: gpumem_index; files before CF units kept it in long_name
            label = ds[dim].attrs.get("gpumem_index",
                                      ds[dim].attrs.get("long_name", dim.rsplit("__", 1)[-1]))
            index = None if dim.endswith("__i") else \
                (str(label), _plain(ds[dim].values.tolist()))
        f = Finding(
            name=str(name), value=value, units=shown_units(a),
            confidence=float(a.get("confidence", 1.0)), method=str(a.get("method", "")),
            index=index, note=str(a.get("note", "")),
            expected=_from_attr(a["expected"], value) if "expected" in a else None,
            expected_source=str(a.get("expected_source", "")),
            status=str(a.get("status", "n/a")),
            candidates=candidates,
            interval=_interval(a["interval"], value) if "interval" in a else None,
            expected_bound=str(a.get("expected_bound", "")),
            reason=str(a.get("reason", "")),
        )
        if "expected_band" in a and f.expected is not None:  # files before the band: None
            f = replace(f, expected_band=_band_attr(a["expected_band"], f.expected))
        if "precision_stopped" in a:  # files before the stopping rule: None
            f = replace(f, precision=_precision_attrs(a))
        stored = str(a.get("kind", ""))
        out.append(recorded(replace(f, kind=stored) if stored and stored != kind_of(f) else f))
    return out


@dataclass
class FindingsTable:
    """Findings of several experiments and devices, for summary tables and JSON."""

    rows: list[tuple[str, str, Finding]] = field(default_factory=list)  # (device, experiment, f)

    def add(self, device: str, experiment: str, findings: Sequence[Finding]) -> None:
        self.rows.extend((device, experiment, f) for f in findings)
