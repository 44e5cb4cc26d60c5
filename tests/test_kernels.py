"""The tuned kernels of the paper architectures: each plugin's pointer chase (core's paths
plus its texture path) is what the CUDA device compiles for that arch, and it builds for the
oldest target this toolkit supports (sm_75 for CUDA 13) without spills. The GPUs themselves
need older toolkits (each kernels/*.cu says which); this catches errors in the code."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from gpumem.plugin.registry import get_plugins

LEGACY = ("fermi", "kepler", "maxwell")
OLDEST_TARGET = "sm_75"


@pytest.mark.parametrize("arch", LEGACY)
def test_plugin_supplies_a_texture_path(arch):
    src = get_plugins().hook.gpumem_kernel_source(arch=arch, probe="pointer_chase")
    assert src is not None
    for name in ("pointer_chase_ca", "pointer_chase_cg", "pointer_chase_tex", "chain_random"):
        assert f"void {name}(" in src.code or f"({name}," in src.code
    assert "tex1Dfetch" in src.code
    # only the pointer chase is tuned; the other probes use core's kernels
    assert get_plugins().hook.gpumem_kernel_source(arch=arch, probe="stream") is None


def test_hopper_uses_core_kernels():
    assert get_plugins().hook.gpumem_kernel_source(arch="hopper", probe="pointer_chase") is None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", LEGACY)
def test_legacy_kernels_compile_for_the_oldest_target(tmp_path, arch):
    src = get_plugins().hook.gpumem_kernel_source(arch=arch, probe="pointer_chase")
    cu = tmp_path / f"{arch}.cu"
    cu.write_text(src.code)
    res = subprocess.run(["nvcc", f"-arch={OLDEST_TARGET}", "-cubin", "-Xptxas", "-v",
                          *src.options, "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    entries = set(re.findall(r"Compiling entry function '(\w+)'", res.stderr))
    assert {"pointer_chase_ca", "pointer_chase_cg", "pointer_chase_nc",
            "pointer_chase_tex"} <= entries
    spills = [ln for ln in res.stderr.splitlines() if "spill" in ln]
    assert spills and all(" 0 bytes spill stores, 0 bytes spill loads" in ln for ln in spills)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_core_chase_kernels_walk_a_warm_up_with_loads_in_flight(tmp_path):
    """ChaseRequest.warm_ilp: each path's chase (shared-memory and global record) has a
    variant that walks its warm-up with WARM_ILPS' loads in flight in its own kernel, and it
    builds without spills."""
    from importlib.resources import files

    from gpumem.contracts.device import WARM_ILPS

    cu = tmp_path / "pointer_chase.cu"
    cu.write_text(files("gpumem.cuda").joinpath("kernels/pointer_chase.cu").read_text())
    res = subprocess.run(["nvcc", f"-arch={OLDEST_TARGET}", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    entries = set(re.findall(r"Compiling entry function '(\w+)'", res.stderr))
    want = {f"pointer_chase_{p}{g}_ilp{k}" for p in ("ca", "cg", "nc") for g in ("", "_global")
            for k in WARM_ILPS if k > 1}
    assert want and want <= entries, want - entries
    spills = [ln for ln in res.stderr.splitlines() if "spill" in ln]
    assert spills and all(" 0 bytes spill stores, 0 bytes spill loads" in ln for ln in spills)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_hammered_chase_builds_without_spills(tmp_path):
    """ChaseRequest.hammer (probe slice_contention): core's chase source has the kernel
    the CUDA device declares the probe by, and it builds for the oldest target unspilled."""
    from importlib.resources import files

    code = files("gpumem.cuda").joinpath("kernels/pointer_chase.cu").read_text()
    cu = tmp_path / "pointer_chase.cu"
    cu.write_text(code)
    res = subprocess.run(["nvcc", f"-arch={OLDEST_TARGET}", "-cubin", "-Xptxas", "-v",
                          "-o", str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    at = res.stderr.index("Compiling entry function 'pointer_chase_cg_hammered'")
    props = res.stderr[at:].splitlines()[:4]
    assert any(" 0 bytes spill stores, 0 bytes spill loads" in ln for ln in props), props
