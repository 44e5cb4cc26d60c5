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

Faults: an entry is *owned* by the process that set it ``running`` (``owner``, ``pid``,
``host``); a process marks interrupted or failed only entries it owns, and a re-run that is
interrupted restores the complete result it displaced. Renaming a file into place and
recording it happen under the lock together. Signals wait while a file or the manifest is
written (:func:`~gpumem.results.io.defer_signals`). Opening a run for writing removes temporary
files of dead writers on this host and marks their ``running`` entries interrupted. Nothing
is written through a symlink below the run directory.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import os
import re
import socket
import uuid
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from filelock import FileLock

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None  # type: ignore[assignment]  # a module where it exists, None here

from gpumem.contracts.errors import GpumemError, ResultsFileError, UsageError
from gpumem.contracts.units import encode
from gpumem.results.io import FINDINGS_GROUP, defer_signals, open_findings, open_raw
from gpumem.results.schema import now_iso
from gpumem.safe_write import EXCLUSIVE_FLAGS, fsync_dir, os_cause

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
STATUSES = ("running", "complete", "failed", "skipped", "interrupted")
HOST = socket.gethostname()
HOST_ID = hashlib.sha256(HOST.encode()).hexdigest()[:8]
# temporary files this module creates: .<name>.<pid>@<host id>.<random>.tmp
_TMP_RE = re.compile(r"^\..+\.(?P<pid>\d+)@(?P<host>[0-9a-f]{8})\.[0-9a-f]{8}\.tmp$")


class ResultsWriteError(GpumemError):
    """A results file or the manifest could not be written (disk full, permissions)."""


class OutsideRun(ResultsFileError):
    """A manifest entry names a file outside its run directory: it is not read."""


def file_of(root: Path, name: Any) -> Path:
    """The results file that a manifest entry's ``file`` (``name``) names in the run directory
    ``root``. Only a relative name that stays inside ``root`` once symlinks are resolved is a
    results file; anything else raises :class:`OutsideRun` (a :class:`ResultsFileError`), and
    nothing is opened: an edited manifest must not make gpumem read (or resume from) another
    run's file, or ``../victims/passwd``."""
    root = Path(root)
    if not isinstance(name, str) or not name or "\0" in name:
        raise ResultsFileError(f"{root / MANIFEST}: an entry's 'file' is not a file name "
                               f"({name!r})")
    path = root / name
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts or not _inside(path, root.resolve()):
        raise OutsideRun(f"{path}: the manifest names a file outside the run directory; it is "
                         f"not read")
    return path


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}@{HOST_ID}.{uuid.uuid4().hex[:8]}.tmp")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a process we may not signal does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def dead_writer(entry: dict[str, Any]) -> bool:
    """A ``running`` entry whose process ran on this host and is gone (killed mid-run)."""
    pid = entry.get("pid")
    return entry.get("status") == "running" and entry.get("host") == HOST and \
        isinstance(pid, int) and not pid_alive(pid)


