"""CuPy's kernel cache, only where the user alone can write.

CuPy keeps compiled kernels (cubins) in ``$CUPY_CACHE_DIR`` (default
``~/.cupy/kernel_cache``) and loads a cached one instead of compiling. A cubin planted
there by another user would run on the GPU in place of gpumem's kernel, with the user's
data and results. So before gpumem compiles, the folder is checked
(:mod:`gpumem.private_dir`); if it is not the user's own, CuPy is told to cache in memory
only (``CUPY_CACHE_IN_MEMORY=1``, read by CuPy at each compile), with one line saying why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gpumem.private_dir import usable

_SAID: list[str] = []


def cupy_cache_dir() -> Path:
    """Where CuPy will look for cached kernels (its own rule)."""
    return Path(os.environ.get("CUPY_CACHE_DIR") or
                os.path.expanduser("~/.cupy/kernel_cache"))


def guard() -> str:
    """Make sure CuPy loads no cached kernel from a folder others can write; the reason
    when its disk cache was turned off ("" when it is the user's own, or already off)."""
    if os.environ.get("CUPY_CACHE_IN_MEMORY", "").strip() == "1":
        return ""
    why = usable(cupy_cache_dir())
    if why:
        os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
        if not _SAID:
            _SAID.append(why)
            print(f"gpumem: note: CuPy's kernel cache is off (kernels compile in memory): "
                  f"{why}", file=sys.stderr)
    return why
