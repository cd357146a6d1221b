"""DSTC10 track 2 task 1: entries and labels.json read by position, scored as the official scores.py scores them.

The real entry (teamA01 entry 0) must give the eight numbers of its `scores.json`; the small cases isolate one
rule of `task1/scripts/scores.py` each. Their expected numbers follow from its rules by hand (19 slots an
instance: one wrong slot leaves 18/19 = 0.947368 slot accuracy) and are what scores.py printed on the same
cases when run beside this project (it is not part of the project).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import registry as R
from analysis.cli.main import main
from analysis.errors import InputError
from analysis.formats import parse_file
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.suite import metric_suite
from tests.conftest import realdata_path

EIGHT = (
    "jga",
    "slot_accuracy",
    "dstc10_value_precision",
    "dstc10_value_recall",
    "dstc10_value_f1",
    "dstc10_none_precision",
    "dstc10_none_recall",
    "dstc10_none_f1",
)


def _official(scores: dict) -> dict[str, float]:
    """scores.py's JSON as our metric names."""
    slot = scores["slot"]
    out = {"jga": scores["joint_goal_accuracy"], "slot_accuracy": slot["accuracy"]}
    for side, key in (("value", "value_prediction"), ("none", "none_prediction")):
        for part, short in (("precision", "prec"), ("recall", "rec"), ("f1", "f1")):
            out[f"dstc10_{side}_{part}"] = slot[key][short]
    return out


