#!/usr/bin/env bash
# On any Hopper: two timed `all --check`, then the latency ladder alone, RUNS times, each in a
# fresh process (which is given other physical pages, and the L2's knees move with them), every
# run's latency-*.nc kept: the raw chases the knees' intervals are judged against
# (tests/test_latency_knees.py: how far a rerun's knee strays from a run's interval). On an
# H200, before the ladders, issue 44's H200-only steps (benchmarks/h200_s30.sh's: the L2
# reference and `compare`, an l2_hash page, the clearing after a free). Packed after each
# step, so a job cut short keeps what it measured.
#   [ALL_RUNS=N] [H200_STEPS=0] bash benchmarks/knee_job.sh OUT_DIR [RUNS]
#   (RUNS: 6, ALL_RUNS: 2 unless given; H200_STEPS=0 leaves the H200-only steps out)
# OUT_DIR/pack.tgz holds it all. Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: knee_job.sh OUT_DIR [RUNS]}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() {
    (cd "$out_dir" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv \
        $(find lat* all1 all2 hash \( -name manifest.json -o -name "latency-*.nc" \
          -o -name "l2_bandwidth-*.nc" -o -name "l2_hash-*.nc" \) 2>/dev/null)) 2>/dev/null
}
ladders() {
    local r s
    for r in $(seq 1 "$1"); do
        s=$SECONDS
        timeout 90 gpumem run --arch hopper latency --device cuda:0 --out "$out_dir/lat$r" \
            > "$out_dir/lat$r.log" 2>&1
        echo "latency $r: rc $? in $((SECONDS - s)) s" | tee -a "$out_dir/times.txt"
        pack
    done
}
# the whole runs' ladders are kept too; on an H200 its own steps come before more ladders
all_runs "${ALL_RUNS:-2}"
if [ "${H200_STEPS:-1}" != 0 ] && grep -q "H200" "$out_dir/smi_before.csv"; then
    h200_steps
fi
ladders "${2:-6}"
runs_summary
grep -h "l2.near_size\|l2.size" "$out_dir"/lat*.log "$out_dir"/all*.log | head -24
[ -f "$out_dir/compare.txt" ] && cat "$out_dir/compare.txt"
[ -f "$out_dir/scrub.txt" ] && tail -12 "$out_dir/scrub.txt"
exit 0
