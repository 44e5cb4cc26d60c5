"""``gpumem run``: run experiments for an architecture on a GPU or a simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from typer.core import TyperCommand

from gpumem.cli import _state
from gpumem.cli._app import app
from gpumem.cli._common import (
    STATUS_STYLE,
    CheckRow,
    FirstFit,
    FitTable,
    check_rows,
    escape_controls,
    fmt_band,
    fmt_expected,
    fmt_finding,
    fmt_interval,
    name_column,
    plugins,
    print_check,
    safe_text,
    stderr,
    stdout,
)
from gpumem.cli.show import finding_columns
from gpumem.contracts.findings import kind_of
from gpumem.run.request import Outcome, Reporter, RunReport, RunRequest
from gpumem.run.runner import run


class RichReporter(Reporter):
    """Progress bars on stderr; silent when stderr is not a terminal (logs, pipes, CI)."""

    def __init__(self) -> None:
        self.console = stderr()
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=self.console, disable=not self.console.is_terminal,
            transient=False)
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def notice(self, message: str) -> None:
        self.console.print(f"gpumem: {escape_controls(message)}", highlight=False,
                           markup=False)

    def experiment_started(self, name: str, total: int) -> None:
        # total 0: the experiment drives its own search (Experiment.sweep) and cannot say
        # how many points it will take: an indeterminate bar and a running count ("329/?"),
        # never a made-up total ("329/0")
        self.tasks[name] = self.progress.add_task(name, total=total or None)

    def points_added(self, name: str, count: int) -> None:
        t = self.tasks[name]
        total = self.progress.tasks[t].total
        if total is not None:  # an open-ended search stays open-ended
            self.progress.update(t, total=total + count)

    def point_done(self, name: str) -> None:
        self.progress.advance(self.tasks[name])

    def experiment_finished(self, outcome: Outcome) -> None:
        t = self.tasks.get(outcome.experiment)
        if t is not None and self.progress.tasks[t].total is None:
            done = self.progress.tasks[t].completed  # the search ended: a full bar
            self.progress.update(t, total=done or 1, completed=done or 1)
        if outcome.status in ("failed", "skipped"):
            self.console.print(escape_controls(f"gpumem: {outcome.experiment}: "
                                               f"{outcome.status}: {outcome.error}"),
                               highlight=False, markup=False)


def summary_table(report: RunReport) -> FirstFit:
    """The findings of a run, one row each: value, its interval, the band it must lie in to
    pass, the expected value and the status. Names stay whole at any width: where the
    table does not fit, the expected, units and interval columns are left out, in that
    order, and then the experiments become rows of their own above their findings instead of
    a column (80 columns: finding, value, band and status stay; values wrap)."""
    title = safe_text(f"gpumem {report.arch} on {report.device.name}")
    wide = Table(title=title)
    name_column(wide, "experiment")
    grouped = Table(title=title)
    for t in (wide, grouped):
        finding_columns(t)
    for o in report.outcomes:
        if not o.findings:  # the error is prose: it goes in the wrapping value column
            wide.add_row(safe_text(o.experiment), safe_text(f"({o.status})"),
                         safe_text(o.error), "", "", "", "", "", "")
            grouped.add_row(safe_text(o.experiment, "bold"), safe_text(o.error), "", "", "",
                            "", safe_text(f"({o.status})"), "")
            continue
        grouped.add_row(safe_text(o.experiment, "bold"), "", "", "", "", "", "", "")
        for f in o.findings:
            cells = [safe_text(fmt_finding(f.as_dict())),
                     safe_text(fmt_interval(f.interval, kind_of(f))),
                     safe_text(f.units), safe_text(fmt_band(f.expected_band, f.expected)),
                     safe_text(fmt_expected(f.expected, f.expected_bound)),
                     safe_text(f.status, STATUS_STYLE.get(f.status, "")),
                     safe_text(f.reason)]
            wide.add_row(safe_text(o.experiment), safe_text(f.name), *cells)
            grouped.add_row(safe_text(f"  {f.name}"), *cells)
    drop = ["expected", "units", "interval", "reason"]
    return FirstFit(FitTable(wide, drop=drop), FitTable(grouped, drop=drop))


def tally(findings: list) -> str:
    """One line: how many findings of each status, the n/a ones by reason, e.g. ``99
    findings: 58 pass, 41 n/a (35 no expected value, 6 not simulated)``."""
    from collections import Counter

    by = Counter(f.status for f in findings)
    order = ["pass", "fail", "undecided", "contended", "unresolved", "not modelled", "n/a"]
    parts = []
    for st in sorted(by, key=lambda x: (order.index(x) if x in order else len(order), x)):
        part = f"{by[st]} {st}"
        if st == "n/a":
            why = Counter(f.reason.split(":")[0] or "no reason given" for f in findings
                          if f.status == "n/a")
            part += " (" + ", ".join(f"{n} {w}" for w, n in why.most_common()) + ")"
        parts.append(part)
    return f"{len(findings)} findings: " + ", ".join(parts)


def available_help() -> str:
    """The help epilog of ``run``: architectures and experiments of the plugins loaded now
    (a plugin that fails to load is left out; if none load, the help says so)."""
    from rich.markup import escape

    try:
        ps = plugins()
        archs = sorted(ps.architectures())
        exps = ps.experiments()
    except Exception as e:  # noqa: BLE001 - help must print whatever a plugin does
        return escape(escape_controls(f"(Architectures and experiments could not be listed: "
                                      f"{type(e).__name__}: {e}; see gpumem list-plugins.)"))

    def where(cls: type) -> str:
        try:
            on = [a for a in archs if cls().applies_to(a)]
        except Exception:  # noqa: BLE001
            return ""
        return "" if on == archs else f" ({', '.join(on) or 'none loaded'})"

    names = ", ".join(f"{n}{where(exps[n])}" for n in sorted(exps))
    return escape(escape_controls(
        f"Architectures: {', '.join(archs) or '(none loaded)'}; sm_XY for any GPU of compute "
        f"capability X.Y.")) + "\n\n" + escape(
        escape_controls(f"Experiments: {names or '(none loaded)'}; 'all' runs every one that "
                        f"applies to --arch."))


class _RunCommand(TyperCommand):
    """``run``'s help ends with the architectures and experiments available at call time."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.epilog = available_help()
        return super().format_help(ctx, formatter)


