"""The dashboard in a real browser (Playwright + Debian's chromium): pages load and draw their charts,
the diff viewer steps, deep links land on the same view, a malformed upload fails cleanly."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import DEMO, click_until_rerun, loaded, rerun, start_server, stop_server, tables_drawn, upload_file
from playwright.sync_api import Page, expect

from analysis import views
from analysis.scoring import score_run
from analysis.wording import short_names
from analysis.workspace import load_entry, read_manifest
from page_registry import PAGES as REGISTRY

pytestmark = pytest.mark.browser
# The pages that declare first views (the others: test_browser_pages_extra.py), as (sidebar title, url path).
PAGES = [(page.title, page.url_path) for page in REGISTRY if page.first is not None]
RUN = "simulated-A-mwz-en-predicted"
TIMEOUT = 120_000


def charts_drawn(page: Page) -> int:
    """Number of Plotly charts with at least one drawn trace."""
    drawn = "g.trace, g.hm"
    page.wait_for_selector(
        f'[data-testid="stPlotlyChart"] .js-plotly-plot :is({drawn})', state="attached", timeout=TIMEOUT
    )
    charts = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot')
    return sum(1 for i in range(charts.count()) if charts.nth(i).locator(drawn).count() > 0)


@pytest.fixture(scope="module")
def scored():
    entry = next(e for e in read_manifest(DEMO).entries if e.name == RUN)
    return score_run(load_entry(entry))


def test_app_loads_with_leaderboard_chart(page: Page, server: str, screenshots: Path):
    page.goto(server)
    loaded(page)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=TIMEOUT)
    assert charts_drawn(page) >= 1
    hover = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
    assert hover.locator(".bars path, .points path").count() >= 2
    expect(page.get_by_text("Convention", exact=False).first).to_be_visible()
    page.screenshot(path=str(screenshots / "overview.png"))


def test_plotly_is_fetched_with_the_page_not_after_the_first_chart(page: Page, server: str):
    """`make run`'s page asks for Streamlit's Plotly component itself (scripts/serve.py, preload_plotly): the
    request starts before the page's DOMContentLoaded, i.e. before the server can have sent any chart."""
    page.goto(server)
    loaded(page)
    timing = page.evaluate(
        """() => ({
            loaded: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
            plotly: performance.getEntriesByType('resource').filter(r => /PlotlyChart\\.[\\w-]+\\.js$/.test(r.name))
                .map(r => r.startTime),
        })"""
    )
    assert len(timing["plotly"]) == 1, timing  # fetched once: Streamlit's own import found it loaded
    assert timing["plotly"][0] < timing["loaded"], timing
    assert charts_drawn(page) >= 1


def test_every_page_is_visited_and_draws(page: Page, server: str, screenshots: Path):
    page.goto(server)
    loaded(page)
    shown = PAGES[0][0]  # the page the server opens on: clicking its own link reruns nothing
    for title, url in PAGES:
        if title != shown:
            with rerun(page):
                page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
            shown = title
        expect(page.get_by_role("heading", name=re.compile(title.split()[0], re.IGNORECASE)).first).to_be_visible(
            timeout=TIMEOUT
        )
        raised = page.locator('[data-testid="stException"]')
        assert raised.count() == 0, f"{title} raised: {raised.first.inner_text()[:2000]}"
        assert charts_drawn(page) >= 1, f"{title} drew no chart"
        # waited for, not read once: at load 30 the heading was drawn while the address still lacked `page=`
        expect(page).to_have_url(re.compile(rf"[?&]page={url}(&|$)"), timeout=TIMEOUT)
        tables_drawn(page, TIMEOUT)  # a screenshot of empty table boxes says nothing
        page.screenshot(path=str(screenshots / f"page_{url}.png"))


