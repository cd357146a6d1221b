"""Every format on its real file (or a file derived from one), detection, overrides, archives, alignment."""

from __future__ import annotations

import csv
import gzip
import json
import zipfile
from pathlib import Path

import pytest

from analysis import metrics as M
from analysis.errors import InputError
from analysis.formats import FORMATS, detect_format, format_names, parse_file
from analysis.formats.reading import parse_records
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.scoring import score_run
from tests.conftest import realdata_path

REAL_FILES = [
    # (path parts, detected format, turns, dialogues, sides present)
    (("mlcsg", "all_prediction_TRADE.json"), "trade", 7368, 999, {"gold", "pred"}),
    (("mwzeval_outputs", "augpt.json"), "mwzeval", 7372, 1000, {"pred"}),
    (("mwzeval_outputs", "ubar.json"), "mwzeval", 7372, 1000, {"pred"}),
    (("multiwoz21", "test.json.zip"), "multiwoz", 7372, 1000, {"gold"}),
    (("multiwoz_zh", "test.json.zip"), "multiwoz", 7372, 1000, {"gold"}),
    (("crosswoz", "test.json.zip"), "crosswoz", 4238, 500, {"gold"}),
    (("crosswoz_en", "test.json.zip"), "crosswoz", 4238, 500, {"gold"}),
    (("dstc9_shaped_gold", "multiwoz_zh_test.json"), "dstc9", 7372, 1000, {"gold"}),
    (("dstc9_shaped_gold", "crosswoz_en_test.json"), "dstc9", 4238, 500, {"gold"}),
    (("crosswoz_ruledst", "test_preds.json"), "nested", 4238, 500, {"gold", "pred"}),
    (("xrisawoz_llm", "ko.jsonl"), "risawoz", 4058, 600, {"gold", "pred"}),
]


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("parts", "fmt", "n_turns", "n_dialogues", "sides"),
    REAL_FILES,
    ids=lambda p: str(sorted(p)) if isinstance(p, set) else str(p),
)
def test_real_file_is_detected_and_parsed(parts, fmt, n_turns, n_dialogues, sides) -> None:
    parsed = parse_file(realdata_path(*parts))
    assert parsed.fmt == fmt
    assert len(parsed.turns) == n_turns
    assert parsed.turns["dialogue_id"].nunique() == n_dialogues
    assert {s for s in ("gold", "pred") if getattr(parsed, s) is not None} == sides
    assert not parsed.turns.duplicated(["dialogue_id", "turn_index"]).any()
    # Forcing the detected format gives the same tables.
    forced = parse_file(realdata_path(*parts), fmt=fmt)
    assert forced.turns.equals(parsed.turns)


@pytest.mark.realdata
def test_multiwoz_raw_gold_state_and_utterances() -> None:
    parsed = parse_file(realdata_path("multiwoz21", "test.json.zip"))
    first = parsed.turns.iloc[0]
    assert first["dialogue_id"] == "SNG0073" and first["turn_index"] == 0
    assert first["user"].startswith("I would like a taxi from Saint John")
    assert first["system"].startswith("What time do you want to leave")
    assert first["type"] == "SNG"
    state = parsed.gold[(parsed.gold["dialogue_id"] == "SNG0073") & (parsed.gold["turn_index"] == 0)]
    filled = dict(zip(state["slot"], state["value"], strict=True))
    assert filled["destination"] == "pizza hut fenditton" and filled["departure"] == "saint johns college"
    assert filled["leaveAt"] == "not mentioned"  # raw marker kept; conventions decide it is empty
    assert ("hotel", "stay") in parsed.listed_slots and ("hotel", "booked") not in parsed.listed_slots


@pytest.mark.realdata
def test_crosswoz_raw_gold_drops_selected_results_and_maps_type() -> None:
    zh = parse_file(realdata_path("crosswoz", "test.json.zip"))
    en = parse_file(realdata_path("crosswoz_en", "test.json.zip"))
    assert "selectedResults" not in set(zh.gold["slot"])
    assert set(zh.turns["type"]) == {"S", "M", "M+T", "CM", "CM+T"}
    assert zh.turns["type"].tolist() == en.turns["type"].tolist()  # same ids, same turns, same types
    assert zh.turns[["dialogue_id", "turn_index"]].equals(en.turns[["dialogue_id", "turn_index"]])
    row = zh.gold[(zh.gold["dialogue_id"] == "2303") & (zh.gold["turn_index"] == 0)]
    assert dict(zip(row["slot"], row["value"], strict=True)) == {"推荐菜": "美食街", "人均消费": "50-100元"}


