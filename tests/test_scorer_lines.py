"""The scorer's own lines first (issue 39, requirement 4): under a convention named after a scorer, `metrics`,
the Overview and the report lead with what that scorer prints, in its order and under its names, then the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import registry as R
from analysis import scorer_inputs as SI
from analysis import views
from analysis.cli.main import main
from analysis.conventions import CONVENTIONS
from analysis.export.report import scorer_items
from tests.conftest import realdata_path


def test_every_declared_scorer_line_is_a_metric_of_a_scorer_named_convention() -> None:
    for convention, lines in R.SCORER_METRICS.items():
        assert convention in CONVENTIONS and convention in SI.SCORERS, convention
        metrics = [m for m, _ in lines]
        assert len(set(metrics)) == len(metrics) and set(metrics) <= set(R.NAMES), convention
        assert all(label for _, label in lines)
    # the scorers whose lines the issue names, in their own order
    assert [m for m, _ in R.scorer_metrics("mwzeval")] == ["jga", "slot_f1_micro", "slot_precision", "slot_recall"]
    assert R.scorer_metrics("convlab3")[-1] == ("jga", "accuracy")
    assert R.scorer_heading("mwzeval") == "what mwzeval prints"
    assert R.scorer_metrics("exact") == () and R.scorer_metrics("mwzeval-lenient") == ()


@pytest.mark.realdata
def test_metrics_under_mwzeval_leads_with_what_mwzeval_prints(capsys: pytest.CaptureFixture[str]) -> None:
    files = ["--pred", str(realdata_path("mwzeval_outputs", "augpt.json"))]
    files += ["--gold", str(realdata_path("multiwoz21", "test.json.zip"))]
    assert main(["metrics", *files]) == 0  # mwzeval: the format's own convention
    out = capsys.readouterr().out.splitlines()
    start = out.index("What mwzeval prints:")
    own = [line.split()[0] for line in out[start + 1 : start + 5]]
    assert own == ["joint_accuracy", "slot_f1", "slot_precision", "slot_recall"]
    assert out[start + 1].split()[1] == "0.3839" and out[start + 2].split()[1] == "0.7094"  # scorer_oracles README
    rest = out.index("Other metrics (this tool's, not printed by that scorer):")
    assert rest == start + 6
    # the seed recipe's Slot F1 (0.9018) comes after, under this tool's name, and mwzeval's F1 is not repeated
    after = out[rest:]
    assert any(line.strip().startswith("Slot F1 (CrossWOZ-en recipe)") for line in after)
    assert not any(line.strip().startswith("Slot F1 (micro)") for line in after)
    assert not any(line.strip().startswith("Slot F1") for line in out[:start])
    assert main(["metrics", *files, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["scorer_metrics"]["heading"] == "what mwzeval prints"
    assert result["scorer_metrics"]["metrics"][0]["name"] == "joint_accuracy"


def test_a_convention_of_this_tools_own_has_no_scorer_heading(capsys: pytest.CaptureFixture[str]) -> None:
    board = pd.DataFrame({"run_id": ["a"], "convention": ["exact"], "n_turns": [3], "jga": [0.5]})
    assert views.scorer_lead(board) == ("", []) and scorer_items(board) == []


def test_the_report_and_overview_lead_with_the_scorers_lines() -> None:
    board = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "convention": ["dstc9 (subtask multiwoz)", "dstc9 (subtask multiwoz)", "trade"],
            "n_turns": [3, 3, 4],
            **{m: [0.1, 0.2, 0.3] for m in R.NAMES},
        }
    )
    assert views.scorer_lead(board) == ("", [])  # two conventions: no single scorer leads the Overview
    heading, lead = views.scorer_lead(board.iloc[:2])
    assert heading == "what DSTC9 track 2 prints" and lead == list(R.scorer_metrics("dstc9"))
    items = scorer_items(board)
    assert [item.name for item in items] == ["scorer_dstc9", "scorer_trade"]
    dstc9 = items[0].frame
    assert list(dstc9.columns) == ["run", "convention", "turns", *(label for _, label in R.scorer_metrics("dstc9"))]
    assert dstc9["run"].tolist() == ["a", "b"] and items[1].frame["Joint Acc"].tolist() == [0.3]
    assert items[0].caption.startswith("What DSTC9 track 2 prints")


def _lead(out: list[str], heading: str) -> list[tuple[str, str]]:
    """The scorer's own lines under `heading`: (its name, the printed value), up to the blank line."""
    start = out.index(heading)
    end = out.index("", start)
    assert out[end + 1] == "Other metrics (this tool's, not printed by that scorer):"
    return [
        (line.strip().rsplit("  (", 1)[0].rsplit(None, 1)[0].strip(), line.split("  (")[0].split()[-1])
        for line in out[start + 1 : end]
    ]


def test_metrics_under_fga_trippy_leads_with_what_its_script_prints(capsys: pytest.CaptureFixture[str]) -> None:
    # compute_accuracy_trippy.py prints Joint Acc, Slot Acc, Avg. Goal Acc, then FGA L=λ (SuvodipDey/FGA);
    # its numbers on the shipped excerpt are tests/test_fga_vectors.py's (Avg. Goal Acc needs values: n/a).
    excerpt = Path(__file__).parent / "data" / "fga" / "trippy_result_excerpt.json"
    assert main(["metrics", "--pred", str(excerpt)]) == 0
    lines = _lead(capsys.readouterr().out.splitlines(), "What the FGA repository's compute_accuracy_trippy.py prints:")
    assert lines == [
        ("Joint Acc", "0.1600"),
        ("Slot Acc", "0.9507"),
        ("Avg. Goal Acc", "n/a"),
        ("FGA L=0.25", "0.3242"),
        ("FGA L=0.5", "0.3983"),
        ("FGA L=0.75", "0.4405"),
        ("FGA L=1.0", "0.4677"),
    ]


@pytest.mark.realdata
def test_metrics_under_risawoz_leads_with_its_jga(capsys: pytest.CaptureFixture[str]) -> None:
    # X-RiSAWOZ's evaluation writes JGA first (then task success, API, dialogue act, BLEU, SER: not the state's)
    assert main(["metrics", "--pred", str(realdata_path("xrisawoz_llm", "zh.jsonl")), "--convention", "risawoz"]) == 0
    assert _lead(capsys.readouterr().out.splitlines(), "What the RiSAWOZ evaluation prints:") == [("JGA", "0.8011")]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
def test_metrics_under_sgd_leads_with_the_evaluators_lines(capsys: pytest.CaptureFixture[str]) -> None:
    # The evaluator's metrics file is json.dump(..., sort_keys=True): average_goal_accuracy before
    # joint_goal_accuracy; the numbers are its #ALL_SERVICES ones (scorer_oracles/sgd/official_heavy.json).
    gold = realdata_path("sgd")
    oracles = realdata_path("scorer_oracles", "sgd")
    official = json.loads((oracles / "official_heavy.json").read_text(encoding="utf-8"))["#ALL_SERVICES"]
    args = ["metrics", "--pred", str(oracles / "pred_heavy"), "--gold", str(gold)]
    args += ["--schema", str(gold / "test_schema.json.gz"), "--train-schema", str(gold / "train_schema.json.gz")]
    assert main(args) == 0
    lines = _lead(capsys.readouterr().out.splitlines(), "What the SGD evaluator prints:")
    assert lines == [
        ("average_goal_accuracy", f"{official['average_goal_accuracy']:.4f}"),
        ("joint_goal_accuracy", f"{official['joint_goal_accuracy']:.4f}"),
    ]
