"""``gpumem devices`` without a GPU, without a driver and without CuPy: says so, exit 0."""

from __future__ import annotations

import json
import sys
import types

import pytest


def _cuda(data):
    return next(b for b in data["backends"] if b["name"] == "cuda")


def test_devices_json_lists_simulators_and_explains_missing_gpu(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if CuPy were not installed
    res = cli("devices", "--json")
    assert res.code == 0
    data = json.loads(res.out)
    cuda = _cuda(data)
    assert cuda["devices"] == [] and "CuPy is not installed" in cuda["message"]
    sims = {s["name"]: s for s in data["simulators"]}
    assert sims["sim"]["available"] is True and sims["sim"]["plugin"] == "core"
    assert sims["accelsim"]["available"] is False and "not installed" in sims["accelsim"]["reason"]


def fake_cupy(available):
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0.0-fake"
    cuda = types.SimpleNamespace()

    def is_available():
        if isinstance(available, Exception):
            raise available
        return available

    cuda.is_available = is_available
    cupy.cuda = cuda
    return cupy


@pytest.mark.parametrize("available, needle", [
    (False, "no CUDA device or driver found"),
    (RuntimeError("cudaErrorInsufficientDriver"), "no usable CUDA driver"),
])
def test_devices_without_driver(cli, monkeypatch, available, needle):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(available))
    res = cli("devices", "--json")
    assert res.code == 0
    assert needle in _cuda(json.loads(res.out))["message"]
    res = cli("devices")
    assert res.code == 0 and needle in res.out and "sim" in res.out


def test_importing_gpumem_never_imports_cupy_or_numba():
    import subprocess

    code = ("import sys, gpumem, gpumem.cli, gpumem.run.runner, gpumem.plugin.registry; "
            "gpumem.plugin.registry.get_plugins(); "
            "print('cupy' in sys.modules, 'numba' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.stdout.split() == ["False", "False"], res.stderr
