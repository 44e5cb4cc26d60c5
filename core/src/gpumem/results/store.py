"""The run store: one netCDF4 file per (device, experiment, parameters) and a run manifest.

Layout of a run directory::

    RUN_DIR/manifest.json                       what ran, its status, file and checksum
    RUN_DIR/<device key>/<experiment>-<params>.nc   raw data (root group) + findings group

Files are written once: to a temporary file in the same folder, fsynced, reopened and
compared with what was meant to be written, then renamed into place (an atomic step on POSIX
file systems) and the folder fsynced. Only then does the manifest mark the entry complete.
The manifest is the one shared file; every update is a read-modify-write under a lock file
and is itself written by rename. So two runs writing to the same directory never corrupt each
other, and an interrupted run keeps everything it finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import xarray as xr
from filelock import FileLock

from gpumem.errors import ResultsFileError, UsageError
from gpumem.results.io import FINDINGS_GROUP, open_findings, open_raw
from gpumem.results.schema import now_iso

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
STATUSES = ("running", "complete", "failed", "skipped", "interrupted")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _encoding(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    enc = {}
    for name, var in ds.variables.items():
        if var.dtype.kind in "fiu" and var.size > 16:
            enc[name] = {"zlib": True, "complevel": 4}
    return enc


def _same(a: xr.Dataset, b: xr.Dataset) -> bool:
    if set(a.variables) != set(b.variables):
        return False
    for name in a.variables:
        x, y = a[name].values, b[name].values
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            if not np.array_equal(x.astype(float), y.astype(float), equal_nan=True):
                return False
        elif not np.array_equal(x.astype(str) if x.dtype.kind == "O" else x,
                                y.astype(str) if y.dtype.kind == "O" else y):
            return False
    return True


def write_results_file(path: Path, raw: xr.Dataset, findings: xr.Dataset) -> str:
    """Write ``raw`` (root group) and ``findings`` (group ``findings``) atomically.

    Returns the SHA-256 of the file. Raises ``OSError`` (and leaves nothing behind but what
    was there before) if the write or the verification fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        raw.to_netcdf(tmp, mode="w", engine="netcdf4", format="NETCDF4", encoding=_encoding(raw))
        findings.to_netcdf(tmp, mode="a", group=FINDINGS_GROUP, engine="netcdf4")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if not (_same(open_raw(tmp), raw) and _same(open_findings(tmp), findings)):
            raise OSError(f"verification of {tmp} failed: reopened data differ")
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return sha256_file(path)


@dataclass
class Entry:
    """One manifest entry (a device x experiment x parameters result)."""

    key: str
    data: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.data.get("status", ""))


class RunStore:
    """A run directory. Create with :meth:`open` (which validates it is writable)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.manifest_path = self.root / MANIFEST
        self._lock = FileLock(str(self.root / (MANIFEST + ".lock")), timeout=60)

    # ---- opening ---------------------------------------------------------------------
    @staticmethod
    def check_writable(root: Path) -> None:
        """Raise UsageError unless ``root`` is, or can be made, a writable directory.

        Creates nothing: the check looks at the nearest existing ancestor.
        """
        root = Path(root)
        if root.exists():
            if not root.is_dir():
                raise UsageError(f"--out {root}: exists and is not a directory")
            if not os.access(root, os.W_OK | os.X_OK):
                raise UsageError(f"--out {root}: directory is not writable")
            if (root / MANIFEST).exists() and not os.access(root / MANIFEST, os.W_OK):
                raise UsageError(f"--out {root}: {MANIFEST} is not writable")
            return
        parent = root.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise UsageError(f"--out {root}: cannot create it ({parent} is not a directory)")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"--out {root}: cannot create it ({parent} is not writable)")

    @classmethod
    def open(cls, root: Path) -> RunStore:
        cls.check_writable(root)
        Path(root).mkdir(parents=True, exist_ok=True)
        store = cls(root)
        store.read()  # a corrupt manifest is an error now, not after measuring
        return store

    # ---- manifest --------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        if not self.manifest_path.exists():
            return {"gpumem_manifest_version": MANIFEST_VERSION, "runs": [], "entries": {}}
        try:
            data = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as e:
            raise ResultsFileError(f"{self.manifest_path}: cannot read run manifest "
                                   f"({type(e).__name__}: {e})") from None
        if not isinstance(data, dict) or "entries" not in data:
            raise ResultsFileError(f"{self.manifest_path}: not a gpumem run manifest")
        return data

    def update(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply ``change`` to the manifest under the lock and write it back atomically."""
        with self._lock:
            data = self.read()
            change(data)
            tmp = self.manifest_path.with_name(f".{MANIFEST}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.manifest_path)
            _fsync_dir(self.root)
        return data

    def start_run(self, info: dict[str, Any]) -> None:
        self.update(lambda d: d.setdefault("runs", []).append({"started": now_iso(), **info}))

    def set_entry(self, key: str, **fields: Any) -> None:
        def change(d: dict[str, Any]) -> None:
            entry = d.setdefault("entries", {}).setdefault(key, {})
            entry.update(fields)
            entry["updated"] = now_iso()
        self.update(change)

    def entries(self) -> Iterator[Entry]:
        for key, data in sorted(self.read().get("entries", {}).items()):
            yield Entry(key, data)

    def entry(self, key: str) -> Entry | None:
        data = self.read().get("entries", {}).get(key)
        return Entry(key, data) if data is not None else None

    # ---- files -----------------------------------------------------------------------
    @staticmethod
    def entry_key(device_key: str, experiment: str, params_hash: str) -> str:
        return f"{device_key}/{experiment}/{params_hash}"

    def file_for(self, device_key: str, experiment: str, params_hash: str) -> Path:
        return self.root / device_key / f"{experiment}-{params_hash}.nc"

    def is_complete(self, key: str) -> tuple[bool, str]:
        """(complete and intact?, why not). Checks the file exists and its checksum matches."""
        e = self.entry(key)
        if e is None:
            return False, "not in the manifest"
        if e.status != "complete":
            return False, f"status {e.status}"
        path = self.root / e.data.get("file", "")
        if not path.is_file():
            return False, f"{path} is missing"
        if sha256_file(path) != e.data.get("sha256"):
            return False, f"{path} does not match its checksum"
        return True, ""

    def write(self, device_key: str, experiment: str, params_hash: str,
              raw: xr.Dataset, findings: xr.Dataset) -> tuple[Path, str]:
        path = self.file_for(device_key, experiment, params_hash)
        return path, write_results_file(path, raw, findings)

    def result_files(self) -> list[Path]:
        return sorted(p for p in self.root.glob("*/*.nc") if not p.name.startswith("."))
