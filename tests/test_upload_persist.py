"""Uploaded runs persist in the workspace (issue 17 requirement 6): `analysis.manifest_write` copies an
upload under the workspace root and appends its `[[runs]]` table to the manifest, atomically, under a lock,
merging an edit made meanwhile or refusing it with a message; the sidebar's upload form saves with the
metadata typed in, its Edit run form edits any run, a fresh session opening `?run=<name>` sees the run, and
a read-only root keeps the upload for the session with a warning. Everything runs on a copy of the demo
workspace in tmp_path, never on data/demo itself."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import manifest_write as mw
from analysis.errors import InputError
from analysis.metrics import joint_goal_accuracy
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest
from ui.text import md

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo"
PRED = "simulated/simulated-A-mwz-en-predicted.jsonl.gz"  # a real-format run of the demo: our JSONL
GOLD = "multiwoz21/test_subset.json.gz"  # MultiWOZ 2.1 gold, raw ConvLab-2 format
TIMEOUT = 240

pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason=f"the demo workspace {DEMO} is absent")


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """A copy of the demo workspace the dashboard may write (the demo itself says `edit_manifest = false`)."""
    root = tmp_path / "ws"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    path = root / "workspace.toml"
    text = path.read_text(encoding="utf-8")
    assert "edit_manifest = false" in text
    path.write_text(text.replace("edit_manifest = false", "edit_manifest = true"), encoding="utf-8")
    return path


def files(manifest: Path) -> tuple[bytes, bytes]:
    root = manifest.parent
    return (root / PRED).read_bytes(), (root / GOLD).read_bytes()


def names(manifest: Path) -> list[str]:
    return [run["name"] for run in tomllib.loads(manifest.read_text(encoding="utf-8"))["runs"]]


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.endswith((".tmp", ".read")))


# --- the writer --------------------------------------------------------------------------------------


def test_an_upload_is_copied_into_the_workspace_and_listed_with_its_metadata(manifest: Path) -> None:
    before = manifest.read_text(encoding="utf-8")
    pred, gold = files(manifest)
    saved = mw.save_upload(
        manifest,
        {
            "name": "my-run",
            "system": "My DST",
            "dataset": "MultiWOZ 2.1",
            "language": "en",
            "history": "gold",
            "seed": "3",
        },
        "preds.jsonl.gz",
        pred,
        "gold.json.gz",
        gold,
        expected_digest=read_manifest(manifest).digest,
    )
    assert saved.files == ("uploads/preds.jsonl.gz", "uploads/gold.json.gz") and not saved.merged
    assert (manifest.parent / "uploads" / "preds.jsonl.gz").read_bytes() == pred
    assert (manifest.parent / "uploads" / "gold.json.gz").read_bytes() == gold
    after = manifest.read_text(encoding="utf-8")
    assert after.startswith(before)  # appended as text: every comment and line of the file kept
    entry = read_manifest(manifest).entries[-1]
    assert (entry.name, entry.meta.system, entry.meta.dataset, entry.meta.language) == (
        "my-run",
        "My DST",
        "MultiWOZ 2.1",
        "en",
    )
    assert (entry.meta.history, entry.meta.seed) == ("gold", 3)
    # Real numbers: the saved copy scores exactly as the demo's own run over the same files.
    original = next(e for e in read_manifest(manifest).entries if e.name == "simulated-A-mwz-en-predicted")
    saved_jga = joint_goal_accuracy(score_run(load_entry(entry), "exact"))
    assert saved_jga == joint_goal_accuracy(score_run(load_entry(original), "exact"))
    assert 0.0 < saved_jga < 1.0
    assert leftovers(manifest.parent) == []


def test_a_failed_write_leaves_the_manifest_and_the_root_as_they_were(
    manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = manifest.read_bytes()
    pred, _ = files(manifest)

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(mw.os, "replace", broken_replace)
    with pytest.raises(OSError):
        mw.save_upload(manifest, {"name": "x"}, "x.jsonl.gz", pred)
    monkeypatch.undo()
    assert manifest.read_bytes() == before
    assert not (manifest.parent / "uploads" / "x.jsonl.gz").exists()  # the copy made for it is gone too
    assert leftovers(manifest.parent) == []


def test_a_change_made_meanwhile_is_merged_and_a_clash_refused(manifest: Path) -> None:
    digest = read_manifest(manifest).digest  # what the upload form read
    other = (
        '\n# added by a colleague\n[[runs]]\nname = "colleague"\npred = "simulated/simulated-A-mwz-en-gold.jsonl.gz"\n'
    )
    with manifest.open("a", encoding="utf-8") as handle:
        handle.write(other)
    pred, _ = files(manifest)
    saved = mw.save_upload(manifest, {"name": "mine"}, "mine.jsonl.gz", pred, expected_digest=digest)
    assert "changed since it was read" in saved.merged
    assert names(manifest)[-2:] == ["colleague", "mine"]
    assert "# added by a colleague" in manifest.read_text(encoding="utf-8")
    # The same name added meanwhile: refused, saying so, nothing copied.
    with manifest.open("a", encoding="utf-8") as handle:
        handle.write('\n[[runs]]\nname = "late"\npred = "simulated/simulated-A-mwz-en-gold.jsonl.gz"\n')
    with pytest.raises(InputError, match="a run named 'late' was added to the manifest since you read it"):
        mw.save_upload(manifest, {"name": "late"}, "late.jsonl.gz", b"{}", expected_digest=digest)
    assert not (manifest.parent / "uploads" / "late.jsonl.gz").exists()
    assert names(manifest).count("late") == 1


def test_an_edit_merges_with_other_keys_changed_meanwhile_and_refuses_the_same_key(manifest: Path) -> None:
    workspace = read_manifest(manifest)
    entry = next(e for e in workspace.entries if e.name == "simulated-A-mwz-en-gold")
    seen = mw.editable_values(entry)
    text = manifest.read_text(encoding="utf-8")
    block = text.index('name = "simulated-A-mwz-en-gold"')
    changed = text[:block] + text[block:].replace('language = "en"', 'language = "en-GB"', 1)
    manifest.write_text(changed, encoding="utf-8")  # a colleague changed the language meanwhile
    saved = mw.edit_run(manifest, entry.name, {"system": "renamed"}, seen=seen, expected_digest=workspace.digest)
    assert saved.merged
    merged = next(e for e in read_manifest(manifest).entries if e.name == entry.name)
    assert (merged.meta.system, merged.meta.language) == ("renamed", "en-GB")
    with pytest.raises(InputError, match=r"was edited meanwhile: language is now 'en-GB' \(was 'en'\)"):
        mw.edit_run(manifest, entry.name, {"language": "de"}, seen=seen, expected_digest=workspace.digest)
    assert next(e for e in read_manifest(manifest).entries if e.name == entry.name).meta.language == "en-GB"


def test_an_edit_changes_only_its_lines_and_keeps_comments(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("", encoding="utf-8")
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(
        textwrap.dedent(
            """\
            # my workspace
            [workspace]
            name = "W"   # shown in the sidebar

            [[runs]]
            name = "a"
            system = "old" # the system's name, as in the paper
            seed = 1
            description = \"\"\"two
            lines\"\"\"
            pred = "a.jsonl"

            # the second run
            [[runs]]
            name = "b"
            pred = "a.jsonl"
            """
        ),
        encoding="utf-8",
    )
    before = manifest.read_text(encoding="utf-8").splitlines()
    mw.edit_run(manifest, "a", {"system": 'new "one"', "seed": None, "description": "one line", "language": "zh"})
    after = manifest.read_text(encoding="utf-8").splitlines()
    assert 'system = "new \\"one\\"" # the system\'s name, as in the paper' in after
    assert "seed = 1" not in after and 'description = "one line"' in after and 'language = "zh"' in after
    assert [line for line in before if line not in after] == [
        'system = "old" # the system\'s name, as in the paper',
        "seed = 1",
        'description = """two',
        'lines"""',
    ]
    assert [line for line in after if line not in before] == [
        'system = "new \\"one\\"" # the system\'s name, as in the paper',
        'description = "one line"',
        'language = "zh"',
    ]
    entry = read_manifest(manifest).entries[0]
    assert (entry.meta.system, entry.meta.seed, entry.meta.language) == ('new "one"', None, "zh")
    assert read_manifest(manifest).entries[1].name == "b"


