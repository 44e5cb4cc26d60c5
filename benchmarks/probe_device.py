"""The device a one-off probe script measures: the first CUDA GPU as hopper, or with
``--sim`` the built-in simulator's H200 (to try a script without a GPU; its figures say
nothing of a hypothesis about the hardware). Shared by the scripts run as
``python benchmarks/NAME.py`` (this folder is then on ``sys.path``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def probe_parser(doc: str) -> argparse.ArgumentParser:
    """The probe scripts' command line: ``--json OUT.json`` and ``--sim``; each adds its own."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--sim", action="store_true", help="the built-in simulator's H200 (to "
                    "try the script without a GPU; its figures say nothing of the hypothesis)")
    return ap


def open_hopper(sim: bool) -> Any:
    """A Device: CUDA device 0 as hopper, or the simulator's packaged hopper config."""
    if sim:
        from gpumem.plugin.registry import get_plugins
        from gpumem.sim.device import SimDevice

        return SimDevice(get_plugins().hook.gpumem_simulator_config(arch="hopper",
                                                                    simulator="sim"), "hopper")
    from gpumem.cuda.backend import CudaBackend

    return CudaBackend().open(0, "hopper")
