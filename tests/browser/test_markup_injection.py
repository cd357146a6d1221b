"""Injected markup in a real browser (issue 14, requirement 3): a workspace whose name, run names, system,
dataset, dialogue ids, domain and slot names, values and utterances carry Markdown links and images,
Streamlit's `:red[...]` and `:material/...:`, LaTeX `\\href`, bare URLs and HTML anchors and images, and a
link whose query string carries them, are shown on every page (every tab) as literal text: no `<a>` with an
injected href, no `<img>` with an injected src, and not one request to the injected host. The figure and
table exports and the report index carry the same text without a live link."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pandas as pd
import pytest
from conftest import POLL_MS, loaded, rerun, start_server, stop_server
from playwright.sync_api import Page, expect

from analysis import export, figures
from analysis.cli.main import main
from page_registry import PAGES as REGISTRY

pytestmark = pytest.mark.browser
TIMEOUT = 120_000
HOST = "127.0.0.1:9"  # nothing listens on port 9 (discard): a request to it would only show up in the log
LINK = f"[Session expired — sign in again](http://{HOST}/login)"
IMAGE = f"![x](http://{HOST}/pixel.png)"
RED = ":red[alarm] :material/warning:"
LATEX = rf"$\href{{http://{HOST}/tex}}{{x}}$"
ANCHOR = f"<a href='http://{HOST}/a'>click</a>"
HTML_IMAGE = f"<img src='http://{HOST}/i.png'>"
BARE = f"http://{HOST}/bare"
# No comma (run names travel as `runs=a,b`) and no `-` (slot names are `domain-slot`).
RUN_A = f"{LINK} {RED}"
RUN_B = f"{ANCHOR} {LATEX}"
SYSTEM = f"{IMAGE} {LATEX}"
DATASET = f"{HTML_IMAGE} {BARE}"
WORKSPACE = f"{IMAGE} {ANCHOR} {RED}"
DIALOGUE = f"{LINK} {HTML_IMAGE}"
DOMAIN = f"{IMAGE}"
SLOT = f"{ANCHOR} {RED}"
VALUE = f"{LINK} {IMAGE} {LATEX}"
UTTERANCE = f"{LINK} {IMAGE} {RED} {LATEX} {ANCHOR} {HTML_IMAGE} {BARE}"
TAG = f"{IMAGE} :red[t]"  # a tag is at most 64 characters
EVERY = (LINK, IMAGE, RED, LATEX, ANCHOR, HTML_IMAGE, BARE)

TABBED = {
    "slots": ["Per-slot scores", "Outcomes per slot", "Value confusions"],
    "domains": ["JGA per domain", "Outcomes per domain", "JGA by dialogue attribute"],
    "turn_depth": ["JGA by turn depth", "Error compounding: JGA against GJGA", "Where errors come from"],
    "crosslingual": ["Gap by slot", "Gap by domain", "Gap by turn depth", "Ontology alignment"],
}
TABS = {page.url_path: TABBED.get(page.url_path, [""]) for page in REGISTRY}  # every page, each of its tabs


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def write_workspace(folder: Path) -> Path:
    turns = [
        {
            "dialogue_id": DIALOGUE,
            "turn_index": 0,
            "user": UTTERANCE,
            "system": UTTERANCE,
            "gold": {"hotel": {SLOT: VALUE, "area": "north"}, DOMAIN: {"name": VALUE}},
            "pred": {"hotel": {SLOT: "other", "area": "north"}, DOMAIN: {"name": VALUE}},
        },
        {
            "dialogue_id": DIALOGUE,
            "turn_index": 1,
            "user": UTTERANCE,
            "gold": {"hotel": {SLOT: VALUE, "area": VALUE}, DOMAIN: {"name": VALUE}},
            "pred": {"hotel": {SLOT: VALUE}, DOMAIN: {"name": "x", "stars": VALUE}},
        },
        {"dialogue_id": "plain", "turn_index": 0, "user": "hi", "gold": {"hotel": {"area": "east"}}, "pred": {}},
    ]
    (folder / "run.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    runs = "".join(
        f"\n[[runs]]\nname = {toml_string(name)}\nsystem = {toml_string(SYSTEM)}\ndataset = {toml_string(DATASET)}\n"
        f'language = "{language}"\npred = "run.jsonl"\nformat = "jsonl"\n'
        for name, language in ((RUN_A, "en"), (RUN_B, "zh"))
    )
    manifest = folder / "workspace.toml"
    manifest.write_text(
        f'[workspace]\nname = {toml_string(WORKSPACE)}\n\n[review]\nextra_tags = [{toml_string(TAG)}, "other"]\n{runs}',
        encoding="utf-8",
    )
    return manifest


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_workspace(tmp_path_factory.mktemp("markup"))


@pytest.fixture(scope="module")
def markup_server(workspace: Path) -> Iterator[str]:
    url = f"sqlite:///{workspace.parent / 'annotations.sqlite'}"
    process, address = start_server(workspace, env={"DST_ANNOTATIONS_URL": url})
    try:
        yield address
    finally:
        stop_server(process)


def injected(url: str) -> bool:
    parts = urlsplit(url)
    return parts.hostname == "127.0.0.1" and parts.port == 9


@pytest.fixture
def watched(page: Page) -> tuple[Page, list[str]]:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if injected(request.url) else None)
    return page, requests


DRAWN = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(
  (chart) => chart.querySelector('.js-plotly-plot .main-svg')) && [...document.images].every((img) => img.complete)"""


