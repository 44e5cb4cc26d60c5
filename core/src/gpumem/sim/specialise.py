"""The compiled pointer-chase kernels: the generic one and one per long-chased path, both
generated from the cache model's single source (:mod:`gpumem.sim.model`), cached on disk,
chosen and run.

A path's kernel has its level sequence unrolled and each level's static parameters as
literals, which removes the generic kernel's per-access bookkeeping (about twice as fast);
the results are bit-identical, since both are written by the same fragments. Generated
source is executed, so it is cached only in a folder only this user can write, and used only
if byte-identical to what is generated here (docs/reliability.md). Numba's own cache of the
compiled code (an index that is unpickled, and machine code) goes into that same folder's
verified ``__pycache__`` (:func:`_private_cache_class`), whatever ``NUMBA_CACHE_DIR`` says:
Numba's default locators would read it from ``$NUMBA_CACHE_DIR/gpumem_chase_<hash>``, a
folder nothing checks.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import sys
import tempfile
import threading
import types as pytypes
from pathlib import Path

import numba as nb
import numpy as np
from filelock import FileLock, Timeout

from gpumem._compat import attach_numba_cache, numba_cache_locator_base, numba_function_cache
from gpumem.private_dir import may_create, private, trusted_parents, user_cache_root
from gpumem.sim import model as M

_CACHE: dict[tuple, object] = {}
_LOCK = threading.Lock()
GENERIC: tuple = ()  # the key of the generic kernel


def level_key(h, lv: int) -> tuple:
    """Everything about level ``lv`` of hierarchy ``h`` that a specialised kernel takes as
    a literal."""
    m = [int(x) for x in h.meta[lv]]
    kind = m[M.IDX_KIND]
    params = tuple(int(x) for x in h.idx_param[m[M.IDX_OFF]:m[M.IDX_OFF] + m[M.IDX_LEN]]) \
        if kind in (1, 2) else ()
    parts = tuple(int(x) for x in h.idx_param[m[M.PART_OFF]:m[M.PART_OFF] + m[M.PART_LEN]]) \
        if m[M.PARTS] > 1 else ()
    if m[M.EQ_WAYS] > 0:
        way_counts: tuple = ()
    else:
        sb = m[M.SET_BASE]
        way_counts = tuple(sorted({int(x) for x in h.set_ways[sb:sb + m[M.N_SETS]]}))
    slices = tuple(int(x) for x in h.idx_param[m[M.SLICE_OFF]:m[M.SLICE_OFF] + m[M.SLICE_LEN]])
    return (tuple(m), params, parts, way_counts, slices)


def key_of(h, path_ids: np.ndarray, tlb_first: int, tlb_count: int) -> tuple:
    """The key of the kernel specialised to this path of ``h`` and its way words' width."""
    pids = tuple(int(x) for x in path_ids)
    return (pids, tuple(level_key(h, lv) for lv in pids), int(tlb_first),
            tuple(level_key(h, tlb_first + i) for i in range(tlb_count)), h.wbits)


# The generated modules (and Numba's cache of them) are named after a hash of their source
# and of the code they call into, so an edit to the model or the primitives never reuses a
# stale kernel.
_STAMP = hashlib.sha256(b"".join(
    Path(f).read_bytes() for f in (M.__file__, Path(M.__file__).parent / "primitives.py",
                                   __file__))).hexdigest()[:16]


def _roots() -> list[Path]:
    """Where a kernel cache may live, best first: Numba's cache folder if the user set one,
    the package's __pycache__ (a user's own install), the per-user cache folder
    ($XDG_CACHE_HOME or ~/.cache). Never the shared temporary folder."""
    roots = []
    # set at import from NUMBA_CACHE_DIR by Numba's config reloader: mypy cannot see it
    cache_dir = getattr(nb.config, "CACHE_DIR", "")
    if cache_dir:
        roots.append(Path(cache_dir))
    roots.append(Path(__file__).parent / "__pycache__")
    base = user_cache_root()
    if base is not None:
        roots.append(base / "gpumem")
    return roots


def _cache_dir() -> Path | None:
    """A folder for generated kernels that only this user can write, verified (see
    gpumem.private_dir), with Numba's __pycache__ in it verified too;
    None if there is none: the kernel is then compiled in memory, without a disk cache."""
    for root in _roots():
        d = root / "gpumem_chase"
        if not may_create(d):  # checked first: nothing is created in a shared folder
            continue
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            (d / "__pycache__").mkdir(mode=0o700, exist_ok=True)
        except OSError:
            continue
        if (os.access(d, os.W_OK) and private(d) and private(d / "__pycache__")
                and trusted_parents(d)):
            return d
    return None