@pytest.mark.realdata
def test_team_a01_entry0_gives_the_eight_official_numbers(capsys) -> None:
    entry = realdata_path("wild", "dstc10_task1_teamA01_entry0.json.gz")
    labels = realdata_path("wild", "dstc10_task1_test_labels.json.gz")
    official = _official(json.loads(realdata_path("wild", "dstc10_task1_teamA01_entry0.scores.json").read_text()))
    assert main(["metrics", "--pred", str(entry), "--gold", str(labels), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["convention"] == "dstc10" and result["n_turns"] == 6588  # the file's own convention
    for name in EIGHT:
        assert round(result[name], 4) == round(official[name], 4), name
        assert result[name] == pytest.approx(official[name], abs=1e-12), name
    assert not result["not_applicable"]
    assert official["jga"] == pytest.approx(0.360504, abs=5e-7)  # the README's figure: the right file


# --- the rules, one case each ----------------------------------------------------------------------


def _hotel(**slots: list[str]) -> dict:
    return {"hotel": {"semi": dict(slots)}}


ONE_WRONG = 18 / 19
# name: (labels, entry, the eight numbers scores.py prints, in EIGHT's order)
CASES = {
    "lower-cased": ([_hotel(area=["East"])], [_hotel(area=["east"])], (1, 1, 1, 1, 1, 1, 1, 1)),
    "one..nine to digits": ([_hotel(stars=["4"])], [_hotel(stars=["Four"])], (1, 1, 1, 1, 1, 1, 1, 1)),
    # Only a whole value is mapped: `four stars` stays a different value from `4 stars`.
    "number words only whole": (
        [_hotel(stars=["4 stars"])],
        [_hotel(stars=["four stars"])],
        (0, ONE_WRONG, 0, 0, 0, 1, 1, 1),
    ),
    # A predicted slot the gold lacks breaks the joint goal; value P 1/2, none R 17/18.
    "spurious slot breaks joint": (
        [_hotel(area=["east"])],
        [_hotel(area=["east"], name=["acorn"])],
        (0, ONE_WRONG, 0.5, 1, 2 / 3, 1, 17 / 18, 2 * 17 / 18 / (1 + 17 / 18)),
    ),
    # A key present with [""] is a spurious slot too: the key, not the text, says a value is held.
    "a present key holds a value": (
        [_hotel(area=["east"])],
        [_hotel(area=["east"], name=[""])],
        (0, ONE_WRONG, 0.5, 1, 2 / 3, 1, 17 / 18, 2 * 17 / 18 / (1 + 17 / 18)),
    ),
    "empty list is a wrong value": ([_hotel(area=["east"])], [_hotel(area=[])], (0, ONE_WRONG, 0, 0, 0, 1, 1, 1)),
    # Values compared as sets: a subset is wrong (its F1 2/3 still counts in value P/R), order does not matter.
    "set equality, subset": (
        [_hotel(area=["east", "west"])],
        [_hotel(area=["east"])],
        (0, ONE_WRONG, 2 / 3, 2 / 3, 2 / 3, 1, 1, 1),
    ),
    "set equality, order": ([_hotel(area=["east", "west"])], [_hotel(area=["west", "East"])], (1, 1, 1, 1, 1, 1, 1, 1)),
    # Slots outside the 19 (hotel parking, any train slot) are ignored.
    "outside slots ignored": (
        [_hotel(area=["east"])],
        [{"hotel": {"semi": {"area": ["east"], "parking": ["yes"]}}, "train": {"semi": {"day": ["monday"]}}}],
        (1, 1, 1, 1, 1, 1, 1, 1),
    ),
    "three instances": (
        [_hotel(area=["east"]), _hotel(area=["north"], type=["hotel"]), {}],
        [_hotel(area=["east"], stars=["two"]), _hotel(area=["north"]), {}],
        (1 / 3, 55 / 57, 2 / 3, 2 / 3, 2 / 3, 53 / 54, 53 / 54, 53 / 54),
    ),
}


def _score(tmp_path: Path, labels: list, entry: list, convention: str | None = None) -> dict:
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    (tmp_path / "entry.json").write_text(json.dumps(entry))
    run = load_run(tmp_path / "entry.json", tmp_path / "labels.json")
    return metric_suite(score_run(run, convention))


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_of_scores_py(tmp_path: Path, name: str) -> None:
    labels, entry, expected = CASES[name]
    result = _score(tmp_path, labels, entry)
    assert result["convention"] == "dstc10"
    assert [result[m] for m in EIGHT] == pytest.approx(list(expected), abs=1e-12), name


def test_two_spellings_of_one_value_are_counted_as_pairs_in_value_prf_only(tmp_path: Path) -> None:
    """scores.py counts matching pairs: [East, east] against [east] has 2 matches, precision 2/2 and recall
    2/1, F1 4/3 (above 1) and so a wrong slot; value P/R/F1 reproduce the 4/3. JGA and slot accuracy judge
    the sets, {east} = {east}: right. The convention's notes say so; no public file has such a list."""
    result = _score(tmp_path, [_hotel(area=["east"])], [_hotel(area=["East", "east"])])
    assert result["dstc10_value_precision"] == pytest.approx(4 / 3)
    assert result["dstc10_value_f1"] == pytest.approx(4 / 3)
    assert result["jga"] == 1.0  # scores.py: 0.0 (documented, not reproduced)


def test_a_shorter_entry_is_scored_over_its_instances_as_zip_does(tmp_path: Path) -> None:
    labels = [_hotel(area=["east"]), _hotel(area=["west"]), _hotel(area=["north"])]
    result = _score(tmp_path, labels, [_hotel(area=["east"]), _hotel(area=["south"])])
    assert result["n_turns"] == 2 and result["jga"] == 0.5
    assert any("not scored under dstc10" in w for w in result["alignment"]["warnings"])


def test_value_and_none_prf_are_left_out_outside_the_convention(tmp_path: Path) -> None:
    """DSTC10's own six numbers are printed under its convention only: elsewhere the JSON and the table
    leave them out (not six n/a lines on every other run); the function itself still says NaN and why."""
    result = _score(tmp_path, [_hotel(area=["east"])], [_hotel(area=["east"])], convention="exact")
    for name in EIGHT[2:]:
        assert name not in result and name not in result["not_applicable"]
        assert R.get(name).only_under == "dstc10"
    assert result["jga"] == 1.0


def test_grouped_values_sum_over_turns(tmp_path: Path) -> None:
    labels, entry, expected = CASES["three instances"]
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    (tmp_path / "entry.json").write_text(json.dumps(entry))
    scored = score_run(load_run(tmp_path / "entry.json", tmp_path / "labels.json"))
    metric = R.get("dstc10_value_precision")
    per_dialogue = metric.function(scored, by="dialogue_id").set_index("dialogue_id")[metric.column]
    # Instance 0: its one spurious slot halves value precision; 1: the slot it holds is right; 2: none held.
    assert per_dialogue.to_dict() == {"0": 0.5, "1": 1.0, "2": 0.0}
    assert metric.value(metric.function(scored)) == pytest.approx(expected[2])
    with pytest.raises(ValueError, match="turn columns"):
        metric.function(scored, by="slot")


# --- the reader --------------------------------------------------------------------------------------


def test_reader_keeps_the_lists_scores_py_sees(tmp_path: Path) -> None:
    path = tmp_path / "entry.json"
    path.write_text(json.dumps([{"restaurant": {"semi": {"time": ["x"]}, "book": {"time": ["12:00"], "day": []}}}, {}]))
    parsed = parse_file(path)
    assert parsed.fmt == "dstc10" and len(parsed.turns) == 2
    rows = {
        (d, s): v
        for d, s, v in zip(parsed.states["domain"], parsed.states["slot"], parsed.states["value"], strict=True)
    }
    assert rows == {("restaurant", "time (semi)"): "x", ("restaurant", "time"): "12:00", ("restaurant", "day"): "[]"}
    assert len(parsed.listed_slots) == 19 + 1  # the task's 19 slots listed on every instance


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"hotel": {"semi": {"area": "east"}}}, "a value must be a list of strings"),
        ({"hotel": {"semi": {"area": [3]}}}, "a list holding a non-string"),
        ({"hotel": ["semi"]}, "must be an object"),
    ],
)
def test_bad_instances_name_file_format_and_instance(tmp_path: Path, state: dict, message: str) -> None:
    path = tmp_path / "entry.json"
    path.write_text(json.dumps([{}, {"hotel": {"semi": {"area": ["x"]}}}, state]))
    with pytest.raises(InputError) as caught:
        parse_file(path, fmt="dstc10")
    text = str(caught.value)
    assert message in text and "entry.json [format: dstc10]" in text and "dialogue '2'" in text
    assert "\n" not in text


def test_the_format_is_not_taken_for_another_list(tmp_path: Path) -> None:
    from analysis.formats.dstc10 import DSTC10_FORMATS

    detect = DSTC10_FORMATS[0]["detect"]
    assert not detect([{"dialogue_id": "x", "turns": []}]) and not detect([{}, {}]) and not detect([])
    assert detect([{}, {"hotel": {}}, {"hotel": {"book": {"day": ["monday"]}}}])
