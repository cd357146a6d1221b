"""Slice discovery (issue 17 requirement 5, `analysis.slices`): sliceline finds a slice planted in a constructed
run, the turn features on hand examples, slices on a real MultiWOZ prediction file recomputed from its turns,
bad input, the `slices` CLI, the report's tables and the Slices page with its click-through."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis import slices as S
from analysis import views
from analysis.cli.main import main
from analysis.demo.testing import run_from_states, scored_from_states
from analysis.errors import InputError
from analysis.loading import load_run
from analysis.scoring import Scored, score_run
from tests.conftest import realdata_path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
DEMO_RUN = "simulated-A-mwz-en-predicted"


def with_users(run, users: dict[tuple[str, int], str]):
    """`run` with the user utterances given per (dialogue, turn); the others empty."""
    turns = run.turns.copy()
    turns["user"] = [users.get((d, t), "") for d, t in zip(turns["dialogue_id"], turns["turn_index"], strict=True)]
    return replace(run, turns=turns.astype({"user": "str"}))


def features_of(scored: Scored, train: Scored | None = None) -> pd.DataFrame:
    return S.turn_features(scored, train).set_index(["dialogue_id", "turn_index"])


# --- a planted slice -------------------------------------------------------------------------------


def planted(*, perfect: bool = False, run_id: str = "run") -> Scored:
    """60 dialogues of 6 turns: the 12 taxi dialogues are wrong at every turn; of the 48 hotel dialogues every
    fourth is wrong at turn 2 only (noise that makes 'previous turn = wrong' a mixed slice). `perfect`: the
    same gold, predicted right."""
    gold, pred = {}, {}
    for i in range(60):
        taxi = i % 5 == 0
        domain, slot, value = ("taxi", "leaveat", "10:00") if taxi else ("hotel", "area", "east")
        states = [{domain: {slot: value, "n": str(t // 2)}} for t in range(6)]
        gold[f"d{i:02d}"] = states
        wrong = {domain: {slot: "zzz", "n": "0"}}
        pred[f"d{i:02d}"] = [wrong if taxi or (i % 4 == 1 and t == 2) else state for t, state in enumerate(states)]
    return scored_from_states(gold, gold if perfect else pred, run_id=run_id)


def test_sliceline_finds_the_planted_slice_first_with_its_support_and_jga() -> None:
    scored = planted()
    report = S.find_slices(scored, min_support=20, resamples=200)
    top = report.slices.iloc[0]
    assert top["predicates"] == (("domains", "taxi"),)
    assert top["slice"] == "domains = taxi"
    assert (top["turns"], top["dialogues"], top["wrong_turns"]) == (72, 12, 72)
    assert top["jga"] == 0.0 and top["jga_low"] == 0.0 and top["jga_high"] == 0.0
    overall = scored.turns["joint_correct"].mean()
    assert report.jga == pytest.approx(overall) and top["gap"] == pytest.approx(overall)
    assert report.slices["gap"].is_monotonic_decreasing  # ranked by JGA gap
    assert list(report.slices["rank"]) == list(range(1, len(report.slices) + 1))
    # deterministic given the seed, another seed moves only the intervals
    again = S.find_slices(scored, min_support=20, resamples=200)
    pd.testing.assert_frame_equal(report.slices, again.slices)


def test_the_slice_turns_are_the_turns_the_slice_describes() -> None:
    scored = planted()
    turns = S.slice_turns(scored, predicates=[("domains", "taxi"), ("previous turn", "wrong")])
    assert list(turns.columns) == views.TURN_LIST_COLUMNS
    assert len(turns) == 60 and set(turns["turn_index"]) == {1, 2, 3, 4, 5} and (turns["status"] == "wrong").all()
    with pytest.raises(ValueError, match="feature has to be one of"):
        S.slice_turns(scored, predicates=[("colour", "red")])


def test_runs_searched_together_make_the_run_a_feature() -> None:
    bad, good = planted(), planted(perfect=True, run_id="good")
    report = S.find_slices([bad, good], min_support=20, resamples=50)
    assert S.RUN in report.features and report.n_turns == 720
    top = report.slices.iloc[0]
    assert set(top["predicates"]) == {("domains", "taxi"), (S.RUN, "run")} and top["turns"] == 72
    assert top["jga"] == 0.0
    # `system` splits the turns exactly as `run` does: not searched again, and said so
    assert report.same == ("system = run",) and "system" not in report.features
    assert not report.slices["slice"].str.contains("system = ").any()
    turns = S.slice_turns([bad, good], predicates=top["predicates"])
    assert list(turns.columns) == ["run_id", *views.TURN_LIST_COLUMNS] and set(turns["run_id"]) == {"run"}
    assert S.searchable([bad, good])[: len(S.FEATURES) + 1] == [*S.FEATURES, S.RUN]
    third = planted(run_id="third")
    with (
        pytest.raises(InputError, match=r"3 runs together hold 1,080 turns, more than the 1,000 a search"),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(S, "POOLED_MAX_TURNS", 1000)
        S.find_slices([bad, good, third])
    other = scored_from_states([{}], [{}], run_id="other", convention="trade")
    with pytest.raises(InputError, match="these runs cannot be searched together: runs scored under different"):
        S.find_slices([bad, other])


# --- features on hand examples -----------------------------------------------------------------------


def test_previous_turn_is_the_previous_turn_of_the_dialogue_first_its_own_level() -> None:
    right, wrong = {"hotel": {"area": "east"}}, {"hotel": {"area": "west"}}
    scored = scored_from_states(
        {"a": [right, right, right], "b": [right, right]}, {"a": [right, wrong, right], "b": [wrong, right]}
    )
    shown = features_of(scored)["previous turn"]
    assert shown.tolist() == ["first", "correct", "wrong", "first", "wrong"]
    # the turns' order in the table does not matter: the previous turn is found by turn index
    shuffled = replace(scored, turns=scored.turns.iloc[::-1].reset_index(drop=True))
    assert features_of(shuffled)["previous turn"].sort_index().tolist() == shown.sort_index().tolist()


def test_new_value_in_user_turn_looks_for_the_values_new_at_the_turn() -> None:
    states = [
        {"hotel": {"area": "east"}},
        {"hotel": {"area": "east", "price": "cheap"}},
        {"hotel": {"area": "east", "price": "cheap", "name": "acorn", "stars": "4"}},
        {"hotel": {"area": "east", "price": "cheap", "name": "acorn", "stars": "4"}},
        {"hotel": {"area": "east", "price": "cheap", "name": "acorn", "stars": "4", "day": "monday"}},
        {"hotel": {"area": "east", "price": "cheap", "name": "acorn", "stars": "4", "day": "dontcare"}},
    ]
    users = {
        ("d1", 0): "Somewhere in the EAST please",  # all (case-insensitive)
        ("d1", 1): "anything in the east",  # none: east is not new, cheap is not said
        ("d1", 2): "the Acorn guest house",  # some: acorn said, 4 not
        ("d1", 3): "thanks, east and cheap",  # no new value
        # turn 4 has no user text
        ("d1", 5): "I don't mind the day",  # a changed value, but dontcare is not looked for
    }
    scored = score_run(with_users(run_from_states(states, states), users), "exact")
    shown = features_of(scored)["new value in user turn"].tolist()
    assert shown == ["all", "none", "some", "no new value", "no utterance", "no new value"]


def test_domains_slots_dontcare_and_depth_levels() -> None:
    states = [
        {},
        {"train": {"day": "monday"}, "hotel": {"area": "dontcare"}},
        *[{"hotel": {"area": "east", **{f"s{k}": "x" for k in range(t)}}} for t in range(2, 12)],
    ]
    features = features_of(scored_from_states(states, states))
    assert features["domains"].tolist()[:3] == ["none", "hotel+train", "hotel"]
    assert features["dontcare in gold"].tolist()[:3] == ["no", "yes", "no"]
    assert features["gold slots"].tolist()[:3] == ["0", "1-2", "3-5"]
    assert features["gold slots"].iloc[-1] == "10+"  # 12 slots
    assert features["turn depth"].tolist() == ["0", "1-2", "1-2", "3-5", "3-5", "3-5", *["6-9"] * 4, "10+", "10+"]


def test_unseen_in_training_compares_domain_slot_and_value_with_the_training_gold() -> None:
    training = [{"hotel": {"area": "east", "price": "cheap"}}, {"train": {"day": "monday"}}]
    train = scored_from_states(training, training, run_id="train")
    evaluated = [
        {},
        {"hotel": {"area": "east"}},
        {"hotel": {"area": "east", "price": "expensive"}},
        {"hotel": {"day": "monday"}},
    ]
    features = features_of(scored_from_states(evaluated, evaluated), train)
    # 'monday' is a seen value, but not of hotel-day: unseen
    assert features[S.UNSEEN].tolist() == ["no gold value", "no", "yes", "yes"]
    assert S.UNSEEN not in features_of(scored_from_states(evaluated, evaluated)).columns
    assert S.training_values(train).shape == (3, 3)


def test_dialogue_attributes_and_run_metadata_become_features() -> None:
    scored = planted()
    turns = scored.turns.assign(type=["SNG" if d < "d30" else "MUL" for d in scored.turns["dialogue_id"]])
    features = S.turn_features(replace(scored, turns=turns))
    assert features["type"].value_counts().to_dict() == {"SNG": 180, "MUL": 180}
    assert set(features["system"]) == {"run"} and "listing" not in features.columns
    report = S.find_slices(replace(scored, turns=turns), min_support=20, resamples=50)
    assert "type" in report.features and "system" in report.constant  # one level in one run: left out, named


# --- a real MultiWOZ prediction file -------------------------------------------------------------------


@pytest.fixture(scope="module")
def dots() -> Scored:
    pred = realdata_path("mwzeval_outputs", "dots.json")
    gold = realdata_path("multiwoz21", "test.json.zip")
    return score_run(load_run(pred, gold))


@pytest.mark.realdata
def test_slices_of_a_real_multiwoz_run_recompute_from_its_turns(dots: Scored) -> None:
    report = S.find_slices(dots)
    assert report.n_turns == 7372 and report.n_dialogues == 1000
    assert len(report.slices) == S.TOP
    features = S.turn_features(dots)
    correct = dots.turns["joint_correct"].to_numpy(dtype=bool)
    assert report.jga == pytest.approx(correct.mean(), abs=1e-12)
    for row in report.slices.to_dict("records"):
        mask = pd.Series(True, index=features.index)
        for feature, level in row["predicates"]:
            mask &= features[feature] == level
        assert round(row["jga"], 4) == round(float(correct[mask.to_numpy()].mean()), 4), row["slice"]
        assert row["turns"] == int(mask.sum()) >= report.settings["min_support_turns"]
        assert row["dialogues"] == dots.turns.loc[mask.to_numpy(), "dialogue_id"].nunique()
        assert row["jga_low"] <= row["jga"] <= row["jga_high"]
        assert row["gap"] == pytest.approx(report.jga - row["jga"])
        assert len(S.slice_turns(dots, predicates=row["predicates"])) == row["turns"]


@pytest.mark.realdata
def test_turn_features_equal_a_plain_per_turn_reading_of_a_real_run(dots: Scored) -> None:
    """The vectorised features against the definitions read turn by turn (sets of gold values, strings)."""
    features = S.turn_features(dots).set_index("tid")
    gold = dots.slots[dots.slots["gold_value"].notna()]
    state: dict[int, dict[tuple[str, str, str], str]] = {}
    for row in gold[["tid", "domain", "slot", "gold_value", "gold_display"]].itertuples(index=False):
        state.setdefault(row.tid, {})[(row.domain, row.slot, row.gold_value)] = (
            row.gold_display if isinstance(row.gold_display, str) else row.gold_value
        )
    dontcare = dots.convention.dontcare_values
    correct_of = dict(zip(dots.turns["tid"], dots.turns["joint_correct"], strict=True))
    turns = dots.turns.sort_values(["dialogue_id", "turn_index"])
    previous: dict[str, int] = {}
    for turn in turns.itertuples(index=False):
        before = previous.get(turn.dialogue_id)
        here = state.get(turn.tid, {})
        expected_previous = "first" if before is None else ("correct" if bool(correct_of[before]) else "wrong")
        new = {
            k: v
            for k, v in here.items()
            if k not in state.get(before, {}) and k[2] not in dontcare and v.strip().lower() not in dontcare
        }
        user = turn.user.lower() if isinstance(turn.user, str) else ""
        found = [v.strip().lower() in user for v in new.values()]
        said = (
            "no utterance"
            if not user.strip()
            else ("no new value" if not found else "all" if all(found) else "some" if any(found) else "none")
        )
        domains = "+".join(sorted({d for d, _, _ in here})) or "none"
        got = features.loc[turn.tid]
        assert (got["previous turn"], got["new value in user turn"], got["domains"]) == (
            expected_previous,
            said,
            domains,
        )
        previous[turn.dialogue_id] = turn.tid


@pytest.mark.realdata
def test_a_training_file_adds_unseen_values_on_real_data(dots: Scored) -> None:
    # MultiWOZ 2.1's validation split stands in for a training file here
    val = realdata_path("multiwoz21", "val.json.zip")
    train = score_run(load_run(val, val), dots.convention.name)
    levels = S.turn_features(dots, train)[S.UNSEEN].value_counts()
    assert set(levels.index) == {"yes", "no", "no gold value"}
    assert 0 < levels["yes"] < levels["no"]


# --- bad input ----------------------------------------------------------------------------------------


def test_an_empty_run_is_bad_input_with_one_clear_message() -> None:
    scored = planted()
    empty = replace(scored, turns=scored.turns.iloc[:0], slots=scored.slots.iloc[:0])
    with pytest.raises(InputError, match="the run has no turns: there is nothing to find slices in"):
        S.find_slices(empty)


def test_bad_settings_are_bad_input() -> None:
    with pytest.raises(InputError, match="slice search settings"):
        S.find_slices(planted(), alpha=0)
    with pytest.raises(InputError, match=r"cannot leave out features \['colour'\]: the features are domains, "):
        S.find_slices(planted(), exclude=["colour"])


def test_a_left_out_feature_is_not_searched_and_the_next_slices_come_up() -> None:
    scored = planted()
    assert S.searchable(scored) == [*S.FEATURES, *S.RUN_FIELDS]
    report = S.find_slices(scored, min_support=20, resamples=50, exclude=("domains",))
    assert "domains" not in report.features and report.settings["excluded"] == ["domains"]
    assert all("domains" not in p for row in report.slices["predicates"] for p, _ in row)
    assert len(report.slices) > 0


def test_a_run_without_errors_finds_no_slice_and_says_why() -> None:
    states = [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "price": "cheap"}}] * 20
    report = S.find_slices(scored_from_states(states, states))
    assert report.slices.empty and list(report.slices.columns) == [*S.COLUMNS, "predicates"]
    assert report.note.startswith("Every one of the 40 turns is jointly correct")


def test_a_run_whose_features_have_one_level_finds_no_slice_and_says_why() -> None:
    gold = {f"d{i}": [{"hotel": {"area": "east"}}] for i in range(40)}
    pred = {f"d{i}": [{"hotel": {"area": "east" if i % 2 else "west"}}] for i in range(40)}
    report = S.find_slices(scored_from_states(gold, pred))
    assert report.slices.empty and report.features == ()
    assert "No feature has two levels" in report.note
    assert "domains" in report.constant and "previous turn" in report.constant


# --- CLI ----------------------------------------------------------------------------------------------


def jsonl(path: Path, wrong: bool) -> Path:
    lines = []
    for d in range(30):
        for t in range(4):
            gold = {"hotel": {"area": "east", "stars": str(t)}} if d % 3 else {"taxi": {"leaveat": f"1{t}:00"}}
            pred = {"taxi": {"leaveat": "9"}} if wrong and d % 3 == 0 else gold
            lines.append(json.dumps({"dialogue_id": f"d{d}", "turn_index": t, "gold": gold, "pred": pred}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_prints_slices_as_text_and_json(tmp_path: Path, capsys) -> None:
    pred = jsonl(tmp_path / "run.jsonl", wrong=True)
    assert main(["slices", "--pred", str(pred), "--min-support", "20", "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "run run: JGA 0.6667 over 120 turns, 30 dialogues" in out and "domains = taxi" in out
    assert main(["slices", "--pred", str(pred), "--min-support", "20", "--resamples", "100", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    top = result["slices"][0]
    assert top["slice"] == "domains = taxi" and top["turns"] == 40 and top["dialogues"] == 10 and top["jga"] == 0
    assert top["predicates"] == [{"feature": "domains", "level": "taxi"}]
    assert main(["slices", "--pred", str(pred), "--min-support", "20", "--exclude", "domains"]) == 0
    out = capsys.readouterr().out
    assert "left out as asked (--exclude): domains" in out and "domains =" not in out


def test_cli_exit_codes(tmp_path: Path, capsys) -> None:
    perfect = jsonl(tmp_path / "perfect.jsonl", wrong=False)
    assert main(["slices", "--pred", str(perfect)]) == 0  # no error: no slice, and why
    assert "jointly correct" in capsys.readouterr().out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["slices", "--pred", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "empty.jsonl" in err[0]
    pred = jsonl(tmp_path / "run.jsonl", wrong=True)
    assert main(["slices", "--pred", str(pred), "--top", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run.jsonl [format: jsonl]: slice search settings" in err[0]
    assert main(["slices", "--pred", str(pred), "--train", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in capsys.readouterr().err


# --- report -------------------------------------------------------------------------------------------


def test_report_tables_export_the_ranked_slices_with_intervals() -> None:
    from analysis.export import table_bytes
    from analysis.export.report import slice_tables

    scored = planted()
    items = slice_tables({"run": scored, "perfect": scored_from_states([{}] * 30, [{}] * 30)})
    assert [item.name for item in items] == ["slices-run"]  # a run without a slice gets no table
    frame = items[0].frame
    columns = ["run", "rank", "slice", "JGA", "JGA low", "JGA high", "gap", "turns", "dialogues"]
    assert list(frame.columns) in (columns, [*columns, "same turns as"])
    assert frame.iloc[0]["slice"] == "domains = taxi"
    latex = table_bytes(frame, "latex", caption=items[0].caption, **items[0].options).decode()
    assert "domains = taxi" in latex and "0.000 {\\small {[}0.000, 0.000{]}}" in latex


def test_the_slices_chart_draws_each_slice_with_its_interval_and_the_run_line() -> None:
    report = S.find_slices(planted(), min_support=20, resamples=100)
    fig = S.slices_bar(report.slices, jga=report.jga, run_id="run")
    bar = fig.data[0]
    assert list(bar.x) == pytest.approx(report.slices["jga"].tolist())
    low = (report.slices["jga"] - report.slices["jga_low"]).tolist()
    high = (report.slices["jga_high"] - report.slices["jga"]).tolist()
    assert list(bar.error_x.arrayminus) == pytest.approx(low) and list(bar.error_x.array) == pytest.approx(high)
    assert bar.y[0] == "1. domains = taxi"
    assert fig.layout.shapes[0].x0 == pytest.approx(report.jga)  # the run's JGA
    assert S.slices_bar(report.slices.iloc[:0], jga=0.5).layout.annotations[0].text == "no slice"


# --- the page ------------------------------------------------------------------------------------------


@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_slices_page_shows_the_table_and_a_slice_opens_its_turns() -> None:
    from analysis.workspace import load_entry, read_manifest

    entry = next(e for e in read_manifest(DEMO).entries if e.name == DEMO_RUN)
    scored = score_run(load_entry(entry))
    expected = S.find_slices(scored)

    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["runs"] = [DEMO_RUN]
    at.session_state["run"] = DEMO_RUN
    at.run()
    at.switch_page("pages/slices.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "slice" in d.value.columns)
    assert table["slice"].tolist() == expected.slices["slice"].tolist()
    assert table["JGA"].tolist() == pytest.approx(expected.slices["jga"].tolist())
    assert any("Convention" in c.value for c in at.caption)
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert list(bars["y"]) == [
        f"{r}. {t}" for r, t in zip(expected.slices["rank"], expected.slices["slice"], strict=True)
    ]

    # a picked row writes `slice_pick` (AppTest cannot click a dataframe row): the slice's turns are listed
    top = expected.slices.iloc[0]
    at.session_state["slice_pick"] = (DEMO_RUN, None, top["predicates"], top["slice"])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    listed = next(d.value for d in at.dataframe if "n wrong" in d.value.columns)
    turns = S.slice_turns(scored, predicates=top["predicates"])
    assert len(listed) == top["turns"] == len(turns)
    assert listed["dialogue"].tolist() == turns["dialogue_id"].tolist()
    assert any(f"where {top['slice']}: {top['turns']:,}" in t.value for t in at.text)


@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_slices_page_searches_the_selected_runs_together() -> None:
    runs = [DEMO_RUN, "simulated-B-mwz-en-predicted-s1"]
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["runs"] = runs
    at.session_state["run"] = runs[0]
    at.session_state["slices_pooled"] = True
    at.run()
    at.switch_page("pages/slices.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("the 2 selected runs together" in c.value for c in at.caption)
    assert any("Features searched: " in c.value and ", run" in c.value for c in at.caption)
    table = next(d.value for d in at.dataframe if "slice" in d.value.columns)
    assert len(table) == S.TOP
