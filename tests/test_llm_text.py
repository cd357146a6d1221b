"""LLM text read honestly (issue 38.3): the shapes trackers write, unparseable turns with their shapes, the
changes a running log's completions hold accumulated over a dialogue, and linear time on hostile text.

The shapes are those of cwyoon-99/gpt-DST's `expts/*/running_log.json` completions (GPT-3.5, MIT) and
Yushi-Hu/IC-DST's SQL; the strings below are written in those shapes, not copied. The real running log
in ../shared/realdata/wild is read where present.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis.errors import InputError
from analysis.formats import parse_file
from analysis.formats.llm_text import (
    MAX_ACCUMULATED_ROWS,
    NAMES_ONLY,
    NOT_DOMAIN_SLOT,
    NUMBERED,
    PROSE,
    PROSE_BETWEEN,
    AccumulationTooLarge,
    TextTally,
    accumulate_deltas,
    read_text,
)
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.suite import metric_suite
from tests.conftest import realdata_path

# (text, triples as (domain, slot, value), or None and the shape that makes it unparseable)
CASES: list[tuple[str, list[tuple[str, str, str]] | None, str]] = [
    (
        "taxi-departure = kings college, taxi-destination = the hut",
        [("taxi", "departure", "kings college"), ("taxi", "destination", "the hut")],
        "",
    ),
    (
        "(taxi-departure = kings college), (taxi-destination = the hut)",
        [("taxi", "departure", "kings college"), ("taxi", "destination", "the hut")],
        "",
    ),
    ("(train-arriveby: 16:15, train-day: monday)", [("train", "arriveby", "16:15"), ("train", "day", "monday")], ""),
    ("(hotel-name = nusha), ().", [("hotel", "name", "nusha")], ""),
    ("(hotel-area = east), () as nothing else changed.", [("hotel", "area", "east")], ""),
    (
        "1. The user asks for a hotel.\n2. Therefore, the changed slot and value (slot_name = value) is (hotel-area = east)",
        [("hotel", "area", "east")],
        "",
    ),
    (
        "attraction-name: nusha\nattraction-address: unit g6, clifton road",
        [("attraction", "name", "nusha"), ("attraction", "address", "unit g6, clifton road")],
        "",
    ),
    (
        "Changed domain-slots: hotel-area, hotel-stars\nCorresponding values: \n- hotel-area: east\n- hotel-stars: 4",
        [("hotel", "area", "east"), ("hotel", "stars", "4")],
        "",
    ),
    (
        "Changed domain-slots: hotel-area, hotel-pricerange\nCorresponding values: east, cheap",
        [("hotel", "area", "east"), ("hotel", "pricerange", "cheap")],
        "",
    ),
    ("Changed domain-slot: restaurant-name\nNew value: curry garden", [("restaurant", "name", "curry garden")], ""),
    ("restaurant-book time = 14:00, 16:00", [("restaurant", "book time", "14:00, 16:00")], ""),
    (
        " hotel WHERE area = 'east' AND price_range = 'cheap'",
        [("hotel", "area", "east"), ("hotel", "price range", "cheap")],
        "",
    ),
    (
        "hotel AS t1, train AS t2 WHERE t1.area = 'east' AND t2.day = 'monday'",
        [("hotel", "area", "east"), ("train", "day", "monday")],
        "",
    ),
    ("hotel internet yes, hotel type guesthouse,", [("hotel", "internet", "yes"), ("hotel", "type", "guesthouse")], ""),
    ('{"hotel": {"area": "east"}}', [("hotel", "area", "east")], ""),
    ("No slot changed.", [], ""),
    ("None (no slot value changed in this turn)", [], ""),
    ("No domain-slots have been changed.", [], ""),
    ("Changed domain-slots: None\nValues: None", [], ""),
    ("()", [], ""),
    (" WHERE", [], ""),
    ("(16 = all saints church)", None, NUMBERED),
    ("(27 = kings college, 26 = the hut)", None, NUMBERED),
    ("(train_id, unknown)", None, PROSE),
    ("(domain-slot: hotel-area, value: dontcare)", None, NOT_DOMAIN_SLOT),
    ("attraction-name: nusha\nAddress: unit g6, clifton road", None, NOT_DOMAIN_SLOT),
    ("taxi-destination, taxi-departure, taxi-leaveat", None, NAMES_ONLY),
    ("Changed domain-slots: 16 (attraction-name), 17 (attraction-area)", None, NAMES_ONLY),
    ("hotel-area = east\nI also think the user wants a cheap one.\nhotel-pricerange = cheap", None, PROSE_BETWEEN),
    ("The user has not asked for anything yet.", None, PROSE),
    ("", None, "empty text"),
]


@pytest.mark.parametrize(("text", "expected", "shape"), CASES)
def test_shapes_trackers_write(text: str, expected: list[tuple[str, str, str]] | None, shape: str) -> None:
    reading = read_text(text)
    if expected is None:
        assert reading.triples is None and reading.shape == shape
    else:
        assert reading.triples is not None and [(d, s, v) for d, s, _, v in reading.triples] == expected
        assert reading.shape == ""


def test_no_fragment_becomes_a_junk_domain() -> None:
    """The old line pattern read `(taxi` as a domain and `Changed domain` as another."""
    for text in (
        "(taxi-departure = x), (taxi-destination = y)",
        "Changed domain-slots: taxi-leaveat\nNew value: 17:15",
        "[train-day = friday, train-departure = ely]",
        "Changed domain-slots: 19 (restaurant-name)\nNew value: None (not found)",
    ):
        reading = read_text(text)
        for domain, slot, _, _ in reading.triples or ():
            assert domain.isidentifier() and slot.replace(" ", "_").isidentifier(), (text, domain, slot)


def test_a_file_reports_parsed_unparseable_and_shapes(tmp_path: Path) -> None:
    texts = ["hotel-area = east", "(16 = x)", "(12 = y)", "taxi-departure, taxi-destination", "No slot changed."]
    rows = [
        {"dialogue_id": "d", "turn_index": t, "gold": {"hotel": {"area": "east"}}, "output": text}
        for t, text in enumerate(texts)
    ]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    parsed = parse_file(path, use_cache=False)
    assert parsed.notes["parsed_turns"] == 2 and parsed.notes["unparseable_turns"] == 3
    assert parsed.notes["unparseable_shapes"] == (
        f"2 {NUMBERED}, e.g. '(16 = x)'; 1 {NAMES_ONLY}, e.g. 'taxi-departure, taxi-destination'"
    )
    warnings = load_run(path).alignment.warnings()
    assert any(w.startswith("unparseable shapes: 2 numbered slots") for w in warnings)


def _running_log_as_llm(tmp_path: Path) -> tuple[Path, list[dict]]:
    records = json.loads(realdata_path("wild", "gptdst_gpt35_ours_running_log.json").read_text(encoding="utf-8"))
    rows = []
    for r in records:
        gold: dict[str, dict[str, str]] = {}
        for name, value in r["slot_values"].items():
            domain, slot = name.split("-", 1)
            gold.setdefault(domain, {})[slot] = value
        rows.append({"dialogue_id": r["ID"], "turn_index": r["turn_id"], "gold": gold, "output": r["completion"]})
    path = tmp_path / "completions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, records


@pytest.mark.realdata
def test_real_running_log_completions_as_changes(tmp_path: Path) -> None:
    """gpt-DST's GPT-3.5 running log (50 turns): its script prints JGA 0.56 on the post-processed `pred`
    (typo-fixed against the ontology, names without values silently skipped). The model's own words,
    each turn a change accumulated over the dialogue: 39 turns read, 11 answer with slot names and no
    value (unparseable), and JGA 21/50 (checked below by a plain dict accumulation of the readings)."""
    path, records = _running_log_as_llm(tmp_path)
    tally = TextTally()
    for r in records:
        tally.add(read_text(r["completion"]), r["completion"])
    assert (tally.parsed, tally.unparseable, dict(tally.shapes)) == (39, 11, {NAMES_ONLY: 11})

    expected, state, dialogue = 0, {}, None
    for r in records:
        if r["ID"] != dialogue:
            state, dialogue = {}, r["ID"]
        reading = read_text(r["completion"])
        for domain, slot, _, value in reading.triples or ():
            if value.lower() in ("", "none", "[delete]"):
                state.pop(f"{domain}-{slot}", None)
            else:
                state[f"{domain}-{slot}"] = value
        expected += reading.parsed and state == r["slot_values"]
    assert expected == 21

    result = metric_suite(score_run(load_run(path, pred_deltas=True), "exact"))
    assert result["n_turns"] == 50 and result["jga"] == pytest.approx(21 / 50)
    assert result["unparseable_turns"] == 11
    assert sum(r["pred"] == r["slot_values"] for r in records) == 28  # the repository's own 0.56


def test_accumulation_is_linear_and_bounded() -> None:
    """Changes stay one row each; the cumulative rows are laid out once and refused past the limit."""
    n = 3
    turns = pd.DataFrame({"dialogue_id": ["d"] * n, "turn_index": range(n)})
    changes = pd.DataFrame(
        {
            "dialogue_id": ["d"] * n,
            "turn_index": range(n),
            "domain": ["hotel"] * n,
            "slot": [f"s{i}" for i in range(n)],
            "relation": ["="] * n,
            "value": ["v"] * n,
        }
    )
    assert len(accumulate_deltas(turns, changes)) == n * (n + 1) // 2
    n = 4_000  # 8,002,000 cumulative rows: more than the limit
    assert n * (n + 1) // 2 > MAX_ACCUMULATED_ROWS
    turns = pd.DataFrame({"dialogue_id": ["d"] * n, "turn_index": range(n)})
    changes = pd.DataFrame(
        {
            "dialogue_id": ["d"] * n,
            "turn_index": range(n),
            "domain": ["hotel"] * n,
            "slot": [f"s{i}" for i in range(n)],
            "relation": ["="] * n,
            "value": ["v"] * n,
        }
    )
    with pytest.raises(AccumulationTooLarge, match="8,002,000 cumulative state rows"):
        accumulate_deltas(turns, changes)


def test_too_many_accumulated_rows_is_one_line_naming_the_file(tmp_path: Path) -> None:
    n = 4_000
    rows = [{"dialogue_id": "d", "turn_index": t, "gold": {}, "output": f"hotel-s{t} = v"} for t in range(n)]
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_run(path, pred_deltas=True)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path} [format: llm]") and "limit 5,000,000" in message


HOSTILE = {
    "dash then spaces": lambda n: "-" + " " * n,
    "dash-separated words": lambda n: "a-" * (n // 2),
    "open parentheses": lambda n: "(" * n,
    "close parentheses": lambda n: ")" * n,
    "nested groups": lambda n: "(" * (n // 2) + ")" * (n // 2),
    "commas after an assignment": lambda n: "hotel-area = " + "," * n,
    "assignments on one line": lambda n: "(hotel-area = x), " * (n // 18),
    "equals signs": lambda n: "=" * n,
    "colons": lambda n: ":" * n,
    "fences": lambda n: "```" * (n // 3),
    "braces": lambda n: "{" * n,
    "names without values": lambda n: "hotel-area, " * (n // 12),
    "header and names": lambda n: "Changed domain-slots: " + "hotel-area, " * (n // 12),
    "SQL conditions": lambda n: "hotel WHERE " + "area = 'x' AND " * (n // 15),
    "lines of spaces": lambda n: " \n" * (n // 2),
}


def _seconds(text: str) -> float:
    """The CPU time of this process reading `text`, best of five: other processes on a busy machine do not
    count (wall-clock time there made the ratio flaky), and the best of several drops a cold cache."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        read_text(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_reading_is_linear_on_hostile_text(name: str) -> None:
    """Ten times the text costs about ten times the time (a quadratic pattern costs a hundred: the old
    state-line pattern took 10 s on a '-' followed by 20,000 spaces); the format's limit of 200,000
    characters stays well under a second."""
    make = HOSTILE[name]
    small, large = _seconds(make(10_000)), _seconds(make(100_000))
    assert large < 30 * max(small, 1e-3), (name, small, large)
    assert _seconds(make(200_000)) < 2.0, name
