"""``gpumem report``: one self-contained HTML page of one or more runs.

The page (``OUT/index.html``) reads top-down: a one-screen summary (devices, pass / warn /
fail counts against the expected values, the headline numbers), then each experiment's
figures (PNG and SVG files beside it: latency ladder, chases of the structure searches,
bandwidth heatmaps, ILP sweep, cp.async, bank conflicts) with its own findings table under
them, and the devices' provenance last. Modules:

* :mod:`~gpumem.report.runs` reads run directories into series (one per device and run);
* :mod:`~gpumem.report.provenance` says what was measured on what, and throttled points;
* :mod:`~gpumem.report.figures` holds the drawing helpers (matplotlib, Agg, no pyplot);
* :mod:`~gpumem.report.sections` says which figure goes where, and notes what is missing;
* :mod:`~gpumem.report.page` writes the HTML.

The report knows no experiment: what the page shows comes from the registered experiments'
``presentation()`` (:mod:`gpumem.presentation`): sections, figures, and the order of both.
The caller passes the registry in (``gpumem report`` passes the CLI's plugin set).

Ownership: the report writes only its own files into ``OUT`` (``index.html``, the figures,
and :data:`MANIFEST`, the list of the files it wrote) and never deletes a folder. Run again
on the same ``OUT`` it replaces its own files in place and removes only the files its previous
manifest lists that this run no longer writes; anything else in ``OUT`` is left alone. A
non-empty ``OUT`` that holds no gpumem report is refused (exit 2). The figures and the page
are drawn into a hidden scratch folder inside ``OUT`` first and renamed into place file by
file (figures first, the page last), so a failed report leaves the previous page, and a
symlink planted at an output's name is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpumem import __version__
from gpumem.errors import UsageError
from gpumem.report.page import render
from gpumem.report.runs import load_runs
from gpumem.report.sections import build_sections, page_sections
from gpumem.safe_write import replace_file, write_text

INDEX = "index.html"
#: The files the last report wrote into OUT, one name a line: what a rerun may replace/remove.
MANIFEST = ".gpumem-report"
_GENERATOR = b'<meta name="generator" content="gpumem'


def _regular(path: Path) -> bool:
    """``path`` is a regular file itself (a symlink never counts as the report's own)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _recorded(out: Path) -> set[str] | None:
    """The names the previous report recorded in ``OUT/MANIFEST``; None without one. Only
    plain names inside ``OUT`` count, so an edited manifest cannot point anywhere else."""
    if not _regular(out / MANIFEST):
        return None
    try:
        lines = (out / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return {n for n in lines[1:] if n and n == Path(n).name and not n.startswith(".")}


def _is_report(out: Path) -> bool:
    """``out`` holds a gpumem report: a manifest, or (an older report) a page gpumem wrote."""
    if _recorded(out) is not None:
        return True
    if not _regular(out / INDEX):
        return False
    try:
        with open(out / INDEX, "rb") as f:
            return _GENERATOR in f.read(4096)
    except OSError:
        return False


def check_out(out: Path) -> None:
    """Raise UsageError unless ``out`` can become the report folder (creating nothing).

    An existing folder is written into only when it is empty or holds a gpumem report
    already, so a mistyped ``--out`` never touches someone's files (not even their own
    ``index.html``)."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"--out {out}: exists and is not a directory")
        if any(out.iterdir()) and not _is_report(out):
            raise UsageError(f"--out {out}: exists, is not empty and holds no gpumem report "
                             f"({INDEX} written by gpumem); choose another folder")
    elif out.is_symlink():
        raise UsageError(f"--out {out}: is a dangling symlink")
    parent = out.resolve().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: cannot create it ({parent} is not a writable directory)")


def build_report(targets: Sequence[Path], out: Path,
                 experiments: Mapping[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None) -> Path:
    """Write the report of the run directories ``targets`` to ``out``; returns the page.

    ``experiments``: the registered experiments (``Plugins.experiments()``), whose
    presentations make the page's sections; without them every finding is listed under
    "other findings". ``warn`` (default: stderr) hears of a presentation left out."""
    out = Path(out)
    check_out(out)
    specs = page_sections(experiments or {}, warn)
    order = [e for spec in specs for e in spec.experiments]
    series = load_runs([Path(t) for t in targets], order)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create it: {e.strerror or e}") from None
    previous = _recorded(out) or set()
    tmp = Path(tempfile.mkdtemp(prefix=".gpumem-report-", suffix=".tmp", dir=out))
    try:
        sections = build_sections(series, tmp, specs)
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        (tmp / INDEX).write_text(render(series, sections, __version__, generated),
                                 encoding="utf-8")
        names = sorted(p.name for p in tmp.iterdir() if p.is_file() and p.name != INDEX)
        names.append(INDEX)
        for name in names:  # refuse before moving anything: a folder where a file goes
            if (out / name).is_dir() and not (out / name).is_symlink():
                raise UsageError(f"--out {out}: {name} is a directory; the report writes a "
                                 f"file there")
        for name in names:
            replace_file(tmp / name, out / name)
        write_text(out / MANIFEST, "# files written by gpumem report (replaced by the next)\n"
                   + "".join(f"{n}\n" for n in names))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if still empty
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    for name in previous - set(names):  # the previous report's own files this one lacks
        if _regular(out / name) or (out / name).is_symlink():
            with contextlib.suppress(OSError):
                (out / name).unlink()
    return out / INDEX