def _holds(path: Path, src: str) -> bool:
    """Is ``path`` a private regular file whose text is exactly ``src``? A file with the
    right name but other content (planted, stale, truncated) is never executed."""
    if not private(path) or not path.is_file():
        return False
    try:
        return path.read_bytes() == src.encode()
    except OSError:
        return False


_SOURCES: dict[tuple, tuple[str, str]] = {}


def _source(key: tuple) -> tuple[str, str]:
    """The module name and source of the kernel for ``key`` (:data:`GENERIC` or
    :func:`key_of`'s)."""
    if key not in _SOURCES:
        src = M.source() if key == GENERIC else M.source(*key)
        _SOURCES[key] = ("chase_" + hashlib.sha256((_STAMP + src).encode()).hexdigest()[:24],
                         src)
    return _SOURCES[key]


def _saved(folder: Path, name: str) -> bool:
    """Is Numba's index of kernel ``name`` in the cache folder ``folder`` (compiled and saved
    before, by any process)?"""
    return any((folder / "__pycache__").glob(f"{name}._chase-*.nbi"))


def _on_disk(key: tuple) -> bool:
    """Has this kernel been compiled into Numba's on-disk cache before (by any process)?"""
    d = _cache_dir()
    return d is not None and _saved(d, _source(key)[0])


def _load(key: tuple):
    """The kernel's function: from a verified file of the private cache folder (so Numba can
    cache its machine code there), else compiled in memory. Either way the code executed is
    the source generated here, compiled from memory, never the file's bytes read back."""
    name, src = _source(key)
    d = _cache_dir()
    path = d / f"{name}.py" if d is not None else None
    why = "" if d is not None else (
        "no folder only this user can write was found among "
        + ", ".join(str(r / "gpumem_chase") for r in _roots()))
    if path is not None and not _holds(path, src):
        # written whole, then renamed: other processes see all or nothing
        try:
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        except OSError as e:  # a full disk, say: no disk cache this time
            why, path = f"cannot write {d}: {e.strerror or e}", None
        if path is not None and not _holds(path, src):
            why, path = f"{path} changed while it was written", None
    if path is None:  # no private folder: compile in memory, no disk cache
        _say_uncached(why)
        linecache.cache[f"<{name}>"] = (len(src), None, src.splitlines(True), f"<{name}>")
        ns: dict = {"__name__": f"gpumem_chase_kernels.{name}"}
        exec(compile(src, f"<{name}>", "exec"), ns)
        return ns["_chase"]
    modname = f"gpumem_chase_kernels.{name}"
    mod = sys.modules.get(modname)
    if mod is None:
        mod = pytypes.ModuleType(modname)
        mod.__file__ = str(path)
        exec(compile(src, str(path), "exec"), mod.__dict__)
        why = _attach_cache(mod._chase, src)
        if why:
            _say_uncached(f"Numba's cache cannot be kept in {d}: {why}")
        else:
            _LOCK_FILES[mod._chase] = path.parent / f"{name}.lock"
        sys.modules[modname] = mod
    return mod._chase


#: The lock file of each kernel kept in the disk cache (see :func:`_ready`).
_LOCK_FILES: dict[object, Path] = {}
#: Seconds a process waits for another one compiling the same kernel before it compiles its
#: own copy (a compile takes 4-5 s of CPU; many at once on few cores, longer).
COMPILE_WAIT_S = 300.0
#: (kernel, kind) pairs :func:`_ready` has seen: typing the arguments costs about 150 us, as
#: much as a short chase, so it is done once per kind of call.
_READIED: set[tuple] = set()


