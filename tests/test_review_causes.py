"""Systematic causes on the Review page (`analysis.review.causes`): UBAR's mwzeval output against MultiWOZ
2.1 gold has seven naming mismatches, each one item whose episodes are tagged once with the tag its cause
suggests (`AnnotationStore.annotate_many`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.demo.testing import run_from_states
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.review.analysis import review_progress
from analysis.review.causes import NAMING, cause_items, systematic_causes
from analysis.review.items import Item
from analysis.review.store import AnnotationStore
from analysis.scoring import score_run
from tests.conftest import realdata_path

ROOT = Path(__file__).resolve().parents[1]


def test_annotate_many_tags_every_item_in_one_call() -> None:
    store = AnnotationStore("sqlite://")
    items = [Item("d", f"MUL{n:04d}", 1, domain="hotel", slot="area", run_id="r") for n in range(5)]
    assert store.annotate_many([*items, items[0]], ["normalisation mismatch"], "naming", reviewer="ana") == 5
    stored = store.annotations()
    assert len(stored) == 5 and set(stored["tags"]) == {("normalisation mismatch",)}
    assert store.annotate_many(items[:2], ["other"], reviewer="ana") == 2  # a second tagging replaces the first
    assert sorted(store.annotations()["version"]) == [1, 1, 1, 2, 2]
    with pytest.raises(ValueError):
        store.annotate_many(items, ["no such tag"], reviewer="ana")


def test_a_renamed_slot_is_one_cause_with_its_episodes() -> None:
    gold = [{"hotel": {"bookday": "monday"}}] * 4
    pred = [{"hotel": {"day": "monday"}}] * 4
    run = run_from_states(gold, pred)
    scored = score_run(run, "exact")
    causes = systematic_causes(scored, run)
    row = causes[causes["cause"] == NAMING].iloc[0]
    assert row["suggested_tag"] == "normalisation mismatch" and "hotel-day vs gold hotel-bookday" in row["detail"]
    items = cause_items(scored, run, cause_id=row["cause_id"])
    assert len(items) == row["n_episodes"] == 2  # the spurious day and the missed bookday, each one episode
    assert items["n_turns"].tolist() == [4, 4]


def _ubar() -> tuple:
    run = load_run(
        realdata_path("mwzeval_outputs", "ubar.json"),
        realdata_path("multiwoz21", "test.json.zip"),
        meta=RunInfo(run_id="ubar", convention="mwzeval"),
    )
    return run, score_run(run)


@pytest.mark.slow
@pytest.mark.realdata
def test_ubar_naming_mismatches_are_seven_causes_tagged_once_each() -> None:
    run, scored = _ubar()
    causes = systematic_causes(scored, run)
    naming = causes[causes["cause"] == NAMING]
    assert len(naming) == 7 and set(naming["suggested_tag"]) == {"normalisation mismatch"}
    first = naming.iloc[0]
    items = cause_items(scored, run, cause_id=first["cause_id"])
    assert len(items) == first["n_episodes"] and int(items["n_turns"].sum()) == first["n_turns"]
    store = AnnotationStore("sqlite://")
    from ui.review import item_of

    written = store.annotate_many([item_of(r) for r in items.to_dict("records")], [first["suggested_tag"]],
                                  first["comment"], reviewer="ana")  # fmt: skip
    assert written == len(items)
    done = review_progress(items, store.annotations())
    assert int(done["n_reviewed"].iloc[0]) == len(items)


@pytest.mark.slow
@pytest.mark.realdata
def test_the_review_page_tags_a_cause_at_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DST_ANNOTATIONS_URL", f"sqlite:///{tmp_path / 'annotations.sqlite'}")
    pred, gold = realdata_path("mwzeval_outputs", "ubar.json"), realdata_path("multiwoz21", "test.json.zip")
    (tmp_path / "workspace.toml").write_text(
        '[workspace]\nname = "ubar"\nallow_outside_root = true\n\n[[runs]]\nname = "ubar"\n'
        f'pred = "{pred}"\ngold = "{gold}"\nconvention = "mwzeval"\n',
        encoding="utf-8",
    )
    run, scored = _ubar()
    expected = systematic_causes(scored, run).iloc[0]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["workspace_path"] = str(tmp_path / "workspace.toml")
    at.session_state["review_causes"] = True
    at.session_state["review_cause"] = expected["cause_id"]
    at.session_state["reviewer"] = "ana"
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    tags = at.multiselect(key=f"w_review_cause_tags_{expected['cause_id']}")
    assert tags.value == ["normalisation mismatch"]
    at.button(key="review_cause_tag").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{expected['n_episodes']:,} episodes of naming mismatch tagged" in s.value for s in at.success)
    stored = AnnotationStore(f"sqlite:///{tmp_path / 'annotations.sqlite'}").annotations()
    assert len(stored) == expected["n_episodes"] and set(stored["reviewer"]) == {"ana"}
