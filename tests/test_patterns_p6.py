"""P6 (a fresh page in a fresh 512 MB region each access) pooled over several chains: on an
H200 its 29 accesses per chain fall into two modes, and one chain's median jumped between
them from run to run (753 against 822 in one GPU job, intervals apart). The experiment now
chases it P6_CHAINS times, the L2 evicted before each, each behind the next placement pad,
and the finding is the median of all their accesses."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.contracts.device import PLACEMENT_PADS
from gpumem.contracts.experiment import RunContext
from gpumem.experiments.patterns import P6_CHAINS, P6_QUICK_CHAINS, Patterns
from gpumem.plugin.registry import get_plugins
from gpumem.sim.device import SimDevice


class _Logged:
    """The simulator, with every chase and stream it is asked for logged in order."""

    def __init__(self, dev):
        self._dev, self.calls = dev, []

    def __getattr__(self, name):
        return getattr(self._dev, name)

    def pointer_chase(self, req):
        self.calls.append(("chase", req))
        return self._dev.pointer_chase(req)

    def stream(self, req):
        self.calls.append(("stream", req))
        return self._dev.stream(req)


@pytest.mark.parametrize("quick, chains", [(False, P6_CHAINS), (True, P6_QUICK_CHAINS)])
def test_p6_is_chased_several_times_from_an_evicted_l2_and_pooled(quick, chains):
    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = _Logged(SimDevice(cfg, "hopper"))
    exp = Patterns()
    ctx = RunContext("hopper", dev.info, quick=quick)
    raw = exp.sweep(dev, ctx, lambda n: None)
    p6 = [i for i, (kind, r) in enumerate(dev.calls)
          if kind == "chase" and r.footprint > 4 << 30 and r.warmup == 0
          and len(r.pattern) <= 31]
    assert len(p6) == chains
    assert [dev.calls[i][1].placement for i in p6] == \
        [k % len(PLACEMENT_PADS) for k in range(chains)]
    assert all(dev.calls[i - 1][0] == "stream" for i in p6)  # the L2 evicted before each
    (f,) = [x for x in exp.analyze(raw) if x.name == "lat.pattern.P6"]
    per_chain = len(dev.calls[p6[0]][1].pattern) - 1  # the cold first access left out
    assert f"median of {chains * per_chain} accesses" in f.method
    assert f"{chains} pooled" in f.method
    assert f.interval[0] <= f.value <= f.interval[1]


def test_version_1_files_with_one_p6_chain_still_analyse():
    from pathlib import Path

    from gpumem.results.io import open_raw

    (path,) = (Path(__file__).parent / "data" / "h200-reruns" / "run1").rglob("patterns-*.nc")
    (f,) = [x for x in Patterns().analyze(open_raw(path)) if x.name == "lat.pattern.P6"]
    assert f.value == 676.0 and "pooled" not in f.method
    assert np.isfinite(f.interval).all()
