"""Exceptions that carry a user-facing message and an exit code.

The CLI turns any ``GpumemError`` into one line on stderr and its ``exit_code``; everything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class GpumemError(Exception):
    """A failure the user can act on; ``str(err)`` is the one-line message."""

    exit_code = 1


class UsageError(GpumemError):
    """Bad arguments: unknown architecture, experiment or device, bad option values."""

    exit_code = 2


class OutputError(UsageError):
    """An output file cannot be written where the user asked (names the path and why)."""


class PluginError(GpumemError):
    """A plugin failed to load or conflicts with another (raised only in strict mode)."""


class GpumemWarning(UserWarning):
    """Something gpumem went on past but the user should know; the ``gpumem`` command shows
    each as one line, ``gpumem: warning: ...`` (its subclasses say what kind)."""


class SimConfigWarning(GpumemWarning):
    """A simulator config leaves something to a default or a cycle it may not mean (a
    partitioned L2's home hash, an SM map shorter than the SMs); the run goes on with it."""


class PluginWarning(GpumemWarning):
    """A plugin failed to load, hung, or gave an answer gpumem left out; gpumem went on
    without it. Issued with :func:`warnings.warn`, so ``-W
    error::gpumem.contracts.errors.PluginWarning``
    (or ``ignore``) and pytest's warning capture apply; the ``gpumem`` command shows each as
    one line, ``gpumem: warning: ...``."""


class ResultsFileError(GpumemError):
    """A results file or run directory cannot be read: missing, truncated, corrupt."""


class DeviceUnavailable(GpumemError):
    """The requested device cannot be opened (no GPU, no driver, no CuPy, no simulator)."""


class ProbeUnsupported(GpumemError):
    """The device has no implementation of a probe an experiment needs."""


class PointSkipped(Exception):
    """Raised by an experiment or device for one sweep point that cannot run here.

    The point is recorded as skipped with ``reason``; the rest of the sweep continues.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Interrupted(GpumemError):
    """Ctrl-C during a run; the message says what was kept and how to resume."""

    exit_code = 130
