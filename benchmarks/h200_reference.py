"""Reference values of a healthy H200: every finding's median and spread over rerun series.

    python benchmarks/h200_reference.py RUN_DIR [RUN_DIR ...] [--markdown]

Each RUN_DIR is one ``gpumem run --arch hopper all`` (for example tests/data/h200-reruns/run1
... run5). Findings are re-derived by today's analysis (:func:`gpumem.interop.reruns.run_findings`);
for each, the values of every run, their median, and the largest relative deviation from it.
This is where the hopper plugin's ``REFERENCE`` expectations come from
(docs/h200-reference.md, gpumem_hopper.expected); tests/test_h200_reference.py checks that
they still match the committed runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np


def series(dirs: list[Path]) -> dict[tuple[str, str], list[Any]]:
    """(experiment, finding) -> the value of each run (None where a run lacks it)."""
    from gpumem.interop.reruns import run_findings
    from gpumem.plugin.registry import get_plugins

    plugins = get_plugins()
    runs = [run_findings(d, plugins) for d in dirs]
    keys = sorted({k for r in runs for k in r})
    return {k: [r[k].value if k in r and r[k].resolved else None for r in runs] for k in keys}


def spread(values: list[Any]) -> tuple[Any, Any] | None:
    """(median, largest |v - median| / |median|), elementwise for lists; None if not numeric
    or missing in a run."""
    if any(v is None for v in values):
        return None
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return None
    med = np.median(a, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.where(med != 0, np.abs(a - med).max(axis=0) / np.abs(med), 0.0)
    return med.tolist(), dev.tolist()


def _fmt(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    data = series(a.runs)
    if a.markdown:
        print("| experiment | finding | median | largest deviation | values |")
        print("|---|---|---|---|---|")
    for (exp, name), values in data.items():
        s = spread(values)
        med, dev = s if s else ("-", "-")
        if isinstance(med, list):
            med_s, dev_s = "[" + ", ".join(map(_fmt, med)) + "]", \
                "[" + ", ".join(f"{d:.1%}" for d in dev) + "]"
        else:
            med_s, dev_s = _fmt(med), (f"{dev:.1%}" if isinstance(dev, float) else dev)
        vals = ", ".join(str(v) for v in values)
        if a.markdown:
            print(f"| {exp} | `{name}` | {med_s} | {dev_s} | {vals} |")
        else:
            print(f"{exp:18} {name:30} {med_s:>14} {dev_s:>8}  {vals}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
