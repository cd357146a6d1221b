"""`python -m analysis prune` on the parse cache (`analysis.formats.cache_prune`): entries of files edited,
moved or gone, of another version of the readers, or with an unreadable header are removed, as are staging
folders of writes cut short once an hour old; entries of files as they are today, a young staging folder,
files that are not the cache's and folders linked from elsewhere are kept; `--dry-run` removes nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from pathlib import Path

import pytest

from analysis import formats
from analysis.cli.main import main
from analysis.formats import cache, parse_file
from analysis.formats.cache_prune import STAGING_AGE_S, prune_cache


def _jsonl(path: Path, value: str = "east") -> Path:
    rows = [
        {
            "dialogue_id": f"D{d}",
            "turn_index": t,
            "gold": {"hotel": {"area": "east"}},
            "pred": {"hotel": {"area": value}},
        }
        for d in range(2)
        for t in range(2)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _bytes(folder: Path) -> int:
    return sum(os.path.getsize(os.path.join(base, name)) for base, _, names in os.walk(folder) for name in names)


def _prune(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["prune", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A parse cache holding one entry of each kind, and the names of what should stay and go."""
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    formats._MEMORY.clear()
    files = tmp_path / "files"
    files.mkdir()
    entries = {}
    for name in ("kept", "edited", "gone", "old", "damaged"):
        path = _jsonl(files / f"{name}.jsonl")
        before = set((tmp_path / "cache" / "parsed").glob("*")) if (tmp_path / "cache" / "parsed").exists() else set()
        parse_file(path)
        (entries[name],) = set((tmp_path / "cache" / "parsed").glob("*")) - before
    _jsonl(files / "edited.jsonl", value="west, a longer value")  # another size: another key
    (files / "gone.jsonl").unlink()
    header = entries["old"] / "header.json"  # as a version before headers named their file wrote it
    old = json.loads(header.read_text(encoding="utf-8"))
    header.write_text(json.dumps({k: v for k, v in old.items() if k not in ("source", "read_as")}), encoding="utf-8")
    (entries["damaged"] / "header.json").write_bytes(b"\x00not json")
    parsed = tmp_path / "cache" / "parsed"
    for name, age in (("stale-staging", 2 * STAGING_AGE_S), ("young-staging", 60.0)):
        folder = parsed / f".tmp-{name}"
        folder.mkdir()
        (folder / "gold.arrow").write_bytes(b"x" * 1000)
        moment = time.time() - age
        for path in (folder / "gold.arrow", folder):
            os.utime(path, (moment, moment))
        entries[name] = folder
    (parsed / "notes.txt").write_text("not the cache's", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "header.json").write_text("{}", encoding="utf-8")
    (parsed / "linked").symlink_to(outside, target_is_directory=True)
    entries["outside"] = outside
    entries["kept_file"] = files / "kept.jsonl"
    yield entries
    formats._MEMORY.clear()


def test_dry_run_counts_each_kind_and_removes_nothing(cached: dict[str, Path]) -> None:
    parsed = cached["kept"].parent
    before = sorted(p.name for p in parsed.iterdir())
    found = prune_cache(parsed, dry_run=True)
    assert (found.kept, found.stale, found.temporary) == (1, 4, 1)
    assert found.kept_bytes == _bytes(cached["kept"])
    assert found.stale_bytes == sum(_bytes(cached[n]) for n in ("edited", "gone", "old", "damaged"))
    assert found.temporary_bytes == 1000
    assert sorted(p.name for p in parsed.iterdir()) == before


def test_prune_removes_exactly_the_stale_entries_and_old_staging(cached: dict[str, Path]) -> None:
    parsed = cached["kept"].parent
    code, out, err = _prune()
    assert (code, err) == (0, ""), err
    left = sorted(p.name for p in parsed.iterdir())
    assert left == sorted([cached["kept"].name, cached["young-staging"].name, "notes.txt", "linked"])
    assert (cached["outside"] / "header.json").is_file()  # a linked folder is neither followed nor removed
    formats._MEMORY.clear()
    assert cache.load_cached(cached["kept_file"], None) is not None  # the kept entry still reads back
    assert "prune: parse cache" in out and "removed 4 entries of files edited, moved or gone" in out, out
    assert "removed 1 staging folder of writes cut short: 1.0 kB" in out, out
    assert prune_cache(parsed).freed_bytes == 0  # nothing left to remove