@app.command("run", cls=_RunCommand)
def run_cmd(
    experiments: list[str] | None = typer.Argument(
        None, help="Experiments to run, or 'all' (the default)."),
    arch: str = typer.Option(
        "auto", "--arch", "-a",
        help="Architecture: a plugin's (e.g. hopper), sm_XY (the generic architecture of a GPU "
             "no plugin describes), or auto: the plugin that claims the device's compute "
             "capability, else the generic one (on a simulator: what --sim-config names)."),
    device: str = typer.Option("auto", "--device", "-d",
                               help="auto | cuda:N | sim | a simulator's name."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                       help="Run directory (default: gpumem-results/ARCH-"
                                            "DEVICE-TIMESTAMP)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Skip experiments the run directory holds complete."),
    quick: bool = typer.Option(False, "--quick", help="Reduced grids, for smoke tests."),
    workers: int = typer.Option(1, "--workers", "-j", min=1,
                                help="Worker processes for sweep points (simulators)."),
    sim_config: Path | None = typer.Option(None, "--sim-config",
                                              help="Simulator config file (TOML for sim)."),
    seed: int = typer.Option(0, "--seed", help="Seed for chains and simulated randomness."),
    devices: str | None = typer.Option(
        None, "--devices", help="all | 0,1,...: one process per GPU, one run directory."),
    executor: str = typer.Option("local", "--executor",
                                 help="local | dask: where sweep points run."),
    scheduler: str | None = typer.Option(
        None, "--scheduler", help="Dask scheduler address (tcp://HOST:8786) or scheduler "
                                  "file, for --executor dask."),
    check: bool = typer.Option(False, "--check",
                               help="Exit 1 when any finding fails its expected band (neither "
                                    "value nor interval in it) or was measured while another "
                                    "process used the GPU; the failing rows are printed last, "
                                    "undecided ones counted (for a GPU fleet's CI)."),
    exclusive: float | None = typer.Option(
        None, "--exclusive", metavar="SECONDS",
        help="Wait up to SECONDS for no other process to be active on the GPU, then refuse "
             "(exit 75) if one still is; nothing is measured beside another job."),
    estimate: bool = typer.Option(False, "--estimate",
                                  help="On a slow simulator: say how long the run would take "
                                       "on --workers workers, and run nothing."),
) -> None:
    """Run EXPERIMENTS (default: all) on a GPU, or on the built-in simulator (any GPU: no
    plugin needed; --arch picks whose expected values judge the findings)."""
    check_seed(seed)
    if exclusive is not None:  # refused before any child process of --devices starts
        from gpumem.contracts.contention import check_wait

        check_wait(exclusive)
    req = RunRequest(arch=arch, experiments=experiments or ["all"], device=device, out=out,
                     resume=resume, quick=quick, workers=workers, sim_config=sim_config,
                     seed=seed, argv=_state.argv, executor=executor, scheduler=scheduler,
                     exclusive=exclusive)
    ps = plugins()
    if estimate:
        from gpumem.run.runner import estimate_run

        estimate_run(req, plugins=ps, reporter=RichReporter())
        return
    if devices is not None:
        _run_fleet(req, devices, ps, check)
        return
    reporter = RichReporter()
    with reporter:
        try:
            report = run(req, plugins=ps, reporter=reporter)
        except KeyboardInterrupt:
            reporter.progress.stop()
            raise
    con = stdout()
    con.print(summary_table(report))
    con.print(escape_controls(tally([f for o in report.outcomes for f in o.findings])),
              highlight=False, markup=False)
    if resume:
        con.print(resumed_line(report), highlight=False, markup=False)
    kept = sum(1 for o in report.outcomes if o.file)
    con.print(f"results: {report.run_dir}  ({kept} file(s); "
              f"gpumem show {report.run_dir})", highlight=False, markup=False)
    failing = False
    if check:  # fail and contended exit 1; undecided is counted (the data cannot say)
        failing = print_check(check_rows(finding_check_row(report.device.name, o.experiment, f)
                                         for o in report.outcomes for f in o.findings))
    if report.failed:
        names = ", ".join(o.experiment for o in report.failed)
        stderr().print(f"gpumem: {len(report.failed)} experiment(s) failed: {names}",
                       highlight=False, markup=False)
        raise typer.Exit(1)
    if check and failing:
        raise typer.Exit(1)


