"""Recovery rate of the structure inference over random planted geometries (issue 4).

    python benchmarks/bench_recovery.py [--caches 500] [--tlbs 500] [--workers 2] [--json F]

Each geometry (``gpumem.testing.random_cache`` / ``random_tlb``, seeds 0..N-1) is planted in
the simulator with timer noise (jitter, exponential outliers), chased by the experiment's own
adaptive search and analysed; the findings are compared exactly with the planted truth
(size, line, sector, sets, ways, policy class, index bits; TLB page, entries, sets, ways).
Prints the rate per class, every failure with its geometry, the time, and the accuracy of the
per-way eviction weights of the skewed policies (reported, not part of the rate).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor


def _one(job: tuple[str, int]) -> dict:
    from gpumem.experiment import RunContext
    from gpumem.experiments.cache_structure import CacheStructure
    from gpumem.experiments.tlb_structure import TlbStructure
    from gpumem.sim.device import SimDevice
    from gpumem.testing import random_cache, random_tlb, recovered

    kind, seed = job
    planted = random_cache(seed) if kind == "cache" else random_tlb(seed)
    exp = CacheStructure() if kind == "cache" else TlbStructure()
    dev = SimDevice(planted.config, "planted")
    t = time.perf_counter()
    raw = exp.sweep(dev, RunContext("planted", dev.info), lambda n: None)
    raw.attrs["l2_bytes"] = dev.info.l2_bytes
    findings = exp.analyze(raw)
    bad = recovered(findings, planted.truth)
    detail = recovered(findings, planted.detail) if planted.detail else {}
    policy = str(planted.truth.get("l1d.policy", "-"))
    return {"kind": kind, "seed": seed, "ok": not bad, "bad": {k: list(v) for k, v in
                                                               bad.items()},
            "detail_ok": not detail if planted.detail else None,
            "detail_bad": {k: list(v) for k, v in detail.items()},
            "policy": policy, "description": planted.description,
            "seconds": time.perf_counter() - t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--caches", type=int, default=500)
    ap.add_argument("--tlbs", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", help="write every result here")
    a = ap.parse_args()
    jobs = [("cache", s) for s in range(a.caches)] + [("tlb", s) for s in range(a.tlbs)]
    t = time.perf_counter()
    with ProcessPoolExecutor(a.workers) as pool:
        results = list(pool.map(_one, jobs, chunksize=4))
    wall = time.perf_counter() - t
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    for r in results:
        if not r["ok"]:
            print(f"FAIL {r['kind']} seed {r['seed']}: {r['description']}\n     {r['bad']}")
    print()
    for kind in ("cache", "tlb"):
        rs = [r for r in results if r["kind"] == kind]
        if not rs:
            continue
        ok = sum(r["ok"] for r in rs)
        print(f"{kind:5s}: {ok}/{len(rs)} recovered exactly ({ok / len(rs):.1%})")
        if kind == "cache":
            by = Counter(r["policy"] for r in rs)
            good = Counter(r["policy"] for r in rs if r["ok"])
            print("       by policy: " + ", ".join(f"{p} {good[p]}/{n}" for p, n in
                                                   sorted(by.items())))
            w = [r for r in rs if r["detail_ok"] is not None]
            print(f"       way weights of skewed policies exact: "
                  f"{sum(bool(r['detail_ok']) for r in w)}/{len(w)}")
    total = sum(r["ok"] for r in results)
    print(f"all  : {total}/{len(results)} ({total / max(1, len(results)):.1%}) in {wall:.0f} s "
          f"with {a.workers} workers")


if __name__ == "__main__":
    main()
