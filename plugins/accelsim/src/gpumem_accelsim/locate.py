"""Finding an installed Accel-Sim binary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ENV = "GPUMEM_ACCELSIM"
BINARY = "accel-sim.out"


def find_binary() -> tuple[Path | None, str]:
    """(path of an executable Accel-Sim binary, or None; why not)."""
    configured = os.environ.get(ENV, "").strip()
    if configured:
        p = Path(configured).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return p, ""
        return None, f"{ENV}={configured} is not an executable file"
    found = shutil.which(BINARY)
    if found:
        return Path(found), ""
    return None, f"Accel-Sim is not installed here (no {BINARY} on PATH; set {ENV})"
