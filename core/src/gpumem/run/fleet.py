"""Every GPU of a node: one ``gpumem run`` process per GPU, all writing one run directory.

Each GPU gets its own operating-system process running the ordinary single-device ``gpumem
run`` (``--device BACKEND:N``), so a driver error, a crash or an out-of-memory on one GPU ends
that process only: the others finish and keep their results. The processes share the run
directory; each writes its files under its own device key, and the manifest (the one shared
file) is updated under a lock (:mod:`gpumem.results.store`). Every process logs to
``logs/BACKENDN.log`` in the run directory. All GPUs stay visible to every process, so the
peer-to-peer experiment can reach the other GPUs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpumem.contracts.errors import Interrupted, UsageError
from gpumem.plugin.registry import Plugins
from gpumem.results.store import RunStore
from gpumem.run.request import DEFAULT_RESULTS_ROOT, RunRequest
from gpumem.run.resolve import default_out, resolve_arch
from gpumem.run.runner import with_arch

#: exit codes of a single-device ``gpumem run`` and what they mean for its GPU
_STATUS = {0: "complete", 1: "failed", 2: "unavailable", 130: "interrupted"}
LOGS = "logs"


@dataclass
class DeviceRun:
    """One GPU's process: how it ended and where its log is."""

    device: str
    returncode: int | None = None
    log: Path | None = None
    wall_s: float = 0.0
    last_line: str = ""

    @property
    def status(self) -> str:
        if self.returncode is None:
            return "running"
        if self.returncode < 0:
            return f"crashed (signal {-self.returncode})"
        return _STATUS.get(self.returncode, f"crashed (exit {self.returncode})")


@dataclass
class FleetReport:
    run_dir: Path
    backend: str
    runs: list[DeviceRun] = field(default_factory=list)
    arch: str = ""

    @property
    def failed(self) -> list[DeviceRun]:
        return [r for r in self.runs if r.status != "complete"]


def parse_devices(spec: str) -> str | list[int]:
    """``all``, or a comma-separated list of distinct device indices."""
    spec = spec.strip()
    if spec == "all":
        return "all"
    try:
        out = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(i < 0 for i in out) or len(set(out)) != len(out):
        raise UsageError(f"--devices must be 'all' or distinct indices like 0,1 (got {spec!r})")
    return out


def resolve_fleet(plugins: Plugins, arch: str, device: str, devices: str
                  ) -> tuple[str, list[int]]:
    """(backend name, GPU indices) for ``--device`` (``auto`` or a backend's name) and
    ``--devices``; only GPUs the architecture claims."""
    arch_obj = resolve_arch(plugins, arch)
    want = parse_devices(devices)
    backends = plugins.devices()
    if device != "auto" and device.split(":")[0] not in backends:
        sims = ", ".join(plugins.simulators())
        raise UsageError(f"--devices runs one process per GPU of a device backend "
                         f"({', '.join(backends) or 'none installed'}); '{device}' is not one "
                         f"(simulators ({sims}) spread their points with --workers or "
                         f"--executor dask)")
    names = list(backends) if device == "auto" else [device.split(":")[0]]
    reasons = []
    for name in names:
        found = backends[name].discover()
        claimed = sorted(d.index for d in found.devices
                         if arch_obj.claims(d.compute_capability))
        if not claimed:
            reasons.append(f"{name}: " + (found.message or
                                          f"no {arch} GPU among {len(found.devices)}"))
            continue
        if isinstance(want, str):  # "all"
            return name, claimed
        missing = [i for i in want if i not in claimed]
        if missing:
            raise UsageError(f"--devices {devices}: no {arch} GPU {name}:"
                             f"{','.join(map(str, missing))} (found: "
                             f"{','.join(map(str, claimed))})")
        return name, list(want)
    raise UsageError(f"--devices: no {arch} GPU found ({'; '.join(reasons) or 'no backend'})")


def _child_argv(req: RunRequest, backend: str, index: int, out: Path) -> list[str]:
    argv = [sys.executable, "-m", "gpumem", "run", "--arch", req.arch, *req.experiments,
            "--device", f"{backend}:{index}", "--out", str(out), "--seed", str(req.seed)]
    if req.resume:
        argv.append("--resume")
    if req.quick:
        argv.append("--quick")
    return argv


def run_fleet(req: RunRequest, devices: str, *, plugins: Plugins,
              results_root: Path = DEFAULT_RESULTS_ROOT, poll_s: float = 0.2,
              env: dict[str, Any] | None = None) -> FleetReport:
    """Run ``req`` on every GPU ``devices`` names, one process each (see module docstring)."""
    if req.sim_config is not None:
        raise UsageError("--sim-config applies to a simulator, not to --devices")
    if req.workers != 1:
        raise UsageError("--workers applies to simulators; --devices already runs one "
                         "process per GPU")
    # --arch auto: every GPU of the fleet is measured as the first one's architecture
    req = replace(with_arch(plugins, req)[0], device=req.device)
    backend, indices = resolve_fleet(plugins, req.arch, req.device, devices)
    out = req.out or default_out(results_root, req.arch, f"{backend}x{len(indices)}")
    RunStore.open(out)  # checks, creates, and reads an existing manifest before any launch
    (out / LOGS).mkdir(exist_ok=True)
    report = FleetReport(out, backend, arch=req.arch)
    procs: list[tuple[DeviceRun, subprocess.Popen, Any, float]] = []
    child_env = {**os.environ, **(env or {})}
    try:
        for i in indices:
            log_path = out / LOGS / f"{backend}{i}.log"
            run = DeviceRun(f"{backend}:{i}", log=log_path)
            log = open(log_path, "w")  # noqa: SIM115 - closed when the process ends
            p = subprocess.Popen(_child_argv(req, backend, i, out), stdout=log,
                                 stderr=subprocess.STDOUT, env=child_env)
            procs.append((run, p, log, time.monotonic()))
            report.runs.append(run)
        while any(r.returncode is None for r, *_ in procs):
            for run, p, log, t0 in procs:
                if run.returncode is None and p.poll() is not None:
                    _finish(run, p, log, t0)
            time.sleep(poll_s)
    except KeyboardInterrupt:
        # the children got the same Ctrl-C (one process group); give them time to mark
        # their running experiment interrupted, then make sure none is left
        for _run, p, _log, _t0 in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for run, p, log, t0 in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            _finish(run, p, log, t0)
        done = ", ".join(f"{r.device} {r.status}" for r in report.runs)
        raise Interrupted(f"interrupted; {done}; results kept in {out} (continue with: "
                          f"--devices {devices} --resume --out {out})") from None
    return report


def _finish(run: DeviceRun, p: subprocess.Popen, log: Any, t0: float) -> None:
    if run.returncode is not None:
        return
    run.returncode = p.returncode
    run.wall_s = time.monotonic() - t0
    log.close()
    lines = [ln for ln in run.log.read_text(errors="replace").splitlines()
             if ln.startswith("gpumem")] if run.log else []
    run.last_line = lines[-1] if lines else ""


def device_summary(report: FleetReport) -> list[dict[str, Any]]:
    return [{"device": r.device, "status": r.status, "wall_s": round(r.wall_s, 1),
             "log": str(r.log), "message": r.last_line} for r in report.runs]
