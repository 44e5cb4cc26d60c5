"""``gpumem report``: one self-contained HTML page of one or more runs.

The page (``OUT/index.html``) shows the devices and provenance, the findings with expected
values and statuses, and the figures (PNG and SVG files beside it): latency ladder, chases of
the structure searches, bandwidth heatmaps, ILP sweep, cp.async, bank conflicts. Modules:

* :mod:`~gpumem.report.runs` reads run directories into series (one per device and run);
* :mod:`~gpumem.report.provenance` says what was measured on what, and throttled points;
* :mod:`~gpumem.report.figures` draws (matplotlib, Agg, no pyplot);
* :mod:`~gpumem.report.sections` says which figure goes where, and notes what is missing;
* :mod:`~gpumem.report.page` writes the HTML.

:func:`build_report` writes everything into a fresh folder beside ``OUT`` and renames it into
place at the end, so an interrupted or failed report leaves no half-written page.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from gpumem import __version__
from gpumem.errors import UsageError
from gpumem.report.page import render
from gpumem.report.runs import load_runs
from gpumem.report.sections import build_sections

INDEX = "index.html"


def check_out(out: Path) -> None:
    """Raise UsageError unless ``out`` can become the report folder (creating nothing).

    An existing folder is replaced only when it is empty or holds a report already, so a
    mistyped ``--out`` never deletes someone's data."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"--out {out}: exists and is not a directory")
        if any(out.iterdir()) and not (out / INDEX).is_file():
            raise UsageError(f"--out {out}: exists, is not empty and holds no gpumem report "
                             f"({INDEX}); choose another folder")
    parent = out.resolve().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: cannot create it ({parent} is not a writable directory)")


def build_report(targets: Sequence[Path], out: Path) -> Path:
    """Write the report of the run directories ``targets`` to ``out``; returns the page."""
    out = Path(out)
    check_out(out)
    series = load_runs([Path(t) for t in targets])
    out.resolve().parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.resolve().parent))
    try:
        sections = build_sections(series, tmp)
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        (tmp / INDEX).write_text(render(series, sections, __version__, generated),
                                 encoding="utf-8")
        os.chmod(tmp, 0o755)
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.{os.getpid()}.old")
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            if old is not None:
                os.replace(old, out)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / INDEX
