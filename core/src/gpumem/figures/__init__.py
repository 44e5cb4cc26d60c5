"""The figure toolkit: what every draw function may use, below the experiments and the report.

:mod:`gpumem.figures.draw` holds the drawing helpers (matplotlib's Agg canvas, no pyplot); the
:class:`~gpumem.contracts.series.Series` each draw function takes is a contract
(:mod:`gpumem.contracts.series`, also given by :mod:`gpumem.figures.series`). Experiments'
draw functions (``gpumem.experiments.figures``) import from here; the report
(:mod:`gpumem.report`) calls them and lays out the page. Nothing here imports an
experiment, the runner, the report or the CLI (``lint-imports`` checks it).
"""
