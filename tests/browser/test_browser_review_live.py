"""Live review in a real browser (issue 18 requirement 6): two reviewers on one server, each in a browser
context of their own; reviewer A tags an episode and reviewer B's page shows it within 5 s, without any
click or key press on B's side (the Review page's fragments poll the store's change marker every
`ui.review.LIVE_S` s). The server serves a copy of the demo workspace in a temporary folder, so the
annotation store beside its manifest never lands in data/demo. Screenshot: tests/screenshots/review_live_b.png.
"""

from __future__ import annotations

import csv
import io
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEMO, POLL_MS, click_until_sent, download_by_click, loaded, rerun, start_server, stop_server
from playwright.sync_api import Browser, Page, expect

from analysis.review import AnnotationStore
from ui.review import CATCH_UP_S, LIVE_S

pytestmark = pytest.mark.browser
TIMEOUT = 180_000
LIVE_TARGET_S = 5.0
METRIC = '[data-testid="stMetric"]:has-text("{label}") [data-testid="stMetricValue"]'
STORE_COUNT_IS = """(value) => [...document.querySelectorAll('[data-testid="stMetric"]')].some(m =>
    m.innerText.includes('Annotations in the store') && m.innerText.trim().split(/\\s+/).pop() === value)"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review_live") / "demo"
    shutil.copytree(DEMO.parent, folder, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    return folder / "workspace.toml"


@pytest.fixture(scope="module")
def live_server(workspace: Path) -> Iterator[str]:
    url = f"sqlite:///{workspace.parent / 'annotations.sqlite'}"
    process, address = start_server(workspace, env={"DST_ANNOTATIONS_URL": url})
    try:
        yield address
    finally:
        stop_server(process)


def open_as(browser: Browser, server: str, name: str) -> Page:
    context = browser.new_context(viewport={"width": 1400, "height": 2600})
    page = context.new_page()
    page.goto(f"{server}/review?page=review")
    loaded(page)
    expect(page.get_by_role("button", name="Save tags").first).to_be_visible(timeout=TIMEOUT)
    box = page.get_by_role("textbox", name="Reviewer name")
    box.fill(name)
    with rerun(page):
        box.press("Enter")
    expect(page.locator("button:not([disabled])", has_text="Save tags").first).to_be_visible(timeout=TIMEOUT)
    expect(page.locator('[data-testid="stForm"]')).to_have_count(1, timeout=TIMEOUT)
    return page


def metric(page: Page, label: str) -> str:
    return page.locator(METRIC.format(label=label)).first.inner_text()


def test_a_colleagues_tag_appears_within_5_s_without_a_click(
    browser: Browser, live_server: str, workspace: Path, screenshots: Path
) -> None:
    a = open_as(browser, live_server, "ana")
    b = open_as(browser, live_server, "bo")
    assert metric(b, "Annotations in the store") == "0"
    episodes_before = metric(b, "Reviewed episodes")
    assert episodes_before.startswith("0 / ")

    expect(a.get_by_text("No annotations yet")).to_have_count(1)  # what the summaries draw until a save
    # A tags the first episode of her queue (the form's default item) and saves.
    form = a.locator('[data-testid="stForm"]')
    described = form.locator('[data-testid="stText"]').first.inner_text()
    form.get_by_role("combobox").first.click()
    a.get_by_role("option", name="wrong value", exact=True).click()
    a.keyboard.press("Escape")
    click_until_sent(a, form.get_by_role("button", name="Save tags").click)
    expect(a.get_by_text("saved (1 tag, version 1)")).to_be_visible(timeout=TIMEOUT)
    saved = time.perf_counter()
    stored = AnnotationStore(f"sqlite:///{workspace.parent / 'annotations.sqlite'}").annotations()
    assert stored["reviewer"].tolist() == ["ana"] and stored["tags"].tolist() == [("wrong value",)]
    span = int(stored["n_turns"].iloc[0])
    assert f"turn {int(stored['turn_index'].iloc[0])}" in described  # the episode A saw is the one stored

    # B does nothing: within 5 s the store's count, the reviewed episodes and the turns of the span show.
    b.wait_for_function(
        STORE_COUNT_IS,
        arg="1",
        timeout=LIVE_TARGET_S * 1000,
        polling=50,
    )
    waited = time.perf_counter() - saved
    assert waited <= LIVE_TARGET_S, f"B saw A's tag after {waited:.2f} s"
    total = episodes_before.split(" / ")[1]
    expect(b.locator(METRIC.format(label="Reviewed episodes")).first).to_have_text(f"1 / {total}", timeout=5_000)
    reviewed_turns = b.locator(METRIC.format(label="Reviewed errors")).first.inner_text()
    assert reviewed_turns.startswith(f"{span:,} / ")  # tagging the episode reviewed all of its turns
    # ... and the queue's summaries below (tag counts) draw A's tag: a bar instead of the empty note
    expect(b.get_by_text("No annotations yet")).to_have_count(0, timeout=LIVE_TARGET_S * 1000)
    # A's own summaries (below her queue, not redrawn by her save) catch up once she pauses (CATCH_UP_S,
    # then the next timed check), no click
    catch_up = CATCH_UP_S + 2 * LIVE_S + 1
    expect(a.get_by_text("No annotations yet")).to_have_count(0, timeout=catch_up * 1000)
    b.screenshot(path=str(screenshots / "review_live_b.png"), full_page=True)
    a.context.close()
    b.context.close()


def test_the_annotation_export_reads_the_runs_at_the_click(browser: Browser, live_server: str, workspace: Path) -> None:
    """The page no longer reads every run on each run of its script: the export's file is made when the
    button is clicked (Streamlit's deferred download, on a thread of its own), from the runs under the
    convention in force, so each annotation still carries its run context."""
    page = open_as(browser, live_server, "cy")
    form = page.locator('[data-testid="stForm"]')
    form.get_by_role("combobox").first.click()
    page.get_by_role("option", name="missed update", exact=True).click()
    page.keyboard.press("Escape")
    before = metric(page, "Annotations in the store")
    click_until_sent(page, form.get_by_role("button", name="Save tags").click)
    expect(page.get_by_text("saved (1 tag, version ")).to_be_visible(timeout=TIMEOUT)
    # The save reruns the queue; the summaries catch up with a rerun of the whole page once the reviewer
    # pauses (CATCH_UP_S), which draws the export buttons anew. Wait for that rerun (the store's count in
    # the summaries moves on) before clicking: a click that meets it finds its button replaced.
    page.wait_for_function(STORE_COUNT_IS, arg=str(int(before.replace(",", "")) + 1), timeout=TIMEOUT, polling=POLL_MS)
    loaded(page)
    data = download_by_click(page, page.get_by_role("button", name="Download CSV").click)
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    mine = [r for r in rows if r["reviewer"] == "cy"]
    assert len(mine) == 1 and mine[0]["tags"] == "missed update"
    assert mine[0]["outcome"] in ("wrong_value", "missed", "spurious", "unparseable"), mine[0]  # the run's context
    page.context.close()