def test_json_names_the_parse_cache_beside_the_store(cached: dict[str, Path]) -> None:
    code, out, _ = _prune("--dry-run", "--json")
    assert code == 0
    found = json.loads(out)
    assert found["exists"] is False  # no score store yet: the parse cache is pruned all the same
    assert found["parse_cache"]["stale"]["entries"] == 4
    assert found["parse_cache"]["would_free_bytes"] == found["parse_cache"]["stale"]["bytes"] + 1000
    assert found["parse_cache"]["freed_bytes"] == 0


def test_an_entry_that_cannot_be_removed_is_one_line_and_exit_2(
    cached: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.replace

    def refuse(source: object, target: object) -> None:
        if ".tmp-pruned-" in str(target):
            raise PermissionError(13, "Permission denied")
        real(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", refuse)
    code, _, err = _prune()
    assert code == 2
    assert err.count("\n") == 1 and "could not be removed; the first:" in err and "Permission denied" in err, err


def test_a_hostile_header_is_stale_not_a_traceback(cached: dict[str, Path]) -> None:
    """A header nested too deeply for Python's parser (a RecursionError, not a ValueError) is an unreadable
    header like any other: prune removes the entry, and a read of its file is a miss."""
    (cached["kept"] / "header.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    formats._MEMORY.clear()
    assert cache.load_cached(cached["kept_file"], None) is None  # a miss (and discarded), never a traceback
    parse_file(cached["kept_file"])  # parsed again and stored whole
    (cached["kept"] / "header.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    found = prune_cache(cached["kept"].parent, dry_run=True)
    assert (found.kept, found.stale) == (0, 5)


def test_an_entry_read_by_a_relative_path_is_kept_wherever_prune_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header names the file by its absolute path: a file parsed as `run.jsonl` from its own folder is
    still found, and its entry kept, by a prune run from another folder."""
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    formats._MEMORY.clear()
    folder = tmp_path / "runs"
    folder.mkdir()
    _jsonl(folder / "run.jsonl")
    monkeypatch.chdir(folder)
    parse_file(Path("run.jsonl"))
    monkeypatch.chdir(tmp_path)
    found = prune_cache(tmp_path / "cache" / "parsed", dry_run=True)
    assert (found.kept, found.stale) == (1, 0)
    formats._MEMORY.clear()


def test_two_prunes_at_once_report_no_failure_and_count_each_removal_once(
    cached: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another prune runs whole after this one listed the folders (as two dashboard sessions pressing Remove
    at once): what it removed is neither counted again nor reported as not removable."""
    from analysis.formats import cache_prune

    parsed = cached["kept"].parent
    real = cache_prune._reachable
    other: list[cache_prune.CachePruned] = []

    def after_another_prune(entry: Path) -> bool:
        if not other:
            monkeypatch.setattr(cache_prune, "_reachable", real)
            other.append(prune_cache(parsed))
            monkeypatch.setattr(cache_prune, "_reachable", after_another_prune)
        return real(entry)

    monkeypatch.setattr(cache_prune, "_reachable", after_another_prune)
    second = prune_cache(parsed)
    (first,) = other
    assert not first.failed and not second.failed, (first.failed, second.failed)
    # Each removal counted once, by whichever prune made it (the old staging folder sorts first: the second
    # prune removed it before the other one ran): together, what one prune alone finds.
    assert (first.stale + second.stale, first.temporary + second.temporary) == (4, 1), (first, second)
    assert first.stale == 4 and second.stale == 0
    assert first.kept == second.kept == 1
    assert sorted(p.name for p in parsed.iterdir()) == sorted(
        [cached["kept"].name, cached["young-staging"].name, "notes.txt", "linked"]
    )
