"""Finding an installed Accel-Sim binary, and the user's limit on trace size."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ENV = "GPUMEM_ACCELSIM"
BINARY = "accel-sim.out"
#: Largest trace (warp instructions over its kernels) the device simulates; larger requests
#: are skipped points. Default: :data:`gpumem_accelsim.traces.MAX_WARP_INSTS`.
LIMIT_ENV = "GPUMEM_ACCELSIM_MAX_WARP_INSTS"


def find_binary() -> tuple[Path | None, str]:
    """(path of an executable Accel-Sim binary, or None; why not)."""
    configured = os.environ.get(ENV, "").strip()
    if configured:
        p = Path(configured).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return p, ""
        if not p.exists():
            return None, f"{ENV}={configured}: no such file"
        return None, f"{ENV}={configured} is not an executable file"
    found = shutil.which(BINARY)
    if found:
        return Path(found), ""
    return None, f"Accel-Sim is not installed here (no {BINARY} on PATH; set {ENV})"


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
