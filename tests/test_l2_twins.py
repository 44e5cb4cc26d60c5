"""``l2_twins``: two L2 slices at one latency from every SM, told apart by loading one of
them (the second signal of issue 44). Planted on the simulator: the balanced table hash's
twins (two slices at one spot of the grid: latency makes one group of them) with a slice
queue; the experiment must find the two slices, every class in its own, and must say "not
split" where the queue adds nothing the timer's noise does not hide."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from gpumem.analysis import twins as T
from gpumem.contracts.device import HAMMER_INFLIGHT, ChaseRequest
from gpumem.experiments import l2_slices as exp
from gpumem.experiments import l2_twins as tw
from gpumem.sim.device import SimDevice
from gpumem.sim.throughput import slice_wait
from gpumem.testing import balanced_sliced_l2
from helpers import planted_run


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 256 KB (2,048 lines, 512 classes of four), as the planted table hash's."""
    monkeypatch.setattr(exp.L2Slices, "page", 256 << 10)


def _findings(raw: xr.Dataset) -> dict:
    return {f.name: f for f in tw.L2Twins().analyze(raw)}


def _classes_by_slice(planted, raw: xr.Dataset) -> tuple[dict[int, set[int]], dict]:
    """The truth: each class of the twins' group and the slice its lines are homed in; and
    the slice the tests put it in."""
    m = exp.slice_map(raw[list(tw.MAP_VARS)])
    assert m is not None and m.classes is not None
    cfg = planted.config
    home = cfg.caches[0].slice_of(cfg.base_address + m.offsets, cfg.base_address,
                                  int(raw.attrs["plan_footprint"]))
    truth: dict[int, set[int]] = {}
    for c, s in zip(m.classes.tolist(), home.tolist(), strict=True):
        truth.setdefault(int(c), set()).add(int(s))
    tests = tw.tests_from(raw)
    (group,) = {t.group for t in tests}
    found = T.group_split(group, 2, tests).slice_of
    return truth, found


@pytest.mark.parametrize("jitter", [0.0, 5.0], ids=["exact", "jitter5"])
def test_planted_twins_are_split_every_class_in_its_slice(cli, tmp_path, small_pages, jitter):
    planted = balanced_sliced_l2(1, jitter=jitter, slice_bandwidth=32.0)
    raw = planted_run(cli, tmp_path, planted, "l2_twins")
    f = _findings(raw)
    assert f["l2_twins.groups_tested"].value == 1
    assert f["l2_twins.groups_split"].value == 1
    assert f["l2_twins.slices_seen"].value == planted.truth["l2_slices.slices"] == 6
    assert f["l2_twins.agreement"].value == 1.0
    truth, found = _classes_by_slice(planted, raw)
    twins = planted.truth["twins"]
    # each class of the group one twin's, and the tests' two slices exactly the twins'
    assert all(len(truth[c]) == 1 and truth[c] <= set(twins) for c in found)
    pairs = {(found[c], next(iter(truth[c]))) for c in found}
    assert len(pairs) == 2 and {a for a, _ in pairs} == {0, 1} and \
        {b for _, b in pairs} == set(twins)
    # the slowed lines waited the queue the model gives 14 SMs (within its +-20 %), the
    # other groups' lines nothing
    rows = np.asarray(planted.config.caches[0].slice_latency)
    wait = slice_wait(14, HAMMER_INFLIGHT, 128, 32.0, float(rows[:, twins].mean()))
    for d, ctl in zip(f["l2_twins.delay"].value,
                      f["l2_twins.delay"].note.split(": ")[1].split(", "), strict=True):
        assert 0.8 * wait < d < 1.2 * wait
        assert abs(float(ctl)) < 3 * max(jitter, 1.0)
    # each split's separation, with its interval, clears what a split needs
    sep = f["l2_twins.separation"]
    for z, lo, hi in zip(sep.value, *sep.interval, strict=True):
        assert T.SPLIT_Z <= lo <= z <= hi


