"""gpumem plugin for the Accel-Sim / GPGPU-Sim simulator."""

__version__ = "0.1.0"
