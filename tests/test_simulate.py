"""The simulated-system error model: determinism, rates near the profile, persistence, language penalty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.demo.simulate import (
    ErrorProfile,
    draw_predictions,
    perturb_run,
    prepare_gold,
    simulate_predictions,
    simulate_run,
)
from analysis.demo.testing import run_from_states
from analysis.loading import load_run
from analysis.metrics import joint_goal_accuracy
from analysis.model import STATE_COLUMNS, Run, RunInfo
from analysis.scoring import score_run
from tests.conftest import realdata_path

# Rates only at update turns, no spurious slots and no per-slot spread: observed rates are the profile's.
PLAIN = ErrorProfile(miss=0.08, wrong=0.05, spurious=0.0, carry=0.0, slot_spread=0.0)


def synthetic_gold(n_dialogues: int = 1500, n_turns: int = 6) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Dialogues where slots are set at turns 0, 1 and 2 and change value at turns 3 and 4; every fifth
    dialogue books a taxi at its last turn (a rare slot, so spurious slots have somewhere to land)."""
    rng = np.random.default_rng(0)
    rows = []
    turns = []
    for d in range(n_dialogues):
        dialogue = f"d{d:04d}"
        area, food, day = rng.choice(["east", "west", "north", "south"]), rng.choice(["thai", "indian"]), "monday"
        for t in range(n_turns):
            turns.append((dialogue, t))
            rows.append((dialogue, t, "restaurant", "area", "=", str(area)))
            if t >= 2:
                rows.append((dialogue, t, "restaurant", "food", "=", str(food) if t < 4 else "chinese"))
            if t >= 1:
                rows.append((dialogue, t, "hotel", "day", "=", day if t < 3 else "friday"))
            rows.append((dialogue, t, "hotel", "name", "=", "not mentioned"))
            if d % 5 == 0 and t == n_turns - 1:
                rows.append((dialogue, t, "taxi", "leaveAt", "=", "10:00" if d % 2 else "11:15"))
    return (
        pd.DataFrame(rows, columns=STATE_COLUMNS).astype({"turn_index": "int64"}),
        pd.DataFrame(turns, columns=["dialogue_id", "turn_index"]).astype({"turn_index": "int64"}),
    )


def run_of(gold: pd.DataFrame, turns: pd.DataFrame, pred: pd.DataFrame, history: str = "predicted") -> Run:
    base = run_from_states({"x": [{}]}, {"x": [{}]}, history=history)
    table = turns.assign(user="", system="", pred_missing=False).astype({"user": "str", "system": "str"})
    return Run(base.meta, table, gold, pred, frozenset(), base.alignment)


def jga(gold: pd.DataFrame, turns: pd.DataFrame, pred: pd.DataFrame) -> float:
    return float(joint_goal_accuracy(score_run(run_of(gold, turns, pred), "exact")))


