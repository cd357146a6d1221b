"""analysis.review.figures and analysis.reconcile.figures: the review and reconcile figures draw exactly the counts and metrics that
analysis.review.analysis and analysis.reconcile.core compute; display tables keep every row and the item."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis.demo.testing import run_from_states, scored_from_states
from analysis.reconcile import figures as RF
from analysis.reconcile.core import CAUSE_LABELS, CAUSES, reconcile
from analysis.review import AnnotationStore, Item, cohens_kappa, error_items, review_queue, tag_counts
from analysis.review import figures as F


@pytest.fixture
def store():
    annotations = AnnotationStore("sqlite://")
    hotel_area = Item("D", "d1", 0, domain="hotel", slot="area", run_id="r")
    hotel_name = Item("D", "d1", 1, domain="hotel", slot="name", run_id="r")
    taxi = Item("D", "d2", 0, domain="taxi", slot="leave at", run_id="r")
    annotations.annotate(hotel_area, ["wrong value"], "<b>bold?</b>", reviewer="ana")
    annotations.annotate(hotel_area, ["wrong value", "coreference"], reviewer="bo")
    annotations.annotate(hotel_name, ["missed update"], reviewer="ana")
    annotations.annotate(hotel_name, ["missed update"], reviewer="bo")
    annotations.annotate(taxi, ["gold annotation error"], reviewer="ana")
    annotations.annotate(Item("D", "d3", 2), ["other"], reviewer="ana")  # a whole turn
    yield annotations
    annotations.close()


def bar_totals(fig: go.Figure) -> dict[str, int]:
    totals: dict[str, int] = {}
    for trace in fig.data:
        for x, y in zip(trace.x, trace.y, strict=True):
            if y == y:  # NaN where a tag was not given in that group
                totals[x] = totals.get(x, 0) + int(y)
    return totals


def test_tag_counts_bar_sums_to_tag_counts(store):
    counts = tag_counts(store, by=("domain", "slot"))
    by_domain = bar_totals(F.tag_counts_bar(counts, by="domain"))
    assert by_domain == {"hotel": 5, "taxi": 1, F.TURN_LEVEL: 1}
    assert sum(by_domain.values()) == counts["n"].sum()
    by_slot = bar_totals(F.tag_counts_bar(counts, by="slot"))
    assert by_slot == {"hotel-area": 3, "hotel-name": 2, "taxi-leave at": 1, F.TURN_LEVEL: 1}
    fig = F.tag_counts_bar(counts, by="slot")
    assert {t.name for t in fig.data} == set(counts["tag"])
    assert fig.layout.xaxis.categoryarray[0] == "hotel-area"  # most annotated first


def test_tag_counts_bar_top_and_empty(store):
    counts = tag_counts(store, by=("domain", "slot"))
    assert len(bar_totals(F.tag_counts_bar(counts, by="slot", top=2))) == 2
    empty = F.tag_counts_bar(counts.iloc[0:0])
    assert not empty.data and "No annotations" in empty.layout.annotations[0].text
    with pytest.raises(ValueError, match="domain, slot"):
        F.tag_counts_bar(counts, by="run")


def test_queue_table_keeps_items_and_joins_tags():
    scored = scored_from_states(
        [{"hotel": {"area": "north", "name": "ivy"}}, {"hotel": {"area": "south"}}],
        [{"hotel": {"area": "east"}}, {"hotel": {"area": "south", "stars": "4"}}],
    )
    errors = error_items(scored)
    annotations = AnnotationStore("sqlite://")
    first = errors.iloc[0]
    item = Item(
        first["dataset"],
        first["dialogue_id"],
        int(first["turn_index"]),
        domain=first["domain"],
        slot=first["slot"],
        run_id=first["run_id"],
    )
    annotations.annotate(item, ["wrong value", "other"], reviewer="ana")
    queue = review_queue(errors, annotations, status="all")
    table = F.queue_table(queue)
    assert len(table) == len(errors)
    assert table["item_key"].tolist() == queue["item_key"].tolist()
    assert table.loc[table["item_key"] == item.key, "tags"].item() == "wrong value; other"
    assert table.loc[table["item_key"] == item.key, "reviewers"].item() == "ana"
    assert (table["slot_name"] == table["domain"] + "-" + table["slot"]).all()
    missed = table[table["outcome"] == "missed"]
    assert (missed["predicted"] == "—").all()
    assert len(F.queue_table(queue, limit=1)) == 1
    annotations.close()


def test_disagreement_table_lists_the_differing_items(store):
    agreement = cohens_kappa(store, "ana", "bo")
    table = F.disagreement_table(agreement)
    assert len(table) == len(agreement.disagreements) == 1
    row = table.iloc[0]
    assert row["slot"] == "area"
    assert row["tags_b"] == "wrong value; coreference" and row["only_b"] == "coreference" and row["only_a"] == ""


@pytest.fixture
def reconciliation():
    run = run_from_states(
        [{"hotel": {"price range": "Cheap", "area": "dontcare"}}, {"hotel": {"price range": "cheap", "area": "north"}}],
        [{"hotel": {"pricerange": "cheap"}}, {"hotel": {"pricerange": "cheap", "area": "north"}}],
    )
    return reconcile(run, ["exact", "trade", "mwzeval"])


def test_convention_bar_draws_the_table(reconciliation):
    table = reconciliation.table()
    fig = RF.convention_bar(table)
    assert [t.name for t in fig.data] == ["JGA", "Slot F1 (micro)"]
    assert list(fig.data[0].x) == list(table["convention"])
    assert list(fig.data[0].y) == pytest.approx(table["jga"].tolist())
    assert list(fig.data[1].y) == pytest.approx(table["slot_f1_micro"].tolist())
    with pytest.raises(ValueError, match="not in the table"):
        RF.convention_bar(table, metrics=["nope"])


def test_cause_bar_and_responsible_table(reconciliation):
    a, b = "exact", "mwzeval"
    causes = reconciliation.causes(a, b)
    assert causes, "the example must flip"
    fig = RF.cause_bar(causes, a=a, b=b)
    assert list(fig.data[0].x) == [CAUSE_LABELS[c] for c in CAUSES if c in causes]
    assert sum(fig.data[0].y) == sum(causes.values())
    responsible = reconciliation.responsible(a, b)
    table = RF.responsible_table(responsible)
    assert len(table) == len(responsible)
    ranks = table["cause_id"].map(CAUSES.index)
    assert set(table["cause"]) == {CAUSE_LABELS[c] for c in causes}
    assert ranks.is_monotonic_increasing
    one = next(iter(causes))
    assert set(RF.responsible_table(responsible, cause=one)["cause_id"]) == {one}
    assert len(RF.responsible_table(responsible, cause=one)) == causes[one]
    with pytest.raises(ValueError, match="cause has to be one of"):
        RF.responsible_table(responsible, cause="luck")


def test_cause_bar_without_flips():
    fig = RF.cause_bar({}, a="exact", b="exact2")
    assert not fig.data and "No turn flips" in fig.layout.annotations[0].text


def test_tables_are_plain_frames(store):
    counts = tag_counts(store)
    assert isinstance(F.disagreement_table(cohens_kappa(store, "ana", "bo")), pd.DataFrame)
    assert counts["n"].sum() == 7