def test_diff_viewer_steps_with_next_error(page: Page, server: str, scored, screenshots: Path):
    index = views.dialogue_index(scored)
    dialogue = str(index.sort_values("error_turns", ascending=False)["dialogue_id"].iloc[0])
    turns, diff = views.dialogue_view(scored, dialogue)
    errors = views.filter_turns(turns, diff, errors_only=True)
    page.goto(f"{server}/dialogue?" + urlencode({"page": "dialogue", "run": RUN, "dialogue": dialogue, "turn": 0}))
    loaded(page)
    expect(page.get_by_role("heading", name="Turn 0", exact=True)).to_be_visible(timeout=TIMEOUT)
    current = 0
    for _ in range(3):
        expected = views.step_turn(errors, current, direction=1)
        if expected is None:
            break
        # Repeated only when the click caused no run at all (a button re-drawn under the click on a loaded machine).
        click_until_rerun(page, page.get_by_role("button", name="Next error ▶▶").click)
        expect(page.get_by_role("heading", name=f"Turn {expected}", exact=True)).to_be_visible(timeout=TIMEOUT)
        assert f"turn={expected}" in page.url
        current = expected
    assert current > 0, "the dialogue with most errors had no error after turn 0"
    first_status = views.diff_at(diff, current)["status"].iloc[0]
    expect(page.get_by_text(first_status).first).to_be_visible()
    page.screenshot(path=str(screenshots / "dialogue_next_error.png"))


def test_copied_deep_link_lands_on_the_same_dialogue_and_turn(page: Page, server: str, scored, browser):
    dialogue = str(views.dialogue_index(scored)["dialogue_id"].iloc[5])
    page.goto(f"{server}/dialogue?" + urlencode({"page": "dialogue", "run": RUN, "dialogue": dialogue, "turn": 2}))
    loaded(page)
    expect(page.get_by_role("heading", name="Turn 2", exact=True)).to_be_visible(timeout=TIMEOUT)
    with rerun(page):
        page.get_by_role("button", name="Next ▶", exact=True).click()
    expect(page.get_by_role("heading", name="Turn 3", exact=True)).to_be_visible(timeout=TIMEOUT)
    copied = page.url
    assert "turn=3" in copied and f"dialogue={dialogue}" in copied
    other = browser.new_context(viewport={"width": 1400, "height": 2400})
    try:
        fresh = other.new_page()
        fresh.goto(copied)
        loaded(fresh)
        expect(fresh.get_by_role("heading", name="Turn 3", exact=True)).to_be_visible(timeout=TIMEOUT)
        short = short_names([e.name for e in read_manifest(DEMO).entries])[RUN]  # the sidebar's label
        for label, shown in (("Dialogue", f"{dialogue} ·"), ("Run", RUN), ("Focus run", short)):
            box = fresh.get_by_role("combobox", name=label, exact=True)
            expect(box).to_have_value(re.compile("^" + re.escape(shown)), timeout=TIMEOUT)
        assert "turn=3" in fresh.url
    finally:
        other.close()


def _upload(page: Page, path: Path) -> None:
    with rerun(page):  # the expander reruns the page on opening: its form is drawn only while open
        page.get_by_text("Upload a run").click()
    # Address the prediction uploader by its label: the DOM order of the two uploaders is not a contract
    # (CI once put the file into "Gold file" through `.first`).
    uploader = page.locator('[data-testid="stSidebar"]').get_by_role("region", name="Prediction file")
    expect(uploader).to_be_visible(timeout=TIMEOUT)
    # The file reaches the server asynchronously: wait for the rerun request that carries it, and its run.
    upload_file(page, uploader, path, TIMEOUT)
    with rerun(page):
        page.get_by_role("button", name="Add run").click()


def test_a_tab_draws_only_its_charts_and_a_copied_link_reopens_it(page: Page, server: str, browser, screenshots: Path):
    """Pages with tabs (`ui.tabs`) put only the chosen tab on screen; choosing another reruns the page, draws
    that tab's charts and writes it into the link (`view`), which opens the same tab in another browser."""
    page.goto(f"{server}/turn_depth?page=turn_depth")
    loaded(page)
    charts = page.locator('[data-testid="stPlotlyChart"]')
    expect(charts).to_have_count(1, timeout=TIMEOUT)  # JGA by turn depth; the other tabs' four charts are not sent
    assert charts_drawn(page) == 1
    with rerun(page):
        page.get_by_role("tab", name="Where errors come from").click()
    expect(page.get_by_role("tab", name="Where errors come from")).to_have_attribute("aria-selected", "true")
    expect(charts).to_have_count(2, timeout=TIMEOUT)
    assert charts_drawn(page) == 2
    assert "view=Where+errors+come+from" in page.url
    page.screenshot(path=str(screenshots / "turn_depth_origins_tab.png"))
    other = browser.new_context(viewport={"width": 1400, "height": 2400})
    try:
        copy = other.new_page()
        copy.goto(page.url)
        loaded(copy)
        expect(copy.get_by_role("tab", name="Where errors come from")).to_have_attribute(
            "aria-selected", "true", timeout=TIMEOUT
        )
        expect(copy.locator('[data-testid="stPlotlyChart"]')).to_have_count(2, timeout=TIMEOUT)
    finally:
        other.close()