def test_a_queue_the_noise_hides_splits_nothing_and_says_why(cli, tmp_path, small_pages):
    """A slice that serves 4 KB a cycle queues 14 SMs' requests for under a cycle: within
    5 cycles of timer jitter the tests see no two clusters, and the group stays one."""
    planted = balanced_sliced_l2(1, jitter=5.0, slice_bandwidth=4096.0)
    raw = planted_run(cli, tmp_path, planted, "l2_twins")
    f = _findings(raw)
    assert f["l2_twins.groups_tested"].value == 1
    assert f["l2_twins.groups_split"].value == 0
    assert f["l2_twins.slices_seen"].value == 4  # the four slices alone in a group
    assert "not split: the delays fall in no two clusters" in f["l2_twins.groups_split"].note
    assert len(f["l2_twins.delay"].value) == 1  # no second test after one that did not split
    assert abs(f["l2_twins.delay"].value[0]) < 5  # the group's lines waited as the others
    # the separation carries its interval: a cut of noise reaches well under a split's
    (z,), ((lo,), (hi,)) = f["l2_twins.separation"].value, f["l2_twins.separation"].interval
    assert lo <= z <= hi and lo < T.SPLIT_Z


def test_a_device_without_a_slice_queue_skips_it_and_says_what_it_needs(cli, tmp_path,
                                                                       small_pages):
    planted = balanced_sliced_l2(1)
    cfg = tmp_path / "planted.toml"
    planted.config.save(cfg)
    res = cli("run", "l2_twins", "--device", "sim", "--sim-config", str(cfg), "--arch",
              "hopper", "--out", str(tmp_path / "run"))
    assert res.code == 0, res.err
    assert "loads from other SMs beside a chase" in res.out
    assert not list((tmp_path / "run").rglob("l2_twins-*.nc"))


def test_a_file_with_unknown_probe_roles_is_refused(cli, tmp_path, small_pages):
    planted = balanced_sliced_l2(1, slice_bandwidth=32.0)
    raw = planted_run(cli, tmp_path, planted, "l2_twins")
    bad = raw.copy(deep=True)
    bad["probe_role"].values[0, 0] = 7
    with pytest.raises(ValueError, match="probe_role"):
        tw.L2Twins().analyze(bad)
    bad = raw.copy(deep=True)
    bad["test_group"].values[0] = 99
    with pytest.raises(ValueError, match="test_group names groups the map does not have"):
        tw.L2Twins().analyze(bad)
    # a hammer count that is no number: that test gives no rate, the others still do
    bad = raw.copy(deep=True)
    bad["test_hammer_sms"] = bad["test_hammer_sms"].astype(float)
    bad["test_hammer_sms"].values[:] = np.nan
    f = _findings(bad)
    assert f["l2_twins.groups_split"].value == 1 and "l2_twins.slice_bandwidth" not in f
    assert "while other SMs load" in f["l2_twins.groups_split"].method


def test_the_simulated_queue_follows_littles_law():
    assert slice_wait(0, 64, 128, 32.0, 300.0) == 0.0
    waits = [slice_wait(n, 64, 128, 32.0, 300.0) for n in range(1, 20)]
    assert all(a < b for a, b in zip(waits, waits[1:], strict=False))
    # saturated: every request of 16 SMs in the queue, a line served every 4 cycles
    assert slice_wait(16, 64, 128, 32.0, 300.0) == pytest.approx(16 * 64 * 4 - 300 + 38, abs=1)


def test_the_simulated_hammer_slows_only_the_hammered_slice():
    planted = balanced_sliced_l2(1, slice_bandwidth=32.0)
    cfg = planted.config
    l2 = cfg.caches[0]
    page = 256 << 10
    lines = np.arange(0, page, 128)
    home = l2.slice_of(cfg.base_address + lines, cfg.base_address, page)
    probe = np.concatenate([lines[home == s][8:10] for s in range(6)])
    pattern = tuple(int(x) for x in probe)
    dev = SimDevice(cfg, "hopper")

    def chase(hammer: tuple[int, ...], sms: tuple[int, ...]) -> np.ndarray:
        return dev.pointer_chase(ChaseRequest(
            footprint=page, stride=128, record=len(pattern), warmup=len(pattern),
            order="pattern", path="cg", sm=0, pattern=pattern, hammer=hammer,
            hammer_sms=sms)).latency.reshape(6, 2)

    alone = chase((), ())
    twin = planted.truth["twins"][0]
    beside = chase(tuple(int(x) for x in lines[home == twin][:4]), tuple(range(2, 10)))
    slowed = (beside - alone).min(axis=1) > 100
    assert slowed.tolist() == [s == twin for s in range(6)]


