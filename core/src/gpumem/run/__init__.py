"""Running: a request resolved into experiments on a device, its points measured (here, in
worker processes or on a Dask cluster), priced on a slow device, kept in a run directory;
one process per GPU of a node (:mod:`~gpumem.run.fleet`). Above the experiments, below the CLI."""
