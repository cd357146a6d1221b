"""Real files' families read by declared mappings (issue 38): IC-DST running logs, CheckDST linearised
predictions, LLM-DST-EVAL parsed turns, user mappings, `sniff`, and archives of several members."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli.main import main
from analysis.errors import InputError
from analysis.formats import mapping as mapping_module
from analysis.formats import parse_file
from analysis.formats.llm_text import read_text
from analysis.formats.mapping import Linearised, Mapping, parse_mapping_option, split_linearised
from analysis.formats.sniff import sniff
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.suite import metric_suite
from analysis.workspace import load_workspace

DATA = Path(__file__).parent / "data" / "wild"
GPTDST_EXCERPT = DATA / "gptdst_running_log_excerpt.json"
CHECKDST_EXCERPT = DATA / "checkdst_PI_excerpt.checkdst_prediction.jsonl"
WILD = Path(__file__).resolve().parents[1].parent / "shared" / "realdata" / "wild"
GPTDST = WILD / "gptdst_gpt35_ours_running_log.json"
CHECKDST = WILD / "checkdst_PI_example.checkdst_prediction.jsonl"
needs_wild = pytest.mark.skipif(not WILD.is_dir(), reason="../shared/realdata/wild is absent")

# CheckDST's `extract_slot_from_string` rules, written independently of the reader (the test's oracle).
CHECKDST_DOMAINS = {"attraction", "hotel", "hospital", "restaurant", "police", "taxi", "train"}


def checkdst_slots(text: str) -> set[str]:
    words = text.strip().split()
    if words and words[0] in ("<bs>", "</bs>"):
        words = words[1:]
    if "</bs>" in words:
        words = words[: words.index("</bs>")]
    pieces = " ".join(words).split(",")
    if pieces[-1] == "":
        pieces = pieces[:-1]
    out = set()
    for piece in pieces:
        slot = piece.strip().split()
        if len(slot) > 2 and slot[0] in CHECKDST_DOMAINS:
            if slot[1] == "book" and slot[2] in ("day", "time", "people", "stay"):
                out.add(f"{slot[0]}--book {slot[2]}--{' '.join(slot[3:])}")
            else:
                out.add(f"{slot[0]}--{slot[1]}--{' '.join(slot[2:])}")
    return out


def gptdst_jga(records: list[dict]) -> int:
    """gpt-DST's `evaluate_metrics.evaluate`: `pred == slot_values`, a gold `a|b` matched by either."""
    correct = 0
    for record in records:
        gold, pred = dict(record["slot_values"]), record["pred"]
        for slot, value in gold.items():
            if "|" in value and pred.get(slot) in value.split("|"):
                gold[slot] = pred[slot]
        correct += gold == pred
    return correct