def test_a_crlf_manifest_keeps_its_line_endings_and_its_digest_matches(tmp_path: Path) -> None:
    manifest = tmp_path / "workspace.toml"
    manifest.write_bytes(b'# crlf\r\n[[runs]]\r\nname = "a"\r\npred = "a.jsonl"\r\nseed = 1\r\n')
    digest = read_manifest(manifest).digest
    saved = mw.add_run(manifest, {"name": "b", "pred": "a.jsonl"}, expected_digest=digest)
    assert saved.merged == ""  # the digest read by the manifest reader is the writer's: no false "changed"
    mw.edit_run(manifest, "a", {"seed": 2}, expected_digest=read_manifest(manifest).digest)
    raw = manifest.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n")  # every line still ends in CRLF
    assert [e.meta.seed for e in read_manifest(manifest).entries] == [2, None]


@pytest.mark.parametrize("value", ['"no"', "0"])
def test_edit_manifest_must_be_true_or_false(tmp_path: Path, value: str) -> None:
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(f'[dashboard]\nedit_manifest = {value}\n[[runs]]\nname = "a"\npred = "a.jsonl"\n')
    with pytest.raises(InputError, match=r"\[dashboard\] edit_manifest must be true or false"):
        read_manifest(manifest)


WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from analysis import manifest_write as mw
from analysis.workspace import read_manifest
manifest, tag, start = Path({manifest!r}), sys.argv[1], Path({start!r})
while not start.exists():
    pass
