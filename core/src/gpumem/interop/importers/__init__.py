"""Other tools' results as gpumem run directories (``gpumem import mt4g|gpu-benches FILE``).

An importer turns one result file of another tool into a run directory that ``gpumem show``,
``gpumem compare`` and ``gpumem report`` read like a measured one: ``manifest.json`` and one
netCDF file per gpumem experiment. The root group holds the tool's own numbers as a labeled
dataset (its units, its statistics); the findings group holds gpumem findings, named only where
the meaning matches one of ``docs/findings.md`` and converted to gpumem's units, each with a
``method`` that says where the number comes from and what was converted.

A finding is filed under the gpumem experiment that emits the same name (``lat.l1`` under
``latency``, ``bw.l2`` under ``bandwidth_levels``) because ``gpumem compare`` lines rows up by
(experiment, finding): so an imported MT4G run sits row by row beside a measured one.

Everything is parsed and checked before a byte is written; the run directory is then built in
a hidden folder next to ``--out`` and renamed into place, so a failed import leaves nothing.
Imported files carry ``gpumem_imported_from`` (the tool) so that readers that re-analyse raw
data know it is not gpumem's own schema.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from gpumem import __version__
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.errors import UsageError
from gpumem.contracts.findings import Finding, evaluate, to_dataset
from gpumem.contracts.formats import FormatError
from gpumem.results.schema import POINT_OK, attr_safe, global_attrs, now_iso
from gpumem.results.store import MANIFEST, RunStore

if TYPE_CHECKING:
    from gpumem.contracts.formats import PluginSet

#: Version of the importers' mapping; part of each file's params hash and provenance.
IMPORTER_VERSION = "1"

__all__ = ["IMPORTER_VERSION", "Imported", "Source", "FormatError", "check_out", "read_source",
           "resolve_arch", "write_run", "point_status", "var"]


@dataclass
class Source:
    """The other tool's file as read: path, bytes and their SHA-256."""

    path: Path
    data: bytes
    sha256: str

    def text(self, what: str) -> str:
        """The file as UTF-8 text; a binary file is a FormatError naming ``what`` was expected."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"{self.path}: not a text file (byte {e.start} is not UTF-8); "
                              f"expected {what}") from None


@dataclass
class Imported:
    """One results file to write: the gpumem experiment it stands for, raw data, findings."""

    experiment: str
    raw: xr.Dataset
    findings: list[Finding] = field(default_factory=list)
    points: int = 0


#: The largest result file an importer reads (MT4G's JSON and gpu-benches' output are
#: kilobytes; the whole file is kept in every results file as ``source_text``).
MAX_SOURCE_BYTES = 64 << 20


def read_source(path: Path) -> Source:
    """Read the whole file; an unreadable path is a usage error (exit 2), like a missing one.
    Only a regular file of at most :data:`MAX_SOURCE_BYTES` is read: a FIFO would block and
    ``/dev/zero`` would fill the memory."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: no wait
        with open(fd, "rb", buffering=0) as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise UsageError(f"{path}: not a regular file (give the tool's result file)")
            data = f.read(MAX_SOURCE_BYTES + 1)
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory (give the tool's result file)") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise UsageError(f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB: not a tool's "
                         f"result file")
    return Source(path, data, hashlib.sha256(data).hexdigest())


def check_out(out: Path) -> None:
    """``--out`` must be a new or empty directory: an import never merges into a run."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out}: exists and is not an empty directory (an import "
                         f"writes a new run directory)")
    RunStore.check_writable(out)


def resolve_arch(plugins: PluginSet, arch: str | None, compute_capability: str = "",
                 vendor: str = "") -> str:
    """The architecture the run belongs to: ``--arch`` (checked), else the one plugin that
    claims the tool's reported compute capability *and* vendor (HIP reports an MI100 as 9.0,
    like a Hopper), else "" (no expected values then)."""
    archs = plugins.architectures()
    if arch:
        if arch not in archs:
            raise UsageError(f"unknown architecture '{arch}' (choose from: "
                             f"{', '.join(sorted(archs)) or 'none'})")
        return arch
    if compute_capability and vendor:
        claimed = [n for n, a in archs.items() if a.claims(compute_capability)
                   and str(getattr(a, "vendor", "")).lower() == vendor.lower()]
        if len(claimed) == 1:
            return claimed[0]
    return ""


def var(dims: str | tuple[str, ...], values: Any, units: str, long_name: str,
        **attrs: Any) -> tuple:
    """A data variable tuple with the ``units`` and ``long_name`` every variable must carry."""
    dims = (dims,) if isinstance(dims, str) else dims
    return (dims, values, {"units": units, "long_name": long_name, **attrs})


def point_status(dims: str | tuple[str, ...], shape: tuple[int, ...] | int) -> tuple:
    """``point_status`` as gpumem's schema has it: every imported point is ok."""
    dims = (dims,) if isinstance(dims, str) else dims
    return (dims, np.full(shape, POINT_OK, dtype=np.int8), {
        "long_name": "outcome of each sweep point", "units": "1",
        "flag_values": np.array([0, 1, 2], dtype=np.int8),
        "flag_meanings": "ok skipped failed", "reasons": "{}"})


