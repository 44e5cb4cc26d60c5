"""The checks every plugin must pass, for a plugin's tests (part of :mod:`gpumem.api`).

``gpumem plugin check NAME`` runs them and prints a line each; a plugin's tests make one test
of each, the test's id the check's name (``loads``, ``ARCH:quick_run``, ``imports``, ...)::

    from gpumem.api.checks import parametrize_plugin_checks

    @parametrize_plugin_checks("a100")
    def test_plugin_check(check):
        check()

:func:`plugin_checks` yields them (:class:`PluginCheck`: ``name``, ``what``, ``run()``, and
a call that raises ``AssertionError`` on failure); :func:`parametrize_plugin_checks` needs
pytest, which it imports itself. The tests ``gpumem plugin new`` writes and the example
plugin's use it (docs/plugin-guide.md, "Testing a plugin").
"""

from __future__ import annotations

from gpumem.authoring.checks import PluginCheck, parametrize_plugin_checks, plugin_checks

__all__ = ["PluginCheck", "parametrize_plugin_checks", "plugin_checks"]