def loaded_and_drawn(page: Page) -> None:
    """The page's first run has finished, its charts are drawn (Plotly draws after the script ends) and every
    image has loaded or failed: what the checks below read is on screen, not still on its way."""
    loaded(page, timeout=TIMEOUT)
    page.wait_for_function(DRAWN, timeout=TIMEOUT, polling=POLL_MS)


def open_tab(page: Page, view: str) -> None:
    """Another tab of the page on screen, as a reader opens it: a click, the rerun it causes, the tab's charts
    drawn. The same session draws the same tab a link's `view` opens, without loading the document again."""
    tab = page.get_by_role("tab", name=view, exact=True)
    with rerun(page, timeout=TIMEOUT):
        tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=TIMEOUT)
    page.wait_for_function(DRAWN, timeout=TIMEOUT, polling=POLL_MS)


# Every anchor and image of the page, HTML and SVG (Plotly draws `<a>` in chart text as an SVG anchor).
LIVE = """() => {
  const out = [];
  for (const a of document.querySelectorAll('a')) {
    const where = (a.closest('[data-testid]') || a).getAttribute('data-testid');
    out.push(['a', a.getAttribute('href') || a.getAttribute('xlink:href') || '', where, a.outerHTML.slice(0, 300)]);
  }
  for (const img of document.querySelectorAll('img, image')) {
    const where = (img.closest('[data-testid]') || img).getAttribute('data-testid');
    const src = img.getAttribute('src') || img.getAttribute('href') || img.getAttribute('xlink:href') || '';
    out.push(['img', src, where, img.outerHTML.slice(0, 300)]);
  }
  return out;
}"""


def assert_no_live_markup(page: Page, requests: list[str], where: str) -> None:
    live = [(kind, target, where_, html) for kind, target, where_, html in page.evaluate(LIVE) if HOST in target]
    assert not live, f"{where}: injected elements {live}"
    raised = page.locator('[data-testid="stException"]')
    assert raised.count() == 0, f"{where}: {raised.first.inner_text()[:2000]}"
    assert not requests, f"{where}: the browser requested {requests}"


def shown_text(locator) -> str:
    """The text as a reader sees it (Markdown text carries invisible word joiners inside URLs)."""
    return locator.inner_text().replace("\u2060", "")


def page_url(server: str, page: str, **params: str) -> str:
    return f"{server}/{page}?" + urlencode({"page": page, **params})


def test_every_page_shows_injected_text_literally(watched, markup_server: str, screenshots: Path):
    page, requests = watched
    for name, views in TABS.items():
        for number, view in enumerate(views):
            if number == 0:  # the page from its link, on its first tab
                page.goto(page_url(markup_server, name, **({"view": view} if view else {})))
                loaded_and_drawn(page)
            else:  # its other tabs by a click: one document per page, not one per tab
                open_tab(page, view)
            where = f"{name} {view}".strip()
            assert_no_live_markup(page, requests, where)
            if name == "overview":
                # the sidebar caption and the leaderboard say the names as they are written
                sidebar = page.locator('[data-testid="stSidebar"]')
                expect(sidebar.get_by_text("runs listed", exact=False)).to_be_visible(timeout=TIMEOUT)
                assert WORKSPACE in shown_text(sidebar)
                expect(page.get_by_text(":red[alarm]", exact=False).first).to_be_attached()
                page.screenshot(path=str(screenshots / "markup_overview.png"), full_page=True)
            if name == "slots" and view == "Per-slot scores":
                page.screenshot(path=str(screenshots / "markup_slots.png"), full_page=True)
            if name == "dialogue":
                expect(page.get_by_text(UTTERANCE).first).to_be_visible(timeout=TIMEOUT)
                page.screenshot(path=str(screenshots / "markup_dialogue.png"), full_page=True)
            if name == "crosslingual" and view == "Gap by slot":
                page.screenshot(path=str(screenshots / "markup_crosslingual.png"), full_page=True)


