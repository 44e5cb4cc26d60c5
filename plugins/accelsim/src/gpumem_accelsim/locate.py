"""Finding an installed Accel-Sim binary, and the user's limit on trace size."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

ENV = "GPUMEM_ACCELSIM"
BINARY = "accel-sim.out"
#: Largest trace (warp instructions over its kernels) the device simulates; larger requests
#: are skipped points. Default: :data:`gpumem_accelsim.traces.MAX_WARP_INSTS`.
LIMIT_ENV = "GPUMEM_ACCELSIM_MAX_WARP_INSTS"


#: Seconds the one trial run may take (it only prints its build and stops for want of a
#: config; loading a large binary from a slow disk takes a few seconds).
PROBE_TIMEOUT_S = 60.0
_BUILD = re.compile(r"Accel-Sim \[build ([^\]]+)\]")


def find_binary() -> tuple[Path | None, str]:
    """(path of an Accel-Sim binary that runs, or None; why not). An executable file is not
    enough: the binary is run once (:func:`probe`), as a user's first run would, and must
    print Accel-Sim's build line."""
    configured = os.environ.get(ENV, "").strip()
    if configured:
        p = Path(configured).expanduser()
        if not p.exists():
            return None, f"{ENV}={configured}: no such file"
        if not (p.is_file() and os.access(p, os.X_OK)):
            return None, f"{ENV}={configured} is not an executable file"
        found: Path | None = p
    else:
        which = shutil.which(BINARY)
        if not which:
            return None, f"Accel-Sim is not installed here (no {BINARY} on PATH; set {ENV})"
        found = Path(which)
    build, why = probe(found)
    return (found, "") if build else (None, why)


def probe(path: Path) -> tuple[str, str]:
    """(Accel-Sim's build string, "") when ``path`` runs and says it is Accel-Sim, else
    ("", why not). Run once per file version in a process (cached on path, size, mtime)."""
    st = path.stat()
    return _probe(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _probe(path: str, _size: int, _mtime: int) -> tuple[str, str]:
    try:
        with tempfile.TemporaryDirectory(prefix="gpumem-accelsim-probe-") as empty:
            out, rc = run_group([path], Path(empty), PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "", (f"{path} did not stop within {PROBE_TIMEOUT_S:g} s when run without a "
                    f"config (stopped, with every process it started)")
    except OSError as e:
        return "", f"{path} cannot be run: {e.strerror or e}"
    m = _BUILD.search(out)
    if m:
        return m.group(1), ""
    said = next((ln.strip() for ln in out.splitlines() if ln.strip()), "")
    # a wrapper that forgot LD_LIBRARY_PATH: "symbol lookup error" or "error while loading
    # shared libraries", exit 127; another program: no build line
    return "", (f"{path} does not run as Accel-Sim (exit {rc}"
                + (f": {said[:200]}" if said else ", no output") + ")")


def max_warp_insts() -> int:
    """The trace-size limit: ``$GPUMEM_ACCELSIM_MAX_WARP_INSTS`` or the generators' default."""
    from gpumem_accelsim.traces import MAX_WARP_INSTS

    raw = os.environ.get(LIMIT_ENV, "").strip()
    if not raw:
        return MAX_WARP_INSTS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"must be a positive integer, got {raw!r}")
    return value


def run_group(cmd: list[str], cwd: Path, timeout: float | None) -> tuple[str, int]:
    """(merged stdout and stderr, exit status) of ``cmd`` run in a session of its own; past
    ``timeout`` (or on any exception, Ctrl-C included) its whole process group is killed
    before the exception goes on: a launcher script's simulator must not outlive gpumem
    (``subprocess.run``'s timeout kills the launcher alone)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc)
        raise
    return out.decode("utf-8", "replace"), proc.returncode


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group is its pid
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=10)  # reaped, the pipe drained
    except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot end
        pass
