"""Each convention named after a scorer reproduces what that scorer prints on real files.

The targets are ../shared/realdata/scorer_oracles/README.md: numbers the official code (mwzeval,
ConvLab-2's DSTC9 `eval_states`, TRADE's `evaluate_metrics`, ConvLab-3's `evaluate`) printed, run
unchanged on these files, and one-rule cases with the official verdicts. Every test skips with the
missing file named when ../shared is absent.
"""

from __future__ import annotations

import json

import pytest

from analysis import metrics as M
from analysis.loading import load_run
from analysis.scoring import score_run
from tests.conftest import realdata_path

pytestmark = pytest.mark.realdata


def _oracle(name: str):
    return realdata_path("scorer_oracles", name)


def _headline(scored) -> dict[str, float]:
    prf = M.slot_prf_micro(scored)
    assert isinstance(prf, dict)
    return {
        "jga": float(M.joint_goal_accuracy(scored)),
        "f1": prf["f1"],
        "precision": prf["precision"],
        "recall": prf["recall"],
    }


def _close(got: dict[str, float], want: dict[str, float]) -> None:
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=5e-5), (key, got[key], value)


# --- mwzeval: Evaluator(dst=True) -------------------------------------------------------------------

# file: (official JGA, F1, P, R, turns), (same names, all turns: JGA, F1, P, R)
MWZEVAL = {
    "augpt": ((0.383885, 0.709434, 0.717287, 0.701751, 7372), (0.562534, 0.903178, 0.913176, 0.893396)),
    "dots": ((0.332067, 0.684911, 0.708652, 0.662708, 7372), (0.448318, 0.885721, 0.916423, 0.857009)),
    "pptod": ((0.342423, 0.686080, 0.718939, 0.656093, 7371), (0.471514, 0.889223, 0.931884, 0.850297)),
    "soloist": ((0.356213, 0.766514, 0.903797, 0.665437, 7372), (0.356213, 0.766514, 0.903797, 0.665437)),
    "ubar": ((0.324742, 0.668870, 0.684104, 0.654300, 7372), (0.431633, 0.862773, 0.882422, 0.843979)),
}


@pytest.mark.parametrize("system", list(MWZEVAL))
def test_mwzeval_official_and_lenient_columns(system: str) -> None:
    run = load_run(realdata_path("mwzeval_outputs", f"{system}.json"), realdata_path("multiwoz21", "test.json.zip"))
    assert run.meta.convention == "mwzeval"  # the format's own convention by default
    official, lenient = MWZEVAL[system]
    scored = score_run(run, "mwzeval")
    _close(_headline(scored), dict(zip(("jga", "f1", "precision", "recall"), official[:4], strict=True)))
    assert len(scored.turns) == official[4]  # only the turns the prediction file holds
    assert run.alignment.gold_turns == 7372  # ... while the alignment report still counts every gold turn
    _close(
        _headline(score_run(run, "mwzeval-lenient")),
        dict(zip(("jga", "f1", "precision", "recall"), lenient, strict=True)),
    )


def test_pptod_missing_turn_is_counted_and_named() -> None:
    run = load_run(realdata_path("mwzeval_outputs", "pptod.json"), realdata_path("multiwoz21", "test.json.zip"))
    assert run.alignment.missing_turns == 1
    scored = score_run(run, "mwzeval")
    warnings = scored.alignment[run.meta.run_id]["warnings"]
    assert any("not scored under mwzeval" in w for w in warnings)
    assert len(score_run(run, "mwzeval-lenient").turns) == 7372


MWZEVAL_CASES = {
    "t1_time4digits": True,
    "t2_type_space": True,
    "t3_name_canon": True,
    "t4_parking_free": True,
    "t5_pred_none": False,
    "t6_fuzzy": False,
    "t7_bookday_22": False,
}


def test_mwzeval_cases() -> None:
    scored = score_run(load_run(_oracle("mwzeval_cases.jsonl")), "mwzeval")
    got = dict(zip(scored.turns["dialogue_id"], scored.turns["joint_correct"].astype(bool), strict=True))
    assert got == MWZEVAL_CASES


