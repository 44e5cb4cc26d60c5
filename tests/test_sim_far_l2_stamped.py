"""The stamped mode of a path's kernel (issue 31, item 3): an LRU level of one sector a line
and few ways (a TLB, of one set or several) that a chase cannot fill past any set's ways
keeps the access number of each line's last look-up instead of moving ways to the front, and
writes each set's ways back in recency order at the end (gpumem.sim.model._lookup_stamped). Chases whose state carries over
(lines held before, inside and outside the chase's span, spans that just fit and that do
not, then evictions that depend on the order written back) must give the generic kernel's
latencies, levels and final way state, which tests/test_sim_chase_layout.py holds to a plain
model of the caches.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.sim import CacheLevel, Dram, SimConfig, Timer, TlbLevel, engine, model, specialise
from helpers import slow_beyond

DRAM, WALK = 700.0, 11.5
PAGE = 4096


def _config(tlb_ways: int) -> SimConfig:
    """A one-set LRU cache of 64-B lines of one sector (stamped too), a four-set L2, and two
    TLB levels: one set of ``tlb_ways`` ways, then four sets of 16 (stamped too)."""
    return SimConfig(
        name="t", arch="t", compute_capability="9.0", sm_count=4, clock_mhz=1000.0,
        caches=[CacheLevel("c0", 8 * 64, 64, 8, 30.0, sector=64),
                CacheLevel("c1", 4 * 16 * 128, 128, 16, 200.0, sector=32, scope="gpu",
                           translate=True)],
        paths={"ca": ["c0", "c1"], "cg": ["c1"]},
        tlbs=[TlbLevel("t0", PAGE, tlb_ways, tlb_ways, 9.25),
              TlbLevel("t1", PAGE, 64, 16, 41.0)],
        dram=Dram(DRAM), timer=Timer(overhead=0.0, jitter=0.0), page_walk_latency=WALK,
        base_address=1 << 40).validate()


def _chase(pages: float, first: int, order: str = "random", stride: int = 256, seed: int = 0,
           n: int = 3000, path: str = "ca", pattern: tuple[int, ...] = ()) -> dict:
    return dict(footprint=int(pages * PAGE), pad=first * PAGE, order=order, stride=stride,
                seed=seed, n=n, path=path, pattern=pattern)


#: pages [first, first + pages): 7 lines of the one-set cache (stamped), then from cold
#: (``reset``) as many pages as the first TLB has ways (stamped) and one more (not: a page is
#: evicted and comes back); then the TLB's 16 ways fill up over stamped chases (lines held
#: before, inside the span and out of it), overflow, then hold other pages
CHASES = [
    _chase(7 * 64 / PAGE, 0, stride=64, n=400),
    *[dict(_chase(p, 100 * p, seed=p), reset=True) for p in (4, 5, 8, 9, 16, 17)],
    _chase(10, 0, "sequential", stride=512),
    _chase(6, 0, seed=1),                     # all held: the order changes only
    _chase(6, 8, seed=2),                     # 2 held, 4 come in: 14 held
    _chase(2, 20, seed=3),                    # 16 held: just fits
    _chase(4, 0, "sequential", stride=1024),  # 16 + 4 > 16: evictions in recency order
    _chase(3, 30, seed=4, path="cg"),
    _chase(1, 0, seed=5, stride=64, n=500),   # a few lines: the one-set cache stamped
    _chase(1, 0, "pattern", pattern=tuple(range(0, 4096, 640)), n=700),
    _chase(40, 0, "pattern", pattern=(0, 5 * PAGE, 17 * PAGE + 64, 39 * PAGE), n=900),
    _chase(8, 3, "scattered", stride=2048, seed=6),
    _chase(64, 0, seed=7, n=5000),
    # the second TLB (4 sets of 16 ways, stamped where each set's valid ways and the chase's
    # pages in it fit): from cold, from a page that is not a set's first; then pages held
    # inside the span and out of it; none inside; too many (evictions in the recency order
    # written back); from cold, 16 pages a set (just fits); then too many again
    dict(_chase(30, 5, seed=8, path="cg"), reset=True),
    _chase(24, 20, seed=9, path="cg"),
    _chase(16, 60, seed=10, path="cg"),
    _chase(65, 2, seed=11, n=6000, path="cg"),
    dict(_chase(64, 1, seed=12, n=6000, path="cg"), reset=True),
    _chase(20, 50, seed=13, path="cg"),
]


def _run(cfg: SimConfig, mode: str, monkeypatch):
    monkeypatch.setattr(engine, "SPECIALISE_MIN", 0 if mode == "specialised" else 1 << 62)
    monkeypatch.setattr(specialise, "COMPILE_AFTER", 0)
    h, ids = engine.compile_hierarchy(cfg, 3)
    out = []
    for i, c in enumerate(CHASES):
        if c.get("reset"):
            engine.reset(h)
        n = c["n"]
        lat, idx, lvl = engine.simulate_chase(
            h, np.array([ids[x] for x in cfg.paths[c["path"]]], np.int64), len(cfg.caches),
            len(cfg.tlbs), DRAM, base=cfg.base_address + c["pad"], footprint=c["footprint"],
            stride=c["stride"], page_walk=WALK, sm=1, sm_count=4, element=4, order=c["order"],
            seed=c["seed"], warmup=n // 3, record=n - n // 3, overhead=0.0, jitter=0.0,
            outlier_rate=0.0, outlier_cycles=0.0, noise_seed=i, pattern=c["pattern"],
            scalar=mode == "scalar")
        out.append((lat.tolist(), lvl.tolist(), idx.tolist(), h.way.copy()))
    return out


@pytest.mark.parametrize("tlb_ways", slow_beyond([16, 8, 4], keep=["16"]))
def test_stamped_levels_give_the_generic_kernels_results_and_state(tlb_ways, monkeypatch):
    cfg = _config(tlb_ways)
    stamped: list[int] = []
    real = model._lookup_stamped
    monkeypatch.setattr(model, "_lookup_stamped",
                        lambda s, L: (stamped.append(L.m(model.EQ_WAYS)), real(s, L)))
    want = _run(cfg, "generic", monkeypatch)
    assert not stamped
    got = _run(cfg, "specialised", monkeypatch)
    assert sorted(set(stamped)) == sorted({8, tlb_ways, 16})  # the cache and the TLBs
    for i, ((lat, lvl, idx, way), (wlat, wlvl, widx, wway)) in enumerate(
            zip(got, want, strict=True)):
        assert idx == widx, i
        assert lvl == wlvl, i
        assert lat == wlat, i
        assert way.dtype == wway.dtype and np.array_equal(way, wway), i
