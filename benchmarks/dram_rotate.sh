#!/usr/bin/env bash
# Issue 42's last lever, in one job: does rotating a DRAM stream's timed repeats over more
# allocations steady bw.dram_read from process to process? For each ROTATE setting,
# PROCS processes each run `gpumem run --arch hopper bandwidth` (benchmarks/dram_rotate.py)
# on the same card, interleaved (3, 12, 3, 12, ...) so drift hits both alike.
#
#   bash benchmarks/dram_rotate.sh OUT_DIR [PROCS] [ROTATE ...]
#
# Prints one line per process and, last, each setting's spread (max/min - 1) of
# bw.dram_read over its processes. Changes no clock, power or mode setting.
set -uo pipefail
out=${1:?usage: dram_rotate.sh OUT_DIR [PROCS] [ROTATE ...]}
procs=${2:-3}
shift $(( $# > 1 ? 2 : 1 ))
rotates=("$@")
[ ${#rotates[@]} -gt 0 ] || rotates=(3 12)
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=gpu_job.sh
source "$here/gpu_job.sh"
gpu_job_start "$out"
for p in $(seq 1 "$procs"); do
    for r in "${rotates[@]}"; do
        timeout 90 python3 "$here/dram_rotate.py" "$r" "$out/r$r-p$p" 2>"$out/r$r-p$p.err" \
            | tee -a "$out/rotate.txt"
    done
done
mark "rotate done"
python3 - "$out/rotate.txt" <<'PY'
import re, sys
by = {}
for line in open(sys.argv[1]):
    m = re.match(r"ROTATE (\d+): bw.dram_read ([\d.]+)", line)
    if m:
        by.setdefault(int(m[1]), []).append(float(m[2]))
for r, v in sorted(by.items()):
    print(f"ROTATE {r:3d}: {len(v)} processes, {min(v):.1f}-{max(v):.1f} GB/s, "
          f"spread {max(v) / min(v) - 1:.2%}")
PY
