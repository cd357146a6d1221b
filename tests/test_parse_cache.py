"""The parse caches (Parquet on disk, a few parsed files in memory) and the aligner's fast path.

A cache may only ever make loading faster: an edited file, a shared gold file mutated by one run, or
prediction ids that need re-keying must give exactly what a fresh, uncached parse gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import formats
from analysis.formats import cache, more, parse_file
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.scoring import score_run
from analysis.suite import headline_metrics
from tests.conftest import realdata_path


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _rows(value: str = "east", prefix: str = "MUL") -> list[dict]:
    rows = []
    for d in range(3):
        for t in range(3):
            gold = {"hotel": {"area": "east", "stars": str(t + 1)}}
            pred = {"hotel": {"area": value if d == 0 else "east", "stars": str(t + 1)}}
            rows.append({"dialogue_id": f"{prefix}{d:04d}", "turn_index": t, "gold": gold, "pred": pred})
    return rows


def _frames_equal(a: formats.ParsedFile, b: formats.ParsedFile) -> None:
    for name in ("turns", "gold", "pred"):
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            pd.testing.assert_frame_equal(left.reset_index(drop=True), right.reset_index(drop=True))


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("DST_CACHE_DIR", str(root))
    formats._MEMORY.clear()
    yield root
    formats._MEMORY.clear()


def test_cached_parse_equals_a_fresh_parse(tmp_path: Path, cache_root: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    fresh = parse_file(path, use_cache=False)
    first = parse_file(path)  # parses and stores on disk and in memory
    assert any(cache_root.iterdir()), "nothing was written to the disk cache"
    from_memory = parse_file(path)
    formats._MEMORY.clear()
    from_disk = parse_file(path)
    for parsed in (first, from_memory, from_disk):
        _frames_equal(parsed, fresh)
        assert parsed.fmt == fresh.fmt


def _entry(cache_root: Path) -> Path:
    (found,) = [p for p in (cache_root / "parsed").iterdir() if not p.name.startswith(".")]
    return found


@pytest.mark.parametrize("table", ["gold", "pred"])
def test_damaged_cached_bytes_are_a_miss_never_another_table(tmp_path: Path, cache_root: Path, table: str) -> None:
    """Neither Arrow's zstd frames nor Parquet's pages check their bytes: changed bytes inside a cached table
    came back as another table, without an error. Here a value a small table keeps uncompressed, `east`,
    is changed to `west` on disk (read unchecked, the table would say west). The header's SHA-256 of each
    file is checked: the damaged entry is a miss, the file is parsed again and stored whole again."""
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    fresh = parse_file(path, use_cache=False)
    parse_file(path)
    target = _entry(cache_root) / f"{table}.arrow"
    data = target.read_bytes()
    assert b"east" in data, "the test's premise: the small table's values are stored uncompressed"
    target.write_bytes(data.replace(b"east", b"west"))
    formats._MEMORY.clear()
    assert cache.load_cached(path, None) is None
    formats._MEMORY.clear()
    _frames_equal(parse_file(path), fresh)
    again = cache.load_cached(path, None)  # stored whole again in place of the damaged one
    assert again is not None
    _frames_equal(again, fresh)
    assert [p.name for p in (cache_root / "parsed").iterdir()] == [_entry(cache_root).name]  # nothing left aside


def test_a_damaged_delta_gold_side_is_a_miss(tmp_path: Path, cache_root: Path) -> None:
    """The delta check's gold side kept with a gold-bearing file's tables is checked as they are: one byte
    changed, the entry is a miss, the file parsed and stored whole again."""
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    fresh = parse_file(path, use_cache=False)
    parse_file(path)
    target = _entry(cache_root) / "delta_gold.arrow"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    formats._MEMORY.clear()
    assert cache.load_cached(path, None) is None
    formats._MEMORY.clear()
    _frames_equal(parse_file(path), fresh)
    again = cache.load_cached(path, None)
    assert again is not None
    _carried_equal(again.derived["delta_gold"], more._gold_carried(fresh.turns, fresh.gold))


def test_a_run_on_a_cached_gold_file_computes_no_gold_side(
    tmp_path: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that reads the gold file from the disk cache takes the delta check's gold side from it (never
    computes it), and the check says what it says on a fresh parse: here the predictions read as deltas."""
    gold_rows = [
        {"dialogue_id": f"MUL{d:04d}", "turn_index": t, "gold": {"hotel": {"area": "east", "stars": str(t + 1)}}}
        for d in range(12)
        for t in range(3)
    ]
    gold = _write_jsonl(tmp_path / "gold.jsonl", gold_rows)
    # Each turn predicts only what changed (the stars), as a delta file does; the area is dropped after turn 0.
    deltas = [
        {"dialogue_id": r["dialogue_id"], "turn_index": r["turn_index"], "pred": r["gold"] if r["turn_index"] == 0
         else {"hotel": {"stars": r["gold"]["hotel"]["stars"]}}}
        for r in gold_rows
    ]  # fmt: skip
    pred = _write_jsonl(tmp_path / "pred.jsonl", deltas)
    expected = load_run(pred, gold).alignment.notes.get(more.DELTA_NOTE)
    assert expected, "the test's premise: the check sees deltas"
    formats._MEMORY.clear()

    def computed(*args: object) -> None:
        raise AssertionError("the gold side was computed again")

    monkeypatch.setattr(more, "_gold_carried", computed)
    assert load_run(pred, gold).alignment.notes.get(more.DELTA_NOTE) == expected


