"""The report's HTML: one self-contained page, built with ``html.escape`` and ``string.Template``.

The page needs nothing from the network and no JavaScript: styles are inline, figures are
PNG files beside it (each linked to its SVG twin) referenced by relative paths, so the folder
can be moved, archived or served as it is. One tiny inline script only *records* on the
``<body>`` how many images loaded (``data-images-loaded`` / ``data-images-total``), which a
headless browser can read back to check the page; without it the page reads the same.
It reads top-down: a one-screen summary (devices, the findings' status counts against
the expected values, the headline numbers, each linked to its finding's row), then one section
per experiment with its figures directly over that experiment's own findings table, the
findings of experiments without a figure, and the devices and provenance last. Experiments
are listed in :func:`page_order`; the page names none itself.
The ``<meta name="generator" content="gpumem ...">`` tag is how :mod:`gpumem.report` knows an
older page as its own (one written before the manifest); keep it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from string import Template
from typing import Any

from gpumem.contracts.findings import Finding
from gpumem.contracts.series import Series
from gpumem.report.provenance import device_rows, experiment_rows, in_page_order, run_rows

LIST_LIMIT = 16  # list values longer than this are cut in the table (the files hold them all)


@dataclass
class FigureDoc:
    """One drawn figure: its files (relative to the page) and a caption."""

    name: str
    png: str
    svg: str
    caption: str


@dataclass
class SectionDoc:
    """A section of the page: figures, and one-line notes on what is missing."""

    key: str
    title: str
    intro: str
    figures: list[FigureDoc] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    experiments: tuple[str, ...] = ()  # whose findings the section lists under its figures


_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gpumem $version">
<title>$title</title>
<style>
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; margin: 0 auto;
       max-width: 1280px; padding: 0 1.5em 3em; color: #222; line-height: 1.4; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em;
  margin-top: 1.8em; } h3 { margin-bottom: 0.3em; }
nav { background: #f6f6f6; padding: 0.5em 1em; border-radius: 4px; font-size: 0.92em; }
nav a { margin-right: 1.1em; white-space: nowrap; display: inline-block; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px;
          vertical-align: -0.1em; margin-right: 0.35em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0 1em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.value { text-align: right; font-variant-numeric: tabular-nums; max-width: 24em;
           overflow-wrap: normal; word-break: keep-all; }
.kv th { width: 13em; font-weight: normal; color: #555; background: #fafafa; }
.cards { display: flex; flex-wrap: wrap; gap: 1.5em; }
.cards > div { flex: 1 1 30em; }
.status { font-weight: bold; text-align: center; }
.status-pass { background: #d9f2d9; color: #17641a; }
.status-undecided { background: #fff1c2; color: #7a5600; }
.status-warn { background: #fff1c2; color: #7a5600; }
.status-fail { background: #f9d0d0; color: #8f1313; }
.status-contended { background: #f4c7e0; color: #7a0f4a; }
.status-na { color: #888; }
.status-unresolved { background: #ecdff5; color: #5b2a7a; }
.summary span { margin-right: 1em; padding: 0.1em 0.5em; border-radius: 3px; }
.counts span { display: inline-block; margin: 0.1em 0.4em 0.1em 0; padding: 0.05em 0.5em;
               border-radius: 3px; white-space: nowrap; }
table.headline td, table.headline th { padding: 0.25em 0.7em; }
table.headline td.value { text-align: right; white-space: nowrap; }
table.headline th[scope="row"] { font-weight: normal; color: #444; background: #fafafa; }
table.findings caption { text-align: left; font-weight: bold; padding: 0.2em 0; }
figure { margin: 1em 0 1.6em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.88em; color: #444; margin-top: 0.3em; }
.note { color: #8a5a00; background: #fff8e5; border-left: 3px solid #e0b040;
        padding: 0.25em 0.7em; margin: 0.4em 0; font-size: 0.9em; }
.small { font-size: 0.8em; color: #666; }
td.method { color: #555; font-size: 0.92em; min-width: 18em; max-width: 34em; }
td.source { min-width: 10em; max-width: 24em; }
</style>
</head>
<body>
<h1>$title</h1>
<p class="small">Generated by gpumem $version at $generated from $sources.
Figures are PNG files beside this page; each links to its SVG twin.</p>
<p>$legend</p>
<nav>$nav</nav>
$body
<script>
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
  }
  document.body.setAttribute("data-images-loaded", String(ok));
  document.body.setAttribute("data-images-total", String(imgs.length));
});
</script>
</body>
</html>
""")


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------


