"""The checks a plugin must pass come from one generator (gpumem.authoring.checks, public as
gpumem.api.checks; issue 46, item 3): ``gpumem plugin check``, the tests ``gpumem plugin new``
writes and the example plugin's tests iterate the same named checks, and a plugin that breaks
one fails exactly that named check (the test ``plugin new`` writes is checked the same way
in test_plugin_new.py, on a plugin made from runs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import gpumem_subprocess, install_example

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gpumem-example-arch"

#: Every check, in the order it runs, for a plugin of one architecture with a simulator
#: config ("ARCH:" stands for the architecture's name).
ONE_ARCH = ["loads", "ARCH:simulator_config", "ARCH:quick_run", "ARCH:expected_names",
            "ARCH:expected_sources", "ARCH:expected_valid", "ARCH:planted_cache", "imports"]


@pytest.fixture(autouse=True)
def _sys_path(monkeypatch):
    """plugin_checks(FOLDER) puts the folder's code first on sys.path (as pytest collecting
    a plugin's tests would keep it): taken off again after each test here."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def of(arch: str, names: list[str] = ONE_ARCH) -> list[str]:
    return [n.replace("ARCH:", f"{arch}:") for n in names]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("GPUMEM_", "PYTEST_"))} | {"GPUMEM_SIM_COMPILE_AFTER":
                                                            str(10**15)}


def collected(folder: Path, site: Path | None = None, cwd: Path | None = None) -> list[str]:
    """The ids of the ``test_plugin_check`` tests pytest collects from ``folder``."""
    env = _env()
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", str(folder)], capture_output=True, text=True,
                       env=env, cwd=cwd or folder, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return re.findall(r"::test_plugin_check\[(.+)\]$", r.stdout, re.M)


