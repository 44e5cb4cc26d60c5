#!/usr/bin/env bash
# One job on one H200 (about 5 minutes) for issues 42 and 44:
#   0. benchmarks/warm_parallel_check.py --ilp 8: does the ladder's warm-up walked with eight
#      loads in flight by the chase's own kernel (ChaseRequest.warm_ilp, latency version 3)
#      leave the recorded lines as the dependent walk does (and the SASS: eight loads issued
#      before the first use)? A first try (a separate warm-up kernel, on an H100) lost the
#      L1 between kernels: l1d.size read 32 KB;
#   1. two `gpumem run --arch hopper all --check`, timed (issue 42 asks < 40 s);
#   2. benchmarks/dram_placement.py --pads 0,0,0: on an H100 the first allocation read DRAM
#      16 % faster than every later one, pad or no pad; on an H200 too? And
#      benchmarks/dram_first.py: first, or reusing freed memory, or time in the process?
#   3. benchmarks/l2_reference.py sweep: the L2-only reference kernel over footprints
#      (issue 44: bw.l2 >= 11.8 TB/s, each point at least the reference's);
#   4. Nsight Compute counters (sectors the L2 slices served, sectors the SMs asked for, the
#      L2 request coalescer's) on one launch of the reference and of gpumem's stream kernel:
#      on an H100 the coalescer merged 45 % of a 1.5 MB share-1 read before the slices.
#
#   bash benchmarks/h200_s26.sh OUT_DIR [runs]
#
# `runs`: steps 1, 3 and the reference's counters at 1.5 and 16.9 MB only (about 2.5 min).
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting (ncu runs with --clock-control none).
set -uo pipefail
out=${1:?usage: h200_s26.sh OUT_DIR [runs]}
mode=${2:-all}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() { pack_runs "latency-*.nc"; }
if [ "$mode" != runs ]; then
nvcc -arch=sm_90 -cubin -o "$out/pc.cubin" "$here/../core/src/gpumem/cuda/kernels/pointer_chase.cu" \
    && cuobjdump -sass -fun pointer_chase_ca_global_ilp8 "$out/pc.cubin" > "$out/warm_ilp_sass.txt" 2>&1
rm -f "$out/pc.cubin"
timeout 150 python3 "$here/warm_parallel_check.py" --ilp 8 --json "$out/warm_ilp.json" \
    > "$out/warm_ilp.txt" 2>&1
mark "warm check done"
pack
fi
all_runs 2
[ "$mode" != runs ] && timeout 60 python3 "$here/dram_placement.py" --pads 0,0,0 --json "$out/placement1.json" \
    2>&1 | sed "s/^/pads 0,0,0 /" | tee -a "$out/placement.txt"
[ "$mode" != runs ] && timeout 60 python3 "$here/dram_first.py" --json "$out/dram_first.json" \
    2>&1 | tee "$out/dram_first.txt"
mark "placement done"
timeout 120 python3 "$here/l2_reference.py" sweep --json "$out/l2_reference.json" \
    2>&1 | tee "$out/l2_reference.txt"
mark "reference sweep done"
pack
ncu --query-metrics > "$out/ncu_metrics_all.log" 2>&1
metrics=gpu__time_duration.sum
for m in lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_read_lookup_hit \
         l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__m_xbar2l1tex_read_sectors \
         dram__bytes_read lrc__xbar2lrc_requests_op_read lrc__lrc2xbar_sectors_op_read \
         lrc__lrc2xbar_sectors_op_read_coalescing_achieved lrc__lts2lrc_sectors_op_read \
         lrc__xbar2gpc_sectors_op_read lrc__request_sectors_op_read_coalescable; do
    grep -q "^$m .*Counter" "$out/ncu_metrics_all.log" && metrics="$metrics,$m.sum"
done
NCU_METRICS=$metrics
echo "metrics: $metrics" | tee "$out/ncu.txt"
run_ncu "reference 1536 kB" one-ref 3
[ "$mode" != runs ] && run_ncu "reference 4096 kB" one-ref 8
run_ncu "reference 16896 kB" one-ref 33
run_ncu "stream 16.9 MB share 1" one-stream 16.9 1 4 512 2
[ "$mode" != runs ] && run_ncu "stream 1.5 MB share 8" one-stream 1.5 8 1 256 2
mark "ncu done"
pack
echo "== summary"
cat "$out/times.txt"
[ "$mode" != runs ] && grep -c LDG "$out/warm_ilp_sass.txt"
[ "$mode" != runs ] && grep -h "MiB p" "$out/warm_ilp.txt" | head -30
grep -h "fail \|findings:" "$out/all1.log" "$out/all2.log" | head -12
[ "$mode" != runs ] && grep -h "MiB" "$out/placement.txt"
[ "$mode" != runs ] && cat "$out/dram_first.txt"
cat "$out/l2_reference.txt"
python3 "$here/l2_reference.py" table "$out/ncu.txt"
