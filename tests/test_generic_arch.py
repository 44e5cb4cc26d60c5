"""Any GPU: ``--arch auto`` picks the plugin that claims the device, else the generic ``sm_XY``
architecture, which runs every experiment the device supports and expects only what the
device's own properties say (issue "Any GPU")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from gpumem import hookimpl
from gpumem.contracts.device import DeviceBackend, Discovery
from gpumem.contracts.errors import DeviceUnavailable, UsageError
from gpumem.contracts.generic import (
    choose_architecture,
    generic_architecture,
    generic_name,
    is_generic,
)
from gpumem.plugin.registry import PluginRecord, load_plugins
from gpumem.run.runner import RunRequest, run

#: the sources a generic architecture's expected values may cite: the device's properties only
PROPERTY_WORDS = ("device property", "theoretical memory bandwidth", "warps an SM")


def test_generic_names_follow_cuda_targets():
    assert generic_name("9.0") == "sm_90"
    assert generic_name("8.9") == "sm_89"
    assert generic_name("12.0") == "sm_120"
    assert is_generic("sm_120") and not is_generic("hopper") and not is_generic("sm_9")
    arch = generic_architecture("sm_120")
    assert arch.generic and arch.claims("12.0") and not arch.claims("9.0")
    with pytest.raises(ValueError):
        generic_name("9")


def test_a_plugin_that_claims_the_capability_wins_and_the_line_says_why():
    hopper = load_plugins().architectures()["hopper"]
    got = choose_architecture([("hopper", hopper)], "9.0", "cuda:0 (NVIDIA H200)")
    assert got.arch is hopper
    assert got.why == "architecture hopper: plugin 'hopper' claims compute capability 9.0 " \
                      "of cuda:0 (NVIDIA H200)"
    other = choose_architecture([("hopper", hopper)], "8.9", "cuda:0 (NVIDIA L40S)")
    assert other.arch.name == "sm_89" and other.arch.generic
    assert other.why.startswith("architecture sm_89 (generic): no installed plugin claims "
                                "compute capability 8.9 of cuda:0 (NVIDIA L40S)")


# ---- a node of fake GPUs, each the built-in simulator under another name ----------------------

def _config(cc: str, name: str):
    """The packaged H200 model under another name and capability (read from the package, so
    that it is there with the hopper plugin disabled too)."""
    from importlib.resources import files

    from gpumem.sim import SimConfig

    cfg = SimConfig.from_toml(files("gpumem_hopper").joinpath("sim.toml").read_text())
    return dataclasses.replace(cfg, compute_capability=cc, name=name).validate()


class FakeGpus(DeviceBackend):
    """``fake:N``: GPUs given as (name, compute capability), simulated."""

    name = "fake"
    summary = "simulated GPUs under other names (test)"

    def __init__(self, gpus: list[tuple[str, str]]) -> None:
        self.gpus = gpus

    def _info(self, i: int):
        from gpumem.sim.device import sim_device_info

        name, cc = self.gpus[i]
        return dataclasses.replace(sim_device_info(_config(cc, name)), kind="fake", name=name,
                                   index=i, uuid=f"fake-{i:08d}")

    def discover(self) -> Discovery:
        return Discovery([self._info(i) for i in range(len(self.gpus))])

    def open(self, index: int, arch: str, kernel_source=None):
        from gpumem.sim.device import SimDevice

        if not 0 <= index < len(self.gpus):
            raise DeviceUnavailable(f"no fake GPU {index}")
        name, cc = self.gpus[index]
        dev = SimDevice(_config(cc, name), arch)
        dev.info = self._info(index)
        return dev


def _plugins(gpus, monkeypatch, disable: str = ""):
    if disable:
        monkeypatch.setenv("GPUMEM_DISABLE_PLUGINS", disable)
    ps = load_plugins(warn=lambda _m: None)

    class Node:
        @hookimpl
        def gpumem_register_devices(self, register):
            register(FakeGpus(gpus))

    assert ps.add(Node(), PluginRecord("fake-node", "test", "0"), lambda _m: None)
    return ps


def _expected_sources(report) -> list[str]:
    return [f.expected_source for o in report.outcomes for f in o.findings
            if f.expected is not None]


def test_a_gpu_no_plugin_knows_is_measured_as_its_generic_architecture(monkeypatch, tmp_path):
    ps = _plugins([("NVIDIA L40S", "8.9")], monkeypatch)
    report = run(RunRequest(experiments=["latency", "smem_latency", "bulk_copy", "cpasync"],
                            device="auto", quick=True, out=tmp_path / "r"), plugins=ps)
    assert report.arch == "sm_89"
    assert report.notices[0].startswith("architecture sm_89 (generic): no installed plugin "
                                        "claims compute capability 8.9 of fake:0 (NVIDIA L40S)")
    status = {o.experiment: o.status for o in report.outcomes}
    assert status == {"bulk_copy": "skipped", "cpasync": "complete", "latency": "complete",
                      "smem_latency": "complete"}
    (bulk,) = [o for o in report.outcomes if o.experiment == "bulk_copy"]
    assert bulk.error == "needs the TMA's bulk copies (compute capability 9.0 or newer), which " \
                         "NVIDIA L40S (compute capability 8.9) does not offer"
    sources = _expected_sources(report)
    assert sources, "the L2 size the device reports is expected"
    assert all(any(w in s for w in PROPERTY_WORDS) for s in sources), sources
    found = {f.name: f for o in report.outcomes for f in o.findings}
    assert found["l2.size"].status == "pass"
    assert found["lat.l1"].expected is None and found["lat.l1"].status == "n/a"


def test_hopper_disabled_an_h200_is_sm_90_and_with_hopper_it_is_hopper(monkeypatch, tmp_path):
    gpus = [("NVIDIA L40S", "8.9"), ("NVIDIA H200", "9.0")]
    with_hopper = _plugins(gpus, monkeypatch)
    report = run(RunRequest(experiments=["smem_latency"], device="auto", quick=True,
                            out=tmp_path / "a"), plugins=with_hopper)
    # the GPU a plugin claims is the best device, though another comes first
    assert (report.arch, report.device.index) == ("hopper", 1)
    assert report.notices[0] == "architecture hopper: plugin 'hopper' claims compute " \
                                "capability 9.0 of fake:1 (NVIDIA H200)"
    without = _plugins(gpus, monkeypatch, disable="hopper")
    report = run(RunRequest(experiments=["smem_latency"], device="fake:1", quick=True,
                            out=tmp_path / "b"), plugins=without)
    assert report.arch == "sm_90"
    sources = _expected_sources(report)
    assert not any("REFERENCE" in s or "gpu-benches" in s for s in sources), sources


def test_an_explicit_generic_architecture_and_an_unknown_device(monkeypatch, tmp_path):
    ps = _plugins([("NVIDIA L40S", "8.9")], monkeypatch)
    report = run(RunRequest(arch="sm_89", experiments=["smem_latency"], device="fake:0",
                            quick=True, out=tmp_path / "r"), plugins=ps)
    assert report.arch == "sm_89" and not report.notices
    with pytest.raises(UsageError, match=r"device fake:3 is not available: no such device"):
        run(RunRequest(experiments=["smem_latency"], device="fake:3", out=tmp_path / "x"),
            plugins=ps)
    assert not (tmp_path / "x").exists()


# ---- on the simulator the config names the architecture -------------------------------------

def test_a_config_naming_a_plugins_architecture_runs_as_it(cli, tmp_path):
    cfg = load_plugins().first_result("gpumem_simulator_config", arch="kepler", simulator="sim")
    cfg.save(tmp_path / "kepler.toml")
    r = cli("run", "smem_latency", "--device", "sim", "--sim-config",
            str(tmp_path / "kepler.toml"), "--quick", "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    assert f"architecture kepler: named by {tmp_path / 'kepler.toml'} (plugin 'kepler')" in r.err
    assert "gpumem kepler on sim" in r.out


# ---- on a real H200 (tests/data/h200-generic): the same card, with and without its plugin ------

H200 = Path(__file__).parent / "data" / "h200-generic"


def _agreement(first: Path, second: Path) -> dict:
    """``gpumem compare``'s agreement of two runs kept as their manifests."""
    from gpumem.interop.compare import compare
    from gpumem.plugin.registry import get_plugins

    return compare(get_plugins(), [first, second], False)["agreement"]


