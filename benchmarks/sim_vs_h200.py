"""The packaged hopper simulator against the H200 it was calibrated from (issue 19).

    python benchmarks/sim_vs_h200.py [--markdown] [--doc] [--run DIR]

Runs ``gpumem run --arch hopper all --device sim`` in a temporary folder (or reads the run in
``--run DIR``) and compares it, finding by finding, with the five committed H200 runs its
config was calibrated from (``tests/data/h200-reruns/run1``-``run5``, one card, pooled: each
finding the median run's, :func:`gpumem.interop.pool.median_source`; ``gpumem compare HW SIM
--reanalyze``, every run analysed by this gpumem's analyses) and with 16 whole runs on four
cards the calibration never saw (``tests/data/h200-session17``, kept as manifests: the
findings as the runs recorded them). The table lists every finding of ``run1``; the summary
lines say how many agree (measured within 5 %, structural equal, undecided where the H200's
own interval is wider than 5 % and holds the simulated value).

``--markdown`` prints the block ``docs/h200-reference.md`` holds between the
``<!-- sim_vs_h200:begin -->`` and ``<!-- sim_vs_h200:end -->`` lines; ``--doc`` writes it
there. ``tests/test_sim_vs_h200.py`` checks that the document still says what the
comparison gives.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpumem.interop.compare import compare, compare_sources, load_source, load_sources
from gpumem.interop.pool import median_source
from gpumem.plugin.registry import get_plugins

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "tests" / "data" / "h200-reruns"
CALIBRATION = "run1"
#: The run whose cache bandwidths (bandwidth_levels 4: kernel shapes searched, runs sized to
#: last 0.5 ms) the packaged config takes, over the calibration run's version 2 (one shape)
BANDWIDTH_RUN = ROOT / "tests" / "data" / "h200-v4-runs" / "run1"
#: bulk_copy version 2 (runs sized to last 0.5 ms; version 1's one 110 us pass is a lower
#: bound) on three more H200s, kept as manifests (tests/data/h200-dram-v3, twelve runs,
#: pooled: each finding the median run's): the packaged config's bulk copies come from them.
BULK_RUNS = tuple(sorted(p for p in (ROOT / "tests" / "data" / "h200-dram-v3").glob("job[124]-*")))
#: The L2 slice map (issue 45, item 4): l2_slices over all 16,384 lines of one 2 MB page on
#: GPU-ae2f9ce6 (2026-12-04), whose class table places 97.85 % of held-out lines: the packaged
#: config's slice table, slice latencies per SM and the table's page come from it.
SLICE_RUN = ROOT / "tests" / "data" / "h200-s23" / "dense"
#: A slice's queue (``slice_bandwidth``): the two l2_twins runs of GPU-1589473f (2026-12-06,
#: tests/data/h200-s33), pooled; of them only ``l2_twins.slice_bandwidth`` is taken (605.8
#: and 604.3 B/cycle, as three H100s' slices: 602.6-605.6), the map stays the dense page's.
TWINS_RUNS = tuple(ROOT / "tests" / "data" / "h200-s33" / "gpu15894-job" / "twins" / name
                   for name in ("tw1", "tw2"))
#: The other runs of the calibration card, pooled into the calibration with run1.
HELD_OUT = ("run2", "run3", "run4", "run5")
#: Whole runs on four other H200s, kept as their manifests (tests/data/h200-session17: every
#: experiment at today's version but cache_structure, 1 there): cards the calibration never
#: saw, compared by the findings the runs recorded (no raw data to re-analyse).
CARDS = ROOT / "tests" / "data" / "h200-session17"
DOC = ROOT / "docs" / "h200-reference.md"
BEGIN, END = "<!-- sim_vs_h200:begin -->", "<!-- sim_vs_h200:end -->"


def calibration_source() -> Any:
    """What the packaged config is calibrated from: the five runs of the calibration card
    pooled (each finding the median run's: one run's TLB miss penalty read 8 cycles, the
    others 10-11), their ``bandwidth_levels`` findings replaced by :data:`BANDWIDTH_RUN`'s
    and their ``bulk_copy`` findings by :data:`BULK_RUNS`' pooled, the L2 slice map from
    :data:`SLICE_RUN` and a slice's queue from :data:`TWINS_RUNS` (the packaged config is
    ``gpumem.interop.calibrate.calibrate`` of this: a fixed point, tests/test_sim_vs_h200)."""
    from gpumem.interop.compare import Source

    plugins = get_plugins()  # reanalysed, as gpumem export sim does
    runs = [load_source(RUNS / name, reanalyze_with=plugins) for name in (CALIBRATION,
                                                                          *HELD_OUT)]
    pooled = median_source(runs, "h200-reruns")
    bw = load_source(BANDWIDTH_RUN, reanalyze_with=plugins)
    cache_bw = {k: f for k, f in bw.findings.items() if k[0] == "bandwidth_levels"}
    bulk_runs = median_source([load_source(p / "manifest.json") for p in BULK_RUNS],
                              "h200-dram-v3")
    bulk = {k: f for k, f in bulk_runs.findings.items() if k[0] == "bulk_copy"}
    dense = load_source(SLICE_RUN, reanalyze_with=plugins)
    slices = {k: f for k, f in dense.findings.items() if k[0] == "l2_slices"}
    twins = median_source([load_source(p, reanalyze_with=plugins) for p in TWINS_RUNS],
                          "h200-s33-twins")
    queue = {k: f for k, f in twins.findings.items() if k == ("l2_twins",
                                                              "l2_twins.slice_bandwidth")}
    return Source(pooled.label, pooled.arch, pooled.device,
                  {**pooled.findings, **cache_bw, **bulk, **slices, **queue})


def simulate(out: Path) -> None:
    subprocess.run([sys.executable, "-m", "gpumem", "run", "--arch", "hopper", "all",
                    "--device", "sim", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def card_runs() -> list[Path]:
    """The manifests of the held-out cards' runs (:data:`CARDS`)."""
    return sorted(CARDS.glob("*/manifest.json"))


