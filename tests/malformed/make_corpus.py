"""Write the malformed-input corpus and its expectations (EXPECTED.json), deterministically.

Run `python tests/malformed/make_corpus.py` from the project root; the output is byte-identical on
every run (no randomness, fixed archive timestamps), so the committed files can be checked against
a fresh build (`--check`).

Each case is one file (or a directory / a path that must not exist) and an expectation:

- `format`: the format the message must name in `[format: X]` ("unknown" when undetectable);
- `contains`: a substring of the problem the message must state;
- `dialogue_id`, `turn`, `field`: the first offending record, when one is locatable;
- `category`, `family`: what kind of damage, and which format family the file imitates;
- `force`: a format forced on the file (`--format X`), `gold_format` likewise for the gold side;
- `role`: "pred" (default) or "gold": which side of `load_run` the file is passed as;
- `pred_with`: the partner file (relative to this folder): the gold file for a pred-role case
  ("ids that match nothing"), the prediction file for a gold-role case;
- `stage`: "parse" when `parse_file` alone must already fail, "load" when only `load_run` can tell.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "EXPECTED.json"
PARTNERS = "partners"
HUGE = 12_000  # characters of a slot value: beyond the core's 10,000-character limit
ZIP_DATE = (2024, 1, 1, 0, 0, 0)

CATEGORIES = (
    "truncated",
    "empty",
    "binary",
    "encoding",
    "wrong_types",
    "duplicate_turns",
    "ids_match_nothing",
    "unknown_format",
    "huge_values",
    "mixed_formats",
    "bad_turn_index",
    "archive",
    "path",
    "forced_format",
    "limits",
)
FAMILIES = (
    "trade",
    "mwzeval",
    "multiwoz",
    "crosswoz",
    "dstc9",
    "dstc9-submission",
    "nested-list",
    "nested-dict",
    "risawoz",
    "dialogues",
    "jsonl",
    "csv",
    "convlab3",
    "convlab3-dialogues",
    "icdst",
    "checkdst",
    "llm-dst-eval",
    "correctness-vectors",
)


@dataclass
class Case:
    name: str
    category: str
    family: str
    data: bytes | None  # None: a directory (created) or a path that must not exist
    expect: dict[str, Any] = field(default_factory=dict)
    directory: bool = False


def js(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8")


def jl(*records: Any) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def zipped(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buffer.getvalue()


# --- well-formed building blocks ----------------------------------------------------------------


def trade_turn(gold: list[str], pred: list[str]) -> dict[str, Any]:
    return {"turn_belief": gold, "pred_bs_ptr": pred}


TRADE_OK = {
    "MUL0001.json": {
        "0": trade_turn(["hotel-area-east"], ["hotel-area-east"]),
        "1": trade_turn(["hotel-area-east", "hotel-stars-4"], ["hotel-area-east"]),
    }
}
MWZ_OK_TURN = {"response": "sure", "state": {"hotel": {"area": "east"}}}
MWZ_OK = {"mul0001": [MWZ_OK_TURN, {"response": "ok", "state": {"hotel": {"area": "east", "stars": "4"}}}]}


def multiwoz_dialogue(states: list[dict[str, Any]]) -> dict[str, Any]:
    log: list[dict[str, Any]] = []
    for i, state in enumerate(states):
        log.append({"text": f"user {i}", "metadata": {}})
        log.append({"text": f"system {i}", "metadata": state})
    return {"goal": {}, "log": log}


def mwz_meta(area: str = "", stars: str = "") -> dict[str, Any]:
    return {"hotel": {"semi": {"area": area, "stars": stars}, "book": {"booked": [], "day": ""}}}


def crosswoz_dialogue(kind: str, turns: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for user, system, state in turns:
        messages.append({"role": "usr", "content": user})
        messages.append({"role": "sys", "content": system, "sys_state_init": state})
    return {"type": kind, "messages": messages}


def dstc9_turn(usr: str, state: dict[str, Any], sys_: str | None = None) -> dict[str, Any]:
    return {"sys": sys_, "usr": usr, "state": state}


DSTC9_GOLD_OK = {
    "MUL0001": [
        dstc9_turn("a hotel in the east", {"hotel": {"area": "east", "stars": ""}}),
        dstc9_turn("four stars", {"hotel": {"area": "east", "stars": "4"}}, "which stars?"),
    ]
}
SPAN_OK = '( hotel ) area equal_to " east "'


def risawoz(dialogue_id: Any, turn: Any, gold: Any, prediction: Any) -> dict[str, Any]:
    return {"dialogue_id": dialogue_id, "turn_index": turn, "gold": gold, "prediction": prediction}


def ours(dialogue_id: Any, turn: Any, gold: Any, pred: Any) -> dict[str, Any]:
    return {"dialogue_id": dialogue_id, "turn_index": turn, "gold": gold, "pred": pred}


CSV_HEAD = "dialogue_id,turn_index,side,domain,slot,value\n"


def icdst(dialogue_id: Any, turn: Any, gold: Any, pred: Any) -> dict[str, Any]:
    return {"ID": dialogue_id, "turn_id": turn, "slot_values": gold, "pred": pred, "completion": "..."}


def checkdst(dial_id: Any, gold: Any, pred: Any) -> dict[str, Any]:
    return {"context": "<user> ...", "dial_id": dial_id, "gold": gold, "pred": pred}


def llm_eval(flag: Any, gold: Any, pred: Any) -> dict[str, Any]:
    return {"flag": flag, "predict": pred, "ground_truth": gold, "ground_truth_m24": gold}


def cl3_sample(utt_idx: int, area: str, pred: Any, dialogue_id: Any = "MUL0001.json") -> dict[str, Any]:
    """A ConvLab-3 prediction sample (merge_predict_res.py): gold state listing every slot, "" when empty."""
    return {
        "dialogue_id": dialogue_id,
        "utt_idx": utt_idx,
        "speaker": "user",
        "utterance": f"user {utt_idx}",
        "state": {"hotel": {"area": area, "stars": ""}},
        "predictions": {"state": pred},
    }


def cl3_samples() -> list[dict[str, Any]]:
    return [cl3_sample(0, "east", {"hotel": {"area": "east"}}), cl3_sample(2, "east", {"hotel": {"area": "west"}})]


def cl3_dialogue(*states: dict[str, Any] | None) -> dict[str, Any]:
    """A ConvLab-3 unified dialogue: user and system turns alternating, `state` on user turns (None: left out)."""
    turns: list[dict[str, Any]] = []
    for i, state in enumerate(states):
        user: dict[str, Any] = {"speaker": "user", "utterance": f"user {i}", "utt_idx": 2 * i}
        if state is not None:
            user["state"] = state
        turns += [user, {"speaker": "system", "utterance": f"system {i}", "utt_idx": 2 * i + 1}]
    return {
        "dataset": "multiwoz21",
        "data_split": "test",
        "dialogue_id": "multiwoz21-test-0",
        "original_id": "MUL0001.json",
        "turns": turns,
    }


def partners() -> dict[str, bytes]:
    """Well-formed files the malformed ones are paired with (not part of the corpus count)."""
    return {
        "ok_multiwoz_gold.json": js({"MUL0001.json": multiwoz_dialogue([mwz_meta("east"), mwz_meta("east", "4")])}),
        "ok_dstc9_gold.json": js(DSTC9_GOLD_OK),
        "ok_crosswoz_gold.json": js(
            {"1": crosswoz_dialogue("单领域", [("找酒店", "好的", {"酒店": {"名称": "", "评分": "4分"}})])}
        ),
        "ok_mwzeval_pred.json": js(MWZ_OK),
    }


# --- the corpus -----------------------------------------------------------------------------------


def cases() -> list[Case]:
    out: list[Case] = []

    def add(name: str, category: str, family: str, data: bytes | None, **expect: Any) -> None:
        expect.setdefault("stage", "parse")
        out.append(Case(name, category, family, data, expect))

    trade_text = js(TRADE_OK)
    # truncated / empty / binary / encoding -------------------------------------------------------
    add(
        "trade_truncated.json",
        "truncated",
        "trade",
        trade_text[: len(trade_text) // 2],
        format="unknown",
        contains="truncated JSON",
    )
    add("mwzeval_truncated.json", "truncated", "mwzeval", js(MWZ_OK)[:-40], format="unknown", contains="truncated JSON")
    add(
        "risawoz_truncated_line.jsonl",
        "truncated",
        "risawoz",
        jl(risawoz("d1", 0, SPAN_OK, SPAN_OK), risawoz("d1", 1, SPAN_OK, "null"))[:-25],
        format="unknown",
        contains="line 2 is not valid JSON",
    )
    add("empty.json", "empty", "trade", b"", format="unknown", contains="file is empty")
    add("whitespace_only.jsonl", "empty", "jsonl", b"  \n\n\t\n", format="unknown", contains="file is empty")
    add("empty_object.json", "empty", "mwzeval", b"{}\n", format="unknown", contains="empty JSON object")
    add("csv_header_only.csv", "empty", "csv", CSV_HEAD.encode(), format="csv", contains="header but no rows")
    add(
        "binary_noise.json",
        "binary",
        "trade",
        bytes((i * 37 + 11) % 256 for i in range(512)),
        format="unknown",
        contains="binary",
    )
    add(
        "binary_png.jsonl",
        "binary",
        "jsonl",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64)),
        format="unknown",
        contains="binary",
    )
    add(
        "latin1.csv",
        "encoding",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,restaurant,name,caf\xe9 uno\n").encode("latin-1"),
        format="unknown",
        contains="not UTF-8",
    )
    add("utf16.json", "encoding", "trade", json.dumps(TRADE_OK).encode("utf-16"), format="unknown", contains="UTF-8")
    # wrong types ---------------------------------------------------------------------------------
    bad = json.loads(json.dumps(TRADE_OK))
    bad["MUL0001.json"]["1"]["turn_belief"] = "hotel-area-east"
    add(
        "trade_turn_belief_string.json",
        "wrong_types",
        "trade",
        js(bad),
        format="trade",
        contains="list of 'domain-slot-value' strings",
        dialogue_id="MUL0001.json",
        turn=1,
        field="turn_belief",
    )
    bad = json.loads(json.dumps(TRADE_OK))
    # Gold stays strict; a predicted string that does not split is an off-vocabulary prediction (issue 38).
    bad["MUL0001.json"]["1"]["turn_belief"] = ["hotel_area_east"]
    add(
        "trade_bad_triple.json",
        "wrong_types",
        "trade",
        js(bad),
        format="trade",
        contains="'domain-slot-value'",
        dialogue_id="MUL0001.json",
        turn=1,
        field="turn_belief",
    )
    bad = json.loads(json.dumps(TRADE_OK))
    del bad["MUL0001.json"]["1"]["pred_bs_ptr"]
    add(
        "trade_missing_pred.json",
        "wrong_types",
        "trade",
        js(bad),
        format="trade",
        contains="missing key",
        dialogue_id="MUL0001.json",
        turn=1,
        field="pred_bs_ptr",
    )
    add(
        "mwzeval_state_list.json",
        "wrong_types",
        "mwzeval",
        js({"mul0001": [MWZ_OK_TURN, {"response": "x", "state": ["hotel", "area", "east"]}]}),
        format="mwzeval",
        contains="state must be an object",
        dialogue_id="mul0001",
        turn=1,
        field="state",
    )
    add(
        "mwzeval_value_object.json",
        "wrong_types",
        "mwzeval",
        js({"mul0001": [MWZ_OK_TURN, {"response": "x", "state": {"hotel": {"area": {"v": "east"}}}}]}),
        format="mwzeval",
        contains="slot value must be",
        dialogue_id="mul0001",
        turn=1,
        field="state.hotel.area",
    )
    add(
        "multiwoz_odd_log.json",
        "wrong_types",
        "multiwoz",
        js({"MUL0001.json": {"goal": {}, "log": [*multiwoz_dialogue([mwz_meta("east")])["log"], {"text": "bye"}]}}),
        format="multiwoz",
        contains="odd number of entries",
        dialogue_id="MUL0001.json",
        turn=1,
        field="log",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    dialogue = multiwoz_dialogue([mwz_meta("east"), mwz_meta("east", "4")])
    dialogue["log"][3]["metadata"]["hotel"]["semi"] = ["area", "east"]
    add(
        "multiwoz_semi_list.json",
        "wrong_types",
        "multiwoz",
        js({"MUL0001.json": dialogue}),
        format="multiwoz",
        contains="must be an object",
        dialogue_id="MUL0001.json",
        turn=1,
        field="metadata.hotel.semi",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    dialogue = multiwoz_dialogue([mwz_meta("east"), mwz_meta("east", "4")])
    dialogue["log"][2] = "user 1"
    add(
        "multiwoz_log_entry_string.json",
        "wrong_types",
        "multiwoz",
        js({"MUL0001.json": dialogue}),
        format="multiwoz",
        contains="a log entry must be an object",
        dialogue_id="MUL0001.json",
        turn=1,
        field="log",
    )
    dialogue = crosswoz_dialogue("单领域", [("找酒店", "好的", {"酒店": {"名称": ""}}), ("四分", "好", {})])
    del dialogue["messages"][3]["sys_state_init"]
    add(
        "crosswoz_no_state.json",
        "wrong_types",
        "crosswoz",
        js({"1": dialogue}),
        format="crosswoz",
        contains="no sys_state_init",
        dialogue_id="1",
        turn=1,
        field="sys_state_init",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    dialogue = crosswoz_dialogue("单领域", [("找酒店", "好的", {"酒店": {"名称": ""}})])
    dialogue["messages"][0]["content"] = 42
    add(
        "crosswoz_content_number.json",
        "wrong_types",
        "crosswoz",
        js({"1": dialogue}),
        format="crosswoz",
        contains="utterance must be a string",
        dialogue_id="1",
        turn=0,
        field="user",
    )
    gold = json.loads(json.dumps(DSTC9_GOLD_OK))
    del gold["MUL0001"][1]["state"]
    add(
        "dstc9_gold_missing_state.json",
        "wrong_types",
        "dstc9",
        js(gold),
        format="dstc9",
        contains="missing key",
        dialogue_id="MUL0001",
        turn=1,
        field="state",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    add(
        "dstc9_submission_state_string.json",
        "wrong_types",
        "dstc9-submission",
        js({"MUL0001": [{"hotel": {"area": "east"}}, "hotel-area-east"]}),
        format="dstc9-submission",
        contains="state must be an object",
        dialogue_id="MUL0001",
        turn=1,
        field="state",
    )
    add(
        "nested_dict_pred_number.json",
        "wrong_types",
        "nested-dict",
        js({"MUL0001": {"0": {"gold": {"hotel": {"area": "east"}}, "pred": {}}, "1": {"gold": {}, "pred": 5}}}),
        format="nested",
        contains="state must be an object",
        dialogue_id="MUL0001",
        turn=1,
        field="pred",
    )
    add(
        "risawoz_gold_garbled.jsonl",
        "wrong_types",
        "risawoz",
        jl(risawoz("d1", 0, SPAN_OK, SPAN_OK), risawoz("d1", 1, 'area equal_to " east "', "null")),
        format="risawoz",
        contains="must start with '( domain )'",
        dialogue_id="d1",
        turn=1,
        field="gold",
    )
    add(
        "risawoz_missing_prediction.jsonl",
        "wrong_types",
        "risawoz",
        jl(risawoz("d1", 0, SPAN_OK, SPAN_OK), {"dialogue_id": "d1", "turn_index": 1, "gold": SPAN_OK}),
        format="risawoz",
        contains="line 2 lacks a required key",
        dialogue_id="d1",
        turn=1,
        field="prediction",
    )
    add(
        "dialogues_state_list.json",
        "wrong_types",
        "dialogues",
        js({"d1": {"turns": {"1": {"state": SPAN_OK}, "2": {"state": ["hotel", "area", "east"]}}}}),
        format="dialogues",
        contains="state must be a string",
        dialogue_id="d1",
        turn=1,
        field="state",
    )
    add(
        "jsonl_gold_number.jsonl",
        "wrong_types",
        "jsonl",
        jl(ours("MUL0001", 0, {"hotel": {"area": "east"}}, {}), ours("MUL0001", 1, 7, {})),
        format="jsonl",
        contains="state must be an object",
        dialogue_id="MUL0001",
        turn=1,
        field="gold",
    )
    add(
        "jsonl_line_array.jsonl",
        "wrong_types",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ["MUL0001", 1, {}, {}]),
        format="unknown",
        contains="line 2 is a JSON list",
    )
    add(
        "jsonl_dialogue_id_object.jsonl",
        "wrong_types",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ours({"id": "MUL0002"}, 0, {}, {})),
        format="jsonl",
        contains="dialogue_id",
        turn=0,
        field="dialogue_id",
    )
    add(
        "jsonl_triple_null_domain.jsonl",
        "wrong_types",
        "jsonl",
        jl(ours("MUL0001", 0, [[None, "area", "east"]], []), ours("MUL0001", 1, [], [])),
        format="jsonl",
        contains="domain",
        dialogue_id="MUL0001",
        turn=0,
        field="gold",
    )
    add(
        "csv_empty_dialogue_id.csv",
        "wrong_types",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\n,0,pred,hotel,area,east\n").encode(),
        format="csv",
        contains="dialogue_id",
        turn=0,
        field="dialogue_id",
    )
    add(
        "csv_bad_side.csv",
        "wrong_types",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\nMUL0001,0,both,hotel,area,east\n").encode(),
        format="csv",
        contains="side must be 'gold' or 'pred'",
        dialogue_id="MUL0001",
        turn=0,
        field="side",
    )
    add(
        "csv_extra_fields.csv",
        "wrong_types",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\nMUL0001,1,gold,hotel,name,a, b and c\n").encode(),
        format="unknown",
        contains="line 3 has more fields than the header",
    )
    add(
        "top_level_string.json",
        "wrong_types",
        "mwzeval",
        b'"MUL0001"\n',
        format="unknown",
        contains="format not recognised",
    )
    # duplicate turns -----------------------------------------------------------------------------
    add(
        "trade_duplicate_turn.json",
        "duplicate_turns",
        "trade",
        js({"MUL0001.json": {"0": trade_turn([], []), "1": trade_turn([], []), "01": trade_turn([], [])}}),
        format="trade",
        contains="duplicate turn",
        dialogue_id="MUL0001.json",
        turn=1,
    )
    add(
        "nested_list_duplicate_turn.json",
        "duplicate_turns",
        "nested-list",
        js(
            {
                "MUL0001": [
                    {"turn": 0, "gold": {}, "pred": {}},
                    {"turn": 1, "gold": {}, "pred": {}},
                    {"turn": 1, "gold": {}, "pred": {}},
                ]
            }
        ),
        format="nested",
        contains="duplicate turn",
        dialogue_id="MUL0001",
        turn=1,
    )
    add(
        "risawoz_duplicate_turn.jsonl",
        "duplicate_turns",
        "risawoz",
        jl(risawoz("d1", 0, SPAN_OK, SPAN_OK), risawoz("d1", 1, "null", "null"), risawoz("d1", 1, "null", "null")),
        format="risawoz",
        contains="duplicate turn",
        dialogue_id="d1",
        turn=1,
    )
    add(
        "jsonl_duplicate_turn.jsonl",
        "duplicate_turns",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ours("MUL0001", 0, {}, {})),
        format="jsonl",
        contains="duplicate turn",
        dialogue_id="MUL0001",
        turn=0,
    )
    add(
        "mwzeval_case_collision.json",
        "duplicate_turns",
        "mwzeval",
        js({"mul0001": [MWZ_OK_TURN], "MUL0001.json": [MWZ_OK_TURN]}),
        format="mwzeval",
        contains="two dialogues map to the same id",
        dialogue_id="MUL0001.json",
        turn=0,
        stage="load",
        pred_with=f"{PARTNERS}/ok_multiwoz_gold.json",
    )
    # bad turn index ------------------------------------------------------------------------------
    add(
        "trade_negative_turn.json",
        "bad_turn_index",
        "trade",
        js({"MUL0001.json": {"0": trade_turn([], []), "-1": trade_turn([], [])}}),
        format="trade",
        contains="out of range",
        dialogue_id="MUL0001.json",
        turn=-1,
        field="turn",
    )
    add(
        "trade_word_turn.json",
        "bad_turn_index",
        "trade",
        js({"MUL0001.json": {"0": trade_turn([], []), "first": trade_turn([], [])}}),
        format="trade",
        contains="turn index must be an integer",
        dialogue_id="MUL0001.json",
        turn="first",
        field="turn",
    )
    add(
        "nested_list_float_turn.json",
        "bad_turn_index",
        "nested-list",
        js({"MUL0001": [{"turn": 0, "gt": {}, "pr": {}}, {"turn": 1.5, "gt": {}, "pr": {}}]}),
        format="nested",
        contains="turn index must be an integer",
        dialogue_id="MUL0001",
        turn=1.5,
        field="turn",
    )
    add(
        "jsonl_negative_turn.jsonl",
        "bad_turn_index",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ours("MUL0001", -3, {}, {})),
        format="jsonl",
        contains="out of range",
        dialogue_id="MUL0001",
        turn=-3,
        field="turn_index",
    )
    add(
        "jsonl_bool_turn.jsonl",
        "bad_turn_index",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ours("MUL0001", True, {}, {})),
        format="jsonl",
        contains="turn index must be an integer",
        dialogue_id="MUL0001",
        turn=True,
        field="turn_index",
    )
    add(
        "csv_word_turn.csv",
        "bad_turn_index",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\nMUL0001,two,pred,hotel,area,east\n").encode(),
        format="csv",
        contains="turn index must be an integer",
        dialogue_id="MUL0001",
        turn="two",
        field="turn_index",
    )
    add(
        "dialogues_turn_key_word.json",
        "bad_turn_index",
        "dialogues",
        js({"d1": {"turns": {"1": {"state": SPAN_OK}, "second": {"state": "null"}}}}),
        format="dialogues",
        contains="turn index must be an integer",
        dialogue_id="d1",
        turn="second",
        field="turn",
    )
    # ids that match nothing ----------------------------------------------------------------------
    add(
        "mwzeval_ids_nomatch.json",
        "ids_match_nothing",
        "mwzeval",
        js({"sng9999": [MWZ_OK_TURN], "pmul9998": [MWZ_OK_TURN]}),
        format="mwzeval",
        contains="no predicted dialogue id matches",
        dialogue_id="sng9999",
        stage="load",
        pred_with=f"{PARTNERS}/ok_multiwoz_gold.json",
    )
    add(
        "dstc9_submission_ids_nomatch.json",
        "ids_match_nothing",
        "dstc9-submission",
        js({"SNG0042": [{"hotel": {"area": "east"}}]}),
        format="dstc9-submission",
        contains="no predicted dialogue id matches",
        dialogue_id="SNG0042",
        stage="load",
        pred_with=f"{PARTNERS}/ok_dstc9_gold.json",
    )
    add(
        "dialogues_ids_nomatch.json",
        "ids_match_nothing",
        "dialogues",
        js({"d77": {"turns": {"1": {"state": SPAN_OK}}}}),
        format="dialogues",
        contains="no predicted dialogue id matches",
        dialogue_id="d77",
        stage="load",
        pred_with=f"{PARTNERS}/ok_crosswoz_gold.json",
    )
    add(
        "jsonl_ids_nomatch.jsonl",
        "ids_match_nothing",
        "jsonl",
        jl({"dialogue_id": "X1", "turn_index": 0, "pred": {"hotel": {"area": "east"}}}),
        format="jsonl",
        contains="no predicted dialogue id matches",
        dialogue_id="X1",
        stage="load",
        pred_with=f"{PARTNERS}/ok_dstc9_gold.json",
    )
    add(
        "mwzeval_no_gold.json",
        "ids_match_nothing",
        "mwzeval",
        js(MWZ_OK),
        format="mwzeval",
        contains="predictions only",
        stage="load",
    )
    # unknown format ------------------------------------------------------------------------------
    add(
        "unknown_object.json",
        "unknown_format",
        "mwzeval",
        js({"MUL0001": {"foo": {"bar": 1}}}),
        format="unknown",
        contains="format not recognised",
    )
    add(
        "unknown_array.json",
        "unknown_format",
        "jsonl",
        b"[1, 2, 3]\n",
        format="unknown",
        contains="format not recognised",
    )
    add(
        "unknown_prose.txt",
        "unknown_format",
        "trade",
        b"The model predicted hotel area east.\n",
        format="unknown",
        contains="malformed JSON",
    )
    add(
        "csv_missing_columns.csv",
        "unknown_format",
        "csv",
        b"dialogue_id,turn,domain,slot,value\nMUL0001,0,hotel,area,east\n",
        format="unknown",
        contains="format not recognised",
    )
    add(
        "unknown_forced_name.json",
        "unknown_format",
        "trade",
        js(TRADE_OK),
        format="bogus",
        contains="unknown format 'bogus'",
        force="bogus",
        cli="argparse",
    )
    # huge values ---------------------------------------------------------------------------------
    add(
        "mwzeval_huge_value.json",
        "huge_values",
        "mwzeval",
        js({"mul0001": [MWZ_OK_TURN, {"response": "x", "state": {"hotel": {"name": "a" * HUGE}}}]}),
        format="mwzeval",
        contains="too long",
        dialogue_id="mul0001",
        turn=1,
        field="state.hotel.name",
    )
    add(
        "trade_huge_value.json",
        "huge_values",
        "trade",
        js({"MUL0001.json": {"0": trade_turn(["hotel-name-" + "b" * HUGE], [])}}),
        format="trade",
        contains="too long",
        dialogue_id="MUL0001.json",
        turn=0,
        field="turn_belief",
    )
    add(
        "risawoz_huge_value.jsonl",
        "huge_values",
        "risawoz",
        jl(risawoz("d1", 0, '( hotel ) name equal_to " ' + "c" * HUGE + ' "', "null")),
        format="risawoz",
        contains="too long",
        dialogue_id="d1",
        turn=0,
        field="gold",
    )
    add(
        "jsonl_huge_turn_index.jsonl",
        "huge_values",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), ours("MUL0001", 10**30, {}, {})),
        format="jsonl",
        contains="out of range",
        dialogue_id="MUL0001",
        turn=10**30,
        field="turn_index",
    )
    add(
        "deeply_nested.json",
        "huge_values",
        "mwzeval",
        b'{"mul0001": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
        format="unknown",
        contains="nested too deeply",
    )
    # mixed formats -------------------------------------------------------------------------------
    add(
        "mixed_trade_then_mwzeval.json",
        "mixed_formats",
        "trade",
        js({**TRADE_OK, "MUL0002.json": [MWZ_OK_TURN]}),
        format="trade",
        contains="a dialogue must be an object",
        dialogue_id="MUL0002.json",
    )
    add(
        "mixed_trade_then_nested.json",
        "mixed_formats",
        "trade",
        js({**TRADE_OK, "MUL0002.json": {"0": {"gold": {}, "pred": {}}}}),
        format="trade",
        contains="missing key",
        dialogue_id="MUL0002.json",
        turn=0,
        field="turn_belief",
    )
    add(
        "mixed_mwzeval_then_submission.json",
        "mixed_formats",
        "mwzeval",
        js({"mul0001": [MWZ_OK_TURN], "mul0002": [{"hotel": {"area": "east"}}]}),
        format="mwzeval",
        contains="missing key",
        dialogue_id="mul0002",
        turn=0,
        field="state",
    )
    add(
        "mixed_jsonl_then_trade.jsonl",
        "mixed_formats",
        "jsonl",
        jl(ours("MUL0001", 0, {}, {}), {"MUL0001.json": {"1": trade_turn([], [])}}),
        format="jsonl",
        contains="line 2 lacks a required key",
        field="dialogue_id",
    )
    add(
        "mixed_csv_then_json.csv",
        "mixed_formats",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\n" + json.dumps(ours("MUL0001", 1, {}, {})) + "\n").encode(),
        format="csv",
        contains="turn index must be an integer",
        dialogue_id='{"dialogue_id": "MUL0001"',
        field="turn_index",
    )
    # archives ------------------------------------------------------------------------------------
    add(
        "trade_truncated.json.gz", "archive", "trade", gz(trade_text)[:-12], format="unknown", contains="truncated gzip"
    )
    bad = json.loads(json.dumps(TRADE_OK))
    bad["MUL0001.json"]["1"]["pred_bs_ptr"] = [["hotel", "area", "east"]]
    add(
        "trade_wrong_type.json.gz",
        "archive",
        "trade",
        gz(js(bad)),
        format="trade",
        contains="'domain-slot-value' strings",
        dialogue_id="MUL0001.json",
        turn=1,
        field="pred_bs_ptr",
    )
    add(
        "two_members.zip",
        "archive",
        "mwzeval",
        zipped(("preds.json", js(MWZ_OK)), ("more_preds.json", js(MWZ_OK))),
        format="unknown",
        contains="exactly one file",
    )
    add(
        "corrupt.zip",
        "archive",
        "trade",
        zipped(("t.json", trade_text))[:30] + b"\x00garbage" * 8,
        format="unknown",
        contains="zip archive",
    )
    add("empty_archive.zip", "archive", "trade", zipped(), format="unknown", contains="exactly one file, found: none")
    add(
        "mwzeval_state_list.json.zip",
        "archive",
        "mwzeval",
        zipped(("mwz.json", js({"mul0001": [MWZ_OK_TURN, {"response": "x", "state": "hotel-area-east"}]}))),
        format="mwzeval",
        contains="state must be an object",
        dialogue_id="mul0001",
        turn=1,
        field="state",
    )
    # paths ---------------------------------------------------------------------------------------
    add("is_a_directory.json", "path", "trade", None, format="unknown", contains="is a directory")
    out[-1].directory = True
    add("does_not_exist.json", "path", "mwzeval", None, format="unknown", contains="file not found")
    # forced format mismatches ------------------------------------------------------------------
    add(
        "forced_trade_on_mwzeval.json",
        "forced_format",
        "mwzeval",
        js(MWZ_OK),
        force="trade",
        format="trade",
        contains="does not have the trade shape",
    )
    add(
        "forced_csv_on_trade.json",
        "forced_format",
        "trade",
        trade_text,
        force="csv",
        format="csv",
        contains="format csv is csv, but the file reads as json",
    )
    add(
        "forced_mwzeval_on_dstc9_gold.json",
        "forced_format",
        "dstc9",
        js(DSTC9_GOLD_OK),
        force="mwzeval",
        format="mwzeval",
        contains="does not have the mwzeval shape",
    )
    add(
        "forced_jsonl_on_csv.csv",
        "forced_format",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\n").encode(),
        force="jsonl",
        format="jsonl",
        contains="format jsonl is jsonl, but the file reads as csv",
    )
    add(
        "forced_jsonl_on_risawoz.jsonl",
        "forced_format",
        "risawoz",
        jl(risawoz("d1", 0, SPAN_OK, SPAN_OK), risawoz("d1", 1, SPAN_OK, "null")),
        force="jsonl",
        format="jsonl",
        contains="gold states only",
        stage="load",
    )
    add(
        "jsonl_pred_only_no_gold.jsonl",
        "ids_match_nothing",
        "jsonl",
        jl({"dialogue_id": "MUL0001", "turn_index": 0, "pred": {"hotel": {"area": "east"}}}),
        format="jsonl",
        contains="predictions only",
        stage="load",
    )
    add(
        "forced_dstc9_gold_format_on_pred.json",
        "forced_format",
        "mwzeval",
        js(MWZ_OK),
        format="dstc9",
        contains="does not have the dstc9 shape",
        role="gold",
        gold_format="dstc9",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    # ConvLab-3 unified predictions and dialogues ---------------------------------------------------
    samples = cl3_samples()
    del samples[1]["state"]
    add(
        "convlab3_sample_without_state.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="sample 1 (utt_idx 2) has no gold state",
        dialogue_id="MUL0001.json",
        turn=1,
        field="state",
    )
    samples = cl3_samples()
    samples[1]["state"] = [["hotel", "area", "east"]]
    add(
        "convlab3_state_not_object.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="sample 1 (utt_idx 2): state must be an object",
        dialogue_id="MUL0001.json",
        turn=1,
        field="state",
    )
    samples = cl3_samples()
    samples[1]["state"]["hotel"]["area"] = ["east", "centre"]
    add(
        "convlab3_gold_value_list.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="sample 1 (utt_idx 2): slot value must be a string",
        dialogue_id="MUL0001.json",
        turn=1,
        field="state.hotel.area",
    )
    samples = cl3_samples()
    samples[1]["predictions"]["state"] = {"hotel": {"stars": 4}}
    add(
        "convlab3_pred_value_number.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="predicted value of a slot the gold state lists must be a string",
        dialogue_id="MUL0001.json",
        turn=1,
        field="predictions.state.hotel.stars",
    )
    samples = cl3_samples()
    samples[1]["predictions"] = "[hotel]([area][east])"
    add(
        "convlab3_predictions_string.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="predictions must be an object",
        dialogue_id="MUL0001.json",
        turn=1,
        field="predictions",
    )
    add(
        "convlab3_sample_not_object.json",
        "wrong_types",
        "convlab3",
        js([cl3_samples()[0], "MUL0001.json user 2"]),
        format="convlab3",
        contains="sample 1 must be an object, got a JSON string",
    )
    samples = cl3_samples()
    del samples[1]["dialogue_id"]
    add(
        "convlab3_missing_dialogue_id.json",
        "wrong_types",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="sample 1: dialogue_id must be a string, got missing",
        field="dialogue_id",
    )
    samples = cl3_samples()
    del samples[1]["utt_idx"]
    add(
        "convlab3_missing_utt_idx.json",
        "bad_turn_index",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="sample 1: utt_idx must be an integer",
        dialogue_id="MUL0001.json",
        field="utt_idx",
    )
    samples = [*cl3_samples(), cl3_sample(2, "east", {"hotel": {"area": "east"}})]
    add(
        "convlab3_duplicate_utt_idx.json",
        "duplicate_turns",
        "convlab3",
        js(samples),
        format="convlab3",
        contains="samples 1 and 2 of this dialogue have the same utt_idx 2",
        dialogue_id="MUL0001.json",
        turn=1,
        field="utt_idx",
    )
    dialogue = cl3_dialogue({"hotel": {"area": "east"}}, {"hotel": {"area": "east"}})
    dialogue["turns"][2]["utt_idx"] = 0
    add(
        "convlab3_dialogues_duplicate_utt_idx.json",
        "duplicate_turns",
        "convlab3-dialogues",
        js([dialogue]),
        format="convlab3-dialogues",
        contains="dialogue 0: two turns have the same utt_idx 0",
        dialogue_id="MUL0001.json",
        field="utt_idx",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    dialogue = cl3_dialogue({"hotel": {"area": "east"}}, {"hotel": {"area": 4}})
    add(
        "convlab3_dialogues_value_number.json",
        "wrong_types",
        "convlab3-dialogues",
        js([dialogue]),
        format="convlab3-dialogues",
        contains="dialogue 0, utt_idx 2: slot value must be a string",
        dialogue_id="MUL0001.json",
        turn=1,
        field="state.hotel.area",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    add(
        "convlab3_dialogues_no_state.json",
        "empty",
        "convlab3-dialogues",
        js([cl3_dialogue(None, None)]),
        format="convlab3-dialogues",
        contains="no user turn holds a state",
        role="gold",
        pred_with=f"{PARTNERS}/ok_mwzeval_pred.json",
    )
    # real files' families declared as mappings (issue 38) ----------------------------------------
    taxi = {"taxi-leaveat": "17:15"}
    add(
        "icdst_pred_list.json",
        "wrong_types",
        "icdst",
        js([icdst("SNG0073.json", 0, taxi, taxi), icdst("SNG0073.json", 1, taxi, ["taxi-leaveat-17:15"])]),
        format="icdst",
        contains="state must be an object {'domain-slot': value}, got a JSON array",
        dialogue_id="SNG0073.json",
        turn=1,
        field="pred",
    )
    second = icdst("SNG0073.json", 1, taxi, taxi)
    del second["pred"]
    add(
        "icdst_missing_pred.json",
        "wrong_types",
        "icdst",
        js([icdst("SNG0073.json", 0, taxi, taxi), second]),
        format="icdst",
        contains="record 2 lacks the pred field 'pred'",
        dialogue_id="SNG0073.json",
        turn=1,
        field="pred",
    )
    add(
        "icdst_gold_key_without_domain.json",
        "wrong_types",
        "icdst",
        js([icdst("SNG0073.json", 0, taxi, taxi), icdst("SNG0073.json", 1, {"leaveat": "17:15"}, taxi)]),
        format="icdst",
        contains="key 'leaveat' is not 'domain-slot'",
        dialogue_id="SNG0073.json",
        turn=1,
        field="slot_values",
    )
    add(
        "icdst_duplicate_turn.json",
        "duplicate_turns",
        "icdst",
        js([icdst("SNG0073.json", 0, taxi, taxi), icdst("SNG0073.json", 0, taxi, {})]),
        format="icdst",
        contains="record 2: duplicate turn",
        dialogue_id="SNG0073.json",
        turn=0,
    )
    add(
        "icdst_turn_text.json",
        "bad_turn_index",
        "icdst",
        js([icdst("SNG0073.json", 0, taxi, taxi), icdst("SNG0073.json", "one", taxi, taxi)]),
        format="icdst",
        contains="turn index must be an integer",
        dialogue_id="SNG0073.json",
        turn="one",
        field="turn_id",
    )
    line = "hotel internet yes, hotel type guesthouse,"
    add(
        "checkdst_dial_id_without_turn.jsonl",
        "bad_turn_index",
        "checkdst",
        jl(checkdst("mul0003-0", line, line), checkdst("mul0003", line, line)),
        format="checkdst",
        contains="record 2: id 'mul0003' does not match id_pattern",
        dialogue_id="mul0003",
        field="dial_id",
    )
    add(
        "checkdst_pred_number.jsonl",
        "wrong_types",
        "checkdst",
        jl(checkdst("mul0003-0", line, line), checkdst("mul0003-1", line, 5)),
        format="checkdst",
        contains="a linearised state must be a string, got a JSON number",
        dialogue_id="mul0003",
        turn=1,
        field="pred",
    )
    add(
        "llm_dst_eval_gold_object_value.json",
        "wrong_types",
        "llm-dst-eval",
        js(
            [
                llm_eval("SNG0073.json-0", taxi, taxi),
                llm_eval("SNG0073.json-1", {"taxi-leaveat": {"at": "17:15"}}, taxi),
            ]
        ),
        format="llm-dst-eval",
        contains="slot value must be a string, number or list, got an object",
        dialogue_id="SNG0073.json",
        turn=1,
        field="ground_truth.taxi-leaveat",
    )
    add(
        "llm_dst_eval_record_not_object.json",
        "wrong_types",
        "llm-dst-eval",
        js([llm_eval("SNG0073.json-0", taxi, taxi), ["SNG0073.json-1"]]),
        format="llm-dst-eval",
        contains="record 2 must be an object, got a JSON array",
        dialogue_id="<record 2>",
    )
    add(
        "ten_members.zip",
        "archive",
        "checkdst",
        zipped(*((f"run{i}/pred.jsonl", jl(checkdst("mul0003-0", line, line))) for i in range(10))),
        format="unknown",
        contains="found 10: run0/pred.jsonl, run1/pred.jsonl, run2/pred.jsonl, run3/pred.jsonl, run4/pred.jsonl, "
        "run5/pred.jsonl, run6/pred.jsonl, run7/pred.jsonl, run8/pred.jsonl, run9/pred.jsonl "
        "(name one as ten_members.zip::<member>)",
    )
    # Per-slot correctness vectors (the FGA repository's trippy_result.json): 0/1 per slot and turn.
    add(
        "vectors_entry_two.json",
        "wrong_types",
        "correctness-vectors",
        js({"MUL0001.json": {"0": [1, 1, 0], "1": [1, 2, 0]}}),
        format="correctness-vectors",
        contains="each entry must be 1 (slot right) or 0 (slot wrong), got 2",
        dialogue_id="MUL0001.json",
        turn="1",
        field="[1]",
    )
    add(
        "vectors_length_changes.json",
        "wrong_types",
        "correctness-vectors",
        js({"MUL0001.json": {"0": [1, 1, 0]}, "MUL0002.json": {"0": [1, 1, 0], "1": [1, 1]}}),
        format="correctness-vectors",
        contains="every turn must list the same slots: 2 entries here, 3 in the file's first turn",
        dialogue_id="MUL0002.json",
        turn="1",
    )
    add(
        "vectors_turns_out_of_order.json",
        "bad_turn_index",
        "correctness-vectors",
        js({"MUL0001.json": {"0": [1, 1, 0], "2": [1, 1, 0], "1": [1, 1, 1]}}),
        format="correctness-vectors",
        contains="turns must be listed in increasing order",
        dialogue_id="MUL0001.json",
        turn="1",
    )
    return out + hostile_cases()


# --- hostile input (issue 14): limits, containers, encodings, duplicate keys, turn indices -----------

BOMB = 17 * 1024**2  # unpacked bytes of the committed bombs: past the 16 MiB the ratio is judged from


def patched_zip(name: str, data: bytes, *, method: int | None = None, flags: int = 0, size: int | None = None) -> bytes:
    """A one-member stored zip whose headers then claim another method, flag bits or unpacked size."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        info = zipfile.ZipInfo(name, ZIP_DATE)
        info.external_attr = 0o644 << 16
        zf.writestr(info, data)
    raw = bytearray(buffer.getvalue())
    central = raw.index(b"PK\x01\x02")
    for header, base in ((0, 6), (central, 8)):  # local header fields sit 2 bytes earlier than central ones
        at = header + base
        raw[at : at + 2] = (int.from_bytes(raw[at : at + 2], "little") | flags).to_bytes(2, "little")
        if method is not None:
            raw[at + 2 : at + 4] = method.to_bytes(2, "little")
        if size is not None:
            raw[at + 16 : at + 20] = size.to_bytes(4, "little")
    return bytes(raw)


