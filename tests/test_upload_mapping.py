"""A declared mapping in the upload form (issue 38 requirement 2): when no format recognises an uploaded
prediction file, the sidebar's form shows what `sniff` sees in it (literal text) and offers the mapping it
proposes in an editable field, in the CLI's `--mapping` syntax; a bad mapping is its one-line error, an
accepted one loads the run, and the upload saved into the workspace carries the mapping in its manifest
entry, so a restart reads the file the same way. The file is the demo's real-format simulated run rewritten
into a shape no format knows. Everything runs on a copy of the demo workspace in tmp_path."""

from __future__ import annotations

import gzip
import json
import shutil
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import manifest_write as mw
from analysis.errors import InputError
from analysis.formats.mapping import parse_mapping_option
from analysis.isolated import Unrecognised, load_entry_or_error
from analysis.metrics import joint_goal_accuracy
from analysis.model import RunInfo
from analysis.scoring import score_run
from analysis.workspace import RunEntry, load_entry, read_manifest
from ui.text import md

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo"
RUN = "simulated-A-mwz-en-predicted"  # its prediction file is our JSONL, its gold MultiWOZ 2.1's
PRED = "simulated/simulated-A-mwz-en-predicted.jsonl.gz"
GOLD = "multiwoz21/test_subset.json.gz"
PROPOSED = "records=outputs,dialogue=conv,turn=step,pred=prediction,encoding=flat"
TIMEOUT = 240

pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason=f"the demo workspace {DEMO} is absent")


def unknown_shape(root: Path) -> bytes:
    """The demo run's predictions as one JSON object no format recognises: its turns under `outputs`,
    counted from 1 (`step`), each state flat (`{"domain-slot": value}`) under `prediction`."""
    with gzip.open(root / PRED, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    outputs = [
        {
            "conv": row["dialogue_id"],
            "step": row["turn_index"] + 1,
            "prediction": {
                f"{domain}-{slot}": value for domain, slots in row["pred"].items() for slot, value in slots.items()
            },
        }
        for row in rows
    ]
    return json.dumps({"outputs": outputs}).encode()


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """A copy of the demo workspace the dashboard may write (the demo itself says `edit_manifest = false`)."""
    root = tmp_path / "ws"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    path = root / "workspace.toml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("edit_manifest = false", "edit_manifest = true"), encoding="utf-8"
    )
    return path


def app(manifest: Path, **state: object) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def choose_files(at: AppTest, manifest: Path) -> None:
    uploaders = {u.label: u for u in at.sidebar.get("file_uploader")}
    uploaders["Prediction file"].upload("my_outputs.json", unknown_shape(manifest.parent))
    uploaders["Gold file (optional)"].upload("gold.json.gz", (manifest.parent / GOLD).read_bytes())


def offered(at: AppTest) -> dict[str, object]:
    """The state the offer leaves: AppTest reruns only the page script after the first run, not app.py's
    sidebar (as tests/test_upload_persist.py says), so a fresh session given it draws the form with it."""
    keys = ("upload_offer", "w_upload_mapping", "upload_result", "upload_round")
    return {"w_upload_box": True} | {k: at.session_state[k] for k in keys if k in at.session_state}


def read_with(manifest: Path, state: dict[str, object], mapping: str) -> tuple[str, str, list[str]]:
    """In a fresh session whose form offers a mapping: the files chosen again, `mapping` typed, "Read with
    this mapping" pressed; what the form then says."""
    at = app(manifest, **state).run()
    no_exception(at)
    choose_files(at, manifest)
    at.sidebar.text_input(key="w_upload_name").input("mapped-run")
    at.sidebar.text_area(key="w_upload_mapping").input(mapping)
    at.sidebar.button(key="w_upload_map").click()
    at.run()
    no_exception(at)
    kind, message, notes = at.session_state["upload_result"]
    return kind, message, list(notes)


