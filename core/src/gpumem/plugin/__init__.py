"""The plugin machinery: the registry that loads entry points (:mod:`~gpumem.plugin.registry`),
core's own plugin, which registers core's experiments, backends and formats
(:mod:`~gpumem.plugin.builtin`), and an architecture plugin's hooks from its package layout
(:mod:`~gpumem.plugin.arch`)."""