def test_picking_a_slot_row_opens_its_value_confusions(page: Page, server: str, scored, screenshots: Path):
    """A row of the per-slot table leads to that slot's value confusions, on their own tab."""
    expected = str(views.slot_table(scored)["slot_name"].iloc[2])
    page.goto(f"{server}/slots?" + urlencode({"page": "slots", "run": RUN}))
    loaded(page)
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible(timeout=TIMEOUT)
    box = grid.bounding_box()
    assert box is not None
    row_height = 35  # Streamlit's grid: a header row, then rows of 35 px
    with rerun(page):
        page.mouse.click(box["x"] + 12, box["y"] + row_height * 3 + row_height / 2)  # the third row's selector
    expect(page.get_by_role("tab", name="Value confusions")).to_have_attribute("aria-selected", "true", timeout=TIMEOUT)
    expect(page.get_by_role("combobox", name="Slot", exact=True)).to_have_value(expected, timeout=TIMEOUT)
    assert charts_drawn(page) == 1  # the confusion heatmap
    assert "view=Value+confusions" in page.url and f"slot={expected}" in page.url
    page.screenshot(path=str(screenshots / "slots_confusions_tab.png"))


def test_malformed_upload_shows_one_line_error_and_session_keeps_working(
    page: Page, server: str, tmp_path: Path, screenshots: Path
):
    broken = tmp_path / "broken_preds.json"
    broken.write_text('{"MUL0001.json": {"0": {"turn_belief": ["hotel-area-east"], "pred_bs_ptr": ', encoding="utf-8")
    page.goto(server)
    loaded(page)
    _upload(page, broken)
    error = page.locator('[data-testid="stSidebar"] [data-testid="stAlertContentError"]').filter(
        has_text="broken_preds"
    )
    expect(error).to_be_visible(timeout=TIMEOUT)
    text = error.inner_text().strip()
    assert "\n" not in text and "[format:" in text
    page.screenshot(path=str(screenshots / "upload_error.png"))
    # Repeated only if it caused no run at all: in a loaded full run (F1) the first click changed the URL to
    # the Slots page but no run followed in 120 s, a page switch lost while the upload's run was ending.
    nav = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Slots")
    click_until_rerun(page, nav.click)
    expect(page.get_by_role("heading", name="Slots")).to_be_visible(timeout=TIMEOUT)
    assert charts_drawn(page) >= 1


def test_upload_over_the_limit_is_refused(page: Page, tmp_path: Path, screenshots: Path):
    process, url = start_server(DEMO, env={"DST_MAX_UPLOAD_MB": "0.001"})
    try:
        big = tmp_path / "big_preds.jsonl"
        big.write_text("x" * 4096, encoding="utf-8")
        page.goto(url)
        loaded(page)
        _upload(page, big)
        refusal = page.locator('[data-testid="stSidebar"] [data-testid="stAlertContentError"]').filter(
            has_text="over the upload limit"
        )
        expect(refusal).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=str(screenshots / "upload_refused.png"))
    finally:
        stop_server(process)


@pytest.mark.parametrize("launcher", [True, False], ids=["make-run", "streamlit-run"])
def test_deep_link_as_the_first_request_of_a_fresh_server(page: Page, scored, launcher: bool):
    """Before app.py has run once, Streamlit serves pages/ on its own; the link must still land, on a server
    started by `make run` (workspace warmed first) and by plain `streamlit run app.py -- --workspace`."""
    dialogue = str(views.dialogue_index(scored)["dialogue_id"].iloc[7])
    process, url = start_server(DEMO, launcher=launcher)
    try:
        page.goto(f"{url}/dialogue?" + urlencode({"page": "dialogue", "run": RUN, "dialogue": dialogue, "turn": 1}))
        loaded(page)
        expect(page.get_by_role("heading", name="Turn 1", exact=True)).to_be_visible(timeout=TIMEOUT)
        expect(page.get_by_role("combobox", name="Dialogue", exact=True)).to_have_value(
            re.compile("^" + re.escape(f"{dialogue} ·")), timeout=TIMEOUT
        )
        assert "/dialogue" in page.url and "turn=1" in page.url
    finally:
        stop_server(process)