def _ready(fn, args: tuple, kind: object = None) -> None:
    """Compile ``fn`` for the types of ``args`` holding the kernel's lock file, if it is not
    in the disk cache yet: processes that start cold at once (a run's workers, several runs,
    the test suite's) then compile each kernel once, the others loading what the first
    saved, instead of each spending the same 4-5 s of CPU. A kernel already in the disk
    cache is loaded at the call, without the lock, so that warm processes load at once.
    Kernels compiled in memory (no private folder) have nothing to share and compile at
    the call.

    ``kind`` stands for what makes the argument types differ between calls (the way words'
    dtype): once a kind has been made ready, its calls return at once. A call whose types
    the kind does not tell apart just compiles at the call, unlocked, as before the lock."""
    if (fn, kind) in _READIED:
        return
    _READIED.add((fn, kind))
    lock = _LOCK_FILES.get(fn)
    if lock is None:
        return
    sig = tuple(fn.typeof_pyval(a) for a in args)
    if sig in fn.overloads:
        return
    if _saved(lock.parent, lock.stem):
        # in the disk cache: loaded at the call, unlocked. Loads under the lock queued a
        # run's workers one behind another (8 warm processes: 0.2 s steps, up to 1.8 s;
        # on 16 Xeon cores a warm simulated run took 15 s against 6)
        return
    try:
        with FileLock(lock, timeout=COMPILE_WAIT_S, mode=0o600):
            fn.compile(sig)
    except Timeout:  # another process is stuck compiling: compile at the call, unlocked
        return


# misc: a base class from a call (Numba's private _CacheLocator, behind its shim)
class _PrivateLocator(numba_cache_locator_base()):  # type: ignore[misc]
    """Numba's cache files of one generated kernel: in the ``__pycache__`` beside its source,
    the private folder :func:`_cache_dir` verified. The stamp is a hash of the source held in
    memory, so a file changed on disk after the check cannot pass for the kernel."""

    def __init__(self, py_func, py_file: str, src: str) -> None:
        self._cache_path = str(Path(py_file).parent / "__pycache__")
        self._py_file = py_file  # Numba names it in its "cannot cache" warning
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = hashlib.sha256(src.encode()).hexdigest()

    def ensure_cache_path(self) -> None:
        if not private(Path(self._cache_path)):
            raise OSError(f"{self._cache_path} is not private to this user")

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)


def _private_cache_class(src: str) -> type:
    """A Numba ``FunctionCache`` whose only locator is :class:`_PrivateLocator` (Numba's
    own list, and ``NUMBA_CACHE_LOCATOR_CLASSES``, are never consulted)."""
    return numba_function_cache(lambda py_func, py_file: _PrivateLocator(py_func, py_file, src))


def _attach_cache(dispatcher, src: str) -> str:
    """Give the kernel's dispatcher the private disk cache; the reason if it cannot be
    (another Numba than this was written for, or the folder changed since the check). The
    kernel then compiles in memory: slower to start, never foreign code."""
    try:
        attach_numba_cache(dispatcher, _private_cache_class(src)(dispatcher.py_func))
    except Exception as e:  # noqa: BLE001 - any failure: no disk cache, said once
        return f"{type(e).__name__}: {e}"
    return ""


_SAID: list[str] = []


def _say_uncached(why: str) -> None:
    """One line, once per process, when kernels are compiled without a disk cache (each
    costs 1-2 s of compiling in every process then), saying why."""
    if _SAID:
        return
    _SAID.append(why)
    print(f"gpumem: note: simulator kernels are compiled in memory, not cached on disk: "
          f"{why}", file=sys.stderr)


def kernel(key: tuple):
    """The compiled kernel for ``key`` (generated, and compiled or loaded from Numba's cache,
    on first use in this process)."""
    fn = _CACHE.get(key)
    if fn is None:
        with _LOCK:
            fn = _CACHE.get(key)
            if fn is None:
                fn = _CACHE[key] = _load(key)
    return fn


#: ``GPUMEM_SIM_COMPILE_AFTER``: overrides :data:`COMPILE_AFTER` (a count of accesses).
COMPILE_AFTER_ENV = "GPUMEM_SIM_COMPILE_AFTER"


def _compile_after(default: int = 30_000_000) -> int:
    """Accesses the generic kernel runs for a path before the path's kernel is compiled.
    A compile costs about 4 s of CPU (a hopper path, 2026-12-03): the test suite sets
    ``GPUMEM_SIM_COMPILE_AFTER`` out of reach, as its many short-lived configs would each
    pay one on a fresh clone (both kernels give identical outputs:
    tests/test_sim_far_l2_identity.py)."""
    raw = os.environ.get(COMPILE_AFTER_ENV, "").strip()
    try:
        return max(0, int(float(raw))) if raw else default
    except ValueError:
        return default


COMPILE_AFTER = _compile_after()
_SEEN: dict[tuple, int] = {}


