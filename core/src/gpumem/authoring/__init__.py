"""Plugins written and checked: ``gpumem plugin new`` turns measured runs into a
pip-installable plugin (:mod:`~gpumem.authoring.new`, its files :mod:`~gpumem.authoring.files`),
``gpumem plugin check`` checks any plugin (:mod:`~gpumem.authoring.check`). Above the runner,
the plugin machinery and interop, which it drives; below the CLI."""
