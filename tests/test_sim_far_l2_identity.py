"""The chase kernels' outputs pinned (issue 31, item 3): latencies, element indices and
serving levels of chases over every speed regime of ``benchmarks/bench_sim.py chase`` (and
a few more orders, strides, paths and SMs) on the four in-tree architectures, from the
generic kernel and the path-specialised one, hashed. The hashes were taken from the kernels
before the far-L2 speed work (hopper's again when its packaged config was recalibrated,
2026-12-05: DRAM latency, L2 sizes, TLB miss penalty; and its chase 18 when a tenth of its
far hits became slow, the other 18 unchanged; chases 1, 6-8, 10, 12-14 and 16 when the
packaged config took an H200's L2 slice map, 2026-12-05, and the same chases again when that
map's lines were grouped by class, 2026-12-06, and again when pairs of slices were cut
below the tolerance, 2026-12-06); any change to the model's results
shows here.

Regenerate (only for an intended change of results): ``PYTHONPATH=tests/fixtures python
tests/test_sim_far_l2_identity.py`` prints the table (generic and specialised kernels
checked equal).
"""

from __future__ import annotations

import hashlib

import pytest
from gpumem.contracts.device import ChaseRequest
from gpumem.contracts.errors import PointSkipped
from gpumem.plugin.registry import get_plugins
from gpumem.sim import engine, specialise
from gpumem.sim.device import SimDevice
from helpers import slow_beyond

ARCHS = ("fermi", "kepler", "maxwell", "hopper")

#: (footprint, stride, order, path, sm, seed[, accesses]): bench_sim's regimes, then other
#: shapes
CHASES = (
    (128 << 10, 128, "sequential", "ca", 0, 0),
    (16 << 20, 128, "sequential", "ca", 0, 0),
    (48 << 20, 128, "random", "ca", 0, 0),
    (1 << 30, 128, "sequential", "ca", 0, 0),
    (8 << 30, 128, "random", "ca", 0, 0),
    (48 << 20, 128, "random", "ca", 5, 3),
    (40 << 20, 32, "random", "cg", 7, 1),
    (96 << 20, 4096, "random", "ca", 1, 2),
    (3 << 20, 64, "scattered", "ca", 2, 4),
    (24 << 20, 2 << 20, "random", "ca", 0, 5),
    (700 << 10, 96, "random", "tex", 0, 6),
    # TLB working sets of a few pages to a few more than its first level holds
    (6 << 20, 4096, "random", "ca", 0, 7),
    (10 << 20, 128, "random", "ca", 0, 8),
    (30 << 20, 4096, "random", "cg", 0, 9),
    (80 << 20, 4096, "random", "ca", 3, 10),
    (200 << 20, 256, "random", "ca", 0, 11),
    (300 << 20, 4096, "random", "ca", 0, 12),
    (1 << 30, 2 << 20, "sequential", "ca", 0, 13),
    # ... and the far-L2 regime past its first lap (393216 lines)
    (48 << 20, 128, "random", "ca", 0, 14, 900_000),
)
N = 150_000  # accesses a chase: over engine.SPECIALISE_MIN
RECORD = 3000


def outputs(arch: str, mode: str) -> dict[int, str]:
    """Hash of (latencies, indices, levels) of each chase in :data:`CHASES` (``None``
    where the arch refuses it), ``mode``: ``"generic"`` or ``"specialised"``."""
    cfg = get_plugins().hook.gpumem_simulator_config(arch=arch, simulator="sim")
    dev = SimDevice(cfg, arch)
    got: dict[int, str] = {}
    seen = []
    real = engine.simulate_chase

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append(out)
        return out

    engine.simulate_chase = spy
    old = engine.SPECIALISE_MIN, specialise.COMPILE_AFTER
    engine.SPECIALISE_MIN = engine.SPECIALISE_MIN if mode == "specialised" else 1 << 62
    specialise.COMPILE_AFTER = 0
    try:
        for i, (fp, stride, order, path, sm, seed, *n) in enumerate(CHASES):
            if path not in cfg.paths:
                path = "ca"
            seen.clear()
            try:
                dev.pointer_chase(ChaseRequest(footprint=fp, stride=stride, order=order,
                                               path=path, sm=sm % cfg.sm_count, seed=seed,
                                               warmup=(n or [N])[0] - RECORD,
                                               record=RECORD))
            except PointSkipped:
                got[i] = None
                continue
            lat, idx, lvl = seen[0]
            h = hashlib.sha256(lat.tobytes() + idx.tobytes() + lvl.tobytes()).hexdigest()
            got[i] = h[:16]
    finally:
        engine.simulate_chase = real
        engine.SPECIALISE_MIN, specialise.COMPILE_AFTER = old
    return got


