#!/usr/bin/env bash
# Issue 44's measurements on one GPU node, in one job (a few minutes on an H200):
#   1. nvidia-smi before (clocks, other processes);
#   2. two `gpumem run --arch hopper l2_slices` back to back (the same lines: the default
#      seed), timed;
#   3. the first run exported as a simulated card (gpumem export sim), l2_slices run on it
#      (the host's cores), and benchmarks/slices_vs_card.py: the first run against the
#      second (the map's reproducibility) and against the simulated card (target: every
#      line's L2 hit within 2 %);
#   4. `gpumem run --arch hopper all`, timed (target: at most 60 s with l2_slices in it);
#   5. l2_slices from every SM (benchmarks/l2_slices_all_sms.py): run it on two cards and
#      pair their SMs by die position (slices_vs_card.py EVERY_A EVERY_B --match);
#   6. l2_slices over all 16,384 lines of one page (benchmarks/l2_slices_dense.py): the hash
#      table over the invariants' classes judged where every held-out line's class is seen;
#      the page exported as a simulated card (its table) and simulated line by line;
#   7. benchmarks/l2_share_sweep.py: L2 read bandwidth with slices re-read from other SMs
#      (StreamRequest.share) against gpu-l2-cache's published H200 figures (item 6);
#   8. benchmarks/ilp_chunks.py: the ILP sweep's warp-contiguous climb against the chunks a
#      CTA re-reads (issue 45 item 4's one finding the model misses in every run).
#
#   bash benchmarks/l2_slices_h200.sh OUT_DIR
#
# Run it on two cards and compare their first runs with slices_vs_card.py (the slice count
# and the per-SM profiles must agree). Packs the runs' manifests, the l2_slices files and the
# logs into OUT_DIR/pack.tgz (small enough to come back from a device machine) and prints a
# short table last; every step has a time limit (the job stays under 9 minutes). Changes no
# clock, power or mode setting.
set -uo pipefail
out=${1:?usage: l2_slices_h200.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
pack() {  # after each step, so a job cut short still brings back what it measured
    (cd "$out" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv ./*.json ./sim \
        $(find a b simrun all every dense -name manifest.json -o -name 'l2_slices-*.nc' 2>/dev/null)) \
        2>/dev/null
}
for r in a b; do
    s=$SECONDS
    timeout 110 gpumem run --arch hopper l2_slices --device cuda:0 --out "$out/$r" \
        > "$out/$r.log" 2>&1
    echo "l2_slices run $r: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
done
gpumem export sim "$out/a" --out "$out/sim" > "$out/export.log" 2>&1
cfg=$(ls "$out"/sim/*.toml 2>/dev/null | head -1)
if [ -n "$cfg" ]; then
    timeout 90 gpumem run --arch hopper l2_slices --device sim --sim-config "$cfg" --out "$out/simrun" \
        > "$out/simrun.log" 2>&1
fi
python3 "$here/slices_vs_card.py" "$out/a" "$out/b" > "$out/a_vs_b.txt" 2>&1
python3 "$here/slices_vs_card.py" "$out/a" "$out/simrun" > "$out/a_vs_sim.txt" 2>&1
mark "l2_slices done"
pack
s=$SECONDS
timeout 120 gpumem run --arch hopper all --device cuda:0 --out "$out/all" > "$out/all.log" 2>&1
echo "all: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
pack
s=$SECONDS
timeout 150 python3 "$here/l2_slices_all_sms.py" "$out/every" > "$out/every.log" 2>&1
echo "l2_slices every SM: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
pack
s=$SECONDS
timeout 150 python3 "$here/l2_slices_dense.py" "$out/dense" > "$out/dense.txt" 2>&1
echo "l2_slices one dense page: rc $? in $((SECONDS - s)) s" | tee -a "$out/times.txt"
# the dense page's table exported as a simulated card, the same page simulated (the host's
# cores), every line against the card's (issue 44: within 2 %)
gpumem export sim "$out/dense" --out "$out/densesim" > "$out/densesim.log" 2>&1
cfg=$(ls "$out"/densesim/*.toml 2>/dev/null | head -1)
if [ -n "$cfg" ]; then
    timeout 120 python3 "$here/l2_slices_dense.py" "$out/densesimrun" --device sim \
        --sim-config "$cfg" >> "$out/densesim.log" 2>&1
    python3 "$here/slices_vs_card.py" "$out/dense" "$out/densesimrun" > "$out/dense_vs_sim.txt" 2>&1
fi
mark "dense page simulated"
pack
(cd "$here" && timeout 100 python3 l2_share_sweep.py --json "$out/share.json") > "$out/share.txt" 2>&1
mark "share sweep done"
pack
(cd "$here" && timeout 60 python3 ilp_chunks.py --json "$out/ilp_chunks.json") > "$out/ilp_chunks.txt" 2>&1
mark "ilp chunks done"
pack
echo "---"
cat "$out/times.txt" "$out/a_vs_b.txt" "$out/a_vs_sim.txt" "$out/dense.txt" \
    "$out/dense_vs_sim.txt" "$out/share.txt" \
    "$out/ilp_chunks.txt"
tail -3 "$out/a.log" "$out/b.log" "$out/simrun.log" "$out/export.log" 2>/dev/null
gpumem show "$out/a" 2>&1 | grep -E "l2_slices\." | cut -c1-150
