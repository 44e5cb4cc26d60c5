"""What a plugin may import from gpumem: the declared public API.

Everything a plugin (an architecture, an experiment with its figures, a device backend, a
simulator, a file format) needs is importable from here, and only what is here is promised to
stay: modules behind it may move. The in-tree plugins import nothing else from gpumem (a
test, ``tests/test_api.py``, fails when one does), so they show what a third party can rely
on. Test code may also use :mod:`gpumem.testing` (planted-truth caches for simulator tests).

Importing it loads no CuPy, Numba or matplotlib: a plugin's ``plugin.py`` costs a few
milliseconds more than gpumem's own contract classes. The drawing helpers of an experiment's
figures are :mod:`gpumem.api.figures`, which loads matplotlib: import it inside the draw
function (the report calls it), never at a plugin's top level.
"""

from __future__ import annotations

from gpumem import __version__, hookimpl
from gpumem.arch_plugin import ArchitecturePlugin
from gpumem.architecture import Architecture
from gpumem.chains import chain_offsets
from gpumem.compare import load_source
from gpumem.cuda.device import generic_kernel_source
from gpumem.device import (
    PLACEMENT_PADS,
    BulkRequest,
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceBackend,
    DeviceInfo,
    Discovery,
    KernelSource,
    StreamRequest,
    StreamResult,
)
from gpumem.errors import DeviceUnavailable, GpumemError, PointSkipped, ProbeUnsupported, UsageError
from gpumem.expected_blocks import (
    MEI_CHU,
    MEI_CHU_REPO,
    dram_copy_expected,
    mei_chu_data,
    pattern_expected,
    smem_expected,
    tlb_expected,
)
from gpumem.experiment import (
    Axis,
    Experiment,
    Plan,
    RunContext,
    Var,
    median_over_repeats,
    point_medians,
    repeat_count,
    repeat_seed,
    repeated,
)
from gpumem.findings import Expected, Finding, exact, latency_pair
from gpumem.formats import Converted, Format, FormatError
from gpumem.generic import expected_values as device_property_expected
from gpumem.interop.calibrate import Calibrated, calibrate
from gpumem.plugins import Plugins, load_plugins
from gpumem.presentation import Presentation, ReportFigure, ReportSection
from gpumem.runner import RunRequest, run
from gpumem.safe_write import OutputError, write_text
from gpumem.sim.config import (
    CacheLevel,
    Dram,
    Interconnect,
    SetIndex,
    SharedMemory,
    SimConfig,
    SimConfigError,
    Throughput,
    Timer,
    TlbLevel,
)
from gpumem.simulator import Simulator

__all__ = [
    "__version__", "Architecture", "ArchitecturePlugin", "Axis", "BulkRequest", "CacheLevel",
    "Calibrated", "calibrate",
    "chain_offsets", "ChaseRequest", "ChaseResult", "Converted", "Device", "DeviceBackend",
    "PLACEMENT_PADS",
    "DeviceInfo", "device_property_expected", "DeviceUnavailable", "Discovery", "Dram",
    "dram_copy_expected", "exact",
    "Expected", "Experiment", "Finding", "Format", "FormatError", "generic_kernel_source",
    "GpumemError", "hookimpl", "Interconnect", "KernelSource", "latency_pair", "load_plugins",
    "load_source", "median_over_repeats", "MEI_CHU", "mei_chu_data", "MEI_CHU_REPO",
    "OutputError", "pattern_expected", "Plan", "Plugins", "point_medians", "PointSkipped",
    "Presentation", "ProbeUnsupported", "repeat_count", "repeat_seed", "repeated",
    "ReportFigure", "ReportSection", "run",
    "RunContext", "RunRequest", "SetIndex", "SharedMemory", "SimConfig", "SimConfigError",
    "Simulator", "smem_expected", "StreamRequest", "StreamResult", "Throughput", "Timer",
    "tlb_expected", "TlbLevel", "UsageError", "Var", "write_text",
]

