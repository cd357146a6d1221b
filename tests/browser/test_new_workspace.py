"""A workspace of runs the store does not hold (a sweep's new folder), opened in a real browser: while its
runs are scored into the store by the worker children (`ui.data._score_new`), the sidebar counts them
("scoring 6 new runs into the store: k done in s s, about t s left…"); then the Overview shows every run
that loaded, and the file that does not load is its one line. Plain `streamlit run`: the first session is the one that reads the runs
(`make run` scores them before it listens and says so on stderr: tests/test_serve.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import VIEWPORT, loaded, start_server, stop_server
from playwright.sync_api import Browser

from tests.test_workspace_batch import _copies

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_sidebar_counts_the_new_runs_being_scored(browser: Browser, tmp_path: Path, screenshots: Path) -> None:
    manifest = _copies(tmp_path / "runs", 6, broken=5)
    process, url = start_server(manifest, launcher=False, env={"DST_CACHE_DIR": str(tmp_path / "cache")})
    try:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        # Each child's first run alone takes about a second (its gold file read, its shared side computed):
        # the count stays in the sidebar for seconds.
        counting = page.locator('[data-testid="stSidebar"]').get_by_text(
            re.compile(r"scoring 6 new runs into the store: [0-5] done( in \d+ s(, about \d+ s left)?)?…")
        )
        counting.wait_for(timeout=120_000)
        page.screenshot(path=str(screenshots / "new_workspace_scoring.png"))
        loaded(page)
        counting.wait_for(state="detached", timeout=120_000)
        body = page.inner_text("body")
        assert "Convention: exact · 5 runs" in body, body[:2000]
        assert "run-5.jsonl [format: jsonl]: line 1 is not valid JSON" in body, body[:4000]
        page.screenshot(path=str(screenshots / "new_workspace_scored.png"), full_page=True)
    finally:
        stop_server(process)
