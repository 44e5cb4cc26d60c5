#!/usr/bin/env bash
# One job on one Hopper (about 4 minutes) for issue 42: how long DRAM reads slower after a
# large cudaFree (benchmarks/dram_scrub.py: 1, 4, 16, 32 GiB, freed by the process or by
# another that exits), and what it does to gpumem's bw.dram_read: `gpumem run bandwidth`
# right after another process freed 32 GiB, and again after 30 s idle, twice.
#
#   bash benchmarks/scrub_job.sh OUT_DIR
set -uo pipefail
out=${1:?usage: scrub_job.sh OUT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvidia-smi --query-gpu=name,uuid,temperature.gpu,power.draw --format=csv | tee "$out/smi.csv"
timeout 240 python3 "$here/dram_scrub.py" --json "$out/scrub.json" --gib 1,4,16,32 \
    --max-s 20 2>&1 | tee "$out/scrub.txt"
free32='import cupy as cp; b = cp.zeros(4 << 30, dtype=cp.uint64); cp.cuda.Device().synchronize()'
for r in 1 2; do
    python3 -c "$free32"
    timeout 60 gpumem run bandwidth --device cuda:0 --out "$out/after$r" > "$out/after$r.log" 2>&1
    sleep 30
    timeout 60 gpumem run bandwidth --device cuda:0 --out "$out/idle$r" > "$out/idle$r.log" 2>&1
done
tar czf "$out/pack.tgz" -C "$out" --exclude pack.tgz . 2>/dev/null
echo "== summary"
cat "$out/scrub.txt"
grep -h "bw.dram_read " "$out"/after*.log "$out"/idle*.log
