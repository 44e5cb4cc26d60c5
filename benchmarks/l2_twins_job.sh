#!/usr/bin/env bash
# On any Hopper (or other CUDA GPU gpumem runs on): `gpumem run l2_twins` twice (a result seen
# once is a hypothesis), then each run's findings and, per test, the delays of the group's
# classes, the controls and the hammered class's own line, and how many hammering SMs came.
#   bash benchmarks/l2_twins_job.sh OUT_DIR [RUNS]   (RUNS: 2 unless given)
# OUT_DIR/pack.tgz holds both runs, their logs and the table. Changes no clock or mode.
set -u
out=${1:?usage: l2_twins_job.sh OUT_DIR}; mkdir -p $out
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee $out/card.txt
export OUTD=$out
for i in $(seq 1 "${2:-2}"); do
  /usr/bin/time -f "%e s" gpumem run l2_twins --arch hopper --out $out/tw$i > $out/tw$i.log 2>&1
  tail -3 $out/tw$i.log
done
python - <<'PY' > $out/table.txt
import glob, xarray as xr, numpy as np, sys
from gpumem.experiments.l2_twins import L2Twins, tests_from
import os
for f in sorted(glob.glob(os.environ["OUTD"] + "/tw*/**/l2_twins-*.nc", recursive=True)):
    ds = xr.open_dataset(f).load()
    print(f)
    for x in L2Twins().analyze(ds):
        if x.name.startswith("l2_twins.") or x.name in ("l2_slices.slices", "l2_slices.groups",
                                                         "l2_slices.hash_accuracy"):
            print(" ", x.name, x.value, x.interval, (x.note or "")[:600])
    for i, t in enumerate(tests_from(ds)):
        d = np.nanmedian(ds.twin_hammered.values[i] - ds.twin_base.values[i], axis=1)
        r = ds.probe_role.values[i]
        print("  test", i, "group", t.group, "sep %.1f" % t.separation, "split", t.split, t.why,
              "hammer_started", ds.hammer_started.values[i].tolist())
        print("    group d:", np.round(np.sort(d[(r == 0) | (r == 1)])).astype(int).tolist())
        print("    ctl d:", np.round(d[r == 2]).astype(int).tolist(), "own:", np.round(d[r == 1]).astype(int).tolist())
PY
cat $out/table.txt
cd $out && tar czf pack.tgz tw* table.txt card.txt