def test_an_entry_without_its_header_is_replaced(tmp_path: Path, cache_root: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    parse_file(path)
    (_entry(cache_root) / "header.json").unlink()
    formats._MEMORY.clear()
    parse_file(path)
    assert cache.load_cached(path, None) is not None


def test_a_write_that_fails_leaves_nothing_behind(
    tmp_path: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    parsed = parse_file(path, use_cache=False)

    def full_disk(frame: pd.DataFrame, target: Path) -> str:
        target.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "_write", full_disk)
    cache.store(path, None, parsed)
    assert list((cache_root / "parsed").iterdir()) == []


def test_an_edited_file_is_read_again_not_served_stale(tmp_path: Path, cache_root: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows("east"))
    before = parse_file(path)
    _write_jsonl(path, _rows("west") + _rows("north", prefix="PMUL"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    after = parse_file(path)
    assert after.pred is not None and before.pred is not None
    assert "west" in set(after.pred["value"]) and "west" not in set(before.pred["value"])
    assert after.turns["dialogue_id"].nunique() == 6


def test_a_run_changing_its_tables_cannot_change_the_shared_cached_file(tmp_path: Path, cache_root: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    first = parse_file(path)
    first.turns["dialogue_id"] = "overwritten"
    assert first.gold is not None
    first.gold.loc[:, "value"] = "overwritten"
    second = parse_file(path)
    assert second.gold is not None
    assert "overwritten" not in set(second.turns["dialogue_id"])
    assert "overwritten" not in set(second.gold["value"])


def test_memory_cache_is_bounded(tmp_path: Path, cache_root: Path) -> None:
    for i in range(formats.MEMORY_ENTRIES + 3):
        parse_file(_write_jsonl(tmp_path / f"run{i}.jsonl", _rows()))
    assert len(formats._MEMORY) == formats.MEMORY_ENTRIES


def test_disk_cache_off_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DST_CACHE_DIR", "")
    assert cache.cache_dir() is None
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    _frames_equal(parse_file(path), parse_file(path, use_cache=False))


def test_same_ids_fast_path_scores_like_re_keyed_ids(tmp_path: Path, cache_root: Path) -> None:
    """Predictions with the gold's own ids skip re-keying; ids differing in case and `.json` are re-keyed.
    Both must give the same turns, states and metrics."""
    gold_rows = _rows()
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{**r, "pred": r["gold"]} for r in gold_rows])
    same = _write_jsonl(tmp_path / "same.jsonl", _rows("west"))
    renamed = _write_jsonl(
        tmp_path / "renamed.jsonl", [{**r, "dialogue_id": r["dialogue_id"].lower() + ".json"} for r in _rows("west")]
    )
    fast = load_run(same, gold, pred_format="jsonl", gold_format="jsonl", meta=RunInfo("fast"))
    slow = load_run(renamed, gold, pred_format="jsonl", gold_format="jsonl", meta=RunInfo("slow"))
    key = ["dialogue_id", "turn_index", "domain", "slot"]
    pd.testing.assert_frame_equal(
        fast.pred.sort_values(key).reset_index(drop=True), slow.pred.sort_values(key).reset_index(drop=True)
    )
    assert not fast.turns["pred_missing"].any() and not slow.turns["pred_missing"].any()
    fast_metrics = headline_metrics(score_run(fast))
    slow_metrics = headline_metrics(score_run(slow))
    assert fast_metrics["jga"] == pytest.approx(6 / 9)
    assert fast_metrics == pytest.approx(slow_metrics, nan_ok=True, rel=0, abs=0)  # n/a metrics: NaN both


def test_missing_predicted_turns_are_marked_on_the_fast_path(tmp_path: Path, cache_root: Path) -> None:
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{**r, "pred": r["gold"]} for r in _rows()])
    partial = _write_jsonl(tmp_path / "partial.jsonl", [r for r in _rows() if r["turn_index"] != 2])
    run = load_run(partial, gold, pred_format="jsonl", gold_format="jsonl")
    assert int(run.turns["pred_missing"].sum()) == 3
    assert run.alignment.missing_turns == 3
    assert headline_metrics(score_run(run))["jga"] == pytest.approx(6 / 9)  # a missing turn scores as empty


