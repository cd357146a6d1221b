"""SOM-DST per-turn outputs, LLM trackers' raw text and turn-level (delta) predictions (issue 16.3).

The hand-made files under tests/data/more_formats follow the public shapes: SOM-DST's `evaluation.py`
dumps `{"<dialogue id>_<turn id>": [predicted, gold]}` of `domain-slot-value` strings; the LLM file is one
JSON record a turn with the generated text; the delta file is our JSONL whose `pred` holds only what
each turn changed. Their numbers are computed by hand in the comments.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.errors import InputError
from analysis.formats import FORMATS_BY_NAME, detect_format, parse_file
from analysis.formats.more import DELTA_NOTE, accumulate_deltas, delta_suspicion, parse_generation
from analysis.formats.reading import parse_records
from analysis.loading import load_run
from analysis.metrics import joint_goal_accuracy
from analysis.outcomes import ERROR_OUTCOMES, Outcome
from analysis.scoring import score_run
from analysis.suite import metric_suite
from analysis.workspace import load_workspace
from tests.conftest import ROOT, realdata_path
from tests.opened_app import opened_page

DATA = ROOT / "tests" / "data" / "more_formats"
SOMDST = DATA / "somdst_preds_0.json"
LLM = DATA / "llm_outputs.jsonl"
DELTAS = DATA / "deltas.jsonl"


def outcomes(result: dict) -> dict[str, int]:
    return {k: v for k, v in result["outcomes"].items() if v}


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def one_line_error(path: Path, fmt: str | None = None, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_file(path, fmt=fmt, use_cache=False, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path} [format: ")
    return caught.value


# --- SOM-DST ----------------------------------------------------------------------------------------


def test_somdst_is_detected_and_split_at_the_last_underscore_and_first_two_hyphens() -> None:
    parsed = parse_file(SOMDST, use_cache=False)
    assert parsed.fmt == "somdst"
    assert list(parsed.turns["dialogue_id"].unique()) == ["PMUL0001.json", "SNG0002.json"]
    assert parsed.turns["turn_index"].tolist() == [0, 1, 2, 0, 1]
    assert parsed.gold is not None and parsed.pred is not None
    gold = set(
        zip(
            parsed.gold["dialogue_id"],
            parsed.gold["turn_index"],
            parsed.gold["slot"],
            parsed.gold["value"],
            strict=True,
        )
    )
    assert ("SNG0002.json", 1, "destination", "stansted-airport") in gold  # a hyphen inside the value stays
    assert ("SNG0002.json", 0, "leave at", "10:30") in gold
    pred = parsed.pred
    assert ("PMUL0001.json", 2, "book day", "monday") in set(
        zip(pred["dialogue_id"], pred["turn_index"], pred["slot"], pred["value"], strict=True)
    )


def test_somdst_numbers_by_hand() -> None:
    # PMUL0001: t0 right; t1 stars 3 for 4 (wrong); t2 an extra book day (spurious).
    # SNG0002: t0 leave at missed; t1 right (gold listed in another order).  JGA 2/5.
    result = metric_suite(score_run(load_run(SOMDST)))
    assert result["jga"] == pytest.approx(2 / 5)
    assert outcomes(result) == {"correct": 6, "wrong_value": 1, "missed": 1, "spurious": 1}
    assert result["unparseable_turns"] == 0


def test_somdst_gold_from_gold_file_when_given(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"dialogue_id": "PMUL0001.json", "turn_index": t, "gold": {"hotel": {"area": "east", "stars": "3"}}}
            for t in range(3)
        ]
        + [{"dialogue_id": "SNG0002.json", "turn_index": t, "gold": {}} for t in range(2)],
    )
    run = load_run(SOMDST, gold)
    assert run.alignment.notes["embedded_gold_replaced_by"] == "gold.jsonl"
    # Against this gold: PMUL t0 misses stars, t1 right, t2 spurious book day; SNG t0 right (empty), t1 spurious.
    assert joint_goal_accuracy(score_run(run)) == pytest.approx(2 / 5)


def test_somdst_malformed_is_one_line_naming_the_entry(tmp_path: Path) -> None:
    no_turn = write_json(tmp_path / "a.json", {"MUL0001.json_0": [[], []], "MUL0002.json": [[], []]})
    error = one_line_error(no_turn)
    assert error.fmt == "somdst" and "'MUL0002.json'" in error.problem and "<turn id>" in error.problem
    three = write_json(tmp_path / "b.json", {"MUL0001.json_0": [[], []], "MUL0001.json_1": [[], [], []]})
    error = one_line_error(three)
    assert (error.dialogue_id, error.turn) == ("MUL0001.json", "1") and "[predicted, gold]" in error.problem
    bad_triple = write_json(tmp_path / "c.json", {"MUL0001.json_0": [[], ["hotel-area"]]})
    error = one_line_error(bad_triple)
    assert error.field == "gold (item 1)" and "'hotel-area'" in error.problem and error.turn == 0
    # A predicted string that is not domain-slot-value is a wrong prediction, not a refused file (issue 38.4).
    odd_prediction = write_json(tmp_path / "c2.json", {"MUL0001.json_0": [["hotel-area"], []]})
    assert parse_file(odd_prediction, use_cache=False).pred["slot"].tolist() == ["hotel-area"]
    not_string = write_json(
        tmp_path / "d.json", {"MUL0001.json_0": [[], ["hotel-area-east"]], "MUL0001.json_1": [[], [7]]}
    )
    error = one_line_error(not_string)
    assert error.field == "gold (item 1)" and error.turn == 1
    twice = write_json(tmp_path / "e.json", {"MUL0001.json_0": [[], []], "MUL0001.json_00": [[], []]})
    assert "duplicate turn" in one_line_error(twice).problem
    # Forced onto a file of another shape: the format's own summary and example.
    other = write_json(tmp_path / "f.json", {"MUL0001": [{"hotel": {"area": "east"}}]})
    assert "does not have the somdst shape" in one_line_error(other, fmt="somdst").problem


# --- LLM raw text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"hotel": {"area": "east", "stars": 4}}', [("hotel", "area", "=", "east"), ("hotel", "stars", "=", "4")]),
        ('```json\n{"hotel-area": "east"}\n```', [("hotel", "area", "=", "east")]),
        ('The state is {"hotel": {"area": "east"}}. Anything else?', [("hotel", "area", "=", "east")]),
        (
            "hotel-price range=cheap\nhotel-area: east",
            [("hotel", "price range", "=", "cheap"), ("hotel", "area", "=", "east")],
        ),
        (
            'Belief state:\n- taxi-leave at: "10:30"\n* taxi-departure = ely\nThanks!',
            [("taxi", "leave at", "=", "10:30"), ("taxi", "departure", "=", "ely")],
        ),
        ("```\ntrain-day=monday\n```", [("train", "day", "=", "monday")]),
        ("NONE", []),
        ("{}", []),
        ("```json\n{}\n```", []),
    ],
)
def test_generated_text_that_parses(text: str, expected: list) -> None:
    assert parse_generation(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "I am not sure what the user wants.",
        '{"hotel": {"area": ',  # a truncated generation
        "hotel-area=east\nand then the user asked about trains\ntrain-day=monday",  # prose between state lines
        '["hotel-area-east"]',
        '{"hotel": {"area": {"deep": "x"}}}',
    ],
)
def test_generated_text_that_does_not_parse(text: str) -> None:
    assert parse_generation(text) is None


def test_llm_numbers_by_hand_and_unparseable_turns_are_their_own_outcome() -> None:
    # d1 t0 right (fenced JSON); t1 stars 3 for 4 (flat JSON in prose); t2 prose: unparseable, 2 gold slots;
    # d2 t0 empty text: unparseable with an empty gold state (never joint-correct); t1 day right, people spurious.
    scored = score_run(load_run(LLM))
    result = metric_suite(scored)
    assert result["jga"] == pytest.approx(1 / 5)
    assert outcomes(result) == {"correct": 3, "wrong_value": 1, "spurious": 1, "unparseable": 2}
    assert result["unparseable_turns"] == 2
    assert "unparseable turns: 2" in result["alignment"]["warnings"]
    # Unparseable gold slots are errors and misses: P = 3/5, R = 3/6.
    assert result["slot_precision"] == pytest.approx(3 / 5) and result["slot_recall"] == pytest.approx(3 / 6)
    turns = scored.turns.set_index(["dialogue_id", "turn_index"])
    assert turns.loc[("d2", 0), "pred_unparseable"] and not turns.loc[("d2", 0), "joint_correct"]
    assert turns.loc[("d2", 0), "n_gold"] == 0
    assert turns.loc[("d1", 2), "n_unparseable"] == 2 and turns.loc[("d1", 2), "n_missed"] == 2
    assert "unparseable" in ERROR_OUTCOMES and Outcome.UNPARSEABLE.marker not in {
        o.marker for o in Outcome if o is not Outcome.UNPARSEABLE
    }


def test_llm_predictions_only_with_gold_file_and_other_key_names(tmp_path: Path) -> None:
    rows = [
        {"dial_id": "MUL0001.json", "turn_id": 0, "generation": "hotel-area=east"},
        {"dial_id": "MUL0001.json", "turn_id": 1, "generation": "Sorry, no idea."},
    ]
    pred = write_jsonl(tmp_path / "gen.jsonl", rows)
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"dialogue_id": "mul0001", "turn_index": t, "gold": {"hotel": {"area": "east"}}}  # ids pair loosely
            for t in range(3)
        ],
    )
    parsed = parse_file(pred, use_cache=False)
    assert parsed.fmt == "llm" and parsed.gold is None
    with pytest.raises(InputError, match="predictions only"):
        load_run(pred)
    scored = score_run(load_run(pred, gold))
    assert scored.turns["pred_unparseable"].tolist() == [False, True, False]
    assert scored.turns["pred_missing"].tolist() == [False, False, True]
    assert outcomes(metric_suite(scored)) == {"correct": 1, "unparseable": 1, "missed": 1}


def test_every_turn_unparseable_still_holds_a_prediction_side(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "x.jsonl", [{"dialogue_id": "d", "turn_index": 0, "gold": {"a": {"b": "c"}}, "text": "?"}]
    )
    result = metric_suite(score_run(load_run(path)))
    assert result["jga"] == 0.0 and outcomes(result) == {"unparseable": 1}


def test_llm_malformed_is_one_line_naming_the_record(tmp_path: Path) -> None:
    first = {"dialogue_id": "d1", "turn_index": 0, "gold": {}, "output": "NONE"}
    cases = {
        "number_text": ({**first, "turn_index": 1, "output": 3}, "generated text must be a string", "output", 1),
        "no_text": ({"dialogue_id": "d1", "turn_index": 1, "gold": {}}, "lacks a required key", "output", 1),
        "no_gold": ({"dialogue_id": "d1", "turn_index": 1, "output": ""}, "lacks a required key", "gold", 1),
        "bad_turn": ({**first, "turn_index": "one"}, "turn index must be an integer", "turn_index", "one"),
        "duplicate": (first, "duplicate turn", None, 0),
        "bad_gold": ({**first, "turn_index": 1, "gold": 5}, "state", "gold", 1),
    }
    for name, (second, contains, field, turn) in cases.items():
        error = one_line_error(write_jsonl(tmp_path / f"{name}.jsonl", [first, second]))
        assert error.fmt == "llm" and contains in error.problem, (name, str(error))
        assert (error.dialogue_id, error.turn, error.field) == ("d1", turn, field), name
    empty_id = write_jsonl(tmp_path / "empty_id.jsonl", [first, {**first, "dialogue_id": " "}])
    assert "dialogue id must be a non-empty" in one_line_error(empty_id).problem


def test_metrics_json_has_the_unparseable_count_and_exits_2_on_bad_input(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(LLM), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["unparseable_turns"] == 2 and result["outcomes"]["unparseable"] == 2
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"dialogue_id": "d", "turn_index": 0, "output": None}])
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


# --- detection and listing ----------------------------------------------------------------------------


def test_detection_neither_misses_nor_steals(tmp_path: Path) -> None:
    assert detect_format(*parse_records(SOMDST)).name == "somdst"
    assert detect_format(*parse_records(LLM)).name == "llm"
    assert detect_format(*parse_records(DELTAS)).name == "jsonl"  # deltas are a reading, not a format
    # Our JSONL with a user text, and RiSAWOZ records with a prediction, stay theirs.
    ours = write_jsonl(
        tmp_path / "o.jsonl", [{"dialogue_id": "d", "turn_index": 0, "gold": {}, "pred": {}, "text": "hi"}]
    )
    assert detect_format(*parse_records(ours)).name == "jsonl"
    risawoz = write_jsonl(
        tmp_path / "r.jsonl",
        [{"dialogue_id": "d", "turn_index": 0, "gold": "null", "prediction": "null", "output": ""}],
    )
    assert detect_format(*parse_records(risawoz)).name == "risawoz"
    # A TRADE-like file keyed by turn is not SOM-DST.
    trade = write_json(tmp_path / "t.json", {"MUL0001.json": {"0": {"turn_belief": [], "pred_bs_ptr": []}}})
    assert detect_format(*parse_records(trade)).name == "trade"
    for partner in (ROOT / "tests" / "malformed" / "partners").iterdir():
        assert detect_format(*parse_records(partner)).name not in ("somdst", "llm")


def test_formats_command_lists_each_with_an_example() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "formats"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    lines = done.stdout.splitlines()
    for name in ("somdst", "llm"):
        at = next(i for i, line in enumerate(lines) if line.split()[0] == name)
        assert FORMATS_BY_NAME[name].summary in lines[at] and lines[at + 1].strip().startswith("e.g. ")
        example = lines[at + 1].strip().removeprefix("e.g. ")
        json.loads(example)  # the example is a real record of the format


# --- turn-level (delta) predictions -----------------------------------------------------------------


def test_deltas_accumulate_numbers_by_hand() -> None:
    # Accumulated: d1 all four turns right (t3's area=none deletes area, as gold drops it);
    # d2 t0 right, t1 people 3 for 2, t2 carries people 3: wrong.  JGA 5/7.
    run = load_run(DELTAS, pred_deltas=True)
    assert run.meta.pred_deltas
    result = metric_suite(score_run(run))
    assert result["jga"] == pytest.approx(5 / 7)
    assert outcomes(result) == {"correct": 11, "wrong_value": 2}
    assert result["runs"][0]["pred_deltas"] is True
    # Read as cumulative, the same file is right only where a turn repeats the whole state: 2/7.
    assert joint_goal_accuracy(score_run(load_run(DELTAS))) == pytest.approx(2 / 7)


def test_accumulate_keeps_the_latest_update_and_deletes_on_none() -> None:
    turns = pd.DataFrame({"dialogue_id": ["a"] * 4 + ["b"], "turn_index": [0, 1, 2, 3, 0]})
    pred = pd.DataFrame(
        [
            ("a", 0, "hotel", "area", "=", "east"),
            ("a", 2, "hotel", "area", "=", "west"),
            ("a", 2, "hotel", "stars", "=", "4"),
            ("a", 3, "hotel", "stars", "=", "None"),
            ("b", 0, "taxi", "day", "=", "monday"),
        ],
        columns=["dialogue_id", "turn_index", "domain", "slot", "relation", "value"],
    )
    got = accumulate_deltas(turns, pred)
    cells = sorted(zip(got["dialogue_id"], got["turn_index"], got["slot"], got["value"], strict=True))
    assert cells == [
        ("a", 0, "area", "east"),
        ("a", 1, "area", "east"),
        ("a", 2, "area", "west"),
        ("a", 2, "stars", "4"),
        ("a", 3, "area", "west"),
        ("b", 0, "day", "monday"),
    ]


def deltas_of(run_turns: pd.DataFrame, cumulative: pd.DataFrame) -> pd.DataFrame:
    """Turn-level predictions from cumulative ones: what changed, a dropped slot as `none`."""
    rows = []
    for dialogue_id, group in cumulative.groupby("dialogue_id", sort=False):
        turns = sorted(run_turns.loc[run_turns["dialogue_id"] == dialogue_id, "turn_index"])
        by_turn = {
            t: dict(zip(zip(g["domain"], g["slot"], strict=True), g["value"], strict=True))
            for t, g in group.groupby("turn_index")
        }
        previous: dict = {}
        for t in turns:
            state = by_turn.get(t, {})
            rows += [(dialogue_id, t, d, s, "=", v) for (d, s), v in state.items() if previous.get((d, s)) != v]
            rows += [(dialogue_id, t, d, s, "=", "none") for (d, s) in previous if (d, s) not in state]
            previous = state
    return pd.DataFrame(rows, columns=["dialogue_id", "turn_index", "domain", "slot", "relation", "value"])


def write_delta_file(path: Path, turns: pd.DataFrame, gold: pd.DataFrame, pred: pd.DataFrame) -> Path:
    def triples(frame: pd.DataFrame) -> dict:
        return {
            k: [list(r) for r in g[["domain", "slot", "value"]].itertuples(index=False)]
            for k, g in frame.groupby(["dialogue_id", "turn_index"])
        }

    g, p = triples(gold), triples(pred)
    keys = zip(turns["dialogue_id"], turns["turn_index"], strict=True)
    return write_jsonl(
        path,
        [
            {"dialogue_id": d, "turn_index": int(t), "gold": g.get((d, t), []), "pred": p.get((d, t), [])}
            for d, t in keys
        ],
    )


@pytest.mark.slow
@pytest.mark.realdata
def test_real_cumulative_file_round_trips_through_deltas_and_warns_when_misread(tmp_path: Path) -> None:
    run = load_run(realdata_path("mlcsg", "all_prediction_TRADE.json"))
    first = run.turns["dialogue_id"].drop_duplicates().head(150)
    turns = run.turns[run.turns["dialogue_id"].isin(first)]
    gold = run.gold[run.gold["dialogue_id"].isin(first)]
    pred = run.pred[run.pred["dialogue_id"].isin(first)]
    path = write_delta_file(tmp_path / "d.jsonl", turns, gold, deltas_of(turns, pred))
    accumulated = load_run(path, pred_deltas=True)
    key = ["dialogue_id", "turn_index", "domain", "slot", "value"]
    assert sorted(accumulated.pred[key].itertuples(index=False)) == sorted(pred[key].itertuples(index=False))
    assert DELTA_NOTE not in accumulated.alignment.notes
    misread = load_run(path)
    assert "look like turn-level (delta) predictions" in misread.alignment.notes[DELTA_NOTE]
    assert any("--pred-deltas" in w for w in misread.alignment.warnings())
    share, n = delta_suspicion(misread.turns, misread.gold, misread.pred)
    assert share > 0.9 and n > 500


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        (("mlcsg", "all_prediction_TRADE.json"), None),
        (("crosswoz_ruledst", "test_preds.json"), ("crosswoz", "test.json.zip")),
        (("mwzeval_outputs", "augpt.json"), ("multiwoz21", "test.json.zip")),
        (("mwzeval_outputs", "soloist.json"), ("multiwoz21", "test.json.zip")),
        (("xrisawoz_llm", "fr.jsonl"), None),
    ],
)
def test_no_delta_warning_on_real_cumulative_files(pred: tuple[str, str], gold: tuple[str, str] | None) -> None:
    run = load_run(realdata_path(*pred), realdata_path(*gold) if gold else None)
    assert DELTA_NOTE not in run.alignment.notes
    share, n = delta_suspicion(run.turns, run.gold, run.pred)
    assert n > 5000 and share < 0.05  # measured: at most 3% (soloist)


def test_no_delta_warning_on_the_demo_runs() -> None:
    workspace = load_workspace(ROOT / "data" / "demo" / "workspace.toml")
    assert workspace.runs
    for name, run in workspace.runs.items():
        assert DELTA_NOTE not in run.alignment.notes, name


def test_synthetic_delta_file_warns_and_the_option_silences_it(tmp_path: Path) -> None:
    rows = []
    for d in range(6):
        state: dict = {}
        for t in range(5):
            change = {"hotel": {f"s{t}": f"v{t}"}}
            state = {"hotel": {**state.get("hotel", {}), **change["hotel"]}}
            rows.append({"dialogue_id": f"d{d}", "turn_index": t, "gold": state, "pred": change})
    path = write_jsonl(tmp_path / "deltas.jsonl", rows)
    assert DELTA_NOTE in load_run(path).alignment.notes
    run = load_run(path, pred_deltas=True)
    assert DELTA_NOTE not in run.alignment.notes and joint_goal_accuracy(score_run(run)) == 1.0


def test_manifest_and_cli_turn_deltas_on(tmp_path: Path) -> None:
    (tmp_path / "deltas.jsonl").write_bytes(DELTAS.read_bytes())
    manifest = tmp_path / "workspace.toml"
    manifest.write_text('[[runs]]\nname = "d"\npred = "deltas.jsonl"\npred_deltas = true\n', encoding="utf-8")
    workspace = load_workspace(manifest)
    assert workspace.failed == {}
    assert joint_goal_accuracy(score_run(workspace.runs["d"])) == pytest.approx(5 / 7)
    manifest.write_text('[[runs]]\nname = "d"\npred = "deltas.jsonl"\npred_deltas = "yes"\n', encoding="utf-8")
    with pytest.raises(InputError, match="pred_deltas"):
        load_workspace(manifest)
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(DELTAS), "--pred-deltas", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["jga"] == pytest.approx(5 / 7)


# --- pages ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llm_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("llm_workspace")
    (folder / "llm.jsonl").write_bytes(LLM.read_bytes())
    (folder / "somdst.json").write_bytes(SOMDST.read_bytes())
    manifest = folder / "workspace.toml"
    manifest.write_text(
        '[[runs]]\nname = "llm"\npred = "llm.jsonl"\n\n[[runs]]\nname = "somdst"\npred = "somdst.json"\n',
        encoding="utf-8",
    )
    return manifest


def test_slots_page_counts_unparseable_slots(llm_workspace: Path) -> None:
    at = opened_page(llm_workspace, "slots", run="llm")
    table = at.dataframe[0].value
    hotel = table.set_index("slot").loc["hotel-stars"]
    # hotel-stars: t1 wrong (3 for 4), t2 unparseable.
    assert hotel["unparseable"] == 1 and hotel["wrong value"] == 1 and hotel["recall"] == 0.0
    assert table.set_index("slot").loc["hotel-area", "recall"] == pytest.approx(2 / 3)  # t2 unparseable


def test_dialogue_viewer_marks_unparseable_slots(llm_workspace: Path) -> None:
    at = opened_page(llm_workspace, "dialogue", run="llm", dialogue="d1", turn=2)
    shown = pd.concat([frame.value for frame in at.dataframe if "status" in frame.value.columns])
    assert Outcome.UNPARSEABLE.shown in set(shown["status"])


def _tabs() -> list[tuple[str, str | None]]:
    from page_registry import PAGES as REGISTRY

    pages = [page.url_path for page in REGISTRY if page.url_path != "fewjoint"]  # FewJoint has no DST runs
    tabbed = {"slots": ("Per-slot scores", "Outcomes per slot", "Value confusions")}
    return [(page, view) for page in pages for view in tabbed.get(page, (None,))]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "view"), _tabs())
def test_every_page_copes_with_an_llm_run(llm_workspace: Path, page: str, view: str | None) -> None:
    state = {"run": "llm"} | ({f"view_{page}": view} if view else {})
    at = opened_page(llm_workspace, page, **state)
    if page == "slices":  # 5 turns: fewer than a slice's minimum support, which the page says instead
        assert any("fewer than a slice's minimum support" in info.value for info in at.info), at.info
        return
    assert at.get("plotly_chart") or at.dataframe, f"{page} shows nothing"


def test_outcome_mix_chart_has_the_unparseable_outcome(llm_workspace: Path) -> None:
    at = opened_page(llm_workspace, "slots", run="llm", view_slots="Outcomes per slot")
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    unparseable = next(t for t in traces if t["name"] == Outcome.UNPARSEABLE.shown)
    assert unparseable["marker"]["pattern"]["shape"] == Outcome.UNPARSEABLE.pattern
    counts = dict(zip(unparseable["y"], _values(unparseable["x"]), strict=True))
    assert {slot: n for slot, n in counts.items() if n} == {"hotel-area": 1, "hotel-stars": 1}


def _values(encoded: object) -> list:
    """Plotly JSON arrays come plain or as typed binary (`bdata`)."""
    if isinstance(encoded, dict) and "bdata" in encoded:
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=np.dtype(encoded["dtype"])).tolist()
    return list(encoded)  # type: ignore[call-overload]


def test_delta_reading_keeps_one_line_errors(tmp_path: Path) -> None:
    good = {
        "dialogue_id": "d1",
        "turn_index": 0,
        "gold": {"hotel": {"area": "east"}},
        "pred": {"hotel": {"area": "east"}},
    }
    cases = {
        "duplicate": ([good, good], "duplicate turn", ("d1", 0)),
        "bad_state": ([good, {**good, "turn_index": 1, "pred": 5}], "state", ("d1", 1)),
        "bad_turn": ([good, {**good, "turn_index": -1}], "out of range", ("d1", "-1")),
    }
    for name, (rows, contains, (dialogue_id, turn)) in cases.items():
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        with pytest.raises(InputError) as caught:
            load_run(path, pred_deltas=True)
        error = caught.value
        assert "\n" not in str(error) and contains in error.problem, (name, str(error))
        assert (error.dialogue_id, str(error.turn)) == (dialogue_id, str(turn)), name
    gold_only = write_jsonl(tmp_path / "gold.jsonl", [{k: v for k, v in good.items() if k != "pred"}])
    with pytest.raises(InputError, match="gold states only"):
        load_run(gold_only, pred_deltas=True)
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(tmp_path / "bad_state.jsonl"), "--pred-deltas"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "bad_state.jsonl" in done.stderr


def test_delta_check_without_the_lookup_table_gives_the_same_share(tmp_path: Path, monkeypatch) -> None:
    from analysis.formats import more

    rows = []
    for d in range(4):
        for t in range(4):
            gold = {"hotel": {f"s{k}": f"v{k}" for k in range(t + 1)}}
            pred = {"hotel": {f"s{t}": f"v{t}"}} if d % 2 else gold  # two delta dialogues, two cumulative
            rows.append({"dialogue_id": f"d{d}", "turn_index": t, "gold": gold, "pred": pred})
    run = load_run(write_jsonl(tmp_path / "mixed.jsonl", rows))
    dense = delta_suspicion(run.turns, run.gold, run.pred)
    # Carried from the previous turn and held there: a cumulative dialogue holds all 1 + 2 + 3 and keeps them;
    # a delta dialogue held only the previous turn's slot (1 a turn, 3 in all) and drops it. 6 of 18.
    assert dense[1] == 18 and dense[0] == pytest.approx(6 / 18)
    monkeypatch.setattr(more, "DENSE_KEYS", 0)
    assert delta_suspicion(run.turns, run.gold, run.pred) == dense


def test_dialogue_view_says_a_turn_did_not_parse() -> None:
    from analysis import views

    scored = score_run(load_run(LLM))
    turns, _ = views.dialogue_view(scored, "d2")
    status = dict(zip(turns["turn_index"], turns["status"], strict=True))
    assert status[0] == f"{Outcome.UNPARSEABLE.shown} prediction"  # empty gold, 0 slot errors, still not right
    assert status[1].startswith("✗ 1 error")
    turns, _ = views.dialogue_view(scored, "d1")
    assert turns["status"].tolist()[2] == f"{Outcome.UNPARSEABLE.shown} prediction"
