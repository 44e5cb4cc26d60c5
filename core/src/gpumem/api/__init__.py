"""What a plugin may import from gpumem: the declared public API.

Every plugin (an architecture, an experiment with its figures) needs what is here; the rest
comes in three parts, each for one kind of plugin: :mod:`gpumem.api.simulator` (simulators and
device backends), :mod:`gpumem.api.formats` (file formats) and :mod:`gpumem.api.figures` (an
experiment's draw functions). Only what these four modules list is promised to stay: modules
behind them may move. The in-tree plugins import nothing else from gpumem (a test,
``tests/test_api.py``, fails when one does), so they show what a third party can rely on.
Test code may also use :mod:`gpumem.testing` (planted-truth caches for simulator tests).

A name that moved to one of the parts is still found here, with a ``DeprecationWarning``
that names its new module (until 0.2).

Importing it loads no CuPy, Numba or matplotlib: a plugin's ``plugin.py`` costs a few
milliseconds more than gpumem's own contract classes. :mod:`gpumem.api.figures` loads
matplotlib: import it inside the draw function (the report calls it), never at a plugin's
top level.
"""

from __future__ import annotations

import importlib
import typing
import warnings

from gpumem import __version__, hookimpl
from gpumem.contracts.allowances import fleet_expected, published_expected
from gpumem.contracts.api_moves import MOVED as _MOVED
from gpumem.contracts.architecture import Architecture
from gpumem.contracts.device import (
    PLACEMENT_PADS,
    BulkRequest,
    ChaseRequest,
    ChaseResult,
    Device,
    DeviceInfo,
    StreamRequest,
    StreamResult,
)
from gpumem.contracts.errors import (
    DeviceUnavailable,
    GpumemError,
    PointSkipped,
    ProbeUnsupported,
    UsageError,
)
from gpumem.contracts.expected_blocks import (
    MEI_CHU,
    MEI_CHU_REPO,
    dram_copy_expected,
    mei_chu_data,
    pattern_expected,
    smem_expected,
    tlb_expected,
)
from gpumem.contracts.experiment import (
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
from gpumem.contracts.findings import Expected, Finding, exact, l2_size_pair, latency_pair
from gpumem.contracts.generic import expected_values as device_property_expected
from gpumem.contracts.presentation import Presentation, ReportFigure, ReportSection
from gpumem.plugin.arch import ArchitecturePlugin
from gpumem.plugin.registry import Plugins, load_plugins
from gpumem.run.runner import RunRequest, run

__all__ = [
    "__version__", "Architecture", "ArchitecturePlugin", "Axis", "BulkRequest",
    "ChaseRequest", "ChaseResult", "Device", "DeviceInfo", "device_property_expected",
    "DeviceUnavailable", "dram_copy_expected", "exact", "Expected", "Experiment", "Finding",
    "fleet_expected", "published_expected",
    "GpumemError", "hookimpl", "l2_size_pair", "latency_pair", "load_plugins",
    "median_over_repeats",
    "MEI_CHU", "mei_chu_data", "MEI_CHU_REPO", "pattern_expected", "PLACEMENT_PADS", "Plan",
    "Plugins", "point_medians", "PointSkipped", "Presentation", "ProbeUnsupported",
    "repeat_count", "repeat_seed", "repeated", "ReportFigure", "ReportSection", "run",
    "RunContext", "RunRequest", "smem_expected", "StreamRequest", "StreamResult",
    "tlb_expected", "UsageError", "Var",
]

def __getattr__(name: str) -> typing.Any:
    """A moved name, from its new module, with a warning that says where it went."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'gpumem.api' has no attribute '{name}'")
    if name not in _WARNED:  # `from gpumem.api import X` asks twice (hasattr, getattr)
        _WARNED.add(name)
        warnings.warn(f"gpumem.api.{name} moved to {module}: import it from there "
                      f"(gpumem.api will stop giving it in 0.2)", DeprecationWarning,
                      stacklevel=2)
    return getattr(importlib.import_module(module), name)


#: The moved names warned of in this process (once each).
_WARNED: set[str] = set()
