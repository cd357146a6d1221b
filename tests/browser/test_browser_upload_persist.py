"""An upload saved into the workspace, in a real browser (issue 17 requirement 6): a run uploaded through
the sidebar form of `make run`'s server, with its gold file and metadata, is copied under the workspace root
and listed in its manifest; the session that uploaded it shows it at once, and the link naming it opens it
in a second browser context (another reviewer), on the dialogue viewer, with the upload's dialogues. The
server runs on a copy of the demo workspace in tmp_path (the demo itself keeps uploads in their session)."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import DEMO, VIEWPORT, loaded, rerun, start_server, stop_server, upload_file
from playwright.sync_api import Browser, Page, expect

from analysis.workspace import load_entry, read_manifest

pytestmark = pytest.mark.browser

TIMEOUT = 120_000
PRED = "simulated/simulated-A-mwz-en-predicted.jsonl.gz"
GOLD = "multiwoz21/test_subset.json.gz"


def type_into(page: Page, label: str, value: str) -> None:
    box = page.locator('[data-testid="stSidebar"]').get_by_label(label, exact=True)
    box.fill(value)
    with rerun(page):
        box.press("Enter")  # a text input sends its value on Enter (or blur)


def test_an_uploaded_run_is_saved_and_its_link_opens_it_for_another_reviewer(
    page: Page, browser: Browser, tmp_path: Path, screenshots: Path
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(DEMO.parent, root, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    manifest = root / "workspace.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("edit_manifest = false", "edit_manifest = true"), encoding="utf-8"
    )
    files = tmp_path / "files"
    files.mkdir()
    pred, gold = files / "my_preds.jsonl.gz", files / "my_gold.json.gz"
    shutil.copyfile(root / PRED, pred)
    shutil.copyfile(root / GOLD, gold)

    process, url = start_server(manifest)
    other = browser.new_context(viewport=VIEWPORT)
    try:
        page.goto(url)
        loaded(page)
        with rerun(page):  # the expander reruns the page on opening: its form is drawn only while open
            page.get_by_text("Upload a run").click()
        sidebar = page.locator('[data-testid="stSidebar"]')
        for label, path in (("Prediction file", pred), ("Gold file (optional)", gold)):
            uploader = sidebar.get_by_role("region", name=label)
            expect(uploader).to_be_visible(timeout=TIMEOUT)
            upload_file(page, uploader, path, TIMEOUT)  # the rerun request carrying the file, and its run
        type_into(page, "Run name", "browser-run")
        type_into(page, "System", "Browser DST")
        type_into(page, "Seed", "9")
        with rerun(page):
            sidebar.get_by_role("button", name="Add run").click()
        saved = sidebar.locator('[data-testid="stAlertContentSuccess"]')
        expect(saved).to_contain_text("saved run 'browser-run' into the workspace", timeout=TIMEOUT)
        assert "uploads/my_preds.jsonl.gz" in saved.inner_text()
        # Saved: the files under uploads/, the run in the manifest with the metadata typed in.
        entry = read_manifest(manifest).entries[-1]
        assert (entry.name, entry.meta.system, entry.meta.seed) == ("browser-run", "Browser DST", 9)
        assert (root / "uploads" / "my_preds.jsonl.gz").read_bytes() == pred.read_bytes()
        assert (root / "uploads" / "my_gold.json.gz").read_bytes() == gold.read_bytes()
        # The uploading session reloaded its workspace: the run is among the runs shown.
        runs = sidebar.locator('[data-testid="stMultiSelect"]').first
        expect(runs.get_by_text("browser-run", exact=True)).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=str(screenshots / "upload_persist_saved.png"))

        # Another reviewer opens the link naming the run: the dialogue viewer on the upload's dialogues.
        fresh = other.new_page()
        fresh.goto(f"{url}/dialogue?" + urlencode({"page": "dialogue", "run": "browser-run"}))
        loaded(fresh)
        expect(fresh.get_by_role("combobox", name="Focus run", exact=True)).to_have_value(
            "browser-run", timeout=TIMEOUT
        )
        dialogue = fresh.get_by_role("combobox", name="Dialogue", exact=True)
        expect(dialogue).to_be_visible(timeout=TIMEOUT)
        shown = dialogue.input_value().split(" ·")[0]
        assert shown in set(load_entry(entry).turns["dialogue_id"])
        demo_first = load_entry(read_manifest(manifest).entries[0])  # the demo's first run: CrossWOZ
        assert shown not in set(demo_first.turns["dialogue_id"])
        assert (
            not fresh.locator('[data-testid="stSidebar"] [data-testid="stAlertContentWarning"]')
            .filter(has_text="not a run of this session")
            .count()
        )
        fresh.screenshot(path=str(screenshots / "upload_persist_link.png"))
    finally:
        other.close()
        stop_server(process)
