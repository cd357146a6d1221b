"""Convention reconciliation: metrics per convention, flipped turns and counterfactual causes."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace

import pytest

from analysis.cli.main import main
from analysis.conventions import CONVENTIONS, Convention
from analysis.demo.testing import run_from_states
from analysis.metrics import joint_goal_accuracy, slot_prf_micro
from analysis.reconcile.core import CAUSES, SWITCH_GROUPS, pair_key, reconcile
from analysis.scoring import score_run
from analysis.suite import gold_inputs
from tests.conftest import realdata_path

FIVE = ["exact", "trade", "dstc9", "mwzeval", "convlab3"]

# One dialogue per cause; in each, the only turn is wrong under `a` and right under `b` (or vice versa).
CASES = {
    "dontcare": ("exact", "mwzeval", {"hotel": {"area": "dontcare"}}, {}),
    "normaliser": ("exact", "convlab3", {"hotel": {"pricerange": "Cheap"}}, {"hotel": {"pricerange": "cheap"}}),
    "whitespace": ("exact", "convlab3", {"taxi": {"leaveAt": "17:30"}}, {"taxi": {"leaveAt": "17 : 30"}}),
    "pred_none": ("exact", "mwzeval", {"hotel": {"area": "east"}}, {"hotel": {"area": "east", "name": "none"}}),
    "hedged_prediction": ("exact", "convlab3", {"hotel": {"name": "nusha"}}, {"hotel": {"name": "nusha|tenpin"}}),
    "multi_value": ("exact", "dstc9", {"hotel": {"area": "east|west"}}, {"hotel": {"area": "west"}}),
    "matching": (
        "exact",
        "mwzeval",
        {"taxi": {"destination": "the cambridge punter"}},
        {"taxi": {"destination": "cambridge punter"}},
    ),
    "slot_alias": ("exact", "mwzeval", {"train": {"arriveBy": "17:00"}}, {"train": {"arrive by": "17:00"}}),
    "slot_scope": (
        "exact",
        "convlab3",
        {"hotel": {"area": "east"}},
        {"hotel": {"area": "east"}, "police": {"name": "x"}},
    ),
    # Alias and time normaliser both needed: neither switch alone explains the flip.
    "combined": ("exact", "mwzeval", {"train": {"arriveBy": "05:00"}}, {"train": {"arrive by": "5:00 "}}),
}


def _one(gold: dict, pred: dict, conventions: list[str]):
    return reconcile(run_from_states([gold], [pred]), conventions)


@pytest.mark.parametrize("cause", list(CASES))
def test_each_cause_isolated(cause: str) -> None:
    a, b, gold, pred = CASES[cause]
    rec = _one(gold, pred, [a, b])
    counts = rec.flip_counts().iloc[0]
    assert counts["count"] == 1
    assert rec.causes(a, b) == {cause: 1}
    slots = rec.responsible(a, b)
    assert len(slots) == 1 and slots.loc[0, "cause"] == cause
    flips = rec.flips(a, b)
    assert flips["causes"].tolist() == [cause]


def test_outcomes_and_values_of_a_responsible_slot() -> None:
    rec = _one({"train": {"arriveBy": "17:00"}}, {"train": {"arrive by": "17:00"}}, ["exact", "mwzeval"])
    row = rec.responsible("exact", "mwzeval").iloc[0]
    assert (row["domain"], row["slot"], row["gold"], row["pred"]) == ("train", "arrive", "17:00", "17:00")
    assert (row["outcome_a"], row["outcome_b"]) == ("missed+spurious", "correct")


def test_direction_correct_under_a_only() -> None:
    # Gold and prediction both dontcare: exact agrees; mwzeval drops the gold, leaving a spurious prediction.
    rec = _one({"hotel": {"area": "dontcare"}}, {"hotel": {"area": "dontcare"}}, ["exact", "mwzeval"])
    row = rec.flip_counts().iloc[0]
    assert (row["count"], row["only_a"], row["only_b"]) == (1, 1, 0)
    slot = rec.responsible("exact", "mwzeval").iloc[0]
    assert (slot["outcome_a"], slot["outcome_b"], slot["cause"]) == ("correct", "spurious", "dontcare")


def test_all_causes_in_one_run_across_five_conventions() -> None:
    gold = {name: [case[2], {}] for name, case in CASES.items()}
    pred = {name: [case[3], {}] for name, case in CASES.items()}
    run = run_from_states(gold, pred)
    rec = reconcile(run, FIVE)
    for cause, (a, b, _, _) in CASES.items():
        slots = rec.responsible(a, b)
        mine = slots[slots["dialogue_id"] == cause]
        assert mine["cause"].tolist() == [cause], cause
    # Unchanged turns never flip; identical conventions never flip.
    flips = rec.flips("exact", "mwzeval")
    assert set(flips["turn_index"]) == {0}
    same = reconcile(run, [CONVENTIONS["exact"], replace(CONVENTIONS["exact"], name="exact2")])
    assert same.flip_counts()["count"].tolist() == [0]
    assert same.responsible("exact", "exact2").empty


def test_switch_groups_cover_every_convention_field() -> None:
    grouped = {f for _, names in SWITCH_GROUPS for f in names}
    assert grouped == {f.name for f in fields(Convention)} - {"name", "notes"}
    assert CAUSES[-1] == "combined"


def test_unknown_pair_and_bad_conventions() -> None:
    rec = _one({"hotel": {"area": "east"}}, {}, ["exact", "trade"])
    with pytest.raises(ValueError, match="convention has to be one of exact, trade"):
        rec.responsible("exact", "mwzeval")
    with pytest.raises(ValueError, match="distinct"):
        reconcile(run_from_states([{}], [{}]), ["exact", "exact"])


def test_to_dict_shape_and_values() -> None:
    rec = _one({"train": {"arriveBy": "17:00"}}, {"train": {"arrive by": "17:00"}}, ["exact", "mwzeval", "trade"])
    out = rec.to_dict(examples=1)
    json.dumps(out)  # serialisable, no NaN
    assert set(out["conventions"]) == {"exact", "mwzeval", "trade"}
    assert out["conventions"]["exact"]["jga"] == 0.0 and out["conventions"]["mwzeval"]["jga"] == 1.0
    assert set(out["conventions"]["exact"]) >= {"jga", "slot_f1_micro", "slot_accuracy", "slot_f1_seed"}
    assert list(out["flips"]) == [
        pair_key("exact", "mwzeval"),
        pair_key("exact", "trade"),
        pair_key("mwzeval", "trade"),
    ]
    entry = out["flips"]["exact|mwzeval"]
    assert (entry["count"], entry["only_a"], entry["only_b"], entry["causes"]) == (1, 0, 1, {"slot_alias": 1})
    assert entry["examples"][0]["slot"] == "arrive" and entry["examples"][0]["cause"] == "slot_alias"
    assert out["flips"]["mwzeval|trade"]["count"] == 0 and out["flips"]["mwzeval|trade"]["causes"] == {}
    assert "causes" not in rec.to_dict(causes=False)["flips"]["exact|mwzeval"]


def _write_jsonl(path, turns) -> None:
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")


def test_cli_json_and_table(tmp_path, capsys) -> None:
    pred = tmp_path / "run.jsonl"
    _write_jsonl(
        pred,
        [
            {
                "dialogue_id": "d1",
                "turn_index": 0,
                "gold": {"train": {"arriveBy": "17:00"}},
                "pred": {"train": {"arrive by": "17:00"}},
            },
            {"dialogue_id": "d1", "turn_index": 1, "gold": {"hotel": {"area": "dontcare"}}, "pred": {}},
        ],
    )
    assert main(["reconcile", "--pred", str(pred), "--conventions", "exact,mwzeval", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["conventions"]["exact"]["jga"] == 0.0 and out["conventions"]["mwzeval"]["jga"] == 1.0
    assert out["flips"]["exact|mwzeval"]["count"] == 2
    assert out["flips"]["exact|mwzeval"]["causes"] == {"dontcare": 1, "slot_alias": 1}
    assert main(["reconcile", "--pred", str(pred), "--conventions", "exact,mwzeval"]) == 0
    text = capsys.readouterr().out
    assert "exact|mwzeval" in text and "slot naming 1" in text and "dontcare policy 1" in text


def test_cli_unknown_convention_is_one_line_exit_2(tmp_path, capsys) -> None:
    pred = tmp_path / "run.jsonl"
    _write_jsonl(pred, [{"dialogue_id": "d1", "turn_index": 0, "gold": {}, "pred": {}}])
    assert main(["reconcile", "--pred", str(pred), "--conventions", "exact,nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope" in err[0] and "exact, trade, dstc9, mwzeval, mwzeval-lenient, convlab3" in err[0]


# ---- real data ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def augpt():
    from analysis.loading import load_run

    pred = realdata_path("mwzeval_outputs", "augpt.json")
    gold = realdata_path("multiwoz21", "test.json.zip")
    return load_run(pred, gold)


@pytest.mark.slow
@pytest.mark.realdata
def test_realdata_metrics_equal_score_run(augpt) -> None:
    rec = reconcile(augpt, FIVE)
    table = rec.table().set_index("convention")
    for name in FIVE:
        scored = score_run(augpt, name)
        if {g["status"] for g in gold_inputs(scored).values()} == {
            "n/a"
        }:  # DSTC9 never reads English MultiWOZ: no number
            assert math.isnan(table.loc[name, "jga"]) and math.isnan(table.loc[name, "slot_f1_micro"])
            continue
        assert table.loc[name, "jga"] == joint_goal_accuracy(scored)
        micro = slot_prf_micro(scored)
        assert isinstance(micro, dict)
        assert table.loc[name, "slot_f1_micro"] == micro["f1"]
    counts = rec.flip_counts().set_index(["a", "b"])
    for a, b in rec.pairs():
        ca = score_run(augpt, a).turns.sort_values("tid")["joint_correct"].to_numpy()
        cb = score_run(augpt, b).turns.sort_values("tid")["joint_correct"].to_numpy()
        assert counts.loc[(a, b), "count"] == int((ca != cb).sum())
    out = rec.to_dict()
    json.dumps(out)
    for key, entry in out["flips"].items():
        a, b = key.split("|")
        flips = rec.flips(a, b)
        assert len(flips) == entry["count"]
        assert flips["causes"].notna().all(), key  # every flipped turn has a responsible slot
        assert sum(entry["causes"].values()) == entry["n_slots"] >= entry["count"]
    # The alias-dominated gap between exact and mwzeval (augpt writes `price range`, `arrive by`).
    assert out["flips"]["exact|mwzeval"]["causes"]["slot_alias"] > out["flips"]["exact|mwzeval"]["count"] / 2


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("base", "group", "change"),
    [
        ("mwzeval", "matching", {"matching": "exact"}),
        ("exact", "normaliser", {"normaliser": ("strip", "lower")}),
        ("exact", "slot_alias", {"lower_names": True, "slot_aliases": CONVENTIONS["trade"].slot_aliases}),
        ("mwzeval", "dontcare", {"dontcare": "keep"}),
        ("exact", "slot_scope", {"slot_scope": "turn_listed"}),
    ],
)
def test_realdata_single_switch_pairs_attribute_everything_to_that_switch(augpt, base, group, change) -> None:
    """When b differs from a in one switch group only, the counterfactual toggle *is* b: every responsible
    slot must be attributed to that group. A `combined` here would mean the small run the toggles are
    scored on does not reproduce the full run's outcomes."""
    a = CONVENTIONS[base]
    b = replace(a, name=f"{base}-{group}", **change)
    rec = reconcile(augpt, [a, b])
    causes = rec.causes(a.name, b.name)
    assert rec.flip_counts()["count"].iloc[0] > 0
    assert set(causes) == {group}


