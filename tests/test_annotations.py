"""The annotation store: CRUD, taxonomy, stable keys, export/import, migrations, agreement, review queue."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import create_engine, insert, inspect, text

from analysis.demo.testing import run_from_states
from analysis.errors import InputError
from analysis.review import (
    DEFAULT_TAGS,
    SCHEMA_VERSION,
    AnnotationStore,
    Item,
    cohens_kappa,
    default_url,
    error_items,
    item_key,
    item_keys,
    review_progress,
    review_queue,
    tag_counts,
    taxonomy,
)
from analysis.review import store as ann
from analysis.scoring import combine, score_run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AnnotationStore]:
    with AnnotationStore(f"sqlite:///{tmp_path / 'annotations.sqlite'}") as opened:
        yield opened


def _item(turn: int = 0, **kw: object) -> Item:
    return Item("MultiWOZ 2.1", kw.pop("dialogue", "MUL0001.json"), turn, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ CRUD


def test_annotate_replace_remove_and_reviewers_kept_apart(store: AnnotationStore) -> None:
    item = _item(2, domain="hotel", slot="area", run_id="trade")
    assert store.annotate(item, ["missed update"], "first", reviewer="ana") == 1
    assert store.annotate(item, ["wrong value", "coreference"], "second", reviewer="ana") == 2
    assert store.annotate(item, ["other"], "bo's view", reviewer="bo") == 1
    rows = store.annotations().set_index("reviewer")
    assert len(rows) == 2
    assert rows.loc["ana", "tags"] == ("wrong value", "coreference")
    assert rows.loc["ana", "comment"] == "second"
    assert rows.loc["ana", "version"] == 2
    assert rows.loc["ana", "created_at"] < rows.loc["ana", "updated_at"]
    assert rows.loc["bo", "tags"] == ("other",)
    assert rows.loc["ana", "item_key"] == item.key
    assert (rows.loc["ana", "dataset"], rows.loc["ana", "turn_index"], rows.loc["ana", "slot"]) == (
        "MultiWOZ 2.1",
        2,
        "area",
    )
    # by key, for an item already stored
    assert store.annotate(item.key, "inherited error", reviewer="bo") == 2
    with pytest.raises(ValueError, match="no item with key"):
        store.annotate("v1|nope|x|0|||", ["other"], reviewer="bo")
    assert store.remove(item, reviewer="ana") is True
    assert store.remove(item, reviewer="ana") is False
    assert store.annotations()["reviewer"].tolist() == ["bo"]
    log = store.events(item)
    assert log["action"].tolist() == ["edit", "edit", "edit", "edit", "delete"]
    assert log[log["reviewer"] == "ana"]["version"].tolist() == [1, 2, 3]


def test_filters_and_verbatim_storage(store: AnnotationStore) -> None:
    nasty = "<script>alert('x')</script>, \"quoted\"\nsecond line; 中文 | 100%"
    store.annotate(_item(0, run_id="a"), ["other"], nasty, reviewer="ana")
    store.annotate(_item(1), ["wrong value"], "", reviewer="bo")
    store.annotate(Item("CrossWOZ", "1001", 0), ["coreference"], "", reviewer="bo")
    assert store.annotations(reviewer="ana")["comment"].tolist() == [nasty]
    assert len(store.annotations(reviewer=["ana", "bo"])) == 3
    assert store.annotations(dataset="CrossWOZ")["dialogue_id"].tolist() == ["1001"]
    assert store.annotations(run_id="a")["reviewer"].tolist() == ["ana"]
    assert store.annotations(tag="Wrong Value")["reviewer"].tolist() == ["bo"]


# -------------------------------------------------------------------------------------------- taxonomy


def test_taxonomy_validation_names_the_allowed_values(store: AnnotationStore) -> None:
    with pytest.raises(ValueError, match=r"tag 'typo' is not in the taxonomy; allowed: gold annotation error, "):
        store.annotate(_item(), ["typo"], reviewer="ana")
    with pytest.raises(ValueError, match="at least one tag"):
        store.annotate(_item(), [], reviewer="ana")
    with pytest.raises(ValueError, match="reviewer name"):
        store.annotate(_item(), ["other"], reviewer="  ")
    assert store.annotations().empty
    store.annotate(_item(), [" Missed Update ", "missed update"], reviewer="ana")
    assert store.annotations()["tags"].tolist() == [("missed update",)]


def test_taxonomy_from_workspace_settings(tmp_path: Path) -> None:
    settings = {"review": {"extra_tags": ["ASR error", "other", " slot carry-over "]}}
    tags = taxonomy(settings)
    assert tags == [*DEFAULT_TAGS, "ASR error", "slot carry-over"]
    assert taxonomy({}) == list(DEFAULT_TAGS)
    with pytest.raises(ValueError, match="extra_tags must be a list of strings"):
        taxonomy({"review": {"extra_tags": "asr"}})
    with pytest.raises(ValueError, match="not a usable tag"):
        taxonomy({"review": {"extra_tags": ["a;b"]}})
    with AnnotationStore(f"sqlite:///{tmp_path / 'x.sqlite'}", tags=tags) as extended:
        extended.annotate(_item(), ["asr error"], reviewer="ana")
        assert extended.annotations()["tags"].tolist() == [("ASR error",)]


def test_for_workspace_reads_review_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ann.ENV_URL, raising=False)
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(
        '[workspace]\nname = "t"\n[review]\nextra_tags = ["asr error"]\ndatabase_url = "sqlite:///db/team.sqlite"\n'
        '[[runs]]\nname = "r"\npred = "p.json"\n',
        encoding="utf-8",
    )
    with AnnotationStore.for_workspace(manifest) as opened:
        opened.annotate(_item(), ["asr error"], reviewer="ana")
    assert (tmp_path / "db" / "team.sqlite").is_file()


# ---------------------------------------------------------------------------------------------- urls


def test_default_url_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ann.ENV_URL, raising=False)
    manifest = tmp_path / "workspace.toml"
    assert default_url(manifest) == f"sqlite:///{tmp_path.resolve() / 'annotations.sqlite'}"
    assert default_url(tmp_path) == f"sqlite:///{tmp_path.resolve() / 'annotations.sqlite'}"
    pg = {"review": {"database_url": "postgresql://team@db.example:5433/review"}}
    assert default_url(manifest, pg) == "postgresql+psycopg://team@db.example:5433/review"
    relative = {"review": {"database_url": "sqlite:///notes.sqlite"}}
    assert default_url(manifest, relative) == f"sqlite:///{tmp_path.resolve() / 'notes.sqlite'}"
    monkeypatch.setenv(ann.ENV_URL, "postgresql+psycopg://env@localhost/x")
    assert default_url(manifest, pg) == "postgresql+psycopg://env@localhost/x"


def test_sqlite_store_uses_wal_and_a_busy_timeout(store: AnnotationStore) -> None:
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000


# ------------------------------------------------------------------------------------------ stable keys

GOLD = {
    "d1": [{"hotel": {"area": "north"}}, {"hotel": {"area": "south", "name": "acorn"}}],
    "d2": [{"taxi": {"leave at": "10:00"}}, {"taxi": {"leave at": "10:15"}}],
}
PRED = {
    "d1": [{"hotel": {"area": "north"}}, {"hotel": {"area": "north"}}],
    "d2": [{"taxi": {"leave at": "10:00", "dest": "x"}}, {"taxi": {"leave at": "10:00"}}],
}


def _scored(run_id: str = "run", dataset: str = "MultiWOZ 2.1", gold=GOLD, pred=PRED):  # type: ignore[no-untyped-def]
    run = run_from_states(gold, pred, run_id=run_id)
    run.meta = replace(run.meta, dataset=dataset)
    return score_run(run)


def test_keys_do_not_depend_on_tid_or_row_order() -> None:
    alone = error_items(_scored("b"))
    other = _scored("a", gold={"d9": [{"x": {"y": "z"}}] * 3}, pred={"d9": [{}] * 3})
    combined = error_items(combine([other, _scored("b")]))  # the same run, re-keyed tids
    reversed_order = {"d2": GOLD["d2"], "d1": GOLD["d1"]}
    reordered = error_items(_scored("b", gold=reversed_order, pred={"d2": PRED["d2"], "d1": PRED["d1"]}))
    keys = set(alone["item_key"])
    assert len(keys) == len(alone) == 4
    assert keys == set(combined[combined["run_id"] == "b"]["item_key"])
    assert keys == set(reordered["item_key"])
    assert "v1|MultiWOZ 2.1|d1|1|hotel|name|b" in keys


def test_item_key_normalises_and_escapes() -> None:
    nfd, nfc = "Cafe\u0301", "Café"
    assert item_key("ds", nfd, 1) == item_key(" ds ", nfc, 1)
    assert item_key("x|y", "z", 0) != item_key("x", "y|z", 0)
    assert item_key("a", "b%7C", 0) != item_key("a", "b|", 0)
    assert item_key("d", "x", 0, slot="hotel-book day") == item_key("d", "x", 0, slot=("hotel", "book day"))
    assert item_key("d", "x", 0) != item_key("d", "x", 0, run_id="r")
    with pytest.raises(ValueError, match="turn_index must be an integer"):
        item_key("d", "x", "3")  # type: ignore[arg-type]
    frame = pd.DataFrame(
        {
            "dataset": ["x|y", "ds", "CrossWOZ"],
            "dialogue_id": ["z", nfd, "1001"],
            "turn_index": [0, 1, 4],
            "domain": [None, "hotel", "餐厅"],
            "slot": [None, "book day", "区域"],
            "run_id": ["r", None, "rule"],
        }
    )
    expected = [
        item_key("x|y", "z", 0, run_id="r"),
        item_key("ds", nfc, 1, slot=("hotel", "book day")),
        item_key("CrossWOZ", "1001", 4, slot="餐厅-区域", run_id="rule"),
    ]
    assert item_keys(frame).tolist() == expected
    assert [Item(**row).key for row in frame.astype(object).where(frame.notna(), None).to_dict("records")] == expected


# ------------------------------------------------------------------------------------- export / import


def _fill(store: AnnotationStore) -> None:
    store.annotate(_item(0, domain="hotel", slot="area", run_id="r"), ["missed update"], 'a, "b"\nc', reviewer="ana")
    store.annotate(_item(0, domain="hotel", slot="area", run_id="r"), ["wrong value"], "", reviewer="bo")
    store.annotate(Item("CrossWOZ", "1001", 3), ["gold annotation error", "other"], "<b>中文</b>; 50%", reviewer="ana")


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_export_import_round_trip_is_idempotent(store: AnnotationStore, tmp_path: Path, kind: str) -> None:
    _fill(store)
    path = tmp_path / f"export.{kind}"
    assert getattr(store, f"export_{kind}")(path) == 3
    with AnnotationStore(f"sqlite:///{tmp_path / 'copy.sqlite'}") as copy:
        assert getattr(copy, f"import_{kind}")(path) == 3
        pd.testing.assert_frame_equal(copy.annotations(), store.annotations())
        n_events = len(copy.events())
        assert getattr(copy, f"import_{kind}")(path) == 0
        assert len(copy.events()) == n_events
        pd.testing.assert_frame_equal(copy.annotations(), store.annotations())
    before = store.annotations()
    assert getattr(store, f"import_{kind}")(path) == 0
    pd.testing.assert_frame_equal(store.annotations(), before)


def test_import_newer_wins_older_is_ignored(store: AnnotationStore, tmp_path: Path) -> None:
    _fill(store)
    path = tmp_path / "export.json"
    store.export_json(path)
    payload = json.loads(path.read_text(encoding="utf-8"))
    newer, older = payload["annotations"][0], payload["annotations"][1]
    newer.update(comment="edited elsewhere", tags=["coreference"], updated_at="2999-01-01T00:00:00+00:00")
    older.update(comment="stale", updated_at="2000-01-01T00:00:00Z")
    path.write_text(json.dumps(payload), encoding="utf-8")
    assert store.import_json(path) == 1
    rows = store.annotations().set_index("reviewer")
    assert rows.loc["bo", "comment"] == ""
    edited = store.annotations(tag="coreference")
    assert edited["comment"].tolist() == ["edited elsewhere"]
    assert edited["updated_at"].tolist() == ["2999-01-01T00:00:00.000000Z"]
    assert edited["version"].tolist() == [2]
    assert store.import_json(path) == 0


def test_import_of_one_item_twice_keeps_the_newest_row(store: AnnotationStore, tmp_path: Path) -> None:
    item = _item(4, domain="taxi", slot="dest")
    base = {"item_key": item.key, **item.components(), "reviewer": "ana", "tags": ["other"]}
    rows = [
        {**base, "comment": "old", "updated_at": "2026-01-01T10:00:00Z"},
        {**base, "comment": "new", "updated_at": "2026-01-01T11:00:00+00:00"},
        {**base, "comment": "middle", "updated_at": "2026-01-01T12:30:00+02:00"},
    ]
    assert store.import_json(tmp_path / "x.json", data=json.dumps(rows).encode()) == 1
    assert store.annotations()[["comment", "updated_at"]].to_dict("records") == [
        {"comment": "new", "updated_at": "2026-01-01T11:00:00.000000Z"}
    ]


def test_import_rejects_bad_rows_naming_file_and_row(store: AnnotationStore, tmp_path: Path) -> None:
    _fill(store)
    path = tmp_path / "export.csv"
    store.export_csv(path)
    frame = pd.read_csv(path, dtype="str", keep_default_na=False)
    bad_tag = frame.copy()
    bad_tag.loc[1, "tags"] = "wrong value; typo"
    bad_tag.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"export\.csv \[format: annotations-csv\]: row 2: tag 'typo'"):
        store.import_csv(path)
    bad_key = frame.copy()
    bad_key.loc[0, "turn_index"] = "7"
    bad_key.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"row 1: item_key .* does not match its components"):
        store.import_csv(path)
    with pytest.raises(InputError, match="cannot read JSON"):
        store.import_json(tmp_path / "x.json", data=b"{not json")
    assert len(store.annotations()) == 3


# --------------------------------------------------------------------------------------------- schema


def test_fresh_database_is_at_the_latest_schema(store: AnnotationStore) -> None:
    assert store.schema_version() == SCHEMA_VERSION == 3
    columns = {c["name"] for c in inspect(store.engine).get_columns("annotations")}
    assert {"last_turn", "n_turns"} <= columns
    tables = set(inspect(store.engine).get_table_names())
    assert {"annotations", "annotation_events", "annotation_schema_migrations"} <= tables


def test_version_1_database_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        ann.migrations_table.create(conn)
        ann.MIGRATIONS[0](conn)
        conn.execute(insert(ann.migrations_table).values(version=1, applied_at="2025-01-01T00:00:00.000000Z"))
        conn.execute(
            text(
                "INSERT INTO annotations (item_key, reviewer, dataset, dialogue_id, turn_index, domain, slot,"
                " run_id, tags, comment, created_at, updated_at) VALUES (:k, 'ana', 'MultiWOZ 2.1',"
                " 'MUL0001.json', 0, NULL, NULL, NULL, '[\"other\"]', 'old', :t, :t)"
            ),
            {"k": _item(0).key, "t": "2025-01-01T00:00:00.000000Z"},
        )
    columns = {c["name"] for c in inspect(engine).get_columns("annotations")}
    assert "version" not in columns
    engine.dispose()
    with AnnotationStore(url) as upgraded:
        assert upgraded.schema_version() == 3
        rows = upgraded.annotations()
        assert rows[["comment", "version"]].to_dict("records") == [{"comment": "old", "version": 1}]
        # an old row has no span: it reads as a one-turn episode (migration 3 fills it)
        assert rows[["turn_index", "last_turn", "n_turns"]].to_dict("records") == [
            {"turn_index": 0, "last_turn": 0, "n_turns": 1}
        ]
        assert upgraded.events()["action"].tolist() == ["migrated"]
        assert upgraded.annotate(_item(0), ["wrong value"], "new", reviewer="ana") == 2
    with AnnotationStore(url) as reopened:  # opening again applies nothing twice
        assert reopened.schema_version() == 3
        assert len(reopened.events()) == 2


# ------------------------------------------------------------------------------------------- agreement


def _two_reviewers(pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> pd.DataFrame:
    rows = []
    for n, (tags_a, tags_b) in enumerate(pairs):
        key = item_key("ds", f"d{n}", 0)
        rows += [
            {"item_key": key, "dialogue_id": f"d{n}", "reviewer": "a", "tags": tags_a},
            {"item_key": key, "dialogue_id": f"d{n}", "reviewer": "b", "tags": tags_b},
        ]
    return pd.DataFrame(rows)


def test_kappa_perfect_agreement_is_one(store: AnnotationStore) -> None:
    for n, tags in enumerate([["wrong value"], ["other", "coreference"], ["missed update"]]):
        for who in ("a", "b"):
            store.annotate(_item(n), tags, reviewer=who)
    store.annotate(_item(9), ["other"], reviewer="a")  # only one reviewer: not shared, not counted
    result = cohens_kappa(store, "a", "b")
    assert result.kappa == 1.0
    assert (result.n_items, result.n_decisions) == (3, 3 * 4)
    assert result.disagreements.empty


def test_kappa_item_tag_matches_the_hand_computed_2x2_table() -> None:
    # one tag, 50 items: both yes 20, a only 5, b only 10, both no 15.
    # p_o = 35/50 = 0.7; a says yes 25/50, b 30/50: p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4
    yes, no = ("wrong value",), ("other",)
    pairs = [(yes, yes)] * 20 + [(yes, no)] * 5 + [(no, yes)] * 10 + [(no, no)] * 15
    result = cohens_kappa(_two_reviewers(pairs), "a", "b", tags=["wrong value"])
    assert result.observed == pytest.approx(0.7)
    assert result.expected == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.4)
    assert result.n_decisions == 50
    assert len(result.disagreements) == 15
    first = result.disagreements.iloc[0]
    assert (first["only_a"], first["only_b"]) == (("wrong value",), ("other",))


def test_kappa_primary_tag_and_multi_tag_sets() -> None:
    x, y = ("wrong value",), ("missed update",)
    # primary: 10 items, agree on 8; each reviewer says x half the time: p_e = 0.5, kappa = (0.8-0.5)/0.5 = 0.6
    pairs = [(x, x)] * 4 + [(y, y)] * 4 + [(x, y), (y, x)]
    assert cohens_kappa(_two_reviewers(pairs), "a", "b", unit="primary").kappa == pytest.approx(0.6)
    # tag sets over 2 items and 2 tags: decisions a=[1,1,0,1] b=[1,0,0,1] -> p_o=3/4,
    # pa=3/4, pb=1/2, p_e=3/8+1/8=1/2, kappa=(3/4-1/2)/(1/2)=0.5
    sets = [(("wrong value", "coreference"), ("wrong value",)), (("coreference",), ("coreference",))]
    result = cohens_kappa(_two_reviewers(sets), "a", "b")
    assert result.tags == ("wrong value", "coreference")
    assert result.kappa == pytest.approx(0.5)
    assert result.disagreements["only_a"].tolist() == [("coreference",)]
    assert math.isnan(cohens_kappa(_two_reviewers(sets), "a", "nobody").kappa)
    with pytest.raises(ValueError, match="unit has to be one of item-tag, primary"):
        cohens_kappa(_two_reviewers(sets), "a", "b", unit="majority")


# ---------------------------------------------------------------------------------------- review queue


def test_review_queue_filters_and_coverage(store: AnnotationStore) -> None:
    scored = combine([_scored("a"), _scored("b")])
    errors = error_items(scored)
    # per run: d1 t1 hotel-area wrong, d1 t1 hotel-name missed, d2 t0 taxi-dest spurious,
    # d2 t1 taxi-leave at wrong, (d2 t0 leave at correct)
    assert len(errors) == 8
    assert set(errors["outcome"]) == {"wrong_value", "missed", "spurious"}
    queue = review_queue(errors, store)
    assert len(queue) == 8 and not queue["reviewed"].any()

    slot_item = Item("MultiWOZ 2.1", "d1", 1, domain="hotel", slot="area", run_id="a")
    store.annotate(slot_item, ["missed update"], reviewer="ana")
    store.annotate(Item("MultiWOZ 2.1", "d2", 1), ["gold annotation error"], reviewer="bo")  # turn, any run
    store.annotate(Item("MultiWOZ 2.1", "d1", 0, domain="hotel", slot="area"), ["other"], reviewer="bo")
    store.annotate(Item("Other set", "d2", 0), ["other"], reviewer="bo")  # another dataset: covers nothing

    queue = review_queue(errors, store)
    assert len(queue) == 8 - 1 - 2
    reviewed = review_queue(errors, store, status="reviewed")
    assert set(zip(reviewed["run_id"], reviewed["dialogue_id"], reviewed["slot"], strict=True)) == {
        ("a", "d1", "area"),
        ("a", "d2", "leave at"),
        ("b", "d2", "leave at"),
    }
    assert review_queue(errors, store, run_id="b")["slot"].tolist() == ["area", "name", "dest"]
    assert review_queue(errors, store, domain="taxi", status="all")["outcome"].tolist() == [
        "spurious",
        "wrong_value",
        "spurious",
        "wrong_value",
    ]
    assert review_queue(errors, store, slot=["name", "dest"], outcome="missed")["run_id"].tolist() == ["a", "b"]
    tagged = review_queue(errors, store, tag="gold annotation error", status="all")
    assert tagged["run_id"].tolist() == ["a", "b"] and tagged["reviewers"].tolist() == [("bo",), ("bo",)]
    assert len(review_queue(errors, store, reviewer="ana")) == 7  # bo's reviews do not count for ana
    assert (
        review_queue(errors, store.annotations(), status="reviewed")["item_key"].tolist()
        == reviewed["item_key"].tolist()
    )
    with pytest.raises(ValueError, match="status has to be one of unreviewed, reviewed, all"):
        review_queue(errors, store, status="done")
    with pytest.raises(ValueError, match="not in the taxonomy"):
        review_queue(errors, store, tag="nope")

    progress = review_progress(errors, store, by="run_id")
    assert progress[["run_id", "n_errors", "n_reviewed", "n_gold_errors"]].to_dict("records") == [
        {"run_id": "a", "n_errors": 4, "n_reviewed": 2, "n_gold_errors": 1},
        {"run_id": "b", "n_errors": 4, "n_reviewed": 1, "n_gold_errors": 1},
    ]
    assert progress["share_reviewed"].tolist() == [0.5, 0.25]
    assert math.isnan(review_progress(errors.iloc[:0], store)["share_reviewed"].iloc[0])


def test_tag_counts_by_domain_and_slot(store: AnnotationStore) -> None:
    for n, who in enumerate(["ana", "bo", "cy"]):
        store.annotate(_item(n, domain="hotel", slot="area"), ["wrong value", "coreference"], reviewer=who)
    store.annotate(_item(0, domain="hotel", slot="area"), ["wrong value"], reviewer="bo")
    store.annotate(_item(5, domain="taxi", slot="dest"), ["hallucinated slot"], reviewer="ana")
    store.annotate(_item(6), ["other"], reviewer="ana")
    counts = tag_counts(store)
    assert counts.to_dict("records")[:3] == [
        {"domain": "hotel", "slot": "area", "tag": "wrong value", "n": 4, "n_items": 3},
        {"domain": "hotel", "slot": "area", "tag": "coreference", "n": 3, "n_items": 3},
        {"domain": "taxi", "slot": "dest", "tag": "hallucinated slot", "n": 1, "n_items": 1},
    ]
    assert counts["n"].sum() == 9
    by_domain = tag_counts(store, by="domain", reviewer="ana")
    assert list(zip(by_domain["domain"].fillna("(turn)"), by_domain["tag"], by_domain["n"], strict=True)) == [
        ("hotel", "coreference", 1),
        ("hotel", "wrong value", 1),
        ("taxi", "hallucinated slot", 1),
        ("(turn)", "other", 1),
    ]
    with pytest.raises(ValueError, match="cannot count tags by"):
        tag_counts(store, by="colour")
