#!/usr/bin/env bash
# Issue 30's scenario on a GPU: the same run beside a second process that copies a 2 GB
# buffer in a loop, then alone. Beside it every finding must be `contended` and --check exit
# 1 naming the process; alone --check must exit 0. Needs a GPU, CuPy and nvidia-ml-py.
#
#   bash benchmarks/contention_scenario.sh [OUT] [EXPERIMENTS...]
#   (default: OUT=contention-runs, experiments latency bandwidth ilp)
set -u
out=${1:-contention-runs}; shift || true
exps=("$@"); [ ${#exps[@]} -eq 0 ] && exps=(latency bandwidth ilp)
mkdir -p "$out"
python3 - 600 <<'PY' > "$out/neighbour.log" 2>&1 &
import sys, time
import cupy as cp
a = cp.ones(1 << 29, dtype=cp.float32); b = cp.empty_like(a)
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b[...] = a
    cp.cuda.runtime.deviceSynchronize()
PY
nb=$!
until grep -q ready "$out/neighbour.log" 2>/dev/null; do sleep 0.5; done
sleep 3  # NVML's per-process samples come every 1/6 s to 1 s
python3 -m gpumem run --arch hopper "${exps[@]}" --check --out "$out/shared" \
    > "$out/shared.txt" 2> "$out/shared.err"
echo "beside the neighbour: exit $?"
kill "$nb"; wait "$nb" 2>/dev/null; sleep 3
python3 -m gpumem run --arch hopper "${exps[@]}" --check --out "$out/alone" \
    > "$out/alone.txt" 2> "$out/alone.err"
echo "alone: exit $?"
grep -h "contended:\|check" "$out/shared.err" "$out/alone.err" | cut -c1-400