@pytest.mark.slow  # four AppTest sessions: 15 s here
def test_an_unrecognised_upload_is_read_by_the_offered_mapping_and_saved_with_it(manifest: Path) -> None:
    before = manifest.read_bytes()
    at = app(manifest, w_upload_box=True).run()
    no_exception(at)
    choose_files(at, manifest)
    at.sidebar.button(key="w_upload_add").click()
    at.run()
    no_exception(at)
    kind, message, _ = at.session_state["upload_result"]
    assert kind == "error" and message.startswith("my_outputs.json [format: unknown]: format not recognised")
    offer = at.session_state["upload_offer"]
    assert offer["structure"] == "\n".join(
        [
            "read as json: object of 1 arrays",
            "records at outputs: 1,468, each a turn",
            "first record:",
            '  conv: string "PMUL3027"',
            "  step: number 1",
            '  prediction: object of 1 strings {"attraction-area": "centre"}',
        ]
    )
    assert offer["verdict"] == "reads 1,468 turns in 200 dialogues (0 gold, 7,913 predicted slot values)"
    assert at.session_state["w_upload_mapping"] == PROPOSED
    assert "upload_round" not in at.session_state  # the files stay in their widgets: the mapping reads them
    assert manifest.read_bytes() == before

    # What the form draws for it: the structure as literal text, the mapping editable, the button.
    state = offered(at)
    shown = app(manifest, **state).run()
    no_exception(shown)
    assert [c.value for c in shown.sidebar.code] == [offer["structure"]]
    assert shown.sidebar.text_area(key="w_upload_mapping").value == PROPOSED
    captions = [c.value for c in shown.sidebar.caption]
    assert md("No format recognises my_outputs.json. What it holds:") in captions
    assert md(f"The proposed mapping {offer['verdict']}") in captions
    assert [b.label for b in shown.sidebar.button if b.key == "w_upload_map"] == ["Read with this mapping"]

    # A bad mapping: its one-line error, naming the file; nothing saved, the offer kept.
    kind, message, _ = read_with(manifest, state, PROPOSED.replace("flat", "flatt"))
    assert kind == "error"
    assert message.startswith("my_outputs.json [format: mapping]: encoding 'flatt' is not one of nested, flat,")
    assert "\n" not in message and manifest.read_bytes() == before

    # The proposal edited (the turns count from 1): the run loads and is saved with its mapping.
    typed = PROPOSED + ",turn_base=1"
    kind, message, notes = read_with(manifest, state, typed)
    assert (kind, notes) == ("success", []), message
    assert message == (
        "saved run 'mapped-run' into the workspace (uploads/my_outputs.json, uploads/gold.json.gz; "
        "workspace.toml, with its mapping): format mapping + multiwoz, 1,468 turns, 200 dialogues"
    )
    table = tomllib.loads(manifest.read_text(encoding="utf-8"))["runs"][-1]
    assert table["mapping"] == {
        "records": "outputs",
        "dialogue": "conv",
        "turn": "step",
        "pred": "prediction",
        "encoding": "flat",
        "turn_base": 1,
    }
    # A restart reads the saved run by the same mapping; it scores exactly as the demo run it came from.
    entries = {e.name: e for e in read_manifest(manifest).entries}
    saved = entries["mapped-run"]
    assert saved.mapping == parse_mapping_option(typed) and saved.format is None
    jga = joint_goal_accuracy(score_run(load_entry(saved), "exact"))
    assert jga == joint_goal_accuracy(score_run(load_entry(entries[RUN]), "exact"))
    assert 0.0 < jga < 1.0


def entry(tmp_path: Path, name: str, *, fmt: str | None = None) -> RunEntry:
    return RunEntry(RunInfo(run_id="x", system="x"), tmp_path / name, None, format=fmt)


def test_only_a_json_file_of_no_known_format_gets_an_offer(tmp_path: Path) -> None:
    data = unknown_shape(DEMO)
    found = load_entry_or_error(entry(tmp_path, "a.json"), data, None)
    assert isinstance(found, Unrecognised) and found.sniffed["proposed_mapping"]["pred"] == "prediction"
    # A format chosen, a file a format recognises but that is malformed, a file that is not JSON: the error alone.
    chosen = load_entry_or_error(entry(tmp_path, "a.json", fmt="nested"), data, None)
    assert isinstance(chosen, str) and "[format: nested]" in chosen
    detected = load_entry_or_error(
        entry(tmp_path, "b.jsonl"), b'{"dialogue_id": "d", "turn_index": "x", "pred": {}}\n', None
    )
    assert isinstance(detected, str) and "[format: jsonl]" in detected
    not_json = load_entry_or_error(entry(tmp_path, "c.json"), b"{not json", None)
    assert isinstance(not_json, str) and not isinstance(not_json, Unrecognised)


def test_save_upload_writes_the_mapping_and_refuses_it_beside_a_format(manifest: Path) -> None:
    mapping = parse_mapping_option(PROPOSED + ",turn_base=1,multiword_slots=book day|book time")
    data = unknown_shape(manifest.parent)
    before = manifest.read_bytes()
    with pytest.raises(InputError, match="give a format or a mapping, not both"):
        mw.save_upload(manifest, {"name": "both", "format": "nested"}, "o.json", data, mapping=mapping)
    assert manifest.read_bytes() == before
    mw.save_upload(manifest, {"name": "mapped"}, "o.json", data, mapping=mapping)
    text = manifest.read_text(encoding="utf-8")
    assert text.startswith(before.decode()) and text.endswith(
        'mapping = { records = "outputs", dialogue = "conv", turn = "step", pred = "prediction", '
        'encoding = "flat", turn_base = 1, multiword_slots = ["book day", "book time"] }\n'
    )
    assert read_manifest(manifest).entries[-1].mapping == mapping