@pytest.mark.realdata
def test_mwzeval_predictions_pair_with_multiwoz_gold_case_insensitively() -> None:
    run = load_run(realdata_path("mwzeval_outputs", "pptod.json"), realdata_path("multiwoz21", "test.json.zip"))
    assert run.meta.formats == ("mwzeval", "multiwoz") and run.meta.convention == "mwzeval"
    # pptod's published file really lacks the last turn of PMUL3688: reported, scored as empty.
    assert run.alignment.gold_turns == 7372 and run.alignment.pred_turns == 7371
    assert run.alignment.missing_turn_examples == [("PMUL3688", 5)]
    assert run.alignment.turn_count_mismatches == [("PMUL3688", 6, 5)]
    assert set(run.pred["dialogue_id"]) <= set(run.turns["dialogue_id"])  # re-keyed to the gold ids
    scored = score_run(run)
    assert 0.3 < M.joint_goal_accuracy(scored) < 0.7


@pytest.mark.realdata
@pytest.mark.parametrize("compress", ["gz", "zip"])
def test_gz_and_zip_are_read_transparently(tmp_path: Path, compress: str) -> None:
    source = realdata_path("crosswoz_ruledst", "test_preds.json")
    data = source.read_bytes()
    if compress == "gz":
        target = tmp_path / "preds.json.gz"
        target.write_bytes(gzip.compress(data))
    else:
        target = tmp_path / "preds.json.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("preds.json", data)
    plain = score_run(load_run(source), "exact")
    packed = score_run(load_run(target), "exact")
    assert M.joint_goal_accuracy(packed) == M.joint_goal_accuracy(plain)


def _ruledst(limit: int = 40) -> dict:
    records = json.loads(realdata_path("crosswoz_ruledst", "test_preds.json").read_text(encoding="utf-8"))
    return dict(list(records.items())[:limit])


@pytest.mark.realdata
@pytest.mark.parametrize(("gold_key", "pred_key"), [("gold", "pred"), ("gt", "pr"), ("turn_belief", "pred_belief")])
def test_nested_dict_form_with_every_key_pair(tmp_path: Path, gold_key: str, pred_key: str) -> None:
    records = _ruledst()
    dict_form = {
        d: {str(t["turn"]): {gold_key: t["gold"], pred_key: t["pred"]} for t in ts} for d, ts in records.items()
    }
    list_form = {
        d: [{"turn": t["turn"], "gold": t["gold"], "pred": t["pred"]} for t in ts] for d, ts in records.items()
    }
    a, b = tmp_path / "dict.json", tmp_path / "list.json"
    a.write_text(json.dumps(dict_form, ensure_ascii=False), encoding="utf-8")
    b.write_text(json.dumps(list_form, ensure_ascii=False), encoding="utf-8")
    assert parse_file(a).fmt == "nested" and parse_file(b).fmt == "nested"
    jga_a = M.joint_goal_accuracy(score_run(load_run(a), "exact"))
    jga_b = M.joint_goal_accuracy(score_run(load_run(b), "exact"))
    assert jga_a == jga_b
    assert 0 < jga_a < 1


@pytest.mark.realdata
def test_trade_with_pred_belief_key(tmp_path: Path) -> None:
    records = json.loads(realdata_path("mlcsg", "all_prediction_TRADE.json").read_text())
    renamed = {
        d: {t: {"turn_belief": v["turn_belief"], "pred_belief": v["pred_bs_ptr"]} for t, v in turns.items()}
        for d, turns in records.items()
    }
    path = tmp_path / "trade.json"
    path.write_text(json.dumps(renamed))
    run = load_run(path)
    assert run.meta.formats == ("trade",)
    assert M.joint_goal_accuracy(score_run(run)) == pytest.approx(0.5194, abs=5e-5)


@pytest.mark.realdata
def test_dstc9_submission_of_gold_states_scores_one(tmp_path: Path) -> None:
    gold_path = realdata_path("dstc9_shaped_gold", "crosswoz_en_test.json")
    gold = json.loads(gold_path.read_text(encoding="utf-8"))
    submission = {d: [t["state"] for t in turns] for d, turns in gold.items()}
    path = tmp_path / "submission.json"
    path.write_text(json.dumps(submission, ensure_ascii=False), encoding="utf-8")
    assert parse_file(path).fmt == "dstc9-submission"
    run = load_run(path, gold_path)
    assert run.meta.convention == "dstc9"
    assert M.joint_goal_accuracy(score_run(run)) == 1.0


