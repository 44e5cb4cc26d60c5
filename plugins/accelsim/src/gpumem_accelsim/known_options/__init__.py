"""The option names each simulator version registers, to check a config before running it.

A name the binary does not register stops it at start-up (``GPGPU-Sim ** ERROR: Unknown
Option``, exit 1), and names come and go between versions: the SM90_H100 config needs a build
from after October 2024, and some tested configs carry names their own build no longer knows.
The lists are plain text files next to this module, one name per line, extracted from the
simulators' sources; each file's header names the repositories, files and commits.

Versions (ids for :func:`known_options`):

``accelsim-dev-2024-10``
    Accel-Sim ``dev`` of October 2024: accel-sim/gpgpu-sim_distribution @ 667834cf with the
    trace-driven options of accel-sim/accel-sim-framework @ 73f9fac6 (237 names).
``gpgpusim-upstream-h100``
    upstream gpgpu-sim/gpgpu-sim_distribution @ baf2b8f0, the commit with the SM80_A100 and
    SM90_H100 configs, with the same trace-driven options (251 names): adds chiplet
    partitions, the L2 request coalescer (``-gpgpu_lrc_*``), ``-gpgpu_opndcoll_model`` and
    ``-gpgpu_simple_dram_clock_multiplier`` among others.

A list holds names only: a value one version accepts and another rejects (partition indexing
6 is new with the H100 commit) is not visible here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources

VERSIONS = ("accelsim-dev-2024-10", "gpgpusim-upstream-h100")

PARSER_BUILTINS = frozenset({"-config"})
"""Names the option parser handles itself in every version (``-config FILE`` reads a file)."""


def _check(version: str) -> None:
    if version not in VERSIONS:
        raise ValueError(f"unknown simulator version {version!r}; known versions: "
                         f"{', '.join(VERSIONS)}")


def _text(version: str) -> str:
    _check(version)
    return resources.files(__name__).joinpath(f"{version}.txt").read_text(encoding="utf-8")


@functools.cache
def registered_options(version: str) -> frozenset[str]:
    """The names ``version`` registers, as listed in its data file."""
    return frozenset(line.strip() for line in _text(version).splitlines()
                     if line.strip() and not line.lstrip().startswith("#"))


def known_options(version: str) -> frozenset[str]:
    """Every name ``version`` accepts: the registered ones and :data:`PARSER_BUILTINS`."""
    return registered_options(version) | PARSER_BUILTINS


def provenance(version: str) -> str:
    """The header of ``version``'s data file: where and from which commits the names come."""
    return "\n".join(line[1:].strip() for line in _text(version).splitlines()
                     if line.startswith("#"))


def unknown_options(optfile: Iterable[str], version: str) -> list[str]:
    """The names of ``optfile`` (an ``OptionFile``, or any names) that ``version`` would
    reject as unknown, in file order."""
    known = known_options(version)
    return [name for name in optfile if name not in known]
