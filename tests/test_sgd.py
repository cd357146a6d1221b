"""SGD / MultiWOZ 2.2 input and the `sgd` convention: the SGD evaluator's own numbers.

Real files: ../shared/realdata/sgd (gold test dialogues 001..008, test and train schema) and
../shared/realdata/scorer_oracles/sgd (perturbed prediction copies, the evaluator's outputs and its
per-frame scores). Hand-made cases pin each of the evaluator's rules (README of the oracles, "SGD").
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis.errors import InputError
from analysis.formats import detect_format, format_names, parse_file
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.sgd import (
    ALL_SERVICES,
    SEEN_SERVICES,
    UNSEEN_SERVICES,
    evaluate,
    fuzzy_score,
    read_dialogues,
    read_schema,
)
from tests.conftest import ROOT, realdata_path

# --- hand-made data ---------------------------------------------------------------------------------

SCHEMA = [
    {
        "service_name": "Hotels_1",
        "slots": [
            {"name": "city", "is_categorical": False},
            {"name": "stars", "is_categorical": True},
            {"name": "name", "is_categorical": False},
        ],
        "intents": [{"name": "Find"}, {"name": "Book"}],
    },
    {
        "service_name": "Alarm_1",
        "slots": [{"name": "alarm_time", "is_categorical": False}],
        "intents": [{"name": "Add"}],
    },
]
TRAIN_SCHEMA = [SCHEMA[0]]


def frame(service: str, values: dict[str, list[str]], intent: str = "Find", requested: list[str] | None = None):
    return {
        "service": service,
        "slots": [],
        "state": {"active_intent": intent, "requested_slots": requested or [], "slot_values": values},
    }


def dialogue(dialogue_id: str, *turn_frames: list[dict[str, Any]]) -> dict[str, Any]:
    turns = []
    for i, frames in enumerate(turn_frames):
        turns.append({"speaker": "USER", "utterance": f"user {i}", "frames": frames})
        turns.append({"speaker": "SYSTEM", "utterance": f"system {i}", "frames": []})
    services = sorted({f["service"] for frames in turn_frames for f in frames})
    return {"dialogue_id": dialogue_id, "services": services, "turns": turns}


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def score(tmp_path: Path, gold: list[dict[str, Any]], pred: list[dict[str, Any]], train: bool = True):
    g = write(tmp_path / "gold" / "dialogues_001.json", gold)
    p = write(tmp_path / "pred" / "dialogues_001.json", pred)
    s = write(tmp_path / "gold" / "schema.json", SCHEMA)
    t = write(tmp_path / "train" / "schema.json", TRAIN_SCHEMA) if train else None
    return evaluate(g, p, s, t)


def with_values(d: dict[str, Any], turn: int, service: str, values: dict[str, list[str]]) -> dict[str, Any]:
    out = copy.deepcopy(d)
    user = [t for t in out["turns"] if t["speaker"] == "USER"][turn]
    next(f for f in user["frames"] if f["service"] == service)["state"]["slot_values"] = values
    return out


GOLD = dialogue(
    "d1",
    [frame("Hotels_1", {"city": ["New York", "NYC"], "stars": ["4"]})],
    [frame("Hotels_1", {"city": ["New York"], "stars": ["4"], "name": ["The Plaza"]}), frame("Alarm_1", {})],
)


# --- the nine rules ---------------------------------------------------------------------------------


def test_rule1_scores_are_means_over_frames(tmp_path: Path) -> None:
    # Turn 0: one slot of two wrong (average 0.5); turn 1: all right (Hotels 1.0) and the Alarm frame
    # has no active slot (average NA). Mean over frames with a value: (0.5 + 1) / 2, not over slots (4/5).
    pred = with_values(GOLD, 0, "Hotels_1", {"city": ["New York"], "stars": ["5"]})
    result = score(tmp_path, [GOLD], [pred])
    assert result.table[ALL_SERVICES]["average_goal_accuracy"] == pytest.approx(0.75)
    assert result.table[ALL_SERVICES]["joint_goal_accuracy"] == pytest.approx(2 / 3)  # 0, 1, 1 (Alarm: none, none)
    assert len(result.frames) == 3


def test_rule2_only_gold_frames_count_and_missing_frames_are_empty_predictions(tmp_path: Path) -> None:
    pred = copy.deepcopy(GOLD)
    pred["turns"][0]["frames"].append(frame("Alarm_1", {"alarm_time": ["6 am"]}))  # service not in gold turn
    del pred["turns"][2]["frames"][1]  # the Alarm frame of user turn 1: the evaluator would crash
    result = score(tmp_path, [GOLD], [pred])
    assert result.ignored_pred_frames == 1
    assert result.missing_frames == 1
    missing = result.frames[result.frames["pred_missing"]].iloc[0]
    assert (missing["service"], missing["turn_index"]) == ("Alarm_1", 1)
    assert missing["active_intent_accuracy"] == 0.0  # no predicted intent
    assert missing["joint_goal_accuracy"] == 1.0  # nothing active, nothing predicted
    assert math.isnan(missing["slot_tagging_f1"])  # no predicted span list
    assert result.table[ALL_SERVICES]["active_intent_accuracy"] == pytest.approx(2 / 3)


def test_rule2_a_missing_dialogue_is_scored_empty_not_dropped(tmp_path: Path) -> None:
    # The evaluator scores only the dialogues the prediction holds; here every gold frame counts.
    other = copy.deepcopy(GOLD)
    other["dialogue_id"] = "d2"
    result = score(tmp_path, [GOLD, other], [GOLD])
    assert result.missing_frames == 3 and len(result.frames) == 6
    assert result.table[ALL_SERVICES]["active_intent_accuracy"] == pytest.approx(0.5)


def test_rule2_no_state_carried_forward(tmp_path: Path) -> None:
    # A turn whose predicted frame is empty is wrong, whatever the previous turn predicted.
    pred = with_values(GOLD, 1, "Hotels_1", {})
    result = score(tmp_path, [GOLD], [pred])
    hotel1 = result.frames[(result.frames["service"] == "Hotels_1") & (result.frames["turn_index"] == 1)].iloc[0]
    assert hotel1["joint_goal_accuracy"] == 0.0 and hotel1["average_goal_accuracy"] == 0.0


def test_rule3_seen_is_per_frame(tmp_path: Path) -> None:
    result = score(tmp_path, [GOLD], [GOLD])
    assert result.frames.set_index("service")["seen"].to_dict() == {"Hotels_1": True, "Alarm_1": False}
    assert set(result.table) == {ALL_SERVICES, SEEN_SERVICES, UNSEEN_SERVICES, "Hotels", "Hotels_1", "Alarm", "Alarm_1"}
    no_train = score(tmp_path / "b", [GOLD], [GOLD], train=False)
    assert set(no_train.table) == {ALL_SERVICES, "Hotels", "Hotels_1", "Alarm", "Alarm_1"}


def test_rule4_spurious_slots_lower_joint_not_average(tmp_path: Path) -> None:
    pred = with_values(GOLD, 0, "Hotels_1", {"city": ["New York"], "stars": ["4"], "name": ["Ritz"]})
    result = score(tmp_path, [GOLD], [pred])
    first = result.frames.iloc[0]
    assert first["average_goal_accuracy"] == 1.0
    assert first["joint_goal_accuracy"] == 0.0
    assert first["joint_noncat_accuracy"] == 0.0 and first["joint_cat_accuracy"] == 1.0


def test_rule5_categorical_is_exact_first_value(tmp_path: Path) -> None:
    gold = with_values(GOLD, 0, "Hotels_1", {"stars": ["four", "4"]})
    cases = {"four": 1.0, "Four": 0.0, "4": 0.0}  # case-sensitive; only the first gold value
    for value, expected in cases.items():
        pred = with_values(GOLD, 0, "Hotels_1", {"stars": [value, "four"]})  # only the first predicted value
        result = score(tmp_path / value, [gold], [pred])
        assert result.frames.iloc[0]["average_cat_accuracy"] == expected, value


def test_rule6_noncategorical_fuzzy_best_alternative_and_product(tmp_path: Path) -> None:
    assert fuzzy_score("New York", "york new") == 1.0  # lower-cased, words sorted
    assert fuzzy_score("6:30 pm", "6 30 PM") == 1.0  # punctuation removed
    assert fuzzy_score("Lan Hong House", "Ian Hong House") == 0.93  # rounded to a whole percent
    assert fuzzy_score("Café Roma", "Caf Roma") == 1.0  # U+0080..U+00FF deleted (fuzzywuzzy's force_ascii)
    pred = with_values(GOLD, 0, "Hotels_1", {"city": ["NYC!"], "stars": ["4"]})  # best of the gold alternatives
    result = score(tmp_path, [GOLD], [pred])
    assert result.frames.iloc[0]["average_noncat_accuracy"] == 1.0
    pred = with_values(GOLD, 1, "Hotels_1", {"city": ["Ney York"], "stars": ["4"], "name": ["The Plazza"]})
    result = score(tmp_path / "b", [GOLD], [pred])
    row = result.frames.iloc[1]
    a, b = fuzzy_score("New York", "Ney York"), fuzzy_score("The Plaza", "The Plazza")
    assert 0 < a < 1 and 0 < b < 1
    assert row["joint_goal_accuracy"] == pytest.approx(a * b)  # a product of fractions, not 0/1
    assert row["average_noncat_accuracy"] == pytest.approx((a + b) / 2)


def test_rule7_skipped_frames_and_services(tmp_path: Path) -> None:
    result = score(tmp_path, [GOLD], [GOLD])
    alarm = result.frames[result.frames["service"] == "Alarm_1"].iloc[0]
    assert math.isnan(alarm["average_goal_accuracy"])  # empty gold state
    assert math.isnan(alarm["joint_cat_accuracy"])  # Alarm_1 has no categorical slot
    assert "joint_cat_accuracy" not in result.table["Alarm_1"]
    assert "average_goal_accuracy" not in result.table["Alarm_1"]
    assert result.table["Alarm_1"]["joint_goal_accuracy"] == 1.0


def test_rule8_requested_slots_f1_empty_is_one(tmp_path: Path) -> None:
    gold = copy.deepcopy(GOLD)
    gold["turns"][0]["frames"][0]["state"]["requested_slots"] = ["city", "stars"]
    pred = copy.deepcopy(GOLD)
    pred["turns"][0]["frames"][0]["state"]["requested_slots"] = ["city", "name"]
    result = score(tmp_path, [gold], [pred])
    f1 = result.frames["requested_slots_f1"].tolist()
    assert f1 == [pytest.approx(0.5), 1.0, 1.0]  # empty vs empty frames count, as 1
    assert result.table[ALL_SERVICES]["requested_slots_f1"] == pytest.approx(2.5 / 3)


def test_rule9_fuzzy_library_matters() -> None:
    # python-Levenshtein's ratio (optimal Indel alignment), as the official numbers were printed with;
    # difflib's greedy matcher (fuzzywuzzy without python-Levenshtein) gives 0.46 on this pair.
    from difflib import SequenceMatcher

    assert fuzzy_score("ab bcbb", "a abca") == 0.62
    assert round(100 * SequenceMatcher(None, "ab bcbb", "a abca").ratio()) / 100 == 0.46


def test_unseen_without_slots_and_slot_tagging(tmp_path: Path) -> None:
    gold = copy.deepcopy(GOLD)
    gold["turns"][0]["utterance"] = "a hotel in New York"
    gold["turns"][0]["frames"][0]["slots"] = [{"slot": "city", "start": 11, "exclusive_end": 19}]
    pred = copy.deepcopy(gold)
    pred["turns"][0]["frames"][0]["slots"] = []
    del pred["turns"][2]["frames"][0]["slots"]  # no spans predicted: not scored for slot tagging
    result = score(tmp_path, [gold], [pred])
    recall = result.frames["slot_tagging_recall"].tolist()  # frames: turn 0 Hotels, turn 1 Hotels, Alarm
    assert recall[0] == 0.0 and math.isnan(recall[1]) and recall[2] == 1.0


# --- bad input: one message each -------------------------------------------------------------------


def _bad(tmp_path: Path, dialogues: Any) -> str:
    path = write(tmp_path / "bad" / "dialogues_001.json", dialogues)
    with pytest.raises(InputError) as info:
        read_dialogues(path)
    message = str(info.value)
    assert "\n" not in message and "[format: sgd]" in message and str(path) in message
    return message


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["turns"][0]["frames"][0].pop("state"), "no state object"),
        (lambda d: d["turns"][0]["frames"][0]["state"].update(slot_values={"city": "NYC"}), "non-empty list"),
        (lambda d: d["turns"][0]["frames"][0]["state"].update(slot_values={"city": []}), "non-empty list"),
        (lambda d: d["turns"][2]["frames"][0]["state"].update(active_intent=None), "active_intent"),
        (lambda d: d["turns"][2]["frames"][0]["state"].update(requested_slots="city"), "requested_slots"),
        (lambda d: d["turns"][2].update(speaker="BOT"), "speaker must be USER or SYSTEM"),
        (lambda d: d["turns"][2]["frames"].append(d["turns"][2]["frames"][0]), "two frames"),
    ],
)
def test_malformed_dialogue_names_dialogue_and_turn(tmp_path: Path, edit: Any, expected: str) -> None:
    d = copy.deepcopy(GOLD)
    edit(d)
    message = _bad(tmp_path, [d])
    assert expected in message and "dialogue 'd1'" in message and "turn " in message


def test_malformed_top_level_and_ids(tmp_path: Path) -> None:
    assert "JSON list of dialogues" in _bad(tmp_path / "a", {"d1": GOLD})
    assert "dialogue_id" in _bad(tmp_path / "b", [{"turns": []}])
    assert "occurs twice" in _bad(tmp_path / "c", [GOLD, GOLD])


def test_duplicate_dialogue_across_files_refused(tmp_path: Path) -> None:
    write(tmp_path / "dialogues_001.json", [GOLD])
    write(tmp_path / "dialogues_002.json", [GOLD])
    with pytest.raises(InputError, match=r"occurs twice \(also in dialogues_001.json\)"):
        read_dialogues(tmp_path)


def test_empty_directory_and_unknown_service_and_extra_dialogue(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no SGD dialogue files"):
        read_dialogues(tmp_path / "empty")
    other = copy.deepcopy(GOLD)
    other["turns"][0]["frames"][0]["service"] = "Trains_9"
    with pytest.raises(InputError, match="service 'Trains_9' is not in the schema"):
        score(tmp_path / "a", [other], [other])
    extra = copy.deepcopy(GOLD)
    extra["dialogue_id"] = "d2"
    with pytest.raises(InputError, match="not in the gold files"):
        score(tmp_path / "b", [GOLD], [GOLD, extra])
    changed = copy.deepcopy(GOLD)
    changed["turns"][2]["utterance"] = "something else"
    with pytest.raises(InputError, match="utterance differs"):
        score(tmp_path / "c", [GOLD], [changed])


def test_bad_schema(tmp_path: Path) -> None:
    path = write(tmp_path / "schema.json", [{"service_name": "X_1", "slots": [{"name": "a"}]}])
    with pytest.raises(InputError, match=r"\[format: sgd-schema\].*is_categorical"):
        read_schema(path)


# --- the evaluator's own outputs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    gold_dir = realdata_path("sgd")
    oracles = realdata_path("scorer_oracles", "sgd")
    return {
        "gold": read_dialogues(gold_dir),
        "schema": read_schema(gold_dir / "test_schema.json.gz"),
        "train": read_schema(gold_dir / "train_schema.json.gz"),
        "oracles": oracles,
    }


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["light", "heavy", "gold"])
def test_every_official_number(real: dict[str, Any], name: str) -> None:
    oracle = json.loads((real["oracles"] / f"official_{name}.json").read_text())
    pred = real["gold"] if name == "gold" else read_dialogues(real["oracles"] / f"pred_{name}")
    result = evaluate(real["gold"], pred, real["schema"], real["train"])
    assert set(result.table) == set(oracle)  # every collection: all / seen / unseen, services, domains
    for collection, metrics in oracle.items():
        assert set(result.table[collection]) == set(metrics), collection
        for metric, value in metrics.items():
            assert result.table[collection][metric] == pytest.approx(value, abs=5e-7), (collection, metric)
    assert result.missing_frames == 0
    assert len(result.frames) == 6623


@pytest.mark.realdata
def test_per_frame_agreement_with_official(real: dict[str, Any]) -> None:
    pred = read_dialogues(real["oracles"] / "pred_light")
    result = evaluate(real["gold"], pred, real["schema"], real["train"])
    official = json.loads(
        gzip.decompress((real["oracles"] / "per_frame" / "light_dialogues_and_metrics.json.gz").read_bytes())
    )
    ours = result.frames.set_index(["dialogue_id", "turn_index", "service"])
    compared = differing = 0
    for dialogue_id, d in official.items():
        user = -1
        for turn in d["turns"]:
            if turn["speaker"] != "USER":
                continue
            user += 1
            for f in turn["frames"]:
                if "metrics" not in f:
                    continue
                row = ours.loc[(dialogue_id, user, f["service"])]
                compared += 1
                for metric, value in f["metrics"].items():
                    mine = row[metric]
                    same = math.isnan(mine) if value == "NA" else abs(mine - value) < 1e-9
                    if not same:
                        differing += 1
                        break
    assert compared == 6623
    assert differing == 0


# --- the generic pipeline: format `sgd`, convention `sgd` --------------------------------------------


def test_format_detected_listed_and_read_from_a_directory(tmp_path: Path) -> None:
    assert "sgd" in format_names()
    spec = detect_format("json", [GOLD])
    assert spec is not None and spec.name == "sgd"
    write(tmp_path / "gold" / "dialogues_001.json", [GOLD])
    parsed = parse_file(tmp_path / "gold")
    assert parsed.fmt == "sgd"
    gold = parsed.gold
    assert gold is not None
    rows = set(zip(gold["turn_index"], gold["domain"], gold["slot"], gold["value"], strict=True))
    assert (0, "Hotels_1", "city", "New York|NYC") in rows  # acceptable values as `|` alternatives
    assert parsed.turns["user"].tolist() == ["user 0", "user 1"]
    assert parsed.turns["system"].tolist() == ["system 0", "system 1"]
    listed = _cli("formats")
    assert "sgd " in listed.stdout and "e.g. [{" in listed.stdout


def test_load_run_pred_dir_against_gold_dir_default_convention(tmp_path: Path) -> None:
    pred = with_values(GOLD, 0, "Hotels_1", {"city": ["nyc"], "stars": ["4"]})  # fuzzy 1.0 vs "NYC"
    pred = with_values(pred, 1, "Hotels_1", {"city": ["New York", "x"], "stars": ["4"], "name": ["Plaza"]})
    write(tmp_path / "gold" / "dialogues_001.json", [GOLD])
    write(tmp_path / "pred" / "dialogues_001.json", [pred])
    run = load_run(tmp_path / "pred", tmp_path / "gold")
    assert run.meta.convention == "sgd" and run.meta.formats == ("sgd", "sgd")
    scored = score_run(run, "sgd")
    outcome = {
        (t, s): o
        for t, s, o in zip(scored.slots["turn_index"], scored.slots["slot"], scored.slots["outcome"], strict=True)
    }
    assert outcome[(0, "city")] == "correct"  # any gold alternative, fuzzy score 1.0
    assert outcome[(1, "city")] == "correct"  # the first predicted value only
    assert outcome[(1, "name")] != "correct"  # "Plaza" vs "The Plaza": fuzzy 0.71, wrong when binary


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analysis", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
@pytest.mark.realdata
def test_cli_numbers_are_the_evaluators(tmp_path: Path) -> None:
    gold_dir = realdata_path("sgd")
    oracles = realdata_path("scorer_oracles", "sgd")
    oracle = json.loads((oracles / "official_heavy.json").read_text())
    common = [
        "--schema",
        str(gold_dir / "test_schema.json.gz"),
        "--train-schema",
        str(gold_dir / "train_schema.json.gz"),
    ]
    done = _cli("metrics", "--pred", str(oracles / "pred_heavy"), "--gold", str(gold_dir), *common, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["convention"] == "sgd"
    assert result["jga"] == pytest.approx(oracle[ALL_SERVICES]["joint_goal_accuracy"], abs=1e-9)
    assert result["aga"] == pytest.approx(oracle[ALL_SERVICES]["average_goal_accuracy"], abs=1e-9)
    assert set(result["sgd"]) == set(oracle)
    for collection, metrics in oracle.items():
        for metric, value in metrics.items():
            assert result["sgd"][collection][metric] == pytest.approx(value, abs=5e-7)
    assert result["per_domain_jga"]["Hotels_4"] == pytest.approx(oracle["Hotels_4"]["joint_goal_accuracy"])
    assert result["sgd_frames"]["missing_pred_frames"] == 0
    table = _cli("metrics", "--pred", str(oracles / "pred_heavy"), "--gold", str(gold_dir), *common)
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines() if line.strip().startswith("joint_goal_accuracy")]
    row = next(r for r in rows if len(r) == 4)  # the evaluator's table (all, seen, unseen), after the lead lines
    assert row[1:] == [
        f"{oracle[c]['joint_goal_accuracy']:.4f}" for c in (ALL_SERVICES, SEEN_SERVICES, UNSEEN_SERVICES)
    ]


def test_cli_schema_beside_gold_and_bad_input(tmp_path: Path) -> None:
    write(tmp_path / "gold" / "dialogues_001.json", [GOLD])
    write(tmp_path / "pred" / "dialogues_001.json", [with_values(GOLD, 0, "Hotels_1", {"city": ["NYC"]})])
    done = _cli("metrics", "--pred", str(tmp_path / "pred"), "--gold", str(tmp_path / "gold"), "--json")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "needs the evaluated split's schema" in done.stderr
    write(tmp_path / "gold" / "schema.json", SCHEMA)  # found beside the gold files
    done = _cli("metrics", "--pred", str(tmp_path / "pred"), "--gold", str(tmp_path / "gold"), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["jga"] == pytest.approx(2 / 3)  # turn 0 Hotels loses stars; turn 1 both frames right
    assert set(result["sgd"]) == {ALL_SERVICES, "Hotels", "Hotels_1", "Alarm", "Alarm_1"}  # no train schema
    broken = copy.deepcopy(GOLD)
    broken["turns"][2]["frames"][0]["state"]["slot_values"] = {"city": "New York"}
    write(tmp_path / "pred" / "dialogues_001.json", [broken])
    done = _cli("metrics", "--pred", str(tmp_path / "pred"), "--gold", str(tmp_path / "gold"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "[format: sgd]" in done.stderr and "dialogue 'd1', turn 1" in done.stderr
