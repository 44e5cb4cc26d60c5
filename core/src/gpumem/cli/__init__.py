"""The ``gpumem`` command: one module per command, each a thin wrapper over plain functions.

:func:`main` is the console-script entry point. It runs the typer app without click's
"standalone" error handling so that every error is one line on stderr: usage errors exit 2,
other gpumem errors 1, Ctrl-C 130 (with "interrupted" said, in every command). Messages are
printed with control characters escaped: they quote file and plugin text.

As the console script (``gpumem``, ``python -m gpumem``: ``main()`` without arguments) the
process always ends when the command is done, with the command's exit code: a non-daemon
thread a plugin left running would keep the interpreter waiting for it forever (Ctrl-C then
gave a traceback and exit 0), so then gpumem says in one line whose thread it is, flushes its
output, runs the ``atexit`` handlers and leaves with ``os._exit``; a thread no plugin is
known to have started gets a few seconds of the normal shutdown first (:func:`_exit`).
``main(argv)`` (tests, embedding) only returns the code: the caller's process is not
gpumem's to end.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from typing import NoReturn, Protocol, cast

import typer

from gpumem._compat import run_atexit_handlers
from gpumem.cli import _state
from gpumem.cli import analyze as _analyze  # noqa: E402,F401  (registers commands)
from gpumem.cli import compare as _compare  # noqa: E402,F401
from gpumem.cli import convert as _convert  # noqa: E402,F401
from gpumem.cli import devices as _devices  # noqa: E402,F401
from gpumem.cli import plugin as _plugin  # noqa: E402,F401
from gpumem.cli import plugins as _plugins  # noqa: E402,F401
from gpumem.cli import report as _report  # noqa: E402,F401
from gpumem.cli import run as _run  # noqa: E402,F401
from gpumem.cli import show as _show  # noqa: E402,F401
from gpumem.cli._app import _CtrlC, app  # noqa: F401  (app: the typer application)
from gpumem.cli._common import escape_controls
from gpumem.contracts.errors import GpumemError
from gpumem.plugin.registry import warnings_as_lines


class _ClickException(Protocol):
    """What gpumem reads of click's ``ClickException`` (its class: :func:`_click_exception`)."""

    exit_code: int

    def format_message(self) -> str: ...


def _click_exception() -> type[Exception]:
    """The ``ClickException`` class of the click that typer runs on, through public API only.

    typer < 0.26 runs on click (a dependency); typer >= 0.26 runs on a copy of click it keeps
    privately (``typer._click``, which is no API), so ``import click`` would name the wrong
    classes there. ``typer.BadParameter`` is public in every typer and a ``ClickException``
    subclass in both worlds: take the base from its MRO.
    """
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "ClickException":
            return cls
    return Exception  # pragma: no cover  (no typer so far lacks it)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns (and exits with) the exit code."""
    if argv is None:
        _console(sys.argv[1:])
    return _main(argv)


def _main(args: list[str]) -> int:
    click_exception = _click_exception()

    _state.argv = ["gpumem", *args]
    try:
        with warnings_as_lines():  # a plugin's warning: one line, as every gpumem message
            rv = app(args=args, prog_name="gpumem", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0  # typer.Exit(n) inside a command returns n
    except typer.Exit as e:
        code = e.exit_code
    except click_exception as exc:
        err = cast(_ClickException, exc)  # the class is click's ClickException
        if type(exc).__name__ == "NoArgsIsHelpError":  # click >= 8.2 (and typer's copy): help
            print(err.format_message(), file=sys.stderr)
        else:
            msg = err.format_message().replace("\n", " ")
            ctx = getattr(exc, "ctx", None)
            where = (f" {ctx.command_path.split(' ', 1)[1]}"
                     if ctx and " " in ctx.command_path else "")
            print(escape_controls(f"gpumem{where}: error: {msg}"), file=sys.stderr)
        code = err.exit_code
    except typer.Abort:
        print("gpumem: aborted", file=sys.stderr)
        code = 130
    except (KeyboardInterrupt, _CtrlC):
        print("gpumem: interrupted", file=sys.stderr)
        code = 130
    except GpumemError as e:
        # messages quote file names, attributes and plugin errors: print control characters
        # as visible text (newlines as spaces, to keep one line)
        print(escape_controls(f"gpumem: error: {e}".replace("\n", " ")), file=sys.stderr)
        code = e.exit_code
    return code


def _console(args: list[str]) -> NoReturn:
    """The command as a process: run it, then end the process with its code, whatever
    threads plugins left behind (:func:`_exit`)."""
    try:
        code = _main(args)
    except SystemExit as e:  # a command's own sys.exit
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:  # outside a command (while its arguments were parsed)
        print("gpumem: interrupted", file=sys.stderr)
        code = 130
    except BaseException:  # noqa: BLE001 - a bug: its traceback, as Python would print it
        traceback.print_exc()
        code = 1
    _exit(code)


#: seconds a thread no plugin is known to have started gets to end after the command
GRACE_S = 3.0


def _exit(code: int) -> NoReturn:
    """``sys.exit(code)``, unless a non-daemon thread other than this one is still alive:
    the interpreter would wait for it at exit, for ever if a plugin's thread never ends.
    A thread a plugin's import or hook started (:func:`gpumem.plugin.registry.lingering_threads`)
    is not waited for: one warning names the plugin, the ``atexit`` handlers run, the
    output is flushed and ``os._exit(code)`` ends the process (the thread with it,
    unfinished). Any other thread gets :data:`GRACE_S` seconds of the normal shutdown (a
    library's idle pool ends there), then the same."""
    from gpumem.plugin.registry import lingering_threads

    exit_signals()
    left = lingering_threads()
    if any(owner for _t, owner in left):
        _hard_exit(code, left, "")
    if left:
        threading.Thread(target=_watchdog, args=(code,), name="gpumem-exit watchdog",
                         daemon=True).start()
    sys.exit(code)


def exit_signals() -> None:
    """From here on, Ctrl-C or SIGTERM ends the process at once with 130 or 143, the codes
    of an interrupted command: arriving while the interpreter shuts down (its atexit
    handlers, a thread it waits for), they ended it by the signal itself (rc -2 or -15) or
    with a traceback. The command's own code is lost then: it was interrupted."""
    import signal

    def end(signum: int, _frame: object) -> None:
        os._exit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, end)


def _watchdog(code: int) -> None:
    """The grace period of :func:`_exit`, on a daemon thread while the interpreter waits."""
    from gpumem.plugin.registry import lingering_threads

    time.sleep(GRACE_S)
    left = lingering_threads()
    if left:
        _hard_exit(code, left, f" {GRACE_S:g} s after the command was done", run_atexit=False)


def _hard_exit(code: int, left: list, when: str, run_atexit: bool = True) -> NoReturn:
    named = [f"'{t.name}' (plugin '{owner}')" if owner else
             f"'{t.name}' (started outside any plugin call gpumem made)" for t, owner in left]
    many = len(named) > 1
    print(escape_controls(f"gpumem: warning: {'threads' if many else 'a thread'} still "
                          f"running{when}: {', '.join(named)}; gpumem exits without "
                          f"waiting for {'them' if many else 'it'}"), file=sys.stderr)
    try:
        if run_atexit:  # what a normal exit runs (logging, multiprocessing, temp files)
            run_atexit_handlers()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed pipe: nothing left to say
                pass
        os._exit(code)