def _num(v: float) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v)}"
    return f"{v:.6g}"


def _size_hint(v: Any, units: str) -> str:
    if units != "byte" or not isinstance(v, (int, float)) or isinstance(v, bool) or v < 1024:
        return ""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale:
            return f" ({v / scale:.4g} {unit})"
    return ""


def _expected_text(f: Any) -> str:
    """The expected cell: the value, or the limit it is ("at most 4,814.3 GB/s")."""
    text = format_value(f.expected, f.units)
    words = {"max": "at most ", "min": "at least "}.get(getattr(f, "expected_bound", ""), "")
    return words + text if f.expected is not None else text


def _band_text(f: Any) -> str:
    """The band cell: what the value must lie in to pass ("170-230", "<= 4,848" for a
    limit), as the command line shows it; '-' where nothing is expected or the file predates
    the band."""
    from gpumem.cells import fmt_band

    if f.expected is None:
        return "-"
    return fmt_band(getattr(f, "expected_band", None), f.expected)


def _interval_text(f: Any) -> str:
    from gpumem.cells import fmt_interval
    from gpumem.contracts.findings import kind_of

    return fmt_interval(f.interval, kind_of(f))


def format_value(v: Any, units: str = "") -> str:
    """A finding's value as the table shows it (long lists cut, sizes with a binary unit)."""
    if v is None:
        return "-"
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if isinstance(v, (list, tuple)):
        items = [format_value(x) for x in v[:LIST_LIMIT]]
        more = f", ... ({len(v)} values)" if len(v) > LIST_LIMIT else ""
        return "[" + ", ".join(items) + more + "]"
    if isinstance(v, (int, float)):
        return _num(v) + _size_hint(v, units)
    return str(v)


#: the class of each status's cell ("warn": files written before the band rule)
STATUS_CLASS = {"pass": "status-pass", "undecided": "status-undecided", "fail": "status-fail",
                "contended": "status-contended", "warn": "status-warn",
                "unresolved": "status-unresolved"}


def _status_cell(status: str) -> str:
    cls = STATUS_CLASS.get(status, "status-na")
    return f'<td class="status {cls}">{escape(status or "n/a")}</td>'


# ---------------------------------------------------------------------------------------------
# blocks
# ---------------------------------------------------------------------------------------------


def _kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _swatch(s: Series) -> str:
    return f'<span class="swatch" style="background:{escape(s.colour)}"></span>'


def provenance_section(series: Sequence[Series], order: Sequence[str] = ()) -> str:
    parts = ['<section id="provenance"><h2>Devices and provenance</h2>']
    for s in series:
        parts.append(f"<h3>{_swatch(s)}{escape(s.legend)}</h3>")
        parts.append('<div class="cards"><div>' + _kv_table(device_rows(s)) + "</div><div>"
                     + _kv_table(run_rows(s)) + "</div></div>")
        rows = experiment_rows(s, order)
        if rows:
            head = ("<tr><th>experiment</th><th>status</th><th>points</th><th>wall (s)</th>"
                    "<th>throttled points</th><th>note</th></tr>")
            body = "".join(
                f"<tr><td>{escape(r.experiment)}</td><td>{escape(r.status)}</td>"
                f'<td class="num">{escape(r.points)}</td><td class="num">{escape(r.wall_s)}</td>'
                f'<td class="num">{escape(r.throttled)}</td><td>{escape(r.note)}</td></tr>'
                for r in rows)
            parts.append(f'<table class="experiments">{head}{body}</table>')
    parts.append("</section>")
    return "\n".join(parts)