def comparisons(sim: Path) -> dict[str, dict[str, Any]]:
    """Run label -> ``compare([that H200 run, sim])``: the calibration card's runs
    re-analysed, the other cards' kept runs as recorded."""
    plugins = get_plugins()
    out = {name: compare(plugins, [RUNS / name, sim], False, reanalyze=True)
           for name in (CALIBRATION, *HELD_OUT)}
    for manifest in card_runs():
        out[manifest.parent.name] = compare(plugins, [manifest, sim], False)
    sim_pairs = [(src, str(sim)) for src in load_sources(sim)]
    for card, manifests in cards().items():
        pooled = median_source([load_source(m) for m in manifests], f"{card}-pooled")
        out[pooled.label] = compare_sources(plugins, [(pooled, pooled.label), *sim_pairs],
                                            False)
    return out


def cards() -> dict[str, list[Path]]:
    """Each held-out card (the manifests' folder names start with it) and its runs."""
    by_card: dict[str, list[Path]] = {}
    for m in card_runs():
        by_card.setdefault(m.parent.name.split("-")[0], []).append(m)
    return by_card


def share(data: dict[str, Any]) -> float:
    """The share of the H200 run's measured findings the simulator gives within 5 %."""
    s = data["agreement"]
    return s["measured_within"] / s["measured"] if s["measured"] else 0.0


