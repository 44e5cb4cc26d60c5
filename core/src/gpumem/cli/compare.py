"""``gpumem compare``: findings of runs side by side, and against expected values.

Damaged entries (see :mod:`gpumem.results.verify`) are named on stderr, one line each, and
left out; the rows of what is intact are still printed, and the command exits 1.
Every string from a file is printed as text (:func:`safe_text`), never markup. A run kept
as its manifest alone is compared by naming its ``manifest.json``: the findings it recorded
(:mod:`gpumem.results.kept`), never re-analysed, with no device to look expected values up.

Two runs: the second's difference from the first, and one agreement line. Three or more
(``gpumem compare HW SIM1 SIM2``): each run after the first gets an ``error LABEL`` column,
its error against the first run side by side, and one agreement line each.

With ``--expected`` each run is judged by its own architecture's and device's expected
values. Where they all agree the expected, band and source columns show the one; where a
run's differs from the first run's, they show each run's, labelled (``kepler: 35; maxwell:
82``), and a note under the table says so. The band is what a value must lie in to pass; the
interval column, what each run's value is known to lie in (``undecided``: outside the band,
the interval reaching in). ``--check`` fails a run's finding by the run's own, and on a
finding measured while another process used the GPU (``contended``); undecided ones are
counted, and do not fail it.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from gpumem.cli._app import app
from gpumem.cli._common import (
    CHECK_FAILS,
    STATUS_STYLE,
    CheckRow,
    FitTable,
    check_damage,
    fmt_band,
    fmt_expected,
    fmt_finding,
    fmt_interval,
    fmt_value,
    name_column,
    plugins,
    print_check,
    print_json,
    require_paths,
    safe_text,
    stdout,
    text_column,
)
from gpumem.contracts.findings import Expected, band_of, plain_band, status_rank
from gpumem.interop.compare import compare, run_expectation


@app.command("compare")
def compare_cmd(
    targets: list[Path] = typer.Argument(..., help="Run directories, results files, or the "
                                                  "manifest.json of runs kept as their "
                                                  "manifest alone (findings as recorded)."),
    expected: bool = typer.Option(False, "--expected",
                                  help="Add the expected values, with status and source: "
                                       "each run's own (its architecture's and device's)."),
    json_: bool = typer.Option(False, "--json", help="Print JSON."),
    check: bool = typer.Option(False, "--check",
                               help="Exit 1 when any finding fails its expected band or was "
                                    "contended (implies --expected); the failing rows are "
                                    "printed last, undecided ones counted."),
    reanalyze: bool = typer.Option(False, "--reanalyze",
                                   help="Derive every run's findings afresh from its raw data "
                                        "with this gpumem's analyses (runs an older gpumem "
                                        "analysed, compared like with like)."),
) -> None:
    """Findings of one or more runs side by side (and beside the expected values). Entries
    whose file fails its manifest checksum are named on stderr and left out (exit 1)."""
    require_paths(targets)  # missing: a usage error, exit 2 (see require_paths)
    damage = check_damage(targets)
    expected = expected or check
    data = compare(plugins(), targets, expected, exclude=[d.path for d in damage],
                   reanalyze=reanalyze)
    if damage:
        data["damaged"] = [d.as_dict() for d in damage]
    rows = failing_rows(data) if check else []
    failing = [r for r in rows if r.status in CHECK_FAILS]
    if json_:
        if check:
            data["check"] = {
                "failing": [{"run": r.run, "experiment": r.experiment, "finding": r.finding,
                             "status": r.status,
                             **({"reason": r.reason} if r.status == "contended" else {})}
                            for r in failing],
                "undecided": [{"run": r.run, "experiment": r.experiment, "finding": r.finding}
                              for r in rows if r.status == "undecided"]}
        print_json(data)
    else:
        _print(data, expected)
        if check:
            print_check(rows)
    if damage or failing:
        raise typer.Exit(1)


def row_band(e: dict | None) -> object:
    """The band of an expectation as :func:`gpumem.interop.compare.run_expectation` gives it: its
    ``band``, else (data of an older gpumem) computed from its value and tolerance."""
    if not e:
        return None
    if "band" in e:
        return e["band"]
    tol = e.get("tolerance", {})
    try:
        exp = Expected("", e["value"], "", rel_tol=float(tol.get("rel", 0.0)),
                       abs_tol=float(tol.get("abs", 0.0)), bound=tol.get("bound", ""))
    except (KeyError, TypeError, ValueError):
        return None
    return plain_band(band_of(exp))


def failing_rows(data: dict) -> list[CheckRow]:
    """The rows ``--check`` reports (:class:`CheckRow`): every run's finding that fails its
    band, was contended or is undecided, with the expected value, band and source each run
    was judged by (its own), its interval, and (contended) the note saying what was seen."""
    out = []
    for row in data["rows"]:
        for label, status in row["status"].items():
            if status not in (*CHECK_FAILS, "undecided"):
                continue
            e = run_expectation(row, label) or {}
            out.append(CheckRow(label, row["experiment"], row["finding"],
                                row["values"].get(label), e.get("value"), e.get("source", ""),
                                status, row_band(e), row.get("intervals", {}).get(label),
                                row.get("notes", {}).get(label, "")))
    return out


def expected_cells(row: dict, labels: list[str]) -> tuple[str, str]:
    """The expected and source cells of a row: the first run's (the one all share); where
    runs are judged by different values, each run's, labelled ('-' for none)."""
    per_run = row.get("expected_per_run")
    if per_run is None:
        return (fmt_expected(row.get("expected"), row.get("tolerance", {}).get("bound", "")),
                row.get("expected_source", ""))
    own = {lb: per_run[lb] for lb in labels if lb in per_run}
    values = "; ".join(f"{lb}: " + ("-" if e is None else
                                     fmt_expected(e["value"], e["tolerance"].get("bound", "")))
                       for lb, e in own.items())
    sources = list(dict.fromkeys(e["source"] for e in own.values() if e is not None))
    source = sources[0] if len(sources) == 1 else "; ".join(
        f"{lb}: {e['source']}" for lb, e in own.items() if e is not None)
    return values, source


