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
    out += [
        Expected("smem.banks", 32, "NVIDIA CUDA C++ Programming Guide, compute capability 9.0: "
                 "32 banks of 4 bytes", "1", rel_tol=0.0),
        Expected("smem.bank_width", 4, "NVIDIA CUDA C++ Programming Guide, compute "
                 "capability 9.0: successive 32-bit words in successive banks", "byte",
                 rel_tol=0.0),
        Expected("l2.sm_groups", 2, "NVIDIA H100 whitepaper: two L2 partitions, each SM "
                 "attached to one", "1", rel_tol=0.0),
        Expected("l2.near_fraction", 0.5, "ASSUMED: the address hash spreads lines evenly "
                 "over the two partitions", "1", rel_tol=0.15),
    ]
    if device.clock_mhz:
        # 32 banks x 4 bytes per cycle per SM, at the clock the device reports
        out.append(Expected("bw.smem", round(128 * device.clock_mhz / 1e3, 1),
                            f"32 banks x 4 B per cycle per SM x {device.clock_mhz:g} MHz "
                            f"(device property clock rate)", "GB/s", rel_tol=0.05))
    if device.peak_bandwidth_gbs:
        out += [
            Expected("bw.dram_read_fraction", 0.92, "seed 003: streaming reads reach 91-94 % "
                     "of the datasheet bandwidth on an H100", "1", rel_tol=0.03),
            Expected("bw.dram_read", round(0.92 * device.peak_bandwidth_gbs, 1),
                     f"0.92 (seed 003, 91-94 % on an H100) x {device.peak_bandwidth_gbs:.0f} "
                     f"GB/s (device memory clock x bus width x 2)", "GB/s", rel_tol=0.05),
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
