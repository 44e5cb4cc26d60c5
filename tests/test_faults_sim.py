"""Faults and trust boundaries (issue 15): the simulator's kernel cache runs only code it
generated, from a folder only this user can write; absurd or unreadable sim configs fail with
one line, not a traceback or a MemoryError; a plugin that hangs cannot hang a command."""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import threading
import time
from importlib.metadata import EntryPoint
from pathlib import Path
from types import SimpleNamespace

import numba as nb
import numpy as np
import pytest
import tomli_w
from filelock import FileLock
from gpumem.plugin.registry import load_plugins
from gpumem.sim import engine, specialise
from gpumem.sim.config import (
    CacheLevel,
    Dram,
    SimConfig,
    SimConfigError,
    TlbLevel,
)
from helpers import gpumem_subprocess

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

posix_only = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")

# ---------------------------------------------------------------------------------------------
# 1. The specialised-kernel cache
# ---------------------------------------------------------------------------------------------


def _small_config() -> SimConfig:
    return SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=1, clock_mhz=1000.0,
        caches=[CacheLevel("l1d", 16384, 128, 4, 30.0),
                CacheLevel("l2", 1 << 20, 128, 16, 200.0, sector=32, scope="gpu",
                           translate=True)],
        paths={"ca": ["l1d", "l2"]}, tlbs=[TlbLevel("tlb_l1", 2 << 20, 16, 16, 10.0)],
        dram=Dram(500.0),
    ).validate()


@pytest.fixture
def kernel_key(monkeypatch):
    """A specialisation key, its module name and source; no copy of it loaded in-process,
    no user Numba cache folder, and the per-user cache under a temporary folder."""
    h, ids = engine.compile_hierarchy(_small_config(), 0)
    key = specialise.key_of(h, np.array([ids["l1d"], ids["l2"]], np.int64), 2, 1)
    name, src = specialise._source(key)
    modname = f"gpumem_chase_kernels.{name}"
    monkeypatch.delitem(sys.modules, modname, raising=False)
    monkeypatch.setattr(nb.config, "CACHE_DIR", "")
    yield key, name, src
    sys.modules.pop(modname, None)


def _planted(marker: Path) -> str:
    """A kernel module that, if ever imported, leaves ``marker`` behind."""
    return (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('pwned')\n"
            "def _chase_spec(*args):\n    return None\n")


def _file_of(fn) -> str:
    return getattr(fn, "py_func", fn).__code__.co_filename


@posix_only
def test_planted_kernel_in_the_shared_temp_folder_is_never_imported(kernel_key, tmp_path,
                                                                     monkeypatch):
    """A system-wide install (package cache not writable): kernels used to go to a
    predictable $TMPDIR/gpumem-<uid>/gpumem_chase, where anyone could plant one."""
    key, name, _src = kernel_key
    shared = tmp_path / "tmp"
    planted_dir = shared / f"gpumem-{os.getuid()}" / "gpumem_chase"
    planted_dir.mkdir(parents=True)
    for d in (shared, planted_dir.parent, planted_dir):
        d.chmod(0o777)
    marker = tmp_path / "marker"
    (planted_dir / f"{name}.py").write_text(_planted(marker))
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    package_cache = str(Path(specialise.__file__).parent)
    real_access = os.access
    monkeypatch.setattr(specialise.os, "access", lambda p, mode, **kw: (
        False if str(p).startswith(package_cache) else real_access(p, mode, **kw)))

    fn = specialise._load(key)

    assert not marker.exists()
    mine = tmp_path / "home-cache" / "gpumem" / "gpumem_chase"
    assert _file_of(fn) == str(mine / f"{name}.py")
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700


@posix_only
def test_a_file_with_the_right_name_but_other_content_is_not_run(kernel_key, tmp_path,
                                                                 monkeypatch):
    """Even in a private folder, a kernel file runs only if it holds exactly the source
    that would be generated; otherwise it is replaced by that source."""
    key, name, src = kernel_key
    root = tmp_path / "numba"
    d = root / "gpumem_chase"
    d.mkdir(parents=True, mode=0o700)
    marker = tmp_path / "marker"
    (d / f"{name}.py").write_text(_planted(marker))
    (d / f"{name}.py").chmod(0o600)
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(root))

    fn = specialise._load(key)

    assert not marker.exists()
    assert _file_of(fn) == str(d / f"{name}.py")
    assert (d / f"{name}.py").read_text() == src


