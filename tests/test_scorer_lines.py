"""The scorer's own lines first (issue 39, requirement 4): under a convention named after a scorer, `metrics`,
the Overview and the report lead with what that scorer prints, in its order and under its names, then the rest."""

from __future__ import annotations

import json

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
