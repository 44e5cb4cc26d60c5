"""Runs kept as their manifest alone: the findings each entry recorded.

A run's raw files are large (an H200 run is about 5 MB) and its manifest small, so runs are
often shared or committed as the manifest only (``tests/data/h200-session17``). The
manifest records every finding as :meth:`Finding.as_dict` gave it (value, units, interval,
precision, status), which is what a comparison needs. Reading names the manifest file
itself (``RUN/manifest.json`` or ``NAME.manifest.json``), never the run directory: a run
directory whose files are gone is damaged, and is said to be (:mod:`gpumem.results.verify`).

A manifest is data from elsewhere: it is read with a size limit, checked for shape, and a
finding that does not read back is refused with its entry and name, not guessed at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpumem.contracts.errors import ResultsFileError
from gpumem.contracts.findings import Finding, from_dict
from gpumem.results.store import MANIFEST, manifest_problem

#: Largest manifest read (a 60-experiment run's is under 1 MB).
MAX_BYTES = 64 * 1024 * 1024
#: Entry statuses whose findings are read (those a run directory's reading commands use).
READ = ("complete", "failed")


def is_manifest_file(path: Path) -> bool:
    """Whether ``path`` names a manifest file (``manifest.json``, ``NAME.manifest.json``)."""
    p = Path(path)
    return p.is_file() and (p.name == MANIFEST or p.name.endswith("." + MANIFEST))


@dataclass
class KeptEntry:
    """One entry of a manifest: where it was measured, by which experiment and version, and
    the findings it recorded."""

    key: str
    experiment: str
    arch: str
    device_key: str
    version: str
    findings: list[Finding] = field(default_factory=list)


def read_manifest_file(path: Path) -> dict[str, Any]:
    """The manifest at ``path``, checked for shape; ResultsFileError (one line) otherwise."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise ResultsFileError(f"{p}: {size} bytes, more than a manifest holds "
                                   f"({MAX_BYTES})")
        data = json.loads(p.read_bytes())
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: JSON nested deep
        raise ResultsFileError(f"{p}: cannot read run manifest ({type(e).__name__}: "
                               f"{e})".replace("\n", " ")) from None
    problem = manifest_problem(data)
    if problem:
        raise ResultsFileError(f"{p}: not a gpumem run manifest ({problem})")
    return data


def label_of(manifest: Path) -> str:
    """A manifest file's run label: its folder's name (``RUN/manifest.json``) or the name
    before ``.manifest.json``."""
    p = Path(manifest)
    return p.parent.name if p.name == MANIFEST else p.name.removesuffix("." + MANIFEST)


def kept_entries(path: Path, data: dict[str, Any] | None = None) -> list[KeptEntry]:
    """Every ``complete`` or ``failed`` entry of the manifest at ``path`` with the findings
    it recorded, in key order; ``data``: the manifest as :func:`read_manifest_file` already
    read it."""
    data = read_manifest_file(path) if data is None else data
    out = []
    for key, e in sorted(data["entries"].items()):
        if str(e.get("status", "")) not in READ:
            continue
        recorded = e.get("findings") or {}
        if not isinstance(recorded, dict):
            raise ResultsFileError(f"{path}: entry '{key}': 'findings' is not an object")
        found = []
        for name, d in recorded.items():
            try:
                if not isinstance(d, dict):
                    raise TypeError(f"a JSON {type(d).__name__}, not an object")
                found.append(from_dict(str(name), d))
            except (KeyError, TypeError, ValueError) as err:
                raise ResultsFileError(f"{path}: entry '{key}', finding '{name}': cannot "
                                       f"read it back ({err})".replace("\n", " ")) from None
        version = e.get("experiment_version")
        out.append(KeptEntry(str(key), str(e.get("experiment", "")), str(e.get("arch", "")),
                             str(e.get("device", "")),
                             "" if version is None else str(version), found))
    return out
