"""The `checkdst` convention is CheckDST's comparison (wise-east/CheckDST `src/checkdst/utils.py`
`extract_slot_from_string`, then set equality as `checkdst_class.py` counts JGA): whole values 'centre' and
'N-star' rewritten, dontcare dropped on both sides, 'none' a value like any other. Each case isolates one rule."""

from __future__ import annotations

import pytest

from analysis.conventions import CONVENTIONS
from analysis.demo.testing import scored_from_states
from analysis.metrics import joint_goal_accuracy


def jga(gold: list[tuple[str, str, str]], pred: list[tuple[str, str, str]]) -> float:
    def state(triples: list[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for domain, slot, value in triples:
            out.setdefault(domain, {})[slot] = value
        return out

    return float(joint_goal_accuracy(scored_from_states([state(gold)], [state(pred)], convention="checkdst")))


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ([("hotel", "area", "centre")], [("hotel", "area", "center")], 1.0),  # centre -> center
        ([("hotel", "stars", "4-star")], [("hotel", "stars", "4")], 1.0),  # N-star -> N
        ([("hotel", "area", "city centre")], [("hotel", "area", "city center")], 0.0),  # whole values only
        ([("hotel", "area", "East")], [("hotel", "area", "east")], 0.0),  # no lower-casing
        ([("hotel", "parking", "dontcare")], [], 1.0),  # dontcare dropped from gold ...
        ([], [("hotel", "parking", "dontcare")], 1.0),  # ... and from the prediction
        ([("hotel", "internet", "none")], [], 0.0),  # 'none' is a value, not an empty slot
    ],
)
def test_each_checkdst_rule(gold, pred, expected) -> None:
    assert jga(gold, pred) == expected


def test_checkdst_is_a_named_convention_with_its_rules_in_its_notes() -> None:
    notes = CONVENTIONS["checkdst"].notes
    assert "extract_slot_from_string" in notes and "dontcare" in notes and "centre" in notes
