"""Kernel audit: what the compiler made of each probe kernel, kept with the results.

Two sources. The kernels as loaded (CuPy compiles them with NVRTC and the driver JITs them)
report registers, local memory (spills) and static shared memory per function. Where ``nvcc``
and ``cuobjdump`` are on the PATH, the same source is also compiled to a cubin for the
device's architecture and disassembled, and each kernel's global load and store opcodes
(``LDG.E.STRONG.GPU``, ``LDG.E.CONSTANT``, ``STG.E``, ...) are listed: the cache operator a
probe asked for (``.ca``, ``.cg``, ``.nc``) should show there. Template kernels are listed
for the instances a run used (``stream<16,4,0,0>``), instantiated for the purpose. NVRTC and
nvcc share the back end (ptxas), so the opcodes are those of the same code; the attribute says
which tools produced them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

_OPCODE = re.compile(
    r"\b((?:LDGSTS|LDG|STG|LDS|STS|LDC|LD|ST|TEX|TLD|UBLKCP)(?:\.[A-Z0-9_]+)*)\b")
#: Opcodes listed: global loads and stores, cp.async (LDGSTS), texture fetches, generic
#: loads (LD: distributed shared memory through mapa addresses) and bulk copies (UBLKCP).
_MEMORY_OPS = ("LDG", "STG", "LDGSTS", "TEX", "TLD", "LD", "UBLKCP")
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


def instantiate(templates: tuple[str, ...]) -> str:
    """Source that instantiates the template kernels named (``stream<16,4,0,0>``): taking
    each one's address does it without spelling out its parameter list."""
    if not templates:
        return ""
    refs = ", ".join(f"(void*)&{t}" for t in sorted(templates))
    return (f"#pragma nv_diag_suppress 177\n"
            f"static void* const gpumem_audit_instances[] = {{{refs}}};\n")


def kernel_name(symbol: str) -> str:
    """A demangled kernel symbol as CuPy names it: ``void stream<16, 4, 0, 0>(...)`` (or
    cu++filt's ``void bulk_read<(int)4>(...)``) -> ``stream<16,4,0,0>``; plain ``extern "C"``
    names pass through."""
    name = re.sub(r"\((?:unsigned |signed )?(?:int|long long|long|short|char|bool)\)", "",
                  symbol).removeprefix("void ").strip()
    depth = 0
    for i, ch in enumerate(name):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0:
            name = name[:i]
            break
    return name.replace(" ", "")


def _demangle(symbols: list[str], timeout: float) -> dict[str, str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    mangled = [s for s in symbols if s.startswith("_Z")]
    if not tool or not mangled:
        return {}
    res = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True,
                         timeout=timeout)
    if res.returncode != 0:
        return {}
    lines = res.stdout.splitlines()
    return dict(zip(mangled, lines, strict=True)) if len(lines) == len(mangled) else {}


def sass_opcodes(code: str, arch: str, options: tuple[str, ...] = (),
                 instances: str = "", timeout: float = 120,
                 templates: tuple[str, ...] = ()) -> dict[str, list[str]] | None:
    """Memory opcodes per kernel of ``code`` compiled with nvcc for ``arch`` (``sm_90``),
    or ``None`` where nvcc or cuobjdump is missing or the build fails. ``templates``: template
    kernels to instantiate and list under their CuPy names (a demangler is needed for that:
    without one they keep their mangled names)."""
    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not nvcc or not cuobjdump:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        src.write_text(code + "\n" + instances + "\n" + instantiate(templates))
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
                                if op.split(".")[0] in _MEMORY_OPS)
    names = _demangle(list(out), timeout)
    return {kernel_name(names.get(k, k)) if k in names else k: sorted(v)
            for k, v in out.items()}