def test_hostile_query_string_is_dropped_with_a_plain_notice(watched, markup_server: str, screenshots: Path):
    page, requests = watched
    hostile = f"{LINK} {IMAGE} {RED} {LATEX} {ANCHOR} {HTML_IMAGE}"
    params = {
        "runs": f"{hostile},{RUN_A}",
        "run": hostile,
        "compare": hostile,
        "dialogue": hostile,
        "slot": hostile,
        "turn": hostile,
        "view": hostile,
        "convention": hostile,
    }
    for name in TABS:
        page.goto(page_url(markup_server, name, **params))
        loaded_and_drawn(page)
        assert_no_live_markup(page, requests, f"{name} with a hostile link")
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("runs in the link that this session does not have", exact=False)).to_be_visible(
            timeout=TIMEOUT
        )
        expect(sidebar.get_by_text("convention in the link is not one of", exact=False)).to_be_visible()
        expect(sidebar.get_by_text("run in the link is not a run of this session", exact=False).first).to_be_visible()
        expect(sidebar.get_by_text("[Session expired", exact=False).first).to_be_visible()
        if name == "dialogue":
            # the dialogue from the link is not one of the run's: the page says so and shows its default
            expect(
                page.get_by_text("Dialogue in the link is not one of this page's choices", exact=False)
            ).to_be_visible()
            page.screenshot(path=str(screenshots / "markup_link_dialogue.png"), full_page=True)
        if name == "slots":
            expect(page.get_by_text("view in the link is not one of this page's choices", exact=False)).to_be_visible()
            page.screenshot(path=str(screenshots / "markup_link_slots.png"), full_page=True)
    # the URL the dashboard writes back holds only what it accepted
    written = parse_qs(urlsplit(page.url).query)
    assert not [v for values in written.values() for v in values if hostile in v], written
    assert written["runs"] == [RUN_A], written


# Markdown that would be live: an unescaped `<a`/`<img`, `](` after an unescaped `]`, `![`, or a bare URL.
LIVE_MARKDOWN = re.compile(r"(?<!\\)<(a|img)\b|(?<!\\)\]\(http|(?<!\\)!(?<!\\)\[|http://" + re.escape(HOST))


def no_live_link(text: str, where: str) -> None:
    found = LIVE_MARKDOWN.search(text)
    assert found is None, f"{where}: {found.group(0) if found else ''!r} in {text[:3000]}"


def test_exports_and_report_carry_no_live_link(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    board = pd.DataFrame(
        {
            "run_id": [RUN_A, RUN_B],
            "system": [SYSTEM, SYSTEM],
            "dataset": [DATASET, DATASET],
            "jga": [0.5, 0.25],
        }
    )
    table = export.table_bytes(board, "markdown", caption=f"leaderboard {WORKSPACE}").decode()
    no_live_link(table, "markdown table")
    per_slot = pd.DataFrame({"domain": ["hotel", DOMAIN], "slot": [SLOT, SLOT], "jga": [0.5, 0.7], "n_turns": [2, 2]})
    per_slot["run_id"] = RUN_A
    fig = figures.grouped_jga_bar(per_slot, by="slot", title=f"JGA per slot — {RUN_A}")
    svg = export.figure_bytes(fig, "svg", style="slides").decode()
    assert "<a " not in svg and 'xlink:href="http' not in svg, svg[:3000]
    assert not re.search(r"<(a|image)\b", svg), svg[:3000]  # no SVG anchor or image element
    lines_joined = re.sub(r"</tspan><tspan[^>]*>", " ", svg)  # a long label is wrapped over several lines
    assert "&#60;a href=" in lines_joined or "&lt;a href=" in lines_joined  # the slot name is there, as text
    assert "&amp;l" not in svg and "&amp;g" not in svg  # and no entity of it was cut in two by the wrapping
    out = tmp_path / "report"
    # The report command in this process (the CLI's own `main`, as tests/test_cli.py runs it): the modules are
    # imported already, so no second interpreter spends seconds importing them again.
    code = main(
        [
            "report",
            str(workspace),
            "--out",
            str(out),
            "--formats",
            "svg",
            "--style",
            "slides",
            "--resamples",
            "20",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    index_md = (out / "index.md").read_text(encoding="utf-8")
    no_live_link(index_md, "index.md")
    assert "Session expired" in index_md
    index_html = (out / "index.html").read_text(encoding="utf-8")
    assert f"href='http://{HOST}" not in index_html and f"src='http://{HOST}" not in index_html
    assert "&lt;a href=" in index_html
    for path in out.iterdir():
        if path.suffix == ".svg":
            text = path.read_text(encoding="utf-8")
            assert "<a " not in text and "<image" not in text, path
        if path.suffix == ".md" and path.name != "index.md":
            no_live_link(path.read_text(encoding="utf-8"), path.name)
