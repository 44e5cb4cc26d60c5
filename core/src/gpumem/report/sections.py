"""Which figures the page shows, in which section, and what it says when data are missing.

The report names no experiment: the sections come from the registered experiments'
presentations (:mod:`gpumem.contracts.presentation`), passed in by the caller. :func:`page_sections`
groups them by section key, sections by ``order``, experiments within one by ``rank`` then
name, each experiment's figures in its own order. A figure is drawn for the series that have
its experiment; a series without it gets one note (why: skipped, failed, not run), and when
no series has it the figure is replaced by that note. So a run of one experiment still
yields a complete, honest page. An experiment in a run but not registered now (its plugin
uninstalled) or without a presentation has its findings under "other findings".
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from gpumem.contracts.presentation import Presentation, ReportFigure, ReportSection, presentation_of
from gpumem.contracts.series import Series
from gpumem.figures.draw import save
from gpumem.report.page import FigureDoc, SectionDoc


@dataclass(frozen=True)
class SectionSpec:
    """One section of the page as the registered experiments make it."""

    section: ReportSection
    experiments: tuple[str, ...]  # whose findings it lists under its figures, in rank order
    figures: tuple[tuple[str, ReportFigure], ...]  # (experiment, figure), in page order


#: What a figure name or section key may be: a plain file stem / HTML id. The page's own
#: sections and files are taken.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
_TAKEN = {"summary", "other_findings", "provenance", "index"}


def _stderr(message: str) -> None:
    print(f"gpumem report: warning: {message}", file=sys.stderr)


def page_sections(experiments: Mapping[str, Any],
                  warn: Callable[[str], None] | None = None) -> list[SectionSpec]:
    """The sections of the registered ``experiments`` (name -> class or instance, as
    :meth:`gpumem.plugin.registry.Plugins.experiments` gives them); experiments that share a section
    key share the section of the first by rank. A ``presentation()`` that fails or returns
    something else, a figure name already taken or not a plain file stem, is left out with a
    warning (``warn``, default stderr): one plugin's mistake costs its own figures, not the
    page (nor a file outside the report's folder)."""
    warn = warn or _stderr
    found: dict[str, list[tuple[int, str, Presentation]]] = {}
    for name, experiment in experiments.items():
        try:
            p = presentation_of(experiment)
        except Exception as e:  # noqa: BLE001 - a plugin's bug: its findings still show
            warn(f"experiment '{name}': presentation() raised {type(e).__name__}: {e}")
            continue
        if p is None:
            continue
        if not isinstance(p, Presentation):
            warn(f"experiment '{name}': presentation() returned {type(p).__name__}, not a "
                 f"Presentation")
            continue
        if not _NAME.match(p.section.key) or p.section.key in _TAKEN:
            warn(f"experiment '{name}': section key {p.section.key!r} is not a plain name "
                 f"or is taken; left out")
            continue
        found.setdefault(p.section.key, []).append((p.rank, name, p))
    specs = []
    drawn: dict[str, str] = {}  # figure name -> experiment: one file each, first in page order
    groups = [sorted(m, key=lambda m: (m[0], m[1])) for m in found.values()]
    groups.sort(key=lambda m: (m[0][2].section.order, m[0][2].section.key))
    for members in groups:
        figures = []
        for _, name, p in members:
            for fig in p.figures:
                if fig.name in drawn:
                    warn(f"experiment '{name}': figure '{fig.name}' is already drawn by "
                         f"'{drawn[fig.name]}'; left out")
                    continue
                if not _NAME.match(fig.name) or fig.name in _TAKEN:
                    warn(f"experiment '{name}': figure name {fig.name!r} is not a plain "
                         f"file name or is taken; left out")
                    continue
                drawn[fig.name] = name
                figures.append((name, fig))
        specs.append(SectionSpec(members[0][2].section, tuple(m[1] for m in members),
                                 tuple(figures)))
    return specs


def _why(s: Series, experiment: str) -> str:
    return f"{s.legend}: {experiment} {s.why_missing(experiment)}"


def _short(e: BaseException, limit: int = 160) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _draw(draw: Callable[[Sequence[Series]], Figure | None], have: list[Series]
          ) -> tuple[Figure | None, list[tuple[Series, Exception]]]:
    """The figure of the series in ``have``; a series whose data cannot be drawn (an
    unforeseen shape: converted or older files) is left out and reported, not the figure
    lost. Warnings of empty slices or flat log axes stay off the console."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return draw(have), []
        except Exception as together:  # noqa: BLE001 - find the series at fault
            failed: list[tuple[Series, Exception]] = []
            for s in have:
                try:
                    draw([s])
                except Exception as e:  # noqa: BLE001
                    failed.append((s, e))
            if not failed:  # each alone draws, not all together: none is drawn
                return None, [(s, together) for s in have]
            good = [s for s in have if all(s is not x for x, _ in failed)]
            try:
                return (draw(good) if good else None), failed
            except Exception as e:  # noqa: BLE001
                return None, failed + [(s, e) for s in good]


def _note(doc: SectionDoc, note: str) -> None:
    if note not in doc.notes:
        doc.notes.append(note)


def build_sections(series: Sequence[Series], out_dir: Path,
                   specs: Sequence[SectionSpec]) -> list[SectionDoc]:
    """Draw every figure into ``out_dir`` and describe the sections for the page."""
    docs = []
    for spec in specs:
        sec = spec.section
        doc = SectionDoc(sec.key, sec.title, sec.intro, experiments=spec.experiments)
        for experiment, figure in spec.figures:
            name, caption = figure.name, figure.caption

            def draw(ss, f=figure):  # resolved here: an import error is a note, as any
                return f.drawer()(ss)

            have = [s for s in series if s.raw(experiment) is not None]
            lacking = [s for s in series if s not in have]
            if not have:
                whys = "; ".join(_why(s, experiment) for s in lacking)
                _note(doc, f"Skipped: no run has the {experiment} experiment ({whys}).")
                continue
            fig, failed = _draw(draw, have)
            for s, e in failed:
                _note(doc, f"Not shown for {s.legend}: could not draw {name} from its "
                           f"{experiment} data ({_short(e)}).")
            have = [s for s in have if all(s is not x for x, _ in failed)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                files = save(fig, out_dir, name) if fig is not None else None
            if fig is None or files is None:
                if have:
                    _note(doc, f"Skipped: nothing to draw for {name} in the {experiment} "
                               f"data.")
                continue
            fig.clear()
            doc.figures.append(FigureDoc(name, files[0], files[1], caption))
            for s in lacking:
                _note(doc, f"Not shown for {_why(s, experiment)}.")
        docs.append(doc)
    return docs