@pytest.mark.realdata
def test_dstc9_gold_uses_the_next_turns_sys_as_the_reply() -> None:
    parsed = parse_file(realdata_path("dstc9_shaped_gold", "crosswoz_en_test.json"))
    first, second = parsed.turns.iloc[0], parsed.turns.iloc[1]
    assert first["system"].startswith("Recommend Xianyukou")
    assert second["user"] == "What is the business hours?"


@pytest.mark.realdata
def test_dialogues_predictions_from_xrisawoz(tmp_path: Path) -> None:
    """stanford-oval/dialogues prediction files: no real one is public, so one is written from the
    X-RiSAWOZ predictions (1-based turn keys) and must score exactly like the JSONL it came from."""
    source = realdata_path("xrisawoz_llm", "fr.jsonl")
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    predictions: dict = {}
    gold_lines = []
    for row in rows:
        predictions.setdefault(row["dialogue_id"], {"turns": {}})["turns"][str(row["turn_index"] + 1)] = {
            "state": row["prediction"],
            "agent_utterance": "",
        }
        gold_lines.append(
            json.dumps({"dialogue_id": row["dialogue_id"], "turn_index": row["turn_index"], "gold": row["gold"]})
        )
    pred_path, gold_path = tmp_path / "preds.json", tmp_path / "gold.jsonl"
    pred_path.write_text(json.dumps(predictions, ensure_ascii=False), encoding="utf-8")
    gold_path.write_text("\n".join(gold_lines), encoding="utf-8")
    assert parse_file(pred_path).fmt == "dialogues"
    run = load_run(pred_path, gold_path, meta=RunInfo(convention="risawoz"))
    assert run.alignment.ok
    assert M.joint_goal_accuracy(score_run(run)) == pytest.approx(0.6651, abs=5e-5)


@pytest.mark.slow
@pytest.mark.realdata
def test_our_jsonl_and_csv_round_trip(tmp_path: Path) -> None:
    run = load_run(realdata_path("crosswoz_ruledst", "test_preds.json"))
    expected = M.joint_goal_accuracy(score_run(run, "exact"))
    states = {side: table for side, table in (("gold", run.gold), ("pred", run.pred))}
    jsonl = tmp_path / "run.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for (d, t), _ in run.turns.groupby(["dialogue_id", "turn_index"], sort=False):
            line = {"dialogue_id": d, "turn_index": int(t)}
            for side, table in states.items():
                rows = table[(table["dialogue_id"] == d) & (table["turn_index"] == t)]
                line[side] = [[r.domain, r.slot, r.value] for r in rows.itertuples()]
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    assert parse_file(jsonl).fmt == "jsonl"
    assert M.joint_goal_accuracy(score_run(load_run(jsonl), "exact")) == expected
    table = tmp_path / "run.csv"
    with table.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["dialogue_id", "turn_index", "side", "domain", "slot", "value"])
        for d, t in zip(run.turns["dialogue_id"], run.turns["turn_index"], strict=True):
            writer.writerow([d, t, "", "", "", ""])  # every turn listed, even with empty states
        for side, frame in states.items():
            for r in frame.itertuples():
                writer.writerow([r.dialogue_id, r.turn_index, side, r.domain, r.slot, r.value])
    assert parse_file(table).fmt == "csv"
    from_csv = load_run(table)
    assert len(from_csv.turns) == len(run.turns)
    assert M.joint_goal_accuracy(score_run(from_csv, "exact")) == expected


