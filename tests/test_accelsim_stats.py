"""Accel-Sim output parser, on logs of a real Accel-Sim build (tests/data/accelsim/logs/).

The numbers asserted here were read off those logs; the per-kernel ones are differences of
the cumulative counters Accel-Sim prints, so a parser that took the printed values would fail.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gpumem.contracts.errors import GpumemError
from gpumem_accelsim.stats import AccelSimRunError, check_log, parse_file, parse_log

LOGS = Path(__file__).parent / "data" / "accelsim" / "logs"


def _text(name: str) -> str:
    return (LOGS / name).read_text()


def test_l1_chase_log_per_kernel():
    log = parse_file(LOGS / "qv100-chase-l1.log")
    assert log.accelsim_build.startswith("accelsim-commit-73f9fac")
    assert log.gpgpusim_version == "4.2.0"
    assert log.gpgpusim_build.startswith("gpgpu-sim_git-commit-667834cf")
    assert [k.kernel_name for k in log.kernels] == [
        "gpumem_chase_warmup", "gpumem_chase_base", "gpumem_chase_timed"]
    assert [k.kernel_launch_uid for k in log.kernels] == [1, 2, 3]
    assert [k.stream_id for k in log.kernels] == [0, 0, 0]
    assert [k.gpu_sim_cycle for k in log.kernels] == [15333, 11179, 17323]
    assert [k.gpu_tot_sim_cycle for k in log.kernels] == [15333, 26512, 43835]
    assert [k.gpu_sim_insn for k in log.kernels] == [37, 37, 325]
    timed = log.kernel(3)
    # L1 is flushed between kernels: the timed kernel misses its 32 lines once, then hits
    assert timed.l1d["accesses"] == 288 and timed.l1d["misses"] == 32
    assert timed.l1d["miss_rate"] == pytest.approx(32 / 288)
    assert timed.printed["L1D_total_cache_accesses"] == "352"  # as printed: cumulative
    assert timed.core_breakdown[("GLOBAL_ACC_R", "HIT")] == 256
    assert timed.core_breakdown[("GLOBAL_ACC_R", "TOTAL_ACCESS")] == 288
    assert timed.l2_breakdown[("GLOBAL_ACC_R", "HIT")] == 32
    assert timed.l2["accesses"] == 32 and timed.l2["misses"] == 0
    assert [k.dram_reads for k in log.kernels] == [32, 0, 0]
    assert log.kernel(2).l2["miss_rate"] == 0.0
    assert timed.averagemflatency == 230.0
    # the mean latency of an L1 hit, as an Accel-Sim device would compute it
    assert (timed.gpu_sim_cycle - log.kernel(2).gpu_sim_cycle) / 256 == 24.0
    assert (log.simulation_seconds, log.rate_inst_per_s, log.rate_cycle_per_s) == (6, 66, 7305)
    assert log.silicon_slowdown == 154962


def test_l2_chase_log_bypasses_l1():
    log = parse_file(LOGS / "qv100-chase-l2.log")
    base, timed = log.kernel(2), log.kernel(3)
    assert timed.l1d["accesses"] == 0 and math.isnan(timed.l1d["miss_rate"])
    assert timed.l2_breakdown[("GLOBAL_ACC_R", "HIT")] == 160
    assert (timed.gpu_sim_cycle - base.gpu_sim_cycle) / 128 == 172.0


def test_dram_chase_log():
    log = parse_file(LOGS / "qv100-chase-dram.log")
    base, timed = log.kernels
    assert (base.kernel_name, base.gpu_sim_cycle) == ("gpumem_chase_base", 5008)
    assert timed.dram_reads == 200 and timed.l2["misses"] == 200
    assert (timed.gpu_sim_cycle - base.gpu_sim_cycle) / 200 == pytest.approx(333.245)


def test_stream_log():
    log = parse_file(LOGS / "qv100-stream-dram.log")
    empty, timed = log.kernels
    assert (empty.gpu_sim_cycle, timed.gpu_sim_cycle) == (5010, 27743)
    assert timed.gpu_sim_insn == 1351680
    assert timed.l2["accesses"] == 532480 == timed.dram_reads  # 32-B sectors, all from DRAM
    assert timed.l1d["accesses"] == 0
    assert log.rate_cycle_per_s == 454


@pytest.mark.parametrize("name, returncode, message", [
    ("error-unknown-option.log", 1,
     "Accel-Sim rejected an option: GPGPU-Sim ** ERROR: Unknown Option: "
     "'-gpgpu_no_such_option'"),
    ("error-unsupported-binary-version.log", 0,
     "Accel-Sim cannot run this trace: unsupported binary version: 90"),
    ("error-crash-no-exit.log", 139,
     "Accel-Sim stopped before '*** exit detected ***' (exit status 139); "
     "last line: thread block = 0,0,0"),
    ("error-deadlock.log", 134,
     "Accel-Sim deadlocked: ERROR ** deadlock detected: last writeback core 0 @ "
     "gpu_sim_cycle 5009 (+ gpu_tot_sim_cycle 0) (44991 cycles ago)"),
])
def test_failed_runs(name, returncode, message):
    with pytest.raises(AccelSimRunError) as err:
        parse_log(_text(name), returncode)
    assert str(err.value) == message
    assert "\n" not in str(err.value)
    assert isinstance(err.value, GpumemError)


def test_truncated_log():
    text = _text("qv100-chase-l1.log")
    cut = text[:text.index("kernel_name = gpumem_chase_timed")]
    with pytest.raises(AccelSimRunError, match="stopped before"):
        parse_log(cut)


def test_nonzero_exit_after_a_complete_log():
    text = _text("qv100-chase-l1.log")
    check_log(text)
    with pytest.raises(AccelSimRunError, match="status 1"):
        check_log(text, returncode=1)


def test_abort_and_assertion_lines():
    for line in ("accel-sim.out: gpu-cache.h:123: cache_config::init(): Assertion `0' failed.",
                 "Aborted (core dumped)"):
        with pytest.raises(AccelSimRunError, match="aborted"):
            check_log("GPGPU-Sim: *** exit detected ***\n" + line + "\n")


def test_nan_slowdown():
    text = _text("qv100-chase-l1.log").replace("gpgpu_silicon_slowdown = 154962x",
                                               "gpgpu_silicon_slowdown = Nanx")
    assert math.isnan(parse_log(text).silicon_slowdown)


def test_breakdowns_per_stream():
    """Newer builds print the finished kernel's stream only: difference within the stream;
    a table printed once per stream in one block is summed."""
    text = _text("qv100-chase-l1.log")
    blocks = text.split("kernel_name = ")
    blocks[2] = blocks[2].replace("kernel_stream_id = 0", "kernel_stream_id = 1", 1)
    log = parse_log("kernel_name = ".join(blocks))
    acc = ("GLOBAL_ACC_R", "TOTAL_ACCESS")
    assert [k.stream_id for k in log.kernels] == [0, 1, 0]
    assert log.kernel(2).core_breakdown[acc] == 64     # first of stream 1: as printed
    assert log.kernel(3).core_breakdown[acc] == 320    # against kernel 1, its stream's last
    assert log.kernel(3).l1d["accesses"] == 288        # totals: against the previous kernel
    line = "\tL2_cache_stats_breakdown[GLOBAL_ACC_R][HIT] = 64\n"
    doubled = text.replace(line, line + line, 1)
    assert parse_log(doubled).kernel(3).l2_breakdown[("GLOBAL_ACC_R", "HIT")] == 32 + 64


def test_log_without_kernels_or_keys():
    with pytest.raises(AccelSimRunError, match="without completing a kernel"):
        parse_log("Accel-Sim [build x]\nGPGPU-Sim: *** exit detected ***\n")
    text = _text("qv100-chase-dram.log").replace("gpu_sim_cycle = 5008", "gpu_sim_cyc = 5008")
    with pytest.raises(AccelSimRunError, match="gpu_sim_cycle"):
        parse_log(text)
    with pytest.raises(KeyError, match="uids: 1, 2"):
        parse_file(LOGS / "qv100-chase-dram.log").kernel(7)
