"""How many L2 slices a page's lines reach (issue 44 item 2: the number of groups with its
confidence, and where latency alone cannot split two slices, saying so).

A slice hash spreads a page's lines evenly over its slices, so group sizes come in whole
shares: four H100s' dense pages (``gpumem run l2_hash``) gave 30 groups of 25-26 classes
and 25 of 50-52, 80 slices (its 50 MB L2 in 640 KB slices); three H200s' pages 46 and 24 of
21-22 and 42-44 (48 and 23 on the third), 94 slices; the same classes in the same groups on every card of a model. Planted on the simulator: six slices by a balanced
table, two at one spot of the grid (no SM tells them apart by latency).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from gpumem.analysis.slices import slice_count
from gpumem.experiments import l2_slices as exp
from gpumem.testing import balanced_sliced_l2
from helpers import benchmark_script, planted_run

DATA = Path(__file__).parent / "data"


# --- the count from group sizes ------------------------------------------------------------

def _pairs_merged(shares: list[int], pairs: int) -> np.ndarray:
    """Group sizes where the first ``pairs`` pairs of slices fell into one group each."""
    s = list(shares)
    return np.array([s[2 * k] + s[2 * k + 1] for k in range(pairs)] + s[2 * pairs:])


def test_an_h200_like_page_94_slices_24_groups_of_two():
    shares = [22] * 74 + [21] * 20  # 2048 classes over 94 slices
    sizes = _pairs_merged(shares, 24)
    sc = slice_count(sizes, 2048)
    assert sc is not None and sc.count == 94 and sc.interval == (94, 94)
    assert list(sc.per_group) == [2] * 24 + [1] * 46


def test_the_count_is_the_fewest_slices_not_a_multiple():
    sc = slice_count(np.full(10, 100), 1000)
    assert sc is not None and sc.count == 10 and sc.interval == (10, 10)


def test_sizes_that_are_no_multiples_of_a_share_give_no_count():
    rng = np.random.default_rng(5)
    table = rng.integers(0, 8, 512)  # an unbalanced table: 45-80 classes a slice
    assert slice_count(np.bincount(table), 512) is None


def test_a_random_half_of_the_lines_still_counts_80_slices():
    rng = np.random.default_rng(7)
    line_slice = np.repeat(np.arange(80), 16384 // 80 + 1)[:16384]
    seen = rng.choice(16384, 8192, replace=False)
    sizes = _pairs_merged(list(np.bincount(line_slice[seen], minlength=80)), 25)
    sc = slice_count(sizes, 16384)
    assert sc is not None and sc.interval[0] <= 80 <= sc.interval[1] and sc.count == 80


# --- a group of two slices cut below the tolerance -----------------------------------------

def _two_slices(gap: float, rng, classes: int = 22, lines: int = 8, sms: int = 32,
                noise: float = 0.3):
    """Lines of 2 x ``classes`` classes of ``lines`` each, one group; the second slice
    ``gap`` cycles farther from five of the SMs (an H100's twins: 0.5-1 cycle at some SMs)."""
    base = 280.0 + rng.normal(0, 10, sms)
    slice_of_class = np.repeat([0, 1], classes)
    cls = np.repeat(np.arange(2 * classes), lines)
    centre = base + np.outer(slice_of_class, np.r_[np.full(5, gap), np.zeros(sms - 5)])
    matrix = centre[cls] + rng.normal(0, noise, (cls.size, sms))
    return matrix, cls, slice_of_class[cls]


def test_two_slices_under_a_cycle_apart_at_some_sms_are_cut_every_line_placed():
    """0.8 cycles at five SMs, a line's noise 0.3 at each: a line is 3 standard deviations
    from the midpoint (0.14 % misplaced); its class of eight, 8.4."""
    from gpumem.analysis.slices import split_groups

    rng = np.random.default_rng(3)
    matrix, cls, truth = _two_slices(0.8, rng)
    labels, cuts = split_groups(matrix, cls, np.ones(cls.size, bool), np.zeros(cls.size,
                                np.int64), np.array([2]), 22.0)
    assert cuts == 1
    same = labels == truth
    assert max(same.mean(), 1 - same.mean()) >= 0.99


def test_a_group_of_three_slices_is_cut_and_its_half_of_two_cut_again():
    from gpumem.analysis.slices import split_groups

    rng = np.random.default_rng(5)
    sms, classes, lines = 32, 22, 8
    slice_of_class = np.repeat([0, 1, 2], classes)
    offset = np.zeros((3, sms))
    offset[1, :5], offset[2, 5:10] = 0.8, 0.8
    cls = np.repeat(np.arange(3 * classes), lines)
    matrix = 280.0 + offset[slice_of_class][cls] + rng.normal(0, 0.3, (cls.size, sms))
    labels, cuts = split_groups(matrix, cls, np.ones(cls.size, bool),
                                np.zeros(cls.size, np.int64), np.array([3]), 22.0)
    assert cuts == 2
    truth = slice_of_class[cls]
    pairs, n = np.unique(np.stack([labels, truth]), axis=1, return_counts=True)
    assert pairs.shape[1] - (n < 0.02 * cls.size).sum() == 3  # one group a slice


@pytest.mark.parametrize("gap", [0.0, 0.05])
def test_one_slice_of_twice_the_share_or_a_gap_within_the_noise_is_not_cut(gap):
    from gpumem.analysis.slices import split_groups

    rng = np.random.default_rng(4)
    matrix, cls, _ = _two_slices(gap, rng)
    labels, cuts = split_groups(matrix, cls, np.ones(cls.size, bool), np.zeros(cls.size,
                                np.int64), np.array([2]), 22.0)
    assert cuts == 0 and not labels.any()


def test_identical_lines_are_not_two_clusters():
    from gpumem.analysis.slices import split_groups, two_means

    assert two_means(np.full((40, 8), 266.5))[1] == 0.0
    matrix = np.full((352, 8), 266.5)
    cls = np.repeat(np.arange(44), 8)
    _, cuts = split_groups(matrix, cls, np.ones(352, bool), np.zeros(352, np.int64),
                           np.array([2]), 22.0)
    assert cuts == 0


# --- planted on the simulator --------------------------------------------------------------

@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 256 KB (2,048 lines, 512 classes of four), as the planted table hash's."""
    monkeypatch.setattr(exp.L2Slices, "page", 256 << 10)


def test_planted_twins_two_cycles_apart_within_the_noise_are_split(cli, tmp_path, small_pages):
    """Timer jitter of 5 cycles makes the grouping's tolerance 3.4 cycles: twins 2 cycles
    apart from half the SMs merge at it, and the split finds both, every line in its own
    slice's group."""
    planted = balanced_sliced_l2(1, jitter=5.0, twin_gap=2.0)
    raw = planted_run(cli, tmp_path, planted, "l2_hash")
    m = exp.slice_map(raw)
    assert m is not None and m.grouping.tol > 2.0 and m.grouping.split == 1
    f = {x.name: x for x in exp.L2Hash().analyze(raw)}
    assert f["l2_slices.groups"].value == planted.truth["l2_slices.groups"] == 6
    assert f["l2_slices.slices"].value == 6 and f["l2_slices.group_slices"].value == [1] * 6
    cfg = planted.config
    slice_of = cfg.caches[0].slice_of(cfg.base_address + m.offsets, cfg.base_address,
                                      int(raw.attrs["plan_footprint"]))
    ok = m.grouping.labels >= 0
    pairs = set(zip(m.grouping.labels[ok].tolist(), slice_of[ok].tolist(), strict=True))
    assert len(pairs) <= 6 + 0.005 * ok.sum()  # one group per slice, a stray line at most
    assert f["l2_slices.hash_accuracy"].value >= 0.99


@pytest.mark.parametrize("jitter", [0.0, 5.0], ids=["exact", "jitter5"])
def test_planted_six_slices_two_at_one_spot(cli, tmp_path, small_pages, jitter):
    planted = balanced_sliced_l2(1, jitter=jitter)
    raw = planted_run(cli, tmp_path, planted, "l2_hash")
    m = exp.slice_map(raw)
    assert m is not None and m.grouping.by_class
    f = {x.name: x for x in exp.L2Hash().analyze(raw)}
    assert f["l2_slices.groups"].value == planted.truth["l2_slices.groups"] == 5
    assert f["l2_slices.slices"].value == planted.truth["l2_slices.slices"] == 6
    assert f["l2_slices.slices"].interval == (6, 6)
    assert "tells apart" in f["l2_slices.slices"].note
    per_group = f["l2_slices.group_slices"].value
    assert sorted(per_group) == [1, 1, 1, 1, 2]
    # the group that holds two is the twins' lines, and only theirs
    cfg = planted.config
    slice_of = cfg.caches[0].slice_of(cfg.base_address + m.offsets, cfg.base_address,
                                      int(raw.attrs["plan_footprint"]))
    twins = np.isin(slice_of, planted.truth["twins"])
    two = per_group.index(2)
    assigned = m.grouping.labels >= 0
    assert np.array_equal((m.grouping.labels == two)[assigned], twins[assigned])
    assert f["l2_slices.hash_accuracy"].value >= 0.99


def test_the_sparse_run_counts_no_slices_and_says_what_would():
    """Random lines of many pages see too few of each page's classes to count shares:
    no l2_slices.slices; the groups' note names l2_hash."""
    path = next((DATA / "h100-s29" / "gpu6cc50-job" / "all1").glob("*/l2_slices-*.nc"))
    with xr.open_dataset(path) as ds:
        f = {x.name: x for x in exp.L2Slices().analyze(ds.load())}
    assert "l2_slices.slices" not in f
    assert "gpumem run l2_hash" in f["l2_slices.groups"].note


# --- seven cards' dense pages --------------------------------------------------------------

PAGES = {
    "h200-ae2f9": "h200-s23/dense/cuda0-nvidia-h200-gpuae2f9",
    "h200-af95c": "h200-s24/dense/cuda0-nvidia-h200-gpuaf95c",
    "h200-cdafb": "h200-s37/gpucdafb-job1/hash/cuda0-nvidia-h200-gpucdafb",
    "h100-6cc50": "h100-s29/gpu6cc50-job/hash/cuda0-nvidia-h100-80gb-hbm3-gpu6cc50",
    "h100-f0085": "h100-s29/gpuf0085-job/hash/cuda0-nvidia-h100-80gb-hbm3-gpuf0085",
    "h100-e68d5": "h100-s29/gpue68d5-job/hash/cuda0-nvidia-h100-80gb-hbm3-gpue68d5",
    "h100-6115c": "h100-s29/gpu6115c-job/hash/cuda0-nvidia-h100-80gb-hbm3-gpu6115c",
}
slow = pytest.mark.skipif(not os.environ.get("GPUMEM_TEST_SLOW"),
                          reason="seven dense pages, some 15 s each (GPUMEM_TEST_SLOW=1)")


@pytest.fixture(scope="module")
def maps():
    out = {}
    for card, folder in PAGES.items():
        (nc,) = sorted((DATA / folder).glob("l2_*.nc"))
        with xr.open_dataset(nc) as ds:
            out[card] = exp.slice_map(ds.load())
    return out


def _class_groups(m) -> np.ndarray:
    """Each class of the page (by its code) -> the group most of its lines are in."""
    codes = m.fit.codes(m.offsets)
    out = np.full(int(codes.max()) + 1, -1)
    for c in np.unique(codes):
        lab = m.grouping.labels[(codes == c) & (m.grouping.labels >= 0)]
        out[c] = np.bincount(lab).argmax()
    return out


#: Groups, groups of two slices and groups cut in two below the tolerance
#: (slices.split_groups) per page: the SMs a card measured split more or fewer pairs.
GROUPS = {"h200-ae2f9": (86, 8, 16), "h200-af95c": (88, 6, 18), "h200-cdafb": (88, 6, 17),
          "h100-6cc50": (72, 8, 17),
          "h100-f0085": (72, 8, 17), "h100-e68d5": (72, 8, 17), "h100-6115c": (72, 8, 17)}


@slow
@pytest.mark.parametrize("model,slices", [("h200", 94), ("h100", 80)])
def test_cards_of_a_model_count_the_same_slices_in_the_same_groups(maps, model, slices):
    """Three H200s (32 SMs each; GPU-cdafb632's an l2_hash run, 2026-12-07) and four H100s (32, 32, 16 and 32 SMs: the third stopped
    adding SMs when 16 split no more groups than 8). Every card counts the same slices; the
    groups of any two cards never cross (each group of one card is a group of the other, or
    one of two halves of it): cards differ only in the pairs of slices their SMs split."""
    cards = [k for k in PAGES if k.startswith(model)]
    for card in cards:
        m = maps[card]
        assert m.grouping.by_class and m.grouping.slices is not None
        assert m.grouping.slices.count == slices
        assert m.grouping.slices.interval == (slices, slices)
        # held-out lines, each placed by its own latencies (97.85 % line by line; from 16
        # SMs a line tells the two slices of a cut pair apart less surely: 99.68-99.73 %)
        assert m.fit.found and m.fit.accuracy >= 0.995
        groups, pairs, cut = GROUPS[card]
        assert (m.grouping.count, int((m.grouping.slices.per_group == 2).sum()),
                m.grouping.split) == (groups, pairs, cut), card
        assert m.grouping.slices.per_group.max() <= 2
    vs = benchmark_script("slices_vs_card")
    for a, b in ((a, b) for i, a in enumerate(cards) for b in cards[i + 1:]):
        same, _finer_b, _finer_a, crossing = vs.group_agreement(maps[a], maps[b])
        assert not crossing, (a, b, crossing)
        assert same >= min(maps[a].grouping.count, maps[b].grouping.count) - 4, (a, b)


@slow
def test_the_groups_of_one_slice_show_no_two_clusters(maps):
    """A group of two slices is cut where each half of every class's lines finds two
    clusters alike, each holding the other's apart (slices.split_groups); after the cuts no
    group of one slice shows any (the separation is noise's, far under SPLIT_Z), and each
    holds a slice's share of the classes."""
    from gpumem.analysis import slices as S

    for card, m in maps.items():
        sc = m.grouping.slices
        assert sc is not None
        codes = m.fit.codes(m.offsets)
        use = ~m.held_out & (m.grouping.labels >= 0)
        of = _class_groups(m)
        worst = 0.0
        for k in np.flatnonzero(sc.per_group == 1):
            ids = np.flatnonzero(of == k)
            _full, even, odd = S._halves_of_lines(m.matrix, codes, use, ids)
            z = min(S.separation(even, odd)[1], S.separation(odd, even)[1])
            worst = max(worst, z)
            assert abs(ids.size - sc.unit) <= 2, (card, k)
        assert worst < S.SPLIT_Z / 2, (card, worst)


@slow
def test_the_slices_match_the_l2s_size_in_640_kb_slices(maps):
    """An H100 reports a 50 MB L2: 80 slices of 640 KB. An H200 reports 60 MB (96 such
    slices); its pages reach 94 (which the data say, not the size)."""
    assert maps["h100-6cc50"].grouping.slices.count == (50 << 20) // (640 << 10)
    assert maps["h200-ae2f9"].grouping.slices.count <= (60 << 20) // (640 << 10)


@slow
def test_an_h200_page_passes_hoppers_values_as_l2_hash_reports_it():
    """An H200's dense page passes hopper's values (its slice count held to 94); its hash
    accuracy (1.00) has no fleet value: the sparse runs the fleet learned from found no hash."""
    from gpumem.contracts.findings import evaluate
    from gpumem.interop.compare import device_from_attrs
    from gpumem.plugin.registry import get_plugins

    (nc,) = sorted((DATA / PAGES["h200-af95c"]).glob("l2_*.nc"))
    with xr.open_dataset(nc) as ds:
        raw = ds.load()
    found = exp.L2Hash().analyze(raw)
    h200 = device_from_attrs(raw.attrs)
    assert "H200" in h200.name
    expected = get_plugins().expected_values("hopper", h200)
    by = {f.name: f for f in evaluate(found, expected, "l2_hash")}
    assert by["l2_slices.slices"].status == "pass"
    assert not [f.name for f in by.values() if f.status == "fail"]
    # the sparse runs found no hash: their accuracy is no fleet value, so none judges this
    assert not [e for e in expected if e.name == "l2_slices.hash_accuracy"]
    assert by["l2_slices.hash_accuracy"].value == 1.0


@pytest.mark.parametrize("job", ["gpu5aa27-job", "gpud9505-job"])
def test_more_h100s_recorded_the_same_count(job):
    """Two more H100s' l2_hash runs as their manifests recorded them (their raw files are not
    kept: the repository's size): 80 slices in 55 groups (recorded before pairs of slices were
    cut below the tolerance), judged pass against hopper's H100 value."""
    import json

    manifest = DATA / "h100-s29" / job / "hash" / "manifest.json"
    (entry,) = json.loads(manifest.read_text())["entries"].values()
    f = entry["findings"]
    assert entry["experiment"] == "l2_hash"
    assert f["l2_slices.slices"]["value"] == 80 and f["l2_slices.slices"]["status"] == "pass"
    assert f["l2_slices.groups"]["value"] == 55 and f["l2_slices.hash_accuracy"]["value"] == 1.0
