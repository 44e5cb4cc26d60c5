"""Does rotating a DRAM stream's repeats over more allocations steady bw.dram_read?

    python benchmarks/dram_rotate.py ROTATE OUT_DIR

One ``gpumem run --arch hopper bandwidth --device cuda:0 --out OUT_DIR`` in this process with
``gpumem.cuda.device.ROTATE`` (the allocations a DRAM-resident stream's timed repeats take
turns on) set to ROTATE; prints bw.dram_read. Issue 42: over six processes on one H200 the
figure moved 4377-4546 GB/s while each process's own interval was 0.4-1.9 % wide, and a probe
(benchmarks/dram_placement.py) saw one 480 MB allocation's median differ from another's by
up to 15 %: with 3 allocations per process the median may follow which pages it got; with
more, it should move less from process to process. Run it in several processes per setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    import gpumem.cuda.device as cuda_device
    from gpumem.cli import main as gpumem_main

    cuda_device.ROTATE = int(argv[0])
    out = Path(argv[1])
    code = gpumem_main(["run", "--arch", "hopper", "bandwidth", "--device", "cuda:0",
                        "--out", str(out)])
    m = json.loads((out / "manifest.json").read_text())
    for e in m["entries"].values():
        f = (e.get("findings") or {}).get("bw.dram_read")
        if f:
            print(f"ROTATE {argv[0]}: bw.dram_read {f['value']} {f.get('interval')} "
                  f"{f.get('precision')}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
