"""The typer application and its global options; each command module adds its command."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from gpumem import __version__
from gpumem.cli import _state


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
