"""``l2_hash``: ``l2_slices`` over every line of one page, the hash judged where the fit saw
every class (issue 44 item 3 from the command line, not a benchmark's patched constants).
Not part of ``all`` (four times ``l2_slices``' chasing); named, it runs; ``export sim``
takes its table over ``l2_slices``' where a run has both."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from gpumem.experiments import l2_slices as exp
from gpumem.experiments.l2_slices import LINE, slice_map
from gpumem.plugin.registry import get_plugins
from gpumem.run.resolve import resolve_experiments
from gpumem.testing import SLICE_KERNEL, table_sliced_l2


def test_all_leaves_it_out_and_naming_it_runs_it():
    ps = get_plugins()
    every = [c.name for c in resolve_experiments(ps, "hopper", ["all"])]
    assert "l2_slices" in every and "l2_hash" not in every
    assert [c.name for c in resolve_experiments(ps, "hopper", ["l2_hash"])] == ["l2_hash"]


def test_it_samples_every_line_of_one_page():
    from gpumem.contracts.experiment import RunContext
    from gpumem.sim.device import sim_device_info

    info = sim_device_info(table_sliced_l2(0).config)
    lines = exp.L2Hash()._lines(RunContext("hopper", info, seed=3))
    assert np.array_equal(lines, np.arange(exp.PAGE // LINE) * LINE)
    sparse = exp.L2Slices()._lines(RunContext("hopper", info, seed=3))
    assert sparse.size == exp.PAGES * exp.LINES_PER_PAGE


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 256 KB (2,048 lines), as the planted table hash's, to keep the chases short."""
    monkeypatch.setattr(exp.L2Slices, "page", 256 << 10)
    monkeypatch.setattr(exp.L2Slices, "pages", 2)
    monkeypatch.setattr(exp.L2Slices, "lines_per_page", 128)  # 6 % of a page's lines


def test_the_dense_page_finds_the_table_the_sparse_run_cannot_and_export_takes_it(
        cli, tmp_path, small_pages):
    planted = table_sliced_l2(0, jitter=5.0)
    cfg = tmp_path / "planted.toml"
    planted.config.save(cfg)
    run = tmp_path / "run"
    res = cli("run", "l2_slices", "l2_hash", "--device", "sim", "--sim-config", str(cfg),
              "--arch", "hopper", "--out", str(run))
    assert res.code == 0, res.err

    def findings(name):
        (nc,) = sorted(run.rglob(f"{name}-*.nc"))
        with xr.open_dataset(nc) as ds:
            raw = ds.load()
        return raw, {f.name: f for f in exp.L2Hash().analyze(raw)}

    sparse_raw, sparse = findings("l2_slices")
    dense_raw, dense = findings("l2_hash")
    assert sparse_raw["line"].size == 2 * 128 and dense_raw["line"].size == 2048
    m = slice_map(dense_raw)
    assert m.grouping.count == 8 and m.fit.found and m.fit.accuracy == 1.0 and m.fit.seen == 1.0
    assert dense["l2_slices.hash_invariants"].value == list(SLICE_KERNEL)
    table = dense["l2_slices.hash_table"].value
    assert None not in table and "every" in dense["l2_slices.groups"].method
    # 128 random lines a page: no table the held-out lines confirm
    assert "l2_slices.hash_table" not in sparse or None in sparse["l2_slices.hash_table"].value
    # not found: said with its best fit's share, never given as a value to judge
    acc = sparse["l2_slices.hash_accuracy"]
    assert acc.value is None and acc.status == "unresolved" and acc.candidates[0] < 0.95
    assert "not found" in acc.note
    out = tmp_path / "exported"
    res = cli("export", "sim", str(run), "--out", str(out))
    assert res.code == 0, res.err
    (toml,) = sorted(out.glob("*.toml"))
    text = toml.read_text()
    assert "l2_hash/l2_slices.hash_table" in text and "l2_slices/l2_slices.hash_table" not in text
    report = tmp_path / "report"  # both maps drawn, each from its own experiment
    res = cli("report", str(run), "--out", str(report))
    assert res.code == 0, res.err
    assert (report / "l2_hash_map.png").is_file() and (report / "l2_slice_map.png").is_file()