def worth_it(h, path_ids: np.ndarray, tlb_first: int, tlb_count: int, n: int) -> bool:
    """Should a chase of ``n`` accesses on this path run a specialised kernel? Yes if one is
    loaded or on disk already, or once this process has run enough accesses on the path
    (including these) that the compile (about 4 s) pays for itself; else the generic kernel runs
    them and they are counted."""
    key = key_of(h, path_ids, tlb_first, tlb_count)
    if key in _CACHE:
        return True
    seen = _SEEN.get(key, 0) + n
    if seen >= COMPILE_AFTER or _on_disk(key):
        return True
    _SEEN[key] = seen
    return False


_PATHS: dict[tuple, tuple] = {}


def _path_args(h, path_ids: np.ndarray, tlb_first: int, tlb_count: int, sm: int,
               sm_count: int, wbits: int) -> tuple:
    """The kernel arguments that describe the path (hit latencies by position with the SM's
    offset added, home partitions, TLB penalties, visiting order, prefetch candidates). Kept
    by content: working them out costs more than a short chase."""
    ck = (h.meta.tobytes(), h.cost.tobytes(), h.far_cost.tobytes(), h.far_slow.tobytes(),
          h.weights.tobytes(),
          path_ids.tobytes(), tlb_first, tlb_count, sm, sm_count, wbits)
    out = _PATHS.get(ck)
    if out is not None:
        return out
    rows = h.meta.tolist()
    pids = [int(x) for x in path_ids]
    hitc, farc, homes, slowc = [], [], [], []
    widest = max([1] + [rows[lv][M.SLICE_N] for lv in pids])
    slicec = np.zeros((max(len(pids), 1), widest), np.float64)  # each position's SM row
    for p, lv in enumerate(pids):
        m = rows[lv]
        if m[M.SLICE_N] > 0:
            n = m[M.SLICE_N]
            at = m[M.SLAT_OFF] + (sm % m[M.SLAT_ROWS]) * n
            slicec[p, :n] = h.weights[at:at + n]
    for lv in pids:
        near, far = float(h.cost[lv]), float(h.far_cost[lv])
        m = rows[lv]
        share, slow = float(h.far_slow[lv, 0]), float(h.far_slow[lv, 1])
        if m[M.SMO_LEN] > 0:  # the same float additions, in the same order, for either kernel
            off = float(h.weights[m[M.SMO_OFF] + sm % m[M.SMO_LEN]])
            near, far, slow = near + off, far + off, slow + off
        hitc.append(near)
        farc.append(far)
        slowc.append((share, slow))
        homes.append(int(h.idx_param[m[M.HOME_OFF] + sm % m[M.HOME_LEN]]) if m[M.HOME_LEN] > 0
                     else (sm * m[M.PARTS]) // sm_count)  # a measured map, else halves
    order = M.visit_order(pids, [rows[lv][M.TRANSLATE] == 1 for lv in pids], tlb_first,
                          tlb_count)
    tlb_done = max((i + 1 for i, (_, p) in enumerate(order) if p < 0), default=0)
    pf_cand = [lv for lv in dict.fromkeys(lv for lv, _ in order)
               if M.prefetch_candidate(rows[lv], wbits)]
    out = (np.array(hitc, np.float64), np.array(farc, np.float64), np.array(homes, np.int64),
           np.array(slowc, np.float64).reshape(-1, 2), slicec,
           np.array([float(h.cost[tlb_first + t]) for t in range(tlb_count)] or [0.0]),
           np.array([lv for lv, _ in order], np.int64),
           np.array([p for _, p in order], np.int64), np.int64(tlb_done),
           np.array(pf_cand, np.int64))
    if len(_PATHS) >= 1024:
        _PATHS.clear()
    _PATHS[ck] = out
    return out


def run(h, path_ids: np.ndarray, tlb_first: int, tlb_count: int, *, specialised: bool,
        scalar: bool, dram_latency: float, page_walk: float, sm: int, sm_count: int,
        args: tuple) -> None:
    """Run the generic kernel, or the one specialised to this path; ``args`` are the kernel
    arguments from ``base`` on (:data:`gpumem.sim.model.ARGS`), without ``scalar``."""
    fn = kernel(key_of(h, path_ids, tlb_first, tlb_count) if specialised else GENERIC)
    wbits = h.wbits
    full = (h.way, h.rng, h.clock, h.meta, h.set_ways, h.set_off, h.idx_param, h.weights,
            *_path_args(h, np.asarray(path_ids, np.int64), int(tlb_first), int(tlb_count),
                        int(sm), int(sm_count), wbits),
            float(dram_latency), float(page_walk), *args, bool(scalar), np.int64(wbits))
    _ready(fn, full, h.way.dtype.char)
    fn(*full)