def test_jsonl_accepts_state_objects_and_utterances(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    lines = [
        {"dialogue_id": "a", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {}, "user": "hi"},
        {"dialogue_id": "a", "turn_index": 1, "gold": {}, "pred": {}, "user": "bye", "system": "ok"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    run = load_run(path)
    assert run.turns["user"].tolist() == ["hi", "bye"]
    scored = score_run(run)
    assert scored.turns["joint_correct"].tolist() == [False, True]  # empty states still count as turns


@pytest.mark.realdata
def test_missing_predicted_turns_are_scored_empty_and_reported(tmp_path: Path) -> None:
    gold_path = realdata_path("dstc9_shaped_gold", "crosswoz_en_test.json")
    gold = json.loads(gold_path.read_text(encoding="utf-8"))
    ids = list(gold)
    submission = {d.upper(): [t["state"] for t in turns] for d, turns in gold.items()}  # ids differ in case
    del submission[ids[0].upper()]  # a whole dialogue missing
    submission[ids[1].upper()] = submission[ids[1].upper()][:-2]  # its last two turns missing
    submission["extra-dialogue"] = [{}]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(submission, ensure_ascii=False), encoding="utf-8")
    run = load_run(path, gold_path)
    report = run.alignment
    assert report.missing_dialogues == [ids[0]]
    assert report.extra_dialogues == ["extra-dialogue"]
    assert report.missing_turns == len(gold[ids[0]]) + 2
    assert report.extra_turns == 1
    assert report.turn_count_mismatches == [(ids[1], len(gold[ids[1]]), len(gold[ids[1]]) - 2)]
    assert len(report.warnings()) >= 4 and not report.ok
    scored = score_run(run)
    assert len(scored.turns) == 4238  # nothing dropped: missing turns are scored as empty predictions
    assert int(scored.turns["pred_missing"].sum()) == report.missing_turns
    assert scored.turns.loc[scored.turns["pred_missing"], "n_pred"].sum() == 0


def test_trade_ids_with_json_suffix_pair_with_bare_ids(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"dialogue_id": "MUL0001", "turn_index": 0, "gold": {"hotel": {"area": "east"}}}))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"mul0001.json": [{"hotel": {"area": "east"}}]}))
    run = load_run(pred, gold)
    assert run.alignment.ok and run.turns["dialogue_id"].tolist() == ["MUL0001"]
    assert M.joint_goal_accuracy(score_run(run)) == 1.0


def test_every_format_example_parses_and_is_detected(tmp_path: Path) -> None:
    for spec in FORMATS:
        suffix = {"json": ".json", "jsonl": ".jsonl", "csv": ".csv"}[spec.container]
        path = tmp_path / f"{spec.name}{suffix}"
        path.write_text(spec.example.replace("\\n", "\n"), encoding="utf-8")
        container, records = parse_records(path)
        if not spec.detected:  # read only when named: another format detects its files
            assert detect_format(container, records) not in (spec, None), spec.name
            assert len(parse_file(path, fmt=spec.name).turns) >= 1
            continue
        assert detect_format(container, records) is spec, spec.name
        assert len(parse_file(path).turns) >= 1


@pytest.mark.realdata
def test_forced_format_that_does_not_fit_is_an_input_error() -> None:
    path = realdata_path("mwzeval_outputs", "augpt.json")
    with pytest.raises(InputError, match=r"\[format: trade\]: content does not have the trade shape"):
        parse_file(path, fmt="trade")
    with pytest.raises(InputError, match="unknown format"):
        parse_file(path, fmt="nope")
    assert "trade" in format_names()


@pytest.mark.realdata
def test_gold_only_and_pred_only_files_say_what_is_missing() -> None:
    with pytest.raises(InputError, match="predictions only: pass the gold file"):
        load_run(realdata_path("mwzeval_outputs", "augpt.json"))
    with pytest.raises(InputError, match="gold states only"):
        load_run(realdata_path("multiwoz21", "test.json.zip"))
    with pytest.raises(InputError, match="cannot serve as gold"):
        load_run(realdata_path("mwzeval_outputs", "augpt.json"), realdata_path("mwzeval_outputs", "dots.json"))


def _parsed_tables(path: Path) -> tuple[object, ...]:
    parsed = parse_file(path, use_cache=False)
    return (
        parsed.turns.to_dict("list"),
        None if parsed.gold is None else parsed.gold.to_dict("list"),
        None if parsed.pred is None else parsed.pred.to_dict("list"),
        parsed.listed_slots,
        sorted(parsed.listings),
        dict(parsed.notes),
    )


