#!/usr/bin/env bash
# One job on one H200 (about 5 minutes) for issues 45 and 42:
#   1. benchmarks/ca_vs_cg.py from six SMs (is an H200's .ca L2 hit 2-3 cycles over .cg, as
#      its ladder's lat.l2, 285-286, over SM 0's .cg median, 283, suggests?), twice;
#   2. `gpumem run --arch hopper latency` (the ladder's lat.l2 from SM 0 on the same card);
#   3. two `gpumem run --arch hopper all --check` (held-out runs for the simulated H200 and
#      the plugin bands; a card never measured adds to the multi-card data);
#   4. benchmarks/dram_placement.py (does an H200's first allocation read DRAM faster, as an
#      H100's did?), in two processes.
#
#   bash benchmarks/ca_ladder_h200.sh OUT_DIR
#
# Packs everything into OUT_DIR/pack.tgz after each step and prints a short table last.
# Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: ca_ladder_h200.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
if ! grep -q "H200" "$out/smi_before.csv"; then  # the questions are about an H200
    echo "not an H200:"; head -2 "$out/smi_before.csv"; exit 3
fi
pack() {
    (cd "$out" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv ./*.json \
        $(find lat all1 all2 -name manifest.json 2>/dev/null)) 2>/dev/null
}
for r in 1 2; do
    timeout 120 python3 "$here/ca_vs_cg.py" --sms 0,2,33,66,99,131 --json "$out/cacg$r.json" \
        2>&1 | sed "s/^/repeat $r /" | tee -a "$out/ca_vs_cg.txt"
done
mark "ca_vs_cg done"
timeout 60 gpumem run --arch hopper latency --device cuda:0 --out "$out/lat" > "$out/lat.log" 2>&1
mark "latency done"
pack
all_runs 2
for p in 1 2; do
    timeout 120 python3 "$here/dram_placement.py" --trials 6 --json "$out/placement$p.json" \
        2>&1 | sed "s/^/process $p /" | tee -a "$out/placement.txt"
done
mark "placement done"
pack
echo "== summary"
grep -h "lat.l2 " "$out/lat.log" | head -3
grep -h "SM   0" "$out/ca_vs_cg.txt"
cat "$out/times.txt"
grep -h "MiB" "$out/placement.txt"