@posix_only
def test_a_world_writable_cache_folder_is_refused(kernel_key, tmp_path, monkeypatch):
    key, name, src = kernel_key
    root = tmp_path / "shared-numba"
    d = root / "gpumem_chase"
    d.mkdir(parents=True)
    d.chmod(0o777)
    (d / f"{name}.py").write_text(src)  # even the right content: the folder is not ours
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))

    assert specialise._cache_dir() != d
    assert not _file_of(specialise._load(key)).startswith(str(root))


@posix_only
def test_a_symlinked_cache_folder_is_refused(kernel_key, tmp_path, monkeypatch):
    key, name, src = kernel_key
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (target / "__pycache__").mkdir(mode=0o700)
    (target / f"{name}.py").write_text(src)
    root = tmp_path / "linked"
    root.mkdir(mode=0o700)
    (root / "gpumem_chase").symlink_to(target, target_is_directory=True)
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))

    assert specialise._cache_dir() != root / "gpumem_chase"
    file = _file_of(specialise._load(key))
    assert not file.startswith(str(root)) and not file.startswith(str(target))


@posix_only
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="needs root to give a folder to another user")
def test_another_users_cache_folder_is_refused(kernel_key, tmp_path, monkeypatch):
    key, name, _src = kernel_key
    root = tmp_path / "theirs"
    d = root / "gpumem_chase"
    (d / "__pycache__").mkdir(parents=True, mode=0o700)
    marker = tmp_path / "marker"
    (d / f"{name}.py").write_text(_planted(marker))
    for p in (root, d, d / "__pycache__", d / f"{name}.py"):
        os.chown(p, 65534, 65534)  # nobody
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))

    fn = specialise._load(key)

    assert not marker.exists()
    assert not _file_of(fn).startswith(str(root))


@posix_only
def test_no_verifiable_folder_compiles_the_kernel_in_memory(
        kernel_key, tmp_path, monkeypatch):
    """No verifiable folder at all (here: every candidate looks owned by someone else): the
    kernel is compiled from memory, with no file and no disk cache."""
    key, name, _src = kernel_key
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr("gpumem.private_dir.uid", lambda: os.getuid() + 4242)

    assert specialise._cache_dir() is None
    assert _file_of(specialise._load(key)) == f"<{name}>"


