"""The L2's ways under a hashed set index, from a minimal eviction set (issue 44, item 5).

Lines one capacity apart share a set only under an index modulo the sets; an XOR-hashed L2
(an H200's, its slices homed by a hash) spreads them, and until now cache_structure gave no
``l2.ways`` for it. The planted geometry is the truth: an XOR-hashed L2 of W ways (sliced or
not) is dissected by ``l2_stages`` and must give W and the sets exactly, the same from the
live search as from its stored chases.
"""

from __future__ import annotations

import random

import pytest
from gpumem.analysis.chases import chases_from_dataset
from gpumem.experiments.cache_structure.ahead import Ahead
from gpumem.experiments.cache_structure.confidence import CLEAR
from gpumem.experiments.cache_structure.evict import CONFIRM, GROW, TEST, ddmin
from gpumem.experiments.cache_structure.l2 import l2_stages
from gpumem.experiments.cache_structure.walk import _LiveSource, _StoredSource
from gpumem.experiments.chaselog import ChaseLog
from gpumem.sim.config import CacheLevel, Dram, SetIndex, SimConfig, Timer
from gpumem.sim.device import SimDevice


def _masks(r: random.Random, count: int, lo: int = 7, hi: int = 24) -> list[int]:
    """``count`` linearly independent XOR masks over address bits lo..hi-1, each with its
    own lowest bit (so they are independent) and 2-5 bits above it."""
    lows = sorted(r.sample(range(lo, hi - 5), count))
    return [(1 << b) | sum(1 << x for x in r.sample(range(b + 1, hi), r.randint(1, 4)))
            for b in lows]


def _l2(ways: int, sets: int, seed: int, slices: int = 1, jitter: float = 1.0) -> SimDevice:
    """An L2 of ``sets`` x ``ways`` 128-B lines, its set picked by XOR masks; with slices,
    the first log2(slices) index masks are the slice hash (each slice holds its own sets)."""
    r = random.Random(seed)
    masks = _masks(r, sets.bit_length() - 1)
    extra = {}
    if slices > 1:
        n = slices.bit_length() - 1
        extra = {"slices": slices, "slice_masks": masks[:n],
                 "slice_latency": [[200.0 + 10 * k for k in range(slices)]]}
    l2 = CacheLevel("l2", sets * ways * 128, 128, ways, 200.0, sector=32, scope="gpu",
                    index=SetIndex("xor", masks=masks), **extra)
    cfg = SimConfig(name="hashed-l2", arch="planted", compute_capability="9.0", sm_count=1,
                    clock_mhz=1000.0, caches=[l2], paths={"cg": ["l2"]}, tlbs=[],
                    dram=Dram(500.0), timer=Timer(overhead=4.0, jitter=jitter,
                                                  outlier_rate=0.001),
                    memory_bytes=1 << 30).validate()
    return SimDevice(cfg, "planted")


def _dissect(dev: SimDevice) -> tuple[dict, ChaseLog]:
    info = dev.info
    log = ChaseLog(Ahead(dev))
    out = l2_stages(_LiveSource(log, info.load_paths, info.l2_bytes, info.memory_bytes), [])
    return {f.name: f for f in out}, log


@pytest.mark.parametrize("ways,sets,slices,seed,jitter", [
    (16, 512, 1, 0, 1.0), (12, 512, 1, 1, 1.0), (24, 256, 1, 2, 1.0), (16, 1024, 8, 3, 1.0),
    (16, 512, 4, 4, 5.0)])
