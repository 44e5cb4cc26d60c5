"""gpumem: dissect GPU memory hierarchies with microbenchmarks.

Plugins import what they need from :mod:`gpumem.api`, the declared public surface (the
``hookimpl`` marker, the contract classes, the helpers); the names here are gpumem's own.
Importing gpumem never imports CuPy or Numba; the CUDA device and the simulator engine load
them only when a device of theirs is opened.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"
#: The distribution on PyPI: "gpumem" there is an unrelated VRAM monitor. The import package
#: and the command keep the name gpumem.
DISTRIBUTION = "gpumem-dissect"

#: Marker for hook implementations in plugins: ``@gpumem.hookimpl``.
hookimpl = pluggy.HookimplMarker("gpumem")

from gpumem.contracts.architecture import Architecture  # noqa: E402
from gpumem.contracts.device import (  # noqa: E402
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceBackend,
    DeviceInfo,
    Discovery,
    KernelSource,
)
from gpumem.contracts.experiment import Axis, Experiment, Plan, RunContext, Var  # noqa: E402
from gpumem.contracts.findings import Expected, Finding  # noqa: E402
from gpumem.contracts.simulator import Simulator  # noqa: E402

__all__ = [
    "Architecture", "Axis", "ChaseRequest", "ChaseResult", "Device", "DeviceBackend",
    "DeviceInfo", "Discovery", "Expected", "Experiment", "Finding", "KernelSource", "Plan",
    "RunContext", "Simulator", "Var", "__version__", "hookimpl",
]
