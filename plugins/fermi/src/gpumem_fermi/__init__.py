"""gpumem plugin for NVIDIA Fermi (GF114: GTX560Ti)."""

__version__ = "0.1.0"