def test_a_hashed_l2s_ways_and_sets_are_found_exactly(ways, sets, slices, seed, jitter):
    dev = _l2(ways, sets, seed, slices, jitter)
    out, log = _dissect(dev)
    assert out["l2.line"].value == 128
    assert out["l2.ways"].value == ways and out["l2.ways"].confidence == CLEAR
    assert out["l2.sets"].value == sets
    assert "minimal eviction set" in out["l2.ways"].method
    # the set the note names is W + 1 lines of one set under the planted hash
    offsets = [int(x, 16) for x in out["l2.ways"].note.split(": ")[1].split(", ")]
    masks = dev.config.caches[0].index.masks
    assert len(offsets) == ways + 1
    assert len({tuple(bin(o & m).count("1") & 1 for m in masks) for o in offsets}) == 1
    # the analysis of the stored chases gives the same
    stored = l2_stages(_StoredSource(chases_from_dataset(log.dataset()),
                                     float(dev.info.l2_bytes)), [])
    assert {f.name: f.value for f in stored} == {k: f.value for k, f in out.items()}


def test_a_modulo_l2_takes_no_eviction_chases():
    """Lines one capacity apart already give the ways: the eviction search never starts."""
    l2 = CacheLevel("l2", 1 << 20, 128, 16, 200.0, sector=32, scope="gpu")
    cfg = SimConfig(name="modulo-l2", arch="planted", compute_capability="9.0", sm_count=1,
                    clock_mhz=1000.0, caches=[l2], paths={"cg": ["l2"]}, tlbs=[],
                    dram=Dram(500.0), timer=Timer(overhead=4.0, jitter=1.0),
                    memory_bytes=1 << 30).validate()
    out, log = _dissect(SimDevice(cfg, "planted"))
    assert out["l2.ways"].value == 16 and "one L2 capacity" in out["l2.ways"].method
    assert not any(c.stage.startswith("l2evict") for c in log.chases)


def test_without_its_confirmation_the_ways_are_qualified():
    """The reduction's own chases show the minimal set; the fresh confirmation chases make
    it CLEAR. Dropped from the log, the same ways at a lower confidence."""
    dev = _l2(16, 512, 0)
    _out, log = _dissect(dev)
    kept = [c for c in log.chases if c.stage != CONFIRM]
    found = {f.name: f for f in l2_stages(_StoredSource(kept, float(dev.info.l2_bytes)), [])}
    assert found["l2.ways"].value == 16 and found["l2.ways"].confidence < CLEAR
    # and with the reduction's last single-line tests gone too, nothing is claimed
    tests = [c for c in kept if c.stage == TEST]
    last = {frozenset(c.pattern) for c in tests if len(c.pattern) == 16}
    thin = [c for c in kept if not (c.stage == TEST and frozenset(c.pattern) in last)]
    left = {f.name: f for f in l2_stages(_StoredSource(thin, float(dev.info.l2_bytes)), [])}
    assert left["l2.ways"].status == "unresolved" and left["l2.ways"].value is None
    assert "l2.sets" not in left


def _oracle(sets: dict[int, int], ways: int, drop: float = 0.0, seed: int = 0):
    """A cache as ``ddmin`` sees it: items in sets; a list overflows when a set holds more
    than ``ways`` of its items, and its overflowing sets' items miss (each dropped from the
    answer with probability ``drop``: a policy that spares some)."""
    r = random.Random(seed)

    def misses(items: list[int]) -> list[int] | None:
        count: dict[int, int] = {}
        for x in items:
            count[sets[x]] = count.get(sets[x], 0) + 1
        over = [x for x in items if count[sets[x]] > ways]
        if not over:
            return None
        return [x for x in over if r.random() >= drop]
    return misses


@pytest.mark.parametrize("drop", [0.0, 0.3])
def test_ddmin_ends_on_one_sets_ways_and_one_more(drop):
    r = random.Random(5)
    items = list(range(3000))
    sets = {x: r.randrange(64) for x in items}
    misses = _oracle(sets, 8, drop, seed=1)
    over = misses(items)
    assert over
    least = ddmin(sorted(set(over)), misses)
    assert len(least) == 9 and len({sets[x] for x in least}) == 1
    assert all(misses(least[:i] + least[i + 1:]) is None for i in range(len(least)))


