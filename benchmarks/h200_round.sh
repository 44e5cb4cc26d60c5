#!/usr/bin/env bash
# Issue 31's measurements on a GPU node, in one job (about 4 minutes on an H200):
#   1. nvidia-smi before (clocks, other processes);
#   2. two `gpumem run --arch hopper all` back to back (benchmarks/reruns.py --runs 2), timed;
#   3. the reference cache-bandwidth kernel beside them, twice, run1's bw.l1/bw.l2 against each
#      (cache_bw_reference.py): gpumem's figures must be at least the reference's; then the
#      reference with launches 4x as long and l1_run_length.py (does a run's length move
#      the L1 figure?);
#   4. the two runs judged with the five committed reruns (reruns.py --check-only);
#   5. issue 30's contention scenario (latency, beside a copy loop, then alone);
#   6. the simulator on the host's cores: benchmarks/test_speed.py (pytest-benchmark), two
#      `bench_sim.py chase` on one core, three `bench_sim.py archs --workers 16` (cold, then
#      warm), then SPEED.md.
#
#   bash benchmarks/h200_round.sh OUT_DIR [COMMIT] [lean]
#
# COMMIT names the checkout in SPEED.md where git cannot (a copied tree). `lean` leaves out
# the 4x-long reference, l1_run_length.py, the contention scenario and test_speed.py (about
# 2.5 of its 5.5 minutes), for a second round that confirms the first. Prints a short
# table last; everything else is under OUT_DIR, and what a commit needs of it (logs, JSON,
# manifests, the two runs' bandwidth, bandwidth_levels and bulk_copy files: some 2 MB
# against 60) is also packed into OUT_DIR/pack.tgz, small enough to come back from a device
# machine. Needs a GPU, CuPy, nvidia-ml-py, netCDF4 and pytest-benchmark
# (benchmarks/requirements.txt). Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: h200_round.sh OUT_DIR [COMMIT] [lean]}
commit=${2:-}
lean=${3:-}
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"

python3 "$here/reruns.py" --runs 2 --out "$out/reruns" > "$out/reruns.log" 2>&1
for i in 1 2; do
    python3 "$here/cache_bw_reference.py" "$out/reruns/run1" --json "$out/cache_ref$i.json" \
        > "$out/cache_ref$i.log" 2>&1
done
# the run-length hypothesis (l1_run_length.py's docstring): the reference's launches 4x as
# long, and gpumem's stream kernel at the best L1 shapes over runs of 0.25 to 4 ms
if [ -z "$lean" ]; then
    python3 "$here/cache_bw_reference.py" "$out/reruns/run1" --l1-gib 64 --l2-gib 16 \
        --json "$out/cache_ref_long.json" > "$out/cache_ref_long.log" 2>&1
    python3 "$here/l1_run_length.py" --json "$out/l1_run_length.json" \
        > "$out/l1_run_length.log" 2>&1
fi
if [ -d "$repo/tests/data/h200-reruns" ]; then
    mkdir -p "$out/joint"
    i=1
    for d in "$repo"/tests/data/h200-reruns/run*; do cp -r "$d" "$out/joint/run$i"; i=$((i + 1)); done
    for r in run1 run2; do cp -r "$out/reruns/$r" "$out/joint/run$i"; i=$((i + 1)); done
    python3 "$here/reruns.py" --runs $((i - 1)) --out "$out/joint" --check-only \
        > "$out/joint.log" 2>&1
fi
[ -z "$lean" ] && bash "$here/contention_scenario.sh" "$out/contention" latency \
    > "$out/contention.log" 2>&1
mark "gpu part done"

if [ -z "$lean" ]; then
    # without xdist (the project's addopts): pytest-benchmark times nothing under it
    python3 -m pytest -q -p no:cacheprovider -p no:xdist -o addopts="" "$here/test_speed.py" \
        --benchmark-json="$out/speed.json" > "$out/speed.log" 2>&1
    mark "speed done"
fi
# issue 31 names bench_sim.py chase (best of 3 chases per regime), on one server core: twice,
# pinned to a core of its own where taskset is there
pin=""
command -v taskset > /dev/null && pin="taskset -c $(( $(nproc) - 1 ))"
for i in 1 2; do
    $pin python3 "$here/bench_sim.py" chase > "$out/chase_$i.json" 2> "$out/chase_$i.err"
done
for i in 1 2 3; do
    python3 "$here/bench_sim.py" archs --arch hopper --workers 16 > "$out/archs16_$i.json" \
        2> "$out/archs16_$i.err"
done
mark "archs done"
speed=""
[ -s "$out/speed.json" ] && speed="$out/speed.json"
python3 "$here/speed_table.py" $speed "$out"/archs16_*.json "$out"/chase_*.json \
    ${commit:+--commit "$commit"} > "$out/SPEED.md" 2> "$out/speed_table.err"
(cd "$out" && rm -f pack.tar pack.tgz \
    && tar cf pack.tar --exclude=pack.tar --exclude='*.nc' --exclude=joint . \
    && tar rf pack.tar reruns/run*/*/bandwidth-*.nc reruns/run*/*/bandwidth_levels-*.nc \
        reruns/run*/*/bulk_copy-*.nc \
    && gzip -c pack.tar > pack.tgz && rm pack.tar)

echo "--- runs (wall, s) and agreement (the findings that disagree, then the counts)"
grep -h "wall" "$out/reruns.log"
grep -hv "wall\|agree" "$out/reruns.log" | head -n 12
grep -h "agree" "$out/reruns.log" 2>/dev/null | tail -n 2
# the joint check spans two cards where this one is not the committed runs' (GPU-e3cd7c15):
# card-to-card differences count there (an H200 whose DRAM is 3.4 % slower: 69 of 77)
grep -h "DISAGREE" "$out/joint.log" 2>/dev/null | cut -c1-120 | head -n 10
grep -h "agree" "$out/joint.log" 2>/dev/null | sed 's/^/with the committed five: /' | tail -n 1
echo "--- cache bandwidth against the reference (cache_ref_long: launches 4x as long)"
cat "$out"/cache_ref*.log 2>/dev/null
cat "$out/l1_run_length.log" 2>/dev/null
echo "--- contention"
head -n 2 "$out/contention.log" 2>/dev/null
echo "--- simulator"
grep -h '"wall_s"\|critical' "$out"/archs16_*.json 2>/dev/null | head -n 6
grep -h "missed\|workers" "$out/SPEED.md" 2>/dev/null | head -n 8
echo "SPEED.md: $(grep -c ': met' "$out/SPEED.md" 2>/dev/null) targets met, $(grep -c 'missed' \
    "$out/SPEED.md" 2>/dev/null) missed"
mark "all done"
