"""Issue 42 req 6: the export buttons of every page give LaTeX and PDF that paste into an ACL paper.

Each page of the registry is opened with AppTest over the demo workspace (its first view); every table and
figure it places with an export popover is recorded, then exported as its buttons would (`ui.place._table_file`
for LaTeX, `analysis.export.figure_bytes` for PDF) and compiled in an ACL-like two-column document
(`tests/acl_latex.py`) with pdflatex and XeLaTeX: no error, no overfull box over 1 pt, no Type 3 font in any
PDF (the figures' included).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from analysis import export
from analysis.export.report import figure_snippet
from page_registry import PAGES
from tests import acl_latex

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)"),
    pytest.mark.skipif(not acl_latex.HAVE_TEX, reason="pdflatex, xelatex and pdffonts (scripts/system-deps.sh)"),
    pytest.mark.skipif(export.browser_path() is None, reason="no Chromium (make test installs it)"),
]


@pytest.fixture(scope="module")
def page_exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per page: a folder with the LaTeX of every table and the PDF and snippet of every figure it exports."""
    from ui import place

    recorded: dict[str, list[tuple[str, Any, dict[str, Any]]]] = {}
    current: list[str] = []

    def tables(frame: Any, **options: Any) -> None:
        recorded.setdefault(current[0], []).append(("table", frame, options))

    def figures(fig: Any, **options: Any) -> None:
        recorded.setdefault(current[0], []).append(("figure", fig, options))

    saved = place._table_exports, place._figure_exports
    place._table_exports, place._figure_exports = tables, figures  # type: ignore[assignment]
    # One session visits every page, as a reader does: each page's own exports are recorded once. (An app
    # opened afresh per page ran the Overview first each time, so its eight exports were recorded, exported
    # and compiled ten times over: 32 figures exported instead of 14.)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    try:
        for page in PAGES:
            current[:] = [page.url_path]
            if page.url_path == "overview":
                at.run()
            else:
                at.switch_page(page.file).run()
            assert not at.exception, (page.url_path, [e.value for e in at.exception])
    finally:
        place._table_exports, place._figure_exports = saved  # type: ignore[assignment]
    folders = {}
    root = tmp_path_factory.mktemp("page-exports")
    with export.export_session():
        for page, items in recorded.items():
            folder = root / page
            folder.mkdir()
            for at, (kind, thing, options) in enumerate(items):
                name = f"{kind}-{at}"
                if kind == "table":
                    data = place._table_file(
                        thing,
                        "latex",
                        name=options["name"],
                        na_rep=options.get("na_rep", "–"),
                        export_as=options.get("export_as"),
                        groups=None,
                    )
                    (folder / f"{name}.tex").write_bytes(data)
                else:
                    (folder / f"{name}.pdf").write_bytes(export.figure_bytes(thing, "pdf"))
                    snippet = figure_snippet(name, export.tables.caption_from_name(options["name"]), f"{name}.pdf")
                    (folder / f"{name}.tex").write_text(snippet, encoding="utf-8")
            folders[page] = folder
    return folders


def test_every_page_exports_something(page_exports: dict[str, Path]) -> None:
    assert len(page_exports) >= len(PAGES) - 1  # a page may export nothing in its first view
    assert sum(len(list(f.glob("figure-*.pdf"))) for f in page_exports.values()) >= len(PAGES)
    assert sum(len(list(f.glob("table-*.tex"))) for f in page_exports.values()) >= len(PAGES) // 2


@pytest.mark.parametrize("engine", acl_latex.ENGINES)
def test_every_page_export_compiles_in_an_acl_page(page_exports: dict[str, Path], engine: str) -> None:
    for page, folder in page_exports.items():
        snippets = sorted(p.name for p in folder.glob("*.tex") if not p.name.startswith("acl-"))
        if not snippets:
            continue
        compiled = acl_latex.compile_snippets(folder, snippets, engine, name="acl")
        assert compiled.problems() == [], (page, compiled.problems(), compiled.errors[:3])
        for pdf in folder.glob("figure-*.pdf"):
            assert "Type 3" not in acl_latex.pdf_font_types(pdf), (page, pdf.name)
