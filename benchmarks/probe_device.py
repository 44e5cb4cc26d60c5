"""The device a one-off probe script measures: the first CUDA GPU as hopper, or with
``--sim`` the built-in simulator's H200 (to try a script without a GPU; its figures say
nothing of a hypothesis about the hardware). Shared by the scripts run as
``python benchmarks/NAME.py`` (this folder is then on ``sys.path``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_sim_flag(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sim", action="store_true", help="the built-in simulator's H200 (to "
                    "try the script without a GPU; its figures say nothing of the hypothesis)")


def open_hopper(sim: bool) -> Any:
    """A Device: CUDA device 0 as hopper, or the simulator's packaged hopper config."""
    if sim:
        from gpumem.plugin.registry import get_plugins
        from gpumem.sim.device import SimDevice

        return SimDevice(get_plugins().hook.gpumem_simulator_config(arch="hopper",
                                                                    simulator="sim"), "hopper")
    from gpumem.cuda.backend import CudaBackend

    return CudaBackend().open(0, "hopper")
