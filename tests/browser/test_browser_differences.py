"""Every difference opens its turns, in a real browser (issue 41 requirements 3 and 8): a click on a cell of the
Overview's significance matrix lists the turns only A and only B get right, and a row of a list opens the
Dialogue viewer at that turn with the other run side by side; the screenshots of the path are kept in
tests/screenshots."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import DEMO, click_until_rerun, loaded, open_first_row_side_by_side, steady_box
from playwright.sync_api import Page, expect

from analysis import views
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

pytestmark = pytest.mark.browser
A, B = "simulated-B-mwz-en-predicted-s1", "simulated-C-mwz-en-predicted"
TIMEOUT = 120_000


@pytest.fixture(scope="module")
def scored():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return {name: score_run(load_entry(entries[name])) for name in (A, B)}


def test_a_matrix_cell_opens_its_turns_and_a_row_the_viewer_side_by_side(
    page: Page, server: str, scored, screenshots: Path
) -> None:
    page.goto(f"{server}/overview?" + urlencode({"page": "overview", "runs": f"{A},{B}"}))
    loaded(page)
    matrix = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".heatmaplayer")).first
    expect(matrix).to_be_attached(timeout=TIMEOUT)
    matrix.scroll_into_view_if_needed()
    cells = matrix.locator(".scatterlayer .points path")
    expect(cells).to_have_count(2, timeout=TIMEOUT)  # the two off-diagonal cells of two runs, significant or not

    def click_cell() -> None:  # the cell's place read afresh once it stays put: the chart may be laying out
        box = steady_box(page, cells.first)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    click_until_rerun(page, click_cell)
    # the first cell is row 0, column 1: B − A with the row run as B
    heading = page.get_by_text("Turns behind the difference, the whole state:")
    expect(heading).to_be_visible(timeout=TIMEOUT)
    run_b, run_a = (A, B) if f"A = {B}" in heading.inner_text() else (B, A)
    found = views.differing_turns(scored[run_a], scored[run_b])
    counts = found["counts"]
    assert counts["only_a"]["turns"] and counts["only_b"]["turns"]
    for side, title in (("only_a", "Only A right"), ("only_b", "Only B right")):
        n = counts[side]
        expect(page.get_by_text(f"{title}: {n['turns']:,} turns in {n['dialogues']:,} dialogues")).to_be_visible()
    assert "diff=overview" in page.url  # the link carries the pick
    heading.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "difference_matrix_lists.png"), full_page=False)

    grids = page.locator('[data-testid="stDataFrame"]')
    only_a = grids.nth(grids.count() - 2)
    open_first_row_side_by_side(page, only_a, found["only_a"].iloc[0], run_a, run_b)
    page.screenshot(path=str(screenshots / "difference_side_by_side.png"), full_page=False)
