"""Escaping in a real browser: a run whose utterances, slot values, reviewer name and annotation comment
carry `<script>` and `<img onerror>` payloads is shown on the dialogue viewer, the slots page and the
review page; nothing executes, no dialog opens, and the payload is readable as text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import POLL_MS, loaded, rerun, start_server, stop_server
from playwright.sync_api import Page, expect

from analysis.review import AnnotationStore, Item

pytestmark = pytest.mark.browser
TIMEOUT = 120_000
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1;alert(1)">'
RUN = "xss"
DIALOGUE = "xss-dialogue"


def write_workspace(folder: Path) -> Path:
    turns = [
        {
            "dialogue_id": DIALOGUE,
            "turn_index": 0,
            "user": f"book a hotel {SCRIPT}",
            "system": f"which area? {IMG}",
            "gold": {"hotel": {"name": SCRIPT, "area": "north"}},
            "pred": {"hotel": {"name": IMG, "area": "north"}},
        },
        {
            "dialogue_id": DIALOGUE,
            "turn_index": 1,
            "user": IMG,
            "system": SCRIPT,
            "gold": {"hotel": {"name": SCRIPT, "area": IMG}},
            "pred": {"hotel": {"name": IMG}},
        },
    ]
    (folder / "run.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    manifest = folder / "workspace.toml"
    manifest.write_text(
        f'[workspace]\nname = "xss"\n\n[[runs]]\nname = "{RUN}"\nsystem = "xss"\ndataset = "XSS"\n'
        'pred = "run.jsonl"\nformat = "jsonl"\n',
        encoding="utf-8",
    )
    return manifest


@pytest.fixture(scope="module")
def xss_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("xss")
    manifest = write_workspace(folder)
    url = f"sqlite:///{folder / 'annotations.sqlite'}"
    store = AnnotationStore(url)
    item = Item("XSS", DIALOGUE, 0, domain="hotel", slot="name", run_id=RUN)
    store.annotate(item, ["wrong value"], f"comment {SCRIPT} {IMG}", reviewer=IMG)
    store.annotate(item, ["other"], f"second {SCRIPT}", reviewer="plain")
    store.close()
    process, address = start_server(manifest, env={"DST_ANNOTATIONS_URL": url})
    try:
        yield address
    finally:
        stop_server(process)


# Every image of the page has loaded or failed: an injected `<img onerror>` would have fired by then.
IMAGES_SETTLED = "() => [...document.images].every((img) => img.complete)"


def assert_nothing_ran(page: Page, dialogs: list[str]) -> None:
    page.wait_for_function(IMAGES_SETTLED, timeout=TIMEOUT, polling=POLL_MS)  # the event, not a fixed 500 ms
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert not dialogs, f"a dialog opened: {dialogs}"
    raised = page.locator('[data-testid="stException"]')
    assert raised.count() == 0, raised.first.inner_text()[:2000]
    assert page.locator("img[src='x']").count() == 0


@pytest.fixture
def watched(page: Page) -> tuple[Page, list[str]]:
    dialogs: list[str] = []

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return page, dialogs


def test_dialogue_viewer_shows_payloads_as_text(watched, xss_server: str, screenshots: Path):
    page, dialogs = watched
    page.goto(f"{xss_server}/dialogue?" + urlencode({"page": "dialogue", "run": RUN, "dialogue": DIALOGUE, "turn": 0}))
    loaded(page)
    expect(page.get_by_role("heading", name="Turn 0", exact=True)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(SCRIPT, exact=False).first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("onerror=", exact=False).first).to_be_visible()
    assert_nothing_ran(page, dialogs)
    with rerun(page):
        page.get_by_role("button", name="Next ▶", exact=True).click()
    expect(page.get_by_role("heading", name="Turn 1", exact=True)).to_be_visible(timeout=TIMEOUT)
    assert_nothing_ran(page, dialogs)
    page.screenshot(path=str(screenshots / "xss_dialogue.png"))


def test_slots_page_runs_nothing(watched, xss_server: str):
    page, dialogs = watched
    page.goto(f"{xss_server}/slots?" + urlencode({"page": "slots", "run": RUN}))
    loaded(page)
    expect(page.get_by_role("heading", name="Slots", exact=True)).to_be_visible(timeout=TIMEOUT)
    assert_nothing_ran(page, dialogs)


def test_review_page_runs_nothing_and_shows_text(watched, xss_server: str, screenshots: Path):
    page, dialogs = watched
    page.goto(f"{xss_server}/review?" + urlencode({"page": "review", "run": RUN}))
    loaded(page)
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Agreement per tag")).to_be_visible(timeout=TIMEOUT)
    assert_nothing_ran(page, dialogs)
    # the reviewer name with the payload is a choice of the agreement pickers, shown as text
    expect(page.get_by_text("onerror=", exact=False).first).to_be_attached(timeout=TIMEOUT)
    page.get_by_role("textbox", name="Reviewer name").fill(f"me {SCRIPT}")
    with rerun(page):
        page.get_by_role("textbox", name="Reviewer name").press("Enter")
    expect(page.get_by_text(f"as me {SCRIPT}", exact=False).first).to_be_visible(timeout=TIMEOUT)
    assert_nothing_ran(page, dialogs)
    page.screenshot(path=str(screenshots / "xss_review.png"), full_page=True)
