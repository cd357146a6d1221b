"""analysis.mwzeval_rules: MultiWOZ_Evaluation's slot names, value normalisation and fuzzy matcher.

Every expected value below was produced by the official code (mwzeval's `normalize_state_slot_value`,
fuzzywuzzy 0.18.0's `fuzz.partial_ratio` with python-Levenshtein 0.27.5), not by this module.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.mwzeval_rules import (
    canonical_time,
    is_match,
    normalise_state,
    normalise_value,
    partial_ratio,
    partial_ratios,
    slot_name,
)
from tests.conftest import realdata_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("leaveAt", "leave"),
        ("leave at", "leave"),
        ("arriveBy", "arrive"),
        ("arrive by", "arrive"),
        ("arrive", "arrive"),
        ("price range", "pricerange"),
        ("Book Day", "bookday"),
        ("day", "day"),
        ("leave_at", "leave_at"),  # only spaces go
        ("leave\tat", "leave\tat"),
    ],
)
def test_slot_name(raw: str, expected: str) -> None:
    assert slot_name(raw) == expected


# (normalised slot name, raw value, official normalised value)
OFFICIAL_VALUES = [
    # times: 4 digits, am/pm, prefixes, phrases
    ("leave", "1715", "17:15"),
    ("arrive", "17:15", "17:15"),
    ("leave", "5 pm", "17:00"),
    ("leave", "5:30pm", "17:30"),
    ("leave", "12 pm", "24:00"),
    ("leave", "12:30 p.m.", "24:30"),
    ("leave", "10 a.m.", "10:00"),
    ("leave", "10am", "10:00"),
    ("leave", "10:30am", "10:30"),
    ("arrive", "by 5:30", "05:30"),
    ("arrive", "by5", "00:00"),
    ("arrive", "bye", "00:00"),
    ("arrive", "after 7 pm", "19:00"),
    ("arrive", "afer 8", "08:00"),
    ("leave", "after 11:45", "11:45"),
    ("leave", "noon", "12:00"),
    ("leave", "Morning", "08:00"),
    ("leave", "afternoon", "13:00"),
    ("leave", "around lunch time", "12:00"),
    ("leave", "one o'clock p.m. tomorrow", "13:00"),
    ("leave", "ten o'clock a.m sharp", "10:00"),
    ("leave", "seven o'clock tomorrow evening", "07:00"),
    ("leave", "three forty five p.m", "15:45"),
    ("leave", "one thirty p.m.", "13:30"),
    ("leave", "six fourty five", "06:45"),
    ("leave", "eight thirty", "08:30"),
    # times: odd corners
    ("time", "", "00:00"),
    ("time", "   ", "00:00"),
    ("time", "pm", "00:00"),
    ("time", "am", "00:00"),
    ("time", ".", ""),
    ("time", "7", "07:00"),
    ("time", "123", "123:00"),
    ("time", "12345", "12345:00"),
    ("time", "1234.", "12:34"),
    ("time", "5,", "05:00"),
    ("time", "17 : 30", "17:30"),
    ("time", "5 : 30", "05:30"),
    ("time", "7:5", "7:5"),
    ("time", "::ab", "00:"),
    ("time", "5::3", "05:"),
    ("time", "a:bc", "0a:bc"),
    ("time", "tomorrow", "tomorrow"),
    ("time", "18:00?", "18:00"),
    ("time", "١٢ pm", "24:00"),
    ("time", "abc pm", "abc"),  # a lone non-digit token: the pm rule does not apply
    ("time", "+5 pm", "+5"),
    ("time", "1_0 pm", "1_0"),
    ("time", "5:3:4 pm", "5:3:4"),
    ("time", "\t5\t", "05:00"),
    ("arriveby", "1715", "17:15"),
    ("leaveat", "1715", "17:15"),
    ("booktime", "1715", "1715"),  # the MultiWOZ 2.2 booking slot is not a time slot
    ("booktime", "5 pm", "5 pm"),
    # names, destinations, departures
    ("name", " Restaurant 2 Two ", "restaurant two two"),
    ("name", "restaurant 17", "restaurant one seven"),
    ("name", "Nando's", "nandos"),
    ("name", "A & B", "a and b"),
    ("name", "a&b", "a and b"),
    ("name", "a &b", "a  and b"),
    ("name", "christ 's", "christ's"),
    ("name", "christs", "christ's college"),
    ("destination", "the junction", "junction theatre"),
    ("departure", "Cambridge Botanic Gardens", "cambridge university botanic gardens"),
    ("name", "nandos in the city centre", "nandos city centre"),
    # types: exact spelling only
    ("type", "guest house", "guesthouse"),
    ("type", "Guest House", "Guest House"),
    ("type", " night club", " night club"),
    ("type", "swimming pool", "swimmingpool"),
    ("type", "mutliple sports", "multiple sports"),
    ("type", "Hotel", "Hotel"),
    # foods
    ("food", " English ", "british"),
    ("food", "sea food", "seafood"),
    ("food", "Thai", "thai"),
    ("food", "modern american", "north american"),
    # parking / internet
    ("parking", "free", "yes"),
    ("parking", "Free", "Free"),
    ("parking", " free", " free"),
    ("internet", "free", "yes"),
    ("internet", "yes", "yes"),
    # everything else untouched
    ("area", " East ", " East "),
    ("stars", "none", "none"),
    ("day", "Monday", "Monday"),
    ("bookday", "Monday", "Monday"),
    ("people", "2", "2"),
    ("pricerange", "Cheap", "Cheap"),
    ("hotel-name", "Nando's", "Nando's"),
]


@pytest.mark.parametrize(("slot", "value", "expected"), OFFICIAL_VALUES)
def test_normalise_value_matches_official(slot: str, value: str, expected: str) -> None:
    assert normalise_value(slot, value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (":30 pm", ":30"),
        ("x:15 pm", "0x:15"),
        ("abc:15 pm", "abc:15"),
        ("²pm", "0²:00"),
        ("1" * 5000 + " pm", "1" * 5000 + ":00"),
    ],
)
def test_time_where_official_code_raises(value: str, expected: str) -> None:
    """mwzeval raises ValueError on these (int() of the part before `pm`); we skip the pm rule instead."""
    assert canonical_time(value) == expected


def test_normalise_state_collapses_aliases_like_mwzeval() -> None:
    state = {"taxi": {"leaveAt": "5 pm", "leave at": "1715", "Destination": "Nando's"}, "hotel": {}}
    assert normalise_state(state) == {"taxi": {"leave": "17:15", "destination": "nandos"}, "hotel": {}}
    assert list(normalise_state(state)["taxi"]) == ["leave", "destination"]


# (a, b, fuzzywuzzy's partial_ratio(a, b), fuzzywuzzy's partial_ratio(b, a))
OFFICIAL_RATIOS = [
    ("lan hong house", "ian hong house", 93, 93),  # rapidfuzz.fuzz.partial_ratio: 96.3, a match
    ("abcd", "abce", 75, 75),  # rapidfuzz: 85.7
    ("restaurant two two", "restaurant 2 two", 88, 88),
    ("18:00", "08:00", 80, 80),
    ("none", "north", 50, 50),
    ("east", "the east", 100, 100),
    ("guesthouse", "guesthouses", 100, 100),
    ("nandos", "nandos city centre", 100, 100),
    ("yes", "no", 0, 0),
    ("a abaaa ", "b ab a a", 67, 67),  # rapidfuzz: 71.4
    ("bbbaba", "baaaaaab", 50, 50),  # rapidfuzz: 66.7
    # equal lengths: the first argument is the "shorter" one, so the order matters
    (" bba ", "baaba", 60, 67),
    ("aabb aa", "ba bb b", 62, 57),
    ("bababba", "abbbbab", 71, 77),
    # 62.5 and 12.5 round half to even
    ("aahbceda", "gabfcehafd", 62, 62),
    ("bababaca", "adfdhfhfa", 12, 12),
    # decorators: None, equality, empty
    (None, "a", 0, 0),
    (None, None, 0, 0),
    ("", "", 100, 100),
    ("", "a", 0, 0),
]


@pytest.mark.parametrize(("a", "b", "ab", "ba"), OFFICIAL_RATIOS)
def test_partial_ratio_matches_fuzzywuzzy(a: str | None, b: str | None, ab: int, ba: int) -> None:
    assert partial_ratio(a, b) == ab
    assert partial_ratio(b, a) == ba
    assert type(partial_ratio(a, b)) is int


def test_a_substring_can_score_below_100_as_in_fuzzywuzzy() -> None:
    # Checked against fuzzywuzzy 0.18.0 with python-Levenshtein: 50 both ways.
    assert partial_ratio(":1", "::11") == 50 and partial_ratio("::11", ":1") == 50


def test_partial_ratios_vectorised() -> None:
    preds = ["east", "lan hong house", "east", " bba ", "baaba", ""]
    golds = ["the east", "ian hong house", "the east", "baaba", " bba ", ""]
    out = partial_ratios(preds, golds)
    assert out.dtype == np.int64
    assert out.tolist() == [100, 93, 100, 60, 67, 100]
    assert partial_ratios([], []).tolist() == []
    with pytest.raises(ValueError, match="as many"):
        partial_ratios(["a"], [])


TEXT = st.text(alphabet="ab c:1", max_size=12) | st.text(max_size=8)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_partial_ratio_properties(a: str, b: str) -> None:
    score = partial_ratio(a, b)
    assert type(score) is int
    assert 0 <= score <= 100
    assert partial_ratio(a, a) == 100
    if len(a) != len(b):  # fuzzywuzzy is symmetric whenever the lengths differ (shorter/longer fixed)
        assert partial_ratio(b, a) == score
    if (a == "") != (b == ""):
        assert score == 0
    # Not a property: a substring need not score 100. fuzzywuzzy only tries the windows its matching
    # blocks suggest (`:1` in `::11` scores 50 with fuzzywuzzy 0.18 + python-Levenshtein too).
    assert partial_ratios([a, b], [b, a]).tolist() == [score, partial_ratio(b, a)]


def _turn_jga(gold: dict, pred: dict) -> int:
    """One turn's mwzeval joint verdict from this module's rules (same keys, every value > 95)."""
    flat = [
        {(d, s): v for d, slots in normalise_state(state).items() for s, v in slots.items()} for state in (gold, pred)
    ]
    ref, hyp = flat
    return int(hyp.keys() == ref.keys() and all(is_match(hyp[k], ref[k]) for k in ref))


def test_case_behaviours_at_value_level() -> None:
    """t1-t7 of scorer_oracles/mwzeval_cases.jsonl, one rule each."""
    assert normalise_value(slot_name("leaveAt"), "1715") == normalise_value(slot_name("leaveat"), "17:15")  # t1
    assert normalise_value("type", "guest house") == "guesthouse"  # t2
    assert normalise_value("name", "restaurant 2 two") == "restaurant two two"  # t3
    assert normalise_value("parking", "free") == "yes"  # t4
    assert normalise_value("stars", "none") == "none"  # t5: a predicted value, so a false positive
    assert partial_ratio("lan hong house", "ian hong house") == 93  # t6
    assert not is_match("lan hong house", "ian hong house")
    assert slot_name("day") != slot_name("bookday")  # t7


@pytest.mark.realdata
def test_case_file_verdicts() -> None:
    path = realdata_path("scorer_oracles", "mwzeval_cases.jsonl")
    official = {
        "t1_time4digits": 1,
        "t2_type_space": 1,
        "t3_name_canon": 1,
        "t4_parking_free": 1,
        "t5_pred_none": 0,
        "t6_fuzzy": 0,
        "t7_bookday_22": 0,
    }
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert {c["dialogue_id"]: _turn_jga(c["gold"], c["pred"]) for c in cases} == official
