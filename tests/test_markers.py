"""Markers say what a test needs, so that `make check` can leave out whatever needs a browser, a server, a
database or a report build, and run the rest in minutes. Checked here on every collected test, from what it
really uses: its fixtures (with the fixtures those depend on) and the source of its function, of the module
functions it calls and of its fixtures. A test that starts a server without saying `slow` fails here, not by
making `make check` slow."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# marker -> fixtures that mean it (pytest resolves each test's fixture closure, so an indirect use counts)
FIXTURES = {
    "browser": {"page", "browser", "context"},
    "postgres": {"postgres_server", "pg_url"},
    "realdata": {"realdata"},
    "slow": {"demo_plan"},  # the demo's report plan (tests/conftest.py)
}
# marker -> what, found in the source a test runs, means it
SOURCE = {
    "realdata": re.compile(r"\brealdata_path\(|\bREALDATA\b"),
    # a dashboard server, a report build or a LaTeX compile: what `make check` leaves out
    "slow": re.compile(r"\bstart_server\(|\bbuild_report\(|[\"'](?:pdflatex|xelatex|latexmk)[\"']|\bcompiled\("),
    "postgres": re.compile(r"\bpostgres_server\b"),
}
BROWSER_FOLDER = Path(__file__).resolve().parent / "browser"


@functools.cache
def _source(obj: Any) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return ""


def _called_module_functions(source: str, module: ModuleType | None, seen: set[str]) -> Iterable[str]:
    """The sources of the functions of `module` that `source` calls, and of those they call, once each."""
    if module is None or not source:
        return
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in seen:
            target = getattr(module, node.func.id, None)
            if inspect.isfunction(target) and target.__module__ == module.__name__:
                seen.add(node.func.id)
                body = _source(target)
                yield body
                yield from _called_module_functions(body, module, seen)


@functools.cache
def _with_callees(obj: Any, module: ModuleType | None) -> str:
    """The source of `obj` and of the functions of `module` it calls (transitively), read once per session: the
    parametrized cases of a test and the tests sharing a fixture share it."""
    body = _source(obj)
    return "\n".join([body, *_called_module_functions(body, module, set())])


def sources_of(item: pytest.Item) -> str:
    """The test function's source, the module functions it calls (transitively) and its fixtures' sources."""
    info = getattr(item, "_fixtureinfo", None)
    fixtures = tuple(d.func for ds in getattr(info, "name2fixturedefs", {}).values() for d in ds)
    return _sources(getattr(item, "function", None), getattr(item, "module", None), fixtures)


@functools.cache
def _sources(function: Any, module: ModuleType | None, fixtures: tuple[Any, ...]) -> str:
    """`sources_of`, once for the cases of a parametrized test (one string, so its needs are found once)."""
    parts = [_with_callees(function, module)]
    parts += [_with_callees(fixture, inspect.getmodule(fixture)) for fixture in fixtures]
    return "\n".join(parts)


def needed_markers(*, path: Path, fixtures: Iterable[str], source: str) -> set[str]:
    """The markers a test with these facts must carry."""
    fixtures = set(fixtures)
    needed = {marker for marker, names in FIXTURES.items() if fixtures & names}
    needed |= {marker for marker, pattern in SOURCE.items() if pattern.search(source)}
    if BROWSER_FOLDER in path.resolve().parents:
        needed.add("browser")
    return needed


def missing_markers(items: Iterable[pytest.Item], facts: Callable[[pytest.Item], str] = sources_of) -> list[str]:
    problems = []
    needs: dict[tuple[Path, frozenset[str], str], set[str]] = {}  # the cases of a parametrized test: found once
    for item in items:
        if item.nodeid.startswith("tests/test_markers.py"):
            continue
        # a parametrized argument is no fixture (a test parametrized over `page` names uses no browser)
        callspec = getattr(item, "callspec", None)
        fixtures = set(getattr(item, "fixturenames", ())) - set(callspec.params if callspec else ())
        key = (Path(str(item.fspath)), frozenset(fixtures), facts(item))
        if key not in needs:
            needs[key] = needed_markers(path=key[0], fixtures=key[1], source=key[2])
        needed = set(needs[key])
        have = {mark.name for mark in item.iter_markers()}
        if "browser" in have:  # left out of `make check` already: its server needs no `slow` of its own
            needed.discard("slow")
        if needed - have:
            problems.append(f"{item.nodeid}: needs {sorted(needed - have)}")
    return problems


def test_every_collected_test_carries_the_markers_of_what_it_needs(request: pytest.FixtureRequest) -> None:
    problems = missing_markers(request.session.items)
    assert not problems, "\n".join(problems)


def test_the_markers_are_declared_and_make_check_leaves_out_what_needs_a_browser_server_or_database(
    pytestconfig: pytest.Config,
) -> None:
    declared = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert {"browser", "slow", "realdata", "postgres"} <= declared
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    check = re.search(r"^check:.*?(?=^\S)", makefile + "\nend", flags=re.S | re.M)
    assert check is not None, "the Makefile has no `check` target"
    assert '-m "not browser and not slow and not postgres"' in check.group(0)


@pytest.mark.parametrize(
    ("path", "fixtures", "source", "expected"),
    [
        ("tests/test_x.py", ["tmp_path"], "def test_a(tmp_path): assert 1", set()),
        ("tests/test_x.py", ["pg_url", "postgres_server"], "def test_a(pg_url): ...", {"postgres"}),
        ("tests/test_x.py", [], "def test_a():\n    path = realdata_path('mlcsg', 'x.json')", {"realdata"}),
        ("tests/test_x.py", ["realdata"], "def test_a(realdata): ...", {"realdata"}),
        ("tests/test_x.py", [], "def server():\n    process, url = start_server(DEMO)", {"slow"}),
        ("tests/test_x.py", [], "R.build_report(ws, out)", {"slow"}),
        ("tests/test_x.py", ["demo_plan"], "def test_a(demo_plan): ...", {"slow"}),
        ("tests/test_x.py", [], 'subprocess.run(["pdflatex", "t.tex"])', {"slow"}),
        ("tests/browser/test_y.py", ["page"], "def test_b(page): ...", {"browser"}),
    ],
)
def test_the_checker_sees_each_need(path: str, fixtures: list[str], source: str, expected: set[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    assert needed_markers(path=root / path, fixtures=fixtures, source=source) == expected


def test_the_checker_flags_a_test_without_its_marker() -> None:
    class Item:
        nodeid = "tests/test_fake.py::test_starts_a_server"
        fspath = Path(__file__).resolve().parent / "test_fake.py"
        fixturenames = ("tmp_path",)

        def iter_markers(self):
            return iter(())

    problems = missing_markers([Item()], facts=lambda item: "process, url = start_server(DEMO)")  # type: ignore[list-item]
    assert problems == ["tests/test_fake.py::test_starts_a_server: needs ['slow']"]
