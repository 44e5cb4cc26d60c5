"""Interop: gpumem's results to and from what other tools and models take.

:mod:`gpumem.interop.sim_from_run` writes a simulator config (:mod:`gpumem.sim.config`) from a
measured run's findings, and :mod:`gpumem.interop.calibrate` fits one to a run's raw data.
They sit above the experiments (they read an experiment's constants and re-run its plans) and
beside the runner and the report; the simulator itself (:mod:`gpumem.sim`) imports none of
them (``lint-imports`` checks it).
"""

from __future__ import annotations

# Format.load_run (gpumem.contracts.formats) reads runs with gpumem.interop.compare.load_source,
# handed in when that module loads: loaded with the package, so that every format (core's live
# here; a plugin's imports gpumem.api.formats, which loads it too) finds it.
from gpumem.interop import compare as _compare  # noqa: F401