def card_lines(results: dict[str, dict[str, Any]]) -> list[str]:
    """One line per held-out card: its runs' shares, lowest first, and its runs pooled
    (each finding the median run's, as the calibration pools its card's)."""
    lines = []
    for card, manifests in sorted(cards().items()):
        runs = [(m.parent.name, results[m.parent.name]) for m in manifests]
        parts = [f"{d['agreement']['measured_within']}/{d['agreement']['measured']}"
                 for _n, d in sorted(runs, key=lambda r: share(r[1]))]
        pooled = results[f"{card}-pooled"]
        p = pooled["agreement"]
        lines.append(f"- {card} ({len(runs)} runs): {', '.join(parts)} measured findings "
                     f"within 5% ({min(share(d) for _n, d in runs):.1%}-"
                     f"{max(share(d) for _n, d in runs):.1%}); its runs pooled "
                     f"{p['measured_within']}/{p['measured']} ({share(pooled):.1%}); "
                     f"structural {min(d['agreement']['structural_equal'] for _n, d in runs)} "
                     f"of {runs[0][1]['agreement']['structural']} equal")
    return lines


def summary_line(data: dict[str, Any]) -> str:
    s = data["agreement"]
    return (f"{s['measured_within']} of {s['measured']} measured findings within "
            f"{s['tolerance']:.0%}, {s['structural_equal']} of {s['structural']} structural "
            f"equal, {len(s['undecided'])} undecided, {len(s['in_one_run_only'])} in one run "
            f"only")


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def _verdict(row: dict[str, Any]) -> str:
    if "agrees" not in row:
        return "in one run only"
    if row["agrees"] is None:
        return "undecided"
    return "agrees" if row["agrees"] else "**differs**"


def markdown(results: dict[str, dict[str, Any]], date: str) -> str:
    data = results[CALIBRATION]
    hw, sim = (r["label"] for r in data["runs"])
    lines = [BEGIN,
             f"`python benchmarks/sim_vs_h200.py --doc` ({date}): the packaged hopper "
             f"`sim.toml` run through every experiment, against the H200 runs, "
             f"`gpumem compare HW SIM --reanalyze`.", "",
             "Against the five runs the calibration pools (GPU-e3cd7c15, each finding the "
             "median run's):", "",
             f"- against {CALIBRATION}: {summary_line(data)}"]
    for name in HELD_OUT:
        lines.append(f"- against {name}: {summary_line(results[name])}")
    lines += ["", f"**Against {len(card_runs())} whole runs on four H200s the calibration "
              f"never saw** (`tests/data/h200-session17`, kept as manifests: `gpumem compare "
              f"CARD/manifest.json SIMRUN`, the findings as the runs recorded them; each "
              f"card's runs also pooled, each finding the median run's, as the calibration "
              f"pools its card's):", "",
              *card_lines(results)]
    lines += ["", "| experiment | finding | H200 (run1) | simulator | error | verdict |",
              "|---|---|---|---|---|---|"]
    for row in data["rows"]:
        if hw not in row["values"]:
            continue
        err = row.get("error")
        lines.append(f"| {row['experiment']} | {row['finding']} | "
                     f"{_fmt(row['values'].get(hw))} | {_fmt(row['values'].get(sim))} | "
                     f"{'-' if err is None else f'{err:.1%}'} | {_verdict(row)} |")
    lines.append(END)
    return "\n".join(lines)


def doc_block(text: str) -> str:
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def run_comparisons(run: Path | None = None) -> dict[str, dict[str, Any]]:
    if run is not None:
        return comparisons(run)
    with tempfile.TemporaryDirectory() as tmp:
        sim = Path(tmp) / "sim"
        simulate(sim)
        return comparisons(sim)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the document's block")
    ap.add_argument("--doc", action="store_true", help=f"write the block into {DOC.name}")
    ap.add_argument("--run", type=Path, help="a simulated run to use instead of a fresh one")
    args = ap.parse_args(argv)
    results = run_comparisons(args.run)
    block = markdown(results, datetime.date.today().isoformat())
    if args.doc:
        text = DOC.read_text()
        old = doc_block(text)
        if not old:
            print(f"{DOC}: no {BEGIN} ... {END} block", file=sys.stderr)
            return 1
        DOC.write_text(text.replace(old, block))
    if args.markdown or args.doc:
        print(block)
    else:
        for name, data in results.items():
            print(f"{name}: {summary_line(data)}")
        print("\n".join(card_lines(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