for i in range(12):
    digest = read_manifest(manifest).digest
    mw.add_run(manifest, {{"name": f"{{tag}}-{{i}}", "pred": "{pred}"}}, expected_digest=digest)
"""


def test_two_processes_saving_at_once_both_land(manifest: Path, tmp_path: Path) -> None:
    start = tmp_path / "go"
    script = WRITER.format(root=str(ROOT), manifest=str(manifest), start=str(start), pred=PRED)
    before = names(manifest)
    writers = [subprocess.Popen([sys.executable, "-c", script, tag], stderr=subprocess.PIPE) for tag in ("p", "q")]
    start.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err.decode()[-2000:]
    added = [name for name in names(manifest) if name not in before]
    assert sorted(added) == sorted(f"{tag}-{i}" for tag in "pq" for i in range(12))
    assert [n for n in added if n.startswith("p")] == [f"p-{i}" for i in range(12)]  # each writer's order kept
    assert manifest.read_text(encoding="utf-8").startswith(
        (DEMO / "workspace.toml").read_text(encoding="utf-8").replace("edit_manifest = false", "edit_manifest = true")
    )
    assert leftovers(manifest.parent) == []


def test_paths_leading_outside_the_root_are_refused(manifest: Path, tmp_path: Path) -> None:
    before = manifest.read_bytes()
    (tmp_path / "outside.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="leads outside the workspace root"):
        mw.add_run(manifest, {"name": "out", "pred": "../outside.jsonl"})
    pred, _ = files(manifest)
    saved = mw.save_upload(manifest, {"name": "sneaky"}, "../../../etc/x.jsonl.gz", pred)  # the name's folders go
    assert saved.files == ("uploads/x.jsonl.gz",)
    assert (manifest.parent / "uploads" / "x.jsonl.gz").is_file()
    # An uploads folder that is a symlink out of the root: refused, nothing written outside.
    shutil.rmtree(manifest.parent / "uploads")
    manifest.write_bytes(before)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (manifest.parent / "uploads").symlink_to(elsewhere)
    with pytest.raises(InputError, match="not a plain folder"):
        mw.save_upload(manifest, {"name": "sneaky"}, "x.jsonl.gz", pred)
    assert list(elsewhere.iterdir()) == [] and manifest.read_bytes() == before


def test_name_clashes(manifest: Path) -> None:
    pred, gold = files(manifest)
    first = mw.save_upload(manifest, {"name": "one"}, "run.jsonl.gz", pred)
    again = mw.save_upload(manifest, {"name": "two"}, "run.jsonl.gz", pred)  # same bytes: the copy is reused
    assert first.files == again.files == ("uploads/run.jsonl.gz",) and again.new_files == ()
    other = mw.save_upload(manifest, {"name": "three"}, "run.jsonl.gz", gold)  # other bytes: never overwritten
    assert other.files == (f"uploads/run-{mw.content_digest(gold)[:12]}.jsonl.gz",)
    assert (manifest.parent / "uploads" / "run.jsonl.gz").read_bytes() == pred
    with pytest.raises(InputError, match="a run named 'one' is already in the manifest; choose another name"):
        mw.save_upload(manifest, {"name": "one"}, "run.jsonl.gz", pred)
    # A manifest that breaks the reader's rules (a name used twice, by hand) is not written to.
    broken = manifest.read_text(encoding="utf-8") + '\n[[runs]]\nname = "one"\npred = "x"\n'
    manifest.write_text(broken, encoding="utf-8")
    with pytest.raises(InputError, match=r"not saved: .*run name 'one' is used twice"):
        mw.add_run(manifest, {"name": "fresh", "pred": PRED})
    assert manifest.read_text(encoding="utf-8") == broken


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"name": "a\nb"}, "control character U+000A"),
        ({"name": "evil\u202eexe.txt"}, "control character U+202E"),
        ({"name": "a,b"}, "holds a comma"),
        ({"name": " padded"}, "starts or ends with a space"),
        ({"name": "x" * 101}, "at most 100"),
        ({"name": "ok", "seed": "three"}, "seed must be an integer, got 'three'"),
        ({"name": "ok", "seed": True}, "seed must be an integer"),
        ({"name": "ok", "history": "sometimes"}, "history has to be one of"),
        ({"name": "ok", "convention": "lenient"}, "convention has to be one of"),
        ({"name": "ok", "format": "pickle"}, "format 'pickle' is not one of"),
        ({"name": "ok", "system": "a\x00b"}, "control character U+0000"),
        ({"name": "ok", "pred": "x"}, "'pred' is not a run key the dashboard sets"),
    ],
)
def test_hostile_metadata_is_refused(manifest: Path, values: dict, message: str) -> None:
    before = manifest.read_bytes()
    with pytest.raises(InputError, match=re.escape(message)):
        mw.save_upload(manifest, values, "r.jsonl.gz", b"")
    assert manifest.read_bytes() == before and not (manifest.parent / "uploads").exists()


def test_hostile_but_printable_names_are_stored_literally(manifest: Path) -> None:
    pred, _ = files(manifest)
    name = '[sign in](http://x) " ]] [[runs]] # <script>alert(1)</script> $x$ 表'
    system = 'a"b\\c = 1\n'.strip()
    mw.save_upload(manifest, {"name": name, "system": system, "description": "two\nlines"}, "r.jsonl.gz", pred)
    entry = read_manifest(manifest).entries[-1]
    assert (entry.name, entry.meta.system, entry.description) == (name, system, "two\nlines")
    assert names(manifest).count(name) == 1


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` made unwritable: mode 0555, and for root (whom modes do not stop) the immutable attribute;
    skipped when neither stops a write here."""
    folder.chmod(0o555)
    immutable = False
    try:
        if os.access(folder, os.W_OK):
            immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        probe = folder / ".probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("cannot make a folder read-only here (root without chattr +i)")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_read_only_root_is_not_saved(manifest: Path) -> None:
    before = manifest.read_bytes()
    pred, _ = files(manifest)
    with (
        read_only(manifest.parent),
        pytest.raises(mw.NotSavedError, match="not saved: the workspace root is not writable"),
    ):
        mw.save_upload(manifest, {"name": "ro"}, "ro.jsonl.gz", pred)
    assert manifest.read_bytes() == before


