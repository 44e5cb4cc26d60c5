#!/usr/bin/env bash
# On a GPU node: runs under the card's plugin and as the generic architecture (plugin
# disabled), alternating (hopper, generic, hopper, generic), then every pair compared: do the
# two architectures differ more than two runs of one architecture do? Manifests under OUT/m.
#   bash benchmarks/any_gpu_alternate.sh OUT
set -uo pipefail
out=$1; mkdir -p $out
nvidia-smi --query-gpu=name,uuid,clocks.sm --format=csv,noheader
for i in 1 2; do
  gpumem run --arch hopper all --device cuda:0 --out $out/hopper$i > /dev/null 2>&1; echo "hopper$i rc=$?"
  GPUMEM_DISABLE_PLUGINS=hopper gpumem run all --device cuda:0 --out $out/gen$i > /dev/null 2>&1; echo "gen$i rc=$?"
done
for a in hopper1 hopper2 gen1 gen2; do for b in hopper1 hopper2 gen1 gen2; do
  [ "$a" \< "$b" ] || continue
  gpumem compare $out/$a $out/$b --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); a=d['agreement']
print('$a', '$b', a['measured_within'], '/', a['measured'], 'structural', a['structural_equal'], '/', a['structural'], [(r['finding'], round(r['error'],3)) for r in d['rows'] if r.get('agrees') is False])"
done; done
mkdir -p $out/m; for r in hopper1 hopper2 gen1 gen2; do cp $out/$r/manifest.json $out/m/$r.manifest.json; done
