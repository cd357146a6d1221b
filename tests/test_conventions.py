"""Each convention switch changes exactly what it says, on a tiny run (METRICS.md, conventions)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from analysis import metrics as M
from analysis.conventions import CONVENTIONS, Convention, get_convention, normalise_value
from analysis.demo.testing import scored_from_states


def jga(gold, pred, convention) -> float:
    return M.joint_goal_accuracy(scored_from_states([gold], [pred], convention=convention))


def test_dontcare_policies() -> None:
    gold, pred = {"hotel": {"area": "dontcare"}}, {}
    assert jga(gold, pred, "exact") == 0.0  # keep: dontcare is a value that was missed
    assert jga(gold, pred, "mwzeval") == 1.0  # drop from gold only
    both = replace(CONVENTIONS["exact"], name="both", dontcare="drop_both")
    assert jga({}, {"hotel": {"area": "dontcare"}}, both) == 1.0
    assert jga({}, {"hotel": {"area": "dontcare"}}, "mwzeval") == 0.0  # a predicted dontcare stays


def test_empty_markers_per_convention() -> None:
    gold = {"hotel": {"area": "not mentioned"}}
    assert jga(gold, {}, "exact") == 1.0
    # DSTC9's unify_value maps only none/未提及 to empty: `not mentioned` becomes the value `notmentioned`.
    assert jga(gold, {}, "dstc9") == 0.0
    assert jga({"hotel": {"area": "未提及"}}, {}, "dstc9") == 1.0
    assert jga(gold, {}, "risawoz") == 0.0  # only null is empty there


def test_value_normalisers() -> None:
    assert jga({"hotel": {"area": "East "}}, {"hotel": {"area": "east"}}, "exact") == 0.0
    assert jga({"hotel": {"area": "East "}}, {"hotel": {"area": "east"}}, "convlab3") == 1.0
    assert jga({"景点": {"名称": "故 宫"}}, {"景点": {"名称": "故宫"}}, "dstc9") == 1.0
    assert jga({"景点": {"门票": "是的"}}, {"景点": {"门票": "有"}}, "dstc9") == 1.0
    assert normalise_value("9:05", CONVENTIONS["mwzeval"], "leave") == "09:05"
    assert normalise_value("9:05", CONVENTIONS["mwzeval"], "area") == "9:05"  # mwzeval's time rule is per slot


@pytest.mark.parametrize(
    ("convention", "expected"), [("exact", 0.0), ("dstc9", 1.0), ("convlab3", 1.0), ("mwzeval", 0.0)]
)
def test_multiple_gold_values(convention: str, expected: float) -> None:
    # gold accepts cheap or moderate; the prediction says moderate (the second alternative)
    assert jga({"hotel": {"price": "cheap|moderate"}}, {"hotel": {"price": "moderate"}}, convention) == expected


def test_a_hedging_prediction_is_rewarded_only_by_convlab3() -> None:
    # ConvLab-3 splits both sides on `|` and accepts any shared alternative (its case c03); the others
    # compare a hedged prediction as one literal value.
    assert jga({"hotel": {"name": "nusha"}}, {"hotel": {"name": "nusha|tenpin"}}, "convlab3") == 1.0
    assert jga({"hotel": {"name": "nusha"}}, {"hotel": {"name": "nusha|tenpin"}}, "dstc9") == 0.0
    assert jga({"hotel": {"name": "nusha"}}, {"hotel": {"name": "nusha|tenpin"}}, "exact") == 0.0
    assert jga({"hotel": {"name": "a|b"}}, {"hotel": {"name": "a|b"}}, "dstc9") == 1.0


def test_fuzzy_matching_only_under_mwzeval() -> None:
    gold, pred = {"attraction": {"name": "the cambridge punter"}}, {"attraction": {"name": "cambridge punter"}}
    assert jga(gold, pred, "mwzeval") == 1.0
    assert jga(gold, pred, "convlab3") == 0.0


def test_slot_aliases() -> None:
    gold, pred = {"train": {"arriveBy": "10:00"}}, {"train": {"arrive by": "10:00"}}
    assert jga(gold, pred, "mwzeval") == 1.0
    assert jga(gold, pred, "exact") == 0.0


def test_relation_is_compared_under_risawoz() -> None:
    scored = scored_from_states([{"hotel": {"area": "east"}}], [{"hotel": {"area": "east"}}], convention="risawoz")
    assert M.joint_goal_accuracy(scored) == 1.0


def test_multiwoz30_ontology_for_slot_accuracy() -> None:
    scored = scored_from_states([{"hotel": {"area": "east"}}], [{"hotel": {"area": "east"}, "police": {"x": "y"}}],
                                convention="trade")  # fmt: skip
    assert len(scored.ontology) == 30
    assert M.slot_accuracy(scored) == 1.0  # outside the ontology: not counted by the seed recipe
    assert M.slot_accuracy_trade(scored) == pytest.approx(29 / 30)  # compute_acc charges it


def test_conventions_are_validated_data() -> None:
    with pytest.raises(ValueError, match="dontcare has to be one of keep, drop_gold, drop_both"):
        Convention("bad", "", dontcare="sometimes")
    with pytest.raises(ValueError, match="convention has to be one of exact"):
        get_convention("nope")
    assert {"exact", "trade", "dstc9", "mwzeval", "convlab3"} <= set(CONVENTIONS)
    for conv in CONVENTIONS.values():
        assert conv.notes and conv.describe()["name"] == conv.name


def test_every_result_records_its_convention() -> None:
    for name in CONVENTIONS:
        scored = scored_from_states([{"hotel": {"area": "east"}}], [{}], convention=name)
        assert scored.convention.name == name


def test_unicode_nfc_before_comparison_except_under_scorer_conventions() -> None:
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    gold, pred = {"restaurant": {"name": nfc}}, {"restaurant": {"name": nfd}}
    for convention in ("exact", "risawoz", "mwzeval-lenient"):
        assert jga(gold, pred, convention) == 1.0, convention
    # Slot names too: a decomposed Korean slot name is the same slot.
    ko_nfc, ko_nfd = unicodedata.normalize("NFC", "지역"), unicodedata.normalize("NFD", "지역")
    assert jga({"식당": {ko_nfc: "a"}}, {"식당": {ko_nfd: "a"}}, "exact") == 1.0
    # The scorers themselves compare code points as written: their conventions do too.
    for convention in ("trade", "dstc9", "convlab3"):
        assert jga(gold, pred, convention) == 0.0, convention