class _Payload:
    """A pickle that, when loaded, leaves a marker file: what a planted Numba index runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _chase_once(key_cfg: SimConfig, monkeypatch) -> object:
    """Run one short chase through the specialised kernel of the l1d-l2 path (as a long
    chase would), and return that kernel."""
    monkeypatch.setattr(engine, "SPECIALISE_MIN", 0)
    monkeypatch.setattr(specialise, "COMPILE_AFTER", 0)
    h, ids = engine.compile_hierarchy(key_cfg, 0)
    path_ids = np.array([ids["l1d"], ids["l2"]], np.int64)
    engine.simulate_chase(
        h, path_ids, len(key_cfg.caches), len(key_cfg.tlbs), 500.0,
        base=key_cfg.base_address, footprint=8192, stride=64, page_walk=4.0, sm=0,
        sm_count=1, element=4, order="sequential", seed=1, warmup=200, record=100,
        overhead=3.0, jitter=1.0, outlier_rate=0.0, outlier_cycles=0.0, noise_seed=1,
        pattern=(), scalar=False)
    return specialise._CACHE[specialise.key_of(h, path_ids, len(key_cfg.caches),
                                                len(key_cfg.tlbs))]


@posix_only
def test_a_planted_index_in_a_shared_numba_cache_dir_is_never_unpickled(
        kernel_key, tmp_path, monkeypatch):
    """Issue 29: with NUMBA_CACHE_DIR a shared folder, Numba looked for the kernel's cache
    index (a pickle) in $NUMBA_CACHE_DIR/gpumem_chase_<hash>, a folder nothing checked; one
    planted there by another user ran as the victim. Numba's cache of gpumem's kernels now
    lives only in the verified private folder, whatever NUMBA_CACHE_DIR says."""
    key, name, src = kernel_key
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(nb.config, "CACHE_DIR", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    d = specialise._cache_dir()
    assert d is not None and not str(d).startswith(str(shared))
    for k in list(specialise._CACHE):  # this process must compile (and look up) afresh
        monkeypatch.delitem(specialise._CACHE, k)
    # where Numba's own locator would have looked, for exactly this kernel
    from numba.core.caching import _CacheLocator
    planted = shared / _CacheLocator.get_suitable_cache_subpath(str(d / f"{name}.py"))
    planted.mkdir()
    planted.chmod(0o777)
    line = src.splitlines().index(next(x for x in src.splitlines() if x.startswith("@nb."))) + 1
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    marker = tmp_path / "marker"
    import pickle
    for f in (planted / f"{name}._chase-{line}.{tag}.nbi",
              d / "__pycache__" / f"{name}._chase-{line}.{tag}.nbi.planted-copy"):
        f.write_bytes(pickle.dumps(_Payload(marker)))

    fn = _chase_once(_small_config(), monkeypatch)

    assert not marker.exists()
    assert fn._cache.cache_path == str(d / "__pycache__")
    assert sorted(p.name for p in shared.rglob("*")) == sorted(
        [planted.name, f"{name}._chase-{line}.{tag}.nbi"])  # nothing added to it


@posix_only
def test_the_compiled_kernel_is_cached_beside_its_verified_source(kernel_key, tmp_path,
                                                                  monkeypatch):
    """The private cache works: the first process compiles and saves, the next one loads
    the machine code from the same private folder (a cache hit, no compile)."""
    key, name, _src = kernel_key
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    for k in list(specialise._CACHE):
        monkeypatch.delitem(specialise._CACHE, k)
    fn = _chase_once(_small_config(), monkeypatch)
    pyc = tmp_path / "home-cache" / "gpumem" / "gpumem_chase" / "__pycache__"
    assert fn.stats.cache_misses and list(pyc.glob(f"{name}._chase-*.nbi"))
    # a "new process": the module and the compiled function forgotten
    sys.modules.pop(f"gpumem_chase_kernels.{name}", None)
    specialise._CACHE.clear()
    again = _chase_once(_small_config(), monkeypatch)
    assert again is not fn and sum(again.stats.cache_hits.values()) == 1


def _kernel_args(cfg: SimConfig, monkeypatch) -> tuple:
    """The kernel and the arguments one short specialised chase calls it with; nothing
    compiled (the run stops where the kernel would be made ready)."""
    seen: list = []

    class Stop(Exception):
        pass

    def record(fn, args, kind=None):
        seen.append((fn, args))
        raise Stop

    for k in list(specialise._CACHE):  # loaded by an earlier test: load it afresh
        monkeypatch.delitem(specialise._CACHE, k)
    with monkeypatch.context() as m:
        m.setattr(specialise, "_ready", record)
        with pytest.raises(Stop):
            _chase_once(cfg, m)
    return seen[0]


@posix_only
def test_a_process_waits_for_the_one_compiling_its_kernel_and_loads_what_it_saved(
        kernel_key, tmp_path, monkeypatch):
    """Cold processes that start at once (a run's workers, the test suite's) used to compile
    the same kernel each (4-5 s of CPU apiece). The one that needs a kernel another is
    compiling waits on the kernel's lock file and loads the saved code instead."""
    key, name, _src = kernel_key
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    fn, args = _kernel_args(_small_config(), monkeypatch)
    lock = specialise._LOCK_FILES[fn]
    sig = tuple(fn.typeof_pyval(a) for a in args)
    assert lock == tmp_path / "home-cache" / "gpumem" / "gpumem_chase" / f"{name}.lock"

    other = FileLock(lock)  # "another process", compiling
    other.acquire()
    waiter = threading.Thread(target=specialise._ready, args=(fn, args))
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive() and not fn.overloads  # waiting, not compiling
    # the other process's copy of the kernel: compiled and saved to the disk cache
    sys.modules.pop(f"gpumem_chase_kernels.{name}", None)
    specialise._CACHE.pop(key, None)
    theirs = specialise._load(key)
    assert theirs is not fn
    theirs.compile(sig)
    other.release()
    waiter.join(60)

    assert not waiter.is_alive()
    assert sum(fn.stats.cache_hits.values()) == 1 and not fn.stats.cache_misses