def test_ubar_guesthouse_is_no_longer_an_error() -> None:
    """mwzeval maps `guest house` to `guesthouse`: the Slots page must not count it as wrong."""
    run = load_run(realdata_path("mwzeval_outputs", "ubar.json"), realdata_path("multiwoz21", "test.json.zip"))
    slots = score_run(run, "mwzeval").slots
    wrong = slots[(slots["outcome"] == "wrong_value") & (slots["domain"] == "hotel") & (slots["slot"] == "type")]
    pairs = set(zip(wrong["gold_value"], wrong["pred_value"], strict=True))
    assert ("guesthouse", "guest house") not in pairs and ("guest house", "guesthouse") not in pairs


# --- DSTC9 track 2: eval_states ---------------------------------------------------------------------

DSTC9 = [
    (
        "dstc9_sub_crosswoz_ruledst.json.gz",
        "crosswoz_test.json",
        "crosswoz",
        (0.706701, 0.984853, 0.929889, 0.966582, 0.947880),
    ),
    (
        "dstc9_sub_multiwoz_zh_test_perturbed.json.gz",
        "multiwoz_zh_test.json",
        "multiwoz",
        (0.482908, 0.975572, 0.920867, 0.919987, 0.920427),
    ),
    (
        "dstc9_sub_crosswoz_en_test_perturbed.json.gz",
        "crosswoz_en_test.json",
        "crosswoz",
        (0.468381, 0.971712, 0.915731, 0.915395, 0.915563),
    ),
]


@pytest.mark.parametrize(("submission", "gold", "subtask", "want"), DSTC9)
def test_dstc9_eval_states(submission: str, gold: str, subtask: str, want: tuple[float, ...]) -> None:
    run = load_run(_oracle(submission), realdata_path("dstc9_shaped_gold", gold))
    assert run.meta.convention == "dstc9"
    scored = score_run(run)
    assert scored.convention.subtask == subtask  # chosen from the data
    got = _headline(scored) | {"slot_accuracy": float(M.slot_accuracy(scored))}
    _close(got, dict(zip(("jga", "slot_accuracy", "precision", "recall", "f1"), want, strict=True)))


def test_dstc9_all_empty_submission_prints_precision_one(tmp_path) -> None:
    gold_path = realdata_path("dstc9_shaped_gold", "multiwoz_zh_test.json")
    gold = json.loads(gold_path.read_text(encoding="utf-8"))
    empty = {
        d: [{dom: dict.fromkeys(slots, "") for dom, slots in t["state"].items()} for t in turns]
        for d, turns in gold.items()
    }
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(empty, ensure_ascii=False), encoding="utf-8")
    scored = score_run(load_run(path, gold_path), "dstc9")
    got = _headline(scored) | {"slot_accuracy": float(M.slot_accuracy(scored))}
    _close(got, {"jga": 0.014514, "slot_accuracy": 0.810818, "precision": 1.0, "recall": 0.0, "f1": 0.0})


def test_dstc9_cases() -> None:
    scored = score_run(load_run(_oracle("dstc9_cases_submission.json"), _oracle("dstc9_cases_gold.json")), "dstc9")
    got = dict(zip(scored.turns["dialogue_id"], scored.turns["joint_correct"].astype(bool), strict=True))
    assert got == {"d1": False, "d2": False, "d3": True, "d4": True}
    assert M.joint_goal_accuracy(scored) == 0.5
    assert M.slot_accuracy(scored) == pytest.approx(0.75)
    assert scored.convention.subtask == "multiwoz"


# --- TRADE: evaluate_metrics --------------------------------------------------------------------------


def test_trade_two_values_for_one_slot_are_literal_sets() -> None:
    scored = score_run(load_run(_oracle("trade_cases.json")), "trade")
    assert M.joint_goal_accuracy(scored) == 0.0
    assert M.joint_f1_trade(scored) == pytest.approx(0.666667, abs=5e-7)


