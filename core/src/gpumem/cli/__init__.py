"""The ``gpumem`` command: one module per command, each a thin wrapper over plain functions.

:func:`main` is the console-script entry point. It runs the typer app without click's
"standalone" error handling so that every error is one line on stderr: usage errors exit 2,
other gpumem errors 1, Ctrl-C 130 (with "interrupted" said, in every command). Messages are
printed with control characters escaped: they quote file and plugin text.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from gpumem import __version__
from gpumem.cli import _state
from gpumem.cli._common import escape_controls
from gpumem.errors import GpumemError


class _CtrlC(Exception):
    """Ctrl-C inside a command, carried past typer (which would turn it into a silent exit
    130) to :func:`main`, which says "interrupted"."""


class _Group(TyperGroup):
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _CtrlC() from None


app = typer.Typer(
    name="gpumem",
    cls=_Group,
    help="Dissect GPU memory hierarchies with microbenchmarks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpumem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    strict: bool = typer.Option(False, "--strict",
                                help="Fail when any plugin fails to load (also "
                                     "GPUMEM_STRICT_PLUGINS=1)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """gpumem: caches, TLBs, latency, bandwidth and shared memory of a GPU, measured or
    simulated, kept as labeled netCDF datasets."""
    _state.strict = strict


from gpumem.cli import analyze as _analyze  # noqa: E402,F401  (registers commands)
from gpumem.cli import compare as _compare  # noqa: E402,F401
from gpumem.cli import convert as _convert  # noqa: E402,F401
from gpumem.cli import devices as _devices  # noqa: E402,F401
from gpumem.cli import plugins as _plugins  # noqa: E402,F401
from gpumem.cli import report as _report  # noqa: E402,F401
from gpumem.cli import run as _run  # noqa: E402,F401
from gpumem.cli import show as _show  # noqa: E402,F401


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