def band_cell(row: dict, labels: list[str]) -> str:
    """The band of a row: the first run's (the one all share); where runs are judged by
    different values, each run's, labelled ('-' for none)."""
    per_run = row.get("expected_per_run")
    if per_run is None:
        if "expected" not in row:
            return "-"
        return fmt_band(row_band(run_expectation(row, labels[0])), row.get("expected"))
    return "; ".join(f"{lb}: " + ("-" if per_run[lb] is None else
                                  fmt_band(row_band(per_run[lb]), per_run[lb]["value"]))
                     for lb in labels if lb in per_run)


def interval_cell(row: dict, labels: list[str]) -> str:
    """Each run's interval (where its analysis gives one); labelled when there are several
    runs, '-' where none has one."""
    spans = row.get("intervals", {})
    kind = str(row.get("kind", ""))
    if len(labels) == 1:
        return fmt_interval(spans.get(labels[0]), kind)
    have = [lb for lb in labels if lb in spans]
    return "; ".join(f"{lb}: {fmt_interval(spans[lb])}" for lb in have) or \
        fmt_interval(None, kind)


def _print(data: dict, expected: bool) -> None:
    labels = [r["label"] for r in data["runs"]]
    t = Table(title=safe_text("gpumem compare: " + " | ".join(
        f"{r['label']} ({r['device']})" for r in data["runs"])))
    name_column(t, "experiment")
    name_column(t, "finding")
    for lb in labels:
        text_column(t, safe_text(lb))
    # two runs: the second's signed difference; more: each compared run's error against the
    # first, side by side (the GPU, then its simulations)
    side_by_side = len(labels) > 2
    error_headers = [f"error {lb}" for lb in labels[1:]] if side_by_side else []
    for header in error_headers:
        text_column(t, safe_text(header))
    if len(labels) == 2:
        text_column(t, "difference")
    text_column(t, "units")
    if expected:
        text_column(t, "expected")
        text_column(t, "band")
        text_column(t, "interval")
        name_column(t, "status")
        text_column(t, "source")
    for row in data["rows"]:
        cells: list = [safe_text(row["experiment"]), safe_text(row["finding"])]
        cands = row.get("candidates", {})
        cells += [safe_text(fmt_finding({"value": row["values"].get(lb),
                                         "candidates": cands[lb]})
                            if lb in cands else fmt_value(row["values"].get(lb)))
                  for lb in labels]
        if side_by_side:
            cells += [error_cell(row, lb) for lb in labels[1:]]
        elif len(labels) == 2:
            rel = row.get("relative_difference")
            cells.append("-" if rel is None else f"{rel:+.1%}")
        cells.append(safe_text(row["units"]))
        if expected:
            statuses = [row["status"].get(lb) for lb in labels if row["status"].get(lb)]
            # the worst (a fail before a contended one, an undecided before a pass)
            order = ("fail", "contended", "unresolved", "undecided", "warn", "pass")
            worst = max(statuses, default="n/a",
                        key=lambda s: (status_rank(s),
                                       -order.index(s) if s in order else -len(order)))
            style = STATUS_STYLE.get(worst, "dim")
            value, source = expected_cells(row, labels)
            reasons = list(dict.fromkeys(r for lb in labels
                                         if (r := row.get("reasons", {}).get(lb))))
            if reasons and worst != "pass":  # why a run's status is not pass
                source = "; ".join(([source] if source else []) + reasons)
            cells += [safe_text(value), safe_text(band_cell(row, labels)),
                      safe_text(interval_cell(row, labels)), safe_text(worst, style),
                      safe_text(source)]
        t.add_row(*cells)
    # at 80 columns the names stay whole, and finding, value, band and status stay: source,
    # then units, difference, expected, interval and experiment are left out
    stdout().print(FitTable(t, drop=["source", "units", "difference", "expected", "interval",
                                     "experiment"]))
    for r in data["runs"]:
        if expected and r.get("expected_values") == 0:
            stdout().print(safe_text(f"{r['label']}: no expected values for architecture "
                                     f"'{r['arch'] or '?'}' on {r['device'] or '?'}"))
    if expected and any("expected_per_run" in row for row in data["rows"]):
        stdout().print(safe_text(
            "each run is judged by its own architecture's and device's expected values; "
            "where they differ, the expected column gives each run's (--json: "
            "expected_per_run)"))
    for summary in data.get("agreements") or ([data["agreement"]] if data.get("agreement")
                                              else []):
        stdout().print(safe_text(agreement_line(summary)))


