"""Import directions, read with `ast`: analysis never imports Streamlit, the pages or ui; pages never
import pandas (they place what analysis computes); and the project's modules and folders import each other
in pipeline order (`PIPELINE`), without circles, the readers, conventions and scoring never reaching a
feature, an export or the review.

`python tests/test_imports.py [ROOT]` prints the graph's figures (imports, those against the order, circles)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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


# --- the import graph of the project's modules and folders -------------------------------------------------
#
# Nodes: each module of `analysis/` (`analysis.scoring`), each sub-package of `analysis/` as one folder
# (`analysis.sgd`), `ui` and `pages` as one folder each, `page_registry` and `app`; `analysis` itself is the
# package's lazy public facade. An edge is "node A imports something of node B" (any import statement, at
# module or function level, `if TYPE_CHECKING` included, and `importlib.import_module("...")`), counted once
# per pair of nodes. Inside a folder, the modules' own graph is checked for circles too.


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's code (tests and scripts aside)."""
    paths = [*(root / "analysis").rglob("*.py"), *(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py")]
    paths += [p for p in (root / "page_registry.py", root / "app.py") if p.is_file()]
    modules = {}
    for path in sorted(paths):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported_names(path: Path, modules: dict[str, Path]) -> set[str]:
    """What `path` imports, as dotted names: `from analysis import stats` is `analysis.stats` (a module),
    `from analysis.model import Run` is `analysis.model`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in modules else node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            names.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return names


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module a dotted name lives in (`analysis.model.Run` -> `analysis.model`); None: outside."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the project modules it imports (itself left out)."""
    modules = project_modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        owners = {_owner(imported, modules) for imported in _imported_names(path, modules)}
        graph[name] = {o for o in owners if o is not None and o != name}
    return graph


def node_of(module: str, root: Path = ROOT) -> str:
    """The graph node a module belongs to: its `analysis/` sub-package, `ui`, `pages`, or itself."""
    parts = module.split(".")
    if parts[0] in ("ui", "pages"):
        return parts[0]
    if parts[0] == "analysis" and len(parts) > 1 and (len(parts) > 2 or (root / "analysis" / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return module


def node_graph(modules: dict[str, set[str]], root: Path = ROOT) -> dict[str, set[str]]:
    """The module graph folded onto nodes (`node_of`): node -> the other nodes it imports."""
    graph: dict[str, set[str]] = {}
    for module, imported in modules.items():
        node = node_of(module, root)
        graph.setdefault(node, set()).update(n for n in map(lambda m: node_of(m, root), imported) if n != node)
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The circles of a graph: its strongly connected components of more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, targets = work[-1]
            w = next(targets, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def all_circles(modules: dict[str, set[str]], root: Path = ROOT) -> list[list[str]]:
    """Circles between nodes, and inside each folder between its modules."""
    found = circles(node_graph(modules, root))
    for folder in sorted({node_of(m, root) for m in modules if node_of(m, root) != m}):
        inner = {
            m: {t for t in ts if node_of(t, root) == folder} for m, ts in modules.items() if node_of(m, root) == folder
        }
        found += circles(inner)
    return found


def layer_of(node: str) -> int:
    """A node's place in the pipeline (`PIPELINE`)."""
    for rank, layer in enumerate(PIPELINE):
        if node in layer:
            return rank
    raise KeyError(f"{node} is in no layer of PIPELINE: place it there")


def against_order(graph: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """The imports that run against the pipeline: a node importing one of a later layer."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer_of(a) < layer_of(b))


def figures(root: Path = ROOT) -> dict[str, Any]:
    modules = module_graph(root)
    graph = node_graph(modules, root)
    return {
        "nodes": len(graph),
        "imports": sum(map(len, graph.values())),
        "against_order": against_order(graph),
        "circles": all_circles(modules, root),
    }


# The pipeline, first to last: a node may import its own layer and earlier ones. Refined from what the code
# is: `figures` (chart builders over palette and labels) comes before the analyses that draw with it; the
# review comes before the workspace (which checks the manifest's `[review]` table), the score store (which
# stores review items) and the exports; `page_registry` before `ui`, which reads it.
PIPELINE: tuple[tuple[str, ...], ...] = (
    # foundations, below every stage
    (
        "analysis.errors",
        "analysis.escaping",
        "analysis.safety",
        "analysis.safe_csv",
        "analysis.palette",
        "analysis.outcomes",
        "analysis.model",
        "analysis.settings",
        "analysis.gold_side",  # what every run on one gold file shares, computed once
        "analysis.pace",  # the words of every scoring progress line
    ),
    ("analysis.formats",),  # readers
    ("analysis.loading",),  # files to a Run
    ("analysis.conventions", "analysis.mwzeval_rules", "analysis.sgd_rules"),  # conventions, scorers' rules
    ("analysis.scorer_inputs",),  # what each scorer reads as gold
    ("analysis.scoring",),
    # measures of a scored run (dstc10_rules: the DSTC10 scorer's own metrics over scored tables)
    (
        "analysis.metrics",
        "analysis.registry",
        "analysis.suite",
        "analysis.diagnostics",
        "analysis.stats",
        "analysis.dstc10_rules",
        "analysis.wording",
    ),
    ("analysis.figures",),  # chart builders
    # features: analyses of scored runs
    (
        "analysis.shared_turns",
        "analysis.compare",
        "analysis.seed_compare",
        "analysis.gap_support",
        "analysis.crosslingual",
        "analysis.reconcile",
        "analysis.sgd",
        "analysis.fewjoint",
        "analysis.seeds",
        "analysis.vocabulary",
    ),
    ("analysis.views", "analysis.slices"),  # page-ready frames over the features
    ("analysis.review",),
    ("analysis.workspace", "analysis.forking", "analysis.isolated", "analysis.manifest_write"),
    ("analysis.store",),
    ("analysis.isolated_jobs",),  # scoring in the worker process, which then saves to the store
    ("analysis.export",),
    ("analysis.cli", "analysis.__main__"),
    ("analysis.demo",),
    ("analysis",),  # the package's lazy public facade
    ("page_registry",),
    ("ui",),
    ("pages",),
    ("app",),
)
# Imports that run against the pipeline, each with why; at most two.
KNOWN_AGAINST_ORDER = {
    ("analysis.loading", "analysis.conventions"): "a nested file over TRADE's 30 slots (names under TRADE's "
    "aliases) defaults to TRADE's convention: loading reads the convention's slot names",
}
# The inner walls of `analysis/`: the readers, conventions and scoring never reach (even through another
# module) a feature, an export or the review.
EARLY_STAGES = (
    "analysis.formats",
    "analysis.loading",
    "analysis.conventions",
    "analysis.mwzeval_rules",
    "analysis.sgd_rules",
    "analysis.scoring",
)
FEATURES_EXPORTS_REVIEW = (
    "analysis.views",
    "analysis.compare",
    "analysis.shared_turns",
    "analysis.seed_compare",
    "analysis.gap_support",
    "analysis.crosslingual",
    "analysis.slices",
    "analysis.reconcile",
    "analysis.fewjoint",
    "analysis.sgd",
    "analysis.seeds",
    "analysis.export",
    "analysis.review",
)


def reachable(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """Every node `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


@pytest.fixture(scope="module")
def graph() -> dict[str, Any]:
    modules = module_graph()
    return {"modules": modules, "nodes": node_graph(modules)}


def test_every_node_has_a_place_in_the_pipeline(graph):
    unplaced = sorted(n for n in graph["nodes"] if not any(n in layer for layer in PIPELINE))
    assert unplaced == [], f"place these in PIPELINE (tests/test_imports.py): {unplaced}"
    placed = [n for layer in PIPELINE for n in layer]
    assert len(placed) == len(set(placed))


def test_no_circles_between_modules_and_folders_nor_inside_a_folder(graph):
    assert all_circles(graph["modules"]) == []


def test_imports_against_the_pipeline_are_the_known_few(graph):
    assert len(KNOWN_AGAINST_ORDER) <= 2
    assert against_order(graph["nodes"]) == sorted(KNOWN_AGAINST_ORDER)


@pytest.mark.parametrize("stage", EARLY_STAGES)
def test_readers_conventions_and_scoring_never_reach_features_exports_or_review(graph, stage):
    assert stage in graph["nodes"]
    reached = reachable(graph["nodes"], stage) & set(FEATURES_EXPORTS_REVIEW)
    assert reached == set(), f"{stage} imports {sorted(reached)}"


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_graph_checker_finds_planted_circles_and_back_imports(tmp_path):
    root = _project(
        tmp_path,
        {
            "analysis/__init__.py": "",
            "analysis/model.py": "from analysis.errors import InputError\n",
            "analysis/errors.py": "",
            # a circle between a module and a folder, closed inside a function
            "analysis/scoring.py": "from analysis.formats import parse\n",
            "analysis/formats/__init__.py": "def parse():\n    from analysis import scoring\n",
            # a circle inside a folder
            "analysis/demo/__init__.py": "",
            "analysis/demo/build.py": "from analysis.demo import sgd\n",
            "analysis/demo/sgd.py": "def f():\n    from analysis.demo.build import pick\n",
            "ui/__init__.py": "import page_registry\n",
            "page_registry.py": "from analysis.model import Run\n",
        },
    )
    modules = module_graph(root)
    assert modules["analysis.formats"] == {"analysis.scoring"}  # a function-level import counts
    nodes = node_graph(modules, root)
    assert nodes["analysis.demo"] == set() and nodes["ui"] == {"page_registry"}
    assert all_circles(modules, root) == [
        ["analysis.formats", "analysis.scoring"],
        ["analysis.demo.build", "analysis.demo.sgd"],
    ]
    assert against_order(nodes) == [("analysis.formats", "analysis.scoring")]
    assert reachable(nodes, "ui") == {"page_registry", "analysis.model", "analysis.errors"}  # through others too


def test_mypy_skips_only_packages_no_checked_file_imports() -> None:
    """pyproject's `follow_imports = "skip"` list types a package as Any, which is only sound for packages our
    checked files never import (they reach mypy through Streamlit, DuckDB or SQLAlchemy)."""
    import tomllib

    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    skipped = {
        pattern.removesuffix(".*")
        for override in mypy.get("overrides", [])
        if override.get("follow_imports") == "skip"
        for pattern in override["module"]
    }
    assert "pyspark" in skipped  # the list the check reads is the one in force
    checked = [
        p
        for entry in mypy["files"]
        for p in ([ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py"))
    ]
    assert len(checked) > 100
    imported = {(str(path.relative_to(ROOT)), name) for path in checked for name in imported_modules(path)}
    assert not {(where, name) for where, name in imported if top(name) in skipped}


if __name__ == "__main__":  # the figures of a checkout: python tests/test_imports.py [ROOT]
    found = figures(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT)
    print(f"{found['nodes']} modules and folders, {found['imports']} imports between them")
    print(
        f"{len(found['against_order'])} against the pipeline:",
        *(f"{a} -> {b}" for a, b in found["against_order"]),
        sep="\n  ",
    )
    print(f"{len(found['circles'])} circles:", *(" <-> ".join(c) for c in found["circles"]), sep="\n  ")
