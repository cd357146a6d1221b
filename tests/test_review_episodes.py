"""Review items are error episodes (issue 18 req 4) and the Review page is live (req 6).

* The episode definition on hand-made turns (carry-over, a gold change, a predicted change, a correct turn,
  a turn the run did not score, absent values) and on the real demo runs against a plain per-turn reading
  of the definition; episodes partition the error turns.
* One annotation per episode, keyed by its first turn, with its span: it covers every turn of the span;
  an old store (schema 2) upgrades and its rows read as one-turn episodes; the export round-trips with the
  span on SQLite and PostgreSQL; an older export without span columns imports as one-turn episodes.
* The confusion counts (episodes or turns) equal the items their cell lists.
* The change marker moves with every committed write (any store object, i.e. any process) and with
  nothing else; `ui.review.current_annotations` reads the annotations again only when it moved.
* The Review page (AppTest, demo workspace, temporary SQLite store) lists episodes with turn counts, and
  its tag form stores the episode's span.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import create_engine, insert, inspect, text
from test_annotations_concurrency import pg_url, postgres_server  # noqa: F401 - fixtures

import analysis.review.store as store_module
from analysis.errors import InputError
from analysis.review import (
    FILE_COLUMNS,
    AnnotationStore,
    Item,
    annotation_context,
    annotations_csv,
    annotations_json,
    confusion_counts,
    episode_turns,
    error_episodes,
    error_items,
    review_progress,
    review_queue,
)
from analysis.scoring import Scored

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"
demo = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
WV = "wrong value"


def _turns(rows: list[tuple]) -> pd.DataFrame:
    """Error turns: (run, dialogue, tid, turn, slot, gold, predicted, outcome)."""
    frame = pd.DataFrame(
        rows, columns=["run_id", "dialogue_id", "tid", "turn_index", "slot", "gold_display", "pred_display", "outcome"]
    )
    frame.insert(1, "dataset", "ds")
    frame.insert(4, "domain", "hotel")
    frame["item_key"] = [f"k{i}" for i in range(len(frame))]
    return frame


HAND = _turns(
    [
        ("r", "d1", 0, 0, "area", "north", "south", "wrong_value"),  # episode A: turns 0-2
        ("r", "d1", 1, 1, "area", "north", "south", "wrong_value"),
        ("r", "d1", 2, 2, "area", "north", "south", "wrong_value"),
        ("r", "d1", 3, 3, "area", "east", "south", "wrong_value"),  # gold changed, prediction carried: new (B)
        ("r", "d1", 5, 5, "area", "east", "south", "wrong_value"),  # turn 4 correct in between: new (C)
        ("r", "d1", 6, 6, "area", "east", "west", "wrong_value"),  # predicted value changed: new (D)
        ("r", "d1", 1, 1, "name", None, "acorn", "spurious"),  # another slot, absent gold: E, turns 1-2
        ("r", "d1", 2, 2, "name", None, "acorn", "spurious"),
        ("r", "d2", 7, 0, "area", "north", None, "missed"),  # another dialogue: F; tid 8 unscored turn 2
        ("r", "d2", 8, 2, "area", "north", None, "missed"),  # tid consecutive (turn 1 not scored): still F
        ("s", "d1", 1, 1, "area", "north", "south", "wrong_value"),  # another run: G
    ]
)


def test_episode_definition_on_hand_made_turns() -> None:
    episodes = error_episodes(HAND)
    got = episodes[["run_id", "dialogue_id", "slot", "turn_index", "last_turn", "n_turns"]].values.tolist()
    assert got == [
        ["r", "d1", "area", 0, 2, 3],
        ["r", "d1", "area", 3, 3, 1],
        ["r", "d1", "area", 5, 5, 1],
        ["r", "d1", "area", 6, 6, 1],
        ["r", "d1", "name", 1, 2, 2],
        ["r", "d2", "area", 0, 2, 2],
        ["s", "d1", "area", 1, 1, 1],
    ]
    # keyed by the first turn: its item key, gold, predicted and outcome
    assert episodes["item_key"].tolist() == ["k0", "k3", "k4", "k5", "k6", "k8", "k10"]
    assert episodes["n_turns"].sum() == len(HAND)
    turns = episode_turns(HAND)
    assert turns["episode_key"].tolist() == ["k0", "k0", "k0", "k3", "k4", "k5", "k6", "k6", "k8", "k8", "k10"]
    # without tid, consecutive means turn_index + 1: d2's turns 0 and 2 are two episodes
    assert len(error_episodes(HAND.drop(columns="tid"))) == 8
    # the row order does not matter
    shuffled = HAND.sample(frac=1, random_state=3).reset_index(drop=True)
    assert sorted(error_episodes(shuffled)["item_key"]) == sorted(episodes["item_key"])
    assert error_episodes(HAND.head(0)).empty


def _reference(errors: pd.DataFrame) -> list[tuple]:
    """The definition read literally, turn by turn: (first key, last turn, n turns) of each episode."""
    out: list[tuple] = []
    ordered = errors.assign(row=np.arange(len(errors))).sort_values(
        ["run_id", "dialogue_id", "domain", "slot", "tid"], kind="stable"
    )
    previous = None
    for row in ordered.itertuples():
        same_error = (row.gold_display, row.pred_display, row.outcome)
        key = (row.run_id, row.dialogue_id, row.domain, row.slot)
        if previous is not None and previous[0] == key and previous[1] == row.tid - 1 and previous[2] == same_error:
            first, _, n = out[-1]
            out[-1] = (first, row.turn_index, n + 1)
        else:
            out.append((row.item_key, row.turn_index, 1))
        previous = (key, row.tid, same_error)
    return out


@pytest.fixture(scope="module")
def scored() -> list[Scored]:
    if not DEMO.exists():
        pytest.skip(f"the demo workspace {DEMO} is absent (make demo)")
    from analysis.scoring import score_run
    from analysis.workspace import load_entry, read_manifest

    return [score_run(load_entry(e)) for e in read_manifest(DEMO).entries]


@pytest.fixture(scope="module")
def demo_errors(scored: list[Scored]) -> pd.DataFrame:
    return pd.concat([error_items(s) for s in scored], ignore_index=True)


def test_episodes_of_the_demo_equal_the_literal_definition(demo_errors: pd.DataFrame) -> None:
    episodes = error_episodes(demo_errors)
    expected = _reference(demo_errors.fillna({"gold_display": "\x00", "pred_display": "\x00"}))
    got = list(zip(episodes["item_key"], episodes["last_turn"], episodes["n_turns"], strict=True))
    assert sorted(got) == sorted(expected)
    assert episodes["n_turns"].sum() == len(demo_errors)  # a partition of the error turns
    assert len(episodes) < len(demo_errors)  # the demo's errors do carry over
    assert (episodes["n_turns"] > 1).sum() > 100
    # every turn of an episode has its gold, predicted value and outcome
    turns = episode_turns(demo_errors)
    for column in ("gold_display", "pred_display", "outcome"):
        assert (turns.groupby("episode")[column].nunique(dropna=False) == 1).all()


def test_an_episode_annotation_covers_its_span(demo_errors: pd.DataFrame) -> None:
    episodes = error_episodes(demo_errors)
    long = episodes[episodes["n_turns"] >= 3].iloc[0]
    item = Item(long.dataset, long.dialogue_id, int(long.turn_index), domain=long.domain, slot=long.slot,
                run_id=long.run_id, last_turn=int(long.last_turn), n_turns=int(long.n_turns))  # fmt: skip
    with AnnotationStore("sqlite://") as store:
        store.annotate(item, [WV], "carried over", reviewer="ana")
        stored = store.annotations()
        assert stored[["turn_index", "last_turn", "n_turns"]].values.tolist() == [
            [long.turn_index, long.last_turn, long.n_turns]
        ]
        assert stored["item_key"].tolist() == [long.item_key]  # keyed by the first turn
        # every turn of the span counts as reviewed; the episode is one reviewed item
        assert int(review_progress(demo_errors, stored)["n_reviewed"].iloc[0]) == long.n_turns
        assert int(review_progress(episodes, stored)["n_reviewed"].iloc[0]) == 1
        reviewed = review_queue(episodes, stored, status="reviewed")
        assert reviewed["item_key"].tolist() == [long.item_key] and reviewed["tags"].tolist() == [(WV,)]
        # a one-turn annotation on a later turn of the span (tagged before episodes) also covers the episode
        later = Item(long.dataset, long.dialogue_id, int(long.turn_index) + 1, domain=long.domain, slot=long.slot,
                     run_id=long.run_id)  # fmt: skip
        store.annotate(later, ["other"], reviewer="bo")
        reviewed = review_queue(episodes, store.annotations(), status="reviewed")
        assert reviewed["reviewers"].tolist() == [("ana", "bo")]
        # ... but not the turn before the span, nor the same turns of another slot
        before = review_queue(demo_errors, store.annotations(), status="reviewed")
        assert len(before) == long.n_turns
        # re-tagging with another span replaces it, like the tags
        store.annotate(Item(**{**item.components(), "last_turn": int(long.turn_index)}), [WV], reviewer="ana")
        assert store.annotations(reviewer="ana")[["last_turn", "n_turns"]].values.tolist() == [[long.turn_index, 1]]
        # tagging by key keeps the stored span
        store.annotate(long.item_key, ["other"], reviewer="cy")
        assert store.annotations(reviewer="cy")["n_turns"].tolist() == [1]


def test_spans_are_checked() -> None:
    with pytest.raises(ValueError, match="last_turn 2 must lie from the first turn"):
        Item("ds", "d", 3, last_turn=2)
    with pytest.raises(ValueError, match="n_turns 5 must lie from 1 to the turns from 3 to 6"):
        Item("ds", "d", 3, last_turn=6, n_turns=5)
    assert Item("ds", "d", 3, last_turn=6).span() == {"last_turn": 6, "n_turns": 4}
    assert Item("ds", "d", 3).span() == {"last_turn": 3, "n_turns": 1}
    assert Item("ds", "d", 3, last_turn=6).key == Item("ds", "d", 3).key  # the span is not in the key


def test_a_schema_2_store_upgrades_and_reads_one_turn_episodes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v2.sqlite'}"
    engine = create_engine(url)
    item = Item("ds", "d1", 4, domain="hotel", slot="area", run_id="r")
    with engine.begin() as conn:
        store_module.migrations_table.create(conn)
        for version, migration in enumerate(store_module.MIGRATIONS[:2], start=1):
            migration(conn)
            conn.execute(insert(store_module.migrations_table).values(version=version, applied_at="2026-01-01"))
        conn.execute(
            text(
                "INSERT INTO annotations (item_key, reviewer, dataset, dialogue_id, turn_index, domain, slot, run_id,"
                " tags, comment, created_at, updated_at, version) VALUES (:k, 'ana', 'ds', 'd1', 4, 'hotel', 'area',"
                " 'r', '[\"other\"]', 'old', :t, :t, 1)"
            ),
            {"k": item.key, "t": "2026-01-01T00:00:00.000000Z"},
        )
    assert "last_turn" not in {c["name"] for c in inspect(engine).get_columns("annotations")}
    engine.dispose()
    with AnnotationStore(url) as upgraded:
        assert upgraded.schema_version() == 3
        rows = upgraded.annotations()
        assert rows[["turn_index", "last_turn", "n_turns", "comment"]].values.tolist() == [[4, 4, 1, "old"]]
        # a row an older client writes after the upgrade (no span): read as one turn as well
        with upgraded.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO annotations (item_key, reviewer, dataset, dialogue_id, turn_index, tags, comment,"
                    " created_at, updated_at) VALUES ('v1|ds|d2|7|||', 'bo', 'ds', 'd2', 7, '[\"other\"]', '', :t, :t)"
                ),
                {"t": "2026-01-02T00:00:00.000000Z"},
            )
        rows = upgraded.annotations()
        assert rows[["turn_index", "last_turn", "n_turns"]].values.tolist() == [[4, 4, 1], [7, 7, 1]]


# ------------------------------------------------------------------------------------- export round trip


def _fill(store: AnnotationStore, demo_errors: pd.DataFrame) -> None:
    episodes = error_episodes(demo_errors)
    picked = pd.concat([episodes[episodes["n_turns"] > 1].head(3), episodes[episodes["n_turns"] == 1].head(2)])
    for n, row in enumerate(picked.itertuples()):
        item = Item(row.dataset, row.dialogue_id, row.turn_index, domain=row.domain, slot=row.slot, run_id=row.run_id,
                    last_turn=row.last_turn, n_turns=row.n_turns)  # fmt: skip
        store.annotate(item, [WV], f"episode {n}", reviewer="ana")
        store.annotate(item, ["other", WV] if n % 2 else ["missed update"], 'a "quote", a\nline', reviewer="bo")
    store.annotate(Item("ds", "d9", 2), ["other"], "a turn of no run", reviewer="cy")


def _export(store: AnnotationStore, scored: list[Scored], kind: str) -> str:
    frame = store.annotations()
    context = annotation_context(frame, scored)
    return annotations_csv(frame, context) if kind == "csv" else annotations_json(frame, context)


def _round_trip(url_a: str, url_b: str, scored: list[Scored], demo_errors: pd.DataFrame, tmp_path: Path) -> None:
    with AnnotationStore(url_a) as store:
        _fill(store, demo_errors)
        frame = store.annotations()
        assert (frame["n_turns"] > 1).sum() == 6
        for kind in ("csv", "json"):
            first = _export(store, scored, kind)
            path = tmp_path / f"episodes.{kind}"
            path.write_text(first, encoding="utf-8", newline="")
            with AnnotationStore(url_b) as other:
                other_engine = other.engine
                with other_engine.begin() as conn:
                    conn.execute(text("DELETE FROM annotation_events"))
                    conn.execute(text("DELETE FROM annotations"))
                assert getattr(other, f"import_{kind}")(path) == len(frame)
                assert _export(other, scored, kind) == first  # byte for byte, the spans included
                pd.testing.assert_frame_equal(other.annotations(), frame)
    if kind == "json":
        rows = json.loads(first)["annotations"]
        spans = {(r["reviewer"], r["turn_index"], r["last_turn"], r["n_turns"]) for r in rows}
        assert all(r[2] - r[1] + 1 == r[3] for r in spans)  # the demo's turns are contiguous
        assert list(rows[0]) == FILE_COLUMNS
        # an episode's context is its first turn's: its outcome, gold and predicted value
        by_key = error_episodes(demo_errors).set_index("item_key")
        for row in rows:
            if row["run_id"]:
                expected = by_key.loc[row["item_key"]]
                assert (row["outcome"], row["last_turn"]) == (expected["outcome"], expected["last_turn"])


def test_export_round_trip_with_spans_on_sqlite(scored, demo_errors, tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'a.sqlite'}", f"sqlite:///{tmp_path / 'b.sqlite'}", scored, demo_errors,
                tmp_path)  # fmt: skip


@pytest.mark.postgres
def test_export_round_trip_with_spans_on_postgresql(scored, demo_errors, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    other = pg_url + "_episodes"
    engine = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{other.rsplit("/", 1)[1]}"'))
        conn.execute(text(f'CREATE DATABASE "{other.rsplit("/", 1)[1]}"'))
    engine.dispose()
    _round_trip(pg_url, other, scored, demo_errors, tmp_path)


def test_an_export_without_spans_imports_one_turn_episodes(tmp_path: Path) -> None:
    item = Item("ds", "d1", 2, domain="hotel", slot="area", run_id="r")
    base = {"item_key": item.key, **item.components(), "reviewer": "ana", "tags": ["other"], "comment": ""}
    with AnnotationStore("sqlite://") as store:
        old = [{**base, "updated_at": "2026-01-01T10:00:00Z"}]
        assert store.import_json(tmp_path / "old.json", data=json.dumps(old).encode()) == 1
        assert store.annotations()[["last_turn", "n_turns"]].values.tolist() == [[2, 1]]
        empty_cells = [{**base, "updated_at": "2026-01-02T10:00:00Z", "last_turn": "", "n_turns": ""}]
        assert store.import_json(tmp_path / "cells.json", data=json.dumps(empty_cells).encode()) == 1
        assert store.annotations()[["last_turn", "n_turns"]].values.tolist() == [[2, 1]]
        bad = [{**base, "updated_at": "2026-01-03T10:00:00Z", "last_turn": 1, "n_turns": 1}]
        with pytest.raises(InputError, match=r"bad\.json .*row 1: span: last_turn 1 must lie from the first turn"):
            store.import_json(tmp_path / "bad.json", data=json.dumps(bad).encode())


# ----------------------------------------------------------------------------------- confusion heatmap


def test_a_heatmap_cell_lists_the_items_it_counts(demo_errors: pd.DataFrame) -> None:
    from analysis.review.figures import confusion_heatmap

    episodes = error_episodes(demo_errors)
    empty = demo_errors.head(0).assign(reviewer="", tags=None)
    queue = review_queue(episodes, empty, run_id="simulated-A-mwz-en-predicted")
    for unit in ("episodes", "turns"):
        cells = confusion_counts(queue, unit=unit, top=10)
        assert len(cells) == 10 and cells["n"].is_monotonic_decreasing
        assert cells["row"].str.contains(": ").all()  # several slots: rows name the slot
        for cell in cells.itertuples():
            listed = review_queue(queue, empty, status="all", confusion=(cell.domain, cell.slot, cell.gold,
                                                                         cell.predicted))  # fmt: skip
            assert cell.n == (len(listed) if unit == "episodes" else int(listed["n_turns"].sum()))
            turns = review_queue(demo_errors, empty, run_id="simulated-A-mwz-en-predicted",
                                 confusion=(cell.domain, cell.slot, cell.gold, cell.predicted))  # fmt: skip
            assert int(listed["n_turns"].sum()) == len(turns)  # the cell's turns are its episodes' turns
        fig = confusion_heatmap(cells, unit=unit)
        assert fig.data[0].colorbar.title.text == ("episodes" if unit == "episodes" else "error turns")
        z = np.array([[np.nan if v is None else v for v in row] for row in fig.data[0].z], dtype=float)
        assert np.nansum(z) == cells["n"].sum()
    by_episodes = confusion_counts(queue, unit="episodes", top=1000)["n"].sum()
    by_turns = confusion_counts(queue, unit="turns", top=1000)["n"].sum()
    assert (by_episodes, by_turns) == (len(queue), int(queue["n_turns"].sum()))
    one_slot = confusion_counts(queue[(queue["domain"] == "hotel") & (queue["slot"] == "area")])
    assert not one_slot["row"].str.contains("hotel-area: ").any()  # one slot: rows are the gold values


# -------------------------------------------------------------------------------------------- live


def test_the_change_marker_moves_with_every_write_and_nothing_else(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.sqlite'}"
    item = Item("ds", "d1", 2, domain="hotel", slot="area", run_id="r")
    with AnnotationStore(url) as mine, AnnotationStore(url) as colleague:
        start = mine.change_marker()
        assert mine.change_marker() == start  # reading changes nothing
        mine.annotations()
        assert mine.change_marker() == start
        colleague.annotate(item, [WV], reviewer="bo")  # another connection (another process alike)
        after_tag = mine.change_marker()
        assert after_tag != start
        colleague.annotate(item, [WV], "same tags, new comment", reviewer="bo")
        after_edit = mine.change_marker()
        assert after_edit != after_tag
        path = tmp_path / "export.json"
        colleague.export_json(path)
        assert mine.import_json(path) == 0  # nothing newer: no write, no change
        assert mine.change_marker() == after_edit
        assert colleague.remove(item, reviewer="bo")
        assert mine.change_marker() != after_edit
        assert not colleague.remove(item, reviewer="bo")  # nothing removed: no change
        assert mine.change_marker() == colleague.change_marker()


def test_current_annotations_reads_again_only_when_the_marker_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit as st

    from ui import review

    monkeypatch.setattr(st, "session_state", {})  # a session of its own (bare mode)
    store = AnnotationStore(f"sqlite:///{tmp_path / 'live.sqlite'}")
    reads: list[int] = []
    original = store.annotations

    def counted(**kwargs: object) -> pd.DataFrame:
        reads.append(1)
        return original(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "annotations", counted)
    frame, marker = review.current_annotations(store)
    assert len(frame) == 0 and len(reads) == 1
    again, same = review.current_annotations(store)  # a tick with nothing new: no read
    assert same == marker and again is frame and len(reads) == 1
    store.annotate(Item("ds", "d1", 0), [WV], reviewer="ana")
    newer, moved = review.current_annotations(store)
    assert moved != marker and len(reads) == 2 and newer["reviewer"].tolist() == ["ana"]
    # the page's memo: computed once per key
    calls: list[int] = []
    assert review.memo("x", moved, lambda: calls.append(1) or 5) == 5
    assert review.memo("x", moved, lambda: calls.append(1) or 6) == 5 and len(calls) == 1
    assert review.memo("x", marker, lambda: calls.append(1) or 7) == 7 and len(calls) == 2
    store.close()


# -------------------------------------------------------------------------------------------- the page


@pytest.fixture
def annotations_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    monkeypatch.setenv("DST_ANNOTATIONS_URL", url)
    return url


@demo
def test_the_review_page_lists_episodes_and_tags_their_span(annotations_url: str, demo_errors: pd.DataFrame) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["reviewer"] = "ana"
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    selected = list(at.session_state["runs"])
    errors = demo_errors[demo_errors["run_id"].isin(selected)]
    episodes = error_episodes(errors)
    caption = f"{len(episodes):,} error episode(s) match, {len(errors):,} turn(s) (unreviewed)"
    assert any(caption in c.value for c in at.caption), [c.value for c in at.caption]
    queue = next(d.value for d in at.dataframe if "last turn" in d.value.columns)
    assert queue[["turn", "last turn", "turns"]].values.tolist() == (
        episodes[["turn_index", "last_turn", "n_turns"]].head(len(queue)).values.tolist()
    )
    metric = next(m for m in at.metric if m.label == "Reviewed episodes")
    assert metric.value == f"0 / {len(episodes):,}"
    # the first row is the default item: tag it through the form
    first = episodes.iloc[0]
    next(m for m in at.multiselect if m.label == "Tags").set_value([WV])
    next(b for b in at.button if b.label == "Save tags").click().run()
    assert not at.exception, [e.value for e in at.exception]
    stored = AnnotationStore(annotations_url).annotations()
    assert stored[["item_key", "turn_index", "last_turn", "n_turns", "reviewer"]].values.tolist() == [
        [first.item_key, first.turn_index, first.last_turn, first.n_turns, "ana"]
    ]
    metric = next(m for m in at.metric if m.label == "Reviewed episodes")
    assert metric.value == f"1 / {len(episodes):,}"
    turns = next(m for m in at.metric if m.label == "Reviewed errors")
    assert turns.value == f"{int(first.n_turns):,} / {len(errors):,}"
    # the heatmap is there, counted in episodes by default
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["data"][0]["type"] == "heatmap" and spec["data"][0]["colorbar"]["title"]["text"] == "episodes"
