#!/usr/bin/env bash
# One job on one H200 (about 6 minutes) for issue 44's parts only an H200 answers, and nothing
# on any other card (it says which card came and exits 3 at once, so that a call that drew an
# H100 costs little device time):
#   1. two `gpumem run --arch hopper all --check`, timed (issue 44: <= 60 s with l2_slices and
#      l2_bandwidth in them; issue 42: < 40 s);
#   2. benchmarks/l2_reference.py sweep at l2_bandwidth's footprints and the issue's 1.5 MB in
#      the same job, then `compare` against run 1 (issue 44: each point at least the
#      reference's, l2_bandwidth and the reference in one job on one H200);
#   3. `gpumem run l2_hash`: every line of one 2 MB page from 32 SMs (the slice count card to
#      card: the two committed H200 pages give 94 slices in 70 groups);
#   4. benchmarks/dram_scrub.py at 4 and 16 GiB: how long an H200's DRAM reads slow after a
#      cudaFree (CudaDevice waits bytes / 150 GB/s, half an H100's rate).
#
#   bash benchmarks/h200_s30.sh OUT_DIR
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: h200_s30.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200"; then
    echo "not an H200, nothing run: $(nvidia-smi --query-gpu=name,uuid --format=csv,noheader)"
    exit 3
fi
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() { pack_runs "l2_bandwidth-*.nc" "bandwidth_levels-*.nc" "l2_slices-*.nc" "l2_hash-*.nc"; }
all_runs 2
h200_steps
runs_summary
cat "$out/compare.txt"
tail -12 "$out/scrub.txt"
