"""An H100's whole runs, its dense L2 page and its reference sweep (tests/data/h100-s29, README
there): what they showed about the tool, held here.

* l2_bandwidth's coalesced points (32 blocks a line) scatter by themselves on an idle card;
  the experiment said so in its plan, but the run stores plan attributes as ``plan_`` + name
  and the detector read the bare name: run 2 (all2) exited 1 as contended on an idle H100.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr
from gpumem.contracts.contention import assess

HERE = Path(__file__).parent / "data" / "h100-s29" / "gpu6cc50-job"


@pytest.fixture(scope="module", params=["all1", "all2"])
def l2_bandwidth_raw(request):
    path = next((HERE / request.param).glob("*/l2_bandwidth-*.nc"))
    return request.param, xr.load_dataset(path)


def test_an_idle_cards_l2_bandwidth_run_is_not_contended(l2_bandwidth_raw):
    run, raw = l2_bandwidth_raw
    if run == "all2":  # as recorded: the detector missed the experiment's word
        assert "scattered" in raw.attrs["gpumem_contention"]
    c = assess(raw)
    assert not c.found, c.reason()
    assert c.measured >= 50  # the 8-a-line points were still judged
