#!/usr/bin/env bash
# One job on one H200 (about 5 minutes) for issues 42 and 44:
#   0. benchmarks/warm_parallel_check.py --ilp 8: does the ladder's warm-up walked with eight
#      loads in flight (ChaseRequest.warm_ilp, latency version 3) leave the recorded lines as
#      the dependent walk does (and the SASS: eight loads issued before the first use)?
#   1. `gpumem run --arch hopper all --check` under cProfile (benchmarks/profile_run.py):
#      where the full run's 44-52 s go (issue 42 asks < 40 s), then one plain timed run;
#   2. benchmarks/dram_placement.py with pads 0,1.5,0,3,0,0 / 1.5,0,1.5,0,3,0 / 0,0,0,0 in
#      three processes: is an allocation fast for being the process's first, or for having
#      no pad in front (and do clocks move between trials)?
#   3. benchmarks/l2_reference.py sweep: the L2-only reference kernel over footprints
#      (issue 44: bw.l2 >= 11.8 TB/s, each point at least the reference's);
#   4. Nsight Compute counters (L2 sectors served against sectors the SMs asked for) on one
#      launch of the reference and of gpumem's stream kernel at shares 1, 8 and 16: is a
#      figure above the L2's peak served by the L2, or merged before it?
#
#   bash benchmarks/h200_s26.sh OUT_DIR
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting (ncu runs with --clock-control none).
set -uo pipefail
out=${1:?usage: h200_s26.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
if ! grep -q "H200" "$out/smi_before.csv"; then  # the figures are for an H200; on another
    echo "not an H200 (the mechanisms are still tried):"; head -2 "$out/smi_before.csv"
fi  # Hopper the mechanisms (warm-up, first allocation, L2 merging) are still worth asking
pack() {
    (cd "$out" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv ./*.json \
        $(find prof all2 -name manifest.json 2>/dev/null)) 2>/dev/null
}
nvcc -arch=sm_90 -cubin -o "$out/pc.cubin" "$here/../core/src/gpumem/cuda/kernels/pointer_chase.cu" \
    && cuobjdump -sass -fun pointer_chase_ca_warm_ilp8 "$out/pc.cubin" > "$out/warm_ilp_sass.txt" 2>&1
rm -f "$out/pc.cubin"
timeout 150 python3 "$here/warm_parallel_check.py" --ilp 8 --json "$out/warm_ilp.json" \
    > "$out/warm_ilp.txt" 2>&1
mark "warm check done"
pack
s=$SECONDS
timeout 150 python3 "$here/profile_run.py" "$out/prof" --arch hopper all --device cuda:0 \
    --check > "$out/profile.txt" 2>&1
echo "all 1 (profiled): rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
pack
s=$SECONDS
timeout 120 gpumem run --arch hopper all --device cuda:0 --check --out "$out/all2" \
    > "$out/all2.log" 2>&1
echo "all 2: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
pack
p=0
for pads in 0,1.5,0,3,0,0 1.5,0,1.5,0,3,0 0,0,0,0; do
    p=$((p + 1))
    timeout 120 python3 "$here/dram_placement.py" --pads "$pads" --json "$out/placement$p.json" \
        2>&1 | sed "s/^/process $p (pads $pads) /" | tee -a "$out/placement.txt"
done
mark "placement done"
pack
timeout 120 python3 "$here/l2_reference.py" sweep --json "$out/l2_reference.json" \
    2>&1 | tee "$out/l2_reference.txt"
mark "reference sweep done"
pack
ncu --query-metrics > "$out/ncu_metrics_all.log" 2>&1
metrics=gpu__time_duration.sum
for m in lts__t_sectors_srcunit_tex_op_read lts__t_requests_srcunit_tex_op_read \
         lts__t_sectors_srcunit_tex_op_read_lookup_hit l1tex__t_sectors_pipe_lsu_mem_global_op_ld \
         l1tex__t_requests_pipe_lsu_mem_global_op_ld l1tex__m_xbar2l1tex_read_sectors \
         lts__t_sectors_op_read dram__bytes_read; do
    grep -q "^$m " "$out/ncu_metrics_all.log" && metrics="$metrics,$m.sum"
done
grep "^lrc__" "$out/ncu_metrics_all.log" > "$out/ncu_lrc_metrics.txt"
for m in $(awk '{print $1}' "$out/ncu_lrc_metrics.txt" | grep -E "sectors|requests" | head -4); do
    metrics="$metrics,$m.sum"
done
echo "metrics: $metrics" | tee "$out/ncu.txt"
run_ncu() {  # label, then the l2_reference.py arguments
    local label=$1; shift
    echo "== $label" >> "$out/ncu.txt"
    timeout 90 ncu --clock-control none --cache-control none --profile-from-start off \
        --metrics "$metrics" --csv python3 "$here/l2_reference.py" "$@" \
        >> "$out/ncu.txt" 2>&1
}
run_ncu "reference 1536 kB" one-ref 3
run_ncu "reference 16896 kB" one-ref 33
run_ncu "stream 1.5 MB share 1" one-stream 1.5 1 1 256 2
run_ncu "stream 1.5 MB share 8" one-stream 1.5 8 1 256 2
run_ncu "stream 1.5 MB share 16" one-stream 1.5 16 1 256 2
run_ncu "stream 16.9 MB share 1" one-stream 16.9 1 4 512 2
run_ncu "stream 16.9 MB share 16" one-stream 16.9 16 4 512 2
mark "ncu done"
pack
echo "== summary"
cat "$out/times.txt"
grep -c LDG "$out/warm_ilp_sass.txt"
grep -h "MiB p" "$out/warm_ilp.txt" | head -30
grep -h "^latency\|^l2_slices\|^bandwidth\|^ilp\|^cache_structure\|whole run" "$out/profile.txt" | head -8
grep -h "MiB" "$out/placement.txt"
cat "$out/l2_reference.txt"
grep -h "TB/s\|^==" "$out/ncu.txt" | head -20
