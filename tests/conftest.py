"""Shared fixtures: a fresh plugin set per test, the CLI in-process and as a subprocess, the
fixture plugin distributions installed with pip into a private folder, and whole simulated
runs made once per test session (shared by pytest-xdist's workers).

Tests marked ``slow`` are left out unless ``GPUMEM_TEST_SLOW=1`` (``.ci/run`` sets it): the
README's test command then runs the whole suite, as CI does."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The simulator's per-path kernels are compiled once a path has run 30 M accesses (about 4 s
# of CPU each); the suite's many short-lived configs would compile some 40 of them on a fresh
# clone, for runs the generic kernel finishes sooner. Tests of the specialised kernels set
# COMPILE_AFTER themselves. Set before gpumem is imported; child processes inherit it.
os.environ.setdefault("GPUMEM_SIM_COMPILE_AFTER", str(10**15))

from gpumem.plugin.registry import reset_plugins  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
DISTS = FIXTURES / "dists"
sys.path.insert(0, str(FIXTURES))  # in-process plugin modules and helpers for the tests

from helpers import GPUMEM_ENV  # noqa: E402

# The Ctrl-C tests need SIGINT delivered, here and in the processes they start. A shell
# without job control starts a background job (`cmd &` in a script, nohup) with SIGINT
# ignored, Python keeps it ignored, and every child inherits that: the tests then failed
# on the runner, not on gpumem. Undo it for this process; children start with the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pytest-xdist starts its workers with COLUMNS=80 and LINES=24 in their environment, and
# gpumem's tables fit COLUMNS when it is set: a line the tests look for was then wrapped
# under xdist only. The tests see what a piped run sees, whoever starts them.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)

# The suite starts some 250 Python processes (pytest-xdist's workers, the CLI, a run's worker
# processes). With PYTHONDONTWRITEBYTECODE set (some CI images set it) each compiled the
# checkout's modules from source again, about 0.3 s of CPU apiece on a fresh clone; they
# keep the bytecode in the checkout's __pycache__ folders (git ignores them) instead.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

#: ``GPUMEM_TEST_SLOW=1``: run the tests marked ``slow`` too (the full suite; .ci/run sets it).
SLOW_ENV = "GPUMEM_TEST_SLOW"

#: Test files that take longest, started first: with ``--dist loadfile`` each file runs on
#: one worker, and a long file begun last would leave the other worker idle at the end; the
#: many short files left out of this list fill in at the end, so both workers finish within a
#: few seconds of each other. The first three hold the full suite's slowest tests
#: (GPUMEM_TEST_SLOW=1); the next make the shared simulated runs (see :func:`sim_run`) that
#: several files wait for; then by CPU time in the developer's command (2026-12-03).
LONG_FIRST = ("test_plugin_new.py", "test_generic_accelsim.py", "test_packaging.py",
              "test_expected_sources.py", "test_h200_reference.py", "test_structure.py",
              "test_sim_vs_authors.py", "test_finding_names.py", "test_sim_vs_h200.py",
              "test_cf_units.py", "test_faults_run.py", "test_accelsim_device.py",
              "test_report.py", "test_runner_concurrent.py", "test_fleet.py",
              "test_plugin_guide.py", "test_recovery.py", "test_compare_agreement.py",
              "test_contention.py", "test_noise.py", "test_dask.py", "test_faults_rundir.py",
              "test_third_party.py", "test_importers.py", "test_run.py",
              "test_accelsim_translate.py", "test_trace_units.py", "test_calibrate.py",
              "test_reruns.py", "test_faults_write.py", "test_interrupt.py", "test_store.py")

_LEFT_KEY = pytest.StashKey[int]()  # how many slow tests collection left out
_LEFT_OUT = "gpumem_slow_left_out"  # the same, sent by an xdist worker to the controller


def _slow_wanted() -> bool:
    return os.environ.get(SLOW_ENV, "") not in ("", "0")


def pytest_testnodedown(node, error):
    """(xdist's controller) each worker's count of the slow tests it left out."""
    left = getattr(node, "workeroutput", {}).get(_LEFT_OUT)
    if left is not None:
        node.config.stash[_LEFT_KEY] = left


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = config.stash.get(_LEFT_KEY, 0)
    if left:
        terminalreporter.write_line(f"{left} tests marked slow were left out: {SLOW_ENV}=1 "
                                    f"runs them (.ci/run does)")


def pytest_collection_modifyitems(config, items):
    """Leave out the ``slow`` tests unless asked for; start the longest files first (the
    order stays the same in every xdist worker, as it must)."""
    if not _slow_wanted() and not config.getoption("markexpr"):  # -m: the user chose
        slow = [it for it in items if it.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [it for it in items if not it.get_closest_marker("slow")]
        config.stash[_LEFT_KEY] = len(slow)
        if hasattr(config, "workeroutput"):  # an xdist worker: tell the controller
            config.workeroutput[_LEFT_OUT] = len(slow)
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(rank)))  # stable: files stay whole


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch):
    """Every test starts with no loaded plugin set and no gpumem environment variables."""
    for var in GPUMEM_ENV:
        monkeypatch.delenv(var, raising=False)
    reset_plugins()
    yield
    reset_plugins()


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run ``gpumem ARGS`` in this process; returns exit code, stdout and stderr."""
    from gpumem.cli import main

    def run(*args: str) -> Result:
        capsys.readouterr()
        reset_plugins()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def fake_accelsim(tmp_path, monkeypatch) -> Path:
    """``GPUMEM_ACCELSIM`` -> a wrapper running the fake Accel-Sim
    (tests/fixtures/fake_accelsim) with this interpreter; the caller declares the pace."""
    fake = Path(__file__).parent / "fixtures" / "fake_accelsim" / "accel-sim.out"
    wrapper = tmp_path / "fakebin" / "accel-sim.out"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("GPUMEM_ACCELSIM", str(wrapper))
    return wrapper


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """The fixture plugin distributions (sample, broken, dup), pip-installed into a folder."""
    site = tmp_path_factory.mktemp("plugin-site")
    dists = [str(DISTS / d) for d in ("gpumem-sample", "gpumem-broken", "gpumem-dup")]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--no-input",
                    "--target", str(site), *dists], check=True,
                   env={**os.environ, "PIP_NO_INDEX": "1"})
    return site


