"""Interop: gpumem's results to and from what other tools and models take.

:mod:`gpumem.interop.sim_from_run` writes a simulator config (:mod:`gpumem.sim.config`) from a
measured run's findings, and :mod:`gpumem.interop.calibrate` fits one to a run's raw data.
They sit above the experiments (they read an experiment's constants and re-run its plans) and
beside the runner and the report; the simulator itself (:mod:`gpumem.sim`) imports none of
them (``lint-imports`` checks it).
"""
