"""gpumem plugin for NVIDIA Kepler (GK110: GTX780)."""

__version__ = "0.1.0"
