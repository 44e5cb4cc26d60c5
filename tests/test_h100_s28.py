"""What five H100s showed on 2026-12-06 (tests/data/h100-s28, README there), held as tests:

* the driver clears memory gpumem frees, and DRAM reads run slower meanwhile: ``ilp``'s first
  repeats after a footprint change read slow in the committed runs made before CudaDevice
  waited for it, and not in those made after; the wait (``CLEAR_BYTES_PER_S``) covers every
  slow window measured;
* ``l2_bandwidth``'s 32-blocks-a-line points, which read two rates from repeat to repeat on an
  idle card, no longer mark a run contended, while its 8-a-line points still would.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from gpumem.contracts.contention import assess
from gpumem.contracts.device import DeviceInfo
from gpumem.contracts.experiment import RunContext
from gpumem.cuda.device import CLEAR_BYTES_PER_S
from gpumem.experiments.l2_bandwidth import L2Bandwidth
from gpumem.results.schema import attr_safe

DATA = Path(__file__).resolve().parent / "data"
HERE = DATA / "h100-s28"
H100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", compute_capability="9.0",
                  sm_count=132, l2_bytes=50 << 20, memory_bytes=80 << 30, clock_mhz=1980.0)


def first_repeats(path: Path, n: int = 2) -> np.ndarray:
    """The first ``n`` repeats of ``ilp``'s first point at its largest footprint (the first
    timed after the footprint before was freed), over that point's median."""
    v = xr.open_dataset(path)["gbs"].isel(footprint=-1, order=0, reverse=0, ilp=0).values
    v = v[np.isfinite(v)]
    return v[:n] / np.median(v)


def test_ilp_read_slow_after_a_free_until_the_device_waited_for_the_clearing():
    guarded = sorted((HERE / "gpufa20e-guard").glob("*/*/ilp-*.nc"))
    before = [p for p in sorted(DATA.glob("**/ilp-*.nc")) if p not in guarded]
    assert len(before) >= 17 and len(guarded) == 3
    slow = [p for p in before if first_repeats(p).min() < 0.95]
    assert len(slow) >= 0.8 * len(before), [p.parent.parent.name for p in before
                                            if p not in slow]
    for p in guarded:
        assert np.all(np.abs(first_repeats(p, 4) - 1) < 0.02), p


def test_the_wait_covers_every_slow_window_measured():
    """After a cudaFree by the process itself, DRAM reads ran below 0.9 of their rate for a
    window growing with the bytes freed (3.4 ms a GiB, 0.1 s for 32 GiB); CudaDevice waits
    bytes / CLEAR_BYTES_PER_S, which must be at least that window at every size."""
    runs = json.loads((HERE / "gpud3139-scrub" / "scrub.json").read_text())["runs"]
    own = [r for r in runs if r["freed_by"] == "self"]
    assert {r["gib"] for r in own} == {1, 4, 16, 32}
    for r in own:
        window = 0.0
        for t, gbs, *_mem in r["trace"]:
            if gbs >= 0.9 * r["base"]:
                break
            window = t
        assert window > 0, r["gib"]  # slow it was
        assert window <= (r["gib"] << 30) / CLEAR_BYTES_PER_S, (r["gib"], window)


def plan_attrs() -> dict:
    """l2_bandwidth's plan attributes as a run writes them into its raw file."""
    return {f"plan_{k}": attr_safe(v)
            for k, v in L2Bandwidth().plan(RunContext("hopper", H100)).attrs.items()}


@pytest.fixture(scope="module")
def flagged():
    """The run whose l2_bandwidth was marked contended on an idle card (all2)."""
    path = next((HERE / "gpu88b76-job" / "all2").glob("*/l2_bandwidth-*.nc"))
    return xr.load_dataset(path)


def test_l2_bandwidths_coalesced_points_are_no_evidence_of_a_neighbour(flagged):
    assert assess(flagged).found  # as recorded, before the experiment said which points
    flagged.attrs.update(plan_attrs())
    assert not assess(flagged).found


def test_a_neighbour_still_shows_in_l2_bandwidths_own_points(flagged):
    raw = flagged.copy(deep=True)
    raw.attrs.update(plan_attrs())
    gbs = raw["gbs"].values  # share 8: a repeat halved in a tenth of the points
    sel = gbs[0]
    flat = sel.reshape(-1, sel.shape[-1])
    ran = np.flatnonzero(np.isfinite(flat[:, 0]))
    flat[ran[::10], 1] /= 2
    gbs[0] = flat.reshape(sel.shape)
    raw["gbs"].values = gbs
    c = assess(raw)
    assert c.found and c.scattered >= 5
