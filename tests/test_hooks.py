"""Each hook, called through a real plugin manager with the in-tree plugins loaded."""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import EntryPoint

import pytest
from gpumem import Architecture, DeviceInfo, KernelSource
from gpumem.cuda.device import generic_kernel_source
from gpumem.plugin.registry import get_plugins, load_plugins
from gpumem.sim import SimConfig

ARCHS = ("fermi", "kepler", "maxwell", "hopper")


def h200_like(l2: int) -> DeviceInfo:
    return DeviceInfo(kind="cuda", name="test GPU", compute_capability="9.0", sm_count=132,
                      l2_bytes=l2, memory_bytes=80 << 30, clock_mhz=1980.0)


def test_gpumem_register_architectures():
    got: list[Architecture] = []
    get_plugins().hook.gpumem_register_architectures(register=got.append)
    names = {a.name for a in got}
    assert set(ARCHS) <= names
    hopper = next(a for a in got if a.name == "hopper")
    assert hopper.claims("9.0") and not hopper.claims("8.0")


def test_gpumem_register_experiments():
    got: list = []
    get_plugins().hook.gpumem_register_experiments(register=got.append)
    assert "latency" in {c.name for c in got}


def test_gpumem_expected_values_follow_the_device():
    hook = get_plugins().hook.gpumem_expected_values
    a = {e.name: e for r in hook(arch="hopper", device=h200_like(60 << 20)) if r for e in r}
    b = {e.name: e for r in hook(arch="hopper", device=h200_like(50 << 20)) if r for e in r}
    assert a["l2.size"].value == 60 << 20 and b["l2.size"].value == 50 << 20
    assert all(e.source for e in a.values()), "every expected value names its source"
    assert not [r for r in hook(arch="no-such-arch", device=h200_like(1)) if r]


def test_gpumem_register_devices_and_cuda_discovery_without_gpu():
    got: list = []
    get_plugins().hook.gpumem_register_devices(register=got.append)
    cuda = next(b for b in got if b.name == "cuda")
    found = cuda.discover()  # never raises, even with no CuPy or driver
    assert isinstance(found.devices, list)
    if not found.devices:
        assert found.message


def test_gpumem_register_simulators():
    got: list = []
    get_plugins().hook.gpumem_register_simulators(register=got.append)
    names = {s.name for s in got}
    assert {"sim", "accelsim"} <= names
    sim = next(s for s in got if s.name == "sim")
    assert sim.available() == (True, "")


@pytest.mark.parametrize("arch", ARCHS)
def test_gpumem_simulator_config(arch):
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    assert isinstance(cfg, SimConfig) and cfg.arch == arch
    assert get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="other") is None


class _KernelA:
    from gpumem import hookimpl

    @hookimpl
    def gpumem_kernel_source(self, arch, probe):
        return KernelSource("// a", "k") if probe == "pointer_chase" else None


class _KernelB:
    from gpumem import hookimpl

    @hookimpl
    def gpumem_kernel_source(self, arch, probe):
        return None


kernel_a, kernel_b = _KernelA(), _KernelB()


def test_gpumem_kernel_source_first_result_wins(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "hooks_fixture", sys.modules[__name__])
    eps = [EntryPoint("ka", "hooks_fixture:kernel_a", "gpumem"),
           EntryPoint("kb", "hooks_fixture:kernel_b", "gpumem")]
    plugins = load_plugins(eps=eps, warn=lambda m: None)
    src = plugins.hook.gpumem_kernel_source(arch="hopper", probe="pointer_chase")
    assert src == KernelSource("// a", "k")
    assert plugins.hook.gpumem_kernel_source(arch="hopper", probe="stream") is None


def test_generic_kernel_is_packaged_and_names_every_path():
    src = generic_kernel_source()
    for name in ("pointer_chase_ca", "pointer_chase_cg", "pointer_chase_nc",
                 "chain_sequential", "chain_random"):
        assert name in src.code


INSTANCES = {
    "pointer_chase": "",
    "stream": "".join(
        f"template __global__ void stream<{w},{k},{o},{d}>(const Vec<{w}>::T*, Vec<{w}>::T*, "
        f"unsigned long long, unsigned long long, int, unsigned int*, unsigned long long);\n"
        for w in (4, 8, 16) for k in (*range(1, 9), 16) for o in (0, 1, 2, 3)
        for d in (0, 1, 2))
    + "".join(f"template __global__ void async_read<{k}>(const uint4*, unsigned long long, "
              f"unsigned long long, int, unsigned int*);\n" for k in (1, 2, 4, 8, 16)),
    "smem": "".join(f"template __global__ void smem_throughput<{k}>(int, unsigned long long*, "
                    f"unsigned int*);\n" for k in (1, 2, 4, 6, 8)),
    "dsmem": "".join(f"template __global__ void dsmem_latency<{c}>(int, int, unsigned long long*"
                     f", unsigned int*);\n" for c in (1, 2, 4, 8))
    + "".join(f"template __global__ void dsmem_throughput<{c},{k}>(int, int, unsigned long long*"
              f", unsigned int*);\n" for c in (1, 2, 4, 8) for k in (1, 2, 4, 8)),
    "bulk_copy": "".join(f"template __global__ void bulk_read<{s}>(const unsigned char*, "
                         f"unsigned long long, unsigned int, unsigned long long, unsigned int*);"
                         f"\n" for s in (1, 2, 4, 8)),
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("probe", [
    # stream: nvcc compiles its 248 template instances, 14 s of CPU
    pytest.param(p, marks=pytest.mark.slow) if p == "stream" else p for p in sorted(INSTANCES)])
def test_generic_kernels_compile_for_sm90_without_spills(tmp_path, probe):
    """Every generic kernel, with the template instances the experiments use."""
    cu = tmp_path / "k.cu"
    cu.write_text(generic_kernel_source(probe).code + "\n" + INSTANCES[probe])
    res = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                          str(tmp_path / "k.cubin"), str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    spills = [ln for ln in res.stderr.splitlines() if "spill" in ln]
    assert spills and all(" 0 bytes spill stores, 0 bytes spill loads" in ln for ln in spills)
