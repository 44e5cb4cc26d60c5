"""The contracts: what devices, experiments, simulators and plugins agree on (requests and
results of the probes, plans, findings and their names, errors, units, hook specifications,
the chase chains). The bottom layer: it imports nothing else of gpumem but the results store
and two file-safety helpers (``lint-imports`` checks it; docs/architecture.md)."""