# --- the dashboard -----------------------------------------------------------------------------------


def app(manifest: Path, **state: object) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def upload(at: AppTest, manifest: Path, name: str, **metadata: str) -> tuple[str, str, list[str]]:
    """Fill the sidebar's upload form (both files, the run name and metadata), press Add run, and return
    what the form then shows (kind, message, warnings)."""
    pred, gold = files(manifest)
    uploaders = {u.label: u for u in at.sidebar.get("file_uploader")}
    uploaders["Prediction file"].upload("preds.jsonl.gz", pred)
    uploaders["Gold file (optional)"].upload("test_subset.json.gz", gold)
    at.sidebar.text_input(key="w_upload_name").input(name)
    for key, value in metadata.items():
        at.sidebar.text_input(key=f"w_upload_{key}").input(value)
    at.sidebar.button(key="w_upload_add").click()
    at.run()
    no_exception(at)
    return shown(at, "upload_result")


def shown(at: AppTest, key: str) -> tuple[str, str, list[str]]:
    """The result a sidebar form shows, read from the session: AppTest reruns only the page script, not
    app.py and its sidebar, after the first run (the forms' rendering is checked in a fresh session, `rendered`)."""
    kind, message, notes = at.session_state[key]
    return kind, message, list(notes)


def rendered(manifest: Path, key: str, result: tuple[str, str, list[str]], box: str, **state: object) -> AppTest:
    """A fresh session whose form holds `result`: what the sidebar draws for it."""
    at = app(manifest, **{key: result, box: True}, **state).run()
    no_exception(at)
    return at


