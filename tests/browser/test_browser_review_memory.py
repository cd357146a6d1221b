"""Review that remembers, in a real browser (issue 41 requirements 6 and 8): the reviewer name and the queue's
filters survive a reload of the page, and the tag box's dropdown offers no "Select all"."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import loaded, rerun
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser
TIMEOUT = 120_000
BY_OTHERS = "reviewed by others, not by me"


def choose(page: Page, label: str, option: str | None = None) -> str:
    """Pick `option` of the select box `label` (None: its second option, the first after "(all)")."""
    page.get_by_role("combobox", name=label, exact=True).click()
    choice = (
        page.get_by_role("option").nth(1) if option is None else page.get_by_role("option", name=option, exact=True)
    )
    expect(choice).to_be_visible(timeout=TIMEOUT)
    text = choice.inner_text().strip()
    with rerun(page):
        choice.click()
    return text


def test_the_reviewer_and_filters_survive_a_reload(page: Page, server: str, screenshots: Path) -> None:
    page.goto(f"{server}/review?page=review")
    loaded(page)
    box = page.get_by_role("textbox", name="Reviewer name")
    expect(box).to_be_visible(timeout=TIMEOUT)
    box.fill("ana")
    with rerun(page):
        box.press("Enter")
    expect(page.locator("button:not([disabled])", has_text="Save tags").first).to_be_visible(timeout=TIMEOUT)
    # the tag box: no bulk "Select all" in its dropdown
    form = page.locator('[data-testid="stForm"]')
    form.get_by_role("combobox").first.click()
    expect(page.get_by_role("option").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Select all")).to_have_count(0)
    page.keyboard.press("Escape")

    domain = choose(page, "Domain")
    choose(page, "Status", BY_OTHERS)
    page.wait_for_url("**review_status=by-others**", timeout=TIMEOUT)
    assert "reviewer=ana" in page.url and f"review_domain={quote(domain)}" in page.url

    page.reload()
    loaded(page)  # a new document: the end of its first run
    expect(page.get_by_role("textbox", name="Reviewer name")).to_have_value("ana", timeout=TIMEOUT)
    expect(page.get_by_role("combobox", name="Status", exact=True)).to_have_value(BY_OTHERS, timeout=TIMEOUT)
    expect(page.get_by_role("combobox", name="Domain", exact=True)).to_have_value(domain, timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Back to the items nobody reviewed")).to_be_visible(timeout=TIMEOUT)
    page.screenshot(path=str(screenshots / "review_after_reload.png"), full_page=False)
