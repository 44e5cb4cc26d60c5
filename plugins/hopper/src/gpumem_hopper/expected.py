"""Expected values for Hopper, from published measurements and the device's own properties.

Latencies come from the closest published runs (RRZE gpu-benches on a GH200 at 1980 MHz, the
same GH100 die and clock as the H200; collected in shared/reference/prior-art.md section 4)
with a 15 % band, because published Hopper latencies differ by that much between tools
(timer overhead, load flavour, footprint). Capacities come from the device: the L2 size it
reports, split in two partitions.
"""

from __future__ import annotations

from gpumem import DeviceInfo, Expected

GPU_BENCHES = ("RRZE gpu-benches gpu-latency, GH200 @ 1980 MHz (gh200.txt), "
               "via prior-art.md section 4")


def expected_values(device: DeviceInfo) -> list[Expected]:
    out = [
        Expected("lat.l1", 32.0, GPU_BENCHES + ": 32.0-32.4 cycles", "cycle", rel_tol=0.15),
        Expected("lat.l1_ns", 16.3, GPU_BENCHES + ": 16.2-16.4 ns", "ns", rel_tol=0.15),
        Expected("lat.l2", 280.3, GPU_BENCHES + ": 280.3 cycles (near partition)", "cycle",
                 rel_tol=0.15),
        Expected("lat.l2_ns", 141.6, GPU_BENCHES + ": 141.6 ns", "ns", rel_tol=0.15),
        Expected("lat.l2_far", 490.0, GPU_BENCHES + ": 458-522 cycles at 34-58 MB", "cycle",
                 rel_tol=0.15),
        Expected("lat.l2_far_ns", 247.5, GPU_BENCHES + ": 231-264 ns", "ns", rel_tol=0.15),
        Expected("lat.dram", 617.5, GPU_BENCHES + ": 610-625 cycles at 64-100 MB", "cycle",
                 rel_tol=0.15),
        Expected("lat.dram_ns", 310.0, GPU_BENCHES + ": about 310 ns at 64-100 MB", "ns",
                 rel_tol=0.15),
        Expected("lat.dram_tlb_miss", 684.5, GPU_BENCHES + ": 680-689 cycles at >= 160 MB",
                 "cycle", rel_tol=0.15),
        Expected("lat.dram_tlb_miss_ns", 346.5, GPU_BENCHES + ": 345-348 ns at >= 160 MB", "ns",
                 rel_tol=0.15),
        Expected("l1d.size", 256 << 10, "NVIDIA Hopper tuning guide: 256 KB L1 + shared per "
                 "SM (less the shared-memory carve-out; MT4G measured 233 KiB on H100 SXM)",
                 "byte", rel_tol=0.10),
        Expected("l2.partitions", 2, "NVIDIA H100 whitepaper: two L2 partitions; MT4G "
                 "'segment' = half the L2", "1", rel_tol=0.0),
    ]
    if device.l2_bytes:
        out += [
            Expected("l2.size", device.l2_bytes, f"device property L2CacheSize of "
                     f"{device.name}", "byte", rel_tol=0.15),
            Expected("l2.near_size", device.l2_bytes // 2, "half of the device's L2 (two "
                     "partitions; gpu-benches: near plateau ends near 26 MB on a GH200)",
                     "byte", rel_tol=0.20),
        ]
    return out
