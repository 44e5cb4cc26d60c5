"""Results: the dataset schema (CF attributes, provenance) and the on-disk run store."""

from gpumem.results.io import open_findings, open_raw
from gpumem.results.store import RunStore

__all__ = ["RunStore", "open_findings", "open_raw"]
