"""The docstring examples of the analysis package run (scikit-learn style 3-row examples)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import analysis

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(analysis.__path__, "analysis.") if not m.name.endswith(".__main__")
)


class DefiningModuleFinder(doctest.DocTestFinder):
    """A function's examples belong to the module that defines it (its globals), not to the one its
    `__module__` names: `analysis.views` and `analysis.figures` name their functions after the package,
    and the examples run with the names of the module they are written in, reported at its lines."""

    def _from_module(self, module: Any, obj: Any) -> bool:
        if inspect.isfunction(obj):
            return module.__dict__ is obj.__globals__
        return bool(super()._from_module(module, obj))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    for test in DefiningModuleFinder().find(module, name):
        runner.run(test)
    assert runner.failures == 0


def test_a_package_named_function_runs_its_examples_once_where_written() -> None:
    """`analysis.views.comparable_groups` is named after the package and defined in its overview module:
    its examples run there, and not a second time in the package (which lacks the module's `pd`)."""
    from analysis import views
    from analysis.views import overview

    assert views.comparable_groups.__module__ == "analysis.views"
    where = {t.name for t in DefiningModuleFinder().find(overview, "analysis.views.overview") if t.examples}
    assert "analysis.views.overview.comparable_groups" in where
    assert not [t for t in DefiningModuleFinder().find(views, "analysis.views") if t.examples]
