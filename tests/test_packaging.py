"""Packaging: what each distribution imports it declares, its dependency floors are true, and
every distribution carries its license.

The import check reads the source trees (no import): a third-party module imported at module
level must be a base dependency of the distribution whose tree imports it; one imported only
inside a function or a ``try`` (cupy, pynvml, distributed: behind extras) must be declared, in
the base dependencies or an extra.

The floors check (marked ``slow`` and ``network``: it downloads wheels) installs the
distributions into a fresh venv with every declared dependency pinned to its floor
(``constraints-min.txt``) and runs the CLI there.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints-min.txt"
# the distributions the constraints file covers and the floors test installs, in order
EXAMPLE = "examples/gpumem-example-arch"  # a third party's plugin, as the guide builds it
DISTS = ["core", "plugins/fermi", "plugins/kepler", "plugins/maxwell", "plugins/hopper",
         "plugins/accelsim"]

# import name -> the distributions that provide it, where the two names differ (or the module
# comes with another distribution: distributed with dask[distributed])
PROVIDERS: dict[str, set[str]] = {
    "netCDF4": {"netcdf4"},
    "tomli_w": {"tomli-w"},
    "cupy": {"cupy-cuda12x", "cupy-cuda13x", "cupy"},
    "pynvml": {"nvidia-ml-py", "pynvml"},
    "distributed": {"distributed", "dask[distributed]"},
    "yaml": {"pyyaml"},
    "PIL": {"pillow"},
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req(spec: str) -> tuple[str, set[str], str]:
    """(normalized name, extras, the rest) of a requirement string."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*(.*)$", spec)
    assert m, spec
    extras = {_norm(e) for e in (m.group(2) or "").split(",") if e.strip()}
    return _norm(m.group(1)), extras, m.group(3)


def _provided(specs: list[str]) -> set[str]:
    """Names a list of requirements provides: each name, and name[extra] for its extras."""
    out: set[str] = set()
    for spec in specs:
        name, extras, _ = _req(spec)
        out.add(name)
        out |= {f"{name}[{e}]" for e in extras}
    return out


def _project(dist: str) -> dict:
    return tomllib.loads((ROOT / dist / "pyproject.toml").read_text())["project"]


def _core_name() -> str:
    """The core's distribution name (the package and the command are ``gpumem`` either way)."""
    return _norm(_project("core")["name"])


def _own_packages(dist: str) -> set[str]:
    src = ROOT / dist / "src"
    return {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(top-level module, deferred) of every absolute import; deferred: inside a function or a
    ``try`` (an optional import), so it need not be a base dependency."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            d = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Try)
            if isinstance(child, ast.Import):
                found.extend((a.name.split(".")[0], d) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], d))
            visit(child, d)

    visit(tree, False)
    return found


