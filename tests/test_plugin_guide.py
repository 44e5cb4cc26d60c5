"""The plugin author's guide (docs/plugin-guide.md) stays true to its example distribution
(examples/gpumem-example-arch), and the example works as a third-party plugin.

A fenced block whose info string names a file of the example (```python examples/...```)
must be that file, byte for byte; every source file of the example must be quoted. After
editing the example, ``python tests/test_plugin_guide.py`` rewrites the quotes from the files.
The example is then pip-installed offline into a folder of its own, as a user's plugin would
be, and driven through the commands the guide shows."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import install_example

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugin-guide.md"
EXAMPLE = ROOT / "examples" / "gpumem-example-arch"
PREFIX = "examples/gpumem-example-arch/"
#: ```LANG PATH ... ``` with the closing fence alone on its line
FENCE = re.compile(r"^```(\w*)[ \t]+(\S+)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def quoted_blocks(text: str) -> list[re.Match]:
    return [m for m in FENCE.finditer(text) if m.group(2).startswith(PREFIX)]


def example_sources() -> set[str]:
    """The files a reader needs: build config, package code and data, the plugin's tests."""
    found = [EXAMPLE / "pyproject.toml", *(EXAMPLE / "src").rglob("*.py"),
             *(EXAMPLE / "src").rglob("*.toml"), *(EXAMPLE / "tests").rglob("*.py")]
    return {p.relative_to(ROOT).as_posix() for p in found
            if "__pycache__" not in p.parts and not any(s.endswith(".egg-info") for s in p.parts)}


def test_every_quoted_file_is_the_file_itself():
    blocks = quoted_blocks(GUIDE.read_text())
    assert blocks, "the guide quotes no file of the example"
    for m in blocks:
        path = ROOT / m.group(2)
        assert path.is_file(), f"the guide quotes {m.group(2)}, which does not exist"
        want, got = path.read_text(), m.group(3)
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            m.group(2), "docs/plugin-guide.md", n=1))
        assert got == want, f"quote differs (python tests/test_plugin_guide.py syncs):\n{diff}"


def test_the_guide_quotes_every_source_file_of_the_example():
    quoted = {m.group(2) for m in quoted_blocks(GUIDE.read_text())}
    missing = sorted(example_sources() - quoted)
    assert not missing, f"files of the example the guide does not quote: {missing}"


# ---------------------------------------------------------------------------------------------
# The example, installed like a third party's plugin
# ---------------------------------------------------------------------------------------------


