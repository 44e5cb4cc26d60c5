"""The CUDA backend's own hook specifications, added by core's plugin through
``gpumem_addhooks`` (as pytest's plugins add theirs with ``pytest_addhooks``): only the CUDA
device asks for CUDA kernels, so the hook belongs to it, not to every plugin's contract.
A plugin implements it as any hook, with :data:`gpumem.hookimpl`; it loads after core, whose
plugin adds these specs first. Importing this module never imports CuPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from gpumem.contracts.device import KernelSource

hookspec = pluggy.HookspecMarker("gpumem")


@hookspec(firstresult=True)
def gpumem_kernel_source(arch: str, probe: str) -> KernelSource | None:
    """Return the tuned CUDA kernel for ``probe`` on ``arch``, or ``None`` to use core's own.

    Stops at the first non-``None`` result, each plugin asked on its own (one that raises is
    named and the next asked). The runner hands the answer to the device backend it opens
    (``DeviceBackend.open(index, arch, kernel_source)``). The probes are named in
    :data:`gpumem.contracts.device.PROBES` (``pointer_chase``, ``stream``, ...); the kernel must
    keep the
    probe's argument contract documented in ``gpumem/cuda/kernels``. An
    :class:`~gpumem.api.ArchitecturePlugin` answers from ``kernels/`` for the probes it names.

    :param arch: the architecture being measured.
    :param probe: the probe name.
    :return: a :class:`gpumem.KernelSource` or ``None``.

    Example::

        from importlib.resources import files
        from gpumem.api import hookimpl
        from gpumem.api.simulator import KernelSource

        @hookimpl
        def gpumem_kernel_source(arch, probe):
            if arch == "hopper" and probe == "pointer_chase":
                code = files("gpumem_hopper.kernels").joinpath("chase.cu").read_text()
                return KernelSource(code=code, name="pointer_chase", options=("-std=c++17",))
            return None
    """