def test_trade_mlcsg_numbers_hold() -> None:
    scored = score_run(load_run(realdata_path("mlcsg", "all_prediction_TRADE.json")), "trade")
    assert M.joint_goal_accuracy(scored) == pytest.approx(0.519408, abs=5e-7)
    assert M.slot_accuracy_trade(scored) == pytest.approx(0.972471, abs=5e-7)
    assert M.joint_f1_trade(scored) == pytest.approx(0.904980, abs=5e-7)


def _seed_recipe(turns: list[tuple[set, set]]) -> float:
    """The seed's `compute_metrics` slot F1, applied literally to (domain, slot, value) sets."""
    scores = []
    for pred, gold in turns:
        f1s = []
        for slot in {s for _, s, _ in gold}:
            g = {v for _, s, v in gold if s == slot}
            p = {v for _, s, v in pred if s == slot}
            tp = len(g & p)
            prec = tp / len(p) if p else 0
            rec = tp / len(g) if g else 0
            f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0)
        scores.append(sum(f1s) / len(f1s) if f1s else 0)
    return sum(scores) / len(scores)


def test_seed_slot_f1_is_keyed_by_the_files_slot_names() -> None:
    """TRADE writes `hotel-book day` and `train-day`: the recipe keeps `book day` and `day` apart, and so
    must every convention, whatever aliases it compares names under."""
    path = realdata_path("mlcsg", "all_prediction_TRADE.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = []
    for dialogue in data.values():
        for turn in dialogue.values():
            turns.append(tuple({tuple(t.split("-", 2)) for t in turn[k]} for k in ("pred_bs_ptr", "turn_belief")))
    literal = _seed_recipe(turns)
    # Under trade (literal strings, aliases `book day` -> `day` for every other metric) the recipe's number.
    assert M.slot_f1_seed(score_run(load_run(path), "trade")) == pytest.approx(literal, abs=1e-9)
    assert abs(literal - 0.8943) > 1e-4  # the value the alias-pooled key gave before


# --- ConvLab-3: evaluate_unified_datasets.evaluate ----------------------------------------------------


def test_convlab3_augpt_file() -> None:
    run = load_run(_oracle("convlab3_augpt_predictions.json.gz"))
    assert run.meta.convention == "convlab3"
    scored = score_run(run)
    _close(_headline(scored), {"jga": 0.492675, "f1": 0.886202, "precision": 0.909029, "recall": 0.864493})
    assert len(scored.turns) == 7372


CONVLAB3_CASES = {
    "c01_whitespace_deleted": True,
    "c02_case": True,
    "c03_pred_alternatives": True,
    "c04_gold_alternatives": True,
    "c05_unlisted_slot_ignored": True,
    "c06_unlisted_domain_ignored": True,
    "c07_pred_on_empty_gold": False,
    "c08_pred_none_is_value": False,
    "c09_dontcare_value": True,
    "c10_dontcare_missed": False,
    "c11_no_substring": False,
    "c12_all_empty": True,
    "c13_pred_empty_string": True,
    "c14_internal_spaces_time": True,
}


def test_convlab3_cases() -> None:
    scored = score_run(load_run(_oracle("convlab3_cases.json")))
    got = dict(zip(scored.turns["dialogue_id"], scored.turns["joint_correct"].astype(bool), strict=True))
    assert got == CONVLAB3_CASES
    _close(_headline(scored), {"jga": 0.714286, "f1": 0.8, "precision": 0.769231, "recall": 0.833333})


def test_convlab3_precision_is_zero_when_nothing_is_predicted(tmp_path) -> None:
    sample = {
        "dialogue_id": "d",
        "utt_idx": 0,
        "utterance": "u",
        "state": {"hotel": {"area": "east"}},
        "predictions": {"state": {}},
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    prf = M.slot_prf_micro(score_run(load_run(path)))
    assert (prf["precision"], prf["recall"], prf["f1"]) == (0.0, 0.0, 0.0)
