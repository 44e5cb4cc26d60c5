"""The CUDA device: discovery, NVML provenance and the probes as CuPy kernels.

Nothing here imports CuPy at module import time; a machine without CuPy or without a GPU
gets a plain message from :meth:`CudaBackend.discover` and a
:class:`~gpumem.contracts.errors.DeviceUnavailable` from :meth:`CudaBackend.open`.
"""