def error_cell(row: dict, label: str) -> str:
    """A compared run's error against the first run: the relative error of a measured
    finding (marked '*' beyond the tolerance), 'equal' or 'differs' for a structural one, '-'
    where there is none (a finding one of the two lacks, or values not comparable)."""
    if label not in row.get("agrees_per_run", {}):
        return "-"
    agrees = row["agrees_per_run"][label]
    if row.get("kind") == "structural":
        return "equal" if agrees else "differs"
    err = row.get("errors", {}).get(label)
    if err is None:
        return "-"
    if agrees is None:
        return f"{err:.1%} ?"  # inside the first run's own, wider interval
    return f"{err:.1%}" + ("" if agrees else " *")


def agreement_line(s: dict) -> str:
    """One line: how far the second run is from the first, finding by finding."""
    only, undecided = len(s["in_one_run_only"]), len(s.get("undecided", ()))
    return (f"{s['compared']} against {s['reference']}: {s['measured_within']} of "
            f"{s['measured']} measured findings within {s['tolerance']:.0%}, "
            f"{s['structural_equal']} of {s['structural']} structural findings equal"
            + (f"; {undecided} undecided ('?': inside {s['reference']}'s own 95 % interval, "
               f"wider than {s['tolerance']:.0%})" if undecided else "")
            + (f"; {only} finding(s) in one run only" if only else "")
            + (f"; {unresolved} unresolved in {s['reference']} (no value to reach)"
               if (unresolved := len(s.get("unresolved", ()))) else ""))
