"""Import directions, read with `ast`: analysis never imports Streamlit, the pages or ui; pages never
import pandas (they place what analysis computes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            names.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return names


def top(name: str) -> str:
    return name.split(".")[0]


ANALYSIS = sorted((ROOT / "analysis").rglob("*.py"))
PAGES = sorted((ROOT / "pages").glob("*.py"))


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: str(p.relative_to(ROOT)))
def test_analysis_never_imports_streamlit_pages_or_ui(path):
    bad = {n for n in imported_modules(path) if top(n) in {"streamlit", "pages", "ui", "app"}}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_never_import_pandas(path):
    bad = {n for n in imported_modules(path) if top(n) in {"pandas", "numpy"}}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}: pages place, analysis computes"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_do_no_grouping(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not calls & {"groupby", "pivot_table", "agg", "merge", "value_counts"}, path.name


def test_the_checker_sees_imports(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import streamlit as st\nfrom pandas import DataFrame\nimportlib.import_module('ui')\n")
    assert {"streamlit", "pandas", "ui"} <= imported_modules(sample)


def test_there_are_pages_and_analysis_modules():
    assert len(PAGES) >= 6 and len(ANALYSIS) >= 10