def _env(site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def gpumem(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True,
                          text=True, env=_env(site, **env), timeout=300)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> tuple[Path, Path]:
    """(copy of the example's source, folder it is pip-installed into). Built from a copy, so
    setuptools leaves no build/ or egg-info behind in the repository."""
    return install_example(tmp_path_factory.mktemp("example"))


@pytest.fixture
def listed(example, cli, monkeypatch):
    """``gpumem list-plugins --json`` (with ``GPUMEM_*`` settings) -> records by name, in this
    process with the install folder on sys.path: the entry points are found as in a fresh
    process (an example module imported from its source by another test set aside), without
    a Python start of 3-4 s per listing. The runs below stay child processes."""
    _, site = example

    def aside() -> dict:
        return {m: sys.modules.pop(m) for m in list(sys.modules)
                if m.split(".")[0] == "gpumem_example_arch"}

    saved = aside()
    monkeypatch.syspath_prepend(str(site))

    def records(**env: str) -> dict[str, dict]:
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            res = cli("list-plugins", "--json")
        assert res.code == 0, res.err
        return {r["name"]: r for r in json.loads(res.out)}

    yield records
    aside()  # the installed copy's modules: no later test of this worker finds them
    sys.modules.update(saved)


def test_list_plugins_shows_the_example_as_the_guide_does(listed):
    records = listed()  # not --strict: another plugin's failure is not ours
    me = records["example-arch"]
    assert me["status"] == "ok", me["error"]
    assert me["distribution"] == "gpumem-example-arch"
    assert me["contributes"]["architectures"] == ["gv100"]
    assert me["contributes"]["experiments"] == ["path_latency"]
    shown = [json.loads(m.group(1)) for m in re.finditer(r"^```json\n(.*?)^```$",
                                                         GUIDE.read_text(), re.S | re.M)]
    assert me in shown, "the guide's list-plugins record is not what list-plugins prints"


def test_load_and_disable_lists_take_the_plugin_name(listed):
    only = listed(GPUMEM_LOAD_PLUGINS="example-arch")
    assert set(only) == {"core", "example-arch"}
    assert "example-arch" not in listed(GPUMEM_DISABLE_PLUGINS="example-arch")


def test_run_all_on_the_simulator_then_compare_with_the_expected_values(example, tmp_path):
    _, site = example
    out = tmp_path / "gv100"
    res = gpumem(site, "run", "--arch", "gv100", "all", "--device", "sim", "--quick",
                 "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "path_latency" in res.stdout
    res = gpumem(site, "compare", str(out), "--expected", "--json")
    assert res.returncode == 0, res.stderr
    rows = {(r["experiment"], r["finding"]): r for r in json.loads(res.stdout)["rows"]}
    tex = rows[("path_latency", "tex_l1.hit_latency")]
    assert tex["expected"] == 68.0 and "MT4G" in tex["expected_source"]
    assert set(tex["status"].values()) == {"pass"}
    assert rows[("latency", "l2.size")]["expected_source"].startswith("device property")
    checked = {k: r["status"]["gv100"] for k, r in rows.items() if "expected" in r}
    assert len(checked) >= 10 and set(checked.values()) == {"pass"}, checked


@pytest.mark.slow  # a gpumem run and a gpumem report as processes: 10 s of CPU
def test_the_report_draws_the_examples_figure_in_its_own_section(example, tmp_path):
    """presentation() (guide section 6): gpumem report of a simulated run shows the
    example's section and figure beside core's."""
    _, site = example
    out = tmp_path / "gv100"
    res = gpumem(site, "run", "--arch", "gv100", "latency", "path_latency", "--device", "sim",
                 "--quick", "--out", str(out))
    assert res.returncode == 0, res.stderr
    res = gpumem(site, "report", str(out), "--out", str(tmp_path / "page"))
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr
    page = tmp_path / "page"
    assert (page / "path_latency.png").stat().st_size > 5000
    assert (page / "path_latency.svg").is_file() and (page / "latency_ladder.png").is_file()
    html = (page / "index.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="load_paths">'):]
    section = section[:section.index("</section>")]
    assert "<h2>Load paths (example plugin)</h2>" in section
    assert 'src="path_latency.png"' in section and "<td>path_latency</td>" in section
    assert html.index('<section id="bank_conflicts">') < html.index('<section id="load_paths">')


@pytest.mark.slow  # a pytest process of the example's tests, its simulated runs: 9 s of CPU
def test_the_examples_own_tests_pass_against_the_installed_plugin(example):
    src, site = example
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests"], cwd=src, capture_output=True, text=True, env=_env(site),
                         timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# Sync: python tests/test_plugin_guide.py
# ---------------------------------------------------------------------------------------------


def sync() -> int:
    """Rewrite every quote in the guide from its file; returns how many changed."""
    text = GUIDE.read_text()
    changed = 0

    def replace(m: re.Match) -> str:
        nonlocal changed
        if not m.group(2).startswith(PREFIX):
            return m.group(0)
        body = (ROOT / m.group(2)).read_text()
        changed += body != m.group(3)
        return f"```{m.group(1)} {m.group(2)}\n{body}```"

    GUIDE.write_text(FENCE.sub(replace, text))
    return changed


if __name__ == "__main__":
    print(f"{sync()} quote(s) updated in {GUIDE.relative_to(ROOT)}")
