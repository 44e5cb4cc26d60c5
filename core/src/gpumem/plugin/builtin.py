"""Core's own plugin: registered first, exactly like an installed plugin.

It contributes what does not belong to any one architecture: the device-agnostic
experiments, the ``cuda`` device backend (and its own hook, ``gpumem_kernel_source``), the
built-in ``sim`` simulator, and the expected values of the generic architecture ``sm_XY`` of
a GPU no plugin describes (:mod:`gpumem.contracts.generic`).
"""

from __future__ import annotations

from gpumem import hookimpl


@hookimpl
def gpumem_addhooks(pluginmanager):
    """The CUDA backend's own hook (gpumem_kernel_source), before any plugin implements it."""
    from gpumem.cuda import hookspecs as cuda_hookspecs

    pluginmanager.add_hookspecs(cuda_hookspecs)


@hookimpl
def gpumem_register_experiments(register):
    from gpumem.experiments.bandwidth import Bandwidth
    from gpumem.experiments.bandwidth_levels import BandwidthLevels
    from gpumem.experiments.bulk import BulkCopy
    from gpumem.experiments.cache_structure import CacheStructure
    from gpumem.experiments.dsmem import DsmemBandwidth, DsmemLatency
    from gpumem.experiments.l2_bandwidth import L2Bandwidth
    from gpumem.experiments.l2_map import L2SmMap
    from gpumem.experiments.l2_slices import L2Hash, L2Slices
    from gpumem.experiments.l2_twins import L2Twins
    from gpumem.experiments.latency import LatencyLadder
    from gpumem.experiments.loads import AsyncCopy, IlpSweep
    from gpumem.experiments.p2p import PeerAccess
    from gpumem.experiments.patterns import Patterns
    from gpumem.experiments.smem import SmemBandwidth, SmemLatency
    from gpumem.experiments.tlb_structure import TlbStructure

    for experiment in (LatencyLadder, Bandwidth, SmemLatency, SmemBandwidth, CacheStructure,
                       TlbStructure, Patterns, IlpSweep, AsyncCopy, L2SmMap, L2Slices, L2Hash,
                       L2Twins, BandwidthLevels, L2Bandwidth, PeerAccess, DsmemLatency,
                       DsmemBandwidth, BulkCopy):
        register(experiment)


@hookimpl
def gpumem_expected_values(arch, device):
    from gpumem.contracts import generic

    return generic.expected_values(device) if generic.is_generic(arch) else None


@hookimpl
def gpumem_register_devices(register):
    from gpumem.cuda.backend import CudaBackend

    register(CudaBackend())


@hookimpl
def gpumem_register_simulators(register):
    from gpumem.sim.simulator import BuiltinSimulator

    register(BuiltinSimulator())


@hookimpl
def gpumem_register_formats(register):
    from gpumem.interop.calibrate import SimFormat
    from gpumem.interop.importers.gpu_benches import GpuBenchesFormat
    from gpumem.interop.importers.mt4g import Mt4gFormat

    register(Mt4gFormat())
    register(GpuBenchesFormat())
    register(SimFormat())
