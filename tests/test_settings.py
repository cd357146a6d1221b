"""One table of environment variables (`analysis.settings.SETTINGS`): every `DST_*` name the repository
mentions is declared there, no module but `analysis/settings.py` reads one from the environment, and
docs/settings.md lists the table as it is."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from analysis import settings
from analysis.errors import InputError
from analysis.formats.reading import limit
from tests.conftest import ROOT

NAME = re.compile(r"\bDST_[A-Z0-9_]+\b")


def _tracked(*patterns: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", *patterns], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).is_file()]


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _environment_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, key) of every read of `os.environ` by key (`.get`, `[...]`) or of `os.getenv`; the key as
    written (a name or an expression when it is not a string constant)."""
    found = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            target = node.func
            on_environ = _is_environ(target.value)
            if (target.attr == "get" and on_environ) or target.attr == "getenv":
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            key = node.slice
        if key is not None:
            text = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ast.unparse(key)
            found.append((node.lineno, text))
    return found


def test_every_dst_variable_named_in_the_repository_is_declared() -> None:
    declared = {s.name for s in settings.SETTINGS}
    named: dict[str, str] = {}
    for path in _tracked():
        if path == Path(__file__).resolve():  # this file's examples of undeclared names
            continue
        if path.suffix in (".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".yml", ".yaml") or path.name == "Makefile":
            for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                named.setdefault(name, str(path.relative_to(ROOT)))
    assert {n: where for n, where in named.items() if n not in declared} == {}
    assert len(named) >= 10  # the checker sees the variables (ten read by the package alone)


def test_no_module_reads_a_dst_variable_past_the_table() -> None:
    """Reads by a `DST_` name, or by a key that is not a constant (which could be one), happen in
    analysis/settings.py only; other variables (XDG_CACHE_HOME, MALLOC_ARENA_MAX) may be read anywhere."""
    bad = []
    for path in _tracked("*.py"):
        if path == ROOT / "analysis" / "settings.py":
            continue
        for line, key in _environment_reads(ast.parse(path.read_text(encoding="utf-8"))):
            if key.startswith("DST_") or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
                bad.append(f"{path.relative_to(ROOT)}:{line} reads {key}")
    assert bad == []


def test_the_checker_sees_environment_reads() -> None:
    sample = 'import os\nos.environ.get("DST_X")\nos.environ["DST_Y"]\nos.getenv(name)\nos.environ["A"] = "1"\n'
    assert _environment_reads(ast.parse(sample)) == [(2, "DST_X"), (3, "DST_Y"), (4, "name")]


def test_docs_list_the_table_as_declared() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings.markdown_table() in page, "docs/settings.md: regenerate the table (see the page)"
    assert "docs/settings.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_each_declaration_is_whole() -> None:
    assert len({s.name for s in settings.SETTINGS}) == len(settings.SETTINGS)
    for s in settings.SETTINGS:
        assert s.name.startswith("DST_") and s.type and s.shown and s.meaning and s.read_by, s.name
        if isinstance(s.default, int | float) and not isinstance(s.default, bool):
            assert f"{s.default:g}" in s.shown or f"{s.default}" in s.shown, (s.name, s.shown)


def test_values_are_read_through_the_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DST_MAX_DEPTH", raising=False)
    assert limit("depth") == settings.setting("DST_MAX_DEPTH").default == 200
    monkeypatch.setenv("DST_MAX_DEPTH", " 7 ")
    assert limit("depth") == 7
    monkeypatch.setenv("DST_MAX_DEPTH", "seven")
    with pytest.raises(InputError, match=r"environment variable DST_MAX_DEPTH='seven' must be a positive integer"):
        limit("depth", "f.json", "jsonl")
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path))
    from analysis.formats.cache import cache_dir
    from analysis.store.entries import store_root

    assert (cache_dir(), store_root()) == (tmp_path / "parsed", tmp_path / "scored")  # one folder, resolved once
    monkeypatch.setenv("DST_CACHE_DIR", "")
    assert (cache_dir(), store_root()) == (None, None)
    with pytest.raises(KeyError, match="not declared"):
        settings.raw("DST_NOT_A_SETTING")