def outcome_frame(gold: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    """Each non-empty gold row with its predicted value (NaN when missed)."""
    keys = ["dialogue_id", "turn_index", "domain", "slot"]
    real = gold[gold["value"] != "not mentioned"]
    return real.merge(pred[[*keys, "value"]].rename(columns={"value": "pred"}), on=keys, how="left")


def test_same_seed_same_output_and_other_seed_differs() -> None:
    gold, turns = synthetic_gold(200)
    first = simulate_predictions(gold, turns, profile=ErrorProfile(), history="predicted", seed=7)
    again = simulate_predictions(gold, turns, profile=ErrorProfile(), history="predicted", seed=7)
    other = simulate_predictions(gold, turns, profile=ErrorProfile(), history="predicted", seed=8)
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(other)
    assert list(first.columns) == STATE_COLUMNS


def test_output_does_not_depend_on_input_row_order() -> None:
    gold, turns = synthetic_gold(100)
    shuffled = gold.sample(frac=1.0, random_state=3)
    a = simulate_predictions(gold, turns, profile=ErrorProfile(), history="predicted", seed=1)
    b = simulate_predictions(shuffled, turns.iloc[::-1], profile=ErrorProfile(), history="predicted", seed=1)
    pd.testing.assert_frame_equal(a, b)


def test_a_perfect_profile_returns_the_non_empty_gold() -> None:
    gold, turns = synthetic_gold(20)
    perfect = ErrorProfile(miss=0.0, wrong=0.0, spurious=0.0)
    pred = simulate_predictions(gold, turns, profile=perfect, history="predicted", seed=1)
    assert len(pred) == int((gold["value"] != "not mentioned").sum())
    assert "not mentioned" not in set(pred["value"])
    assert jga(gold, turns, pred) == 1.0


@pytest.mark.parametrize("history", ["gold", "predicted"])
def test_update_turn_rates_land_near_the_profile(history: str) -> None:
    # Fresh errors happen at update turns with the profile's rates in both modes: persistence ends
    # when the gold changes the slot, so it never inflates the rate at an update turn.
    gold, turns = synthetic_gold()
    pred = simulate_predictions(gold, turns, profile=PLAIN, history=history, seed=5)
    rows = outcome_frame(gold, pred)
    prepared = prepare_gold(gold, turns)
    updates = prepared.rows.assign(update=prepared.pos == 0)[["dialogue_id", "turn_index", "domain", "slot", "update"]]
    rows = rows.merge(updates, on=["dialogue_id", "turn_index", "domain", "slot"])
    at_update = rows[rows["update"]]
    assert len(at_update) > 5000
    assert at_update["pred"].isna().mean() == pytest.approx(PLAIN.miss, abs=0.012)
    wrong = at_update["pred"].notna() & (at_update["pred"] != at_update["value"])
    assert wrong.mean() == pytest.approx(PLAIN.wrong, abs=0.01)
    carried = rows[~rows["update"]]
    errors = carried["pred"].isna() | (carried["pred"] != carried["value"])
    if history == "gold":
        assert errors.sum() == 0  # carry = 0 and nothing carries over with gold history
    else:
        assert errors.mean() > 0.02  # errors persist into the following turns


@pytest.mark.realdata
def test_rates_on_real_multiwoz_gold_and_per_slot_spread() -> None:
    path = realdata_path("multiwoz21", "test.json.zip")
    run = load_run(path, path)
    profile = ErrorProfile(miss=0.07, wrong=0.0, spurious=0.0, carry=0.0, slot_spread=0.6, slot_seed=4)
    pred = simulate_predictions(run.gold, run.turns, profile=profile, history="gold", seed=2)
    prepared = prepare_gold(run.gold, run.turns)
    rows = outcome_frame(prepared.rows[prepared.pos == 0], pred)
    # Slot factors average 1 over update turns, so the overall miss rate is the profile's.
    assert rows["pred"].isna().mean() == pytest.approx(profile.miss, abs=0.01)
    per_slot = rows.assign(missed=rows["pred"].isna()).groupby(["domain", "slot"])["missed"].agg(["mean", "size"])
    frequent = per_slot[per_slot["size"] >= 300]["mean"]
    assert frequent.max() > 2 * frequent.min()  # rates really differ per slot


def test_wrong_values_come_from_the_slot_and_differ_from_gold() -> None:
    gold, turns = synthetic_gold(400)
    pred = simulate_predictions(gold, turns, profile=ErrorProfile(wrong=0.3), history="gold", seed=3)
    rows = outcome_frame(gold, pred)
    wrong = rows[rows["pred"].notna() & (rows["pred"] != rows["value"])]
    assert len(wrong) > 100
    seen = gold.groupby("slot")["value"].agg(set)
    assert all(v in seen[s] for s, v in zip(wrong["slot"], wrong["pred"], strict=True))


def test_spurious_slots_never_collide_with_gold_and_persist_with_predicted_history() -> None:
    gold, turns = synthetic_gold(400)
    profile = ErrorProfile(miss=0.0, wrong=0.0, spurious=0.3, persist=0.8)
    keys = ["dialogue_id", "turn_index", "domain", "slot"]
    real = gold[gold["value"] != "not mentioned"]
    counts = {}
    spurious = {}
    for history in ("gold", "predicted"):
        pred = simulate_predictions(gold, turns, profile=profile, history=history, seed=9)
        extra = pred.merge(real[keys], on=keys, how="left", indicator=True)
        extra = extra[extra["_merge"] == "left_only"]
        assert not pred.duplicated(keys).any()
        assert len(pred) - len(extra) == len(real)  # every gold row is kept, nothing spurious replaced one
        counts[history] = len(extra)
        spurious[history] = set(extra[keys].itertuples(index=False))
    assert counts["gold"] > 100
    # The same draws, carried over with predicted history (where a carried slot may keep its older value).
    assert spurious["gold"] <= spurious["predicted"]
    assert counts["predicted"] > 1.2 * counts["gold"]


def test_persistence_lowers_jga_and_gold_history_errors_are_a_subset() -> None:
    gold, turns = synthetic_gold(600)
    profile = ErrorProfile()
    scores = {}
    wrong_turns = {}
    for history in ("predicted", "gold"):
        pred = simulate_predictions(gold, turns, profile=profile, history=history, seed=4)
        scored = score_run(run_of(gold, turns, pred), "exact")
        scores[history] = joint_goal_accuracy(scored)
        facts = scored.turns
        wrong = facts[~facts["joint_correct"]]
        wrong_turns[history] = set(zip(wrong["dialogue_id"], wrong["turn_index"], strict=True))
    assert scores["predicted"] < scores["gold"] - 0.05
    assert wrong_turns["gold"] <= wrong_turns["predicted"]


def test_without_persistence_both_histories_agree() -> None:
    gold, turns = synthetic_gold(200)
    profile = ErrorProfile(persist=0.0, spurious=0.05)
    predicted = simulate_predictions(gold, turns, profile=profile, history="predicted", seed=1)
    given = simulate_predictions(gold, turns, profile=profile, history="gold", seed=1)
    pd.testing.assert_frame_equal(predicted, given)


def test_weaker_language_and_weaker_system_score_lower() -> None:
    gold, turns = synthetic_gold(800)
    base = ErrorProfile()
    prepared = prepare_gold(gold, turns)

    def score(profile: ErrorProfile, seed: int) -> float:
        return jga(gold, turns, draw_predictions(prepared, profile=profile, history="predicted", seed=seed))

    strong, weak_language = score(base, 1), score(base.in_language(1.6), 2)
    weak_system = score(ErrorProfile(strength=0.6), 3)
    assert weak_language < strong - 0.03
    assert weak_system < strong - 0.03


@pytest.mark.realdata
def test_weaker_language_on_real_multiwoz_pair() -> None:
    en, zh = realdata_path("multiwoz21", "test.json.zip"), realdata_path("multiwoz_zh", "test.json.zip")
    profile = ErrorProfile(slot_seed=1)
    scores = {}
    for name, path, penalty, seed in (("en", en, 1.0, 11), ("zh", zh, 1.5, 12)):
        run = load_run(path, path, meta=RunInfo(language=name))
        simulated = simulate_run(run, profile=profile.in_language(penalty), seed=seed)
        scores[name] = joint_goal_accuracy(score_run(simulated, "exact"))
    assert 0.2 < scores["zh"] < scores["en"] - 0.05 < 0.9


def test_perturb_run_makes_distinct_seeded_runs() -> None:
    gold, turns = synthetic_gold(100)
    run = run_of(gold, turns, gold)
    runs = perturb_run(run, n_runs=4, seed=3)
    again = perturb_run(run, n_runs=2, seed=3)
    assert [r.meta.run_id for r in runs] == ["simulated-0", "simulated-1", "simulated-2", "simulated-3"]
    assert all("simulated" in r.meta.system for r in runs)
    assert not runs[0].pred.equals(runs[1].pred)
    pd.testing.assert_frame_equal(runs[1].pred, again[1].pred)
    assert all(r.alignment.ok and not r.turns["pred_missing"].any() for r in runs)
    gold_history = perturb_run(run, n_runs=1, seed=3, history="gold")[0]
    assert gold_history.meta.history == "gold"


def test_bad_profiles_and_history_are_refused_with_the_allowed_values() -> None:
    with pytest.raises(ValueError, match=r"miss has to be a probability in \[0, 1\]"):
        ErrorProfile(miss=1.5)
    with pytest.raises(ValueError, match="persist has to be below 1"):
        ErrorProfile(persist=1.0)
    with pytest.raises(ValueError, match="strength has to be positive"):
        ErrorProfile(strength=0)
    gold, turns = synthetic_gold(3)
    with pytest.raises(ValueError, match="history has to be one of predicted, gold"):
        simulate_predictions(gold, turns, profile=ErrorProfile(), history="oracle", seed=1)
