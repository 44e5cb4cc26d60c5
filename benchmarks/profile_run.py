"""Where a ``gpumem run`` spends its time: the run under cProfile, in this process.

    python benchmarks/profile_run.py OUT_DIR [gpumem run arguments ...]

runs ``gpumem run ARGS --out OUT_DIR/run`` under :mod:`cProfile`, keeps the profile
(``OUT_DIR/profile.pstats``) and prints each experiment's wall time (from the manifest), then
the functions with the most time of their own and the most cumulative time. Made to decide
what to speed up in the full H200 run (issue 42: under 40 s), not a benchmark of its own.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    args = ["run", *argv[1:], "--out", str(out / "run")]
    from gpumem.cli import main as gpumem_main

    prof = cProfile.Profile()
    t0 = time.monotonic()
    prof.enable()
    try:
        code = gpumem_main(args)
    finally:
        prof.disable()
    wall = time.monotonic() - t0
    prof.dump_stats(str(out / "profile.pstats"))
    manifest = out / "run" / "manifest.json"
    if manifest.exists():
        entries = json.loads(manifest.read_text())["entries"].values()
        for e in sorted(entries, key=lambda e: -float(e.get("wall_s", 0) or 0)):
            print(f"{e['experiment']:18s} {float(e.get('wall_s', 0) or 0):7.2f} s  "
                  f"{e.get('points', '')} points")
    print(f"whole run in this process: {wall:.1f} s (exit code {code})")
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(30)
        text = s.getvalue()
        print(text[text.find("ncalls"):][:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
