"""The annotation export stands alone (issue 18 req 7): each row carries the item (run, dialogue, turn,
domain, slot), its gold value, predicted value and outcome under the convention in force, and the
reviewer, tags, comment and times; importing it back loses nothing: export -> import into an empty store
-> export again gives the same bytes, on SQLite and on PostgreSQL (the throw-away server of
`test_annotations_concurrency.py`, which skips with its reason when the binaries are absent)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from test_annotations_concurrency import pg_url, postgres_server  # noqa: F401 - fixtures

from analysis.errors import InputError
from analysis.review import (
    FILE_COLUMNS,
    AnnotationStore,
    Item,
    annotation_context,
    annotations_csv,
    annotations_json,
    error_items,
)
from analysis.scoring import Scored

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"


@pytest.fixture(scope="module")
def scored() -> list[Scored]:
    """Two demo runs scored under their declared convention (the convention in force by default)."""
    if not DEMO.exists():
        pytest.skip(f"the demo workspace {DEMO} is absent (make demo)")
    from analysis.scoring import score_run
    from analysis.workspace import load_entry, read_manifest

    return [score_run(load_entry(e)) for e in read_manifest(DEMO).entries[:2]]


def _fill(store: AnnotationStore, scored: list[Scored]) -> pd.DataFrame:
    """Annotations of every kind: slot errors of two runs (one edited twice), a slot the run got right,
    a whole turn of a run, a turn of no run, a comment with commas, quotes, a line break and a formula."""
    errors = pd.concat([error_items(s).head(3) for s in scored], ignore_index=True)
    for n, row in enumerate(errors.itertuples()):
        item = Item(row.dataset, row.dialogue_id, row.turn_index, domain=row.domain, slot=row.slot, run_id=row.run_id)
        store.annotate(item, ["wrong value"], "", reviewer="ana")
        store.annotate(item, ["wrong value", "gold annotation error"] if n % 2 else ["other"], f"n={n}", reviewer="bo")
    first = errors.iloc[0]
    again = Item(first.dataset, first.dialogue_id, int(first.turn_index), domain=first.domain, slot=first.slot,
                 run_id=first.run_id)  # fmt: skip
    store.annotate(again, ["missed update"], 'said "x", then\n=SUM(A1)', reviewer="ana")  # version 2
    store.annotate(again, ["coreference", "missed update"], "third write", reviewer="ana")  # version 3
    slots = scored[0].slots
    right = slots[slots["outcome"] == "correct"].iloc[0]
    meta = scored[0].metas[0]
    store.annotate(
        Item(meta.dataset, right.dialogue_id, int(right.turn_index), domain=right.domain, slot=right.slot,
             run_id=meta.run_id),
        ["gold annotation error"],
        "right, yet suspicious",
        reviewer="cy",
    )  # fmt: skip
    store.annotate(Item(meta.dataset, first.dialogue_id, int(first.turn_index), run_id=meta.run_id), ["other"],
                   "the whole turn", reviewer="cy")  # fmt: skip
    store.annotate(Item(meta.dataset, first.dialogue_id, int(first.turn_index)), ["other"], "any run", reviewer="cy")
    return errors


def _export(store: AnnotationStore, scored: list[Scored], kind: str) -> str:
    frame = store.annotations()
    context = annotation_context(frame, scored)
    return annotations_csv(frame, context) if kind == "csv" else annotations_json(frame, context)


def _round_trip(url_a: str, url_b: str, scored: list[Scored], tmp_path: Path) -> None:
    with AnnotationStore(url_a) as store:
        _fill(store, scored)
        assert store.annotations()["version"].max() == 3
        for kind in ("csv", "json"):
            first = _export(store, scored, kind)
            path = tmp_path / f"export.{kind}"
            path.write_text(first, encoding="utf-8", newline="")
            with AnnotationStore(url_b) as empty:
                assert len(empty.annotations()) == 0
                assert getattr(empty, f"import_{kind}")(path) == len(store.annotations())
                again = _export(empty, scored, kind)
                assert again == first  # nothing lost: the same file, byte for byte
                pd.testing.assert_frame_equal(empty.annotations(), store.annotations())
                # The store's own export writes the same bytes given the same context.
                written = tmp_path / f"again.{kind}"
                getattr(empty, f"export_{kind}")(written, context=lambda a: annotation_context(a, scored))
                assert written.read_text(encoding="utf-8") == first
                empty.engine.dispose()
            _empty_store(url_b)


def _empty_store(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM annotation_events"))
        conn.execute(text("DELETE FROM annotations"))
    engine.dispose()


@pytest.mark.slow
def test_round_trip_on_sqlite_loses_nothing(scored: list[Scored], tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'a.sqlite'}", f"sqlite:///{tmp_path / 'b.sqlite'}", scored, tmp_path)


@pytest.mark.slow
@pytest.mark.postgres
def test_round_trip_on_postgresql_loses_nothing(scored: list[Scored], pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    from sqlalchemy import create_engine, text

    other = pg_url + "_copy"
    engine = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{other.rsplit("/", 1)[1]}"'))
    engine.dispose()
    _round_trip(pg_url, other, scored, tmp_path)


def test_each_row_carries_item_values_outcome_and_review(scored: list[Scored]) -> None:
    store = AnnotationStore("sqlite://")
    errors = _fill(store, scored)
    rows = list(csv.DictReader(io.StringIO(_export(store, scored, "csv"))))
    assert list(rows[0]) == FILE_COLUMNS
    for column in ("run_id", "dialogue_id", "turn_index", "domain", "slot", "convention", "gold", "predicted",
                   "outcome", "reviewer", "tags", "comment", "created_at", "updated_at"):  # fmt: skip
        assert column in FILE_COLUMNS
    by_key = {(r["item_key"], r["reviewer"]): r for r in rows}
    conventions = {s.metas[0].run_id: s.convention.name for s in scored}
    for error in errors.itertuples():
        row = by_key[(error.item_key, "bo")]
        assert row["convention"] == conventions[error.run_id]
        assert row["outcome"] == error.outcome
        assert row["gold"] == ("" if pd.isna(error.gold_display) else error.gold_display)
        assert row["predicted"] == ("" if pd.isna(error.pred_display) else error.pred_display)
        assert (row["run_id"], row["dialogue_id"], row["turn_index"]) == (
            error.run_id,
            error.dialogue_id,
            str(error.turn_index),
        )
    cy = [r for r in rows if r["reviewer"] == "cy"]
    assert [r["comment"] for r in cy] == ["right, yet suspicious", "the whole turn", "any run"]
    assert cy[0]["outcome"] == "correct" and cy[0]["gold"] == cy[0]["predicted"] != ""
    whole_turn = cy[1]
    first = errors.iloc[0]
    turn = scored[0].turns
    joint = turn[(turn["dialogue_id"] == first.dialogue_id) & (turn["turn_index"] == first.turn_index)]
    assert whole_turn["outcome"] == ("turn_correct" if bool(joint["joint_correct"].iloc[0]) else "turn_wrong")
    assert f"{first.domain}-{first.slot}=" in whole_turn["gold"] + whole_turn["predicted"]
    assert (cy[2]["convention"], cy[2]["outcome"], cy[2]["gold"]) == ("", "", "")  # an item of no run
    # JSON: the same values, null where the CSV is empty.
    payload = json.loads(_export(store, scored, "json"))["annotations"]
    assert [r["outcome"] for r in payload] == [r["outcome"] or None for r in rows]
    assert payload[-1]["gold"] is None
    # Without runs the columns are there, empty.
    bare = list(csv.DictReader(io.StringIO(annotations_csv(store.annotations()))))
    assert list(bare[0]) == FILE_COLUMNS and {r["outcome"] for r in bare} == {""}
    store.close()


def test_import_keeps_versions_of_new_rows_and_reads_old_exports(tmp_path: Path) -> None:
    item = Item("ds", "d1", 2, domain="hotel", slot="area", run_id="r")
    base = {"item_key": item.key, **item.components(), "reviewer": "ana", "tags": ["other"], "comment": "c"}
    old = [{**base, "updated_at": "2026-01-01T10:00:00Z"}]  # an export from before the version column
    with AnnotationStore("sqlite://") as store:
        assert store.import_json(tmp_path / "old.json", data=json.dumps(old).encode()) == 1
        assert store.annotations()["version"].tolist() == [1]
        newer = [{**base, "updated_at": "2026-01-02T10:00:00Z", "version": 7, "outcome": "made up"}]
        assert store.import_json(tmp_path / "new.json", data=json.dumps(newer).encode()) == 1
        assert store.annotations()["version"].tolist() == [2]  # a change of a stored row: one more write
    with AnnotationStore("sqlite://") as empty:
        assert empty.import_json(tmp_path / "new.json", data=json.dumps(newer).encode()) == 1
        assert empty.annotations()["version"].tolist() == [7]  # new to this store: the file's version
        bad = [{**base, "updated_at": "2026-01-03T10:00:00Z", "version": "two"}]
        with pytest.raises(InputError, match=r"bad\.json .*row 1: version 'two' is not a whole number"):
            empty.import_json(tmp_path / "bad.json", data=json.dumps(bad).encode())


def test_the_pages_download_is_the_stores_export_with_context(scored: list[Scored]) -> None:
    from ui.review import export_bytes

    store = AnnotationStore("sqlite://")
    _fill(store, scored)
    frame = store.annotations()
    for kind in ("csv", "json"):
        assert export_bytes(frame, kind, scored).decode("utf-8") == _export(store, scored, kind)
    assert b"wrong_value" in export_bytes(frame, "csv", scored)
    assert b"wrong_value" not in export_bytes(frame, "csv")  # no runs: the context columns are empty
    store.close()
