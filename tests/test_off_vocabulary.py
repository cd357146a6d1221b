"""Off-vocabulary predictions never refuse a file (issue 38.4).

A predicted (domain, slot) that the gold file and the convention's ontology never use is a wrong
prediction, as the scorers count it: TRADE (`models/TRADE.py::evaluate_metrics`) compares sets of
`domain-slot-value` strings, so any such string breaks the turn's joint accuracy; its `compute_acc`
charges it as a wrong prediction (its name, found by `rsplit('-', 1)`, is never a missed gold slot's);
its `compute_prf` counts it a false positive. Here it is the outcome `off_vocabulary`, counted with the
spurious slots. Gold stays strict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.errors import InputError
from analysis.formats import parse_file
from analysis.loading import load_run
from analysis.outcomes import ERROR_OUTCOMES, Outcome
from analysis.scoring import OFF_VOCABULARY_NOTE, score_run
from analysis.suite import metric_suite
from analysis.views import outcome_mix
from tests.conftest import realdata_path

INJECTED = ["2-norfolk street", "hotel-wifi-yes", "arriveby"]


def _trade_scores(data: dict) -> tuple[int, float, float]:
    """TRADE's own formulas, written from evaluate_metrics / compute_acc / compute_prf: joint-correct turns,
    mean slot accuracy over the 30 slots, mean joint F1."""
    joint, acc_total, f1_total, n = 0, 0.0, 0.0, 0
    for turns in data.values():
        for body in turns.values():
            gold, pred = set(body["turn_belief"]), set(body["pred_bs_ptr"])
            n += 1
            joint += gold == pred
            missed = [g.rsplit("-", 1)[0] for g in gold if g not in pred]
            wrong = sum(1 for p in pred if p not in gold and p.rsplit("-", 1)[0] not in missed)
            acc_total += (30 - len(missed) - wrong) / 30
            if gold:
                tp = len(gold & pred)
                precision = tp / len(pred) if pred else 0
                recall = tp / len(gold)
                f1_total += 2 * precision * recall / (precision + recall) if precision + recall else 0
            else:
                f1_total += 1.0 if not pred else 0.0
    return joint, acc_total / n, f1_total / n


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[tuple[str, str]]]:
    data = json.loads(realdata_path("mlcsg", "all_prediction_TRADE.json").read_text(encoding="utf-8"))
    correct = [
        (d, t)
        for d, turns in data.items()
        for t, body in turns.items()
        if set(body["turn_belief"]) == set(body["pred_bs_ptr"]) and body["turn_belief"]
    ]
    chosen = correct[100:103]  # three joint-correct turns, one off-vocabulary string each
    for (d, t), item in zip(chosen, INJECTED, strict=True):
        data[d][t]["pred_bs_ptr"] = [*data[d][t]["pred_bs_ptr"], item]
    path = tmp_path_factory.mktemp("oov") / "all_prediction_TRADE.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, data, chosen


@pytest.mark.realdata
def test_off_vocabulary_predictions_are_read_and_scored_as_trade_scores_them(injected: tuple) -> None:
    path, data, chosen = injected
    parsed = parse_file(path, use_cache=False)  # was refused whole: "'2-norfolk street' is not of the form ..."
    assert parsed.fmt == "trade"
    scored = score_run(load_run(path))
    assert scored.convention.name == "trade"
    result = metric_suite(scored)
    joint, accuracy, f1 = _trade_scores(data)
    assert joint == 3827 - 3  # the three turns were joint-correct before
    assert result["jga"] == pytest.approx(joint / 7368)
    assert result["slot_accuracy_trade"] == pytest.approx(accuracy)
    assert result["joint_f1_trade"] == pytest.approx(f1)
    turns = scored.turns.set_index(["dialogue_id", "turn_index"])
    for d, t in chosen:
        assert not turns.loc[(d, int(t)), "joint_correct"] and turns.loc[(d, int(t)), "n_spurious"] == 1

    # metrics --json: the count and examples; the outcome counts; the alignment note with examples
    assert result["outcomes"]["off_vocabulary"] == 3 and result["off_vocabulary"]["count"] == 3
    shown = {(e["domain"], e["slot"], e["value"]) for e in result["off_vocabulary"]["examples"]}
    assert shown == {
        ("(not domain-slot-value)", "2-norfolk street", "2-norfolk street"),
        ("hotel", "wifi", "yes"),
        ("(not domain-slot-value)", "arriveby", "arriveby"),
    }
    assert result["alignment"]["notes"][OFF_VOCABULARY_NOTE] == 3
    warning = next(w for w in result["alignment"]["warnings"] if "never use" in w)
    assert "'hotel-wifi'" in warning and "3 predicted slots" in warning

    # the pages' outcome views show it as its own error class
    mix = outcome_mix(scored, by="domain")
    assert mix.loc[mix["outcome"] == "off_vocabulary", "n"].sum() == 3
    assert "off_vocabulary" in ERROR_OUTCOMES and Outcome.OFF_VOCABULARY.shown == "∉ off-vocabulary"


@pytest.mark.realdata
def test_the_file_without_injection_keeps_its_numbers() -> None:
    result = metric_suite(score_run(load_run(realdata_path("mlcsg", "all_prediction_TRADE.json"))))
    assert result["jga"] == pytest.approx(3827 / 7368)
    assert round(result["slot_accuracy_trade"], 4) == 0.9725 and round(result["joint_f1_trade"], 4) == 0.9050
    assert result["off_vocabulary"] == {"count": 0, "examples": []}
    assert OFF_VOCABULARY_NOTE not in result["alignment"]["notes"]


def test_gold_stays_strict(tmp_path: Path) -> None:
    data = {"MUL0001.json": {"0": {"turn_belief": ["2-norfolk street"], "pred_bs_ptr": []}}}
    path = tmp_path / "trade.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        parse_file(path, use_cache=False)
    message = str(caught.value)
    assert "\n" not in message and "'2-norfolk street' is not of the form 'domain-slot-value'" in message
    assert "turn_belief" in message


def test_nested_prediction_of_unknown_slot_is_off_vocabulary(tmp_path: Path) -> None:
    """The other readers already read any name; scoring calls one outside the gold file and the declared
    vocabulary off-vocabulary (without a declared one, e.g. `exact` on a file listing only its filled
    slots, it stays spurious: a small gold file does not name every slot)."""
    rows = [
        {"dialogue_id": "d", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {"area": "east"}}},
        {
            "dialogue_id": "d",
            "turn_index": 1,
            "gold": {"hotel": {"area": "east"}},
            "pred": {"hotel": {"area": "east", "wifi": "yes"}},
        },
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = metric_suite(score_run(load_run(path), "trade"))  # a declared vocabulary: the 30 MultiWOZ slots
    assert result["jga"] == 0.5 and result["outcomes"]["off_vocabulary"] == 1 and result["outcomes"]["spurious"] == 0
    assert result["slot_precision"] == pytest.approx(2 / 3)
    assert metric_suite(score_run(load_run(path), "exact"))["outcomes"]["spurious"] == 1
