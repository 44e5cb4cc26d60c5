"""The built-in simulator against Mei & Chu's measurements, finding by finding (issue 19).

    python benchmarks/sim_vs_authors.py ARCH [--markdown] [--run DIR] [--readme]

Runs ``gpumem run --arch ARCH all --device sim`` in a temporary folder (or reads the run in
``--run DIR``) and lines each finding up against the authors' value: the expected values of
the architecture whose source cites Xinxin Mei and Xiaowen Chu, "Dissecting GPU Memory
Hierarchy through Microbenchmarking" (IEEE TPDS 28(1):72-86, 2017) or their released raw
data (github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem). The error and the agreement are
``gpumem compare``'s (:func:`gpumem.interop.compare.agreement_summary`, the authors' value as the
reference): a measured finding agrees within 5 % (relative, the largest over a list's
elements), a structural one when equal. An authors' value the simulator does not report (or
leaves unresolved) counts as a disagreement.

The ``source`` column says where each authors' value comes from: ``data`` (a raw-data file
of the release, named), ``derived from data`` (arithmetic on such values, e.g. a difference
of two latency classes), or ``paper`` (the paper's text, sometimes with the authors' code,
but no raw-data file). Left out, and listed under the table: expected values that are
``ASSUMED:`` (no source measures them), that cite no one but a vendor, and the ``lat.*_ns``
twins (the cycle value divided by a clock the plugin picks: the authors report cycles).

``--markdown`` prints the block that ``plugins/ARCH/README.md`` holds between the
``<!-- sim_vs_authors:begin -->`` and ``<!-- sim_vs_authors:end -->`` lines; ``--readme``
writes it there. ``tests/test_sim_vs_authors.py`` checks that the README's summary line and
rows still equal what the comparison gives.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from gpumem import __version__
from gpumem.contracts.expected_blocks import MEI_CHU, MEI_CHU_REPO
from gpumem.contracts.findings import Expected, Finding, kind_of
from gpumem.interop.compare import AGREEMENT_TOL, agreement_summary, load_source, row_error
from gpumem.plugin.registry import get_plugins

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ("fermi", "kepler", "maxwell")
BEGIN, END = "<!-- sim_vs_authors:begin -->", "<!-- sim_vs_authors:end -->"
AUTHORS, SIM = "authors", "simulator"
#: A citation of the release: "Mei & Chu's released data (REPO, file(s) A, B)".
RELEASE = re.compile(r"released data \(" + re.escape(MEI_CHU_REPO) + r", files? ([^)]*)\)")
#: Raw results in the release (its code is .cu, its README.md describes a rerun).
DATA_FILE = re.compile(r"\.(txt|xlsx|csv)$")
SECTION = re.compile(r"sec\. (\d+(?:[./]\d+)*)")


def release_files(source: str, data: bool = True) -> list[str]:
    """The files of the authors' release that ``source`` cites, in order: the raw-data files
    (``data``), or the others (their code)."""
    out: list[str] = []
    for group in RELEASE.findall(source):
        for name in (n.strip() for n in group.split(",")):
            if bool(DATA_FILE.search(name)) == data and name not in out:
                out.append(name)
    return out


def classify(e: Expected) -> tuple[str, str]:
    """``("authors", source label)`` for an authors' value, else ``("left out", why)``."""
    if e.source.startswith("ASSUMED"):
        return "left out", "ASSUMED: no source measures it"
    if MEI_CHU not in e.source and MEI_CHU_REPO not in e.source:
        return "left out", "cites no one but a vendor"
    if e.name.startswith("lat.") and e.name.endswith("_ns"):
        return "left out", "the cycle value divided by a clock the plugin picks"
    files = release_files(e.source)
    if files:
        kind = "derived from data" if e.source.startswith("derived") else "data"
        return AUTHORS, f"{kind} ({', '.join(files)})"
    secs = list(dict.fromkeys(SECTION.findall(e.source)))
    label = "paper" + (f", sec. {', '.join(secs)}" if secs else "")
    if code := release_files(e.source, data=False):
        label += f"; their code ({', '.join(code)})"
    if "rerun" in e.source:
        label += "; zhanglx13's rerun"
    return AUTHORS, label


