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

import hashlib
import json
import os
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


def sass_cache_dir() -> Path | None:
    """Where finished audits are kept between runs: ``$GPUMEM_SASS_CACHE``, else
    ``$XDG_CACHE_HOME/gpumem/sass`` (``~/.cache/gpumem/sass``); ``None`` without either."""
    from gpumem.private_dir import user_cache_root

    env = os.environ.get("GPUMEM_SASS_CACHE")
    if env:
        return Path(env)
    base = user_cache_root()
    return None if base is None else base / "gpumem" / "sass"


class SassCache:
    """Audits of a kernel source already built, on disk: a source (its code, the
    architecture, the options) maps to the opcodes of every kernel and template instance
    built from it so far, so a later run of the same gpumem on the same machine builds
    nothing (an nvcc + cuobjdump build takes 1-2 s, and a full H200 run waited 18 of its 48
    s on them). Kept only in a folder private to the user (:mod:`gpumem.private_dir`): a
    planted entry would falsify what a file says its kernels compiled to."""

    def __init__(self, folder: Path | None = None) -> None:
        import threading

        from gpumem.private_dir import usable

        found = folder or sass_cache_dir()
        self.ok = found is not None and not usable(found)
        self.folder = found or Path()
        self._lock = threading.Lock()  # two builds of one source merge, not overwrite

    def _file(self, code: str, arch: str, options: tuple[str, ...]) -> Path:
        key = hashlib.sha256("\0".join((code, arch, *options)).encode()).hexdigest()[:32]
        return self.folder / f"{key}.json"

    def get(self, code: str, arch: str, options: tuple[str, ...]) -> dict[str, list[str]]:
        from gpumem.private_dir import private

        f = self._file(code, arch, options)
        if not self.ok or not private(f):  # a file others could write is not trusted
            return {}
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): [str(x) for x in v] for k, v in data.items()
                if isinstance(v, list)} if isinstance(data, dict) else {}

    def put(self, code: str, arch: str, options: tuple[str, ...],
            found: dict[str, list[str]]) -> None:
        """Keep ``found`` (every kernel of one build: its plain kernels and the instances
        asked for) beside what earlier builds of the source found."""
        if not self.ok or not found:
            return
        from gpumem.contracts.errors import GpumemError
        from gpumem.private_dir import private
        from gpumem.safe_write import write_text

        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not private(self.folder):
                return
            with self._lock:
                merged = {**self.get(code, arch, options), **found}
                write_text(self._file(code, arch, options), json.dumps(merged, sort_keys=True))
        except (OSError, GpumemError):
            pass  # no cache: the next run builds again


class SassInBackground:
    """The SASS audit's builds on worker threads while the GPU measures.

    An nvcc + cuobjdump build takes 1-2 s; built on the main thread when an experiment
    ended, a full H200 run's builds took 12 of its 56 s. Here a build starts when a kernel is
    first used (:meth:`ask`), every instance asked for meanwhile joining the next build of
    its probe, and :meth:`results` gives what is finished (waiting for the rest only when
    asked to). What a build finds is kept on disk (:class:`SassCache`): a source built
    before, with its instances, needs no build at all."""

    def __init__(self, arch: str, workers: int = 2, cache: SassCache | None = None):
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self.arch = arch
        self.cache = cache if cache is not None else SassCache()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpumem-sass")
        self._lock = threading.Lock()
        self._pending: dict[str, set[str]] = {}   # probe -> instances for its next build
        self._queued: set[str] = set()            # probes with a build not started yet
        self._asked: dict[str, set[str]] = {}     # probe -> instances asked for so far
        self._jobs: list[Any] = []
        self._found: dict[str, dict[str, list[str]]] = {}
        self._disk: dict[str, dict[str, list[str]]] = {}  # probe -> what the cache held

    def ask(self, probe: str, code: str, options: tuple[str, ...],
            templates: tuple[str, ...] = ()) -> None:
        """Build ``probe``'s source with these template instances (its plain kernels come
        with the first build), unless they were asked for before or the disk has them."""
        with self._lock:
            asked = self._asked.get(probe)
            new = set(templates) - (asked or set())
            if asked is not None and not new:
                return
            if asked is None:  # the disk is read once per probe
                self._disk[probe] = self.cache.get(code, self.arch, options)
            self._asked[probe] = (asked or set()) | new
            cached = self._disk[probe]
            if cached and new <= set(cached):  # a build's file always holds its plain kernels
                self._found.setdefault(probe, {}).update(cached)
                return
            self._pending.setdefault(probe, set()).update(new)
            if probe in self._queued:
                return
            self._queued.add(probe)
            self._jobs.append(self._pool.submit(self._build, probe, code, options))

    def _build(self, probe: str, code: str, options: tuple[str, ...]) -> None:
        with self._lock:
            self._queued.discard(probe)
            names = tuple(sorted(self._pending.pop(probe, set())))
        found = sass_opcodes(code, self.arch, options, templates=names) or {}
        with self._lock:
            self._found.setdefault(probe, {}).update(found)
        self.cache.put(code, self.arch, options, found)  # after: a failed write loses nothing

    def pending(self) -> int:
        """Builds not finished yet."""
        with self._lock:
            return sum(not j.done() for j in self._jobs)

    def results(self, wait: bool = True) -> dict[str, dict[str, list[str]]]:
        """Every build asked for so far: probe -> kernel -> opcodes; with ``wait``, once
        they are all finished, else what is finished now."""
        while True:
            with self._lock:
                jobs = [j for j in self._jobs if not j.done()]
                if not jobs or not wait:
                    return {p: dict(k) for p, k in self._found.items()}
            for j in jobs:
                j.result()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
