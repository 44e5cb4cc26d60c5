"""``l2_slices`` from every SM of the device, not the first 32 (issue 44: the per-SM profiles
of two cards compared by die position, which needs every position measured on both).

    python benchmarks/l2_slices_all_sms.py OUT [--device cuda:0] [--arch hopper]

Runs the experiment as ``gpumem run l2_slices`` does, with its most SMs raised to the
device's SM count and every round run (not only while a round splits groups the rounds
before it did not). On an H200 the 32-SM run took 5-6 s of measuring inside ``gpumem run
all``; every SM is about four times as much. Then ``python benchmarks/slices_vs_card.py OUT_A OUT_B
--match`` pairs the two cards' SMs by their latency distributions.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gpumem.experiments.l2_slices as slices
from gpumem.api import RunRequest, load_plugins, run


def every_round(self: slices.L2Slices, raw, ctx):  # type: ignore[no-untyped-def]
    """The next round of SMs until every SM is measured."""
    have = {int(s) for s in raw["sm"].values}
    left = [b for b in slices.batches(max(1, ctx.device.sm_count)) if not set(b) <= have]
    return {"sm": sorted(left[0])} if left else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--arch", default="hopper")
    a = ap.parse_args()
    slices.MOST_SMS = 1 << 12  # batches() stops at the device's SM count
    slices.L2Slices.refine = every_round  # type: ignore[method-assign]
    t0 = time.monotonic()
    report = run(RunRequest(a.arch, ["l2_slices"], device=a.device, out=a.out,
                            argv=["benchmarks/l2_slices_all_sms.py", str(a.out)]),
                 plugins=load_plugins())
    (o,) = report.outcomes
    sms = next((f.note for f in o.findings if f.name == "l2_slices.groups"), "")
    print(f"l2_slices, every SM: {o.status} in {time.monotonic() - t0:.1f} s "
          f"({o.points} SMs measured) -> {o.file} {sms}")


if __name__ == "__main__":
    main()
