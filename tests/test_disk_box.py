"""The sidebar's Disk box (`ui.disk`): opened, it says how much the score store and the parse cache hold and
how much of it this version never reads, as `python -m analysis prune --dry-run` says it; after a tick, its
button removes exactly that (another scorer version's entry and a stale parse) and keeps what this version
reads, as `prune` does. Closed, it reads nothing. On a 2-run workspace under its own cache folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.store import disk
from analysis.store import entries as store_entries
from analysis.store import runs as store_runs
from analysis.workspace import read_manifest
from tests import test_workspace_batch
from tests.test_cli_prune import _copy_entry, _run_folders
from tests.test_workspace_batch import DEMO, _copies

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
TIMEOUT = 240

store = test_workspace_batch.store  # the fixture: a score store under tmp_path
pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason=f"the demo workspace {DEMO} is absent")


def _app(manifest: Path, **state: object) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def _shown(at: AppTest) -> str:
    """The box's report, as the code block shows it."""
    blocks = [c.value for c in at.sidebar.get("code")]
    assert len(blocks) == 1, blocks
    return str(blocks[0])


@pytest.mark.slow  # three AppTest sessions on a 2-run workspace scored into a fresh store: ~20 s here
def test_the_disk_box_shows_what_prune_would_free_and_removes_only_that(tmp_path: Path, store: Path) -> None:
    manifest = _copies(tmp_path / "runs", 2)
    entries = read_manifest(manifest).entries
    keys = [store_runs.key(entry, "exact", store) for entry in entries]
    store_runs.ensure_all(entries, "exact", workers=1)
    header = json.loads(store_entries.header_path(store, keys[0]).read_text(encoding="utf-8"))
    old = _copy_entry(store, keys[0], "0" * 32, header={**header, "scorer_version": "0ld"})
    # A parse of a file that is gone since: stale in the parse cache.
    gone = tmp_path / "gone.jsonl"
    gone.write_bytes((tmp_path / "runs" / "run-0.jsonl").read_bytes())
    from analysis.formats import parse_file

    parse_file(gone)
    gone.unlink()
    expected = disk.look(dry_run=True)
    assert sum(expected.store.other_versions.values()) == 1 and expected.cache.stale == 1  # type: ignore[union-attr]

    closed = _app(manifest).run()
    assert not closed.exception, [e.value for e in closed.exception]
    assert "disk_report" not in closed.session_state and not closed.sidebar.get("code")  # closed: nothing read

    at = _app(manifest, w_disk_box=True).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _shown(at)
    expected = disk.look(dry_run=True)  # as `prune --dry-run` says it now (the app parsed the gold meanwhile)
    assert shown == "\n".join(expected.lines()), shown
    assert "would remove 1 entry other scorer versions wrote" in shown and "version 0ld" in shown
    assert "would remove 1 entry of files edited, moved or gone" in shown
    caption = " ".join(str(c.value) for c in at.sidebar.get("caption"))
    assert "it never reads again" in caption and "python -m analysis prune" in caption, caption
    remove = at.sidebar.button(key="w_disk_prune")
    assert remove.disabled  # not before the tick
    assert all(p.exists() for p in old)

    # Ticked (a fresh session given the tick: AppTest reruns only the page script, not app.py's sidebar, after
    # a session's first run), the button is enabled; clicked, its callback prunes.
    at = _app(manifest, w_disk_box=True, w_disk_sure=True).run()
    assert not at.sidebar.button(key="w_disk_prune").disabled
    at.sidebar.button(key="w_disk_prune").click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = at.session_state["disk_report"]
    assert not done.dry_run and done.freed_bytes == expected.freed_bytes and not done.failed
    assert not any(p.exists() for p in old)  # the other version's entry is gone
    for key in keys:  # this version's entries stay, and still load
        assert store_entries.header_path(store, key).exists() and _run_folders(store, key)
        assert store_entries.load(store, key) is not None
    again = disk.look(dry_run=True)
    assert again.freed_bytes == 0 and again.store.kept == 2  # type: ignore[union-attr]

    after = _app(manifest, w_disk_box=True, disk_report=done).run()
    shown = _shown(after)
    assert "removed 1 entry other scorer versions wrote" in shown and "freed" in shown, shown
    caption = " ".join(str(c.value) for c in after.sidebar.get("caption"))
    assert f"Removed {disk.size_text(done.freed_bytes)}" in caption, caption
    assert not after.sidebar.get("checkbox") or all(c.key != "w_disk_sure" for c in after.sidebar.get("checkbox"))


@pytest.mark.slow  # two AppTest sessions scoring a 3-run workspace into a fresh store: ~15 s here
def test_after_new_runs_are_scored_the_sidebar_says_what_this_version_never_reads(tmp_path: Path, store: Path) -> None:
    """The upgrade case: the store holds an entry another version wrote; opening a workspace whose runs it does
    not hold scores them (one batch) and then says, above the closed box, how much is unread; the box holds that
    look already. A workspace whose runs are all stored says nothing (nothing scored: no look)."""
    manifest = _copies(tmp_path / "runs", 3)
    entries = read_manifest(manifest).entries
    key = store_runs.key(entries[2], "exact", store)
    store_runs.ensure_all([entries[2]], "exact", workers=1)
    header = json.loads(store_entries.header_path(store, key).read_text(encoding="utf-8"))
    old = _copy_entry(store, key, "0" * 32, header={**header, "scorer_version": "0ld"})
    store_entries.header_path(store, key).unlink()  # run-2 unstored again: the app scores all three
    for folder in _run_folders(store, key):
        shutil.rmtree(folder)
    unread = disk.look(dry_run=True).freed_bytes
    assert unread > 0

    at = _app(manifest).run()
    assert not at.exception, [e.value for e in at.exception]
    assert all(store_entries.lookup(store, store_runs.key(e, "exact", store)) is not None for e in entries)
    hints = [str(i.value) for i in at.sidebar.info if "never reads again" in str(i.value)]
    assert hints == [
        f"The score store and the parse cache hold {disk.size_text(unread)} this version never reads again: "
        "the Disk box below shows what, and removes it."
    ], [str(i.value) for i in at.sidebar.info]
    assert at.session_state["disk_report"].freed_bytes == unread and all(p.exists() for p in old)
    assert not at.sidebar.get("code")  # the box stays closed

    again = _app(manifest).run()  # every run stored now: nothing scored, nothing looked at, nothing said
    assert "disk_report" not in again.session_state
    assert not [i for i in again.sidebar.info if "never reads again" in str(i.value)]
