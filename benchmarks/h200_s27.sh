#!/usr/bin/env bash
# One job on one H200 (about 4 minutes) for issues 42 and 44:
#   1. two `gpumem run --arch hopper all --check`, timed (issue 42 asks < 40 s), now with
#      l2_bandwidth (8 and 32 blocks reading each line);
#   2. benchmarks/l2_reference.py sweep at the footprints l2_bandwidth reads (1, 4, 16.5 and
#      30 MB: 2, 8, 33 and 60 chunks of 512 KB) and at the issue's 1.5 MB, then `compare`
#      (issue 44: each point at least the reference's);
#   3. Nsight Compute on gpumem's stream at 8 and 32 blocks a line (the share of the sectors
#      the L2 request coalescer merged) and on the reference at 4 MB;
#   4. benchmarks/dram_first.py: does freeing an 8 GiB buffer slow the buffers allocated
#      after it (dram_placement's later trials read 13-15 % slower on GPU-cb0e3c21)? On an
#      H100 it slowed every buffer, one allocated before it too; benchmarks/dram_after_free.py
#      asks whether the translation changed (chases at 64 KB and 2 MB strides beside each
#      reading);
#
#   bash benchmarks/h200_s27.sh OUT_DIR [lean]
#
# `lean` (about 2 min): one timed run, the reference and compare, dram_after_free.py.
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting (ncu runs with --clock-control none).
set -uo pipefail
out=${1:?usage: h200_s27.sh OUT_DIR [lean]}
mode=${2:-all}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() { pack_runs "l2_bandwidth-*.nc" "bandwidth_levels-*.nc"; }
if [ "$mode" = lean ]; then all_runs 1; else all_runs 2; fi
reference_compare
pack
metrics=gpu__time_duration.sum
for m in lts__t_sectors_srcunit_tex_op_read l1tex__t_sectors_pipe_lsu_mem_global_op_ld \
         lrc__xbar2gpc_sectors_op_read lrc__lrc2xbar_sectors_op_read; do
    metrics="$metrics,$m.sum"
done
NCU_METRICS=$metrics
echo "metrics: $metrics" | tee "$out/ncu.txt"
if [ "$mode" != lean ]; then
run_ncu "reference 4096 kB" one-ref 8
run_ncu "stream 4.1 MB share 8" one-stream 4.125 8 2 1024 8
run_ncu "stream 4.1 MB share 32" one-stream 4.125 32 2 1024 8
run_ncu "stream 16.5 MB share 8" one-stream 16.5 8 2 1024 8
mark "ncu done"
pack
timeout 60 python3 "$here/dram_first.py" --json "$out/dram_first.json" \
    2>&1 | tee "$out/dram_first.txt"
mark "dram_first done"
pack
fi
timeout 150 python3 "$here/dram_after_free.py" --json "$out/dram_after_free.json" \
    2>&1 | tee "$out/dram_after_free.txt"
mark "dram_after_free done"
pack
echo "== summary"
cat "$out/times.txt"
grep -h "fail \|findings:" "$out"/all*.log | head -12
grep -h "bw.l2\|l2_bandwidth " "$out/all1.log" | head -12
cat "$out/compare.txt"
[ "$mode" != lean ] && python3 "$here/l2_reference.py" table "$out/ncu.txt"
[ "$mode" != lean ] && cat "$out/dram_first.txt"
cat "$out/dram_after_free.txt"
