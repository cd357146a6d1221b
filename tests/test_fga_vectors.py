"""Per-slot correctness vectors (the FGA repository's trippy_result.json) and the FGA repository's own numbers.

The reference numbers are what SuvodipDey/FGA's compute_accuracy_trippy.py (commit 5e668de) computes, run
unmodified in a folder holding `trippy/trippy_result.json` (the file scored), `trippy/multiwoz21.json` (the
repository's) and a one-turn `som-dst/som-dst_result.json` (the repository's is not public, and without
it the script stops before printing; it feeds only the average goal accuracy, not checked here):

    python -c "import runpy; g = runpy.run_path('compute_accuracy_trippy.py');
               print(g['cor'] / g['total'], g['slot_acc'] / g['total'], [f / g['total'] for f in g['fga_cor']])"

(its own printout rounds them to two decimals of a percent: Joint Acc 53.28, Slot Acc 97.3, FGA 63.24,
68.67, 71.97, 74.13 on the whole file).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from analysis import metrics as M
from analysis import registry as R
from analysis import views
from analysis.demo.testing import scored_from_states
from analysis.errors import InputError
from analysis.formats import parse_file
from analysis.formats.vectors import FORMAT, TRIPPY_SLOTS, VALUE, WRONG
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.suite import metric_suite

EXCERPT = Path(__file__).parent / "data" / "fga" / "trippy_result_excerpt.json"
FULL_ENV = "FGA_TRIPPY_RESULT"  # path of the whole trippy/trippy_result.json (3.5 MB, not shipped)
LAMBDAS = M.FGA_LAMBDAS
SETS = [f"fga_sets_{lam}" for lam in LAMBDAS]
# The metrics the FGA script prints that need no values; everything else needing values is n/a.
OWN = ("jga", "slot_accuracy", "slot_accuracy_trade", "final_turn_jga", *SETS)

# compute_accuracy_trippy.py on the excerpt (50 turns scored, PMUL1455.json's 4 left out): 8 exact matches.
EXCERPT_NUMBERS = {
    "jga": 0.16,
    "slot_accuracy": 0.9506666666666662,
    **dict(zip(SETS, [0.32424228732458155, 0.39828512529553756, 0.4405121681403294, 0.4677453903657668], strict=True)),
}
# ... and on the whole file (7,368 turns scored): 3,926 exact matches.
FULL_NUMBERS = {
    "jga": 0.5328447339847991,
    "slot_accuracy": 0.9730365544697354,
    **dict(zip(SETS, [0.6324240386835649, 0.6867117938271808, 0.7197301672665781, 0.7412860894711389], strict=True)),
}


def _check(scored, numbers: dict[str, float], n_turns: int) -> None:
    values = R.values(scored)
    assert len(scored.turns) == n_turns
    for name, want in numbers.items():
        assert values[name] == pytest.approx(want, rel=0, abs=1e-12), name
    assert values["slot_accuracy_trade"] == pytest.approx(numbers["slot_accuracy"], rel=0, abs=1e-12)


def test_the_excerpt_gives_the_fga_scripts_numbers() -> None:
    run = load_run(EXCERPT)
    assert run.meta.formats == (FORMAT,) and run.meta.convention == "fga-trippy"
    scored = score_run(run)
    _check(scored, EXCERPT_NUMBERS, 50)
    assert int(scored.turns["joint_correct"].sum()) == 8
    assert "PMUL1455.json" not in set(scored.turns["dialogue_id"])
    warnings = scored.alignment[run.meta.run_id]["warnings"]
    assert warnings == [
        "1 dialogue (4 turns) not scored under fga-trippy: PMUL1455.json (compute_accuracy_trippy.py skips it: "
        "not part of the official MultiWOZ test data)"
    ]


@pytest.mark.skipif(
    not os.environ.get(FULL_ENV) or not Path(os.environ[FULL_ENV]).is_file(),
    reason=f"set {FULL_ENV} to the path of SuvodipDey/FGA's trippy/trippy_result.json (not shipped: 3.5 MB)",
)
def test_the_whole_file_gives_the_fga_scripts_numbers() -> None:
    scored = score_run(load_run(os.environ[FULL_ENV]))
    _check(scored, FULL_NUMBERS, 7368)
    assert int(scored.turns["joint_correct"].sum()) == 3926


def test_metrics_that_need_values_are_na_with_the_reason() -> None:
    scored = score_run(load_run(EXCERPT))
    reasons = R.not_applicable(scored)
    values = R.values(scored)
    needs_values = {n for n in R.NAMES if n not in OWN and not n.startswith("dstc10_")}
    assert set(reasons) == needs_values  # DSTC10's own numbers are left out here, not n/a (R.left_out)
    assert {n for n in R.NAMES if n.startswith("dstc10_")} == set(R.left_out(scored))
    assert {reasons[n] for n in needs_values} == {M.values_missing(scored)}
    assert "per-slot correctness file" in reasons["aga"]
    assert all(math.isnan(values[n]) for n in reasons)
    assert not any(math.isnan(values[n]) for n in OWN)
    # Also where a view reads the functions directly: per-slot P/R/F1 and the Turn depth view's columns.
    per_slot = M.per_slot_prf(scored)
    assert per_slot[["precision", "recall", "f1"]].isna().all().all() and len(per_slot) == 30
    assert np.isnan(M.flexible_goal_accuracy(scored, by="turn_index")["fga_0.5"].to_numpy()).all()
    suite = metric_suite(scored)
    assert suite["fga_sets"]["0.5"] == pytest.approx(EXCERPT_NUMBERS["fga_sets_0.5"]) and suite["fga"]["0.5"] is None


def test_per_slot_accuracy_and_jga_by_depth_come_from_the_outcomes() -> None:
    records = json.loads(EXCERPT.read_text(encoding="utf-8"))
    del records["PMUL1455.json"]
    vectors = np.array([v for turns in records.values() for v in turns.values()])
    scored = score_run(load_run(EXCERPT))
    per_slot = M.slot_accuracy(scored, by=["domain", "slot"]).set_index(["domain", "slot"])["slot_accuracy"]
    want = dict(zip(TRIPPY_SLOTS, vectors.mean(axis=0), strict=True))
    assert per_slot.to_dict() == pytest.approx(want)
    depth = M.jga_by_turn_depth(scored).set_index("turn_index")["jga"]
    numbers = np.array([int(t) for turns in records.values() for t in turns])
    joint = vectors.all(axis=1)
    assert depth.to_dict() == pytest.approx({t: joint[numbers == t].mean() for t in sorted(set(numbers))})
    # The placeholders stand for right and wrong: a wrong slot is a wrong value, nothing is missed.
    slots = scored.slots
    assert set(slots["gold_display"]) == {VALUE} and set(slots["pred_display"]) == {VALUE, WRONG}
    assert int((slots["outcome"] == "wrong_value").sum()) == int((vectors == 0).sum())


# --- the FGA repository's type-1 rule, case by case -------------------------------------------------------


def _per_turn(tmp_path: Path, vectors: list[list[int]], lam: float = 1.0) -> list[float]:
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"D.json": {str(t): v for t, v in enumerate(vectors)}}), encoding="utf-8")
    frame = M.flexible_goal_accuracy_sets(score_run(load_run(path)), by="turn_index")
    return [round(x, 12) for x in frame[f"fga_sets_{lam}"]]


def _partial(d: int, lam: float = 1.0) -> float:
    return round(1 - math.exp(-lam * d), 12)


R1, A, B, AB = [1, 1, 1], [0, 1, 1], [1, 0, 1], [0, 0, 1]


@pytest.mark.parametrize(
    ("vectors", "want"),
    [
        ([A], [0.0]),  # the first turn wrong: type 1
        ([A, A, A], [0.0, _partial(1), _partial(2)]),  # the same slot still wrong: type 2, d from the error
        ([R1, A, A], [1.0, 0.0, _partial(1)]),  # wrong after a right turn: type 1
        ([A, B], [0.0, 0.0]),  # another slot wrong: type 1
        ([A, B, A], [0.0, 0.0, 0.0]),  # compared with the set at the last type-1 error (B), not the first
        ([AB, A], [0.0, 0.0]),  # one of two errors fixed: the set differs, type 1
        ([A, AB], [0.0, 0.0]),  # an error added: type 1
        ([A, A, R1, A], [0.0, _partial(1), 1.0, 0.0]),  # the old error again after a right turn: type 1
        ([A, A, B, B], [0.0, _partial(1), 0.0, _partial(1)]),  # d counted from the new type-1 error
    ],
)
def test_the_fga_repositorys_type1_rule(tmp_path: Path, vectors: list[list[int]], want: list[float]) -> None:
    assert _per_turn(tmp_path, vectors) == want


def test_a_type2_score_that_rounds_to_one_counts_as_a_right_turn(tmp_path: Path) -> None:
    """The script asks whether the previous turn's score at λ = 1 equals 1; 1 - e^-38 is 1.0 in floats, so
    the 40th turn of one unchanged error is a type-1 error again (and the count starts over)."""
    assert 1 - math.exp(-37) < 1.0 == 1 - math.exp(-38)
    got = _per_turn(tmp_path, [A] * 41)
    assert got == [0.0, *(_partial(d) for d in range(1, 39)), 0.0, _partial(1)]
    assert got[38] == 1.0
    smaller = _per_turn(tmp_path, [A] * 41, lam=0.25)  # the break follows λ = 1 whatever the penalty
    assert smaller[39] == 0.0 and smaller[40] == _partial(1, 0.25)


def test_wrong_slot_sets_and_new_triples_disagree_where_they_should() -> None:
    """A gold value changes while the prediction keeps the old error: a new gold triple is missed (the
    Granular_Change_Accuracy repository's FGA: type 1), but the same slot is still the one wrong (the FGA
    repository's vector rule: type 2)."""
    gold = [{"hotel": {"area": "east"}}, {"hotel": {"area": "north"}}]
    pred = [{"hotel": {"area": "west"}}, {"hotel": {"area": "west"}}]
    scored = scored_from_states(gold, pred)
    assert M.flexible_goal_accuracy(scored)["fga_1.0"] == 0.0
    assert M.flexible_goal_accuracy_sets(scored)["fga_sets_1.0"] == pytest.approx((1 - math.exp(-1)) / 2)
    # Grouped by slot, each slot is its own vector.
    by_slot = M.flexible_goal_accuracy_sets(scored, by="slot")
    assert by_slot["fga_sets_1.0"].tolist() == pytest.approx([(1 - math.exp(-1)) / 2])


# --- reading -------------------------------------------------------------------------------------------


def test_thirty_entries_are_trippys_slots_and_other_lengths_are_positions(tmp_path: Path) -> None:
    parsed = parse_file(EXCERPT)
    assert parsed.fmt == FORMAT and parsed.gold is not None and parsed.pred is not None
    first = parsed.gold[parsed.gold["dialogue_id"] == "SNG02172.json"].head(30)
    assert list(zip(first["domain"], first["slot"], strict=True)) == list(TRIPPY_SLOTS)
    path = tmp_path / "four.json"
    path.write_text('{"a": {"0": [1, 0, true, false]}}', encoding="utf-8")
    scored = score_run(load_run(path))
    assert R.values(scored)["jga"] == 0.0
    # Four unnamed positions are no MultiWOZ slots: the FGA script's /30 slot accuracy does not apply.
    assert "slot_accuracy" in R.not_applicable(scored)


def test_a_vector_file_is_never_paired_with_another_gold(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"SNG0081.json": {"0": [1, 1, 1]}}', encoding="utf-8")
    with pytest.raises(InputError, match="carries its own gold") as err:
        load_run(EXCERPT, other)
    assert err.value.fmt == FORMAT


@pytest.mark.parametrize(
    ("content", "problem", "dialogue", "turn", "field"),
    [
        (
            '{"d": {"0": [1, 0], "1": [1, 2]}}',
            "each entry must be 1 (slot right) or 0 (slot wrong), got 2",
            "d",
            "1",
            "[1]",
        ),
        ('{"d": {"0": [1, 0], "1": [1, "1"]}}', "got a JSON string", "d", "1", "[1]"),
        ('{"d": {"0": [1, 0]}, "e": {"0": [1]}}', "1 entries here, 2 in the file's first turn", "e", "0", None),
        ('{"d": {"0": [1, 0], "2": [1, 1], "1": [1, 1]}}', "turn 1 after turn 2", "d", "1", None),
        ('{"d": {"0": [1, 0], "x": [1, 1]}}', "turn index must be an integer", "d", "x", "turn"),
        ('{"d": {"0": [1, 0], "1": {"a": 1}}}', "a turn must be an array of 0/1", "d", "1", None),
        ('{"d": {"0": [1, 0]}, "e": [[1, 0]]}', "a dialogue (an object of turns", "e", None, None),
    ],
)
def test_bad_vectors_give_one_line_naming_the_record(
    tmp_path: Path, content: str, problem: str, dialogue: str, turn: str | None, field: str | None
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        parse_file(path, use_cache=False)
    e = err.value
    assert e.fmt == FORMAT and problem in e.problem and "\n" not in str(e)
    assert (e.dialogue_id, e.turn, e.field) == (dialogue, turn, field)


# --- pages ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.parametrize("page", ["pages/dialogue.py", "pages/slots.py"])
def test_pages_showing_values_say_a_vector_file_has_none(tmp_path: Path, page: str) -> None:
    from streamlit.testing.v1 import AppTest

    (tmp_path / "trippy_result.json").write_bytes(EXCERPT.read_bytes())
    (tmp_path / "workspace.toml").write_text(
        '[workspace]\nname = "vectors"\n\n[[runs]]\nname = "trippy"\npred = "trippy_result.json"\n', encoding="utf-8"
    )
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.session_state["workspace_path"] = str(tmp_path / "workspace.toml")
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [i.value for i in at.info if "per-slot correctness file" in i.value]
    assert len(notes) == 1 and VALUE in notes[0] and WRONG in notes[0]
    assert views.values_note(score_run(load_run(EXCERPT)))  # the same sentence the page shows
