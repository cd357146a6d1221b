"""ConvLab-3 unified files: prediction samples (`convlab3`) and unified dialogues (`convlab3-dialogues`).

Real files: ../shared/realdata/scorer_oracles (AuGPT's predictions in merge_predict_res.py's shape, with the
official scorer's numbers) and ConvLab-3's own `dummy_data.json` excerpts under tests/data/convlab3 (see
NOTICE). Prediction files are derived here from those dialogues the way ConvLab-3 builds its samples.
"""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from analysis import metrics as M
from analysis.cli.main import main
from analysis.errors import InputError
from analysis.formats import FORMATS_BY_NAME, detect_format, parse_file
from analysis.formats.reading import parse_records
from analysis.loading import load_run
from analysis.model import dialogue_key
from analysis.scoring import score_run
from tests.conftest import ROOT, realdata_path

DUMMY = ROOT / "tests" / "data" / "convlab3"
CORPUS = ROOT / "tests" / "malformed"  # the bad-input corpus; its cases are declared in make_corpus.py
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "EXPECTED.json").read_text(encoding="utf-8"))
DATASETS = ("multiwoz21", "sgd", "tm2", "crosswoz", "camrest")
REAL = ("scorer_oracles", "convlab3_augpt_predictions.json.gz")
State = dict[str, dict[str, str]]


def dummy(dataset: str) -> list[dict[str, Any]]:
    """A committed excerpt of ConvLab-3's data/unified_datasets/<dataset>/dummy_data.json."""
    return json.loads((DUMMY / f"{dataset}_dummy_data.json").read_text(encoding="utf-8"))


def filled(state: State) -> State:
    """A perfect prediction: the gold state without its empty slots (what a T5 tracker emits)."""
    return {domain: {s: v for s, v in slots.items() if v} for domain, slots in state.items()}


def samples_of(
    dialogues: list[dict[str, Any]],
    *,
    predict: Callable[[State], Any] = filled,
    context_window: int = 100,
    with_dataset: bool = False,
) -> list[dict[str, Any]]:
    """Prediction samples as merge_predict_res.py writes them: one per user turn, the dialogue's
    original id, earlier turns (with their own states) as `context`, the prediction under `predictions`."""
    samples = []
    for dialogue in dialogues:
        history: list[dict[str, Any]] = []
        for turn in dialogue["turns"]:
            entry = {k: turn[k] for k in ("speaker", "utterance", "utt_idx", "state") if k in turn}
            if turn["speaker"] == "user":
                sample = {**copy.deepcopy(entry), "dialogue_id": dialogue["original_id"]}
                if context_window:
                    sample["context"] = copy.deepcopy(history[-context_window:])
                if with_dataset:
                    sample["dataset"] = dialogue["dataset"]
                sample["predictions"] = {"state": predict(turn["state"])}
                samples.append(sample)
            history.append(entry)
    return samples


def write(path: Path, records: Any) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def jga(run: Any) -> float:
    return float(M.joint_goal_accuracy(score_run(run)))