def _recorded(manifest: Path) -> list[dict]:
    """The findings as the manifest keeps them (with the expected value each was judged by)."""
    import json

    return [f for e in json.loads(manifest.read_text())["entries"].values()
            for f in (e.get("findings") or {}).values()]


def test_on_an_h200_the_generic_architecture_finds_what_hopper_finds():
    """The issue's acceptance, on three H200s: with the hopper plugin disabled, ``gpumem run
    all`` gives the findings ``--arch hopper`` gives on the same card: every structural one
    equal, at least 95 % of the measured ones within 5 % over all pairs (each pair 94-100 %,
    as two runs of one architecture: 96-98 %), and no expectation but the device's own. (The
    runs' manifests are kept, not their raw data: the agreement is ``gpumem compare``'s
    own, over the findings the runs recorded.)"""
    measured = within = 0
    for card in sorted(H200.iterdir()):
        runs = {p.name.split(".")[0]: p for p in card.glob("*.json")}
        hopper = [r for n, r in runs.items() if n.startswith("hopper")]
        generic = [r for n, r in runs.items() if n.startswith("gen")]
        assert hopper and generic, card
        for h in hopper:
            for g in generic:
                agree = _agreement(h, g)
                assert agree["structural"] >= 19, card
                assert agree["structural_equal"] == agree["structural"], (card, agree)
                assert not agree["in_one_run_only"], (card, agree)
                assert agree["measured_within"] >= 0.9 * agree["measured"], (card, agree)
                measured += agree["measured"]
                within += agree["measured_within"]
        for g in generic:
            sources = [f["expected_source"] for f in _recorded(g) if f["expected"] is not None]
            assert sources and all(any(w in s for w in PROPERTY_WORDS) for s in sources)
    assert measured >= 400 and within >= 0.95 * measured, (within, measured)


def test_gpumem_devices_says_what_each_gpu_is_measured_as(monkeypatch):
    from gpumem.run.resolve import list_devices

    ps = _plugins([("NVIDIA L40S", "8.9"), ("NVIDIA H200", "9.0")], monkeypatch)
    (fake,) = [b for b in list_devices(ps)["backends"] if b["name"] == "fake"]
    assert [(d["arch"], d["arch_generic"]) for d in fake["devices"]] == [
        ("sm_89", True), ("hopper", False)]