@posix_only
def test_a_kernel_already_on_disk_is_loaded_without_waiting_for_the_lock(
        kernel_key, tmp_path, monkeypatch):
    """Warm processes load a saved kernel at once: loads under the lock queued a run's
    workers one behind another (8 warm processes: 0.2 s steps, up to 1.8 s; a warm simulated
    run on 16 Xeon cores took 15 s against 6)."""
    key, name, _src = kernel_key
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    fn, args = _kernel_args(_small_config(), monkeypatch)
    sig = tuple(fn.typeof_pyval(a) for a in args)
    # an earlier process compiled it and saved it to the disk cache
    sys.modules.pop(f"gpumem_chase_kernels.{name}", None)
    specialise._CACHE.pop(key, None)
    specialise._load(key).compile(sig)
    with FileLock(specialise._LOCK_FILES[fn]):  # another process holds the lock
        done = threading.Thread(target=specialise._ready, args=(fn, args))
        done.start()
        done.join(5)
        assert not done.is_alive()  # returned with the lock still held: it did not wait
    assert not fn.overloads  # left to the call, which loads it from the disk cache:
    fn.compile(sig)
    assert sum(fn.stats.cache_hits.values()) == 1 and not fn.stats.cache_misses


@posix_only
def test_a_kernel_is_made_ready_once_per_kind_of_call(kernel_key, tmp_path, monkeypatch):
    """Typing a call's arguments to look its compile up costs about 150 us, as much as a
    short chase: the first version did it on every chase and made short chases 4x slower.
    It is done once per kind of call (the way words' dtype)."""
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    fn, args = _kernel_args(_small_config(), monkeypatch)
    typed, compiled = [], []
    monkeypatch.setattr(fn, "typeof_pyval", lambda a: typed.append(a) or nb.typeof(a))
    monkeypatch.setattr(fn, "compile", compiled.append)
    for kind in ("i", "i", "i", "l", "l"):
        specialise._ready(fn, args, kind)
    assert len(compiled) == 2 and len(typed) == 2 * len(args)


@posix_only
def test_a_lock_held_too_long_leaves_the_compile_to_the_call(kernel_key, tmp_path,
                                                             monkeypatch):
    """A process stuck holding a kernel's lock costs the others COMPILE_WAIT_S, then they
    compile their own copy at the call: never a hang."""
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    fn, args = _kernel_args(_small_config(), monkeypatch)
    monkeypatch.setattr(specialise, "COMPILE_WAIT_S", 0.2)
    with FileLock(specialise._LOCK_FILES[fn]):
        t = time.perf_counter()
        done = threading.Thread(target=specialise._ready, args=(fn, args))
        done.start()
        done.join(30)
        assert not done.is_alive() and time.perf_counter() - t < 10
    assert not fn.overloads  # nothing compiled under the lock: the call compiles it


@posix_only
def test_a_kernel_numba_cannot_cache_is_a_warning_not_a_crash(kernel_key, tmp_path,
                                                              monkeypatch):
    """Numba declines to cache some compiles (under ``NUMBA_OPT=0`` the kernel uses dynamic
    globals) and names the kernel's file in a warning: the private cache must give it that
    file. It used to raise AttributeError after the compile, failing the chase."""
    key, name, _src = kernel_key
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "home-cache" / "gpumem"])
    fn = specialise._load(key)
    cache = fn._cache._impl
    declined = SimpleNamespace(lifted=(), library=SimpleNamespace(has_dynamic_globals=True),
                               fndesc=SimpleNamespace(qualname="_chase"))
    with pytest.warns(nb.NumbaWarning, match="Cannot cache compiled function"):
        assert cache.check_cachable(declined) is False
    assert cache.locator._py_file == _file_of(fn)


@posix_only
def test_no_private_folder_says_once_why_kernels_are_not_cached(kernel_key, tmp_path,
                                                                monkeypatch, capsys):
    """Caching off is said in one line, with the reason, once per process."""
    key, name, _src = kernel_key
    monkeypatch.setattr(specialise, "_roots", lambda: [tmp_path / "shared"])
    (tmp_path / "shared").mkdir(mode=0o777)
    (tmp_path / "shared").chmod(0o777)
    monkeypatch.setattr(specialise, "_SAID", [])
    specialise._load(key)
    specialise._load(specialise.GENERIC)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not cached on disk" in err and "shared" in err
    assert not (tmp_path / "shared" / "gpumem_chase").exists()  # nothing created there