EXPECTED: dict[str, dict[int, str | None]] = {
    'fermi': {
        0: 'b6df69b5d4c6dd3b', 1: 'a0317bcfe8445e8f', 2: '2098585edceabcb2',
        3: 'c0cf73022da5dfbd', 4: None, 5: '0bc4c82491eebdc1', 6: '98a746c02728a650',
        7: '49f3e2ea1dd5a6f1', 8: 'ad31d5150f6ad3b9', 9: '1c3d2abb4aec6709',
        10: '62390bf431da8d70', 11: 'b4ea053b05a4db80', 12: '7cdef9717886d990',
        13: 'ce83ef76912e0928', 14: 'd9ecc5b9f1a9aa5e', 15: 'aec88c701f82b2b4',
        16: '43c4507992aec2c7', 17: '6da85290e5d31194', 18: 'fd5676b06b88f8f8',
    },
    'kepler': {
        0: '7f5a1067e01499c1', 1: '8e10367dd58dbb12', 2: '5f5a706903fbd2c2',
        3: '15af79d191f577de', 4: None, 5: '201ec7496f755c73', 6: '16639430f0863922',
        7: 'e4b213f7884752c0', 8: '9394e1df884461f7', 9: 'c8afc474a244ea52',
        10: 'a871dc02f2b13bf2', 11: '3e28b8c1f92b83ea', 12: 'e7edd7706cba3b5c',
        13: '4a905f087b71cc82', 14: '890a197605ca9a6b', 15: 'e3d08d9dc8cbedbd',
        16: '8702b59b646539db', 17: 'b4c4c3bdfa3598fa', 18: 'dd59aa36b773739e',
    },
    'maxwell': {
        0: '7dee712822d87850', 1: '6efda0a7e9659033', 2: 'd7dd407fe0b0e8bb',
        3: 'a9e748b37d8531b3', 4: None, 5: '0664a5f2b1e513e8', 6: '7c3c844f0f2d2b01',
        7: '21d265880bbf2f91', 8: '7e14dce213d9ea82', 9: '26e10c7ddb9efa44',
        10: 'c47e00acf45f0f7e', 11: '905440a2933dc971', 12: 'bc9f02f3ba70f2ab',
        13: 'e43911b89462a93e', 14: '64ad51654bc7ad25', 15: '78d887c06491cb9c',
        16: '3195a852cc25f560', 17: 'f5727fb44c16bbb5', 18: '81092fd125b9dca2',
    },
    'hopper': {
        0: '5cd33a11c4175e64', 1: 'b2ebd79c85f6c9b4', 2: '61944facac687c7d',
        3: 'a1c9e3df80d9b4ea', 4: 'b14b567d74b5505f', 5: '8ab202d9b5bdade5',
        6: '797c70a94bffd9f2', 7: 'bde35f19ca1f96d8', 8: '2be64b02f063ec6e',
        9: '28ae93ee502792f9', 10: '8a947b58ca1492c7', 11: '0b71e62821bd9cfd',
        12: 'e54157bb89ab1881', 13: '7afe8166a6c7ab18', 14: 'b3c6f87600a41f7a',
        15: 'f63c52e96d836db2', 16: '159136166c38cad7', 17: '39638ac3ded05f0f',
        18: 'c68301c8c5ecd136',
    },
}


_CASES = [(a, m) for m in ("specialised", "generic") for a in ARCHS]


# the generic kernel for every architecture; hopper's specialised kernels in the developer's
# command, every architecture's in CI (each compiles several, 13-25 s of CPU on a fresh clone)
@pytest.mark.parametrize("arch,mode", slow_beyond(
    _CASES, keep=[f"{a}-generic" for a in ARCHS] + ["hopper-specialised"],
    ids=[f"{a}-{m}" for a, m in _CASES]))
def test_chase_outputs_are_unchanged(arch, mode):
    assert outputs(arch, mode) == EXPECTED[arch]


if __name__ == "__main__":
    table = {}
    for a in ARCHS:
        g, s = outputs(a, "generic"), outputs(a, "specialised")
        assert g == s, (a, g, s)
        table[a] = g
    print(table)