def _third_party_imports(dist: str) -> dict[str, tuple[bool, list[str]]]:
    """module -> (only ever deferred, files that import it) over the distribution's src tree."""
    own = _own_packages(dist)
    seen: dict[str, tuple[bool, list[str]]] = {}
    for path in sorted((ROOT / dist / "src").rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for mod, deferred in _imports(ast.parse(path.read_text(), str(path))):
            if mod in sys.stdlib_module_names or mod in own or mod == "__future__":
                continue
            only_deferred, files = seen.get(mod, (True, []))
            seen[mod] = (only_deferred and deferred, [*files, str(path.relative_to(ROOT))])
    return seen


@pytest.mark.parametrize("dist", DISTS)
def test_every_third_party_import_is_declared(dist):
    project = _project(dist)
    base = _provided(project.get("dependencies", []))
    extras = {name: _provided(specs)
              for name, specs in project.get("optional-dependencies", {}).items()}
    anywhere = base.union(*extras.values())
    problems = []
    for mod, (only_deferred, files) in _third_party_imports(dist).items():
        providers = {_core_name()} if mod == "gpumem" else PROVIDERS.get(mod, {_norm(mod)})
        where = f"{mod} ({files[0]}{' and others' if len(files) > 1 else ''})"
        if not only_deferred and not providers & base:
            problems.append(f"{where}: imported at module level, not a base dependency")
        elif not providers & anywhere:
            problems.append(f"{where}: not declared, neither in dependencies nor an extra")
    assert not problems, f"{dist}/pyproject.toml: " + "; ".join(problems)


def test_plugins_depend_on_a_compatible_core():
    version = _project("core")["version"]
    major, minor = (int(x) for x in version.split(".")[:2])
    for dist in DISTS[1:]:
        name = _project("core")["name"]
        core = [s for s in _project(dist)["dependencies"] if _req(s)[0] == _norm(name)]
        assert core == [f"{name}>={major}.{minor},<{major}.{minor + 1}"], (dist, core)


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, rest = _req(line)
        m = re.match(r"==\s*([^\s;]+)", rest)
        assert m, f"constraints-min.txt: {line!r} is not a == pin"
        pins[name] = m.group(1)
    return pins


def _floor(rest: str) -> str | None:
    m = re.search(r">=\s*([^\s,;]+)", rest)
    return m.group(1) if m else None


def _same_version(a: str, b: str) -> bool:
    def key(v: str) -> list[int]:
        parts = [int(x) for x in v.split(".")]
        while parts and parts[-1] == 0:
            parts.pop()
        return parts
    return key(a) == key(b)


def test_constraints_pin_every_base_dependency_to_its_floor():
    pins = _constraints()
    declared = set()
    for dist in DISTS:
        for spec in _project(dist).get("dependencies", []):
            name, _, rest = _req(spec)
            if name == _core_name():
                continue
            declared.add(name)
            floor = _floor(rest)
            assert floor, f"{dist}: {spec!r} declares no floor (>=)"
            assert name in pins, f"constraints-min.txt lacks {name} (floor {floor}, {dist})"
            assert _same_version(pins[name], floor), (
                f"{dist}: {spec!r} but constraints-min.txt pins {name}=={pins[name]}")
    assert set(pins) <= declared, f"constraints-min.txt pins undeclared {set(pins) - declared}"


@pytest.mark.parametrize("dist", [*DISTS, "."])
def test_license_file_and_metadata(dist):
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    if dist == ".":
        return
    assert (ROOT / dist / "LICENSE").read_text() == license_text, f"{dist}/LICENSE differs"
    project = _project(dist)
    assert project["license"].split(" AND ")[0] == "Apache-2.0", project["license"]
    files = project["license-files"]
    assert "LICENSE" in files
    for f in files:
        assert (ROOT / dist / f).is_file(), f"{dist}: license file {f} missing"
    # a distribution that ships GPGPU-Sim's configs ships their copyright notice and says so
    for config in (ROOT / dist / "src").rglob("gpgpusim.config"):
        notice = config.parent / "COPYRIGHT-gpgpu-sim"
        assert notice.is_file(), f"{config} without its COPYRIGHT-gpgpu-sim"
        assert str(notice.relative_to(ROOT / dist)) in files
        assert "BSD-3-Clause" in project["license"]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, (
        f"{' '.join(cmd)} exited {res.returncode}\n--- stdout\n{res.stdout[-4000:]}"
        f"\n--- stderr\n{res.stderr[-4000:]}")
    return res


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="the floors are those of Python 3.10/3.11 (numpy 1.24, numba 0.59 "
                           "have no wheels for newer Pythons)")
def test_minimum_versions_run_the_cli(tmp_path):
    """Fresh venv, every dependency at its floor, then the CLI: a few minutes (downloads)."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUMEM_", "PYTHON", "VIRTUAL_ENV", "PIP_NO_INDEX"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the pip running these tests installs into the new venv (--python: pip >= 22.3)
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
          "--only-binary", ":all:", "-c", str(CONSTRAINTS),
          *(str(ROOT / d) for d in DISTS), str(ROOT / EXAMPLE)], tmp_path, env, timeout=900)
    # a third-party plugin (the plugin guide's example) resolves its core by the PyPI name
    # gpumem-dissect ("gpumem" on PyPI is an unrelated VRAM monitor): nothing else came in
    _run([sys.executable, "-m", "pip", "--python", str(py), "check"], tmp_path, env, 120)
    pins = _constraints()
    listed = _run([sys.executable, "-m", "pip", "--python", str(py), "list",
                   "--format", "freeze"], tmp_path, env, timeout=120).stdout
    got = dict(_req(line)[0:3:2] for line in listed.splitlines() if "==" in line)
    for name, version in pins.items():
        if name == "tomli" and sys.version_info >= (3, 11):
            continue
        assert got.get(name, "").lstrip("=") == version, (name, got.get(name))

    gpumem = str(py.parent / "gpumem")
    out = tmp_path / "results"
    assert "run" in _run([gpumem, "--help"], tmp_path, env, 120).stdout
    listing = _run([gpumem, "list-plugins"], tmp_path, env, 120).stdout
    for plugin in ("fermi", "kepler", "maxwell", "hopper", "accelsim", "example-arch"):
        assert plugin in listing
    assert "gpumem-dissect" in listing
    _run([gpumem, "run", "--arch", "kepler", "latency", "--device", "sim", "--quick",
          "--out", str(out)], tmp_path, env, 600)
    shown = _run([gpumem, "show", str(out)], tmp_path, env, 120).stdout
    assert "lat.dram" in shown
    shutil.rmtree(env_dir, ignore_errors=True)
