"""A shared server reads only below its workspace root: a typed path outside it is refused (issue "Team review", 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import loaded, rerun
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser
TIMEOUT = 120_000


@pytest.mark.parametrize("typed", ["/etc/passwd", "../../../etc/hostname"])
def test_typed_paths_outside_the_root_are_refused(page: Page, server: str, typed: str, screenshots: Path) -> None:
    page.goto(server)
    loaded(page)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=TIMEOUT)
    box = page.get_by_label("Manifest path")
    box.fill(typed)
    with rerun(page):
        box.press("Enter")
    expect(page.get_by_text("outside the workspace root", exact=False).first).to_be_visible(timeout=TIMEOUT)
    # the open workspace is kept: its leaderboard is still there
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(screenshots / "path_refused.png"))
