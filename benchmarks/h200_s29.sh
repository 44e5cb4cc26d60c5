#!/usr/bin/env bash
# One job on one Hopper (about 5 minutes) for issues 44 and 42, the parts only an H200 answers:
#   1. two `gpumem run --arch hopper all --check`, timed (issue 42: < 40 s; issue 44: <= 60 s
#      with l2_slices and l2_bandwidth in them);
#   2. `gpumem run l2_hash`: every line of one 2 MB page from 32 SMs (the slice count and the
#      hash card to card: the committed H200 pages found 88 and 69 groups);
#   3. benchmarks/l2_reference.py sweep at l2_bandwidth's footprints and the issue's 1.5 MB in
#      the same job, then `compare` against run 1 (issue 44: each point at least the
#      reference's);
#   4. benchmarks/dram_scrub.py at 4 and 16 GiB: how long an H200's DRAM reads slow after a
#      cudaFree (CudaDevice waits bytes / 150 GB/s, half an H100's rate);
#   5. (every card) benchmarks/dram_wander.py for 15 s: the DRAM read rate over time with
#      NVML beside each reading (issue 42: which cards wander, and with what).
#
#   bash benchmarks/h200_s29.sh OUT_DIR
#
# On a card that is no H200 only one whole run, l2_hash and the wander (about 2 minutes: another
# card's dense page).
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: h200_s29.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() { pack_runs "l2_bandwidth-*.nc" "bandwidth_levels-*.nc" "l2_slices-*.nc" "l2_hash-*.nc"; }
h200=0
grep -q "H200" "$out/smi_before.csv" && h200=1
all_runs $((1 + h200))
hash_page
pack
# issue 42: does this card's DRAM read rate wander over seconds, and with what NVML reads?
timeout 90 python3 "$here/dram_wander.py" --seconds 15 --json "$out/wander.json" \
    > "$out/wander.txt" 2>&1
mark "wander done"
pack
if [ $h200 = 1 ]; then
reference_compare
pack
clearing_after_free
pack
fi
runs_summary
[ $h200 = 1 ] && cat "$out/compare.txt"
[ $h200 = 1 ] && tail -12 "$out/scrub.txt"
tail -8 "$out/wander.txt"
