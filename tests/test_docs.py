"""The README and the reference pages in docs/ hold together: every page is linked from the README, every
relative link and image resolves (anchors included), and every project path, module and function they name
exists, so a file moved or renamed fails here until its documentation follows."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from analysis.cli.main import build_parser
from analysis.store import TABLES
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The Markdown files a reader is sent between (tests/README.md and benchmarks/README.md are linked too).
PAGES = [README, ROOT / "CONTRIBUTING.md", *DOCS]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^```.*?^```", re.S | re.M)
# Named in the text but never in the repository: written by the benchmarks, or the user's own secrets.
NOT_IN_GIT = ("benchmarks/results/", ".streamlit/secrets.toml")
PROJECT_DIRS = ("analysis/", "ui/", "pages/", "tests/", "benchmarks/", "scripts/", "data/", "docs/", ".streamlit/")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(path: Path) -> str:
    """The file without its fenced code blocks (a `[x](y)` in code is no link)."""
    return CODE_BLOCK.sub("", _text(path))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", _prose(path), re.M)}


def test_every_docs_page_is_linked_from_the_readme() -> None:
    assert DOCS, "docs/ holds no page"
    linked = {(README.parent / target.split("#")[0]).resolve() for target in LINK.findall(_prose(README))}
    assert [p.name for p in DOCS if p.resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.relative_to(ROOT)}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_the_screenshot_is_a_small_png() -> None:
    images = [t for t in LINK.findall(_prose(README)) if t.endswith(".png")]
    assert images, "the README shows no screenshot"
    for image in images:
        data = (ROOT / image).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", image
        assert len(data) < 300 * 1024, f"{image}: {len(data) // 1024} KB"


def test_the_readme_stays_short() -> None:
    """What the tool is, the two commands, a screenshot, your own file; the reference lives in docs/."""
    text = _text(README)
    assert len(text.splitlines()) <= 150
    assert text.index("make run") < text.index("docs/overview.png") < text.index("## Open your own file")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_project_path_named_exists(page: Path) -> None:
    """`analysis/...`, `tests/...` and the like, in code spans (a `file.py::function` suffix ignored)."""
    missing = []
    for token in re.findall(r"`([^`\s]+)`", _text(page)):
        path = token.split("::")[0].rstrip(".,:;")
        if not path.startswith(PROJECT_DIRS) or re.search(r"[<*{$]", path) or path.startswith(NOT_IN_GIT):
            continue
        if not (ROOT / path).exists():
            missing.append(token)
    assert missing == [], f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_every_file_of_the_layout_exists() -> None:
    """The README's layout tree: each folder and file it lists, in the repository's root, in analysis/ (the
    indented entries) or in the folder its line describes (`ui/ ... data.py`)."""
    text = _text(README)
    tree = re.search(r"## Layout\n.*?```\n(.*?)```", text, re.S)
    assert tree, "README.md: no layout tree under ## Layout"
    missing = []
    folder = ROOT
    for line in tree.group(1).splitlines():
        entry = re.match(r"( *)([\w.-]+/?)\s", line)
        if entry and len(entry.group(1)) <= 2:  # a tree entry, not a continuation line
            base = ROOT / "analysis" if entry.group(1) else ROOT
            folder = base / entry.group(2) if entry.group(2).endswith("/") else base
        for name in re.findall(r"(?<![\w/.])([\w-]+(?:/|\.py))(?=[\s,:;)]|$)", line):
            if not any((where / name).exists() for where in (ROOT, ROOT / "analysis", folder)):
                missing.append(name)
    assert missing == [], f"README.md layout names what does not exist: {missing}"


def _resolve(dotted: str) -> Any:
    """The object a dotted name stands for: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: ModuleType | Any = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_and_function_named_exists(page: Path) -> None:
    """`analysis.views.pick_dialogues`, `ui.compute`, and the short forms `views.depth_metrics`,
    `stats.paired_bootstrap` (modules of analysis) in code spans."""
    missing = []
    for token in re.findall(r"`([A-Za-z_]\w*(?:\.\w+)+)(?:\(\))?`", _text(page)):
        if token.split(".")[0] in ("analysis", "ui"):
            dotted = token
        elif _is_module(f"analysis.{token.split('.')[0]}") and not re.search(r"\.(py|md|json|toml|tex)$", token):
            dotted = f"analysis.{token}"
        else:
            continue
        try:
            _resolve(dotted)
        except (AttributeError, ModuleNotFoundError):
            missing.append(token)
    assert missing == [], f"{page.relative_to(ROOT)} names what does not exist: {missing}"


def test_every_command_is_documented() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices
    cli = _text(ROOT / "docs" / "cli.md").split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    readme = _text(README)
    for name in commands:
        assert re.search(rf"-m analysis (\w+ \| )?{name}\b", cli), f"docs/cli.md: no `{name}` line"
        assert f"`{name}`" in readme, f"README.md: `{name}` not listed"


def test_every_stored_table_is_documented() -> None:
    store = _text(ROOT / "docs" / "store.md")
    assert [t for t in TABLES if f"`{t}`" not in store] == []
