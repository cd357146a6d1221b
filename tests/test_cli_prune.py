"""`python -m analysis prune`: what the score store holds that this version never reads (entries of other
scorer versions, damaged entries, parts without a header, temporary files of writes cut short) found and
removed, an entry being written left alone, the kept entries still read back; `--dry-run` removes nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from analysis.cli.main import main
from analysis.store import entries as store_entries
from analysis.store import prune as store_prune
from analysis.store import runs as store_runs
from analysis.workspace import read_manifest
from tests import test_workspace_batch
from tests.test_workspace_batch import _copies

store = test_workspace_batch.store  # the fixture: a score store under tmp_path


def _prune(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["prune", *argv])
    return code, out.getvalue(), err.getvalue()


def _run_folders(root: Path, key: str) -> list[Path]:
    return sorted(root.glob(f"*/convention=*/run={key}"))


def _bytes(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        for folder, _, files in os.walk(path):
            total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
    return total


def _copy_entry(root: Path, key: str, new: str, *, header: dict | None) -> list[Path]:
    """The parts of entry `key` copied under key `new`, with `header` written as its header (None: none)."""
    copies = []
    for folder in _run_folders(root, key):
        target = folder.parent / f"run={new}"
        shutil.copytree(folder, target)
        copies.append(target)
    if header is not None:
        path = store_entries.header_path(root, new)
        path.write_text(json.dumps({**header, "key": new}), encoding="utf-8")
        copies.append(path)
    return copies


@pytest.fixture
def cluttered(tmp_path: Path, store: Path) -> dict[str, list[Path]]:
    """A store with two whole entries of this scorer (`kept`, `damaged`: its slots part then cut short), an
    entry another scorer version wrote (`old`), the parts of a run without a header (`orphan`, and `busy`,
    whose write lock the test holds), and two temporary files of writes cut short (`temporary`)."""
    good = read_manifest(_copies(tmp_path / "runs", 2)).entries
    keys = [store_runs.key(entry, "exact", store) for entry in good]
    for entry in good:
        store_runs.ensure_all([entry], "exact", workers=1)
    header = json.loads(store_entries.header_path(store, keys[0]).read_text(encoding="utf-8"))
    slots = store_entries.table_path(store, "slots", "exact", keys[1])
    slots.write_bytes(slots.read_bytes()[:100])
    temporary = [
        store_entries.header_path(store, keys[0]).with_name(f".{keys[0]}.json.abc123.tmp"),
        slots.with_name(".part.parquet.def456.tmp"),
    ]
    for path in temporary:
        path.write_bytes(b"x" * 1000)
    return {
        "kept": [store_entries.header_path(store, keys[0]), *_run_folders(store, keys[0])],
        "damaged": [store_entries.header_path(store, keys[1]), *_run_folders(store, keys[1])],
        "old": _copy_entry(store, keys[0], "0" * 32, header={**header, "scorer_version": "0ld"}),
        "orphan": _copy_entry(store, keys[0], "1" * 32, header=None),
        "busy": _copy_entry(store, keys[0], "2" * 32, header=None),
        "temporary": temporary,
    }


def test_prune_removes_what_this_scorer_never_reads_and_keeps_what_it_does(
    store: Path, cluttered: dict[str, list[Path]]
) -> None:
    removable = cluttered["old"] + cluttered["orphan"] + cluttered["damaged"] + cluttered["temporary"]
    # The part's temporary file lies in the damaged entry's folder: counted once, as a temporary file.
    expected = _bytes(cluttered["old"] + cluttered["orphan"] + cluttered["damaged"]) + 1000
    old_bytes, orphan_bytes = _bytes(cluttered["old"]), _bytes(cluttered["orphan"])
    kept_key = cluttered["kept"][0].stem
    with store_entries.held(store, f"{'2' * 32}.lock") as mine:  # another process writing that entry
        assert mine
        before = sorted(str(p) for p in store.rglob("*"))
        code, out, err = _prune("--dry-run", "--json")
        assert (code, err) == (0, "")
        assert sorted(str(p) for p in store.rglob("*")) == before  # nothing removed
        looked = json.loads(out)
        code, out, err = _prune()
    assert (code, err) == (0, "")
    assert looked["kept"]["entries"] == 1
    assert looked["other_versions"] == {"entries": 1, "bytes": old_bytes, "versions": {"0ld (layout 3)": 1}}
    assert looked["damaged"]["entries"] == 1 and "slots part has 100 bytes" in looked["damaged"]["keys"][0]["why"]
    assert looked["orphaned"] == {"keys": 1, "bytes": orphan_bytes}
    assert looked["temporary"] == {"files": 2, "bytes": 2000}
    assert looked["busy"] == 1
    assert looked["would_free_bytes"] == expected and looked["freed_bytes"] == 0

    assert f"freed {expected / 1e3:.1f} kB" in out
    assert "removed 1 entry other scorer versions wrote" in out and "version 0ld (layout 3): 1" in out
    assert "left 1 entry being written now" in out and "removed 1 damaged entry: " in out
    assert not any(p.exists() for p in removable)
    assert all(p.exists() for p in cluttered["busy"] + cluttered["kept"])
    whole = store_entries.load(store, kept_key)  # the kept entry reads back, checked to its digests
    assert whole is not None and store_entries.lookup(store, kept_key, deep=True) is not None
    assert not list(store.glob("*/convention=*/run=" + "0" * 32))

    code, out, _ = _prune("--json")  # the lock let go: the cut-short write is removed now
    assert code == 0 and json.loads(out)["orphaned"]["keys"] == 1
    assert not any(p.exists() for p in cluttered["busy"])
    code, out, _ = _prune("--json")  # nothing left to remove
    again = json.loads(out)
    assert code == 0 and again["kept"]["entries"] == 1 and again["freed_bytes"] == 0


def test_what_cannot_be_removed_is_one_line_and_exit_2(
    store: Path, cluttered: dict[str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store_prune.shutil, "rmtree", refused)
    code, out, err = _prune()
    assert code == 2
    assert err.count("\n") == 1 and "could not be removed; the first: " in err and "Permission denied" in err
    assert "Traceback" not in out + err


def test_no_store_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DST_CACHE_DIR", "")
    code, out, err = _prune()
    assert (code, out) == (2, "") and "the score store is off (DST_CACHE_DIR is empty)" in err
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "none"))
    code, out, err = _prune()
    assert (code, err) == (0, "") and out.startswith("prune: no score store at ")
    assert not (tmp_path / "none").exists()  # looking made nothing


def test_a_hostile_header_version_is_shown_as_literal_text(store: Path, cluttered: dict[str, list[Path]]) -> None:
    header_file = cluttered["old"][-1]
    header = json.loads(header_file.read_text(encoding="utf-8"))
    header_file.write_text(json.dumps({**header, "scorer_version": "\x1b[31mred\n" + "x" * 200}), encoding="utf-8")
    code, out, _ = _prune("--dry-run")
    assert code == 0 and "\x1b" not in out and "\\x1b[31mred\\n" in out
    assert max(len(line) for line in out.splitlines()) < 200


def test_hostile_store_contents_neither_hang_nor_reach_outside_the_store(
    tmp_path: Path, store: Path, cluttered: dict[str, list[Path]]
) -> None:
    """A header that is a FIFO (never opened: it would block) is a damaged entry, removed; a run folder that
    is a link to a folder outside the store is neither followed nor removed, nor is what it points at."""
    fifo = store_entries.header_path(store, "3" * 32)
    os.mkfifo(fifo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the store's", encoding="utf-8")
    link = store / "turns" / "convention=exact" / f"run={'4' * 32}"
    link.symlink_to(outside, target_is_directory=True)
    code, out, err = _prune("--json")
    found = json.loads(out)
    assert (code, err) == (0, "")
    why = {item["key"]: item["why"] for item in found["damaged"]["keys"]}
    assert "is a FIFO, not a file" in why["3" * 32]
    assert not fifo.exists()
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "not the store's" and link.is_symlink()


def test_a_crafted_file_name_is_shown_as_literal_text(store: Path, cluttered: dict[str, list[Path]]) -> None:
    """A header whose file name carries a terminal escape and a line break: listed with both escaped, on one
    line, and removed like any damaged entry."""
    crafted = store_entries.header_path(store, "a\x1b[31mred\nline")
    crafted.write_text("not json", encoding="utf-8")
    code, out, _ = _prune()
    assert code == 0 and "\x1b" not in out
    assert "    a\\x1b[31mred\\nline: its header cannot be read (not JSON" in out
    assert not crafted.exists()


def test_two_prunes_at_once_report_no_failure_and_count_each_removal_once(
    store: Path, cluttered: dict[str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two people pressing the dashboard's Remove (or two `prune`s) at once: each takes a key's write lock in
    turn, so the second comes to keys the first removed after it listed them. It must neither count them again
    (as damaged: their header is gone) nor report their folders as not removable."""
    real = store_prune._try_locked
    ran: list[store_prune.Pruned] = []

    def first_another_prune(root: Path, key: str, *, dry_run: bool):  # type: ignore[no-untyped-def]
        if not ran:
            ran.append(store_prune.Pruned("", True))  # the other prune, whole, after this one listed the keys
            monkeypatch.setattr(store_prune, "_try_locked", real)
            ran[0] = store_prune.prune(root)
            monkeypatch.setattr(store_prune, "_try_locked", first_another_prune)
        return real(root, key, dry_run=dry_run)

    with store_entries.held(store, f"{'2' * 32}.lock"):  # `busy` stays busy for both
        monkeypatch.setattr(store_prune, "_try_locked", first_another_prune)
        second = store_prune.prune(store)
    first = ran[0]
    assert not first.failed and not second.failed, (first.failed, second.failed)
    assert sum(first.other_versions.values()) == 1 and len(first.damaged) == 1 and first.orphans == 1
    assert not second.other_versions and not second.damaged and not second.orphans, second
    assert second.freed_bytes == 0 and second.kept == first.kept == 1
    assert all(not p.exists() for p in cluttered["old"] + cluttered["orphan"] + cluttered["damaged"])
