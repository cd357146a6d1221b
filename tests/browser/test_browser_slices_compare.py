"""A slice opens its turns against another run, in a real browser (issue 41 requirements 3 and 8): on the
Slices page a click on a slice's bar lists the slice's turns only the focus run and only the comparison run
(the best other run on its gold, by default) get right, and a row of a list opens the Dialogue viewer at that
turn with the other run side by side; the screenshots of the path are kept in tests/screenshots."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import DEMO, click_until_rerun, loaded, open_first_row_side_by_side
from playwright.sync_api import Page, expect

from analysis import slices as S
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

pytestmark = pytest.mark.browser
A = "simulated-B-mwz-en-predicted-s1"
OTHERS = ("simulated-C-mwz-en-predicted", "simulated-A-mwz-en-predicted")
TIMEOUT = 120_000


@pytest.fixture(scope="module")
def scored():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return {name: score_run(load_entry(entries[name])) for name in (A, *OTHERS)}


def test_a_slice_bar_opens_its_turns_against_the_best_other_run_and_a_row_the_viewer(
    page: Page, server: str, scored, screenshots: Path
) -> None:
    report = S.find_slices(scored[A])
    best = S.comparison_runs(scored[A], [scored[n] for n in OTHERS])[0]
    page.goto(f"{server}/slices?" + urlencode({"page": "slices", "runs": ",".join([A, *OTHERS]), "run": A}))
    loaded(page)
    expect(page.get_by_role("combobox", name="Compare the slice with")).to_have_value(best, timeout=TIMEOUT)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    expect(chart).to_be_attached(timeout=TIMEOUT)
    chart.scroll_into_view_if_needed()
    bars = chart.locator(".barlayer .point path")
    expect(bars).to_have_count(len(report.slices), timeout=TIMEOUT)

    def click_bar() -> None:  # the top bar (rank 1), its place read afresh: the chart may still be laying out
        boxes = [b for b in (bars.nth(i).bounding_box() for i in range(bars.count())) if b is not None]
        box = min(boxes, key=lambda b: b["y"])
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    click_until_rerun(page, click_bar)
    top = report.slices.iloc[0]
    heading = page.get_by_text(f"Turns behind the difference, slice {top['slice']}: A = {A}, B = {best}")
    expect(heading).to_be_visible(timeout=TIMEOUT)
    found = S.slice_differences(scored[A], scored[best], predicates=top["predicates"])
    counts = found["counts"]
    assert counts["only_a"]["turns"] and counts["only_b"]["turns"]
    for side, title in (("only_a", "Only A right"), ("only_b", "Only B right")):
        n = counts[side]
        expect(page.get_by_text(f"{title}: {n['turns']:,} turns in {n['dialogues']:,} dialogues")).to_be_visible()
    expect(page.get_by_text(f"where {top['slice']}: {top['turns']:,}")).to_be_visible()  # A's own list stays
    assert "diff=slices" in page.url  # the link carries the slice and the comparison run
    heading.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "slice_difference_lists.png"), full_page=False)

    grids = page.locator('[data-testid="stDataFrame"]')
    only_a = grids.nth(grids.count() - 3)  # the slices table, the two lists, the slice's own turns
    open_first_row_side_by_side(page, only_a, found["only_a"].iloc[0], A, best)
    page.screenshot(path=str(screenshots / "slice_difference_side_by_side.png"), full_page=False)
