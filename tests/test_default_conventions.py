"""The convention a run gets when nobody names one: the same in a workspace, on the command line and in
the upload form (the format's own, read from the parsed slots where the format alone does not say), and
a warning wherever runs scored under different conventions sit side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import views
from analysis.cli.main import main
from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats import FORMATS
from analysis.loading import PRECEDENCE, _default_convention, load_run
from analysis.metrics import joint_goal_accuracy
from analysis.model import RunInfo
from analysis.scoring import score_run
from analysis.workspace import load_workspace, read_manifest
from tests.conftest import ROOT, realdata_path

APP = ROOT / "app.py"
TIMEOUT = 60

# Two dialogues over TRADE's slots, spelled as the GCA repository's files spell them (`book day`).
MULTIWOZ_TURNS = {
    "MUL0001.json": [
        ({}, {}),
        ({"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}),
        ({"hotel": {"area": "east", "book day": "sunday"}}, {"hotel": {"area": "east", "book day": "monday"}}),
    ],
    "PMUL0002.json": [
        ({"train": {"leaveAt": "10:00"}}, {"train": {"leaveAt": "10:00"}}),
        ({"train": {"leaveAt": "10:00", "day": "friday"}}, {"train": {"leaveAt": "10:00", "day": "friday"}}),
    ],
}
# The same layout over SGD-style slots, which are not TRADE's.
SGD_TURNS = {
    "1_00000": [
        ({"restaurants_1": {"city": "san jose"}}, {"restaurants_1": {"city": "san jose"}}),
        ({"restaurants_1": {"city": "san jose", "cuisine": "thai"}}, {"restaurants_1": {"city": "san jose"}}),
    ]
}


def write_nested(path: Path, dialogues: dict, keys: tuple[str, str] = ("gt", "pr")) -> Path:
    """The per-turn `{dialogue: {turn: {"gt": state, "pr": state}}}` layout of the GCA repository."""
    body = {
        dialogue: {str(t): {keys[0]: gold, keys[1]: pred} for t, (gold, pred) in enumerate(turns)}
        for dialogue, turns in dialogues.items()
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def write_jsonl(path: Path, dialogues: dict) -> Path:
    """The same turns in the project's own JSONL format (whose convention is `exact`)."""
    lines = [
        json.dumps({"dialogue_id": dialogue, "turn_index": t, "gold": gold, "pred": pred})
        for dialogue, turns in dialogues.items()
        for t, (gold, pred) in enumerate(turns)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_manifest(folder: Path, head: str, *runs: str) -> Path:
    path = folder / "workspace.toml"
    path.write_text(f'[workspace]\nname = "t"\nallow_outside_root = true\n{head}\n' + "\n".join(runs), encoding="utf-8")
    return path


def run_table(name: str, pred: Path | str, gold: Path | str | None = None, **keys: str) -> str:
    lines = [
        "[[runs]]",
        f'name = "{name}"',
        'dataset = "MultiWOZ 2.1"',
        f'pred = "{pred}"',
        *([f'gold = "{gold}"'] if gold is not None else []),
    ]
    lines += [f'{key} = "{value}"' for key, value in keys.items()]
    return "\n".join(lines) + "\n"


# --- the format's own, from the parsed slots --------------------------------------------------------


def test_every_format_declares_a_known_convention_and_the_pairs_settle_in_precedence() -> None:
    """Each `FormatSpec` names its community's convention; two files of different communities settle on the
    first in `PRECEDENCE` (a TRADE file over whatever lies beside it, mwzeval predictions over DSTC9 gold)."""
    for spec in FORMATS:
        assert spec.default_convention in CONVENTIONS, spec.name
        assert spec.default_convention == "exact" or spec.default_convention in PRECEDENCE, spec.name
    by_name = {spec.name: spec.default_convention for spec in FORMATS}
    assert by_name["trade"] == "trade" and by_name["dstc9-submission"] == "dstc9" and by_name["dialogues"] == "risawoz"
    assert _default_convention(("mwzeval", "trade")) == "trade"
    assert _default_convention(("mwzeval", "dstc9")) == "mwzeval"
    assert _default_convention(("dialogues", "risawoz")) == "risawoz"
    assert _default_convention(("jsonl", "multiwoz")) == "exact"
    assert _default_convention(("sgd",)) == "sgd"


def test_nested_gt_pr_over_trade_slots_defaults_to_trade(tmp_path: Path) -> None:
    run = load_run(write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS))
    assert run.meta.formats == ("nested",) and run.meta.convention == "trade"
    assert score_run(run).convention.name == "trade"


