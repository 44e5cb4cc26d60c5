"""Several runs of one GPU pooled into one source, finding by finding.

One run's finding carries that run's noise: an H200's ``tlb_l1.miss_penalty`` reads 8 to 11
cycles from run to run (each interval about +-1 cycle), and a simulator config calibrated
from the run that read 8 is off by 20 % on every other run. Pooled, each finding is the
median run's: the run whose value is the median (for an even count, the lower of the two
middle ones), kept whole with its own interval, precision and method, so every number stays
one that was measured. A list finding takes the run closest to the elementwise median; a
structural one (a count, a size, a map) the value most runs agree on, ties to the earliest
run. A finding only some runs have is pooled over those.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpumem.contracts.findings import Finding, kind_of
from gpumem.contracts.formats import Source


def median_finding(found: Sequence[Finding]) -> Finding:
    """The median run's finding of ``found`` (one finding, one per run; see the module)."""
    resolved = [f for f in found if f.resolved] or list(found)
    if len(resolved) == 1:
        return resolved[0]
    if kind_of(resolved[0]) == "structural" or isinstance(resolved[0].value, str):
        return _most_common(resolved)
    try:
        values = np.array([f.value for f in resolved], dtype=float)
    except (TypeError, ValueError):  # ragged lists or text: the most common, as above
        return _most_common(resolved)
    if values.ndim == 1:
        order = np.argsort(values, kind="stable")
        return resolved[int(order[(len(resolved) - 1) // 2])]
    distance = np.abs(values - np.median(values, axis=0)).sum(axis=tuple(range(1, values.ndim)))
    return resolved[int(np.argmin(distance))]


def _most_common(found: Sequence[Finding]) -> Finding:
    """The finding whose value most runs share, ties to the earliest run."""
    keys = [repr(f.value) for f in found]
    return found[keys.index(max(keys, key=lambda k: (keys.count(k), -keys.index(k))))]


def median_source(sources: Sequence[Source], label: str) -> Source:
    """``sources`` (runs of one GPU model) as one: each finding the median run's. The
    architecture is the first source's, the device the first that describes one (a run kept
    as its manifest describes none)."""
    if not sources:
        raise ValueError("no runs to pool")
    device = next((s.device for s in sources if s.device is not None), None)
    out = Source(label, sources[0].arch, device)
    keys = sorted({k for s in sources for k in s.findings})
    for key in keys:
        out.findings[key] = median_finding([s.findings[key] for s in sources
                                            if key in s.findings])
    return out
