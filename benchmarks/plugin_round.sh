#!/usr/bin/env bash
# Issue 42 on a GPU node, in one job: is a plugin made by `gpumem plugin new` from two runs of
# one card passed by that card's next runs and by another card's?
#
#   bash benchmarks/plugin_round.sh OUT_DIR make   [N_HOPPER]   # first card
#   bash benchmarks/plugin_round.sh OUT_DIR check  PLUGIN_DIR [N_HOPPER]  # a second card
#
# make:  N_HOPPER (default 2) `gpumem run --arch hopper all --check` (timed; the first pays the
#        CUDA compiles), two `gpumem run all` with the hopper plugin disabled (gen1, gen2),
#        `gpumem plugin new h200t --from gen1 --from gen2`, the plugin installed into a clean
#        folder with gpumem's own distributions (as a third party's user would), then two
#        `gpumem run all --check` with it (gen3, gen4; hopper still disabled).
# check: the plugin at PLUGIN_DIR installed the same way, two `gpumem run all --check` with it
#        (hopper disabled), then N_HOPPER (default 2) `gpumem run --arch hopper all --check`.
# Every step's exit code and wall time goes to OUT_DIR/times.txt; the manifests, the plugin and
# the logs are packed into OUT_DIR/pack.tgz (small enough to come back from a device machine).
# Changes no clock, power or mode setting. Needs a GPU, CuPy, nvidia-ml-py and netCDF4.
set -uo pipefail
out=${1:?usage: plugin_round.sh OUT_DIR make|check [N_HOPPER|PLUGIN_DIR]}
mode=${2:?}
arg=${3:-}
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
t() {  # t NAME CMD...: run, log, time
    local name=$1; shift
    local s=$SECONDS
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - s)) s" | tee -a "$out/times.txt"
    return $rc
}
gpumem() { python3 -m gpumem "$@"; }
# shellcheck source=gpu_job.sh
source "$repo/benchmarks/gpu_job.sh"
gpu_job_start "$out"
install_plugin() {  # the plugin and gpumem's distributions into a clean folder, not editable
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/clean \
        "$repo/core" "$repo"/plugins/* "$1" > "$out/install.log" 2>&1
}
with_plugin() {
    PYTHONPATH=/tmp/clean${PYTHONPATH:+:$PYTHONPATH} GPUMEM_DISABLE_PLUGINS=hopper "$@"
}
if [ "$mode" = make ]; then
    for i in $(seq 1 "${arg:-2}"); do
        t "hopper$i" gpumem run --arch hopper all --device cuda:0 --check --out "$out/hopper$i"
    done
    for i in 1 2; do
        t "gen$i" env GPUMEM_DISABLE_PLUGINS=hopper python3 -m gpumem run all \
            --device cuda:0 --out "$out/gen$i"
    done
    t plugin_new env GPUMEM_DISABLE_PLUGINS=hopper python3 -m gpumem plugin new h200t \
        --from "$out/gen1" --from "$out/gen2" --out "$out/gpumem-h200t" --workers 8
    install_plugin "$out/gpumem-h200t" && echo "installed" >> "$out/times.txt"
    t plugin_check with_plugin python3 -m gpumem plugin check h200t
    for i in 3 4; do
        t "gen$i" with_plugin python3 -m gpumem run all --device cuda:0 --check \
            --out "$out/gen$i"
    done
elif [ "$mode" = check ]; then
    install_plugin "${arg:?check needs PLUGIN_DIR}" && echo "installed" >> "$out/times.txt"
    for i in 1 2; do
        t "other$i" with_plugin python3 -m gpumem run all --device cuda:0 --check \
            --out "$out/other$i"
    done
    for i in $(seq 1 "${4:-2}"); do
        t "hopper$i" gpumem run --arch hopper all --device cuda:0 --check --out "$out/hopper$i"
    done
fi
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv \
    > "$out/smi_after.csv" 2>&1
# what comes back: manifests, the plugin's source, logs and times (no raw files)
(cd "$out" && tar czf pack.tgz --exclude='*.nc' --exclude='__pycache__' ./*.txt ./*.log \
    ./*.csv ./*/manifest.json gpumem-h200t 2>/dev/null)
echo "---"
cat "$out/times.txt"
for d in "$out"/*/manifest.json; do
    python3 - "$d" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = [(e["experiment"], n, f.get("value"), f.get("band"))
       for e in m["entries"].values() for n, f in (e.get("findings") or {}).items()
       if f.get("status") in ("fail", "contended")]
walls = sum(float(e.get("wall_s", 0) or 0) for e in m["entries"].values())
empty = [n for e in m["entries"].values() for n, f in (e.get("findings") or {}).items()
         if f.get("kind") == "measured" and f.get("value") is not None and "interval" not in f]
print(sys.argv[1].split("/")[-2], f"experiments {walls:.1f} s", f"fail {len(bad)}",
      bad[:4], f"no interval {len(empty)}", empty[:4])
PY
done
