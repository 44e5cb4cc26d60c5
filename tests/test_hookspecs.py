"""Every hook spec is documented with an example and exercised by some test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from gpumem import hookspecs

SPECS = [name for name, fn in vars(hookspecs).items()
         if name.startswith("gpumem_") and callable(fn)]


def test_there_are_hooks_for_each_family():
    for family in ("architectures", "experiments", "devices", "simulators"):
        assert f"gpumem_register_{family}" in SPECS
    assert {"gpumem_expected_values", "gpumem_kernel_source",
            "gpumem_simulator_config"} <= set(SPECS)


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_documented_with_an_example(name):
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    assert len(doc.splitlines()[0]) > 20, f"{name}: needs a one-line summary"
    assert "Example::" in doc, f"{name}: docstring needs an 'Example::' block"
    example = doc.split("Example::", 1)[1]
    assert f"def {name}(" in example, f"{name}: the example must implement the hook"
    for param in inspect.signature(getattr(hookspecs, name)).parameters:
        assert f":param {param}:" in doc, f"{name}: parameter '{param}' is undocumented"


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_exercised_by_a_test(name):
    here = Path(__file__).resolve()
    uses = [p for p in here.parent.rglob("test_*.py") if p != here and name in p.read_text()]
    assert uses, f"no test mentions {name}"