def suite_of(path: Path, **kwargs: object) -> dict:
    run = load_run(path, **kwargs)  # type: ignore[arg-type]
    return metric_suite(score_run(run, "exact"))


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["metrics", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# --- IC-DST family ----------------------------------------------------------------------------------


def test_icdst_excerpt_is_detected_and_scored_as_gpt_dst_scores_it() -> None:
    parsed = parse_file(GPTDST_EXCERPT, use_cache=False)
    records = json.loads(GPTDST_EXCERPT.read_text())
    assert parsed.fmt == "icdst"
    assert len(parsed.turns) == len(records) == 25
    assert parsed.turns["dialogue_id"].nunique() == 3
    # pred against slot_values, flat keys split at the first hyphen, the user's last utterance kept
    first = parsed.gold[(parsed.gold["dialogue_id"] == "SNG0073.json") & (parsed.gold["turn_index"] == 0)]
    assert set(zip(first["domain"], first["slot"], first["value"], strict=True)) == {
        ("taxi", "destination", "pizza hut fenditton"),
        ("taxi", "departure", "saint johns college"),
    }
    assert parsed.turns["user"].iloc[0] == records[0]["dialog"]["usr"][-1]
    result = suite_of(GPTDST_EXCERPT)
    assert result["n_turns"] == 25
    assert result["jga"] == pytest.approx(gptdst_jga(records) / 25)


@pytest.mark.realdata
@needs_wild
def test_gptdst_wild_log_reproduces_its_score_txt(capsys: pytest.CaptureFixture[str]) -> None:
    score = (WILD / "gptdst_gpt35_ours_score.txt").read_text()
    assert score.startswith("correct 28/50")
    result = cli_json(capsys, "--pred", str(GPTDST))  # no flag: the family's own convention, icdst
    assert result["runs"][0]["formats"] == ["icdst"] and result["convention"] == "icdst"
    assert (result["n_turns"], result["n_dialogues"]) == (50, 6)
    # score.txt: "correct 28/50", "Slot Acc 0.9846666666666667", "Joint F1 0.9408852813852815"
    assert result["jga"] == pytest.approx(28 / 50)
    assert result["slot_accuracy_trade"] == pytest.approx(0.9846666666666667, abs=1e-12)
    assert result["joint_f1_trade"] == pytest.approx(0.9408852813852815, abs=1e-12)
    assert "correct 28/50" in score and "Slot Acc 0.9846666666666667" in score and "Joint F1 0.94088528138528" in score
    assert gptdst_jga(json.loads(GPTDST.read_text())) == 28


def completions_jga(records: list[dict]) -> tuple[int, int]:
    """(joint-correct turns, unparseable turns) of the completions read as each turn's changes, accumulated
    in plain dicts per dialogue (the test's own accumulation): `[DELETE]`, `none` or "" removes a slot, an
    unparseable text changes nothing and its turn is never correct; compared with `slot_values` as
    gpt-DST's `evaluate` compares (a gold `a|b` matched by either)."""
    correct = unparseable = 0
    state: dict[str, str] = {}
    dialogue = None
    for record in records:
        if record["ID"] != dialogue:
            state, dialogue = {}, record["ID"]
        reading = read_text(record["completion"])
        unparseable += not reading.parsed
        for domain, slot, _, value in reading.triples or ():
            if value.strip().lower() in ("", "none", "[delete]"):
                state.pop(f"{domain}-{slot}", None)
            else:
                state[f"{domain}-{slot}"] = value
        correct += reading.parsed and gptdst_jga([{"slot_values": record["slot_values"], "pred": dict(state)}])
    return correct, unparseable


def test_icdst_completion_reads_the_models_words_as_accumulated_changes() -> None:
    """The `completion` option on the MIT excerpt: named with --format (the file is detected as `icdst`),
    each turn's text a change accumulated per dialogue, gold still `slot_values`; JGA and the unparseable
    count as the plain-dict accumulation gives them, and each unparseable turn's text kept on its turn."""
    records = json.loads(GPTDST_EXCERPT.read_text())
    assert parse_file(GPTDST_EXCERPT, use_cache=False).fmt == "icdst"
    parsed = parse_file(GPTDST_EXCERPT, fmt="icdst-completion", use_cache=False)
    assert parsed.fmt == "icdst-completion" and len(parsed.turns) == 25
    assert parsed.gold.equals(parse_file(GPTDST_EXCERPT, use_cache=False).gold)  # the same gold
    correct, unparseable = completions_jga(records)
    assert unparseable > 0 and correct < gptdst_jga(records)  # what post-processing adds, made visible
    run = load_run(GPTDST_EXCERPT, pred_format="icdst-completion")
    assert run.meta.convention == "icdst"
    result = metric_suite(score_run(run))
    assert result["jga"] == pytest.approx(correct / 25) and result["unparseable_turns"] == unparseable
    assert parsed.notes["unparseable_turns"] == unparseable and parsed.notes["parsed_turns"] == 25 - unparseable
    assert "accumulated over the dialogue" in parsed.notes["pred_changes_accumulated"]
    flagged = parsed.turns[parsed.turns["pred_unparseable"]]
    texts = {(r["ID"], r["turn_id"]): r["completion"] for r in records}
    assert len(flagged) == unparseable
    for row in flagged.itertuples():
        assert row.pred_unparseable_text == texts[(row.dialogue_id, row.turn_index)]
        assert row.pred_unparseable_reason == read_text(row.pred_unparseable_text).shape != ""
    assert parsed.turns.loc[~parsed.turns["pred_unparseable"], "pred_unparseable_text"].isna().all()
    # The accumulated state at each turn, row for row, as the plain dicts hold it (parsed turns).
    state: dict[str, str] = {}
    dialogue = None
    for record in records:
        if record["ID"] != dialogue:
            state, dialogue = {}, record["ID"]
        for domain, slot, _, value in read_text(record["completion"]).triples or ():
            if value.strip().lower() in ("", "none", "[delete]"):
                state.pop(f"{domain}-{slot}", None)
            else:
                state[f"{domain}-{slot}"] = value
        here = parsed.pred[
            (parsed.pred["dialogue_id"] == record["ID"]) & (parsed.pred["turn_index"] == record["turn_id"])
        ]
        assert {f"{d}-{s}": v for d, s, v in zip(here["domain"], here["slot"], here["value"], strict=True)} == state


@pytest.mark.realdata
@needs_wild
def test_icdst_completion_on_the_wild_log_gives_21_of_50(capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-DST's GPT-3.5 log: 0.56 (28/50) on its post-processed `pred`, 0.42 (21/50) on the completions
    accumulated; the second from the plain-dict accumulation above as well as from the CLI."""
    records = json.loads(GPTDST.read_text())
    assert completions_jga(records) == (21, 11)
    result = cli_json(capsys, "--pred", str(GPTDST), "--format", "icdst-completion")
    assert result["runs"][0]["formats"] == ["icdst-completion"] and result["convention"] == "icdst"
    assert result["n_turns"] == 50 and result["jga"] == pytest.approx(21 / 50)
    assert result["unparseable_turns"] == 11


def test_icdst_completion_delete_and_refused_pred_deltas(tmp_path: Path) -> None:
    """IC-DST's `[DELETE]` removes a slot, an update to "" too; an unparseable turn carries the state before
    it; --pred-deltas on top is refused (it would accumulate the states again)."""
    texts = [
        "hotel-area = east, hotel-stars = 4",
        "hotel-area = [DELETE]",
        "hotel-area, hotel-stars",
        "hotel-stars = ''",
    ]
    records = [
        {"ID": "d.json", "turn_id": t, "slot_values": {}, "pred": {}, "completion": text}
        for t, text in enumerate(texts)
    ]
    path = tmp_path / "running_log.json"
    path.write_text(json.dumps(records))
    parsed = parse_file(path, fmt="icdst-completion", use_cache=False)
    held = parsed.pred.groupby("turn_index")["slot"].agg(lambda s: sorted(s)).to_dict()
    assert held == {0: ["area", "stars"], 1: ["stars"], 2: ["stars"]}  # turn 3: nothing left
    assert parsed.turns["pred_unparseable"].tolist() == [False, False, True, False]
    with pytest.raises(
        InputError, match="already accumulates each turn's changes over the dialogue; drop --pred-deltas"
    ):
        load_run(path, pred_format="icdst-completion", pred_deltas=True)
    mapped = Mapping(
        dialogue="ID",
        turn="turn_id",
        gold="slot_values",
        pred="completion",
        encoding="flat",
        pred_encoding="llm_text",
        pred_changes=True,
    )
    assert parse_file(path, mapping=mapped, use_cache=False).pred.equals(parsed.pred)  # the same declaration
    with pytest.raises(InputError, match="encoding llm_text reads predictions only"):
        parse_mapping_option("dialogue=ID,turn=turn_id,gold=slot_values,pred=completion,encoding=llm_text")
    assert parse_mapping_option("dialogue=ID,turn=turn_id,pred=completion,pred_changes=true").pred_changes


def test_identical_duplicate_records_are_read_once_and_counted(tmp_path: Path) -> None:
    """gpt-DST's ZeroCoT log holds every turn twice, word for word; its score counts each turn once."""
    records = json.loads(GPTDST_EXCERPT.read_text())[:4]
    doubled = [r for record in records for r in (record, record)]
    path = tmp_path / "running_log.json"
    path.write_text(json.dumps(doubled))
    parsed = parse_file(path, use_cache=False)
    assert len(parsed.turns) == 4 and parsed.notes["identical_duplicate_records"] == 4
    doubled[1] = {**doubled[1], "pred": {}}
    path.write_text(json.dumps(doubled))
    with pytest.raises(InputError, match="record 2: duplicate turn"):
        parse_file(path, use_cache=False)


def test_predicted_flat_key_without_domain_is_kept_as_a_spurious_slot(tmp_path: Path) -> None:
    records = json.loads(GPTDST_EXCERPT.read_text())[:2]
    records[1] = {**records[1], "pred": {**records[1]["pred"], "wifi": "yes"}}
    path = tmp_path / "running_log.json"
    path.write_text(json.dumps(records))
    parsed = parse_file(path, use_cache=False)
    assert parsed.notes["predicted_keys_without_domain"] == 1
    assert ("(no domain)", "wifi", "yes") in set(
        zip(parsed.pred["domain"], parsed.pred["slot"], parsed.pred["value"], strict=True)
    )
    assert suite_of(path)["jga"] == pytest.approx(gptdst_jga(records) / 2)  # a spurious slot: turn 1 is wrong


# --- CheckDST -----------------------------------------------------------------------------------------


def test_linearised_split_follows_checkdst() -> None:
    rules = Linearised(
        frozenset(CHECKDST_DOMAINS),
        frozenset({("book", "day"), ("book", "people")}),
        frozenset({"<bs>", "</bs>"}),
        "</bs>",
    )
    text = "<bs> hotel book day sunday , hotel price range cheap,hotel book stay 4, bus day x, taxi leave, </bs> hotel area x"
    triples, ignored = split_linearised(text, rules)
    assert [(d, s, v) for d, s, _, v in triples] == [
        ("hotel", "book day", "sunday"),
        ("hotel", "price", "range cheap"),  # one-word slots, as CheckDST reads them
        ("hotel", "book", "stay 4"),  # `book stay` is not declared here: `book` is the slot
    ]
    assert ignored == 2  # `bus day x` (no such domain) and `taxi leave` (two words)
    assert split_linearised("", rules) == ([], 0)
    assert split_linearised("hotel area east, hotel area east,", rules)[0] == [("hotel", "area", "=", "east")]


def test_checkdst_excerpt_scores_as_checkdst_compares_sets() -> None:
    lines = [json.loads(line) for line in CHECKDST_EXCERPT.read_text().splitlines()]
    parsed = parse_file(CHECKDST_EXCERPT, use_cache=False)
    assert parsed.fmt == "checkdst" and len(parsed.turns) == len(lines) == 12
    for record in lines:
        dialogue, _, turn = record["dial_id"].rpartition("-")
        for side, table in (("gold", parsed.gold), ("pred", parsed.pred)):
            rows = table[(table["dialogue_id"] == dialogue) & (table["turn_index"] == int(turn))]
            read = {f"{d}--{s}--{v}" for d, s, v in zip(rows["domain"], rows["slot"], rows["value"], strict=True)}
            assert read == checkdst_slots(record[side]), (record["dial_id"], side)
    expected = sum(checkdst_slots(r["pred"]) == checkdst_slots(r["gold"]) for r in lines)
    assert suite_of(CHECKDST_EXCERPT)["jga"] == pytest.approx(expected / 12)


@pytest.mark.realdata
@needs_wild
def test_checkdst_wild_file_gives_its_jga_11_of_30(capsys: pytest.CaptureFixture[str]) -> None:
    result = cli_json(capsys, "--pred", str(CHECKDST))  # no flag: the family's own convention, checkdst
    assert result["runs"][0]["formats"] == ["checkdst"] and result["convention"] == "checkdst"
    assert result["n_turns"] == 30
    assert result["jga"] == pytest.approx(11 / 30)


def test_checkdst_null_prediction_is_a_missing_turn(tmp_path: Path) -> None:
    lines = CHECKDST_EXCERPT.read_text().splitlines()[:3]
    second = json.loads(lines[1]) | {"pred": None}
    path = tmp_path / "x.checkdst_prediction.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(second), lines[2]]) + "\n")
    run = load_run(path)
    assert run.turns["pred_missing"].tolist() == [False, True, False]
    assert run.alignment.missing_turns == 1


# --- LLM-DST-EVAL ---------------------------------------------------------------------------------


def llm_dst_eval_file(tmp_path: Path) -> Path:
    turns = [
        {
            "flag": "SNG0073.json-0",
            "predict": {"taxi-departure": "saint johns college"},
            "ground_truth": {"taxi-departure": "saint johns college"},
            "ground_truth_m24": {"taxi-departure": "saint johns college"},
            "user": "a taxi from saint john s college",
        },
        {
            "flag": "SNG0073.json-1",
            "predict": {"taxi-departure": "saint johns college", "taxi-leaveat": "17:15"},
            "ground_truth": {"taxi-departure": "saint johns college"},
            "ground_truth_m24": {"taxi-departure": "saint johns college", "taxi-leaveat": "17:15"},
            "user": "after 17:15",
        },
    ]
    path = tmp_path / "original_sampled.json"
    path.write_text(json.dumps(turns))
    return path


def test_llm_dst_eval_reads_the_chosen_gold_and_names_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = llm_dst_eval_file(tmp_path)
    default = cli_json(capsys, "--pred", str(path))
    assert default["runs"][0]["formats"] == ["llm-dst-eval"]
    assert default["jga"] == pytest.approx(0.5)
    assert any(w.startswith("gold field: ground_truth (the default") for w in default["alignment"]["warnings"])
    chosen = cli_json(capsys, "--pred", str(path), "--gold-field", "ground_truth_m24")
    assert chosen["jga"] == pytest.approx(1.0)
    assert any(w.startswith("gold field: ground_truth_m24 (chosen") for w in chosen["alignment"]["warnings"])
    assert main(["metrics", "--pred", str(path), "--gold-field", "gold"]) == 2
    assert "record 1 lacks the gold field 'gold'" in capsys.readouterr().err
    assert main(["metrics", "--pred", str(CHECKDST_EXCERPT), "--gold-field", "gold"]) == 0  # a mapping family
    capsys.readouterr()


def _both_ways(path: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> tuple[object, object]:
    """The file parsed by the columnar fast path and by the record-by-record walk (the fast path disabled);
    `TAKEN` records whether the fast path read the first."""
    real = mapping_module._read_columns
    with monkeypatch.context() as patch:
        patch.setattr(mapping_module, "_read_columns", lambda *args: TAKEN.append(real(*args)) or TAKEN[-1])
        fast = parse_file(path, use_cache=False, **kwargs)  # type: ignore[arg-type]
    with monkeypatch.context() as patch:
        patch.setattr(mapping_module, "_read_columns", lambda *args: False)
        walked = parse_file(path, use_cache=False, **kwargs)  # type: ignore[arg-type]
    return fast, walked


TAKEN: list[bool] = []


def _same_tables(a, b) -> None:
    for name in ("turns", "gold", "pred"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert (a.notes, a.listed_slots, a.listings, a.fmt) == (b.notes, b.listed_slots, b.listings, b.fmt)


def test_columnar_reading_gives_the_walks_tables_bit_for_bit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CheckDST and LLM-DST-EVAL files read by columns (requirement 7's speed) give exactly the tables, notes
    and messages of the record-by-record walk: on the MIT excerpt, on LLM-DST-EVAL turns made from it, and
    on variants the fast path must get right or leave to the walk (marks, repeated and ignored pieces,
    whitespace, an empty predicted value, a user utterance, a null prediction, a duplicate, a bad id)."""
    lines = [json.loads(line) for line in CHECKDST_EXCERPT.read_text().splitlines() if line.strip()]
    fast, walked = _both_ways(CHECKDST_EXCERPT, monkeypatch)
    assert fast.fmt == "checkdst" and len(fast.pred) > 0 and TAKEN[-1]
    _same_tables(fast, walked)
    odd = [dict(line) for line in lines]
    odd[0]["pred"] = "<bs> hotel internet yes, hotel internet yes, bad piece, hotel  book day\tsunday , </bs> x y z,"
    odd[1]["pred"] = "  ,  ,hotel type guest house,, taxi leave at 17:15"
    odd[2]["gold"] = "hotel book stay 3, hotel book people 2 ,"
    odd[3]["pred"] = ""
    path = tmp_path / "odd.checkdst_prediction.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in odd))
    fast, walked = _both_ways(path, monkeypatch)
    assert fast.notes["linearised_pieces_ignored"] > 0 and TAKEN[-1]
    _same_tables(fast, walked)
    flat = []
    for line in lines:
        dialogue, _, turn = line["dial_id"].rpartition("-")
        gold = {
            f"{p[0]}-{p[1]}": p[2] for p in (x.strip().split(" ", 2) for x in line["gold"].split(",")) if len(p) == 3
        }
        pred = {
            f"{p[0]}-{p[1]}": p[2] for p in (x.strip().split(" ", 2) for x in line["pred"].split(",")) if len(p) == 3
        }
        flat.append({"flag": f"{dialogue}.json-{turn}", "predict": pred, "ground_truth": gold, "user": line["context"]})
    flat[0]["predict"] = {**flat[0]["predict"], "hotel-area": ""}  # an empty predicted value: dropped
    for variant in ("plain", "no user", "null prediction", "empty gold value", "duplicate", "bad id"):
        records = [dict(r) for r in flat]
        if variant == "no user":
            records = [{k: v for k, v in r.items() if k != "user"} for r in records]
        elif variant == "null prediction":
            records[4]["predict"] = None
        elif variant == "empty gold value":
            records[5]["ground_truth"] = {**records[5]["ground_truth"], "hotel-stars": ""}
        elif variant == "duplicate":
            records.append(dict(records[0]))
        elif variant == "bad id":
            records[6]["flag"] = "no turn number"
        path = tmp_path / f"{variant}.json"
        path.write_text(json.dumps(records))
        if variant == "bad id":
            with pytest.raises(InputError, match="record 7: id 'no turn number' does not match id_pattern"):
                parse_file(path, use_cache=False)
            continue
        fast, walked = _both_ways(path, monkeypatch)
        assert fast.fmt == "llm-dst-eval", variant
        # the walk reads what it treats specially: a null prediction, an empty gold value, a duplicate
        assert TAKEN[-1] == (variant in ("plain", "no user")), variant
        _same_tables(fast, walked)


def test_llm_dst_eval_dialogues_turn_details(tmp_path: Path) -> None:
    dialogues = [
        {
            "dialogue_idx": "PMUL4648.json",
            "turn_details": [
                {
                    "turn_idx": 0,
                    "user": "nusha",
                    "gt_m21": {},
                    "gt_m24": {"restaurant-name": "nusha"},
                    "predict": {"restaurant-name": "nusha"},
                },
                {
                    "turn_idx": 1,
                    "user": "?",
                    "gt_m21": {"attraction-name": "nusha"},
                    "gt_m24": {"attraction-name": "nusha"},
                    "predict": {"restaurant-name": "nusha"},
                },
            ],
        }
    ]
    path = tmp_path / "simple_output_parsed.json"
    path.write_text(json.dumps(dialogues))
    parsed = parse_file(path, use_cache=False)
    assert parsed.fmt == "llm-dst-eval-dialogues" and len(parsed.turns) == 2
    assert len(parsed.gold) == 1 and parsed.notes["gold_field"].startswith("gt_m21 (the default")
    assert len(parse_file(path, use_cache=False, gold_field="gt_m24").gold) == 2


# --- declared mappings ----------------------------------------------------------------------------


def custom_file(tmp_path: Path) -> Path:
    rows = [
        {"conv": "d1", "step": 1, "reference": "hotel area east, hotel book day monday,", "hyp": "hotel area east,"},
        {"conv": "d1", "step": 2, "reference": "hotel area east,", "hyp": "hotel area east,"},
        {"conv": "d2", "step": 1, "reference": "", "hyp": ""},
    ]
    path = tmp_path / "custom.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_declared_mapping_reads_a_shape_no_format_knows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = custom_file(tmp_path)
    assert main(["metrics", "--pred", str(path)]) == 2
    assert "format not recognised" in capsys.readouterr().err
    option = "dialogue=conv,turn=step,turn_base=1,gold=reference,pred=hyp,encoding=linearised,multiword_slots=book day"
    result = cli_json(capsys, "--pred", str(path), "--mapping", option)
    assert result["runs"][0]["formats"] == ["mapping"]
    assert (result["n_dialogues"], result["n_turns"]) == (2, 3)
    assert result["jga"] == pytest.approx(2 / 3)
    parsed = parse_file(path, mapping=parse_mapping_option(option), use_cache=False)
    assert parsed.turns["turn_index"].tolist() == [0, 1, 0]
    assert ("hotel", "book day", "monday") in set(
        zip(parsed.gold["domain"], parsed.gold["slot"], parsed.gold["value"], strict=True)
    )


def test_mapping_paths_keys_and_nested_turns(tmp_path: Path) -> None:
    document = {
        "data": {
            "MUL1": {"turns": [{"gold": {"hotel": {"area": "east"}}, "out": [["hotel", "area", "east"]]}]},
            "MUL2": {
                "turns": [{"gold": {}, "out": []}, {"gold": {"taxi": {"leave at": ["17:15", "17:30"]}}, "out": []}]
            },
        }
    }
    path = tmp_path / "nested.json"
    path.write_text(json.dumps(document))
    mapping = Mapping(
        records="data",
        turns="turns",
        dialogue="@key",
        turn="@index",
        gold="gold",
        pred="out",
        gold_encoding="nested",
        pred_encoding="triples",
    )
    parsed = parse_file(path, mapping=mapping, use_cache=False)
    assert list(zip(parsed.turns["dialogue_id"], parsed.turns["turn_index"], strict=True)) == [
        ("MUL1", 0),
        ("MUL2", 0),
        ("MUL2", 1),
    ]
    assert parsed.gold["value"].tolist() == ["east", "17:15|17:30"]  # a list is a set of alternatives
    with pytest.raises(InputError, match=r"records path 'dat' is not in the file"):
        parse_file(path, mapping=Mapping(records="dat", id="x", gold="gold"), use_cache=False)
    with pytest.raises(InputError, match="record 1, turn 1 lacks the pred field 'pred'"):
        parse_file(
            path,
            mapping=Mapping(records="data", turns="turns", dialogue="@key", turn="@index", gold="gold", pred="pred"),
            use_cache=False,
        )


def test_unusable_mappings_are_refused_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = custom_file(tmp_path)
    assert main(["metrics", "--pred", str(path), "--mapping", "gold=reference,encoding=text"]) == 2
    err = capsys.readouterr().err
    assert "name the turns" in err and "encoding 'text' is not one of" in err
    assert main(["metrics", "--pred", str(path), "--mapping", "bogus=1"]) == 2
    assert "unknown mapping key 'bogus'" in capsys.readouterr().err
    with pytest.raises(InputError, match="id_pattern needs the named groups"):
        parse_mapping_option("id=x,id_pattern=(.+)-(.+),gold=g")


def test_manifest_mapping_and_gold_field(tmp_path: Path) -> None:
    custom_file(tmp_path)
    llm_dst_eval_file(tmp_path)
    (tmp_path / "workspace.toml").write_text(
        '[[runs]]\nname = "custom"\npred = "custom.jsonl"\n'
        'mapping = { dialogue = "conv", turn = "step", gold = "reference", pred = "hyp", encoding = "linearised" }\n'
        '[[runs]]\nname = "m24"\npred = "original_sampled.json"\ngold_field = "ground_truth_m24"\n'
    )
    workspace = load_workspace(tmp_path / "workspace.toml")
    assert not workspace.failed
    assert workspace.runs["custom"].meta.formats == ("mapping",)
    assert metric_suite(score_run(workspace.runs["m24"], "exact"))["jga"] == pytest.approx(1.0)
    (tmp_path / "bad.toml").write_text('[[runs]]\nname = "x"\npred = "custom.jsonl"\nmapping = { gold = 3 }\n')
    with pytest.raises(InputError, match="run 'x': mapping: mapping key 'gold' must be a string"):
        load_workspace(tmp_path / "bad.toml")


def test_sniff_proposes_mappings_that_read_unknown_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keyed = {
        f"MUL{i}.json_{t}": {"truth": [["hotel", "area", "east"]], "system_pred": [["hotel", "area", "east"]]}
        for i in range(3)
        for t in range(2)
    }
    (tmp_path / "keyed.json").write_text(json.dumps(keyed))
    found = sniff(tmp_path / "keyed.json")
    assert found["detected_format"] is None
    assert found["proposed_mapping"]["id"] == "@key" and found["proposed_mapping"]["encoding"] == "triples"
    assert found["result"] == found["result"] | {"reads": True, "turns": 6, "dialogues": 3}
    found = sniff(custom_file(tmp_path))
    assert found["proposed_mapping"] | {"turn_base": 1} == {
        "dialogue": "conv",
        "turn": "step",
        "gold": "reference",
        "pred": "hyp",
        "encoding": "linearised",
        "multiword_slots": ["book day", "book time", "book people", "book stay"],
        "turn_base": 1,
    }
    assert found["result"]["reads"] and found["result"]["turns"] == 3
    assert main(["sniff", str(CHECKDST_EXCERPT)]) == 0
    out = capsys.readouterr().out
    assert "detected format: checkdst" in out and 'mapping = { id = "dial_id"' in out


# --- archives ---------------------------------------------------------------------------------------


def test_a_member_of_a_zip_of_several_is_named_with_double_colon(tmp_path: Path) -> None:
    archive = tmp_path / "runs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(10):
            zf.writestr(f"seed{i}/pred.jsonl", CHECKDST_EXCERPT.read_text())
    with pytest.raises(InputError) as refused:
        parse_file(archive, use_cache=False)
    assert all(f"seed{i}/pred.jsonl" in refused.value.problem for i in range(10))
    assert "runs.zip::<member>" in refused.value.problem
    parsed = parse_file(f"{archive}::seed7/pred.jsonl")  # cached by the archive's stat
    assert parsed.fmt == "checkdst" and len(parsed.turns) == 12
    with pytest.raises(InputError, match=re.escape("has no member 'seed10/pred.jsonl'; its members: seed0/pred.jsonl")):
        parse_file(f"{archive}::seed10/pred.jsonl", use_cache=False)
