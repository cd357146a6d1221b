"""A declared mapping offered by the upload form, in a real browser (issue 38 requirement 2): a prediction
file no format recognises, uploaded through the sidebar of `make run`'s server, shows what `sniff` sees and
the proposed mapping in a field; a bad mapping is its one-line error, the edited one reads the file, and
the run is saved into the workspace with the mapping in its manifest entry. The server runs on a copy of
the demo workspace in tmp_path (the demo itself keeps uploads in their session)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from conftest import DEMO, loaded, rerun, start_server, stop_server, upload_file
from playwright.sync_api import Page, expect

from analysis.formats.mapping import parse_mapping_option
from analysis.workspace import read_manifest

pytestmark = pytest.mark.browser

TIMEOUT = 120_000
PRED = "simulated/simulated-A-mwz-en-predicted.jsonl.gz"
GOLD = "multiwoz21/test_subset.json.gz"
PROPOSED = "records=outputs,dialogue=conv,turn=step,pred=prediction,encoding=flat"


def unknown_shape(root: Path, path: Path) -> None:
    """The demo run's predictions rewritten into a shape no format knows: turns under `outputs`, counted
    from 1, each state flat under `prediction`."""
    with gzip.open(root / PRED, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    outputs = [
        {
            "conv": row["dialogue_id"],
            "step": row["turn_index"] + 1,
            "prediction": {f"{d}-{s}": v for d, slots in row["pred"].items() for s, v in slots.items()},
        }
        for row in rows
    ]
    path.write_text(json.dumps({"outputs": outputs}), encoding="utf-8")


def type_into(page: Page, label: str, value: str, send: str = "Enter") -> None:
    box = page.locator('[data-testid="stSidebar"]').get_by_label(label, exact=True)
    box.fill(value)
    with rerun(page):
        box.press(send)  # a text input sends its value on Enter, a text area on Ctrl+Enter (either on blur)


def test_an_unrecognised_upload_is_read_by_the_offered_mapping(page: Page, tmp_path: Path, screenshots: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(DEMO.parent, root, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    manifest = root / "workspace.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("edit_manifest = false", "edit_manifest = true"), encoding="utf-8"
    )
    pred, gold = tmp_path / "my_outputs.json", tmp_path / "my_gold.json.gz"
    unknown_shape(root, pred)
    shutil.copyfile(root / GOLD, gold)

    process, url = start_server(manifest)
    try:
        page.goto(url)
        loaded(page)
        sidebar = page.locator('[data-testid="stSidebar"]')
        with rerun(page):  # the expander reruns the page on opening: its form is drawn only while open
            page.get_by_text("Upload a run").click()
        for label, path in (("Prediction file", pred), ("Gold file (optional)", gold)):
            uploader = sidebar.get_by_role("region", name=label)
            expect(uploader).to_be_visible(timeout=TIMEOUT)
            upload_file(page, uploader, path, TIMEOUT)  # the rerun request carrying the file, and its run
        type_into(page, "Run name", "browser-mapped")
        with rerun(page):
            sidebar.get_by_role("button", name="Add run").click()

        # Not recognised: the error, what sniff sees (literal text), the proposal in an editable field.
        error = sidebar.locator('[data-testid="stAlertContentError"]')
        expect(error).to_contain_text("my_outputs.json [format: unknown]: format not recognised", timeout=TIMEOUT)
        structure = sidebar.locator('[data-testid="stCode"]')
        expect(structure).to_contain_text("records at outputs: 1,468, each a turn")
        expect(structure).to_contain_text('prediction: object of 1 strings {"attraction-area": "centre"}')
        mapping = sidebar.get_by_label("Mapping", exact=True)
        expect(mapping).to_have_value(PROPOSED)
        expect(sidebar.get_by_text("The proposed mapping reads 1,468 turns in 200 dialogues")).to_be_visible()
        expect(sidebar.get_by_role("region", name="Prediction file").get_by_text(pred.name).first).to_be_visible()
        read = sidebar.get_by_role("button", name="Read with this mapping")
        read.scroll_into_view_if_needed()  # the sidebar scrolls: the offer is below the form
        sidebar.screenshot(path=str(screenshots / "upload_mapping_offered.png"))

        # A bad mapping: its one line; the offer stays.
        type_into(page, "Mapping", PROPOSED.replace("flat", "flatt"), "Control+Enter")
        with rerun(page):
            read.click()
        expect(error).to_contain_text("my_outputs.json [format: mapping]: encoding 'flatt' is not one of")
        before = manifest.read_text(encoding="utf-8")
        assert "browser-mapped" not in before

        # The proposal with the turns counted from 1: read, and saved with its mapping.
        type_into(page, "Mapping", PROPOSED + ",turn_base=1", "Control+Enter")
        with rerun(page):
            read.click()
        saved = sidebar.locator('[data-testid="stAlertContentSuccess"]')
        expect(saved).to_contain_text(
            "saved run 'browser-mapped' into the workspace (uploads/my_outputs.json, uploads/my_gold.json.gz; "
            "workspace.toml, with its mapping): format mapping + multiwoz, 1,468 turns, 200 dialogues",
            timeout=TIMEOUT,
        )
        expect(sidebar.locator('[data-testid="stCode"]')).to_have_count(0)  # the offer went with the files
        entry = read_manifest(manifest).entries[-1]
        assert entry.name == "browser-mapped" and entry.mapping == parse_mapping_option(PROPOSED + ",turn_base=1")
        runs = sidebar.locator('[data-testid="stMultiSelect"]').first
        expect(runs.get_by_text("browser-mapped", exact=True)).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=str(screenshots / "upload_mapping_saved.png"))
    finally:
        stop_server(process)
