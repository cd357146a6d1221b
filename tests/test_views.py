"""Page-ready frames of analysis.views on tiny in-memory runs, checked against the metric functions."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from analysis import views
from analysis.demo.testing import run_from_states, scored_from_states
from analysis.metrics import joint_goal_accuracy, per_slot_prf
from analysis.model import RunMeta
from analysis.scoring import score_run
from analysis.suite import headline_metrics

GOLD = {
    "d1": [
        {"hotel": {"area": "east"}},
        {"hotel": {"area": "east", "stars": "4"}},
        {"hotel": {"area": "east", "stars": "4"}, "taxi": {"dest": "museum"}},
    ],
    "d2": [{"train": {"day": "monday"}}, {"train": {"day": "monday"}}],
}
PRED = {
    "d1": [
        {"hotel": {"area": "east"}},
        {"hotel": {"area": "west", "stars": "4"}},
        {"hotel": {"area": "west", "stars": "4"}, "taxi": {"dest": "museum", "leave": "9"}},
    ],
    "d2": [{}, {"train": {"day": "monday"}}],
}


@pytest.fixture
def scored():
    return scored_from_states(GOLD, PRED, run_id="sys")


def test_leaderboard_row_equals_headline_metrics(scored):
    board = views.leaderboard([scored])
    row = board.iloc[0]
    for key, value in headline_metrics(scored).items():
        assert row[key] == pytest.approx(value, nan_ok=True)
    assert row["n_turns"] == 5 and row["n_dialogues"] == 2 and row["convention"] == "exact"


def test_leaderboard_sorts_best_first(scored):
    other = scored_from_states(GOLD, GOLD, run_id="perfect")
    board = views.leaderboard([scored, other], sort="jga")
    assert list(board["run_id"]) == ["perfect", "sys"]
    with pytest.raises(ValueError, match="leaderboard column"):
        views.leaderboard([scored], sort="nope")


def _board(**columns):
    base = {
        "run_id": ["a", "b"],
        "dataset": ["MultiWOZ 2.1", "MultiWOZ 2.1"],
        "split": ["test", "test"],
        "convention": ["exact", "exact"],
        "history": ["predicted", "predicted"],
    }
    return pd.DataFrame(base | columns)


def test_comparable_runs_get_no_warning():
    assert views.comparability_warnings(_board()) == []


@pytest.mark.parametrize(
    ("column", "values", "expected"),
    [
        ("dataset", ["MultiWOZ 2.1", "MultiWOZ 2.4"], "Dataset versions differ"),
        ("split", ["test", "val"], "Splits differ"),
        ("convention", ["exact", "trade"], "different conventions"),
        ("history", ["predicted", "gold"], "History modes differ"),
        ("dataset", ["MultiWOZ 2.1", "CrossWOZ"], "different datasets"),
    ],
)
def test_incomparable_runs_are_named(column, values, expected):
    lines = views.comparability_warnings(_board(**{column: values}))
    assert len(lines) == 1 and expected in lines[0]
    if column == "convention":  # each run with its convention: the difference nobody typed
        assert f"a ({values[0]})" in lines[0] and f"b ({values[1]})" in lines[0]
    else:
        assert "(a)" in lines[0] and "(b)" in lines[0]


@pytest.mark.parametrize(
    "columns",
    [
        {},
        {"dataset": ["MultiWOZ 2.1", "multiwoz-2.1"]},
        {"dataset": ["MultiWOZ 2.1", "MultiWOZ 2.4"]},
        {"dataset": ["MultiWOZ 2.1", "CrossWOZ"]},
        {"split": ["test", "val"]},
        {"convention": ["exact", "trade"]},
        {"history": ["predicted", "gold"]},
    ],
)
def test_comparable_groups_are_the_comparability_warnings_rule(columns):
    """One rule: two runs share a group (their best values are compared) exactly when the Overview has no
    warning about them."""
    board = _board(**columns)
    groups = views.comparable_groups(board)
    assert (groups.nunique() == 1) == (views.comparability_warnings(board) == [])


def test_dataset_version():
    assert views.dataset_version("MultiWOZ 2.4") == ("multiwoz", "2.4")
    assert views.dataset_version("CrossWOZ-en") == ("crosswoz-en", "")


def test_slot_table_matches_per_slot_prf_and_counts(scored):
    table = views.slot_table(scored)
    prf = per_slot_prf(scored).set_index(["domain", "slot"])
    for row in table.itertuples():
        assert row.f1 == pytest.approx(prf.loc[(row.domain, row.slot), "f1"], nan_ok=True)
    area = table.set_index("slot_name").loc["hotel-area"]
    assert (area["correct"], area["wrong_value"], area["missed"], area["spurious"]) == (1, 2, 0, 0)
    assert int(table[["correct", "wrong_value", "missed", "spurious"]].to_numpy().sum()) == len(scored.slots)


def test_outcome_mix_shares_sum_to_one(scored):
    mix = views.outcome_mix(scored, by="slot")
    assert set(mix["outcome"]) <= {"wrong_value", "missed", "spurious"}
    sums = mix.groupby(["run_id", "group"])["share"].sum()
    assert sums.to_numpy() == pytest.approx(1.0)
    assert mix.iloc[0]["group"] == "hotel-area"  # most errors first
    with pytest.raises(ValueError, match="slot, domain"):
        views.outcome_mix(scored, by="turn")


def test_value_confusions_and_examples(scored):
    confusions = views.value_confusions(scored, domain="hotel", slot="area")
    assert confusions[["gold", "predicted", "n"]].to_dict("records") == [{"gold": "east", "predicted": "west", "n": 2}]
    examples = views.slot_examples(scored, domain="hotel", slot="area", gold="east", predicted="west")
    assert list(examples["turn_index"]) == [1, 2]
    empty = views.value_confusions(scored, domain="hotel", slot="stars")
    assert empty.empty


def test_domain_and_depth_frames_equal_metrics(scored):
    per_domain = views.domain_jga([scored], resamples=200)
    expected = joint_goal_accuracy(scored, by=["run_id", "domain"])
    pd.testing.assert_frame_equal(per_domain[list(expected.columns)], expected)
    assert (per_domain["jga_low"] <= per_domain["jga"]).all() and (per_domain["jga"] <= per_domain["jga_high"]).all()
    depth = views.depth_jga([scored], resamples=200)
    assert list(depth["turn_index"]) == [0, 1, 2]
    assert depth["jga"].tolist() == pytest.approx([0.5, 0.5, 0.0])
    assert (depth["jga_low"] <= depth["jga"]).all() and (depth["jga"] <= depth["jga_high"]).all()


def test_history_pairs_and_compounding():
    predicted = score_run(run_from_states(GOLD, PRED, run_id="p", history="predicted"))
    gold = score_run(run_from_states(GOLD, GOLD, run_id="g", history="gold"))
    metas = [replace(predicted.metas[0], system="s"), replace(gold.metas[0], system="s"), RunMeta("x", system="x")]
    assert views.history_pairs(metas) == [("p", "g")]
    curve = views.compounding_curve(predicted, gold)
    assert curve.attrs["gjga"] == 1.0 and curve.attrs["jga"] == pytest.approx(0.4)
    assert (curve["gap"] >= 0).all()


def test_first_error_distribution(scored):
    dist = views.first_error_distribution([scored])
    assert dict(zip(dist["label"], dist["n_dialogues"], strict=True)) == {"0": 1, "1": 1}
    assert dist["share"].sum() == pytest.approx(1.0)


def test_dialogue_view_marks_inherited_and_changes(scored):
    turns, diff = views.dialogue_view(scored, "d1")
    area = diff[diff["slot"] == "hotel-area"].set_index("turn_index")
    assert area.loc[1, "origin"] == "new" and area.loc[2, "origin"] == "inherited"
    assert area.loc[1, "status"] == "≠ wrong value" and area.loc[0, "status"] == "✓ correct"
    assert area.loc[1, "gold"] == "east" and area.loc[1, "predicted"] == "west"
    spurious = diff[diff["outcome"] == "spurious"].iloc[0]
    assert spurious["status"] == "+ spurious" and spurious["gold"] == views.ABSENT
    assert turns.loc[1, "gold_changes"] == "+ hotel-stars = 4"
    assert "~ hotel-area: east → west" in turns.loc[1, "pred_changes"]
    assert turns["n_new"].tolist() == [0, 1, 1] and turns["n_inherited"].tolist() == [0, 0, 1]


def test_filters_and_stepping(scored):
    turns, diff = views.dialogue_view(scored, "d1")
    assert views.filter_turns(turns, diff) == [0, 1, 2]
    errors = views.filter_turns(turns, diff, errors_only=True)
    assert errors == [1, 2]
    assert views.filter_turns(turns, diff, outcome="spurious") == [2]
    assert views.filter_turns(turns, diff, slot="hotel-stars") == [1, 2]
    assert views.step_turn(errors, 0, direction=1) == 1
    assert views.step_turn(errors, 2, direction=1) is None
    assert views.step_turn(errors, 2, direction=-1) == 1
    rows = views.diff_at(diff, 2, errors_only=True)
    assert set(rows["outcome"]) == {"wrong_value", "spurious"}


def test_dialogue_index_and_matching(scored):
    index = views.dialogue_index(scored)
    assert index.set_index("dialogue_id")["error_turns"].to_dict() == {"d1": 2, "d2": 1}
    assert views.first_dialogue_with_errors(index) == "d1"
    assert views.matching_dialogue(scored, "D1.json") == "d1"
    assert views.matching_dialogue(scored, "nope") is None
    assert views.turn_row(views.dialogue_view(scored, "d1")[0], 9) is None


def test_scope_caption(scored):
    assert views.scope_caption([scored]) == "Convention: exact · 1 run · 5 turns · 2 dialogues"


def test_crosslingual_summary_counts_every_paired_turn():
    en = scored_from_states(GOLD, PRED, run_id="en")
    zh_gold = {"d1": [{"旅馆": {"区域": "东"}}] * 3, "d2": [{"火车": {"日期": "周一"}}] * 2}
    zh = scored_from_states(zh_gold, zh_gold, run_id="zh")
    summary = views.crosslingual_summary(en, zh)
    assert sum(summary["cells"].values()) == summary["pairing"]["paired_turns"] == 5
    assert summary["cells"]["only_b"] == 3 and summary["cells"]["both_correct"] == 2
    assert set(summary["gaps"]) == {"slot", "domain", "turn_index"}
    turns = views.crosslingual_turns(en, zh, cell="only_b")
    assert len(turns) == 3


def test_empty_group_is_nan_not_zero():
    scored = scored_from_states([{}], [{}])
    table = views.slot_table(scored)
    assert table.empty
    assert math.isnan(views.leaderboard([scored]).iloc[0]["slot_f1_micro"])


def test_leaderboard_carries_the_bootstrap_interval_of_its_sort_metric() -> None:
    from analysis import stats
    from analysis.demo.testing import scored_from_states

    gold = {f"d{i}": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}] for i in range(30)}
    pred = {d: [s[0], s[1] if i % 3 else {}] for i, (d, s) in enumerate(gold.items())}
    scored = scored_from_states(gold, pred, run_id="r")
    board = views.leaderboard([scored], sort="jga", resamples=300)
    ci = stats.bootstrap_ci(scored, "jga", n_resamples=300)
    assert board.loc[0, "jga_low"] == ci["low"] and board.loc[0, "jga_high"] == ci["high"]
    assert board.loc[0, "jga_low"] <= board.loc[0, "jga"] <= board.loc[0, "jga_high"]
    assert board.loc[0, "jga_low"] < board.loc[0, "jga_high"]


def test_the_listing_index_is_not_a_dialogue_attribute():
    """`listing` (which of the gold file's per-turn slot listings a turn has: MultiWOZ files carry it) was
    offered as a dialogue attribute on the Domains page; a real attribute still is."""
    s = scored_from_states([{}, {"hotel": {"area": "east"}}], [{}, {}])
    turns = s.turns.assign(listing=[0, 1], type=["single", "multi"])
    assert views.attribute_columns(replace(s, turns=turns)) == ["type"]