@pytest.mark.parametrize("keys", [("gold", "pred"), ("turn_belief", "pred_belief")])
def test_other_nested_key_pairs_over_trade_slots_default_to_trade_too(tmp_path: Path, keys) -> None:
    run = load_run(write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS, keys))
    assert run.meta.convention == "trade", run.meta.formats


def test_nested_gt_pr_over_other_slots_does_not(tmp_path: Path) -> None:
    run = load_run(write_nested(tmp_path / "sgd.json", SGD_TURNS))
    assert run.meta.formats == ("nested",) and run.meta.convention == "exact"


def test_only_gold_slots_decide(tmp_path: Path) -> None:
    """A predicted slot outside the 30 is the model's error, not a sign of another dataset; a gold one is."""
    stray_pred = {"MUL0001.json": [({"hotel": {"area": "east"}}, {"hotel": {"area": "east"}, "police": {"x": "y"}})]}
    assert load_run(write_nested(tmp_path / "a.json", stray_pred)).meta.convention == "trade"
    stray_gold = {"MUL0001.json": [({"hotel": {"area": "east"}, "police": {"x": "y"}}, {"hotel": {"area": "east"}})]}
    assert load_run(write_nested(tmp_path / "b.json", stray_gold)).meta.convention == "exact"


def test_a_nested_file_with_empty_gold_everywhere_stays_exact(tmp_path: Path) -> None:
    run = load_run(write_nested(tmp_path / "empty.json", {"MUL0001.json": [({}, {}), ({}, {})]}))
    assert run.meta.convention == "exact"


def test_our_jsonl_over_trade_slots_stays_exact(tmp_path: Path) -> None:
    """Only the nested per-turn layout is read for its slots: our own format has no community scorer."""
    assert load_run(write_jsonl(tmp_path / "run.jsonl", MULTIWOZ_TURNS)).meta.convention == "exact"


def test_a_named_convention_wins_over_the_slots(tmp_path: Path) -> None:
    run = load_run(write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS), meta=RunInfo(convention="mwzeval"))
    assert run.meta.convention == "mwzeval"


@pytest.mark.realdata
def test_the_real_gca_poc_file_defaults_to_trade(capsys) -> None:
    pred = realdata_path("gca_poc", "poc_result4.json")
    assert load_run(pred).meta.convention == "trade"
    assert main(["metrics", "--pred", str(pred), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["convention"] == "trade"


# --- the workspace: run key, else workspace key, else the format's own ------------------------------


def test_a_workspace_without_convention_keys_gives_each_run_its_formats(tmp_path: Path) -> None:
    nested = write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS)
    jsonl = write_jsonl(tmp_path / "run.jsonl", MULTIWOZ_TURNS)
    workspace = load_workspace(write_manifest(tmp_path, "", run_table("t", nested.name), run_table("e", jsonl.name)))
    assert workspace.convention is None and not workspace.failed
    assert [e.meta.convention for e in workspace.entries] == [None, None]
    assert {name: run.meta.convention for name, run in workspace.runs.items()} == {"t": "trade", "e": "exact"}
    for name, run in workspace.runs.items():  # the same numbers as the run loaded alone, as the CLI loads it
        alone = load_run(tmp_path / ("poc.json" if name == "t" else "run.jsonl"))
        assert joint_goal_accuracy(score_run(run)) == joint_goal_accuracy(score_run(alone))


def test_the_workspace_key_overrides_the_formats_and_a_run_key_overrides_both(tmp_path: Path) -> None:
    nested = write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS)
    jsonl = write_jsonl(tmp_path / "run.jsonl", MULTIWOZ_TURNS)
    manifest = write_manifest(
        tmp_path,
        'convention = "dstc9"',
        run_table("t", nested.name),
        run_table("e", jsonl.name),
        run_table("own", nested.name, convention="mwzeval"),
    )
    workspace = load_workspace(manifest)
    assert workspace.convention == "dstc9"
    conventions = {name: run.meta.convention for name, run in workspace.runs.items()}
    assert conventions == {"t": "dstc9", "e": "dstc9", "own": "mwzeval"}