@pytest.mark.parametrize("bad, match", [
    ({"hammer": (0,)}, "go together"),
    ({"hammer": (0,), "hammer_sms": (0,)}, "own SM"),
    ({"hammer": (64,), "hammer_sms": (1,)}, "whole 128 B lines"),
    ({"hammer": (1 << 20,), "hammer_sms": (1,)}, "inside the footprint"),
    ({"hammer": (0,), "hammer_sms": (1, 1)}, "distinct"),
    ({"hammer": tuple(range(0, 65 * 128, 128)), "hammer_sms": (1,)}, "at most 64"),
])
def test_a_hammer_request_is_checked(bad, match):
    req = ChaseRequest(footprint=1 << 16, stride=128, record=4, order="pattern",
                       pattern=(0, 128), path="cg", **bad)
    with pytest.raises(ValueError, match=match):
        req.validate()


def test_a_test_whose_hammered_line_is_not_slowed_does_not_split():
    """Two clusters, but the hammered class's own line among the fast ones: the delay is
    not the hammered slice's, and the test says so."""
    rng = np.random.default_rng(1)
    classes = np.arange(20)
    roles = np.full(20, T.GROUP)
    roles[15] = T.HAMMERED
    d = rng.normal(0, 1, (20, 6))
    d[:10] += 500
    t = T.judge_test(0, 15, classes, roles, d)
    assert not t.split and "hammered class's own line" in t.why
    roles[15], roles[3] = T.GROUP, T.HAMMERED
    t = T.judge_test(0, 3, classes, roles, d)
    assert t.split and t.slowed[:10].all() and not t.slowed[10:].any()
    assert t.delay == pytest.approx(500, abs=3)


def test_export_sim_takes_the_split_map_and_the_slice_queue_and_splits_again(cli, tmp_path,
                                                                              small_pages):
    """``export sim`` of an l2_twins run: six slices (the twins apart), each class's lines in
    its own slice as the planted config homes them, and the slice's rate Little's law gives
    from the delay within 10 % of the planted 32 B a cycle; l2_twins on the exported config
    splits the twins again."""
    from gpumem.sim.config import SimConfig

    planted = balanced_sliced_l2(1, jitter=5.0, slice_bandwidth=32.0)
    raw = planted_run(cli, tmp_path, planted, "l2_twins")
    f = _findings(raw)
    assert f["l2_slices.slices"].value == 6 and f["l2_slices.groups"].value == 6
    assert f["l2_slices.group_slices"].value == [1] * 6
    assert f["l2_slices.hash_accuracy"].value >= 0.99
    assert 0.9 * 32 < f["l2_twins.slice_bandwidth"].value < 1.1 * 32
    out = tmp_path / "exported"
    res = cli("export", "sim", str(tmp_path / "run"), "--out", str(out))
    assert res.code == 0, res.err
    (toml,) = sorted(out.glob("*.toml"))
    cfg = SimConfig.load(toml)
    got, want = cfg.level(cfg.paths["cg"][0]), planted.config.caches[0]
    assert got.slices == 6 and 0.9 * 32 < got.slice_bandwidth < 1.1 * 32
    lines = np.arange(0, 256 << 10, 128)
    a = got.slice_of(cfg.base_address + lines, cfg.base_address, 256 << 10)
    b = want.slice_of(planted.config.base_address + lines, planted.config.base_address,
                      256 << 10)
    assert len(set(zip(a.tolist(), b.tolist(), strict=True))) == 6  # the same partition
    again = tmp_path / "again"
    again.mkdir()
    res = cli("run", "l2_twins", "--device", "sim", "--sim-config", str(toml), "--arch",
              "hopper", "--out", str(again / "run"))
    assert res.code == 0, res.err
    (nc,) = sorted((again / "run").rglob("l2_twins-*.nc"))
    with xr.open_dataset(nc) as ds:
        f2 = _findings(ds.load())
    # the twins are two slices at one latency there too: latency merges them, contention
    # splits them, at the same rate
    assert f2["l2_twins.groups_tested"].value == 1 and f2["l2_twins.groups_split"].value == 1
    assert f2["l2_slices.slices"].value == 6 and f2["l2_slices.groups"].value == 6
    assert 0.9 * 32 < f2["l2_twins.slice_bandwidth"].value < 1.1 * 32
