"""How many bytes per clock a cache level can deliver: the width a measured bandwidth is a
fraction of.

A bandwidth in GB/s says little about how close a kernel came to the hardware; the same
figure per SM clock, set beside the level's width, does (an H200's L1 read at 126 of 128
bytes per clock per SM is at the limit; at 76 it is the kernel's). Widths are architecture
facts, each with where it comes from; a compute capability not listed has none, and its
findings give bytes per clock without a fraction rather than a guess.
"""

from __future__ import annotations

#: compute capability -> (L1 bytes per clock per SM, source)
L1_WIDTHS: dict[str, tuple[float, str]] = {
    "9.0": (128.0, "128 B/clk/SM, the width of Hopper's L1 (measured peaks come within 2 % "
                   "of it: RRZE gpu-benches gpu-strides 126 B/clk/SM on an H200, Luo et al., "
                   "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture, 125.7 "
                   "on an H800)"),
}

#: compute capability -> (L2 bytes per SM clock, whole GPU, source)
L2_WIDTHS: dict[str, tuple[float, str]] = {}


def l1_width(compute_capability: str) -> tuple[float, str] | None:
    """The L1's width in bytes per SM clock per SM, and its source; ``None`` if not known."""
    return L1_WIDTHS.get(str(compute_capability))


def l2_width(compute_capability: str) -> tuple[float, str] | None:
    """The L2's width in bytes per SM clock (whole GPU), and its source; ``None`` if not
    known (no GPU gpumem measures has a published one yet)."""
    return L2_WIDTHS.get(str(compute_capability))