def test_turn_denominator_is_a_cause(tmp_path) -> None:
    """mwzeval scores only the turns the prediction file holds; mwzeval-lenient scores the missing one
    as an empty prediction: that turn flips, and its cause is the turn denominator."""
    gold = [
        {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}},
        {"dialogue_id": "d1", "turn_index": 1, "gold": {"hotel": {"area": "east"}}},
    ]
    pred = [{"dialogue_id": "d1", "turn_index": 0, "pred": {"hotel": {"area": "east"}}}]
    _write_jsonl(tmp_path / "gold.jsonl", gold)
    _write_jsonl(tmp_path / "pred.jsonl", pred)
    from analysis.loading import load_run

    run = load_run(tmp_path / "pred.jsonl", tmp_path / "gold.jsonl")
    rec = reconcile(run, ["mwzeval", "mwzeval-lenient"])
    assert rec.table().set_index("convention")["jga"].to_dict() == {"mwzeval": 1.0, "mwzeval-lenient": 0.5}
    assert rec.causes("mwzeval", "mwzeval-lenient") == {"turns": 1}
    flips = rec.flips("mwzeval", "mwzeval-lenient")
    assert flips[["turn_index", "causes"]].to_dict("records") == [{"turn_index": 1, "causes": "turns"}]
    row = rec.responsible("mwzeval", "mwzeval-lenient").iloc[0]
    assert (row["outcome_a"], row["outcome_b"]) == ("not scored", "scored")


def test_cli_table_header_keeps_convention_names_apart(tmp_path, capsys) -> None:
    """Right-aligned in columns as wide as the longest name, two names ran together
    ("mwzevalmwzeval-lenient"); every column now starts with two spaces at least."""
    pred = tmp_path / "run.jsonl"
    _write_jsonl(pred, [{"dialogue_id": "d1", "turn_index": 0, "gold": {}, "pred": {}}])
    assert main(["reconcile", "--pred", str(pred), "--conventions", "mwzeval,mwzeval-lenient"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "mwzeval", "mwzeval-lenient"]
    assert "mwzevalmwzeval" not in header and "  mwzeval-lenient" in header