def test_a_bad_workspace_convention_is_still_refused(tmp_path: Path) -> None:
    nested = write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS)
    with pytest.raises(InputError, match="convention has to be one of"):
        read_manifest(write_manifest(tmp_path, 'convention = "tarde"', run_table("t", nested.name)))


@pytest.mark.realdata
def test_an_mwzeval_run_in_a_workspace_scores_as_on_the_command_line(tmp_path: Path, capsys) -> None:
    """AuGPT's outputs: the CLI's default is mwzeval; a manifest that names no convention must not
    fall back to `exact` (JGA 0.1865 against mwzeval's 0.5593 before the fix, ranking flipped)."""
    pred = realdata_path("mwzeval_outputs", "augpt.json")
    gold = realdata_path("multiwoz21", "test.json.zip")
    assert main(["metrics", "--pred", str(pred), "--gold", str(gold), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    workspace = load_workspace(write_manifest(tmp_path, "", run_table("augpt", pred, gold)))
    scored = score_run(workspace.runs["augpt"])
    assert cli["convention"] == scored.convention.name == "mwzeval"
    assert joint_goal_accuracy(scored) == pytest.approx(cli["jga"], abs=1e-12)
    assert cli["n_turns"] == len(scored.turns)


# --- mixed conventions side by side --------------------------------------------------------------


def test_the_warning_names_every_runs_convention(tmp_path: Path) -> None:
    nested = write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS)
    jsonl = write_jsonl(tmp_path / "run.jsonl", MULTIWOZ_TURNS)
    workspace = load_workspace(write_manifest(tmp_path, "", run_table("t", nested.name), run_table("e", jsonl.name)))
    scoreds = [score_run(run) for run in workspace.runs.values()]
    for runs in (scoreds, views.leaderboard(scoreds)):
        lines = views.comparability_warnings(runs)
        assert lines == views.comparability_warnings(runs, about=("convention",))
        assert len(lines) == 1 and "t (trade)" in lines[0] and "e (exact)" in lines[0]
        assert "not comparable" in lines[0]
    assert views.comparability_warnings([score_run(run, "trade") for run in workspace.runs.values()]) == []
    with pytest.raises(ValueError, match="about has to name some of"):
        views.comparability_warnings(scoreds, about=("language",))


@pytest.fixture
def mixed_workspace(tmp_path: Path) -> Path:
    nested = write_nested(tmp_path / "poc.json", MULTIWOZ_TURNS)
    jsonl = write_jsonl(tmp_path / "run.jsonl", MULTIWOZ_TURNS)
    return write_manifest(tmp_path, "", run_table("t", nested.name), run_table("e", jsonl.name))


def _app(manifest: Path, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def _convention_warnings(at: AppTest) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [w.body for w in at.warning if "different conventions" in w.body]


@pytest.mark.slow
def test_overview_and_turn_depth_warn_about_a_mixed_workspace(mixed_workspace: Path) -> None:
    at = _app(mixed_workspace)
    at.run()
    board = at.dataframe[0].value.set_index("run")
    assert board["convention"].to_dict() == {"t": "trade", "e": "exact"}
    lines = _convention_warnings(at)
    assert len(lines) == 1 and "t (trade)" in lines[0] and "e (exact)" in lines[0]
    at.switch_page("pages/turn_depth.py").run()
    assert _convention_warnings(at) == lines


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_one_convention_for_all_runs_needs_no_warning(mixed_workspace: Path) -> None:
    at = _app(mixed_workspace, convention="trade")
    at.run()
    assert at.dataframe[0].value["convention"].tolist() == ["trade", "trade"]
    assert _convention_warnings(at) == []
