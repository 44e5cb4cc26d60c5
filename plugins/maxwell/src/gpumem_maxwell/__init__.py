"""gpumem plugin for NVIDIA Maxwell (GM204: GTX980)."""

__version__ = "0.1.0"