@pytest.mark.slow
def test_an_upload_is_saved_and_a_fresh_session_opens_its_link(manifest: Path) -> None:
    at = app(manifest, w_upload_box=True).run()
    no_exception(at)
    at.sidebar.selectbox(key="w_upload_history").select("gold")
    result = upload(at, manifest, "shared-run", system="Uploaded DST", dataset="MultiWOZ 2.1", language="en", seed="5")
    kind, message, notes = result
    assert kind == "success" and message.startswith("saved run 'shared-run' into the workspace"), result
    assert "1,468 turns, 200 dialogues" in message and notes == []
    entry = read_manifest(manifest).entries[-1]
    assert (entry.name, entry.meta.system, entry.meta.history, entry.meta.seed) == (
        "shared-run",
        "Uploaded DST",
        "gold",
        5,
    )
    assert (entry.meta.dataset, entry.meta.language) == ("MultiWOZ 2.1", "en")
    assert entry.pred == manifest.parent / "uploads" / "preds.jsonl.gz"
    assert entry.gold == manifest.parent / "uploads" / "test_subset.json.gz"
    assert "shared-run" in at.session_state["runs"]  # selected in the session that uploaded it
    assert "shared-run" not in at.session_state["sources"]  # not kept as a session upload: the workspace has it
    # (AppTest reruns only the page script, not app.py's sidebar: the reload is seen in a fresh session here,
    # in the same session by tests/browser/test_browser_upload_persist.py.)
    shown_at = rendered(manifest, "upload_result", result, "w_upload_box")
    assert [s.body for s in shown_at.sidebar.success] == [message]
    assert "shared-run" in next(m for m in shown_at.sidebar.multiselect if m.label == "Runs shown").options
    assert not shown_at.session_state["sources"]["shared-run"].uploaded  # a workspace run like any other

    # Another reviewer: a fresh session opening the link that names the run, on the dialogue viewer.
    fresh = app(manifest)
    fresh.query_params.update({"page": "dialogue", "run": "shared-run"})
    fresh.run()
    no_exception(fresh)
    assert fresh.session_state["run"] == "shared-run" and not fresh.session_state["link_notes"]
    dialogue = fresh.session_state["dialogue"]
    assert dialogue in set(load_entry(entry).turns["dialogue_id"])  # the upload's dialogue ...
    demo_first = load_entry(read_manifest(manifest).entries[0])
    assert dialogue not in set(demo_first.turns["dialogue_id"])  # ... not the demo's first run's
    # ... and the run is on the Overview's leaderboard.
    overview = app(manifest)
    overview.query_params.update({"runs": "shared-run,crosswoz-rule-dst"})
    overview.run()
    no_exception(overview)
    tables = [d.value for d in overview.dataframe if "run" in getattr(d.value, "columns", [])]
    assert any((t["run"] == "shared-run").any() for t in tables), "the Overview lists no row for the saved upload"


