"""Ctrl-C mid-run keeps what finished; --resume completes the rest without redoing it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import GPUMEM_ENV


# two gpumem processes through a paced sweep: 12 s of CPU (test_faults_run keeps Ctrl-C)
@pytest.mark.slow
def test_ctrl_c_keeps_finished_work_and_resume_completes(plugin_site, tmp_path):
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in GPUMEM_ENV}
    env.update(PYTHONPATH=str(plugin_site), GPUMEM_SAMPLE_SLEEP="0.25",
               GPUMEM_DISABLE_PLUGINS="broken,dup")
    args = [sys.executable, "-m", "gpumem", "run", "--arch", "toyarch", "toy-chase",
            "toy-slow", "--device", "sim", "--out", str(out)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 120
    manifest = out / "manifest.json"
    while time.time() < deadline:
        if manifest.exists():
            entries = json.loads(manifest.read_text())["entries"].values()
            if any(e["experiment"] == "toy-slow" and e["status"] == "running" for e in entries):
                break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("toy-slow never started")
    time.sleep(0.6)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted during 'toy-slow'" in stderr and "--resume" in stderr
    entries = json.loads(manifest.read_text())["entries"]
    status = {e["experiment"]: e["status"] for e in entries.values()}
    assert status == {"toy-chase": "complete", "toy-slow": "interrupted"}
    chase_file = next(out.glob("*/toy-chase-*.nc"))
    mtime = chase_file.stat().st_mtime_ns

    env["GPUMEM_SAMPLE_SLEEP"] = "0"
    res = subprocess.run(args + ["--resume"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    status = {e["experiment"]: e["status"]
              for e in json.loads(manifest.read_text())["entries"].values()}
    assert status == {"toy-chase": "complete", "toy-slow": "complete"}
    assert chase_file.stat().st_mtime_ns == mtime  # not measured again
