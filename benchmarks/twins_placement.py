"""Why a hammered L2 slice delays a line 9-13 cycles on one H100 and 70-97 on another (issue 44).

    python benchmarks/twins_placement.py RUN.nc [--json OUT.json] [--pairs 2] [--repeats 6]
                                         [--sim-config SIM.toml]   (a rehearsal, no GPU)

RUN.nc is a ``gpumem run l2_twins`` result from this card (the page's map and the tests that
split its pairs). For the first ``--pairs`` groups its tests split, with the class its first
test hammered (slice A) and the group's other slice (B):

1. **distance**: every SM chases a line of four A classes, four B classes and the controls
   alone (2 repeats): each SM's latency to slice A;
2. **offered load**: the run's chase SM times those lines alone and while K SMs hammer A's
   lines (6 repeats each), the K nearest to A, the K farthest, and the first K of the order
   l2_twins takes (``sm_order``), K = 1, 2, 4, 8, 16, 24, 32, 48, 64, 128 (all there are);
3. **the chaser's place**: the same 16 default hammers with the chase on the SM nearest to A
   and on the farthest;
4. **the lines hammered**: 1, the class's 7 (as l2_twins) or 63 distinct lines of slice A,
   by the first 16 and by every SM of the default order.

Predictions (a slice served at a fixed rate, M/D/1): the delay grows with the load offered
(K x HAMMER_INFLIGHT lines over their round trip), slowly, then steeply near the rate; far
hammers (longer round trip) offer less at one K; the chaser's place moves only its own
round trip. If the H100s' 8x comes from placement, the default 16 sit nearer A on the card
that waits longer. Changes no setting of the GPU; prints a table last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

KS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 128)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--sim-config", type=Path, help="rehearse on this simulated GPU")
    a = ap.parse_args()
    import xarray as xr
    from gpumem.experiments.l2_slices import sm_order
    from gpumem.experiments.l2_twins import L2Twins, littles_rate, map_of, tests_from

    raw = xr.open_dataset(a.run).load()
    m = map_of(raw)
    assert m is not None and m.classes is not None
    tests = tests_from(raw, m.grouping.count)
    exp = L2Twins()
    if a.sim_config:
        from gpumem.sim.config import SimConfig
        from gpumem.sim.device import SimDevice
        dev = SimDevice(SimConfig.load(a.sim_config), "hopper")
    else:
        from gpumem.cuda.backend import CudaBackend
        dev = CudaBackend().open(0, "hopper")
    n_sm = dev.info.sm_count
    chase_sm = int(raw["test_chase_sm"].values[0])
    controls = [int(x) for x, r in zip(raw["probe_line"].values[0], raw["probe_role"].values[0],
                                       strict=True) if r == 2][:4]
    out: dict = {"card": dev.info.name, "uuid": getattr(dev.info, "uuid", ""),
                 "clock_mhz": dev.info.clock_mhz, "chase_sm": chase_sm, "pairs": []}
    seed = [1000]

    def chase(probes: list[int], sm: int, hammer: tuple[int, ...] = (),
              sms: tuple[int, ...] = ()) -> tuple[np.ndarray, int]:
        seed[0] += 1
        return exp.chase_probes(dev, probes, seed[0], sm, hammer, sms)

    def delays(probes: list[int], sm: int, hammer: tuple[int, ...], sms: list[int]) -> dict:
        d, came = [], []
        for _ in range(a.repeats):
            base, _ = chase(probes, sm)
            hit, c = chase(probes, sm, hammer, tuple(sms))
            d.append(hit - base)
            came.append(c)
        dd = np.array(d)  # repeats x probes
        return {"delay": np.round(np.median(dd, axis=0), 1).tolist(),
                "delay_mean": np.round(dd.mean(axis=0), 1).tolist(), "came": came}

    first_split = {}
    for t in tests:
        if t.split and t.group not in first_split:
            first_split[t.group] = t
    for group, t in list(first_split.items())[:a.pairs]:
        slow = [int(c) for c, s in zip(t.classes, t.slowed, strict=True) if s]
        fast = [int(c) for c, s in zip(t.classes, t.slowed, strict=True) if not s]
        a_cls = [t.hammered] + [c for c in slow if c != t.hammered][:3]
        b_cls = fast[:4]
        own = np.sort(m.offsets[m.classes == t.hammered])
        hammer = tuple(int(x) for x in own[1:9])
        line = {c: int(np.sort(m.offsets[m.classes == c])[0]) for c in a_cls + b_cls}
        probes = [line[c] for c in a_cls + b_cls] + controls
        na, nb = len(a_cls), len(b_cls)
        t0 = time.time()
        dist = np.full((n_sm, len(probes)), np.nan)
        for sm in range(n_sm):
            dist[sm] = np.mean([chase(probes, sm)[0] for _ in range(2)], axis=0)
        to_a = dist[:, :na].mean(axis=1)
        by_near = [int(s) for s in np.argsort(to_a, kind="stable") if s not in
                   (chase_sm, chase_sm ^ 1)]
        default = [s for s in sm_order(n_sm) if s not in (chase_sm, chase_sm ^ 1)]
        rows = []
        for k in KS:
            for how, order in (("near", by_near), ("far", by_near[::-1]),
                               ("default", default)):
                sms = order[:k]
                r = delays(probes, chase_sm, hammer, sms)
                trip = float(np.mean(to_a[sms]))
                r.update(how=how, k=k, chase_sm=chase_sm, hammer_trip=round(trip, 1),
                         offered=round(littles_rate(k, 0.0, trip), 1))
                rows.append(r)
        # 4. the lines hammered: one line, the class's 7 (as l2_twins), 63 of slice A's
        # classes (distinct lines: requests for one line in flight at once may be merged)
        a_lines = np.sort(np.concatenate([m.offsets[m.classes == c] for c in slow]))
        spare = [int(x) for x in a_lines if int(x) not in probes]
        for k in (16, len(default)):
            for how, ham in (("lines1", hammer[:1]), ("lines7", hammer[:7]),
                             ("lines63", tuple(spare[:63]))):
                sms = default[:k]
                r = delays(probes, chase_sm, ham, sms)
                r.update(how=how, k=k, chase_sm=chase_sm, lines=len(ham),
                         hammer_trip=round(float(np.mean(to_a[sms])), 1))
                rows.append(r)
        near_sm, far_sm = int(np.argmin(to_a)), int(np.argmax(to_a))
        for how, sm in (("chase_near", near_sm), ("chase_far", far_sm)):
            sms = [s for s in default if s not in (sm, sm ^ 1)][:16]
            r = delays(probes, sm, hammer, sms)
            r.update(how=how, k=16, chase_sm=sm, hammer_trip=round(float(np.mean(to_a[sms])),
                                                                   1))
            rows.append(r)
        out["pairs"].append({
            "group": group, "a_classes": a_cls, "b_classes": b_cls, "probes": probes,
            "roles": ["A"] * na + ["B"] * nb + ["C"] * len(controls),
            "to_a": np.round(to_a, 1).tolist(),
            "to_b": np.round(dist[:, na:na + nb].mean(axis=1), 1).tolist(),
            "default16_to_a": round(float(np.mean(to_a[default[:16]])), 1),
            "rows": rows, "seconds": round(time.time() - t0, 1)})
    if a.json:
        a.json.write_text(json.dumps(out))
    print(out["card"], out["uuid"], "clock", out["clock_mhz"], "chase SM", chase_sm)
    for p in out["pairs"]:
        ta = np.array(p["to_a"])
        print(f"group {p['group']}: SM latency to A {ta.min():.0f}-{ta.max():.0f} "
              f"(chase SM {ta[chase_sm]:.0f}, default 16 hammers {p['default16_to_a']:.0f}),"
              f" {p['seconds']} s")
        roles = np.array(p["roles"])
        for r in p["rows"]:
            d = np.array(r["delay"])
            da = float(np.median(d[roles == "A"]))
            rate = littles_rate(r["k"], max(da, 0.0), r["hammer_trip"])
            print(f"  {r['how']:10s} k={r['k']:3d} sm={r['chase_sm']:3d} trip "
                  f"{r['hammer_trip']:6.1f}  A {da:6.1f}  rate {rate:6.1f}  "
                  f"B {np.median(d[roles == 'B']):5.1f}  C {np.median(d[roles == 'C']):5.1f}"
                  f"  came {min(r['came'])}-{max(r['came'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
