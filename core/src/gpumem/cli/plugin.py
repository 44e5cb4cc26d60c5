"""``gpumem plugin new`` and ``gpumem plugin check``: a measured GPU becomes a plugin, and a
plugin is checked against itself and gpumem (:mod:`gpumem.authoring.new`,
:mod:`gpumem.authoring.checks`)."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import typer

from gpumem.cli._app import app
from gpumem.cli._common import (
    check_damage,
    escape_controls,
    plugins,
    print_json,
    require_paths,
    stderr,
    stdout,
)
from gpumem.contracts.errors import ResultsFileError, UsageError

plugin_app = typer.Typer(help="Write a plugin from measured runs, or check one.",
                         no_args_is_help=True)
app.add_typer(plugin_app, name="plugin")


def _say(message: str) -> None:
    stderr().print(f"gpumem: {escape_controls(message)}", highlight=False, markup=False)


@contextlib.contextmanager
def _claimed(target: Path) -> Iterator[None]:
    """``target`` made and claimed for this process while the plugin is derived and written
    (a lock file created exclusively: a second ``plugin new`` into it at once is refused,
    not both told "wrote"); a folder this process made is removed again if nothing was
    written."""
    made = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    lock = target / CLAIM
    if not _take(lock) and not (_stale(lock) and _take(lock)):
        raise UsageError(f"--out {target}: another gpumem plugin new is writing into it "
                         f"(remove {lock} if none is)")
    done = False
    try:
        yield
        done = True
    finally:
        lock.unlink(missing_ok=True)
        if not done and made and not any(target.iterdir()):
            target.rmdir()


#: The file that claims a folder ``plugin new`` writes into: "HOST PID" of the claimer.
CLAIM = ".gpumem-plugin-new.lock"


def _take(lock: Path) -> bool:
    """Create ``lock`` exclusively with this host and process in it; False if it exists."""
    from gpumem.results.store import HOST

    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{HOST} {os.getpid()}\n")
    return True


def _stale(lock: Path) -> bool:
    """Whether ``lock`` was left by a ``plugin new`` of this host that is gone (killed with
    SIGKILL, which runs no cleanup), and is now removed: the folder is free again. A lock of
    another host, or one whose process lives, or unreadable, stands."""
    from gpumem.results.store import HOST, pid_alive

    try:
        text = lock.read_text()
        host, pid = text.split()
    except (OSError, ValueError):
        return False
    if host != HOST or not pid.isdigit() or pid_alive(int(pid)):
        return False
    aside = lock.with_name(f"{lock.name}.{os.getpid()}")
    try:
        os.replace(lock, aside)  # one remover wins; a fresh claim taken meanwhile goes back
    except OSError:
        return False
    try:
        if aside.read_text() != text:
            os.replace(aside, lock)
            return False
        aside.unlink()
    except OSError:
        return False
    return True


def install_hint(target: Path) -> str:
    """The pip command that installs the folder ``plugin new`` wrote: a path pip cannot
    take for a name on the package index (``./gpumem-a100``, not ``gpumem-a100``), quoted
    for the shell."""
    return "pip install " + shlex.quote(target.as_posix() if target.is_absolute()
                                        else f"./{target.as_posix()}")


@plugin_app.command("new")
def new(
    name: str = typer.Argument(..., help="The plugin's name (entry point, gpumem-NAME, "
                                         "gpumem_NAME), e.g. a100."),
    runs: list[Path] = typer.Option(..., "--from", help="Run directories of one kind of GPU "
                                                        "(give --from once per run)."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                       help="Folder to write (default: ./gpumem-NAME); it "
                                            "must not exist or be empty."),
    workers: int = typer.Option(min(4, os.cpu_count() or 1), "--workers", "-j", min=1,
                                help="Worker processes for simulating the calibrated config."),
) -> None:
    """Write a pip-installable plugin from measured runs: architecture, expected values
    (the runs' medians; each band = the runs' own intervals + their run-to-run spread + a
    card-to-card allowance learned from gpumem's multi-card data), the calibrated simulator
    config, a README and tests. Give runs of a GPU (gpumem run all --device cuda:N), ideally
    on two or more cards: a simulated run is refused before anything is analysed, since it
    measures its config rather than hardware (to check a simulator config, use gpumem run
    --device sim --sim-config FILE --check instead)."""
    from gpumem.authoring.files import write_plugin
    from gpumem.authoring.new import check_name, new_plugin

    target = out or Path(f"gpumem-{name}")
    if os.path.islink(target):  # a dangling one too: writing would follow it elsewhere
        raise UsageError(f"--out {target}: a symbolic link; give the folder itself")
    if (target / CLAIM).exists():
        raise UsageError(f"--out {target}: another gpumem plugin new is writing into it "
                         f"(remove {target / CLAIM} if none is)")
    if os.path.lexists(target) and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"--out {target}: exists and is not an empty folder")
    check_name(plugins(), name)
    require_paths(runs)
    if check_damage(runs):  # each damaged file named on stderr
        raise ResultsFileError("a plugin's values must rest on intact runs: measure again or "
                               "leave the damaged run out")
    with _claimed(target):
        made = new_plugin(plugins(), name, runs, target, workers=workers, progress=_say)
        write_plugin(made)
    sim = sum(v.reproduced for v in made.values)
    con = stdout()
    con.print(escape_controls(
        f"wrote {target}: plugin '{name}' for {', '.join(made.products)} (compute capability "
        f"{made.compute_capability}): {len(made.values)} expected values from "
        f"{len(made.runs_provenance)} run(s) on {len(made.cards)} card(s), {sim} reproduced by "
        f"its calibrated simulator; {len(made.left)} finding(s) not expected (README.md says "
        f"why)"), highlight=False, markup=False)
    if made.one_card:
        _say(f"every run measured one card ({made.cards[0][:12]}): how far another card of "
             f"the product strays is not seen; each band's card-to-card part comes from "
             f"{made.learned_from}. Runs on a second card make the plugin sounder")
    con.print(escape_controls(
        f"next: {install_hint(target)} && gpumem plugin check {name}; a human should add "
        f"published sources for the values (src/{made.package}/expected.py)"),
        highlight=False, markup=False)


@plugin_app.command("check")
def check(
    target: str = typer.Argument(..., metavar="NAME|PATH",
                                 help="An installed plugin's name, or its source folder."),
    workers: int = typer.Option(1, "--workers", "-j", min=1,
                                help="Worker processes for the quick simulated run."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print the checks as JSON (name, what, ok, detail)."),
) -> None:
    """Check a plugin on its own: it loads, its simulator config is its architecture's, a
    quick simulated run meets its expected values, every expected value names a finding an
    experiment reports, has a source and is valid, core's structure search recovers a
    planted cache under each architecture, and it imports only gpumem.api. The checks a
    plugin's tests make (gpumem.api.checks), one line each. Exit 1 on any problem."""
    from gpumem.authoring.checks import check_plugin

    name, checks = check_plugin(target, workers=workers)
    con = stdout()
    if as_json:
        print_json([{"name": c.name, "what": c.what, "ok": c.ok, "detail": c.detail}
                    for c in checks])
    else:
        for c in checks:
            con.print(escape_controls(f"{'ok  ' if c.ok else 'FAIL'}  {c.what}"
                                      + (f": {c.detail}" if c.detail else "")),
                      highlight=False, markup=False)
    bad = [c for c in checks if not c.ok]
    if bad:
        _say(f"plugin check {name}: {len(bad)} problem(s)")
        raise typer.Exit(1)
    _say(f"plugin check {name}: every check passes")
