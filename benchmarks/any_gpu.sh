#!/usr/bin/env bash
# On a GPU node: the "Any GPU" acceptance measurement (issue 28). The card is measured under
# its plugin (--arch hopper), then three times with that plugin disabled and no --arch (the
# generic architecture sm_XY), and the first two runs are compared finding by finding.
#   bash benchmarks/any_gpu.sh OUT_DIR
# Then, on any machine: gpumem plugin new NAME --from OUT_DIR/runs/gen1 ... and, back on the
# GPU node, benchmarks/any_gpu_plugin.sh (docs/plugin-guide.md, "An H200 from scratch").
set -uo pipefail
out=${1:?usage: any_gpu.sh OUT_DIR}
mkdir -p "$out/runs"
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,utilization.gpu,memory.used \
    --format=csv 2>&1 | tee "$out/gpu.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$out/gpu.txt"
t() { local s=$SECONDS; "$@"; local rc=$?; echo "rc=$rc $((SECONDS - s)) s: $*" | tee -a "$out/times.txt"; }
t gpumem run --arch hopper all --device cuda:0 --out "$out/runs/hopper" > "$out/hopper.txt" 2>&1
t env GPUMEM_DISABLE_PLUGINS=hopper gpumem run all --device cuda:0 --out "$out/runs/gen1" \
    > "$out/gen1.txt" 2>&1
for i in 2 3; do  # no --device either: the best device
    t env GPUMEM_DISABLE_PLUGINS=hopper gpumem run all --out "$out/runs/gen$i" \
        > "$out/gen$i.txt" 2>&1
done
gpumem compare "$out/runs/hopper" "$out/runs/gen1" --json > "$out/compare.json" 2>&1
grep -h "architecture" "$out"/gen*.txt | sort | uniq -c
cat "$out/times.txt"
