"""``l2_slices`` against planted slice maps: the slice count, every line's slice, each SM's
latency to each slice and the XOR hash, recovered exactly, with and without timer noise;
and a hash that is not linear reported as not found, never as a result."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from gpumem.analysis import slices as S
from gpumem.contracts.xor_hash import parity
from gpumem.experiments.l2_slices import LINE, PAGE, slice_map
from gpumem.testing import SLICE_MASKS, sliced_l2
from helpers import planted_run


def _run(cli, tmp_path, jitter: float, planted=None):
    """``l2_slices`` on a planted config (``sliced_l2``'s by default): it and the raw data."""
    planted = planted or sliced_l2(0, jitter=jitter)
    return planted, planted_run(cli, tmp_path, planted, "l2_slices")


@pytest.mark.parametrize("jitter", [0.0, 5.0], ids=["exact", "jitter5"])
def test_a_planted_slice_map_is_recovered_exactly(cli, tmp_path, jitter):
    planted, raw = _run(cli, tmp_path, jitter)
    cfg = planted.config
    l2 = cfg.caches[0]
    m = slice_map(raw)
    assert m is not None
    # the slice count, and every line in the group of its slice (a one-to-one map)
    assert m.grouping.count == 8 and m.grouping.unassigned == 0
    truth = l2.slice_of(cfg.base_address + m.offsets)
    pairs = set(zip(m.grouping.labels.tolist(), truth.tolist(), strict=True))
    assert len(pairs) == 8 and len({g for g, _ in pairs}) == len({t for _, t in pairs}) == 8
    # each SM's latency to each slice: the planted row
    slice_of_group = dict(pairs)
    for j, sm in enumerate(m.sms):
        row = l2.slice_latency[sm % len(l2.slice_latency)]
        got = [m.profile[g, j] for g in range(8)]
        want = [row[slice_of_group[g]] for g in range(8)]
        assert got == pytest.approx(want, abs=1.0 if jitter else 0.0)
    # the hash: in-page masks span what the planted ones do within a page, the buffer's
    # masks span the planted ones; held-out lines all predicted
    inpage = (PAGE - 1) & ~(LINE - 1)
    assert S.span(m.fit.masks) == S.span(S.gf2_basis([x & inpage for x in SLICE_MASKS]))
    assert S.span(m.fit.buffer_masks) == S.span(list(SLICE_MASKS))
    assert m.fit.found and m.fit.linear and m.fit.accuracy == 1.0
    assert m.fit.chance < 0.2  # a constant guess per page: about one in eight
    # the SMs were added while they split groups: two rounds of 8 on 16 SMs
    assert len(m.sms) == 16
    from gpumem.experiments.l2_slices import L2Slices

    f = {x.name: x for x in L2Slices().analyze(raw)}
    assert f["l2_slices.groups"].value == 8 and f["l2_slices.unsplit"].value == 0
    assert f["l2_slices.latency_min"].value == pytest.approx(200.0, abs=1)
    assert f["l2_slices.latency_max"].value == pytest.approx(280.0, abs=1)
    assert S.span(f["l2_slices.hash_buffer_masks"].value) == S.span(list(SLICE_MASKS))
    # the in-page deltas that keep every line's slice: the planted masks' null space
    deltas = np.arange(PAGE // LINE, dtype=np.int64) * LINE
    kept = np.all([parity(deltas & m) == 0 for m in SLICE_MASKS], axis=0)
    assert S.span(f["l2_slices.hash_invariants"].value) == {int(d) for d in deltas[kept]}


def _lines(n_pages: int = 16, per_page: int = 256, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([p * PAGE + np.sort(rng.choice(PAGE // LINE, per_page, False)) * LINE
                           for p in range(n_pages)]).astype(np.int64)


def test_a_hash_that_is_not_linear_is_not_found():
    """Slices drawn from a random table of address bits 7-20: no XOR mask keeps a group's
    parity, the fit predicts held-out lines no better than a constant guess per page, and
    it says so."""
    off = _lines()
    table = np.random.default_rng(1).integers(0, 8, 1 << 14)
    labels = table[(off >> 7) & ((1 << 14) - 1)]
    held = np.arange(off.size) % 4 == 3
    fit = S.fit_hash(off, labels, held, line_bits=7, page_bits=21, buffer_bits=25)
    assert not fit.found and fit.masks == [] and not fit.buffer_masks
    assert "no better than chance" in fit.note


def test_a_linear_hash_is_found_whatever_the_pages_add():
    """Each page's own (physical) bits add a constant to the slice: the in-page masks are
    found all the same, and no mask over the buffer's page bits is claimed."""
    off = _lines()
    rng = np.random.default_rng(2)
    page_const = rng.integers(0, 8, 16)  # not a linear function of the page number
    masks = [0x2480, 0x10900, 0x41200]
    sl = sum(parity(off & m) << i for i, m in enumerate(masks)) ^ page_const[off >> 21]
    held = np.arange(off.size) % 4 == 3
    fit = S.fit_hash(off, sl, held, line_bits=7, page_bits=21, buffer_bits=25)
    assert fit.found and fit.linear and fit.accuracy == 1.0
    assert S.span(fit.masks) == S.span(masks)
    assert fit.buffer_masks == []


def test_grouping_leaves_a_mistimed_line_out_and_says_how_the_count_moves():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 2000)
    rows = np.array([[200, 220, 240, 260], [260, 240, 220, 200]], float).T  # slices x SMs
    m = rows[truth] + rng.normal(0, 0.5, (2000, 2))
    m[7] = [900.0, 905.0]  # one line mis-timed at both SMs
    g = S.grouping(m, 2.0)
    assert g.count == 4 and g.unassigned == 1 and g.labels[7] == -1
    assert g.count_range == (4, 4)
    assert len(set(zip(g.labels[g.labels >= 0], truth[g.labels >= 0], strict=True))) == 4


def test_export_sim_carries_the_slice_map_and_reproduces_every_lines_latency(cli, tmp_path):
    """``gpumem export sim`` of a run with l2_slices writes the slice map into the level
    that serves the L2-only path: a line's simulated L2 hit from each SM then costs what the
    planted config charges (the codes may be numbered otherwise)."""
    from gpumem.sim.config import SimConfig

    planted, raw = _run(cli, tmp_path, 0.0)
    out = tmp_path / "exported"
    res = cli("export", "sim", str(tmp_path / "run"), "--out", str(out))
    assert res.code == 0, res.err
    (toml,) = sorted(out.glob("*.toml"))
    cfg = SimConfig.load(toml)
    got = cfg.level(cfg.paths["cg"][0])
    want = planted.config.caches[0]
    assert got.slices == 8 and S.span(got.slice_masks) == S.span(list(SLICE_MASKS))
    assert len(got.slice_latency) == cfg.sm_count == 16
    addr = planted.config.base_address + slice_map(raw).offsets
    for sm in range(16):
        a = np.array(got.slice_latency[sm])[got.slice_of(addr)]
        b = np.array(want.slice_latency[sm])[want.slice_of(addr)]
        assert np.array_equal(a, b), sm
    assert "l2_slices/l2_slices.slice_latency" in toml.read_text()


def test_slices_that_latency_merged_are_named_and_64_slices_are_fitted_per_page():
    """64 slices by six masks, each page adding its own constant: every held-out line is
    predicted (pages that showed a slice's code to no fitted line take it from the pages
    they are a shift of). Two slices merged into one group (every SM sees them alike): the
    masks are still found, and the merged group is named with its two codes."""
    off = _lines()
    masks = [0x2480, 0x10900, 0x41200, 0x8880, 0x100100, 0x3000]
    consts = np.random.default_rng(3).integers(0, 64, 16)
    sl = sum(parity(off & m) << i for i, m in enumerate(masks)) ^ consts[off >> 21]
    held = np.arange(off.size) % 4 == 3
    fit = S.fit_hash(off, sl, held, line_bits=7, page_bits=21, buffer_bits=25)
    assert fit.found and S.span(fit.masks) == S.span(masks) and fit.accuracy == 1.0
    merged = np.where(sl == 63, 62, sl)
    fit = S.fit_hash(off, merged, held, line_bits=7, page_bits=21, buffer_bits=25)
    assert S.span(fit.masks) == S.span(masks) and fit.unsplit == {62: 2}


def test_a_file_whose_attributes_lie_is_refused_with_one_line(cli, tmp_path):
    """A results file is hostile input: a page that is no power of two, or lines outside the
    buffer, are refused by name, not fitted."""
    _, raw = _run(cli, tmp_path, 0.0)
    for attrs, coords, says in (({"plan_page": 3 << 20}, None, "plan_page"),
                                ({"plan_footprint": "lots"}, None, "plan_footprint"),
                                ({}, 32 << 20, "inside the buffer")):
        bad = raw.copy()
        bad.attrs.update(attrs)
        if coords is not None:
            bad = bad.assign_coords(line=bad["line"].values + coords)
        with pytest.raises(ValueError, match=says):
            slice_map(bad)


def test_a_hash_that_names_a_third_of_the_lines_is_not_found():
    """96 slices homed by line number mod 96: the XOR part (mod 32) is fitted and places 30 %
    of held-out lines, far above chance (0.5 %) but most lines wrong: no result (an H200's
    67-73 groups got one spurious mask at 3.6 % against 2.2 % chance)."""
    from gpumem.analysis.slices import MIN_ACCURACY, fit_hash
    from gpumem.experiments.l2_slices import sample_lines

    x = sample_lines(0)
    held = np.arange(x.size) % 4 == 3
    fit = fit_hash(x, (x // 128) % 96, held, line_bits=7, page_bits=21, buffer_bits=25)
    assert fit.accuracy_interval[0] > 10 * fit.chance and fit.accuracy < MIN_ACCURACY
    assert not fit.found and "under the 50%" in fit.note


def _merged_one_pair_a_pass(m, labels, tol):
    """The merge as first written: every group's median worked out again after each merge."""
    lab = labels.copy()
    while True:
        groups = np.unique(lab[lab >= 0])
        if groups.size < 2:
            return lab
        cent = np.stack([np.median(m[lab == g], axis=0) for g in groups])
        cheb = np.max(np.abs(cent[:, None, :] - cent[None, :, :]), axis=2)
        np.fill_diagonal(cheb, np.inf)
        i, j = np.unravel_index(int(np.argmin(cheb)), cheb.shape)
        if cheb[i, j] >= tol:
            return lab
        lab[lab == groups[j]] = groups[i]


def test_the_incremental_merge_gives_the_same_groups():
    """Only the merged group's median is redone after a merge (an H200's 200-odd groups: 12.5
    s of a 20 s run before): the same labels as redoing all, ties and NaN lines included."""
    from gpumem.analysis.slices import _merged

    rng = np.random.default_rng(1)
    for t in range(40):
        n, k = int(rng.integers(50, 400)), int(rng.integers(1, 6))
        m = np.round(rng.normal(0, 3, (n, k)) + rng.integers(0, 5, (n, 1)) * 2.0, 1)
        if t % 5 == 0:
            m[rng.integers(0, n)] = np.nan
        lab = rng.integers(-1, int(rng.integers(2, 60)), n)
        tol = float(rng.uniform(0.5, 4))
        assert np.array_equal(_merged(m, lab, tol), _merged_one_pair_a_pass(m, lab, tol))


@pytest.mark.parametrize("jitter", [0.0, 5.0], ids=["exact", "jitter5"])
def test_a_planted_table_hash_is_recovered_exported_and_reproduced(cli, tmp_path, monkeypatch,
                                                                   jitter):
    """A hash no XOR masks express (an H200's is one): eight slices by a random table over
    the classes of a line's address within a page modulo two deltas. Sampling every line of
    two pages, the experiment recovers the slice count, every line's slice, the deltas and
    the table (up to the groups' numbering), and puts every held-out line in its group;
    ``export sim`` carries the table (the first page's: the second is a shift of it, as an
    H200's pages are of each other), and the exported card's L2 hits cost what the planted
    config charges, line by line and SM by SM."""
    import gpumem.experiments.l2_slices as exp
    from gpumem.contracts.xor_hash import class_index
    from gpumem.sim.config import SimConfig
    from gpumem.testing import SLICE_KERNEL, table_sliced_l2

    monkeypatch.setattr(exp.L2Slices, "page", 256 << 10)
    monkeypatch.setattr(exp.L2Slices, "pages", 2)
    monkeypatch.setattr(exp.L2Slices, "lines_per_page", None)
    planted, raw = _run(cli, tmp_path, jitter, table_sliced_l2(0, jitter=jitter))
    run = tmp_path / "run"
    m = slice_map(raw)
    assert m is not None and m.grouping.count == 8 and m.grouping.unassigned == 0
    l2 = planted.config.caches[0]
    base = planted.config.base_address
    truth = l2.slice_of(base + m.offsets, base)
    pairs = set(zip(m.grouping.labels.tolist(), truth.tolist(), strict=True))
    assert len(pairs) == 8  # one-to-one: every line in its slice's group
    assert not m.fit.masks and S.span(m.fit.kernel) == S.span(list(SLICE_KERNEL))
    assert m.fit.found and m.fit.accuracy == 1.0 and m.fit.seen == 1.0
    f = {x.name: x for x in exp.L2Slices().analyze(raw)}
    assert f["l2_slices.hash_invariants"].value == list(SLICE_KERNEL)
    slice_of_group = dict(pairs)
    assert [slice_of_group[g] for g in f["l2_slices.hash_table"].value] == l2.slice_table
    assert "l2_slices.hash_masks" not in f
    # the export: the table and each SM's row, every line's L2 hit as the planted config's
    out = tmp_path / "exported"
    res = cli("export", "sim", str(run), "--out", str(out))
    assert res.code == 0, res.err
    (toml,) = sorted(out.glob("*.toml"))
    got = SimConfig.load(toml).level("l2")
    assert got.slices == 8 and got.slice_kernel == list(SLICE_KERNEL) and not got.slice_masks
    assert got.slice_footprint == 512 << 10  # the run's buffer: its first page is the table's
    addr = base + m.offsets
    for sm in range(16):
        a = np.array(got.slice_latency[sm])[got.slice_of(addr, base, 512 << 10)]
        b = np.array(l2.slice_latency[sm])[l2.slice_of(addr, base)]
        assert a == pytest.approx(b, abs=1.0 if jitter else 0.0), sm
    # the classes as the simulator numbers them: the table's own order
    lines = np.arange(512, dtype=np.int64) << 7
    idx = class_index(lines, SLICE_KERNEL, 7, 18)
    assert np.array_equal(np.asarray(l2.slice_table)[idx], l2.slice_lines()[:512])


@pytest.mark.slow  # an export and 32 SMs x 16,384 lines simulated: about 30 s of CPU
@pytest.mark.parametrize("card", ["h200-s23/dense", "h200-s24/dense",
                                  "h200-s37/gpucdafb-job1/hash"])
def test_an_h200_page_exported_gives_every_lines_l2_hit_within_2_percent(cli, tmp_path, card,
                                                                        monkeypatch):
    """Issue 44 item 4 on three H200s (GPU-ae2f9ce6, GPU-af95c491, GPU-cdafb632): l2_slices
    over every line of one 2 MB page (benchmarks/l2_slices_dense.py on the first two, the
    table hash placing 97.85 % and 99.85 % of held-out lines; ``gpumem run l2_hash`` on the
    third, 100 %), exported (``gpumem export sim``: the table, the deltas, each
    SM's latency to each slice) and the same page simulated (``gpumem run l2_hash``, which
    reads every line of one page): every line's L2 hit from every
    SM the card measured within 2 % of the card's (max 1.44 %, 1.62 % and 1.44 %), the lines held
    out of the fit too. The simulated run measures every round of SMs the card did (its own
    rounds stop at 16 SMs, which split as many groups as 8 there)."""
    from pathlib import Path

    from gpumem.experiments import l2_slices as exp

    def every_round(self, raw, ctx):
        have = {int(s) for s in raw["sm"].values}
        left = [b for b in exp.batches(max(1, ctx.device.sm_count)) if not set(b) <= have]
        return {"sm": sorted(left[0])} if left else None

    monkeypatch.setattr(exp.L2Slices, "refine", every_round)

    data = Path(__file__).parent / "data" / card
    cfg = tmp_path / "card.toml"
    res = cli("export", "sim", str(data), "--out", str(cfg))
    assert res.code == 0, res.err
    out = tmp_path / "sim"
    res = cli("run", "l2_hash", "--device", "sim", "--sim-config", str(cfg), "--arch",
              "hopper", "--out", str(out))  # every line of one page, as the card's was read
    assert res.code == 0, res.err

    def raw(folder):
        (nc,) = sorted(folder.rglob("l2_*-*.nc"))
        with xr.open_dataset(nc) as ds:
            return slice_map(ds.load())

    card_map, sim_map = raw(data), raw(out)
    assert np.array_equal(card_map.offsets, sim_map.offsets)
    cols = [sim_map.sms.index(s) for s in card_map.sms]
    rel = np.abs(sim_map.matrix[:, cols] - card_map.matrix) / card_map.matrix
    assert np.nanmax(rel) < 0.02
    assert np.nanmax(rel[card_map.held_out]) < 0.02
    assert card_map.fit.found and card_map.fit.accuracy >= 0.95


def _mask_scores_by_matmul(offsets, cells, lo, n):
    """The scores as first written: each mask's parities by a float matrix product."""
    from gpumem.analysis.slices import CELL_AGREE, cell_runs

    x, starts, size = cell_runs(offsets, cells)
    if x.size == 0:
        return np.zeros(1 << n)
    bits = ((x[:, None] >> np.arange(lo, lo + n)) & 1).astype(np.float32)
    ks = np.arange(1 << n)
    mbits = ((ks[:, None] >> np.arange(n)) & 1).astype(np.float32).T
    par = (bits @ mbits).astype(np.int64) & 1
    ones = np.add.reduceat(par, starts, axis=0)
    share = np.maximum(ones, size[:, None] - ones) / size[:, None]
    return ((share >= CELL_AGREE) * size[:, None]).sum(axis=0) / size.sum()


def test_the_mask_scores_by_xor_tables_are_the_matrix_products():
    """Each mask's parities built from the one without its top bit (a byte each) instead of
    a float product: the same scores, an H100 page's 16,384 masks 2.5x faster."""
    from gpumem.analysis.slices import mask_scores

    rng = np.random.default_rng(4)
    for _ in range(12):
        lines, n = int(rng.integers(50, 3000)), int(rng.integers(1, 14))
        x = rng.integers(0, 1 << (n + 9), lines).astype(np.int64) // 128 * 128
        cells = rng.integers(-1, int(rng.integers(2, 80)), lines)
        assert np.array_equal(mask_scores(x, cells, 7, n), _mask_scores_by_matmul(x, cells, 7, n))