def finding_check_row(run_label: str, experiment: str, f: Any) -> CheckRow:
    """A finding of this run as a row of ``--check`` (:func:`print_check`)."""
    return CheckRow(run_label, experiment, f.name, f.value, f.expected, f.expected_source,
                    f.status, f.expected_band, f.interval, f.note)


#: What --seed may be: a 64-bit integer, signed or not (it is stored in each results file
#: as a netCDF attribute, whose integers are at most 64 bits).
SEED_MIN, SEED_MAX = -(2**63), 2**64 - 1


def check_seed(seed: int) -> None:
    """Refuse a seed no results file can record, before anything is measured (it would
    otherwise fail every experiment at write time)."""
    if not SEED_MIN <= seed <= SEED_MAX:
        from gpumem.contracts.errors import UsageError

        text = str(seed)
        shown = text if len(text) <= 30 else f"{text[:24]}... ({len(text)} digits)"
        raise UsageError(f"--seed {shown}: must fit in 64 bits (-2**63 to 2**64-1)")


def resumed_line(report: RunReport) -> str:
    """After ``--resume``: the experiments kept from before (not measured again)."""
    kept = [o.experiment for o in report.outcomes if o.status == "resumed"]
    if not kept:
        return "resumed: no complete experiment to keep; every one ran"
    return escape_controls(f"resumed: kept {len(kept)} complete experiment(s) from before: "
                           f"{', '.join(kept)}")


def _run_fleet(req: RunRequest, devices: str, ps, check: bool = False) -> None:
    from gpumem.run.fleet import run_fleet

    if req.executor != "local":
        from gpumem.contracts.errors import UsageError

        raise UsageError("--devices runs one local process per GPU; --executor dask farms "
                         "out a simulator's points")
    report = run_fleet(req, devices, plugins=ps)
    t = Table(title=f"gpumem {report.arch} on {len(report.runs)} {report.backend} device(s)")
    for col in ("device", "status", "wall s", "log", "last message"):
        t.add_column(col)
    for r in report.runs:
        style = "green" if r.status == "complete" else "red"
        t.add_row(safe_text(r.device), safe_text(r.status, style), f"{r.wall_s:.1f}",
                  safe_text(r.log), safe_text(r.last_line))
    con = stdout()
    con.print(t)
    con.print(f"results: {report.run_dir}  (gpumem compare {report.run_dir})",
              highlight=False, markup=False)
    failing = False
    if check:  # every device's findings against the expected values
        from gpumem.cli.compare import failing_rows
        from gpumem.interop.compare import compare

        failing = print_check(failing_rows(compare(ps, [report.run_dir], True)))
    if report.failed:
        names = ", ".join(f"{r.device} ({r.status})" for r in report.failed)
        stderr().print(escape_controls(f"gpumem: {len(report.failed)} of {len(report.runs)} "
                                       f"device(s) did not complete: {names}"),
                       highlight=False, markup=False)
        raise typer.Exit(1)
    if failing:
        raise typer.Exit(1)
