"""The generic architecture on simulated GPUs nobody wrote a plugin for: each Accel-Sim
config of the test data, imported (``gpumem import accelsim``), is dissected with no
``--arch`` and gives back the config's own caches and latencies (issue "Any GPU")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).parent / "data" / "accelsim"
CONFIGS = ("SM2_GTX480", "SM3_KEPLER_TITAN", "SM7_QV100", "SM90_H100")
#: the finding prefix of the first level each load path reaches (cache_structure)
PREFIX = {"ca": "l1d", "nc": "ro", "tex": "tex_l1"}


@pytest.fixture(scope="module")
def dissected(tmp_path_factory):
    """Per config: (the imported config as TOML data, findings by name, stderr)."""
    from gpumem.cli import main
    from gpumem.plugin.registry import reset_plugins

    out = tmp_path_factory.mktemp("generic")
    got = {}
    for name in CONFIGS:
        reset_plugins()
        toml = out / f"{name}.toml"
        assert main(["import", "accelsim", str(DATA / name / "gpgpusim.config"), "--out",
                     str(toml)]) == 0
        run = out / name
        reset_plugins()
        assert main(["run", "latency", "cache_structure", "--device", "sim", "--sim-config",
                     str(toml), "--out", str(run)]) == 0
        manifest = json.loads((run / "manifest.json").read_text())
        findings = {n: f for e in manifest["entries"].values()
                    for n, f in e.get("findings", {}).items()}
        got[name] = (tomllib.loads(toml.read_text()), findings, run)
    return got


def _level(cfg: dict, name: str) -> dict:
    return next(c for c in cfg["cache"] if c["name"] == name)


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_the_generic_architecture_recovers_each_configs_caches(dissected, name):
    cfg, found, run = dissected[name]
    cc = cfg["compute_capability"].replace(".", "")
    assert json.loads((run / "manifest.json").read_text())["runs"][-1]["arch"] == f"sm_{cc}"
    value = {n: f["value"] for n, f in found.items()}
    checked = 0
    # the first level of every load path: size, line, ways, sets and hit latency
    for path, levels in cfg["paths"].items():
        first = _level(cfg, levels[0])
        if path not in PREFIX or first["scope"] != "sm":
            continue
        p = PREFIX[path]
        assert value[f"{p}.overflow_size"] == first["size"], (path, first)
        assert value[f"{p}.line"] == first["line"], (path, first)
        assert value[f"{p}.ways"] == first["ways"], (path, first)
        assert value[f"{p}.sets"] == first["size"] // (first["ways"] * first["line"])
        assert value[f"{p}.hit_latency"] == pytest.approx(first["hit_latency"], abs=1)
        checked += 1
    assert checked >= 1
    # the L2: capacity (the ladder's knee, within one line per set), line, ways, sets
    l2 = _level(cfg, "l2")
    assert value["l2.size"] == pytest.approx(l2["size"], rel=0.005)
    assert value["l2.line"] == l2["line"]
    assert value["l2.ways"] == l2["ways"]
    assert value["l2.sets"] == l2["size"] // (l2["ways"] * l2["line"])
    # the latency ladder: L1 (where global loads are cached in it), L2, DRAM
    ca = cfg["paths"]["ca"]
    if _level(cfg, ca[0])["scope"] == "sm":
        assert value["lat.l1"] == pytest.approx(_level(cfg, ca[0])["hit_latency"], abs=1)
        assert value["l1d.size"] == pytest.approx(_level(cfg, ca[0])["size"], rel=0.01)
    assert value["lat.l2"] == pytest.approx(l2["hit_latency"], abs=1)
    assert value["lat.dram"] == pytest.approx(cfg["dram"]["latency"], abs=1)


def test_an_imported_accelsim_config_needs_no_arch(cli, tmp_path):
    toml = tmp_path / "qv100.toml"
    assert cli("import", "accelsim", str(DATA / "SM7_QV100" / "gpgpusim.config"), "--out",
               str(toml)).code == 0
    r = cli("run", "smem_latency", "--device", "sim", "--sim-config", str(toml), "--quick",
            "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    assert "names 'accelsim'" not in r.err  # the import named the generic architecture
    assert "gpumem sm_70 on sim SM7_QV100" in r.out
