#!/usr/bin/env bash
# One job on any Hopper (about 3 minutes): `l2_hash` (every line of one 2 MB page) from every
# SM, not the 32 `gpumem run l2_hash` stops at (issue 44 item 2: the pairs of slices 32 SMs
# leave in one group, 8 on an H100 page and 6-8 on an H200's; does an SM somewhere tell each
# pair apart?), then `gpumem run l2_hash` as it ships, for the same card's 32-SM grouping.
#
#   bash benchmarks/every_sm_hash.sh OUT_DIR
#
# Writes OUT_DIR/every.npz (lines x SMs medians, offsets, SMs, tolerance: the raw file of
# every repeat is too large to bring back), the runs' manifests and logs, and packs them into
# OUT_DIR/pack.tgz. Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: every_sm_hash.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() {
    (cd "$out" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv ./*.npz \
        $(find every hash -name manifest.json 2>/dev/null)) 2>/dev/null
}
s=$SECONDS
timeout 400 python3 "$here/l2_slices_all_sms.py" "$out/every" --experiment l2_hash \
    --npz "$out/every.npz" > "$out/every.log" 2>&1
echo "every SM: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
pack
hash_page
pack
echo "== summary"
head -2 "$out/smi_before.csv"
cat "$out/times.txt"
tail -5 "$out/every.log"
grep -h "l2_slices.groups\|l2_slices.slices\|hash_accuracy" "$out/hash.log" | head -6