STATUSES = (("pass", "status-pass"), ("undecided", "status-undecided"),
            ("fail", "status-fail"), ("contended", "status-contended"),
            ("unresolved", "status-unresolved"), ("not modelled", "status-na"),
            ("n/a", "status-na"))
#: counted only where a finding has them (older files' ``warn``)
LEGACY_STATUSES = (("warn", "status-warn"),)

#: The headline numbers of the summary: (label, finding, companion finding shown in
#: brackets), by the finding names of docs/findings.md, whichever experiment reports them:
#: the first in page order that has the finding wins (l1d.size: the latency knee, before
#: cache_structure's).
HEADLINES: tuple[tuple[str, str, str], ...] = (
    ("L1 hit latency", "lat.l1", "lat.l1_ns"),
    ("L2 hit latency", "lat.l2", "lat.l2_ns"),
    ("L2 far-partition latency", "lat.l2_far", "lat.l2_far_ns"),
    ("DRAM latency", "lat.dram", "lat.dram_ns"),
    ("L1 size (latency knee)", "l1d.size", ""),
    ("L2 size", "l2.size", ""),
    ("DRAM read bandwidth", "bw.dram_read", "bw.dram_read_fraction"),
    ("shared-memory bandwidth", "bw.smem", ""),
    ("TLB page", "tlb.page", ""),
    ("L1 TLB entries", "tlb_l1.entries", ""),
    ("L2 TLB entries", "tlb_l2.entries", ""),
)


def page_order(sections: Sequence[SectionDoc]) -> tuple[str, ...]:
    """The experiments of the page's sections, in section order and within a section by
    rank (as :func:`gpumem.report.sections.page_sections` made them); every other
    experiment comes after these, sorted (:func:`~gpumem.report.provenance.in_page_order`)."""
    return tuple(dict.fromkeys(e for sec in sections for e in sec.experiments))


def _finding_rows(s: Series, experiments: Sequence[str] | None = None,
                  order: Sequence[str] = ()) -> list[tuple[str, Finding]]:
    """(experiment, finding) of ``s``: of ``experiments`` in that order, or (None) of every
    experiment of the series in page ``order``."""
    if experiments is None:
        exps = in_page_order(s.entries, order)
    else:
        exps = [e for e in experiments if e in s.entries]
    return [(e, f) for e in exps for f in s.findings(e)]


def _counts(rows: Sequence[tuple[str, Finding]]) -> str:
    counts: dict[str, int] = {}
    for _, f in rows:
        counts[f.status or "n/a"] = counts.get(f.status or "n/a", 0) + 1
    shown = [*STATUSES, *((st, cls) for st, cls in LEGACY_STATUSES if counts.get(st))]
    return " ".join(f'<span class="{cls}" data-status="{escape(st)}">{escape(st)}: '
                    f"{counts.get(st, 0)}</span>" for st, cls in shown)


def _anchor(s: Series, experiment: str, name: str) -> str:
    """The id of a finding's row (one name may be found by two experiments)."""
    return "finding-" + "".join(c if c.isalnum() or c in "-_." else "-"
                                for c in f"{s.label}-{experiment}-{name}")


def _value_text(f: Finding) -> str:
    value = format_value(f.value, f.units)
    if not f.resolved:
        value = "unresolved: " + " | ".join(format_value(c, f.units)
                                            for c in f.candidates or [])
    elif f.index and isinstance(f.value, list) and len(f.index[1]) == len(f.value):
        pairs = [f"{format_value(k)}: {format_value(v)}"
                 for k, v in zip(f.index[1][:LIST_LIMIT], f.value[:LIST_LIMIT], strict=True)]
        more = f", ... ({len(f.value)} values)" if len(f.value) > LIST_LIMIT else ""
        value = f"by {f.index[0]}: " + ", ".join(pairs) + more
    return value


_FINDINGS_HEAD = ("<tr><th>experiment</th><th>finding</th><th>value</th><th>interval</th>"
                  "<th>units</th><th>expected</th><th>band</th><th>status</th><th>source</th>"
                  "<th>confidence</th><th>method</th></tr>")


