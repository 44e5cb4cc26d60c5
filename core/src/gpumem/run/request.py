"""The run's types: what the user asked for, what every experiment of one run shares, how
each ended, who hears of it, and the two ways a run stops under an experiment.

:class:`RunRequest` is the CLI's options, parsed. :class:`RunSetup` is the one object the
run's stages pass along (:mod:`gpumem.run.experiment` takes it and an experiment class,
:mod:`gpumem.run.schedule` runs the classes over it): what the plugins expect, the device, the
store, where points run, who reports progress. It is frozen: running experiments at once
gives each thread the same setup with a thread-safe store and reporter put in
(:func:`dataclasses.replace`), never a setup changed under another thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpumem.contracts.device import Device, DeviceInfo
from gpumem.contracts.experiment import RunContext
from gpumem.contracts.findings import Expected, Finding
from gpumem.contracts.generic import AUTO

if TYPE_CHECKING:
    from gpumem.plugin.registry import Plugins
    from gpumem.results.store import RunStore
    from gpumem.run.pace import Estimate
    from gpumem.run.points import Points

#: Where ``gpumem run`` puts a run directory when ``--out`` names none.
DEFAULT_RESULTS_ROOT = Path("gpumem-results")


@dataclass
class RunRequest:
    """What the user asked for (the CLI's options, parsed)."""

    arch: str = AUTO
    experiments: Sequence[str] = ("all",)
    device: str = "auto"
    out: Path | None = None
    resume: bool = False
    quick: bool = False
    workers: int = 1
    sim_config: Path | None = None
    seed: int = 0
    argv: Sequence[str] = ()
    executor: str = "local"          # "local" (this process, or --workers) or "dask"
    scheduler: str | None = None     # the Dask scheduler's address, for executor "dask"
    exclusive: float | None = None   # seconds to wait for no other process on the GPU


@dataclass
class Outcome:
    """How one experiment ended: complete, failed, skipped, resumed or interrupted."""

    experiment: str
    status: str
    file: Path | None = None
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    wall_s: float = 0.0
    points: int = 0
    contention: str = ""   # what was seen of other work on the GPU (gpumem.contracts.contention)


@dataclass
class RunReport:
    """A run's outcomes in the order of its experiments, and what it said on the way."""

    run_dir: Path
    device: DeviceInfo
    arch: str
    outcomes: list[Outcome] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("failed", "interrupted")]


class Reporter:
    """Progress callbacks; the CLI supplies a rich display, tests and libraries this no-op."""

    def notice(self, message: str) -> None: ...
    def experiment_started(self, name: str, total: int) -> None: ...
    def points_added(self, name: str, count: int) -> None: ...
    def point_done(self, name: str) -> None: ...
    def experiment_finished(self, outcome: Outcome) -> None: ...


@dataclass(frozen=True)
class RunSetup:
    """What every experiment of one run shares (see the module docstring)."""

    plugins: Plugins
    store: RunStore
    device: Device
    ctx: RunContext
    points: Points
    reporter: Reporter = field(default_factory=Reporter)
    expected: Sequence[Expected] = ()
    #: skip an experiment the run directory holds complete and intact (``--resume``)
    resume: bool = False
    #: the command line, kept in every file's provenance
    argv: Sequence[str] = ()
    #: on a slow device: each experiment's price, said before the run (:mod:`gpumem.run.pace`)
    priced: Mapping[str, Estimate] = field(default_factory=dict)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that the same clean-up runs (exit 143)."""


class RunStopped(KeyboardInterrupt):
    """Raised in an experiment's thread when the run stops under it for another reason than
    a signal (a results file that cannot be written): it ends as interrupted, saying why."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why