@posix_only
def test_cupy_never_loads_a_kernel_from_a_cache_folder_others_can_write(tmp_path, monkeypatch,
                                                                         capsys):
    """CuPy loads a cached cubin instead of compiling; one planted in a shared
    CUPY_CACHE_DIR would run on the GPU as gpumem's kernel. Before gpumem compiles, a
    folder that is not the user's own turns CuPy's disk cache off (CUPY_CACHE_IN_MEMORY=1,
    read by CuPy at each compile), said once."""
    from gpumem.cuda import cupy_cache
    from gpumem.cuda.device import CudaDevice

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(shared))
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY", raising=False)
    monkeypatch.setattr(cupy_cache, "_SAID", [])
    seen = []

    class FakeCupy:  # records what CuPy would have read when compiling
        @staticmethod
        def RawModule(**kw):  # noqa: N802 - CuPy's name
            seen.append(os.environ.get("CUPY_CACHE_IN_MEMORY"))
            return object()

    dev = CudaDevice.__new__(CudaDevice)
    dev.cp, dev._modules, dev.kernel_sources, dev.kernel_source = FakeCupy, {}, {}, None
    dev._module("pointer_chase")
    dev._module("stream")
    assert seen == ["1", "1"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CuPy's kernel cache is off" in err and str(shared) in err

    mine = tmp_path / "mine"  # the user's own folder (or one still to be made) is kept
    monkeypatch.setenv("CUPY_CACHE_DIR", str(mine))
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY")
    assert cupy_cache.guard() == "" and "CUPY_CACHE_IN_MEMORY" not in os.environ
    mine.mkdir(mode=0o700)
    assert cupy_cache.guard() == ""


# ---------------------------------------------------------------------------------------------
# 2. Absurd, non-finite and unreadable sim configs
# ---------------------------------------------------------------------------------------------

KEPLER_TOML = (Path(__file__).parents[1] / "plugins" / "kepler" / "src" / "gpumem_kepler"
               / "sim.toml")


def _kepler(**edits) -> dict:
    data = tomllib.loads(KEPLER_TOML.read_text())
    for path, value in edits.items():
        node = data
        *parts, last = path.split(".")
        for p in parts:
            node = (next(c for c in node["cache"] if c["name"] == p) if p in ("l2", "tex_l1")
                    else node[p])
        node[last] = value
    return data


def _write(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(tomli_w.dumps(data))
    return p


@pytest.mark.parametrize("size", [10 ** 12, 10 << 30], ids=["1e12", "10GiB"])
def test_a_huge_cache_is_refused_up_front(tmp_path, size):
    """State the engine would allocate is estimated and bounded before anything is built:
    no MemoryError, no gigabytes of RAM for a quick run."""
    t0 = time.monotonic()
    with pytest.raises(SimConfigError, match=r"cache\[l2\]: .*MiB of simulator state.*limit"):
        SimConfig.load(_write(tmp_path, _kepler(**{"l2.size": size})))
    assert time.monotonic() - t0 < 5


def test_a_huge_tlb_is_refused_up_front():
    cfg = _small_config()
    cfg.tlbs = [TlbLevel("tlb_l1", 2 << 20, 1 << 40, 16, 10.0)]
    with pytest.raises(SimConfigError, match=r"tlb\[tlb_l1\]: .*limit"):
        cfg.validate()
    with pytest.raises(SimConfigError, match="limit"):  # not validated: still bounded
        engine.compile_hierarchy(cfg, 0)


@pytest.mark.parametrize("field,value", [
    ("l2.hit_latency", math.nan), ("dram.latency", math.inf), ("timer.jitter", math.nan),
    ("clock_mhz", -math.inf), ("timer.outlier_cycles", math.nan)])
def test_non_finite_numbers_are_refused(tmp_path, field, value):
    with pytest.raises(SimConfigError, match=f"{field.split('.')[-1]}: must be a finite number"):
        SimConfig.load(_write(tmp_path, _kepler(**{field: value})))


def test_non_finite_numbers_in_a_config_built_in_python_are_refused():
    cfg = _small_config()
    cfg.timer.jitter = math.nan  # passed "jitter < 0" before: NaN compares false
    with pytest.raises(SimConfigError, match=r"timer\.jitter: must be a finite number"):
        cfg.validate()
    cfg = _small_config()
    cfg.caches[1].hit_latency = 1e300
    with pytest.raises(SimConfigError, match=r"cache\[l2\]\.hit_latency: .*out of range"):
        cfg.validate()


def test_out_of_range_counts_are_refused(tmp_path):
    with pytest.raises(SimConfigError, match="sm_count"):
        SimConfig.load(_write(tmp_path, _kepler(sm_count=10 ** 15)))
    with pytest.raises(SimConfigError, match="interconnect.peers"):
        SimConfig.load(_write(tmp_path, _kepler(**{"interconnect": {"peers": 10 ** 12,
                                                                    "bandwidth_gbs": 1.0}})))
    with pytest.raises(SimConfigError, match="base_address"):
        SimConfig.load(_write(tmp_path, _kepler(memory_bytes=1 << 62)))
    cfg = _small_config()
    cfg.seed = 1 << 70  # TOML cannot say it; Python can, and the engine would overflow
    with pytest.raises(SimConfigError, match="seed: .* 64-bit"):
        cfg.validate()


def test_a_binary_file_is_not_a_config(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    with pytest.raises(SimConfigError, match="not UTF-8"):
        SimConfig.load(p)


@pytest.mark.parametrize("case", ["binary", "nan", "huge"])
def test_cli_reports_a_bad_sim_config_in_one_line_with_exit_2(tmp_path, case, cli):
    """The binary file in a child process (exit status and stderr as a user sees them); the
    other two through the CLI's main in this process (no Python start of 2 s each)."""
    if case == "binary":
        bad = tmp_path / "bad.toml"
        bad.write_bytes(b"\xff\xfe\x00\x01 not text")
    else:
        bad = _write(tmp_path, _kepler(**({"timer.jitter": math.nan} if case == "nan"
                                          else {"l2.size": 10 ** 12})))
    args = ["run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
            "--sim-config", str(bad), "--out", str(tmp_path / "out")]
    if case == "binary":
        res = gpumem_subprocess(args, timeout=120)
        code, err = res.returncode, res.stderr
    else:
        res = cli(*args)
        code, err = res.code, res.err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "sim-config" in lines[0], err


# ---------------------------------------------------------------------------------------------
# 3. Plugins that hang
# ---------------------------------------------------------------------------------------------

def _module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(body)


def test_a_plugin_that_hangs_at_import_is_reported_and_skipped(tmp_path, monkeypatch):
    _module(tmp_path, "faults_sleepy_import", "import time\ntime.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", "1")
    warnings: list[str] = []
    t0 = time.monotonic()
    plugins = load_plugins(eps=[EntryPoint("sleepy", "faults_sleepy_import", "gpumem"),
                                EntryPoint("good", "inproc_plugins:good", "gpumem")],
                           warn=warnings.append)
    assert time.monotonic() - t0 < 10
    rec = next(r for r in plugins.records if r.name == "sleepy")
    assert rec.status == "error" and rec.error == "did not load within 1 s"
    assert "fixture-arch" in plugins.architectures()  # the others still load
    assert any("plugin 'sleepy'" in w and "did not load within 1 s" in w for w in warnings)


def test_a_plugin_whose_registration_hook_hangs_is_reported_and_skipped(tmp_path, monkeypatch):
    _module(tmp_path, "faults_sleepy_hook",
            "import time\nfrom gpumem import hookimpl\n\n"
            "@hookimpl\ndef gpumem_register_architectures(register):\n    time.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", "1")
    warnings: list[str] = []
    t0 = time.monotonic()
    plugins = load_plugins(eps=[EntryPoint("slowreg", "faults_sleepy_hook", "gpumem")],
                           warn=warnings.append)
    assert time.monotonic() - t0 < 10
    rec = next(r for r in plugins.records if r.name == "slowreg")
    assert rec.status == "error" and rec.error == "did not register within 1 s"
    assert plugins.pm.get_plugin("slowreg") is None


def test_expected_values_that_hang_are_left_out(tmp_path, monkeypatch):
    _module(tmp_path, "faults_sleepy_expected",
            "import time\nfrom gpumem import hookimpl\n\n"
            "@hookimpl\ndef gpumem_expected_values(arch, device):\n    time.sleep(30)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GPUMEM_PLUGIN_TIMEOUT", "1")
    plugins = load_plugins(eps=[EntryPoint("slowexp", "faults_sleepy_expected", "gpumem")],
                           warn=lambda m: None)
    warnings: list[str] = []
    t0 = time.monotonic()
    assert plugins.expected_values("kepler", None, warn=warnings.append) == []
    assert time.monotonic() - t0 < 10
    assert any("plugin 'slowexp'" in w for w in warnings)


def test_list_plugins_finishes_and_names_a_plugin_that_hangs(tmp_path):
    """An installed plugin (a real distribution with an entry point) that sleeps at import:
    ``list-plugins`` used to hang with it; now it finishes and names it."""
    site = tmp_path / "site"
    dist_info = site / "gpumem_sleepy-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpumem-sleepy\n"
                                        "Version: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[gpumem]\nsleepy = gpumem_sleepy\n")
    _module(site, "gpumem_sleepy", "import time\ntime.sleep(120)\n")
    t0 = time.monotonic()
    res = gpumem_subprocess(["list-plugins", "--json"], site=site,
                            env={"GPUMEM_PLUGIN_TIMEOUT": "1"}, timeout=60)
    assert time.monotonic() - t0 < 45
    assert res.returncode == 0, res.stderr
    rec = next(r for r in json.loads(res.stdout) if r["name"] == "sleepy")
    assert rec["status"] == "error" and rec["error"] == "did not load within 1 s"
    assert rec["distribution"] == "gpumem-sleepy"
    assert "plugin 'sleepy' (gpumem-sleepy 0.1) failed to load: did not load within 1 s" \
        in res.stderr


@pytest.mark.parametrize("make, needle", [
    (lambda base: 'name = "x"\nfoo = ' + "[" * 100000 + "]" * 100000 + "\n",
     "values nested too deeply"),
    (lambda base: base.replace('name = "h200"', 'name = "' + "a" * 5_000_000 + '"', 1),
     "a simulator config is a few kilobytes"),
    (lambda base: base.replace('name = "h200"', 'name = "' + "a" * 200 + '"', 1),
     "name: 200 characters; at most 128"),
])
def test_a_config_too_deep_or_too_large_is_one_line_and_makes_no_folder(cli, tmp_path, make,
                                                                         needle):
    """Arrays nested 100,000 deep gave a RecursionError; a 5 MB name 'File name too long'
    and an empty run folder (issue 43)."""
    base = (Path(__file__).resolve().parents[1] / "plugins" / "hopper" / "src" /
            "gpumem_hopper" / "sim.toml").read_text()
    cfg = tmp_path / "bad.toml"
    cfg.write_text(make(base))
    r = cli("run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
            "--sim-config", str(cfg), "--out", str(tmp_path / "run"))
    assert r.code == 2 and needle in r.err and r.err.count("\n") == 1, r.err[:300]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("cc", ["../../x", "9", "9.0.1", "nine"])
def test_a_compute_capability_that_is_not_major_minor_is_refused(cc):
    from gpumem.sim.config import SimConfig, SimConfigError

    text = (Path(__file__).resolve().parents[1] / "plugins" / "hopper" / "src" /
            "gpumem_hopper" / "sim.toml").read_text()
    text = text.replace('compute_capability = "9.0"', f'compute_capability = "{cc}"', 1)
    with pytest.raises(SimConfigError, match="compute_capability"):
        SimConfig.from_toml(text)


def test_disabling_core_says_it_always_loads(monkeypatch):
    from gpumem.plugin.registry import load_plugins

    said = []
    monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", "core")
    load_plugins(warn=said.append)
    assert any("gpumem's own plugin" in m for m in said) and \
        not any("no plugin named 'core'" in m for m in said), said


def test_a_device_or_a_pipe_as_sim_config_is_named_as_such(cli, tmp_path):
    """/dev/zero and a FIFO read "no such file" (issue 43)."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, needle in ((fifo, "not a regular file"), (Path("/dev/zero"),
                                                        "not a regular file"),
                         (tmp_path, "a folder, not a config file"),
                         (tmp_path / "none.toml", "no such file")):
        r = cli("run", "--arch", "hopper", "latency", "--device", "sim", "--quick",
                "--sim-config", str(path), "--out", str(tmp_path / "run"))
        assert r.code == 2 and needle in r.err and r.err.count("\n") == 1, r.err


def _hopper_text() -> str:
    return (Path(__file__).resolve().parents[1] / "plugins" / "hopper" / "src" /
            "gpumem_hopper" / "sim.toml").read_text()


def _hopper_with(**far: object) -> dict:
    data = tomllib.loads(_hopper_text())
    level = next(c for c in data["cache"] if c["name"] == "l2_far")
    for key, value in far.items():
        if value is None:
            del level[key]
        else:
            level[key] = value
    return data


def test_the_packaged_configs_leave_nothing_to_a_default_or_a_short_cycle():
    for toml in (Path(__file__).resolve().parents[1] / "plugins").glob("*/src/*/sim.toml"):
        assert SimConfig.load(toml).assumptions() == [], toml


@pytest.mark.parametrize("far, said", [
    ({"sm_partition": [0, 1, 0]},
     ["cache[l2_far].sm_partition: 3 entries for 132 SMs, repeated over them: partition 0 "
      "near 88, partition 1 near 44 SMs"]),
    ({"sm_partition": [1] * 132},
     ["cache[l2_far].sm_partition: no SM is near partition(s) 0"]),
    ({"partition_masks": []},
     ["cache[l2_far].partition_masks: not given; the balanced default [0x421000] decides "
      "each line's home partition"]),
    ({"partition_masks": None, "sm_partition": [0, 1]},
     ["cache[l2_far].partition_masks: not given; the balanced default [0x421000] decides "
      "each line's home partition",
      "cache[l2_far].sm_partition: 2 entries for 132 SMs, repeated over them: partition 0 "
      "near 66, partition 1 near 66 SMs"]),
])
def test_a_partitioned_l2_left_to_a_default_or_a_short_cycle_is_said(far, said):
    """Three sm_partition entries for 132 SMs, or no partition_masks, ran without a word
    (issue 43): both are legal (cyclic, a documented default), so each is one line."""
    assert SimConfig.from_dict(_hopper_with(**far)).assumptions() == said


def test_a_users_sim_config_with_a_short_sm_map_warns_and_still_runs(cli, tmp_path):
    cfg = tmp_path / "short.toml"
    cfg.write_text(tomli_w.dumps(_hopper_with(sm_partition=[0, 1, 0], partition_masks=[])))
    r = cli("run", "--arch", "hopper", "l2_sm_map", "--device", "sim", "--quick",
            "--sim-config", str(cfg), "--out", str(tmp_path / "run"))
    assert r.code == 0, r.err
    warned = [x for x in r.err.splitlines() if x.startswith("gpumem: warning: --sim-config")]
    assert len(warned) == 2, r.err
    assert "3 entries for 132 SMs" in warned[1] and "partition_masks: not given" in warned[0]
    assert "l2.sm_groups" in r.out  # the run went on with the config as written
    ok = tmp_path / "ok.toml"
    ok.write_text(_hopper_text())
    r = cli("run", "--arch", "hopper", "l2_sm_map", "--device", "sim", "--quick",
            "--sim-config", str(ok), "--out", str(tmp_path / "run2"))
    assert r.code == 0 and "warning: --sim-config" not in r.err, r.err


def test_plugin_check_lists_what_a_plugins_sim_config_leaves_to_a_default():
    """A plugin's packaged config is not a --sim-config, so `plugin check` says it."""
    from gpumem.authoring.check import _sim_config

    cfg = SimConfig.from_dict(_hopper_with(sm_partition=[0, 1, 0]))
    plugins = SimpleNamespace(first_result=lambda *a, **k: cfg)
    arch = SimpleNamespace(name="hopper", compute_capabilities=("9.0",))
    check, got = _sim_config(plugins, arch)
    assert got is cfg and check.ok, check
    assert "3 entries for 132 SMs" in check.detail, check
    check, _ = _sim_config(SimpleNamespace(first_result=lambda *a, **k: SimConfig.from_dict(
        _hopper_with())), arch)
    assert check.ok and "sm_partition" not in check.detail, check