def findings_table(s: Series, experiments: Sequence[str] | None = None,
                   caption: bool = True) -> str:
    """The findings of ``s`` in ``experiments`` (all when None) as one table; '' if none."""
    rows = _finding_rows(s, experiments)
    if not rows:
        return ""
    body = []
    for exp, f in rows:
        method = f.method + (f" Note: {f.note}" if f.note else "")
        body.append(
            f'<tr id="{escape(_anchor(s, exp, f.name))}" data-finding="{escape(f.name)}">'
            f"<td>{escape(exp)}</td><td><code>{escape(f.name)}</code></td>"
            f'<td class="value">{escape(_value_text(f))}</td>'
            f'<td class="value">{escape(_interval_text(f))}</td><td>{escape(f.units)}</td>'
            f'<td class="value">{escape(_expected_text(f))}</td>'
            f'<td class="value">{escape(_band_text(f))}</td>'
            f'{_status_cell(f.status)}<td class="source">{escape(f.expected_source)}'
            + (f'<div class="reason">{escape(why)}</div>' if (why := _reason(f)) else "")
            + "</td>"
            f'<td class="num">{f.confidence:.2f}</td>'
            f'<td class="method">{escape(method)}</td></tr>')
    cap = (f'<caption>{_swatch(s)}{escape(s.legend)}: findings '
           f'<span class="counts">{_counts(rows)}</span></caption>') if caption else ""
    return (f'<table class="findings" data-series="{escape(s.label)}" '
            f'data-rows="{len(rows)}">{cap}{_FINDINGS_HEAD}' + "".join(body) + "</table>")


def _reason(f: Finding) -> str:
    """Why a finding's status is not pass: as its file stored it, else (a file written
    before reasons were) as its status and expected value say."""
    from gpumem.contracts.findings import reason_of

    if f.reason or f.status == "pass":
        return f.reason
    if f.status == "n/a" and f.expected is not None:
        return "not comparable with the expected value"
    return reason_of(f)


def _short_value(v: Any, units: str) -> str:
    """A value with its unit, sizes in binary units alone: '56.38 MiB', '34 cycles'."""
    if units == "byte" and isinstance(v, (int, float)) and not isinstance(v, bool):
        hint = _size_hint(v, units)
        return hint.strip(" ()") if hint else f"{format_value(v)} B"
    text = format_value(v, units)
    if units and units != "1" and not isinstance(v, (list, tuple)):
        text += f" {'cycles' if units == 'cycle' else units}"
    return text


def _headline_cell(s: Series, order: Sequence[str], name: str, extra: str) -> str:
    for exp in in_page_order(s.entries, order):
        f = s.finding(exp, name)
        if f is None:
            continue
        text = _short_value(f.value, f.units) if f.resolved else _value_text(f)
        if f.status in ("warn", "fail", "undecided") and f.expected is not None:
            text += f", expected {_short_value(f.expected, f.units)}"
        x = s.finding(exp, extra) if extra else None
        if x is not None and isinstance(x.value, (int, float)) and x.resolved:
            text += (f" ({x.value * 100:.0f} % of peak)" if x.units == "1" else
                     f" ({x.value:.4g} {x.units})")
        title = f"{exp}: {f.name}" + (f", expected {format_value(f.expected, f.units)}, "
                                      f"band {_band_text(f)}"
                                      if f.expected is not None else "")
        cls = STATUS_CLASS.get(f.status, "")
        return (f'<td class="value {cls}" title="{escape(title)}">'
                f'<a href="#{escape(_anchor(s, exp, f.name))}">{escape(text)}</a></td>')
    return '<td class="value status-na">-</td>'


def _device_line(s: Series) -> str:
    """The device in one line: name, SMs, SM clock, memory, measured or simulated."""
    rows = dict(device_rows(s))
    parts = [s.device_name] + [f"{rows[k]}{suffix}" for k, suffix in
                               (("SMs", " SMs"), ("SM clock", ""), ("memory", ""),
                                ("measured or simulated", "")) if rows.get(k)]
    return ", ".join(parts)