def test_a_bad_seed_in_the_form_is_refused_and_nothing_saved(manifest: Path) -> None:
    before = manifest.read_bytes()
    at = app(manifest, w_upload_box=True).run()
    kind, message, _ = upload(at, manifest, "bad-seed", seed="one")
    assert kind == "error" and "seed must be an integer, got 'one'" in message
    assert manifest.read_bytes() == before and not (manifest.parent / "uploads").exists()


def edit(manifest: Path, run: str, **typed: str) -> tuple[str, str, list[str]]:
    """Open the Edit run form on `run` in a fresh session, type `typed` (by label) and press Save."""
    at = app(manifest, w_edit_box=True, run=run).run()
    no_exception(at)
    assert at.sidebar.selectbox(key="w_edit_run").value == run
    for label, value in typed.items():
        next(t for t in at.sidebar.text_input if t.label == label).input(value)
    next(b for b in at.sidebar.button if b.label == "Save").click()
    at.run()
    no_exception(at)
    return shown(at, "edit_result")


@pytest.mark.slow
def test_the_edit_form_saves_metadata_and_refuses_a_bad_value(manifest: Path) -> None:
    run = "simulated-A-mwz-en-gold"
    before = manifest.read_bytes()
    kind, message, _ = edit(manifest, run, System="Edited <b>system</b>", Seed="not a number")
    assert kind == "error" and "seed must be an integer, got 'not a number'" in message
    assert manifest.read_bytes() == before
    result = edit(manifest, run, System="Edited <b>system</b>", Seed="42")
    assert result[0] == "success" and result[1] == f"saved run {run!r}'s seed, system into workspace.toml", result
    entry = next(e for e in read_manifest(manifest).entries if e.name == run)
    assert (entry.meta.system, entry.meta.seed) == ("Edited <b>system</b>", 42)
    assert manifest.read_text(encoding="utf-8").count("\n") == before.decode().count("\n")  # two lines rewritten
    # A fresh session's form shows the saved values, literally; the message is drawn as it was made.
    at = rendered(manifest, "edit_result", result, "w_edit_box", run=run)
    assert next(t for t in at.sidebar.text_input if t.label == "System").value == "Edited <b>system</b>"
    assert next(t for t in at.sidebar.text_input if t.label == "Seed").value == "42"
    assert [s.body for s in at.sidebar.success] == [result[1]]


@pytest.mark.slow
def test_the_demo_workspace_is_never_written(tmp_path: Path) -> None:
    """`edit_manifest = false` (the demo's): the upload stays in the session, and says so; no Edit run form."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root)
    manifest = root / "workspace.toml"
    before = manifest.read_bytes()
    at = app(manifest, w_upload_box=True).run()
    assert [e.label for e in at.sidebar.expander] == [
        "Upload a run",
        "Disk: score store and parse cache",
    ]  # no Edit run
    kind, message, notes = upload(at, manifest, "session-only")
    assert kind == "success" and message.startswith("added run 'session-only'")
    assert any("keeps uploads in their session" in note for note in notes)
    assert at.session_state["sources"]["session-only"].uploaded
    assert manifest.read_bytes() == before and not (root / "uploads").exists()


@pytest.mark.slow
def test_a_read_only_root_keeps_the_upload_for_the_session_with_a_warning(manifest: Path) -> None:
    before = manifest.read_bytes()
    at = app(manifest, w_upload_box=True).run()
    with read_only(manifest.parent):
        kind, message, notes = upload(at, manifest, "ro-run")
    assert kind == "success" and message.startswith("added run 'ro-run'")
    assert notes[0] == (
        f"not saved: the workspace root is not writable ({manifest.parent}): run 'ro-run' is kept for this session only"
    )
    assert at.session_state["sources"]["ro-run"].uploaded and "ro-run" in at.session_state["runs"]
    assert manifest.read_bytes() == before
    at = rendered(manifest, "upload_result", (kind, message, notes), "w_upload_box")
    assert md(notes[0]) in [w.body for w in at.sidebar.warning]  # drawn as literal text
