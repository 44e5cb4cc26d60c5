# Sourced by the GPU job scripts (h200_round.sh, plugin_round.sh, l2_slices_h200.sh, ...):
#   gpu_job_start OUT_DIR
# makes OUT_DIR, starts the job's clock (`mark NAME` appends "NAME at S s" to times.txt)
# and records the GPU as the job found it (clocks, temperature, power, other processes) in
# OUT_DIR/smi_before.csv, saying so when the card is no H200. Changes no setting of the GPU.
gpu_job_start() {
    out_dir=$1
    mkdir -p "$out_dir"
    t0=$SECONDS
    nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,\
utilization.gpu,memory.used --format=csv > "$out_dir/smi_before.csv" 2>&1
    nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv \
        >> "$out_dir/smi_before.csv" 2>&1
    # the figures these jobs are for are an H200's; another card is said, not refused
    grep -q "H200" "$out_dir/smi_before.csv" \
        || { echo "not an H200 (the job still runs):"; head -2 "$out_dir/smi_before.csv"; }
}
mark() { echo "$1 at $((SECONDS - t0)) s" | tee -a "$out_dir/times.txt"; }
# all_runs N: N timed `gpumem run --arch hopper all --check` into OUT_DIR/all1 .. allN (logs
# beside them, "all R: rc C in S s" in times.txt), calling the script's own `pack` after each.
all_runs() {
    local r s
    for r in $(seq 1 "$1"); do
        s=$SECONDS
        timeout 120 gpumem run --arch hopper all --device cuda:0 --check --out "$out_dir/all$r" \
            > "$out_dir/all$r.log" 2>&1
        echo "all $r: rc $? in $((SECONDS - s)) s" | tee -a "$out_dir/times.txt"
        pack
    done
}
# pack_runs PATTERN...: OUT_DIR/pack.tgz of the job's texts, logs, CSV and JSON files, the
# timed runs' and the l2_hash page's manifests and their files matching the `find -name`
# PATTERNs (e.g. latency-*.nc).
pack_runs() {
    local names=() p
    for p in "$@"; do names+=(-o -name "$p"); done
    (cd "$out_dir" && tar czf pack.tgz --exclude=pack.tgz ./*.txt ./*.log ./*.csv ./*.json \
        $(find all1 all2 hash \( -name manifest.json "${names[@]}" \) 2>/dev/null)) 2>/dev/null
}
# reference_compare: benchmarks/l2_reference.py's L2-only reference at l2_bandwidth's
# footprints (1, 4, 16.5 and 30 MB: 2, 8, 33 and 60 chunks of 512 KB) and issue 44's 1.5 MB
# into OUT_DIR/l2_reference.json (.txt), then `compare` against OUT_DIR/all1 into compare.txt.
reference_compare() {
    local here
    here="$(dirname "${BASH_SOURCE[0]}")"
    timeout 120 python3 "$here/l2_reference.py" sweep --runs 2,3,8,33,60 \
        --json "$out_dir/l2_reference.json" 2>&1 | tee "$out_dir/l2_reference.txt"
    python3 "$here/l2_reference.py" compare "$out_dir/all1" "$out_dir/l2_reference.json" \
        > "$out_dir/compare.txt" 2>&1
    mark "reference sweep done"
}
# hash_page: `gpumem run l2_hash` (every line of one 2 MB page) into OUT_DIR/hash, its log
# beside it ("l2_hash: rc C in S s" in times.txt).
hash_page() {
    local s=$SECONDS
    timeout 150 gpumem run l2_hash --device cuda:0 --out "$out_dir/hash" \
        > "$out_dir/hash.log" 2>&1
    echo "l2_hash: rc $? in $((SECONDS - s)) s" | tee -a "$out_dir/times.txt"
}
# clearing_after_free: benchmarks/dram_scrub.py at 4 and 16 GiB into OUT_DIR/scrub.json
# (.txt): how long DRAM reads slow after a cudaFree of that much.
clearing_after_free() {
    timeout 100 python3 "$(dirname "${BASH_SOURCE[0]}")/dram_scrub.py" \
        --json "$out_dir/scrub.json" --gib 4,16 --max-s 8 2>&1 | tee "$out_dir/scrub.txt"
    mark "scrub done"
}
# h200_steps: issue 44's steps only an H200 answers, after `all_runs` (compare needs all1):
# the L2 reference and `compare`, an l2_hash page, the clearing after a free, each packed.
h200_steps() {
    reference_compare
    pack
    hash_page
    pack
    clearing_after_free
    pack
}
# runs_summary: the card, the job's times, the whole runs' verdicts and their L2 bandwidth and
# slice findings (with the l2_hash page's), for the table a job prints last.
runs_summary() {
    echo "== summary"
    head -2 "$out_dir/smi_before.csv"
    cat "$out_dir/times.txt"
    grep -h "fail \|findings:" "$out_dir"/all*.log | head -12
    grep -h "bw.l2\|l2_slices.groups\|l2_slices.slices\|hash_accuracy" "$out_dir/all1.log" \
        "$out_dir/hash.log" | head -14
}
# run_ncu LABEL ARGS...: Nsight Compute (clocks and caches as found) on one launch of
# benchmarks/l2_reference.py ARGS, counting NCU_METRICS, appended to OUT_DIR/ncu.txt under
# "== LABEL" (`l2_reference.py table` reads it).
run_ncu() {
    local label=$1; shift
    echo "== $label" >> "$out_dir/ncu.txt"
    timeout 90 ncu --clock-control none --cache-control none --profile-from-start off \
        --metrics "$NCU_METRICS" --csv python3 "$(dirname "${BASH_SOURCE[0]}")/l2_reference.py" \
        "$@" >> "$out_dir/ncu.txt" 2>&1
}
