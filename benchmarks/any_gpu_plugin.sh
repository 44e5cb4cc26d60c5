#!/usr/bin/env bash
# On a GPU node, after benchmarks/any_gpu.sh and `gpumem plugin new NAME --from ...`: the
# plugin installed into a clean folder of its own (gpumem and its plugins as wheels are, not
# editable; the hopper plugin disabled, as for a GPU no shipped plugin describes), checked,
# and run with --check on the simulator, on the GPU, and with no --arch at all.
#   bash benchmarks/any_gpu_plugin.sh PLUGIN_DIR NAME OUT_DIR
# (On the project's GPU machine, first install the carried wheels into /tmp/site.)
set -uo pipefail
src=${1:?usage: any_gpu_plugin.sh PLUGIN_DIR NAME OUT_DIR}; name=${2:?}; out=${3:?}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/clean \
    ./core ./plugins/* "$src"
export PYTHONPATH=/tmp/clean${PYTHONPATH:+:$PYTHONPATH} GPUMEM_DISABLE_PLUGINS=hopper
gpumem() { python3 -m gpumem "$@"; }
t() { local s=$SECONDS; "$@"; local rc=$?; echo "rc=$rc $((SECONDS - s)) s: $*" | tee -a "$out/times.txt"; }
t gpumem plugin check "$name" > "$out/check.txt" 2>&1
t gpumem run --arch "$name" all --device sim --check --out "$out/sim" > "$out/sim.txt" 2>&1
t gpumem run --arch "$name" all --device cuda:0 --check --out "$out/hw" > "$out/hw.txt" 2>&1
t gpumem run all --check --out "$out/auto" > "$out/auto.txt" 2>&1
cat "$out/check.txt"; grep -h "architecture" "$out/auto.txt"; cat "$out/times.txt"
