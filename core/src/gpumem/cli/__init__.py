"""The ``gpumem`` command: one module per command, each a thin wrapper over plain functions.

:func:`main` is the console-script entry point. It runs the typer app without click's
"standalone" error handling so that every error is one line on stderr: usage errors exit 2,
other gpumem errors 1, Ctrl-C 130 (with "interrupted" said, in every command). Messages are
printed with control characters escaped: they quote file and plugin text.
"""

from __future__ import annotations

import sys

import typer

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
from gpumem.errors import GpumemError


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
    click_exception = _click_exception()

    args = sys.argv[1:] if argv is None else argv
    _state.argv = ["gpumem", *args]
    try:
        rv = app(args=args, prog_name="gpumem", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0  # typer.Exit(n) inside a command returns n
    except typer.Exit as e:
        code = e.exit_code
    except click_exception as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # click >= 8.2 (and typer's copy): help
            print(e.format_message(), file=sys.stderr)
        else:
            msg = e.format_message().replace("\n", " ")
            ctx = getattr(e, "ctx", None)
            where = (f" {ctx.command_path.split(' ', 1)[1]}"
                     if ctx and " " in ctx.command_path else "")
            print(escape_controls(f"gpumem{where}: error: {msg}"), file=sys.stderr)
        code = e.exit_code
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
    if argv is None:
        sys.exit(code)
    return code
