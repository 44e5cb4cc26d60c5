"""Learn the card-to-card and run-to-run allowances from gpumem's multi-card runs.

    python benchmarks/card_allowances.py [--product P] [--check]
    python benchmarks/card_allowances.py RUN_DIR ... --out FILE

With no RUN_DIR: for each product gpumem has measured on several cards (:data:`PRODUCTS`:
healthy H200s, healthy H100s; ``--product`` names one), its committed run folders, written as
the file :mod:`gpumem.contracts.allowances` reads for that product (runs of a model with
none take, finding by finding, the widest of them), which every generated expected value's
band reads; ``--check``
writes nothing and exits 1 where a shipped file differs from what the runs give (tests run
it). Add the folders of new cards' runs and run it again: the allowances are re-derived from
all of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
SHIPPED = REPO / "core" / "src" / "gpumem" / "contracts" / "allowances.json"
#: The committed runs of healthy H200s, relative to the repository: whole runs on several
#: cards, DRAM-bandwidth runs on two more, latency and ILP on three more, the TLB on one more.
#: Not the dense pages of h200-s23 and h200-s24 (``dense/``: ``l2_slices`` with its sampling
#: patched to every line of one page, what ``l2_hash`` now is): their findings carry
#: ``l2_slices``' names but measure otherwise (hash accuracy 0.98-1.00 where the runs' 0.10
#: gave the ratio class a run-to-run allowance of 463 %).
#: Not tests/data/h200-run (2026-11-29): measured before fixes that bumped no version (the
#: patterns' L2 eviction: its P2 read 446 cycles, an L2 hit, where every later run reads
#: 674-705).
DEFAULT = ("tests/data/h200-fleet/*", "tests/data/h200-session17/*", "tests/data/h200-dram-v3/*",
           "tests/data/h200-v4-runs/*", "tests/data/h200-cards/*/*", "tests/data/h200-reruns/*",
           "tests/data/h200-tlb-reruns/*", "tests/data/h200x2-run", "tests/data/h200-s23/gpu*",
           "tests/data/h200-s24/gpu*", "tests/data/h200-s25/*", "tests/data/h200-s33/*/all*",
           "tests/data/h200-s37/*/all*", "tests/data/h200-s37/*/lat*")


#: The folders of whole runs (every experiment), on which the band's Z is learned held out.
WHOLE = ("tests/data/h200-fleet/*", "tests/data/h200-session17/*", "tests/data/h200-s33/*/all*",
         "tests/data/h200-s37/*/all*")
#: The committed whole runs of healthy H100s (2026-12-06, twelve cards: the tool gave H100s
#: for H200 calls), every one also a whole run the band's Z is learned on. h100-s33's two
#: cards were first judged held out (each failed one capacity in one run); h100-s33/held-out
#: is in no pattern: the card the learned bands are judged on.
H100 = ("tests/data/h100-s26/*/all*", "tests/data/h100-s27/*/all*",
        "tests/data/h100-s28/*/all*", "tests/data/h100-s29/*/all*",
        "tests/data/h100-s33/*/all*", "tests/data/h100-s36/*/all*",
        "tests/data/h100-s37/*/all*", "tests/data/h100-s38/*/all*",
        "tests/data/h100-s39/*/all*")
#: H100 runs of the latency ladder alone, each a fresh process with its raw chases kept
#: (2026-12-07: h100-s36, a thirteenth card, h100-s37, a fourteenth, h100-s38, a fifteenth,
#: and h100-s39, a sixteenth and seventeenth, each whole run first judged held out): five
#: cards' raw ladders, so the half crossings have fleet values
H100_LADDERS = ("tests/data/h100-s36/*/lat*", "tests/data/h100-s37/*/lat*",
                "tests/data/h100-s38/*/lat*", "tests/data/h100-s39/*/lat*")
#: Run folders the patterns match that measured otherwise than gpumem does now, though no
#: experiment's version says so.
LEFT_OUT = {
    "tests/data/h100-s26/gpu3c930-job1/all2": "the chase's warm-up then ran as a kernel of "
    "its own and the L1 emptied between them: l1d.size read 32 KB (h100-s26/README.md)",
}
#: product -> (its run folders, the whole runs among them, the file they ship as)
PRODUCTS = {
    "nvidia-h200": (DEFAULT, WHOLE, SHIPPED),
    "nvidia-h100-80gb-hbm3": (H100 + H100_LADDERS, H100, SHIPPED.with_name(
        "allowances-nvidia-h100-80gb-hbm3.json")),
}


def default_folders(patterns: tuple[str, ...] = DEFAULT) -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        out += sorted(p for p in REPO.glob(pattern)
                      if p.is_dir() and str(p.relative_to(REPO)) not in LEFT_OUT)
    return out


def learn(folders: list[Path], whole_runs: tuple[str, ...] = WHOLE) -> dict:
    """The allowances of ``folders`` (relative to the repository), with the band's Z learned
    held out on the whole runs among them (``whole_runs``' folders,
    :func:`gpumem.authoring.held_out.learn_z`)."""
    from gpumem.authoring.held_out import learn_fleet_z, learn_z, whole_run
    from gpumem.authoring.learn import read_runs, summarize
    from gpumem.plugin.registry import get_plugins

    measurements, dropped = read_runs(get_plugins(), folders)
    data = summarize(measurements, dropped, folders)
    whole = {p.resolve() for p in default_folders(whole_runs)}
    runs = [whole_run(f / "manifest.json") for f in folders
            if f.resolve() in whole and (f / "manifest.json").exists()]
    if runs:
        data["band_z"] = {**learn_z(measurements, dropped, runs),
                          **learn_fleet_z(measurements, dropped, runs)}
    return data


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, help="with RUN_DIRs: the file to write")
    ap.add_argument("--product", choices=sorted(PRODUCTS))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    if a.runs:
        if a.out is None:
            ap.error("RUN_DIRs need --out")
        rel = [f.resolve().relative_to(REPO) if f.resolve().is_relative_to(REPO) else f
               for f in a.runs]
        jobs = [(rel if all(not p.is_absolute() for p in rel) else a.runs, WHOLE, a.out)]
    else:
        jobs = [(default_folders(folders), whole, a.out or out)
                for p, (folders, whole, out) in sorted(PRODUCTS.items())
                if a.product in (None, p)]
    rc = 0
    for folders, whole, out in jobs:
        rc = max(rc, _one(folders, whole, out, a.check))
    return rc


def _one(folders: list[Path], whole: tuple[str, ...], out: Path, check: bool) -> int:
    """Learn ``folders``' allowances into ``out`` (``check``: compare instead of writing)."""
    data = learn([f.relative_to(REPO) if f.is_absolute() and f.is_relative_to(REPO) else f
                  for f in folders], whole)
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if check:
        same = out.exists() and out.read_text() == text
        print(f"{out}: {'as the runs give' if same else 'differs from what the runs give'}")
        return 0 if same else 1
    out.write_text(text)
    f = data["findings"]
    print(f"{data['product']}: {len(data['cards'])} cards, {data['runs']} runs, "
          f"{len(f)} findings; left out: {data['left_out']}")
    for name, s in sorted(f.items()):
        ca = s["card_sigma"]
        print(f"  {name:32s} {s['class']:9s} cards {s['cards']:2d} runs {s['runs']:3d} "
              f"card range {s['card_range']:.4g} -> sigma "
              f"{'-' if ca is None else f'{ca:.4g}'}, run sigma {s['run_sigma']}")
    print("classes:", json.dumps(data["classes"], indent=1))
    print("band Z:", json.dumps(data.get("band_z"), indent=1))
    print("card-specific:", json.dumps(data["card_specific"], indent=1))
    return 0


if __name__ == "__main__":
    import os

    os.chdir(REPO)
    sys.exit(main(sys.argv[1:]))
