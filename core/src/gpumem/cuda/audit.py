"""Kernel audit: what the compiler made of each probe kernel, kept with the results.

Two sources. The kernels as loaded (CuPy compiles them with NVRTC and the driver JITs them)
report registers, local memory (spills) and static shared memory per function. Where ``nvcc``
and ``cuobjdump`` are on the PATH, the same source is also compiled to a cubin for the
device's architecture and disassembled, and each kernel's global load and store opcodes
(``LDG.E.STRONG.GPU``, ``LDG.E.CONSTANT``, ``STG.E``, ...) are listed: the cache operator a
probe asked for (``.ca``, ``.cg``, ``.nc``) should show there. NVRTC and nvcc share the
back end (ptxas), so the opcodes are those of the same code; the attribute says which tools
produced them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

_OPCODE = re.compile(r"\b((?:LDG|STG|LDGSTS|LD|ST|LDS|STS|TEX|TLD|LDC)(?:\.[A-Z0-9_]+)*)\b")
_FUNCTION = re.compile(r"Function : (\S+)")


def function_attributes(kern: Any) -> dict[str, int]:
    """Registers, local (spill) bytes and static shared bytes of a loaded kernel."""
    out = {}
    for key, attr in (("regs", "num_regs"), ("local_bytes", "local_size_bytes"),
                      ("static_shared_bytes", "shared_size_bytes")):
        try:
            out[key] = int(getattr(kern, attr))
        except Exception:  # noqa: BLE001 - an older CuPy lacks the attribute: leave it out
            pass
    return out


def attr_key(name: str) -> str:
    """A kernel name (possibly a template instance) as a netCDF attribute name fragment."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def sass_opcodes(code: str, arch: str, options: tuple[str, ...] = (),
                 instances: str = "", timeout: float = 120) -> dict[str, list[str]] | None:
    """Memory opcodes per kernel of ``code`` compiled with nvcc for ``arch`` (``sm_90``),
    or ``None`` where nvcc or cuobjdump is missing or the build fails."""
    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not nvcc or not cuobjdump:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        src.write_text(code + "\n" + instances)
        build = subprocess.run([nvcc, f"-arch={arch}", "-cubin", *options, "-o", str(cubin),
                                str(src)], capture_output=True, text=True, timeout=timeout)
        if build.returncode != 0:
            return None
        dump = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                              text=True, timeout=timeout)
    if dump.returncode != 0:
        return None
    out: dict[str, set[str]] = {}
    current = None
    for line in dump.stdout.splitlines():
        m = _FUNCTION.search(line)
        if m:
            current = m.group(1)
            out[current] = set()
        elif current:
            out[current].update(op for op in _OPCODE.findall(line)
                                if op.split(".")[0] in ("LDG", "STG", "LDGSTS", "TEX", "TLD"))
    return {k: sorted(v) for k, v in out.items()}