# --- the real AuGPT file ---------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_file_is_detected_with_every_turn_in_order() -> None:
    parsed = parse_file(realdata_path(*REAL))
    turns = parsed.turns
    assert parsed.fmt == "convlab3"
    assert len(turns) == 7372 and turns["dialogue_id"].nunique() == 1000
    assert parsed.gold is not None and parsed.pred is not None
    # MultiWOZ alternates user/system from the user: the user turn at utt_idx 2k is turn k.
    assert (turns["turn_index"] == turns["utt_idx"] // 2).all()
    assert not turns.duplicated(["dialogue_id", "turn_index"]).any()
    assert not turns["pred_missing"].any()
    first = turns[(turns["dialogue_id"] == "SNG0073") & (turns["turn_index"] == 0)].iloc[0]
    assert first["user"].startswith("I would like a taxi from Saint John")
    # Every slot of the ontology is listed per turn ("" included), so slot accuracy has its denominator.
    assert ("hotel", "book stay") in parsed.listed_slots and ("police", "name") not in parsed.listed_slots


@pytest.mark.realdata
def test_real_file_lines_up_with_raw_multiwoz_turn_for_turn() -> None:
    samples = parse_file(realdata_path(*REAL)).turns
    raw = parse_file(realdata_path("multiwoz21", "test.json.zip")).turns
    keys = {(k, t) for k, t in zip(dialogue_key(samples["dialogue_id"]), samples["turn_index"], strict=True)}
    assert keys == {(k, t) for k, t in zip(dialogue_key(raw["dialogue_id"]), raw["turn_index"], strict=True)}
    run = load_run(realdata_path(*REAL), realdata_path("multiwoz21", "test.json.zip"))
    assert run.alignment.ok and run.alignment.notes == {"embedded_gold_replaced_by": "test.json.zip"}


@pytest.mark.realdata
def test_real_file_scores_the_official_numbers_under_its_own_convention() -> None:
    run = load_run(realdata_path(*REAL))
    assert run.meta.convention == "convlab3" and run.alignment.ok
    scored = score_run(run)
    assert float(M.joint_goal_accuracy(scored)) == pytest.approx(0.492675, abs=1e-6)
    prf = M.slot_prf_micro(scored)
    assert (prf["precision"], prf["recall"], prf["f1"]) == pytest.approx((0.909029, 0.864493, 0.886202), abs=1e-6)


@pytest.mark.slow
@pytest.mark.realdata
def test_plain_gzip_and_zip_containers_give_the_same_tables(tmp_path: Path) -> None:
    text = gzip.decompress(realdata_path(*REAL).read_bytes())
    plain = tmp_path / "predictions.json"
    plain.write_bytes(text)
    packed = tmp_path / "predictions.json.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("predictions.json", text)
    reference = parse_file(realdata_path(*REAL), use_cache=False)
    for path in (plain, packed):
        parsed = parse_file(path, use_cache=False)
        assert parsed.fmt == "convlab3"
        assert parsed.turns.equals(reference.turns) and parsed.gold.equals(reference.gold)


@pytest.mark.realdata
def test_official_one_sample_cases() -> None:
    run = load_run(realdata_path("scorer_oracles", "convlab3_cases.json"))
    assert run.meta.formats == ("convlab3",) and run.meta.convention == "convlab3"
    assert jga(run) == pytest.approx(0.714286, abs=1e-6)


# --- samples: order, context, utterances, missing predictions ---------------------------------------


def test_turns_follow_utt_idx_whatever_the_sample_order(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"))
    ordered = parse_file(write(tmp_path / "ordered.json", samples), use_cache=False)
    shuffled = parse_file(write(tmp_path / "shuffled.json", samples[::-1]), use_cache=False)
    columns = ["dialogue_id", "turn_index", "utt_idx", "user", "system"]

    def by_turn(turns: Any) -> Any:
        return turns[columns].sort_values(["dialogue_id", "turn_index"]).reset_index(drop=True)

    assert by_turn(ordered.turns).equals(by_turn(shuffled.turns))
    mul = ordered.turns[ordered.turns["dialogue_id"] == "MUL2168.json"]
    assert mul["turn_index"].tolist() == list(range(8)) and mul["utt_idx"].tolist() == list(range(0, 16, 2))


def test_context_is_history_never_gold(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"))
    for sample in samples:
        for entry in sample["context"]:
            if "state" in entry:
                entry["state"] = {"hotel": {"area": "POISON"}, "poison": {"slot": "POISON"}}
    parsed = parse_file(write(tmp_path / "p.json", samples), use_cache=False)
    assert "POISON" not in set(parsed.gold["value"]) and "poison" not in set(parsed.gold["domain"])
    assert ("poison", "slot") not in parsed.listed_slots
    clean = parse_file(write(tmp_path / "clean.json", samples_of(dummy("multiwoz21"))), use_cache=False)
    assert parsed.gold.equals(clean.gold)


def test_system_reply_comes_from_the_next_samples_context(tmp_path: Path) -> None:
    dialogues = dummy("multiwoz21")
    parsed = parse_file(write(tmp_path / "p.json", samples_of(dialogues)), use_cache=False)
    turns = parsed.turns[parsed.turns["dialogue_id"] == "SNG01856.json"]
    source = dialogues[0]["turns"]
    assert turns["user"].tolist() == [t["utterance"] for t in source[0::2]]
    # `system` is the reply after the user turn: known from the next sample's context, except at the end.
    assert turns["system"].tolist()[:-1] == [t["utterance"] for t in source[1:-1:2]]
    assert turns["system"].isna().tolist()[-1]


def test_one_speaker_file_without_context(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"), context_window=0)
    assert {s["speaker"] for s in samples} == {"user"} and not any("context" in s for s in samples)
    run = load_run(write(tmp_path / "p.json", samples))
    assert len(run.turns) == 15 and run.turns["system"].isna().all()
    assert run.alignment.ok and jga(run) == 1.0


def test_a_short_context_only_gives_replies_it_reaches(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"), context_window=1)  # the previous system turn only
    parsed = parse_file(write(tmp_path / "p.json", samples), use_cache=False)
    full = parse_file(write(tmp_path / "full.json", samples_of(dummy("multiwoz21"))), use_cache=False)
    assert parsed.turns["system"].equals(full.turns["system"])


def test_missing_predictions_are_counted_never_dropped(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"))
    del samples[1]["predictions"]
    samples[4]["predictions"] = {}
    samples[7]["predictions"] = None
    parsed = parse_file(write(tmp_path / "p.json", samples), use_cache=False)
    assert len(parsed.turns) == len(samples) == 15
    assert parsed.turns["pred_missing"].sum() == 3

    run = load_run(tmp_path / "p.json")
    assert len(run.turns) == 15 and run.turns["pred_missing"].sum() == 3
    assert run.alignment.missing_turns == 3 and run.alignment.pred_turns == 12
    assert run.alignment.missing_turn_examples == [("SNG01856.json", 1), ("SNG01856.json", 4), ("MUL2168.json", 2)]
    assert any(line.startswith("3 gold turns have no prediction") for line in run.alignment.warnings())
    missing = run.turns.loc[run.turns["pred_missing"], ["dialogue_id", "turn_index"]]
    predicted = set(zip(run.pred["dialogue_id"], run.pred["turn_index"], strict=True))
    assert not predicted & set(zip(missing["dialogue_id"], missing["turn_index"], strict=True))
    # The same file against separate unified gold: the same three turns are missing there.
    aligned = load_run(tmp_path / "p.json", DUMMY / "multiwoz21_dummy_data.json")
    assert aligned.alignment.missing_turns == 3 and aligned.turns["pred_missing"].sum() == 3


def test_a_file_merged_from_two_datasets(tmp_path: Path) -> None:
    merged = samples_of(dummy("multiwoz21"), with_dataset=True) + samples_of(dummy("sgd"), with_dataset=True)
    run = load_run(write(tmp_path / "predictions.json", merged))
    assert run.meta.formats == ("convlab3",) and run.meta.convention == "convlab3"
    assert len(run.turns) == len(merged) == 15 + 16
    counts = run.turns.groupby("source_dataset").size().to_dict()
    assert counts == {"multiwoz21": 15, "sgd": 16}
    assert jga(run) == 1.0
    sgd = run.turns[run.turns["source_dataset"] == "sgd"]
    assert set(sgd["dialogue_id"]) == {"1_00003", "1_00005"}


def test_a_single_dataset_file_has_no_dataset_column(tmp_path: Path) -> None:
    parsed = parse_file(write(tmp_path / "p.json", samples_of(dummy("sgd"), with_dataset=True)), use_cache=False)
    assert "source_dataset" not in parsed.turns


def test_wrong_predictions_in_one_dialogue_fail_its_turns_only(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"))
    for sample in samples:
        if sample["dialogue_id"] == "MUL2168.json":
            state = sample["predictions"]["state"]
            sample["predictions"]["state"] = {
                d: {s: v + " (wrong)" for s, v in slots.items()} for d, slots in state.items()
            }
    run = load_run(write(tmp_path / "p.json", samples))
    assert jga(run) == pytest.approx(7 / 15)  # MUL2168's 8 user turns are wrong, the other 7 right


def test_unlisted_non_string_predictions_are_read_like_elsewhere(tmp_path: Path) -> None:
    samples = samples_of(dummy("multiwoz21"))
    samples[0]["predictions"]["state"]["made-up"] = {"slot": ["a", "b"], "count": 3}
    parsed = parse_file(write(tmp_path / "p.json", samples), use_cache=False)
    extra = parsed.pred[parsed.pred["domain"] == "made-up"]
    assert dict(zip(extra["slot"], extra["value"], strict=True)) == {"slot": "a|b", "count": "3"}


# --- unified dialogues as gold -----------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_committed_dummy_file_reads_as_unified_gold(dataset: str) -> None:
    dialogues = dummy(dataset)
    parsed = parse_file(DUMMY / f"{dataset}_dummy_data.json", use_cache=False)
    assert parsed.fmt == "convlab3-dialogues" and parsed.pred is None
    user_turns = [t for d in dialogues for t in d["turns"] if t["speaker"] == "user"]
    assert len(parsed.turns) == len(user_turns)
    assert set(parsed.turns["dialogue_id"]) == {str(d["original_id"]) for d in dialogues}
    assert not parsed.turns.duplicated(["dialogue_id", "turn_index"]).any()
    assert parsed.turns["user"].tolist() == [t["utterance"] for t in user_turns]


@pytest.mark.parametrize("dataset", DATASETS)
def test_predictions_align_with_unified_gold(dataset: str, tmp_path: Path, capsys) -> None:
    pred = write(tmp_path / "predictions.json", samples_of(dummy(dataset)))
    gold = DUMMY / f"{dataset}_dummy_data.json"
    run = load_run(pred, gold)
    assert run.meta.formats == ("convlab3", "convlab3-dialogues") and run.meta.convention == "convlab3"
    assert run.alignment.ok and jga(run) == 1.0
    assert main(["metrics", "--pred", str(pred), "--gold", str(gold), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["convention"] == "convlab3" and out["jga"] == 1.0 and out["alignment"]["ok"]


def test_system_first_dialogues_number_user_turns_from_zero() -> None:
    parsed = parse_file(DUMMY / "tm2_dummy_data.json", use_cache=False)
    dialogues = {str(d["original_id"]): d for d in dummy("tm2")}
    opening = next(d for d in dialogues.values() if d["turns"][0]["speaker"] == "system")
    turns = parsed.turns[parsed.turns["dialogue_id"] == opening["original_id"]]
    assert turns["utt_idx"].tolist()[:3] == [1, 3, 5] and turns["turn_index"].tolist() == list(range(len(turns)))
    # The reply after user turn k is the system turn after it; the opening system turn is not a reply.
    assert turns["system"].iloc[0] == opening["turns"][2]["utterance"]
    assert opening["turns"][0]["utterance"] not in set(turns["system"].dropna())


def test_our_jsonl_aligns_with_unified_gold(tmp_path: Path) -> None:
    lines = [
        {"dialogue_id": s["dialogue_id"], "turn_index": s["utt_idx"] // 2, "pred": s["predictions"]["state"]}
        for s in samples_of(dummy("multiwoz21"), context_window=0)
    ]
    pred = tmp_path / "preds.jsonl"
    pred.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = load_run(pred, DUMMY / "multiwoz21_dummy_data.json")
    assert run.meta.convention == "convlab3" and run.alignment.ok and jga(run) == 1.0


def test_data_zip_reads_its_dialogues_json_test_split(tmp_path: Path) -> None:
    """A unified dataset's data.zip: data/dialogues.json beside ontology.json; the test split is read."""
    train = dummy("multiwoz21")
    test = copy.deepcopy(train[:2])
    for dialogue in test:
        dialogue["data_split"] = "test"
        dialogue["original_id"] = "TEST-" + dialogue["original_id"]
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data/ontology.json", json.dumps({"domains": {}}))
        zf.writestr("data/dialogues.json", json.dumps(train + test))
    parsed = parse_file(archive, use_cache=False)
    assert parsed.fmt == "convlab3-dialogues"
    assert set(parsed.turns["dialogue_id"]) == {"TEST-SNG01856.json", "TEST-MUL2168.json"}
    assert parsed.notes == {"dialogues_of_other_splits_not_read": 3}
    run = load_run(write(tmp_path / "p.json", samples_of(test)), archive)
    assert run.alignment.ok and "dialogues of other splits not read: 3" in run.alignment.warnings()


def test_a_zip_of_several_files_without_dialogues_json_is_still_refused(tmp_path: Path) -> None:
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/ontology.json", "{}")
        zf.writestr("data/database.json", "{}")
    with pytest.raises(InputError, match="zip archive must hold exactly one file"):
        parse_file(archive, use_cache=False)


def test_user_turns_without_state_are_counted_and_left_out(tmp_path: Path) -> None:
    dialogues = dummy("multiwoz21")
    for turn in dialogues[1]["turns"]:
        turn.pop("state", None)  # a dialogue with no state at all, beside annotated ones
    parsed = parse_file(write(tmp_path / "g.json", dialogues), use_cache=False)
    assert set(parsed.turns["dialogue_id"]) == {"SNG01856.json", "SNG01741.json"}
    # ... and the dialogue left with no turn is counted, not dropped silently (issue 14, requirement 6).
    assert parsed.notes == {"user_turns_without_state_not_read": 8, "dialogues_without_turns": 1}


def test_a_dataset_without_state_is_one_line_error(tmp_path: Path) -> None:
    dialogues = dummy("tm2")
    for dialogue in dialogues:
        for turn in dialogue["turns"]:
            turn.pop("state", None)
    path = write(tmp_path / "dailydialog_like.json", dialogues)
    with pytest.raises(InputError) as caught:
        parse_file(path, use_cache=False)
    assert str(caught.value) == (
        f"{path} [format: convlab3-dialogues]: no user turn holds a state: 10 user turns read, none annotated for DST"
    )


def test_colliding_original_ids_fall_back_to_unified_ids(tmp_path: Path) -> None:
    dialogues = dummy("camrest")
    dialogues[1]["original_id"] = dialogues[0]["original_id"]
    parsed = parse_file(write(tmp_path / "g.json", dialogues), use_cache=False)
    assert set(parsed.turns["dialogue_id"]) == {"camrest-train-0", "camrest-train-2"}
    assert parsed.notes == {"dialogues_keyed_by_unified_id_original_ids_not_unique": 1}


# --- detection, listing, bad input -------------------------------------------------------------------


def test_detection_neither_misses_nor_steals(tmp_path: Path) -> None:
    samples_path = write(tmp_path / "p.json", samples_of(dummy("multiwoz21")))
    assert detect_format(*parse_records(samples_path)) is FORMATS_BY_NAME["convlab3"]
    assert detect_format(*parse_records(DUMMY / "sgd_dummy_data.json")) is FORMATS_BY_NAME["convlab3-dialogues"]
    # Our JSONL records written as a JSON array are not ConvLab-3 samples.
    ours = write(tmp_path / "ours.json", [{"dialogue_id": "d", "turn_index": 0, "gold": {}, "pred": {}}])
    assert detect_format(*parse_records(ours)) is None
    for partner in (CORPUS / "partners").iterdir():
        assert detect_format(*parse_records(partner)).name not in ("convlab3", "convlab3-dialogues")


def test_formats_command_lists_both() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "formats"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    lines = done.stdout.splitlines()
    for name in ("convlab3", "convlab3-dialogues"):
        at = next(i for i, line in enumerate(lines) if line.split()[0] == name)
        assert FORMATS_BY_NAME[name].summary in lines[at] and lines[at + 1].strip().startswith("e.g. [{")


BAD_CASES = sorted(n for n, e in EXPECTED.items() if e["family"].startswith("convlab3"))


def test_the_corpus_holds_each_bad_input_case() -> None:
    assert BAD_CASES == [
        "convlab3_dialogues_duplicate_utt_idx.json",
        "convlab3_dialogues_no_state.json",
        "convlab3_dialogues_value_number.json",
        "convlab3_duplicate_utt_idx.json",  # two samples of one dialogue with the same utt_idx
        "convlab3_gold_value_list.json",  # a non-string value (the scorer splits it)
        "convlab3_missing_dialogue_id.json",
        "convlab3_missing_utt_idx.json",
        "convlab3_pred_value_number.json",
        "convlab3_predictions_string.json",
        "convlab3_sample_not_object.json",
        "convlab3_sample_without_state.json",
        "convlab3_state_not_object.json",
    ]


@pytest.mark.parametrize("name", BAD_CASES)
def test_bad_input_is_one_line_naming_file_format_and_sample(name: str) -> None:
    e = EXPECTED[name]
    with pytest.raises(InputError) as caught:
        parse_file(CORPUS / name, use_cache=False)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{CORPUS / name} [format: {e['format']}]: ")
    assert e["contains"] in message
    if e["family"] == "convlab3":
        assert "sample" in message  # the sample index, for files of samples
    assert caught.value.dialogue_id == e.get("dialogue_id") and caught.value.field == e.get("field")
    assert caught.value.turn == e.get("turn")