def nested(depth: int, inner: str = "0", opener: str = "[", closer: str = "]") -> str:
    return opener * depth + inner + closer * depth


def hostile_cases() -> list[Case]:
    out: list[Case] = []

    def add(name: str, category: str, family: str, data: bytes | None, **expect: Any) -> None:
        expect.setdefault("stage", "parse")
        expect.setdefault("format", "unknown")
        out.append(Case(name, category, family, data, expect))

    trade_text = js(TRADE_OK).decode()
    line_ok = json.dumps(ours("MUL0001", 0, {"hotel": {"area": "east"}}, {}))
    # limits: decompression bombs, declared sizes, depth -------------------------------------------
    add(
        "gzip_bomb.json.gz",
        "limits",
        "mwzeval",
        gz(b"{" + b" " * BOMB + b"}"),
        contains="unpacks more than 200 times its packed size",
    )
    add(
        "zip_bomb.json.zip",
        "limits",
        "mwzeval",
        zipped(("run.json", b"{" + b" " * BOMB + b"}")),
        contains="unpacks more than 200 times its packed size",
    )
    add(
        "zip_declares_huge_member.zip",
        "limits",
        "trade",
        patched_zip("run.json", js(TRADE_OK), size=3 * 1024**3),
        contains="zip member 'run.json' unpacked is larger than the limit of 64 MiB (DST_MAX_BYTES",
    )
    add(
        "deep_array.json",
        "limits",
        "trade",
        nested(300).encode(),
        contains="JSON nested too deeply: more than 200 levels (DST_MAX_DEPTH",
    )
    add(
        "deep_objects.json",
        "limits",
        "nested-dict",
        nested(100_000, "1", '{"a":', "}").encode(),
        contains="more than 200 levels (DST_MAX_DEPTH; set it to allow more) (line 1)",
    )
    add(
        "deep_unclosed.json", "limits", "trade", b"[" * 100_000, contains="JSON nested too deeply: more than 200 levels"
    )
    add(
        "jsonl_deep_second_line.jsonl",
        "limits",
        "jsonl",
        (line_ok + "\n" + nested(100_000) + "\n").encode(),
        contains="line 2: JSON nested too deeply: more than 200 levels",
    )
    deep_trade = trade_text.replace('"hotel-area-east"', nested(250, '"hotel-area-east"'), 1)
    add(
        "trade_deep_belief.json",
        "limits",
        "trade",
        deep_trade.encode(),
        contains="more than 200 levels (DST_MAX_DEPTH; set it to allow more) (line 5)",
    )
    add(
        "deep_brackets_after_escaped_quote.json",
        "limits",
        "trade",
        ('{"a\\\\": ' + nested(201) + "}").encode(),
        contains="JSON nested too deeply: more than 200 levels",
    )
    # numbers Python will not convert -------------------------------------------------------------
    add(
        "trade_bigint.json",
        "limits",
        "trade",
        trade_text.replace("{", '{"n": ' + "9" * 5000 + ",", 1).encode(),
        contains="a number has more than 4,300 digits, too long to read (line 1, column 7)",
    )
    add(
        "jsonl_bigint.jsonl",
        "limits",
        "jsonl",
        (line_ok + "\n" + line_ok.replace('"turn_index": 0', '"turn_index": ' + "1" * 5000) + "\n").encode(),
        contains="line 2: a number has more than 4,300 digits",
    )
    big_key = js({"MUL0001.json": {"9" * 5000: trade_turn([], [])}})
    add(
        "trade_bigint_turn_key.json",
        "bad_turn_index",
        "trade",
        big_key,
        format="trade",
        contains="turn index 999999999999... is out of range 0..10000",
        dialogue_id="MUL0001.json",
        field="turn",
    )
    add(
        "jsonl_turn_infinity.jsonl",
        "bad_turn_index",
        "jsonl",
        (
            line_ok.replace('"turn_index": 0', '"turn_index": 1e999')
            + "\n"
            + line_ok.replace("MUL0001", "MUL0002")
            + "\n"
        ).encode(),
        format="jsonl",
        contains="turn index must be an integer (plain decimal digits), got inf",
        dialogue_id="MUL0001",
        field="turn_index",
    )
    # encodings: surrogates, overlong UTF-8, UTF-32 -----------------------------------------------
    add(
        "jsonl_lone_surrogate.jsonl",
        "encoding",
        "jsonl",
        (line_ok.replace("MUL0001", "MUL\\ud8000001") + "\n" + line_ok + "\n").encode(),
        contains="lone UTF-16 surrogate \\ud800 in a string (line 1, column 21)",
    )
    add(
        "trade_lone_low_surrogate.json",
        "encoding",
        "trade",
        trade_text.replace("hotel-area-east", "hotel-area-\\udc00east", 1).encode(),
        contains="lone UTF-16 surrogate \\udc00",
    )
    add(
        "trade_reversed_surrogates.json",
        "encoding",
        "trade",
        trade_text.replace("hotel-area-east", "hotel-area-\\udc00\\ud83d", 1).encode(),
        contains="lone UTF-16 surrogate \\udc00",
    )
    add(
        "mwzeval_surrogate_at_end.json",
        "encoding",
        "mwzeval",
        js(MWZ_OK).replace(b'"east"', b'"east\\uD83D"', 1),
        contains="lone UTF-16 surrogate \\uD83D",
    )
    add(
        "jsonl_raw_surrogate_bytes.jsonl",
        "encoding",
        "jsonl",
        (line_ok + "\n").encode().replace(b"east", b"east\xed\xa0\x80", 1),
        contains="file is not UTF-8 text (bad byte at offset",
    )
    add(
        "trade_overlong_utf8.json",
        "encoding",
        "trade",
        js(TRADE_OK).replace(b"east", b"east\xc0\xaf", 1),
        contains="file is not UTF-8 text (bad byte at offset",
    )
    add(
        "utf32.json",
        "encoding",
        "trade",
        js(TRADE_OK).decode().encode("utf-32"),
        contains="file is binary, not UTF-8 text",
    )
    add(
        "two_byte_order_marks.json",
        "encoding",
        "trade",
        b"\xef\xbb\xbf\xef\xbb\xbf" + js(TRADE_OK),
        contains="malformed JSON: Unexpected UTF-8 BOM",
    )
    # containers ------------------------------------------------------------------------------------
    add(
        "zip_encrypted.zip",
        "archive",
        "trade",
        patched_zip("run.json", js(TRADE_OK), flags=0x1),
        contains="zip member 'run.json' is encrypted",
    )
    add(
        "zip_deflate64.zip",
        "archive",
        "trade",
        patched_zip("run.json", js(TRADE_OK), method=9),
        contains="zip member 'run.json' uses compression method 9 (Deflate64), which is not supported",
    )
    add(
        "zip_zstandard.zip",
        "archive",
        "mwzeval",
        patched_zip("run.json", js(MWZ_OK), method=93),
        contains="compression method 93 (Zstandard)",
    )
    add(
        "zip_ppmd.zip",
        "archive",
        "mwzeval",
        patched_zip("run.json", js(MWZ_OK), method=98),
        contains="compression method 98 (PPMd)",
    )
    add(
        "zip_bzip2_garbage.zip",
        "archive",
        "trade",
        patched_zip("run.json", js(TRADE_OK), method=12),
        contains="zip archive cannot be unpacked",
    )
    add(
        "zip_holding_gzip.zip",
        "archive",
        "trade",
        zipped(("run.json.gz", gz(js(TRADE_OK)))),
        contains="file is binary, not UTF-8 text",
    )
    add(
        "gzip_then_garbage.json.gz",
        "archive",
        "trade",
        gz(js(TRADE_OK)) + b"garbage after the member",
        contains="corrupt or truncated gzip archive",
    )
    # duplicate keys -----------------------------------------------------------------------------------
    one = '"MUL0001.json": {"0": {"turn_belief": [], "pred_bs_ptr": []}}'
    add(
        "trade_duplicate_dialogue_key.json",
        "duplicate_turns",
        "trade",
        ("{" + one + ", " + one + "}").encode(),
        contains="duplicate top-level key 'MUL0001.json': the second would silently replace the first",
    )
    turn = '"0": {"turn_belief": [], "pred_bs_ptr": []}'
    add(
        "trade_duplicate_turn_key.json",
        "duplicate_turns",
        "trade",
        ('{"MUL0001.json": {' + turn + ", " + turn + "}}").encode(),
        contains="duplicate key '0' in one object",
        dialogue_id="MUL0001.json",
    )
    add(
        "mwzeval_duplicate_dialogue_key.json",
        "duplicate_turns",
        "mwzeval",
        b'{"mul0001": [{"state": {}}], "mul0002": [], "mul0001": [{"state": {}}]}',
        contains="duplicate top-level key 'mul0001'",
    )
    add(
        "jsonl_duplicate_field.jsonl",
        "duplicate_turns",
        "jsonl",
        (line_ok + "\n" + line_ok.replace('"turn_index": 0', '"turn_index": 1, "turn_index": 2') + "\n").encode(),
        contains="line 2 has the key 'turn_index' twice",
    )
    second = line_ok.replace('"turn_index": 0', '"turn_index": 4, "turn_index": 1', 1)
    add(
        "jsonl_array_duplicate_key.json",
        "duplicate_turns",
        "jsonl",
        ("[" + line_ok + ", " + second + "]").encode(),
        contains="item 1 of the array has the key 'turn_index' twice",
    )
    # duplicate keys deeper down: a turn's fields, a state's slots and domains, a nested format's turns
    twice = ": the second would silently replace the first"
    add(
        "trade_duplicate_turn_field.json",
        "duplicate_turns",
        "trade",
        b'{"MUL0001.json": {"0": {"turn_belief": ["hotel-area-east"], "pred_bs_ptr": [], "pred_bs_ptr": []}}}',
        contains="duplicate key 'pred_bs_ptr' in one object (in the object at /MUL0001.json/0)" + twice,
        dialogue_id="MUL0001.json",
    )
    add(
        "mwzeval_duplicate_state_slot.json",
        "duplicate_turns",
        "mwzeval",
        b'{"mul0001": [{"state": {}}, {"state": {"hotel": {"area": "east", "area": "west"}}}]}',
        contains="duplicate key 'area' in one object (in the object at /mul0001/1/state/hotel)",
        dialogue_id="mul0001",
    )
    add(
        "mwzeval_duplicate_state_domain.json",
        "duplicate_turns",
        "mwzeval",
        b'{"mul0001": [{"state": {"hotel": {"area": "east"}, "hotel": {"stars": "4"}}}]}',
        contains="duplicate key 'hotel' in one object (in the object at /mul0001/0/state)",
        dialogue_id="mul0001",
    )
    meta = json.dumps(mwz_meta("east", "4"))
    add(
        "multiwoz_duplicate_semi_slot.json",
        "duplicate_turns",
        "multiwoz",
        (
            '{"MUL0001.json": {"goal": {}, "log": [{"text": "user 0", "metadata": {}}, {"text": "system 0", '
            '"metadata": ' + meta.replace('"stars": "4"', '"stars": "4", "area": "west"') + "}]}}"
        ).encode(),
        contains="duplicate key 'area' in one object (in the object at /MUL0001.json/log/1/metadata/hotel/semi)",
        dialogue_id="MUL0001.json",
    )
    state = '{"hotel": {"area": "east", "stars": ""}}'
    add(
        "dstc9_duplicate_state_slot.json",
        "duplicate_turns",
        "dstc9",
        (
            '{"MUL0001": [{"sys": null, "usr": "a hotel", "state": '
            + state.replace('"stars": ""', '"stars": "", "stars": "4"')
            + "}]}"
        ).encode(),
        contains="duplicate key 'stars' in one object (in the object at /MUL0001/0/state/hotel)",
        dialogue_id="MUL0001",
    )
    turn_text = '"1": {"state": "' + SPAN_OK.replace('"', '\\"') + '"}'
    add(
        "nested_dict_duplicate_turn_key.json",
        "duplicate_turns",
        "nested-dict",
        ('{"d1": {"turns": {' + turn_text + ", " + turn_text + "}}}").encode(),
        contains="duplicate key '1' in one object (in the object at /d1/turns)",
        dialogue_id="d1",
    )
    # (ConvLab-3's samples and dialogues: tests/test_hostile_input.py, the ConvLab-3 corpus list being fixed)
    add(
        "jsonl_duplicate_gold_slot.jsonl",
        "duplicate_turns",
        "jsonl",
        (
            line_ok
            + "\n"
            + line_ok.replace('"turn_index": 0', '"turn_index": 1').replace(
                '{"area": "east"}', '{"area": "east", "area": "north"}'
            )
            + "\n"
        ).encode(),
        contains="line 2 has the key 'area' twice (in the object at /gold/hotel)",
    )
    # turn indices: plain decimal digits only ---------------------------------------------------------
    for label, key in (
        ("underscore", "1_0"),
        ("space", " 1"),
        ("plus", "+1"),
        ("arabic_digit", "\u0661"),
        ("fullwidth_digit", "\uff11"),
    ):
        add(
            f"trade_turn_{label}.json",
            "bad_turn_index",
            "trade",
            js({"MUL0001.json": {"0": trade_turn([], []), key: trade_turn([], [])}}),
            format="trade",
            contains=f"turn index must be an integer (plain decimal digits), got {key!r}",
            dialogue_id="MUL0001.json",
            turn=key,
            field="turn",
        )
    add(
        "jsonl_turn_string_space.jsonl",
        "bad_turn_index",
        "jsonl",
        (
            line_ok.replace('"turn_index": 0', '"turn_index": "0 "')
            + "\n"
            + line_ok.replace("MUL0001", "MUL0002")
            + "\n"
        ).encode(),
        format="jsonl",
        contains="got '0 '",
        dialogue_id="MUL0001",
        field="turn_index",
    )
    add(
        "csv_turn_underscore.csv",
        "bad_turn_index",
        "csv",
        b"dialogue_id,turn_index,side,domain,slot,value\nMUL0001,1_0,gold,hotel,area,east\n",
        format="csv",
        contains="got '1_0'",
        dialogue_id="MUL0001",
        field="turn_index",
    )
    # forced formats on hostile shapes ----------------------------------------------------------------
    add(
        "forced_jsonl_on_number_array.json",
        "forced_format",
        "jsonl",
        b"[1, 2, 3]",
        force="jsonl",
        format="jsonl",
        contains="item 0 of the JSON array is a JSON number, expected an object",
    )
    # issue 40: line ends and NUL characters ------------------------------------------------------------
    add(
        "jsonl_cr_only_line_ends.jsonl",
        "encoding",
        "jsonl",
        (line_ok + "\r" + line_ok.replace('"turn_index": 0', '"turn_index": 1') + "\r").encode(),
        contains="lines end in a carriage return (CR) alone",
    )
    add(
        "csv_nul_in_slot_name.csv",
        "binary",
        "csv",
        (CSV_HEAD + "MUL0001,0,gold,hotel,area,east\n" * 400 + "MUL0002,0,gold,hotel,ar\x00ea,east\n").encode(),
        contains="CSV line 402 holds a NUL character",
    )
    return out


def expectation(case: Case) -> dict[str, Any]:
    return {"category": case.category, "family": case.family, **case.expect}


def build() -> dict[str, bytes]:
    """Every output path (relative to this folder) with its bytes."""
    files: dict[str, bytes] = {f"{PARTNERS}/{n}": d for n, d in partners().items()}
    table = {}
    for case in cases():
        assert case.name not in table, case.name
        table[case.name] = expectation(case)
        if case.directory:
            files[f"{case.name}/README.md"] = b"A directory named like a file: passing it as --pred must fail.\n"
        elif case.data is not None:
            files[case.name] = case.data
    files["EXPECTED.json"] = (json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode()
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare the committed files with a fresh build")
    args = parser.parse_args(argv)
    stale = []
    for rel, data in build().items():
        path = HERE / rel
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for case in cases():
        if case.data is None and not case.directory and (HERE / case.name).exists():
            stale.append(f"{case.name} (must not exist)")
    if stale:
        print("stale or missing: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
