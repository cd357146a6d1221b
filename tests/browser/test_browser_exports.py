"""Every chart and table has export buttons; a click gives the report CLI's file (issue "Paper figures", 4)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEMO, download_by_click, loaded
from playwright.sync_api import Browser, Page, expect

from analysis.workspace import read_manifest
from tests.export_inspect import pdf_info, png_info

pytestmark = pytest.mark.browser
TIMEOUT = 120_000


@pytest.fixture(scope="module")
def overview(browser: Browser, browser_context_args: dict, server: str) -> Iterator[Page]:
    """One Overview page for both tests: each downloads through its own popover and closes it, and neither
    depends on what the other clicked (a second page load would prove nothing more)."""
    context = browser.new_context(**browser_context_args)
    page = context.new_page()
    page.goto(server)
    loaded(page)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=TIMEOUT)
    try:
        yield page
    finally:
        context.close()


def _download(page: Page, popover: int, label: str) -> bytes:
    page.get_by_role("button", name="Export").nth(popover).click()
    button = page.get_by_role("button", name=label, exact=True).first
    expect(button).to_be_visible(timeout=TIMEOUT)
    data = download_by_click(page, button.click)
    page.keyboard.press("Escape")
    return data


def test_chart_downloads_are_paper_files(overview: Page, screenshots: Path) -> None:
    page = overview
    pdf = _download(page, 0, "PDF")
    info = pdf_info(pdf)
    assert pdf.startswith(b"%PDF") and info["pages"] == 1
    png = _download(page, 0, "PNG")
    assert png_info(png)["width"] == 909  # 3.03 in (ACL column) at 300 dpi, the report CLI's single-column preset
    page.screenshot(path=str(screenshots / "export_popover.png"))


def test_table_downloads_as_csv_and_latex(overview: Page) -> None:
    page = overview
    exports = page.get_by_role("button", name="Export")
    assert exports.count() > 2  # the leaderboard's chart and table, then the comparison's and SGD's
    table = 1  # the leaderboard table comes right after its chart
    rows = list(csv.DictReader(io.StringIO(_download(page, table, "CSV").decode("utf-8"))))
    runs = len(read_manifest(DEMO).entries)
    assert len(rows) == runs and {"run", "turns", "JGA"} <= set(rows[0])  # the report's leaderboard table
    latex = _download(page, table, "LaTeX").decode("utf-8")
    assert "\\toprule" in latex and latex.count("\\begin{") == latex.count("\\end{")