def _params_hash(tool: str, benchmark: str, experiment: str, sha256: str) -> str:
    blob = json.dumps([tool, benchmark, experiment, sha256, IMPORTER_VERSION])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _expected(plugins: PluginSet, arch: str, device: DeviceInfo) -> list:
    return plugins.expected_values(arch, device) if arch else []


def write_run(out: Path, files: list[Imported], *, source: Source, tool: str, benchmark: str,
              device: DeviceInfo, arch: str, provenance: dict[str, Any], references: str,
              fmt: str, plugins: PluginSet) -> Path:
    """Write the run directory ``out`` atomically: built next to it, then renamed.

    ``provenance`` becomes global attributes of every file (tool, version, device as the tool
    reported it ...) besides gpumem's own (``docs/results.md``).
    """
    out = Path(out)
    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = ["gpumem", "import", fmt, str(source.path), "--out", str(out)]
    expected = _expected(plugins, arch, device)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".import", dir=out.parent))
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o777 & ~mask)  # mkdtemp's 0700 is for the hidden build folder only
        store = RunStore(tmp)
        store.start_run({"argv": argv, "arch": arch, "device": device.key, "pid": os.getpid(),
                         "python": sys.version.split()[0], "imported_from": tool,
                         "source_file": source.path.name, "source_sha256": source.sha256})
        for f in files:
            _write_one(store, f, source=source, tool=tool, benchmark=benchmark, device=device,
                       arch=arch, provenance=provenance, references=references, argv=argv,
                       expected=expected)
        (tmp / (MANIFEST + ".lock")).unlink(missing_ok=True)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _write_one(store: RunStore, f: Imported, *, source: Source, tool: str, benchmark: str,
               device: DeviceInfo, arch: str, provenance: dict[str, Any], references: str,
               argv: list[str], expected: list) -> None:
    started = now_iso()
    phash = _params_hash(tool, benchmark, f.experiment, source.sha256)
    raw = f.raw.copy()
    attrs = global_attrs(
        experiment=f.experiment, experiment_version=f"imported ({tool}, importer "
        f"{IMPORTER_VERSION})", summary=f"{tool} {benchmark} results imported",
        arch=arch, device=device, source="measured", plugin="core",
        plugin_version=__version__, params_hash=phash, argv=argv, provenance={},
        references=references)
    for unknown in ("smem_bank_modes", "load_paths"):  # the tools do not report them
        attrs.pop(unknown, None)
    reported = device.name or "an unnamed device"
    attrs["source"] = (f"measured by {tool} ({benchmark}) on {reported}; imported by gpumem "
                       f"{__version__}")
    attrs["comment"] = (f"raw data: {tool}'s numbers as it printed them; findings: gpumem "
                        f"names where the meaning matches, converted to gpumem's units")
    attrs["gpumem_imported_from"] = tool
    attrs["gpumem_importer_version"] = IMPORTER_VERSION
    attrs["gpumem_throttled_points"] = 0
    for k, v in provenance.items():
        attrs[k] = attr_safe(v)
    raw.attrs.update(attrs)
    findings = evaluate(f.findings, expected)
    fds = to_dataset(findings)
    fds.attrs.update({k: raw.attrs[k] for k in ("gpumem_experiment", "device_key",
                                                  "gpumem_arch", "date_created")})
    path, sha = store.write(device.key, f.experiment, phash, raw, fds)
    key = store.entry_key(device.key, f.experiment, phash)
    store.set_entry(key, device=device.key, experiment=f.experiment, params_hash=phash,
                    arch=arch, status="complete", started=started, finished=now_iso(),
                    pid=os.getpid(), error="", file=str(path.relative_to(store.root)),
                    sha256=sha, size=path.stat().st_size, wall_s=0.0, points=f.points,
                    throttled_points=0, imported_from=tool,
                    findings={x.name: x.as_dict() for x in findings})