def summary_section(series: Sequence[Series], order: Sequence[str] = ()) -> str:
    """One screen: the devices, how the findings compare with the expected values, and the
    headline numbers; every number links to its row in its section's findings table."""
    parts = ['<section id="summary"><h2>Summary</h2>',
             '<p class="small">Status against the expected values of the architecture '
             "plugin: pass where the value lies in the expected band (the expected value "
             "plus or minus its tolerance; a limit's, open on one side), fail where neither "
             "the value nor its interval reaches the band, undecided between (the data "
             "cannot say); contended where another process used the GPU during the "
             "measurement; unresolved where the analysis could not decide; n/a where nothing "
             "is expected (warn: a file written before this rule). "
             "Headline cells are coloured by their status and link to their finding.</p>"]
    head = "<tr><th></th>" + "".join(
        f'<th scope="col">{_swatch(s)}{escape(s.legend)}</th>' for s in series) + "</tr>"
    rows = ['<tr><th scope="row">device</th>' + "".join(
        f"<td>{escape(_device_line(s))}</td>" for s in series) + "</tr>"]
    rows.append('<tr><th scope="row">findings by status</th>' + "".join(
        f'<td class="counts">{_counts(_finding_rows(s, order=order))}</td>' for s in series)
        + "</tr>")
    for label, name, extra in HEADLINES:
        if not any(s.finding(e, name) is not None for s in series for e in s.entries):
            continue
        rows.append(f'<tr><th scope="row">{escape(label)}</th>'
                    + "".join(_headline_cell(s, order, name, extra) for s in series) + "</tr>")
    flagged = []
    for s in series:
        bad = [(e, f) for e, f in _finding_rows(s, order=order)
               if f.status in ("fail", "contended", "undecided", "warn", "unresolved")]
        if bad:
            links = ", ".join(f'<a href="#{escape(_anchor(s, e, f.name))}"><code>'
                              f"{escape(f.name)}</code></a> ({escape(e)}: {escape(f.status)})"
                              for e, f in bad)
            flagged.append(f"<li>{_swatch(s)}{escape(s.legend)}: {links}</li>")
    parts.append(f'<table class="headline">{head}{"".join(rows)}</table>')
    if flagged:
        parts.append("<p>Findings off their expected value or undecided:</p><ul>"
                     + "".join(flagged) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _figure(fig: FigureDoc) -> str:
    return (f'<figure id="fig-{escape(fig.name)}"><a href="{escape(fig.svg)}">'
            f'<img src="{escape(fig.png)}" alt="{escape(fig.caption)}" loading="eager"></a>'
            f"<figcaption>{escape(fig.caption)} "
            f'(<a href="{escape(fig.svg)}">SVG</a>, <a href="{escape(fig.png)}">PNG</a>)'
            f"</figcaption></figure>")


def figure_section(sec: SectionDoc, series: Sequence[Series] = ()) -> str:
    """A section: its intro and notes, its figures, then the findings of its experiments
    (one table per series) directly under them."""
    parts = [f'<section id="{escape(sec.key)}"><h2>{escape(sec.title)}</h2>',
             f"<p>{escape(sec.intro)}</p>"]
    parts += [f'<p class="note">{escape(n)}</p>' for n in sec.notes]
    parts += [_figure(fig) for fig in sec.figures]
    if sec.experiments:
        parts += [tab for s in series if (tab := findings_table(s, sec.experiments))]
    parts.append("</section>")
    return "\n".join(parts)


def other_findings_section(series: Sequence[Series], shown: set[str],
                           order: Sequence[str] = ()) -> str:
    """Findings of experiments no section lists ('' when there are none): those without a
    presentation, and those of a run that no registered experiment knows now."""
    tables = []
    for s in series:
        rest = [e for e in in_page_order(s.entries, order) if e not in shown]
        if rest and (tab := findings_table(s, rest)):
            tables.append(tab)
    if not tables:
        return ""
    return ('<section id="other_findings"><h2>Other findings</h2>'
            "<p>Findings of experiments without a figure of their own.</p>\n"
            + "\n".join(tables) + "</section>")


def agreement_section(series: Sequence[Series], order: Sequence[str] = ()) -> str:
    """For two runs (a measured GPU and its simulation, say): each finding of the second
    against the first, its error and whether it agrees (measured within 5 %, structural
    equal), under the count of those that do ('' for any other number of runs)."""
    if len(series) != 2:
        return ""
    from gpumem.contracts.findings import kind_of
    from gpumem.interop.compare import AGREEMENT_TOL, agreement_summary

    first, second = series
    rows: list[dict[str, Any]] = []
    for exp in in_page_order(dict.fromkeys([*first.entries, *second.entries]), order):
        by_name: dict[str, dict[str, Any]] = {}
        for s in (first, second):
            for f in s.findings(exp):
                if not f.resolved:
                    continue
                row = by_name.setdefault(f.name, {"experiment": exp, "finding": f.name,
                                                  "kind": kind_of(f), "units": f.units,
                                                  "values": {}})
                row["values"][s.label] = f.value
        rows += by_name.values()
    if not rows:
        return ""
    summary = agreement_summary(rows, first.label, second.label)
    cells = []
    for row in rows:
        err = row.get("error")
        verdict = ("-" if "agrees" not in row else "undecided" if row["agrees"] is None
                   else "agrees" if row["agrees"] else "differs")
        cells.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in (
            row["experiment"], row["finding"],
            format_value(row["values"].get(first.label), row["units"]),
            format_value(row["values"].get(second.label), row["units"]),
            "-" if err is None else f"{err:+.1%}".replace("+", ""), verdict)) + "</tr>")
    text = (f"{escape(second.legend)} against {escape(first.legend)}: "
            f"{summary['measured_within']} of {summary['measured']} measured findings within "
            f"{AGREEMENT_TOL:.0%}, {summary['structural_equal']} of {summary['structural']} "
            f"structural findings equal; {len(summary['undecided'])} undecided (inside the "
            f"first run's own 95 % interval, wider than {AGREEMENT_TOL:.0%}); "
            f"{len(summary['in_one_run_only'])} in one run only; "
            f"{len(summary.get('unresolved', ()))} unresolved in the first run.")
    return ('<section id="agreement"><h2>Agreement of the two runs</h2>'
            f"<p>{text}</p>\n<table><tr><th>experiment</th><th>finding</th>"
            f"<th>{escape(first.label)}</th><th>{escape(second.label)}</th><th>error</th>"
            "<th></th></tr>\n" + "\n".join(cells) + "</table></section>")


