"""Expected values for the GV100, each with the measurement or document it comes from.

Latencies and the L1 size are MT4G's measurements on a Tesla V100-PCIE-16GB (medians of its
pointer chases, in cycles of the 1380 MHz clock the card reports). The L2 size is the device's
own property, so a card with another L2 gets its own expected value.
"""

from __future__ import annotations

from gpumem.api import DeviceInfo, Expected, exact

MT4G = ("MT4G sample result 'Tesla V100-PCIE-16GB.json' (github.com/caps-tum/mt4g, "
        "commit 231c5bc)")
CUDA_GUIDE = "NVIDIA CUDA C++ Programming Guide, compute capability 7.x shared memory"


def expected_values(device: DeviceInfo) -> list[Expected]:
    out = [
        Expected("lat.l1", 30.0, f"{MT4G}: L1 latency p50 30 cycles", "cycle", rel_tol=0.10),
        Expected("l1d.hit_latency", 30.0, f"{MT4G}: L1 latency p50 30 cycles", "cycle",
                 rel_tol=0.10),
        Expected("ro.hit_latency", 30.0, f"{MT4G}: read-only latency p50 30 cycles", "cycle",
                 rel_tol=0.10),
        Expected("tex_l1.hit_latency", 68.0, f"{MT4G}: texture latency p50 68 cycles",
                 "cycle", rel_tol=0.10),
        Expected("lat.l2", 219.0, f"{MT4G}: L2 latency p50 219 cycles", "cycle", rel_tol=0.10),
        Expected("lat.dram", 395.0, f"{MT4G}: main memory latency p50 395 cycles", "cycle",
                 rel_tol=0.15),
        Expected("l1d.size", 117760, f"{MT4G}: L1 size 117760 B", "byte", rel_tol=0.10),
        exact("smem.banks", 32, f"{CUDA_GUIDE}: 32 banks"),
        exact("smem.bank_width", 4, f"{CUDA_GUIDE}: successive 32-bit words in successive "
              "banks", "byte"),
    ]
    if device.l2_bytes:
        out.append(Expected("l2.size", device.l2_bytes, f"device property L2CacheSize of "
                            f"{device.name}", "byte", rel_tol=0.15))
    return out
