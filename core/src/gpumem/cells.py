"""The text of a findings table's cells: values, expected values, bands and intervals.

Plain strings, no terminal: the CLI's tables (:mod:`gpumem.cli`), ``gpumem plugin check``
and the HTML report all show a finding the same way, so the formatting lives below all of
them.
"""

from __future__ import annotations


def fmt_value(v: object) -> str:
    """A finding's value for a table cell: '-' for none, floats to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


#: How a limit (``Expected.bound``) reads in a table: "at most 4,814.3".
BOUND_WORDS = {"max": "at most", "min": "at least"}


def fmt_expected(value: object, bound: str = "") -> str:
    """An expected value's cell: the value, or the limit it is ("at most 4,814.3")."""
    text = fmt_value(value)
    return f"{BOUND_WORDS[bound]} {text}" if bound in BOUND_WORDS and value is not None \
        else text


def _end(x: object) -> float | None:
    """A band's or interval's end as a float, ``None`` for an infinite or unknown one."""
    if x is None or isinstance(x, (str, bool)) or not hasattr(x, "__float__"):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if f != f or f in (float("inf"), float("-inf")) else f


def _num(x: float) -> str:
    """A band's or interval's end, short: whole above 1,000 ("4,031"), else 4 significant
    digits ("0.874"); whole numbers as they are ("128"); past 1e15 in exponent form (a
    1e308 band once printed as 300 digits)."""
    if abs(x) >= 1e15:
        return f"{x:.4g}"
    if x == int(x):
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _range(lo: object, hi: object) -> str:
    a, b = _end(lo), _end(hi)
    if a is None and b is None:
        return "-"
    if a is None and b is not None:
        return f"<= {_num(b)}"
    if a is None:
        return "-"
    if b is None:
        return f">= {_num(a)}"
    if a == b:
        return _num(a)
    sep = " to " if a < 0 or b < 0 else "-"
    return f"{_num(a)}{sep}{_num(b)}"


def _pairs(span: object) -> str | None:
    """``[lo, hi]`` (or ``(lo list, hi list)``) as text; ``None`` where it is neither."""
    if not isinstance(span, (list, tuple)) or len(span) != 2:
        return None
    lo, hi = span
    if isinstance(lo, (list, tuple)) and isinstance(hi, (list, tuple)) and len(lo) == len(hi):
        return "[" + ", ".join(_range(a, b) for a, b in zip(lo, hi, strict=True)) + "]"
    if isinstance(lo, (list, tuple)) or isinstance(hi, (list, tuple)):
        return None
    return _range(lo, hi)


def fmt_band(band: object, expected: object = None) -> str:
    """The band a value must lie in to pass (``Finding.expected_band`` or ``as_dict()``'s
    ``band``): "170-230", "<= 4,848" or ">= 12" for a limit, "16,384" for an exact value,
    a list's elementwise; for text (no band) the expected text itself; "-" for none (a
    file written before the band was stored)."""
    text = _pairs(band)
    if text is not None:
        return text
    textual = isinstance(expected, str) or (
        isinstance(expected, (list, tuple)) and bool(expected)
        and all(isinstance(x, str) for x in expected))
    return fmt_value(expected) if textual else "-"  # a number without one: an older file


def fmt_interval(interval: object, kind: str = "") -> str:
    """The interval a measured value is known to lie in ("204,000-239,000"); "exact" for a
    structural finding (a decision among discrete answers: its uncertainty is its
    confidence, and a rerun must give the same); '-' where the analysis gives none."""
    text = _pairs(interval)
    if text is None:
        return "exact" if kind == "structural" else "-"
    return text


def fmt_precision(p: object) -> str:
    """A finding's precision (``as_dict()``'s ``precision``) for a table cell: "+-0.24 %, 6
    runs, precision reached" (the relative standard error; the runs behind it where it
    comes from timed runs; why they stopped), '-' where none is known."""
    if not isinstance(p, dict):
        return "-"
    rel = p.get("rel_error")
    text = ("-" if rel is None else "inf" if rel == "inf" else f"+-{float(rel):.2%}")
    runs = int(p.get("repeats") or 0)
    parts = [text] + ([f"{runs} runs"] if runs else []) + \
        ([str(p["stopped"])] if p.get("stopped") else [])
    return ", ".join(parts)


def fmt_finding(d: dict) -> str:
    """A finding's value cell from its ``as_dict()``: the value, or for an unresolved finding
    its candidates ("unresolved: 16777216 | 33554432")."""
    if "candidates" in d:
        return "unresolved: " + " | ".join(fmt_value(c) for c in d["candidates"])
    return fmt_value(d["value"])
