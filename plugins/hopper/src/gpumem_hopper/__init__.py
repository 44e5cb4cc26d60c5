"""gpumem plugin for NVIDIA Hopper (H100, H200)."""

__version__ = "0.1.0"