def _create_exclusive(path: Path) -> None:
    """Create ``path`` empty; fail if anything (a file, a planted symlink) is already there."""
    fd = os.open(path, EXCLUSIVE_FLAGS, 0o644)
    os.close(fd)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: zlib level of every numeric variable: a chase log of 3 M events (cache_structure, 76 MB
#: in memory) writes in 0.26 s at level 1 against 0.58 s at level 4, for a file 14 % larger
#: (2.95 against 2.59 MB): the write is on a run's critical path, the bytes are not.
COMPLEVEL = 1


def _encoding(ds: xr.Dataset) -> dict[Hashable, dict[str, Any]]:
    enc: dict[Hashable, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        if var.dtype.kind in "fiu" and var.size > 16:
            enc[name] = {"zlib": True, "complevel": COMPLEVEL}
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


def free_bytes(folder: Path) -> int | None:
    """Bytes an unprivileged writer can still use on ``folder``'s file system (None:
    unknown)."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def _os_error(code: int, detail: str) -> OSError:
    """``OSError(code)`` whose one-line cause (:func:`~gpumem.safe_write.os_cause`) adds
    ``detail``."""
    err = OSError(code, os.strerror(code))
    err.gpumem_detail = detail  # type: ignore[attr-defined]  # an extra attribute we read back
    return err


def _netcdf_failure(e: RuntimeError, tmp: Path, need: int) -> OSError:
    """netCDF's opaque ``RuntimeError`` ("NetCDF: HDF error") raised while writing ``tmp``, as
    the ``OSError`` it stands for: a full disk (less free space than the ``need`` bytes being
    written), the file-size limit (``ulimit -f``), or else netCDF's own words."""
    try:
        size = tmp.stat().st_size
    except OSError:
        size = 0
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0] if resource else -1
    said = f"netCDF said: {e}"
    if resource and limit != resource.RLIM_INFINITY and size + need >= limit:
        return _os_error(errno.EFBIG, f"the file-size limit (ulimit -f) is {limit} bytes; {said}")
    free = free_bytes(tmp.parent)
    if free is not None and free < need:
        return _os_error(errno.ENOSPC, f"{free:,} bytes free on {tmp.parent}; {said}")
    return OSError(f"netCDF could not write it ({e})")


def _discard(tmp: Path) -> None:
    """Remove a failed temporary file and free its space now. netCDF keeps a file open when
    closing it failed (a full disk), so removing the name frees nothing: the file is
    truncated (its blocks freed), netCDF's handle closed where it can be (closing writes
    netCDF's cached data back), truncated again, then removed."""
    def truncate() -> None:
        try:
            os.truncate(tmp, 0)
        except OSError:
            pass

    truncate()
    try:
        import netCDF4

        for obj in gc.get_objects():
            # type(), not isinstance(): a dead weakref.proxy among gc's objects (Numba keeps
            # some) raises ReferenceError when isinstance asks it for its __class__
            if issubclass(type(obj), netCDF4.Dataset):
                try:
                    if obj.isopen() and Path(obj.filepath()) == tmp:
                        obj.close()
                except Exception:  # noqa: BLE001 - best effort: truncating frees the space
                    pass
    except ImportError:  # pragma: no cover - netCDF4 is a dependency
        pass
    truncate()
    tmp.unlink(missing_ok=True)


def _write_tmp(path: Path, raw: xr.Dataset, findings: xr.Dataset) -> Path:
    """Write and verify a temporary file next to ``path`` (removed again on any failure).
    netCDF's ``RuntimeError`` becomes an ``OSError`` saying why (:func:`_netcdf_failure`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw, findings = encode(raw), encode(findings)  # CF units, long_name on every coordinate
    tmp = _tmp_name(path)
    _create_exclusive(tmp)
    try:
        raw.to_netcdf(tmp, mode="w", engine="netcdf4", format="NETCDF4", encoding=_encoding(raw))
        findings.to_netcdf(tmp, mode="a", group=FINDINGS_GROUP, engine="netcdf4")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if not (_same(open_raw(tmp), raw) and _same(open_findings(tmp), findings)):
            raise OSError(f"verification of {tmp} failed: reopened data differ")
    except RuntimeError as e:
        if not str(e).startswith("NetCDF:"):
            _discard(tmp)
            raise
        err = _netcdf_failure(e, tmp, raw.nbytes + findings.nbytes + (1 << 20))
        _discard(tmp)
        raise err from None
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def write_results_file(path: Path, raw: xr.Dataset, findings: xr.Dataset) -> str:
    """Write ``raw`` (root group) and ``findings`` (group ``findings``) atomically.

    Returns the SHA-256 of the file. Raises ``OSError`` (and leaves nothing behind but what
    was there before) if the write or the verification fails. Signals wait until it is done.
    """
    with defer_signals():
        tmp = _write_tmp(path, raw, findings)
        try:
            os.replace(tmp, path)
            fsync_dir(path.parent)
        finally:
            tmp.unlink(missing_ok=True)
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
        # this process's mark on the entries it sets running (pid alone can be reused)
        self.owner = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stale: list[str] = []  # what open() found left running by dead processes

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
        """Open ``root`` for writing: check it, read the manifest, clear what dead writers
        left (see :meth:`clean_stale`)."""
        cls.check_writable(root)
        Path(root).mkdir(parents=True, exist_ok=True)
        store = cls(root)
        for name in (MANIFEST, MANIFEST + ".lock"):
            store.check_no_symlink(store.root / name)
        store.read()  # a corrupt manifest is an error now, not after measuring
        store.stale = store.clean_stale()
        return store

    def check_no_symlink(self, path: Path) -> None:
        """Refuse (UsageError) to write ``path`` if it, or a folder between the run directory
        and it, is a symlink: a planted link would send results outside ``--out``."""
        path = Path(path)
        rel = path.relative_to(self.root)
        p = self.root
        for part in rel.parts:
            p = p / part
            if p.is_symlink():
                raise UsageError(f"{p} is a symlink; refusing to write through it (results "
                                 f"stay inside {self.root})")

    def clean_stale(self) -> list[str]:
        """Remove temporary files of writers on this host that are gone, and mark entries
        they left ``running`` interrupted (or restore the result they displaced). Returns
        one message per stale entry."""
        dirs = [self.root, *(d for d in self.root.iterdir() if d.is_dir())]
        for d in (d for d in dirs if d == self.root or not d.is_symlink()):  # not via links
            for tmp in d.glob(".*.tmp"):
                m = _TMP_RE.match(tmp.name)
                if m and m["host"] == HOST_ID and not pid_alive(int(m["pid"])) and \
                        not tmp.is_dir():
                    tmp.unlink(missing_ok=True)
        stale: list[str] = []

        def change(d: dict[str, Any]) -> None:
            for key, e in d.get("entries", {}).items():
                if dead_writer(e):
                    why = f"stale: process {e['pid']} ended without finishing it (killed?)"
                    d["entries"][key] = self._released(e, "interrupted", why)
                    stale.append(f"{key}: {why}; marked {d['entries'][key]['status']}")

        if any(e.status == "running" for e in self.entries()):
            self.update(change)
        return stale

    # ---- manifest --------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        """The manifest; ResultsFileError (naming it and what is wrong) unless well formed."""
        if not self.manifest_path.exists():
            return {"gpumem_manifest_version": MANIFEST_VERSION, "runs": [], "entries": {}}
        try:
            data = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError, RecursionError) as e:  # RecursionError: nested deep
            raise ResultsFileError(f"{self.manifest_path}: cannot read run manifest "
                                   f"({type(e).__name__}: {e})") from None
        problem = manifest_problem(data)
        if problem:
            raise ResultsFileError(f"{self.manifest_path}: not a gpumem run manifest "
                                   f"({problem})")
        return data

    def update(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply ``change`` to the manifest under the lock and write it back atomically.
        Signals wait until it is written; a failed write leaves the old manifest."""
        with self._lock, defer_signals():  # waiting for the lock stays interruptible
            data = self.read()
            change(data)
            tmp = _tmp_name(self.manifest_path)
            try:
                _create_exclusive(tmp)
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
                with open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
                os.replace(tmp, self.manifest_path)
            except OSError as e:
                raise ResultsWriteError(f"cannot write {self.manifest_path}: {os_cause(e)}") \
                    from None
            finally:
                tmp.unlink(missing_ok=True)
            fsync_dir(self.root)
        return data

    def start_run(self, info: dict[str, Any]) -> None:
        self.update(lambda d: d.setdefault("runs", []).append({"started": now_iso(), **info}))

    def set_entry(self, key: str, **fields: Any) -> None:
        def change(d: dict[str, Any]) -> None:
            entry = d.setdefault("entries", {}).setdefault(key, {})
            entry.update(fields)
            entry["updated"] = now_iso()
        self.update(change)

    def claim(self, key: str, **fields: Any) -> None:
        """Mark ``key`` running and owned by this process. A complete result it displaces
        is kept in the entry (``previous``) until this run replaces it."""
        def change(d: dict[str, Any]) -> None:
            entries = d.setdefault("entries", {})
            old = entries.get(key) or {}
            if old.get("status") != "complete":
                old = old.get("previous") or {}
            old.pop("previous", None)
            entries[key] = {**fields, "status": "running", "owner": self.owner,
                            "pid": os.getpid(), "host": HOST, "started": now_iso(),
                            "updated": now_iso(), "error": "",
                            **({"previous": old} if old else {})}
        self.update(change)

    def _released(self, e: dict[str, Any], status: str, error: str) -> dict[str, Any]:
        prev = e.get("previous")
        if isinstance(prev, dict) and prev.get("status") == "complete":
            try:
                path: Path | None = self.path_of(prev)
            except ResultsFileError:
                path = None  # a result outside the run is not this run's to restore
            if path is not None and path.is_file() and sha256_file(path) == prev.get("sha256"):
                return {**prev, "updated": now_iso(),
                        "note": f"a re-run was {status} ({error}); this result was kept"}
        return {**{k: v for k, v in e.items() if k != "previous"}, "status": status,
                "error": error, "updated": now_iso()}

    def release(self, key: str, status: str, error: str) -> bool:
        """End this process's ``running`` entry ``key`` as ``status`` (interrupted, failed,
        skipped). Touches nothing another process owns. Returns whether it changed it."""
        done = []

        def change(d: dict[str, Any]) -> None:
            e = d.get("entries", {}).get(key)
            if e and e.get("owner") == self.owner and e.get("status") == "running":
                d["entries"][key] = self._released(e, status, error)
                done.append(key)
        self.update(change)
        return bool(done)

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

    def path_of(self, data: dict[str, Any]) -> Path:
        """The results file a manifest entry names, inside this run only (:func:`file_of`)."""
        return file_of(self.root, data.get("file"))

    def is_complete(self, key: str) -> tuple[bool, str]:
        """(complete and intact?, why not). Checks the file exists and its checksum matches."""
        e = self.entry(key)
        if e is None:
            return False, "not in the manifest"
        if e.status != "complete":
            return False, f"status {e.status}"
        try:
            path = self.path_of(e.data)
        except ResultsFileError as err:
            return False, str(err)
        if not path.is_file():
            return False, f"{path} is missing"
        if sha256_file(path) != e.data.get("sha256"):
            return False, f"{path} does not match its checksum"
        return True, ""

    def write(self, device_key: str, experiment: str, params_hash: str,
              raw: xr.Dataset, findings: xr.Dataset, key: str | None = None,
              fields: dict[str, Any] | None = None) -> tuple[Path, str]:
        """Write a results file; with ``key``, record it (``fields``, ``file``, ``sha256``,
        ``size``) in the manifest in the same locked step as the rename, so the manifest always
        describes the file on disk even when two runs write the same one. Signals wait until
        both are done. OSError becomes ResultsWriteError naming the file and the cause."""
        path = self.file_for(device_key, experiment, params_hash)
        self.check_no_symlink(path)
        with defer_signals():
            try:
                tmp = _write_tmp(path, raw, findings)
            except OSError as e:
                raise ResultsWriteError(f"cannot write {path}: {os_cause(e)}") from None
            try:
                sha, size = sha256_file(tmp), tmp.stat().st_size
                with self._lock:
                    self.check_no_symlink(path)
                    os.replace(tmp, path)
                    fsync_dir(path.parent)
                    if key is not None:
                        self.update(lambda d: _record(d, key, {
                            **(fields or {}), "file": str(path.relative_to(self.root)),
                            "sha256": sha, "size": size, "owner": self.owner, "pid": os.getpid(),
                            "host": HOST}))
            except OSError as e:
                raise ResultsWriteError(f"cannot write {path}: {os_cause(e)}") from None
            finally:
                tmp.unlink(missing_ok=True)
        return path, sha

    def result_files(self) -> list[Path]:
        """The results files in the run's device folders; a symlink leading out of the run
        (a planted device folder or file) is not one of them."""
        root = self.root.resolve()
        return sorted(p for p in self.root.glob("*/*.nc") if not p.name.startswith(".")
                      and _inside(p, root))


def _inside(path: Path, root: Path) -> bool:
    """``path`` resolves (symlinks followed) to a place inside the resolved ``root``."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _record(d: dict[str, Any], key: str, fields: dict[str, Any]) -> None:
    entry = d.setdefault("entries", {}).setdefault(key, {})
    entry.pop("previous", None)
    entry.pop("note", None)
    entry.update(fields, updated=now_iso())


def _json_type(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def manifest_problem(data: Any) -> str:
    """What makes ``data`` not a manifest, or ''."""
    if not isinstance(data, dict):
        return f"top level is a JSON {_json_type(data)}, not an object"
    if "entries" not in data:
        return "no 'entries'"
    if not isinstance(data["entries"], dict):
        return f"'entries' is a JSON {_json_type(data['entries'])}, not an object"
    for key, e in data["entries"].items():
        if not isinstance(e, dict):
            return f"entry '{key}' is a JSON {_json_type(e)}, not an object"
        for where, d in (("", e), ("previous ", e.get("previous"))):
            name = d.get("file") if isinstance(d, dict) else None
            if name is not None and not isinstance(name, str):
                return f"entry '{key}': {where}'file' is a JSON {_json_type(name)}, not a string"
            if isinstance(name, str) and "\0" in name:
                return f"entry '{key}': {where}'file' holds a NUL character"
    if not isinstance(data.get("runs", []), list):
        return f"'runs' is a JSON {_json_type(data['runs'])}, not an array"
    return ""
