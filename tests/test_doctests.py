"""The docstring examples of the analysis package run (scikit-learn style 3-row examples)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import analysis

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(analysis.__path__, "analysis.") if not m.name.endswith(".__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
