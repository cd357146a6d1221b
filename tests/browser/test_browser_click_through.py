"""Click-through in a real browser (issue 17 requirement 4): a bar of the first-error chart lists the dialogues
whose first error is at that turn, and a row of that list opens the dialogue viewer at the dialogue's first
error."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import DEMO, loaded, rerun
from playwright.sync_api import Page, expect

from analysis import views
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

pytestmark = pytest.mark.browser
RUN = "simulated-A-mwz-en-predicted"
TIMEOUT = 120_000
ROW = 35  # Streamlit's grid: a header row, then rows of 35 px


@pytest.fixture(scope="module")
def scored():
    entry = next(e for e in read_manifest(DEMO).entries if e.name == RUN)
    return score_run(load_entry(entry))


def test_a_first_error_bar_opens_its_dialogues_and_a_row_the_viewer(
    page: Page, server: str, scored, screenshots: Path
) -> None:
    bins = views.first_error_distribution([scored])
    counts = bins["n_dialogues"].where(bins["label"] != "none", 0)  # a turn's bin, not the dialogues never wrong
    position = int(counts.to_numpy().argmax())  # the tallest such bar: the easiest to hit
    label = str(bins["label"].iloc[position])
    dialogues = views.first_error_dialogues(scored, label=label)
    assert label != "none" and len(dialogues) == int(bins["n_dialogues"].iloc[position])
    expected = str(dialogues["dialogue_id"].iloc[0])
    turn = int(dialogues["first_error_turn"].iloc[0])

    query = {"page": "turn_depth", "runs": RUN, "run": RUN, "view": "Where errors come from"}
    page.goto(f"{server}/turn_depth?" + urlencode(query))
    loaded(page)
    chart = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
    bars = chart.locator(".bars path")
    expect(bars.nth(position)).to_be_attached(timeout=TIMEOUT)
    assert bars.count() == len(bins)
    box = bars.nth(position).bounding_box()
    assert box is not None and box["height"] > 4
    with rerun(page):
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page.get_by_text(f"Dialogues of {RUN} first wrong at turn {label}: {len(dialogues):,}")).to_be_visible(
        timeout=TIMEOUT
    )
    page.screenshot(path=str(screenshots / "click_through_first_error_list.png"))

    grid = page.locator('[data-testid="stDataFrame"]').nth(1)  # under the first-error counts
    expect(grid).to_be_visible(timeout=TIMEOUT)
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    assert box is not None
    with rerun(page):
        page.mouse.click(box["x"] + 12, box["y"] + ROW + ROW / 2)  # the first row's selector
    expect(page.get_by_role("heading", name="Dialogue viewer")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("heading", name=f"Turn {turn}", exact=True)).to_be_visible(timeout=TIMEOUT)
    assert f"dialogue={expected}" in page.url and f"turn={turn}" in page.url and "page=dialogue" in page.url
    expect(page.get_by_role("combobox", name="Dialogue", exact=True)).to_have_value(
        views.dialogue_index(scored).set_index("dialogue_id").loc[expected, "label"], timeout=TIMEOUT
    )
    page.screenshot(path=str(screenshots / "click_through_dialogue.png"))
