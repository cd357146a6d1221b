"""Registry-wide property tests (scikit-learn test_common style) over every headline metric."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis import metrics as M
from analysis.conventions import get_convention
from analysis.demo.testing import run_from_states
from analysis.scoring import combine, score_run
from analysis.suite import HEADLINE, headline_metrics

DOMAINS = ["hotel", "train", "taxi"]
SLOTS = ["area", "day", "name"]
VALUES = ["east", "west", "dontcare", "cheap", "a|b", "b"]
CONVENTIONS = ["exact", "trade", "dstc9", "mwzeval", "mwzeval-lenient", "convlab3", "risawoz"]

state = st.dictionaries(
    st.sampled_from(DOMAINS),
    st.dictionaries(st.sampled_from(SLOTS), st.sampled_from(VALUES), max_size=3),
    max_size=3,
)
dialogue = st.lists(st.tuples(state, state), min_size=1, max_size=5)
dialogues = st.lists(dialogue, min_size=1, max_size=6)
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(pairs, run_id="run", reverse=False):
    gold = {f"d{i}": [g for g, _ in dial] for i, dial in enumerate(pairs)}
    pred = {f"d{i}": [p for _, p in dial] for i, dial in enumerate(pairs)}
    if reverse:
        gold = dict(reversed(list(gold.items())))
        pred = dict(reversed(list(pred.items())))
    return run_from_states(gold, pred, run_id=run_id)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.slow
@FAST
@given(dialogues, st.sampled_from(CONVENTIONS))
def test_row_order_invariance(pairs, convention) -> None:
    run = _run(pairs)
    shuffled = type(run)(
        run.meta,
        run.turns.sample(frac=1.0, random_state=1).reset_index(drop=True),
        run.gold.sample(frac=1.0, random_state=2).reset_index(drop=True),
        run.pred.sample(frac=1.0, random_state=3).reset_index(drop=True),
        run.listed_slots,
        run.alignment,
    )
    a = headline_metrics(score_run(run, convention))
    b = headline_metrics(score_run(shuffled, convention))
    assert all(_same(a[k], b[k]) for k in a), (a, b)


@FAST
@given(st.lists(st.lists(state, min_size=1, max_size=5), min_size=1, max_size=6), st.sampled_from(CONVENTIONS))
def test_perfect_predictions_score_one(golds, convention) -> None:
    gold = {f"d{i}": states for i, states in enumerate(golds)}
    if get_convention(convention).dontcare == "drop_gold":
        # mwzeval drops dontcare from gold only, so a predicted dontcare is spurious by design.
        gold = {
            d: [{dom: {k: v for k, v in slots.items() if v != "dontcare"} for dom, slots in s.items()} for s in states]
            for d, states in gold.items()
        }
    renames = get_convention(convention).gold_slot_renames
    # mwzeval's gold names booking slots as MultiWOZ 2.2 does (`bookday`): a perfect prediction uses them too.
    pred = {
        d: [{dom: {renames.get((dom, k), k): v for k, v in slots.items()} for dom, slots in s.items()} for s in states]
        for d, states in gold.items()
    }
    scored = score_run(run_from_states(gold, pred), convention)
    assert M.joint_goal_accuracy(scored) == 1.0
    if len(scored.ontology) and M.ontology_mismatch(scored) is None:
        assert M.slot_accuracy(scored) == 1.0
        assert M.slot_accuracy_trade(scored) == 1.0
    else:  # nothing to count over, or gold outside the ontology (`train-area` under trade): NaN, never 1 or 0
        assert math.isnan(M.slot_accuracy(scored)) and math.isnan(M.slot_accuracy_trade(scored))
    assert M.joint_f1_trade(scored) == 1.0
    assert M.final_turn_jga(scored) == 1.0
    has_gold = scored.turns["n_gold"] > 0
    # The seed recipe scores an empty-gold turn 0 even when the prediction is right (its quirk).
    assert _same(M.slot_f1_seed(scored), float(has_gold.mean()))
    assert _same(M.slot_f1_domain_slot(scored), float(has_gold.mean()))
    if has_gold.any():
        assert M.average_goal_accuracy(scored) == 1.0
        assert M.slot_prf_micro(scored)["f1"] == 1.0


@pytest.mark.slow
@FAST
@given(dialogues, st.sampled_from(CONVENTIONS))
def test_per_slot_counts_sum_to_micro_totals(pairs, convention) -> None:
    scored = score_run(_run(pairs), convention)
    per_slot = M.per_slot_prf(scored)
    micro = M.slot_prf_micro(scored, by="run_id")
    assert isinstance(micro, pd.DataFrame)
    for column in ("tp", "fp", "fn", "support"):
        assert per_slot[column].sum() == micro[column].sum()
    by_domain = M.slot_prf_micro(scored, by="domain")
    assert by_domain["tp"].sum() == micro["tp"].sum()
    # Outcome counts per turn add up to the slots table.
    counts = scored.turns[["n_correct", "n_wrong", "n_missed", "n_spurious"]].to_numpy().sum()
    assert counts == len(scored.slots)


@pytest.mark.slow
@FAST
@given(dialogues, dialogues, st.sampled_from(CONVENTIONS))
def test_run_scored_inside_a_concatenation_equals_alone(pairs_a, pairs_b, convention) -> None:
    a = score_run(_run(pairs_a, run_id="a"), convention)
    b = score_run(_run(pairs_b, run_id="b"), convention)
    both = combine([a, b])
    alone = headline_metrics(a)
    inside = headline_metrics(both.run("a"))
    assert all(_same(alone[k], inside[k]) for k in alone), (alone, inside)
    for key, fn, _ in HEADLINE:
        grouped = fn(both, by="run_id").set_index("run_id")[key]
        assert _same(float(grouped["a"]), alone[key]), key
        assert _same(float(grouped["b"]), headline_metrics(b)[key]), key


@pytest.mark.slow
@FAST
@given(dialogues)
def test_metrics_stay_in_unit_interval_and_jga_bounds(pairs) -> None:
    scored = score_run(_run(pairs), "exact")
    values = headline_metrics(scored)
    for key, value in values.items():
        if key == "slot_accuracy_trade":  # compute_acc goes below 0 once errors outnumber ontology slots
            assert math.isnan(value) or value <= 1.0
            continue
        assert math.isnan(value) or 0.0 <= value <= 1.0, key
    # A jointly correct turn has every gold triple right, so JGA never exceeds the share of turns
    # whose domain-slot F1 is perfect or whose gold is empty.
    assert values["jga"] <= values["joint_f1_trade"] + 1e-12


def test_metrics_of_changes_follow_turn_order_not_row_order() -> None:
    """The case hypothesis found: FGA, turn-level accuracy and GCA read a dialogue's previous turn, so a
    Run whose turns table is not in turn order (built in a notebook, shuffled here) must score the same."""
    run = _run([[({}, {}), ({}, {}), ({}, {"hotel": {"area": "east"}})]])
    shuffled = type(run)(
        run.meta,
        run.turns.iloc[[0, 2, 1]].reset_index(drop=True),
        run.gold,
        run.pred,
        run.listed_slots,
        run.alignment,
    )
    a = headline_metrics(score_run(run, "exact"))
    b = headline_metrics(score_run(shuffled, "exact"))
    assert a["gca"] == 0.0 and all(_same(a[k], b[k]) for k in a), (a, b)