def render(series: Sequence[Series], sections: Sequence[SectionDoc], version: str,
           generated: str) -> str:
    """The whole page as a string: the summary first, then each section with its figures
    over its findings, the findings of experiments without a figure, and the devices and
    provenance last."""
    names = ", ".join(dict.fromkeys(s.device_name for s in series))
    legend = " ".join(f"{_swatch(s)}{escape(s.legend)}&emsp;" for s in series)
    order = page_order(sections)
    shown = set(order)
    nav = [("summary", "Summary")] + [(sec.key, sec.title) for sec in sections]
    body = [summary_section(series, order)]
    body += [figure_section(sec, series) for sec in sections]
    other = other_findings_section(series, shown, order)
    if other:
        body.append(other)
        nav.append(("other_findings", "Other findings"))
    agreement = agreement_section(series, order)
    if agreement:
        body.append(agreement)
        nav.append(("agreement", "Agreement"))
    body.append(provenance_section(series, order))
    nav.append(("provenance", "Devices and provenance"))
    return _PAGE.substitute(
        title=escape(f"gpumem report: {names}"),
        version=escape(version),
        generated=escape(generated),
        sources=escape(", ".join(dict.fromkeys(str(s.run_dir) for s in series))),
        legend=legend,
        nav="".join(f'<a href="#{escape(k)}">{escape(t)}</a>' for k, t in nav),
        body="\n".join(body),
    )