def test_identical_turns_in_another_order_pair_like_the_general_path(tmp_path: Path, cache_root: Path) -> None:
    """Same (dialogue, turn) pairs listed in another order take the no-pairing path; the run must equal the
    one loaded through the general pairing (forced by one extra predicted turn that pairs with nothing)."""
    gold = _write_jsonl(tmp_path / "gold.jsonl", [{**r, "pred": r["gold"]} for r in _rows()])
    shuffled = list(reversed(_rows("west")))
    fast = load_run(_write_jsonl(tmp_path / "fast.jsonl", shuffled), gold, pred_format="jsonl", gold_format="jsonl")
    extra = {**shuffled[0], "dialogue_id": "EXTRA0001", "turn_index": 0}
    slow = load_run(
        _write_jsonl(tmp_path / "slow.jsonl", [*shuffled, extra]), gold, pred_format="jsonl", gold_format="jsonl"
    )
    assert slow.alignment.extra_turns == 1 and fast.alignment.extra_turns == 0
    assert fast.alignment.missing_turns == 0 and fast.alignment.gold_dialogues == 3
    key = ["dialogue_id", "turn_index", "domain", "slot"]
    pd.testing.assert_frame_equal(
        fast.pred.sort_values(key).reset_index(drop=True), slow.pred.sort_values(key).reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(fast.turns, slow.turns)
    assert headline_metrics(score_run(fast)) == pytest.approx(
        headline_metrics(score_run(slow)), nan_ok=True, rel=0, abs=0
    )


def test_store_cache_off_reads_the_cache_but_adds_nothing(tmp_path: Path, cache_root: Path) -> None:
    """Batch scoring into the score store parses each prediction file once and keeps its scored tables,
    so it does not add the parse to the cache (`store_cache=False`); a parse already cached is still read."""
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    fresh = parse_file(path, store_cache=False)
    assert cache.load_cached(path, None) is None and not formats._MEMORY
    cached = parse_file(path)  # the usual call caches it
    assert cache.load_cached(path, None) is not None
    formats._MEMORY.clear()
    _frames_equal(parse_file(path, store_cache=False), cached)
    _frames_equal(fresh, cached)


def test_batch_scoring_caches_the_gold_file_not_each_prediction(tmp_path: Path, cache_root: Path) -> None:
    from analysis.store import runs as store_runs
    from analysis.workspace import RunEntry

    gold = _write_jsonl(
        tmp_path / "gold.jsonl", [{k: r[k] for k in ("dialogue_id", "turn_index", "gold")} for r in _rows()]
    )
    items = []
    for i, value in enumerate(("east", "west")):
        rows = [{k: r[k] for k in ("dialogue_id", "turn_index", "pred")} for r in _rows(value)]
        pred = _write_jsonl(tmp_path / f"pred{i}.jsonl", rows)
        items.append(RunEntry(RunInfo(run_id=f"r{i}"), pred, gold, None))
    stored = store_runs.ensure_all(items, None, workers=1)
    assert all(entry is not None for entry in stored)
    assert cache.load_cached(gold, None) is not None
    assert all(cache.load_cached(item.pred, None) is None for item in items)


REAL_FILES = (
    ("mwzeval_outputs", "augpt.json"),  # mwzeval predictions
    ("multiwoz21", "test.json.zip"),  # MultiWOZ 2.1 gold: utterances, listings
    ("wild", "gptdst_gpt35_ours_running_log.json"),  # raw LLM text: the unparseable columns
    ("wild", "checkdst_PI_example.checkdst_prediction.jsonl"),
    ("scorer_oracles", "convlab3_augpt_predictions.json.gz"),  # ConvLab-3 samples: pred_missing marks
)


@pytest.mark.realdata
@pytest.mark.parametrize("parts", REAL_FILES, ids=["/".join(p) for p in REAL_FILES])
def test_real_files_come_back_from_the_disk_cache_exactly(parts: tuple[str, str], cache_root: Path) -> None:
    """Each table of a real file's parse, written to the disk cache and read back in a fresh read (the memory
    cache cleared), equals the fresh parse: values, column order and dtypes (Arrow IPC carries pandas'
    metadata as Parquet did), and so do the header's fields."""
    path = realdata_path(*parts)
    fresh = parse_file(path, use_cache=False)
    cache.store(path, None, fresh)
    back = cache.load_cached(path, None)
    assert back is not None, "the entry just written was not read back"
    _frames_equal(fresh, back)
    for name in ("turns", "gold", "pred"):
        frame = getattr(fresh, name)
        if frame is not None:
            assert list(getattr(back, name).dtypes) == list(frame.dtypes), name
    assert (back.fmt, back.listed_slots, back.notes, back.listings) == (
        fresh.fmt,
        fresh.listed_slots,
        fresh.notes,
        fresh.listings,
    )
    # A file with gold keeps the delta check's gold side too, read back equal to a fresh computation.
    carries_gold = fresh.gold is not None and not fresh.gold.empty and not fresh.turns.empty
    assert set(back.derived) == ({"delta_gold"} if carries_gold else set())
    if carries_gold:
        _carried_equal(back.derived["delta_gold"], more._gold_carried(fresh.turns, fresh.gold))
    assert sorted(p.name for p in next(cache_root.rglob("header.json")).parent.iterdir()) == sorted(
        [
            "header.json",
            *[f"{n}.arrow" for n in ("turns", "gold", "pred") if getattr(fresh, n) is not None],
            *(["delta_gold.arrow"] if carries_gold else []),
        ]
    )


def _carried_equal(found: object, expected: object) -> None:
    for name in more._CARRIED_FIELDS:
        a, b = getattr(found, name), getattr(expected, name)
        if isinstance(b, pd.Index):
            assert a.equals(b) and a.dtype == b.dtype, name
        elif isinstance(b, np.ndarray):
            assert np.array_equal(a, b) and a.dtype == b.dtype, name
        else:
            assert a == b, name


def test_an_entry_unreadable_for_now_is_a_miss_and_kept(
    tmp_path: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError while reading (permissions, too many open files) says nothing of the entry's bytes: a miss,
    and the entry stays for the next read; only damaged bytes discard it."""
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    fresh = parse_file(path, use_cache=False)
    parse_file(path)
    entry = _entry(cache_root)

    def unreadable(path: Path, limit: int) -> bytes:
        raise OSError(24, "Too many open files")

    with monkeypatch.context() as patched:
        patched.setattr(cache, "read_regular", unreadable)
        assert cache.load_cached(path, None) is None
    assert entry.is_dir()
    again = cache.load_cached(path, None)
    assert again is not None
    _frames_equal(again, fresh)


@pytest.mark.parametrize("name", ["header.json", "gold.arrow"])
def test_a_special_file_in_an_entry_is_a_miss_never_a_hang(tmp_path: Path, cache_root: Path, name: str) -> None:
    """A FIFO in place of a cached file used to hang every parse of its file (the read waited for a writer).
    Now the cache's files are read as the score store reads its own: a special file is never opened for
    reading, the entry is a miss, discarded, and the file parsed and stored again. (In a child process
    with a deadline, so that a regression fails instead of hanging the suite.)"""
    import subprocess
    import sys

    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    parse_file(path)
    target = _entry(cache_root) / name
    target.unlink()
    os.mkfifo(target)
    code = (
        "from pathlib import Path\n"
        "from analysis.formats import cache, parse_file\n"
        f"path = Path({str(path)!r})\n"
        "assert cache.load_cached(path, None) is None\n"
        "parse_file(path)\n"
        "assert cache.load_cached(path, None) is not None\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_file_where_an_entry_folder_should_be_is_replaced_and_nothing_left(tmp_path: Path, cache_root: Path) -> None:
    path = _write_jsonl(tmp_path / "run.jsonl", _rows())
    parse_file(path)
    entry = _entry(cache_root)
    for part in entry.iterdir():
        part.unlink()
    entry.rmdir()
    entry.write_text("x", encoding="utf-8")
    formats._MEMORY.clear()
    parse_file(path)
    assert [p.name for p in (cache_root / "parsed").iterdir()] == [entry.name]
    assert entry.is_dir() and cache.load_cached(path, None) is not None
