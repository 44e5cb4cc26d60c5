"""Shared fixtures: a fresh plugin set per test, the CLI in-process and as a subprocess, and
the fixture plugin distributions installed with pip into a private folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpumem.plugins import reset_plugins

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


@pytest.fixture
def with_site(plugin_site, monkeypatch) -> Path:
    """Make the pip-installed fixture plugins visible to this process."""
    monkeypatch.syspath_prepend(str(plugin_site))
    return plugin_site
