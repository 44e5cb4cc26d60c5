"""One walk for ``cache_structure``: the search and the analysis are the same code.

A :class:`_Walk` goes through the stages of one load path in turn: calibration, capacity,
line, sets, index bits, policy (then the path's closing findings: the half-miss footprint,
the scattered chases' line, what could not be determined). Each stage first *takes* its
chases and then *judges* them:

* on a :class:`_LiveSource` (``sweep``) taking runs the stage's search on the device (the
  doubling and bisections that decide which chase comes next), logging every chase;
* on a :class:`_StoredSource` (``analyze``) the chases are there already: taking runs
  nothing.

The judgement is one function of the stage's chases in both walks, and what it concludes
(the capacity, the rule for a miss, the line, the set that overflows) is what the next stage
searches from: the search goes on only where the analysis can use what it chases, and the
findings of a live walk are those of the analysis of its stored chases
(``tests/test_cache_structure_walk.py``). The decisions inside one stage's search (does this
footprint overflow? does this line join that set?) use the same helpers as its judgement
(:func:`gpumem.analysis.structure.overflow_decision`, :func:`.rules.joins`), over the chases taken
so far.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpumem.analysis.chases import Chase
from gpumem.analysis.structure import LEVEL_OF_PATH, MissRule
from gpumem.contracts.findings import Finding
from gpumem.experiments.cache_structure import stages
from gpumem.experiments.cache_structure.ahead import Ahead
from gpumem.experiments.cache_structure.l2 import l2_stages
from gpumem.experiments.cache_structure.rules import MAX_CAPACITY
from gpumem.experiments.chaselog import ChaseLog


class _StoredSource:
    """The chases of a stored run: every stage finds its chases there; nothing is run."""

    live = False

    def __init__(self, chases: list[Chase], l2_bytes: float) -> None:
        self.chases = chases
        self.l2_bytes = l2_bytes
        self.paths = [p for p in LEVEL_OF_PATH if any(c.path == p for c in chases)]


class _LiveSource:
    """The device, through a :class:`ChaseLog` (whose chases are the source's)."""

    live = True

    def __init__(self, log: ChaseLog, load_paths: Any, l2_bytes: int, memory: int) -> None:
        self.log, self.load_paths = log, load_paths
        self.l2_bytes, self.memory = l2_bytes, memory
        self.limit = min(MAX_CAPACITY, max(memory // 8, 1 << 20))
        self.paths = [p for p in LEVEL_OF_PATH if p in load_paths]
        self.ahead = log.device if isinstance(log.device, Ahead) else None

    @property
    def chases(self) -> list[Chase]:
        return self.log.chases


def walk(src: Any) -> list[Finding]:
    """Every load path's stages, then the L2's: the findings (a live walk runs the chases
    as it goes)."""
    out: list[Finding] = []
    for path in src.paths:
        out += _Walk(src, path).run()
    return out + l2_stages(src, out)


#: The part that takes the L2's own chases (fill unit, line, ways), beside one per load path.
L2_PART = "l2"


def parts(load_paths: Any, l2_bytes: int) -> tuple[str, ...]:
    """The independent parts of a live walk: each load path's stages (they read only their
    own path's chases), then the L2's chases where the device has the L2-only path. The
    L2's judgement reads the paths' findings, but its chases do not depend on them: the
    analysis of the joined chases (:func:`walk`) judges them as one walk does."""
    paths = tuple(p for p in LEVEL_OF_PATH if p in load_paths)
    return paths + ((L2_PART,) if "cg" in load_paths and l2_bytes > 0 else ())


def take_part(src: _LiveSource, part: str) -> None:
    """Run one part's chases on ``src``'s device (its log holds them afterwards)."""
    if part == L2_PART:
        l2_stages(src, [])
    else:
        _Walk(src, part).run()


class _Walk:
    """The stages of one load path over ``src`` (see the module's doc)."""

    def __init__(self, src: Any, path: str) -> None:
        self.src, self.path, self.live = src, path, src.live
        self.method = f"fine-grained P-chase on path '{path}'"
        self.threshold = -np.inf
        self.rule: MissRule | None = None
        self.first: Chase | None = None
        self.out: list[Finding] = []     # the stages' findings, in the analysis' order
        self.onset: Finding | None = None  # where a hashed index's conflicts begin (a note)
        self.line_passes = 0               # passes of the line stage's chases (live)
        self.geo_conf = 0.0                # the geometry's confidence (line, ways, sets)

    # ---- chases ------------------------------------------------------------------------
    def of(self, stage: str) -> list[Chase]:
        """This path's chases of ``stage`` taken so far, in the order they were run."""
        return [c for c in self.src.chases if c.path == self.path and c.stage == stage]

    def last(self, stage: str, footprint: int) -> Chase | None:
        """The latest chase of ``stage`` at ``footprint``."""
        return next((c for c in reversed(self.of(stage)) if c.footprint == footprint), None)

    def chase(self, stage: str, footprint: int, stride: int, passes: float, **kw: Any
              ) -> Chase | None:
        """Run one chase (live walk only); ``None`` if the device skips it."""
        return self.src.log.run(path=self.path, stage=stage, footprint=footprint,
                                stride=stride, passes=passes, threshold=self.threshold, **kw)

    # ---- the stages --------------------------------------------------------------------
    def run(self) -> list[Finding]:
        if not stages.calibrate(self):
            return []
        cap = stages.capacity(self)
        if cap is not None:
            geo = stages.line_and_sets(self, cap)
            if geo is not None:
                stages.index_bits(self, cap, geo)
                stages.policy(self, cap, geo)
        return stages.closing(self)

