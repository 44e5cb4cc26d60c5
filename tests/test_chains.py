"""The chase chains are one definition for the simulator and the CUDA device."""

from __future__ import annotations

import numpy as np
import pytest
from gpumem.contracts.chains import (
    chain_array,
    chain_offsets,
    mix_vec,
    permutation_params,
    permute_vec,
)
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**31))
def test_permute_is_a_permutation(n, seed):
    p = permute_vec(np.arange(n, dtype=np.uint64), permutation_params(n, seed))
    assert sorted(p.tolist()) == list(range(n))


def test_numba_permute_matches_numpy():
    from gpumem.sim.engine import _permute

    for n, seed in [(1, 0), (7, 1), (1000, 42), (2**20 + 3, 9)]:
        params = permutation_params(n, seed)
        xs = np.arange(min(n, 500), dtype=np.uint64)
        ref = permute_vec(xs, params)
        got = [_permute(int(x), *params) for x in xs]
        assert got == ref.tolist()


def test_numba_mix_matches_numpy():
    """The slice table's page shifts: the host's mix_vec is the kernel's _mix."""
    from gpumem.sim.primitives import _U, _mix
    from numba import njit

    @njit
    def one(x):
        return _mix(_U(x))

    xs = np.array([0, 1, 2, 12345, 2**40 + 7, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    assert [int(one(x)) for x in xs] == mix_vec(xs).tolist()
    assert mix_vec(np.zeros(1, np.uint64))[0] == 0


@pytest.mark.parametrize("order, footprint, stride", [
    ("sequential", 4096, 128), ("sequential", 4100, 4), ("random", 8192, 128),
    ("random", 1 << 16, 32), ("scattered", 1 << 16, 512), ("scattered", 3000, 12)])
def test_chain_array_walks_the_offsets(order, footprint, stride):
    arr = chain_array(footprint, stride, order, seed=5)
    offs = chain_offsets(footprint, stride, order, seed=5, count=300)
    j = offs[0] // 4
    walked = [j]
    for _ in range(299):
        j = int(arr[j])
        walked.append(j)
    assert walked == (offs // 4).tolist()


@settings(max_examples=40, deadline=None)
@given(blocks=st.integers(1, 300), per_block=st.integers(1, 64), seed=st.integers(0, 2**31))
def test_scattered_reads_one_element_of_each_block_in_block_order(blocks, per_block, seed):
    stride = 4 * per_block
    offs = chain_offsets(blocks * stride, stride, "scattered", seed, 2 * blocks)
    assert (offs // stride).tolist() == [k % blocks for k in range(2 * blocks)]
    assert (offs % 4 == 0).all()
    if per_block >= 16 and blocks >= 64:  # the element inside the block is spread, not fixed
        assert len(set((offs % stride).tolist())) > per_block // 2


@pytest.mark.parametrize("order", ["random", "scattered"])
def test_sim_records_the_chain_order_for(order):
    from gpumem.contracts.device import ChaseRequest
    from gpumem.plugin.registry import get_plugins
    from gpumem.sim.device import SimDevice

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = SimDevice(cfg, "hopper")
    res = dev.pointer_chase(ChaseRequest(footprint=1 << 16, stride=256, record=700, warmup=7,
                                         order=order, seed=11))
    assert res.index.tolist() == (chain_offsets(1 << 16, 256, order, 11, 700, start=7)
                                  // 4).tolist()


def test_sim_records_the_chain_order():
    from gpumem.contracts.device import ChaseRequest
    from gpumem.plugin.registry import get_plugins
    from gpumem.sim.device import SimDevice

    cfg = get_plugins().hook.gpumem_simulator_config(arch="hopper", simulator="sim")
    dev = SimDevice(cfg, "hopper")
    res = dev.pointer_chase(ChaseRequest(footprint=1 << 16, stride=128, record=100, warmup=7,
                                         order="random", seed=11))
    assert res.index.tolist() == (chain_offsets(1 << 16, 128, "random", 11, 100, start=7)
                                  // 4).tolist()