#: The top-level packages of the distributions in ``plugin_site``.
SITE_PACKAGES = ("gpumem_sample", "gpumem_broken", "gpumem_dup")


def _set_aside(packages) -> dict:
    """Remove the modules of ``packages`` from ``sys.modules``; returns them."""
    return {m: sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] in packages}


@pytest.fixture
def with_site(plugin_site, monkeypatch):
    """Make the pip-installed fixture plugins visible to this process, imported from there as
    in a fresh process: modules of the same names that another test imported (test_api makes a
    ``gpumem_broken`` of its own) are set aside for the test, and the site's are dropped after
    it, so that no later test of this worker finds them."""
    saved = _set_aside(SITE_PACKAGES)
    monkeypatch.syspath_prepend(str(plugin_site))
    yield plugin_site
    _set_aside(SITE_PACKAGES)
    sys.modules.update(saved)


# ---- whole simulated runs, made once per session ---------------------------------------------

@dataclass(frozen=True)
class SimRun:
    """``gpumem run --arch ARCH all --device sim [--quick] --check --out OUT`` in a child
    process: its exit code, run folder and output (stdout and stderr, interleaved). The folder
    is shared by every test of the session: read it, never write into it (copy it first)."""
    code: int
    out: Path
    text: str

    @property
    def ran(self) -> bool:
        """Did the run itself succeed? (0, or 1 with only ``--check``'s verdict failing.)"""
        return self.code == 0 or (self.code == 1 and "check failed:" in self.text)


def _shared_root(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (each has a basetemp of its own
    inside it); pytest's own basetemp without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _make_sim_run(root: Path, arch: str, quick: bool) -> None:
    name = f"{arch}{'-quick' if quick else ''}"
    out = root / name
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    argv = [sys.executable, "-m", "gpumem", "run", "--arch", arch, "all", "--device", "sim",
            "--out", str(out), "--check", *(["--quick"] if quick else [])]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, cwd=root, timeout=900)
    tmp = root / f"{name}.json.tmp"
    tmp.write_text(json.dumps({"code": done.returncode, "text": done.stdout}))
    tmp.replace(root / f"{name}.json")


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory):
    """``sim_run(arch, quick=False)`` -> :class:`SimRun`; ``sim_run.many([(arch, quick), ...])``
    -> a dict of them. Each run is made once per session, by whichever worker asks first
    (a lock file per run); a worker asking for several makes those no other worker is making
    before it waits for the others."""
    root = _shared_root(tmp_path_factory) / "gpumem-sim-runs"
    root.mkdir(exist_ok=True)

    def load(arch: str, quick: bool) -> SimRun | None:
        name = f"{arch}{'-quick' if quick else ''}"
        try:
            data = json.loads((root / f"{name}.json").read_text())
        except FileNotFoundError:
            return None
        return SimRun(data["code"], root / name, data["text"])

    def attempt(arch: str, quick: bool, block: bool) -> SimRun | None:
        with open(root / f"{arch}{'-quick' if quick else ''}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
            except BlockingIOError:
                return None  # another worker is making it
            got = load(arch, quick)
            if got is None:
                _make_sim_run(root, arch, quick)
                got = load(arch, quick)
            return got

    def many(keys) -> dict[tuple[str, bool], SimRun]:
        keys = [(a, bool(q)) for a, q in keys]
        got = {k: r for k in keys if (r := load(*k)) is not None}
        for k in keys:
            if k not in got and (r := attempt(*k, block=False)) is not None:
                got[k] = r
        for k in keys:
            if k not in got:
                got[k] = attempt(*k, block=True)
        return got

    def one(arch: str, quick: bool = False) -> SimRun:
        return many([(arch, quick)])[arch, quick]

    one.many = many
    return one
