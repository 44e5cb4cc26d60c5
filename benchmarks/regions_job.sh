#!/usr/bin/env bash
# One job on one Hopper (about 1 minute) for issue 42: benchmarks/dram_regions.py in three
# processes (does a buffer's place in device memory set its DRAM read rate, the same way in
# every process?).
#
#   bash benchmarks/regions_job.sh OUT_DIR
set -uo pipefail
out=${1:?usage: regions_job.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvidia-smi --query-gpu=name,uuid,temperature.gpu,power.draw --format=csv | tee "$out/smi.csv"
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
pads=$(python3 -c "print(','.join(str(g) for g in range(0, $total // 1024 - 4, 4)))")
for p in 1 2 3; do
    timeout 90 python3 "$here/dram_regions.py" --pads "$pads" --json "$out/regions$p.json" \
        > "$out/regions$p.txt" 2>&1
done
tar czf "$out/pack.tgz" -C "$out" --exclude pack.tgz . 2>/dev/null
echo "== summary"
for p in 1 2 3; do sed -n '/^pad GiB/,$p' "$out/regions$p.txt"; done
