"""When each experiment of a run started, finished measuring and ended, for benchmarks.

``GPUMEM_TIMELINE=FILE`` asks for it: the run writes its marks (seconds since the epoch,
JSON) to FILE as it ends (``benchmarks/bench_sim.py`` reads it). Unset, marking costs one
environment lookup.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

#: ``GPUMEM_TIMELINE=FILE``: where the run's timeline goes.
TIMELINE_ENV = "GPUMEM_TIMELINE"

_timeline: list[tuple[float, str, str]] = []


def mark(what: str, name: str = "") -> None:
    """Note when ``what`` happened (to experiment ``name``), if a timeline is asked for."""
    if os.environ.get(TIMELINE_ENV):
        _timeline.append((time.time(), what, name))


def write_timeline() -> None:
    """Write the run's timeline to ``GPUMEM_TIMELINE`` (nothing if unset or unwritable)."""
    path = os.environ.get(TIMELINE_ENV)
    if not path or not _timeline:
        return
    mark("main_cpu_s", f"{time.process_time():.3f}")  # this process's threads, all of them
    try:
        Path(path).write_text(json.dumps([list(e) for e in _timeline]))
    except OSError:
        pass
    _timeline.clear()
