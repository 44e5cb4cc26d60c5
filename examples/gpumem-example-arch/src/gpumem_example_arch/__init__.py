"""Example gpumem architecture plugin: the NVIDIA GV100 (Tesla V100). See docs/plugin-guide.md."""

__version__ = "0.1.0"