@pytest.mark.parametrize(
    "gold",
    [
        ["hotel-area-east", "hotel-name-a-b-c", "train-day-monday"],  # hyphens in a value stay in it
        ["hotel-area-", "hotel-stars-4", "train-day-"],  # empty gold values: the listing is read
        [],
    ],
)
def test_trade_whole_list_reading_equals_the_per_triple_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gold: list[str]
) -> None:
    """`Collector.add_triple_strings` (whole-list passes) gives the tables, listings and notes the per-triple
    `add_state` path gives, on plain and empty values alike."""
    from functools import partial

    from analysis.formats.engine import Collector
    from analysis.formats.states import triple_strings

    path = tmp_path / "trade.json"
    turns = {
        "0": {"turn_belief": gold, "pred_bs_ptr": ["hotel-area-west"]},
        "1": {"turn_belief": gold[:1], "pred_bs_ptr": []},
    }
    path.write_text(json.dumps({"MUL1.json": turns, "MUL2.json": {"0": {"turn_belief": [], "pred_bs_ptr": gold}}}))
    fast = _parsed_tables(path)

    def per_triple(self: Collector, side: str, dialogue_id: str, turn: int, items: object, field: str) -> None:
        self.add_state(side, dialogue_id, turn, partial(triple_strings, items, field))

    monkeypatch.setattr(Collector, "add_triple_strings", per_triple)
    assert _parsed_tables(path) == fast


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("hotel-area", "'hotel-area' is not of the form 'domain-slot-value'"),
        (3, "expected 'domain-slot-value' strings, got a number"),
        (["hotel", "area"], "expected 'domain-slot-value' strings, got an array"),
        ({"hotel": "area"}, "expected 'domain-slot-value' strings, got an object"),
        ("-area-east", "domain and slot must be non-empty strings"),
    ],
)
def test_trade_whole_list_reading_leaves_bad_triples_to_the_checks(tmp_path: Path, item: object, message: str) -> None:
    path = tmp_path / "trade.json"
    turn = {"turn_belief": ["hotel-day-monday", item], "pred_bs_ptr": []}
    path.write_text(json.dumps({"MUL1.json": {"0": turn}}))
    with pytest.raises(InputError) as err:
        parse_file(path, use_cache=False)
    assert message in str(err.value) and "MUL1.json" in str(err.value) and "turn_belief" in str(err.value)


def test_jsonl_state_objects_take_the_fast_path_with_the_same_tables(tmp_path, monkeypatch):
    """Our JSONL hands its state objects to the collector's fast path (`add_plain_state`); states with
    numbers, lists, nulls, empty strings or an empty domain fall back to the flattener. Either way the
    parsed tables are the ones the flattener alone gives."""
    import pandas as pd

    from analysis.formats import engine

    lines = [
        {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east", "stars": ""}}, "pred": {}},
        {
            "dialogue_id": "d1",
            "turn_index": 1,
            "gold": {"hotel": {"area": "east", "stars": "4"}},
            "pred": {"hotel": {"area": "east", "stars": 4}},
        },
        {
            "dialogue_id": "d1",
            "turn_index": 2,
            "gold": {"hotel": {"area": "east", "stars": "4"}, "taxi": {}},
            "pred": {"hotel": {"area": ["east", "centre"], "stars": None}},
        },
        {
            "dialogue_id": "d2",
            "turn_index": 0,
            "gold": {"train": {"day": "monday"}},
            "pred": [["train", "day", "monday"]],
        },
        {"dialogue_id": "d2", "turn_index": 1, "gold": {"train": {"day": "monday"}}, "pred": None},
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    calls = []
    real = engine.Collector.add_plain_state

    def spy(self, *args):
        calls.append(real(self, *args))
        return calls[-1]

    monkeypatch.setattr(engine.Collector, "add_plain_state", spy)
    fast = parse_file(path, use_cache=False)
    assert True in calls and False in calls  # both paths ran
    monkeypatch.setattr(engine.Collector, "add_plain_state", lambda self, *args: False)
    slow = parse_file(path, use_cache=False)
    for side in ("gold", "pred"):
        pd.testing.assert_frame_equal(getattr(fast, side), getattr(slow, side), check_exact=True)
    pd.testing.assert_frame_equal(fast.turns, slow.turns, check_exact=True)
    assert fast.listed_slots == slow.listed_slots and fast.notes == slow.notes
    assert fast.pred["value"].tolist() == ["east", "4", "east|centre", "monday"]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "[1, NaN]"])
def test_a_non_json_number_as_a_slot_value_is_refused_with_its_record(tmp_path: Path, token: str) -> None:
    """Python's json reads NaN and Infinity, which JSON has not: kept, they became the value "nan" (a wrong
    prediction where a missing value was meant). Refused, naming the record and the field."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, '
        f'"pred": {{"hotel": {{"area": {token}}}}}}}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        parse_file(path, use_cache=False)
    message = str(err.value)
    assert "is not JSON" in message and "'d1'" in message and "pred.hotel.area" in message