#: A plugin whose one fault is shipping no simulator config (an ArchitecturePlugin with
#: expected values from a source): exactly its ``onlyone:simulator_config`` check fails.
NO_CONFIG = {
    "pyproject.toml": """
        [project]
        name = "gpumem-onlyone"
        version = "0.1.0"
        [project.entry-points.gpumem]
        onlyone = "gpumem_onlyone.plugin:plugin"
    """,
    "src/gpumem_onlyone/__init__.py": "",
    "src/gpumem_onlyone/plugin.py": """
        from gpumem.api import Architecture, ArchitecturePlugin

        plugin = ArchitecturePlugin(Architecture("onlyone", "test", ("7.5",)), "gpumem_onlyone")
    """,
    "src/gpumem_onlyone/expected.py": """
        from gpumem.api import Expected

        def expected_values(device):
            return [Expected("l2.line", 128, "MT4G", "byte", rel_tol=0.0)]
    """,
}
NO_CONFIG_CHECKS = ["loads", "onlyone:simulator_config", "onlyone:expected_names",
                    "onlyone:expected_sources", "onlyone:expected_valid",
                    "onlyone:planted_cache", "imports"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for mod in [m for m in sys.modules if m.startswith("gpumem_onlyone")]:
        del sys.modules[mod]  # an earlier test's package of the same name
    for rel, text in files.items():
        path = root / "onlyone" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "onlyone"


def test_a_plugin_breaking_one_check_fails_that_check_alone_in_each_place(cli, tmp_path):
    """The generator, the command (its --json names each line) and a test file on
    parametrize_plugin_checks: the same names, and the one failure is the same check."""
    from gpumem.api.checks import plugin_checks

    tree = _tree(tmp_path, NO_CONFIG)
    checks = list(plugin_checks(tree))
    assert [c.name for c in checks] == NO_CONFIG_CHECKS
    assert [c.name for c in checks if not c.run().ok] == ["onlyone:simulator_config"]
    with pytest.raises(AssertionError, match=r"^onlyone: simulator config: none \(ship"):
        checks[1]()
    checks[0]()  # a check that holds returns quietly

    r = cli("plugin", "check", str(tree), "--json")
    assert r.code == 1 and "plugin check onlyone: 1 problem(s)" in r.err, r.out + r.err
    lines = json.loads(r.out)
    assert [c["name"] for c in lines] == NO_CONFIG_CHECKS
    assert [c["name"] for c in lines if not c["ok"]] == ["onlyone:simulator_config"]
    assert lines[1]["what"] == "onlyone: simulator config"
    text = cli("plugin", "check", str(tree))  # the lines as ever: what, then the evidence
    assert text.out.splitlines()[1].startswith("FAIL  onlyone: simulator config: none")

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_onlyone.py").write_text(textwrap.dedent(f"""
        from gpumem.api.checks import parametrize_plugin_checks

        @parametrize_plugin_checks({str(tree)!r})
        def test_plugin_check(check):
            check()
    """))
    assert collected(tests, cwd=tmp_path) == NO_CONFIG_CHECKS
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider",
                        str(tests)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 1, r.stdout[-3000:]
    assert "1 failed, 6 passed" in r.stdout, r.stdout[-3000:]
    failed = re.findall(r"^FAILED \S+::test_plugin_check\[(.+?)\]", r.stdout, re.M)
    assert failed == ["onlyone:simulator_config"], r.stdout[-3000:]


def test_a_check_that_raises_fails_as_its_own_line(monkeypatch, tmp_path):
    """The plugin's code crashing inside one check is that check's FAIL line (the command
    goes on with the rest); as a test, the exception itself, traceback and all."""
    import gpumem.authoring.checks as checks

    def boom(plugins, arch):
        raise RuntimeError("the plugin's hook fell over")

    monkeypatch.setattr(checks, "_planted_cache", boom)
    tree = _tree(tmp_path, NO_CONFIG)
    name, lines = checks.check_plugin(tree)
    assert name == "onlyone" and [c.name for c in lines] == NO_CONFIG_CHECKS
    planted = lines[NO_CONFIG_CHECKS.index("onlyone:planted_cache")]
    assert not planted.ok and planted.what.startswith("onlyone: the structure search")
    assert planted.detail == "raised RuntimeError: the plugin's hook fell over"
    assert lines[-1].name == "imports" and lines[-1].ok
    (crashing,) = [c for c in checks.plugin_checks(tree) if c.name.endswith("planted_cache")]
    with pytest.raises(RuntimeError, match="fell over"):
        crashing()


def test_the_parametrizer_makes_one_test_per_check_named_after_it(tmp_path):
    from gpumem.api.checks import parametrize_plugin_checks

    mark = parametrize_plugin_checks(_tree(tmp_path, NO_CONFIG))
    assert mark.name == "parametrize" and mark.args[0] == "check"
    assert mark.kwargs["ids"] == [c.name for c in mark.args[1]] == NO_CONFIG_CHECKS


def test_a_plugin_of_no_architecture_gets_no_architecture_checks(cli):
    r = cli("plugin", "check", "accelsim", "--json")
    assert r.code == 0, r.out + r.err
    assert [c["name"] for c in json.loads(r.out)] == ["loads", "architectures", "imports"]


def test_the_written_tests_and_the_examples_parametrize_over_the_checks():
    """Neither spells a check of its own that the generator makes: each calls it."""
    from gpumem.authoring.files import test_py
    from gpumem.authoring.new import NewPlugin

    written = test_py(NewPlugin(name="x100", out=Path("o"), compute_capability="9.0",
                                products=["X"], cards=["GPU-1"], runs=["r"], values=[], left=[],
                                sim_toml="", gpumem_version="0.1.0", runs_provenance=[]))
    example = (EXAMPLE / "tests" / "test_example_arch.py").read_text()
    for text, target in ((written, "NAME"), (example, '"example-arch"')):
        assert "from gpumem.api.checks import parametrize_plugin_checks" in text
        assert f"@parametrize_plugin_checks({target})\ndef test_plugin_check(check):" in text
    assert "RunRequest" not in written and "random_cache" not in written  # none of its own


@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> tuple[Path, Path]:
    """(a copy of the example's source, the folder it is pip-installed into, offline)."""
    return install_example(tmp_path_factory.mktemp("example-checks"))


@pytest.mark.slow  # the example's check run whole (a quick run of every experiment): 15 s
def test_the_command_and_the_examples_tests_iterate_the_same_checks(example_site):
    src, site = example_site
    ids = collected(src / "tests", site=site, cwd=src)
    check = gpumem_subprocess(["plugin", "check", "example-arch", "--json"], site=site)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    lines = json.loads(check.stdout)
    assert [c["name"] for c in lines] == ids == of("gv100")
    assert all(c["ok"] for c in lines), lines


@pytest.mark.slow  # the example's quick run inside its own tests: 15 s
def test_the_example_breaking_one_check_fails_that_test_alone(example_site, tmp_path):
    """A value without a source in the installed example: its tests fail exactly
    ``test_plugin_check[gv100:expected_sources]``; the rest, its own tests too, pass."""
    src, site = example_site
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    expected = broken / "gpumem_example_arch" / "expected.py"
    text = expected.read_text()
    source = 'f"{MT4G}: L1 size 117760 B"'
    assert text.count(source) == 1
    expected.write_text(text.replace(source, '"  "'))  # l1d.size: a value with no source
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider",
                        "tests"], capture_output=True, text=True, cwd=src, timeout=600,
                       env={**_env(), "PYTHONPATH": str(broken)})
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    failed = re.findall(r"^FAILED (\S+)", r.stdout, re.M)
    assert failed == ["tests/test_example_arch.py::test_plugin_check[gv100:expected_sources]"], \
        r.stdout[-3000:]