def test_where_the_search_stops_is_said():
    """No minimal set: ``l2.ways`` unresolved, saying where the search stopped (here its
    logs cut after the candidates, then after the first test made to fail)."""
    from dataclasses import replace

    from gpumem.experiments.cache_structure.evict import evict_ways

    dev = _l2(16, 512, 0)
    _out, log = _dissect(dev)
    grow = [c for c in log.chases if c.stage == GROW]
    cut = evict_ways(grow, float(dev.info.l2_bytes), 128)
    assert len(cut) == 1 and cut[0].status == "unresolved"
    assert "never chased alone" in cut[0].note
    first = next(c for c in log.chases if c.stage == TEST)
    hit = replace(first, ev_access=first.ev_access[:0], ev_index=first.ev_index[:0],
                  ev_latency=first.ev_latency[:0])
    alone = evict_ways([*grow, hit], float(dev.info.l2_bytes), 128)
    assert alone[0].status == "unresolved" and "did not miss again" in alone[0].note


# ---- an L2 of two levels (near and far partitions, H100/H200): the near level's ways ------


def test_the_near_threshold_splits_two_hit_levels_only():
    """Hits under 320 cycles and from 420 (an H200 at 3/4 of its L2): the middle of the
    gap; one cluster, or a gap too narrow for two levels, or too few on one side: none."""
    from gpumem.experiments.cache_structure.evict import near_threshold

    rng = random.Random(3)
    near = [rng.uniform(250, 320) for _ in range(600)]
    far = [rng.uniform(420, 600) for _ in range(400)]
    cut = near_threshold(near + far + [700.0] * 5, 650.0)
    assert cut is not None and 320 <= cut <= 420
    assert near_threshold(near, 650.0) is None
    assert near_threshold(near + [rng.uniform(321, 330) for _ in range(400)], 650.0) is None
    assert near_threshold(near + far[:20], 650.0) is None  # the far cluster under 10 %


def _simulated_h200(near_ways: int) -> SimDevice:
    """The packaged simulated H200 (its L2 a hashed near level, copies of far lines included,
    in front of a two-partition far level: a line reaches DRAM only once both let it go),
    its near level given ``near_ways`` ways (the same sets)."""
    from dataclasses import replace

    from gpumem.plugin.registry import load_plugins

    cfg = load_plugins(warn=lambda _m: None).hook.gpumem_simulator_config(arch="hopper",
                                                                         simulator="sim")
    caches = list(cfg.caches)
    k = next(i for i, c in enumerate(caches) if c.name == "l2")
    sets = caches[k].size // (caches[k].ways * caches[k].line)
    caches[k] = replace(caches[k], ways=near_ways, size=sets * near_ways * caches[k].line)
    return SimDevice(replace(cfg, caches=caches).validate(), "hopper")


@pytest.mark.parametrize("near_ways", [16, pytest.param(12, marks=pytest.mark.slow)])
def test_a_two_level_l2s_ways_are_its_near_levels(near_ways):
    """The DRAM search would find no set (lines that overflow a far set are served again
    from their near copies: the simulated H200 stopped so, as the card did); the near
    level's search (a far hit its miss) finds its ways, confirmed, from the live search and
    from its stored chases alike."""
    from gpumem.experiments.cache_structure.evict import NEAR

    dev = _simulated_h200(near_ways)
    found, log = _dissect(dev)
    assert found["l2.ways"].value == near_ways and found["l2.ways"].confidence == CLEAR
    assert "near level" in found["l2.ways"].method
    assert {c.stage for c in log.chases} >= {GROW + NEAR, TEST + NEAR, CONFIRM + NEAR}
    assert GROW not in {c.stage for c in log.chases}  # no DRAM search was needed
    stored = l2_stages(_StoredSource(chases_from_dataset(log.dataset()),
                                     float(dev.info.l2_bytes)), [])
    assert {f.name: f.value for f in stored}["l2.ways"] == near_ways