def simulate(arch: str, out: Path) -> None:
    """``gpumem run --arch ARCH all --device sim --out OUT`` (no ``GPUMEM_*`` settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    argv = [sys.executable, "-m", "gpumem", "run", "--arch", arch, "all", "--device", "sim",
            "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:])} exited {done.returncode}:\n"
                           f"{done.stdout[-2000:]}{done.stderr[-2000:]}")


def _expected_kind(e: Expected) -> str:
    return kind_of(Finding(e.name, e.value, e.units))


def comparison(arch: str, run: Path) -> dict[str, Any]:
    """The rows (one per authors' value and experiment reporting it), the agreement summary
    and the expected values left out, for the simulator run in ``run``."""
    plugins = get_plugins()
    source = load_source(run)
    if source.arch != arch or source.device is None:
        raise SystemExit(f"{run}: a run of '{source.arch}', not '{arch}'")
    by_name: dict[str, list[tuple[str, Finding]]] = {}
    for (exp, name), f in sorted(source.findings.items()):
        by_name.setdefault(name, []).append((exp, f))
    rows: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    seen: set[str] = set()
    for e in plugins.expected_values(arch, source.device):
        if e.name in seen:
            continue  # the first of a repeated name wins, as in gpumem compare
        seen.add(e.name)
        verdict, label = classify(e)
        if verdict != AUTHORS:
            left_out.append({"finding": e.name, "why": label})
            continue
        authors = list(e.value) if isinstance(e.value, tuple) else e.value
        for exp, f in by_name.get(e.name) or [("", None)]:
            sim = f.as_dict()["value"] if f is not None and f.resolved else None
            rows.append({
                "experiment": exp, "finding": e.name, "units": e.units,
                "kind": kind_of(f) if f is not None else _expected_kind(e),
                "values": {AUTHORS: authors, SIM: sim}, "source": label,
                "expected_source": e.source,
                "reported": f is not None, "resolved": f is not None and f.resolved,
            })
    summary = agreement_summary(rows, AUTHORS, SIM)
    for row in rows:
        row["elementwise_error"] = elementwise_error(row)
    return {"arch": arch, "rows": rows, "summary": summary, "left_out": left_out,
            "not_reported": [r["finding"] for r in rows if not r["resolved"]]}


def elementwise_error(row: dict[str, Any]) -> list[float] | float | None:
    """|simulator - authors| / |authors|, element by element for a list (None: no numbers)."""
    if row_error(row, AUTHORS, SIM) is None:
        return None
    x = np.asarray(row["values"][AUTHORS], dtype=float)
    y = np.asarray(row["values"][SIM], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(x != 0, np.abs(y - x) / np.abs(x), np.where(y == x, 0.0, np.inf))
    return [float(r) for r in rel] if rel.ndim else float(rel)


def summary_line(result: dict[str, Any]) -> str:
    s = result["summary"]
    line = (f"{s['measured_within']} of {s['measured']} findings within "
            f"{AGREEMENT_TOL:.0%}".replace("%", " %") + ", "
            f"{s['structural_equal']} of {s['structural']} structural equal")
    missing = result["not_reported"]
    if missing:
        line += f" ({len(missing)} not reported or unresolved by the simulator)"
    return line


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _pct(err: list[float] | float | None) -> str:
    if err is None:
        return "-"
    if isinstance(err, list):
        return "[" + ", ".join(_pct(e) for e in err) + "]"
    return "inf" if not np.isfinite(err) else f"{100 * err:.2f} %"


def _agrees(row: dict[str, Any]) -> str:
    if not row["reported"]:
        return "no (not reported)"
    if not row["resolved"]:
        return "no (unresolved)"
    if row["kind"] == "structural":
        return "equal" if row["agrees"] else "differs"
    return "yes" if row["agrees"] else "no"


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    return [[r["finding"], r["kind"], r["units"] if r["units"] != "1" else "",
             _fmt(r["values"][AUTHORS]), r["source"], _fmt(r["values"][SIM]),
             _pct(r["elementwise_error"]), _agrees(r)] for r in result["rows"]]


HEADER = ["finding", "kind", "units", "authors' value", "source", "simulator",
          "relative error", "within 5 % / equal"]


def command(arch: str) -> str:
    return f"python benchmarks/sim_vs_authors.py {arch} --markdown"


def markdown(result: dict[str, Any], date: str) -> str:
    arch = result["arch"]
    lines = [BEGIN,
             f"`{command(arch)}` ({date}, gpumem {__version__}; it runs "
             f"`gpumem run --arch {arch} all --device sim`):", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
              for row in table_rows(result)]
    lines += ["", f"**{summary_line(result)}.**", ""]
    if result["left_out"]:
        groups: dict[str, list[str]] = {}
        for lo in result["left_out"]:
            groups.setdefault(lo["why"], []).append(f"`{lo['finding']}`")
        lines.append("Expected values left out (not the authors' numbers): " + "; ".join(
            f"{', '.join(names)} ({why})" for why, names in groups.items()) + ".")
    lines.append(END)
    return "\n".join(lines) + "\n"


def text(result: dict[str, Any]) -> str:
    rows = [HEADER, *table_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
           for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    out += ["", summary_line(result)]
    if result["left_out"]:
        out.append("left out: " + ", ".join(f"{lo['finding']} ({lo['why']})"
                                            for lo in result["left_out"]))
    return "\n".join(out)


def readme_path(arch: str) -> Path:
    return ROOT / "plugins" / arch / "README.md"


def readme_block(readme: str) -> str:
    """The generated block of a README (BEGIN ... END), or '' where it has none."""
    i, j = readme.find(BEGIN), readme.find(END)
    return readme[i:j + len(END) + 1] if 0 <= i < j else ""


def write_readme(arch: str, block: str) -> Path:
    path = readme_path(arch)
    readme = path.read_text()
    old = readme_block(readme)
    if not old:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block to replace")
    path.write_text(readme.replace(old, block))
    return path


def run_comparisons(archs: list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each architecture's comparison, its simulator runs started together (one process
    each, in a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="sim_vs_authors-") as tmp:
        runs = {a: Path(tmp) / a for a in archs}
        with ThreadPoolExecutor(max_workers=len(runs) or 1) as pool:
            for job in [pool.submit(simulate, a, run) for a, run in runs.items()]:
                job.result()
        return {a: comparison(a, run) for a, run in runs.items()}


def run_comparison(arch: str, run: Path | None = None) -> dict[str, Any]:
    return comparison(arch, run) if run is not None else run_comparisons([arch])[arch]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arch", choices=ARCHS)
    ap.add_argument("--markdown", action="store_true", help="print the README block")
    ap.add_argument("--readme", action="store_true",
                    help="write the block into plugins/ARCH/README.md")
    ap.add_argument("--run", type=Path, help="an existing simulator run of ARCH to compare")
    args = ap.parse_args(argv)
    result = run_comparison(args.arch, args.run)
    date = datetime.date.today().isoformat()
    if args.readme:
        print(f"wrote {write_readme(args.arch, markdown(result, date))}")
        print(summary_line(result))
    elif args.markdown:
        print(markdown(result, date), end="")
    else:
        print(text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
