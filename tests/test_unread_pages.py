"""Issue 39, requirement 1: under a convention whose scorer never reads the gold as given (the run's every
number n/a, `analysis.scorer_inputs`), no page, command or report table draws a per-domain, per-slot or per-turn
number under that scorer's name. Pages say it once, in their notice, and draw nothing of the run; the commands
print n/a with the reason; the report writes n/a rows or leaves the run out with the reason."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import views
from analysis.cli.main import main
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.slices import find_slices
from tests.conftest import realdata_path
from tests.page_visits import visit_every_tab

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
NOT_READ = "crosswoz-rule-dst"  # raw CrossWOZ gold: TRADE never reads it (every number n/a under trade)
READ = "simulated-A-mwz-en-predicted"  # raw MultiWOZ gold: read as TRADE's preprocessing leaves it
REASON = "TRADE never reads a crosswoz file as gold"
NOTICE = "n/a, not drawn here"

needs_demo = pytest.mark.skipif(
    not (DEMO / "workspace.toml").exists(), reason="the demo workspace is absent (make demo)"
)


def _app(focus: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["workspace_path"] = str(DEMO / "workspace.toml")
    at.session_state["convention"] = "trade"
    at.session_state["runs"] = [NOT_READ, READ]
    at.session_state["run"] = focus
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if NOTICE in w.value]


def _charts(at: AppTest) -> list[str]:
    return [str(chart.proto.spec) for chart in at.get("plotly_chart")]


@pytest.mark.slow
@needs_demo
@pytest.mark.parametrize("page", ["domains", "turn_depth"])
def test_a_page_of_several_runs_leaves_the_n_a_run_out_and_says_why_once(page: str) -> None:
    at = _app(NOT_READ)  # the focus run too is n/a: its own views (outcome mix, naming marks) are not drawn
    at.switch_page(f"pages/{page}.py").run()
    labels = [tab.label for tab in at.tabs]
    assert labels
    for label in labels:
        at.session_state[f"view_{page}"] = label
        at.run()
        assert not at.exception, (label, [e.value for e in at.exception])
        notices = _notices(at)
        assert len(notices) == 1 and NOT_READ in notices[0] and REASON in notices[0], notices
        assert READ not in notices[0]
        for frame in at.dataframe:
            for column in ("run_id", "run"):
                if column in frame.value.columns:
                    assert set(frame.value[column]) <= {READ}, (label, frame.value[column].unique())
        assert not any(NOT_READ in spec for spec in _charts(at)), label
    assert any(READ in spec for spec in _charts(at))  # the run whose gold TRADE reads keeps its numbers


@pytest.mark.slow
@needs_demo
@pytest.mark.parametrize("page", ["slots", "slices"])
def test_a_page_of_the_focus_run_draws_nothing_but_the_notice(page: str) -> None:
    at = _app(NOT_READ)
    visit_every_tab(at, [page])
    notices = _notices(at)
    assert len(notices) == 1 and NOT_READ in notices[0] and REASON in notices[0]
    assert not at.dataframe and not _charts(at)
    at.session_state["run"] = READ  # the focus run whose gold TRADE reads: its numbers, no notice
    at.run()
    assert not at.exception
    # Slices still names the selected run it cannot search together with the focus run; Slots says nothing.
    assert [n for n in _notices(at) if READ in n] == [] and (page == "slices" or not _notices(at))
    assert at.dataframe or _charts(at)


# --- the commands, on the real mwzeval outputs against raw MultiWOZ 2.1 gold (DSTC9 never reads it) -----------


def _files(system: str) -> list[str]:
    return [str(realdata_path("mwzeval_outputs", f"{system}.json")), str(realdata_path("multiwoz21", "test.json.zip"))]


@pytest.mark.realdata
def test_slices_and_compare_print_n_a_and_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    augpt, gold = _files("augpt")
    ubar, _ = _files("ubar")
    reason = views.unread_gold(score_run(load_run(augpt, gold), "dstc9"))["augpt"]
    assert reason.startswith("DSTC9 track 2 scored MultiWOZ-zh")
    assert main(["slices", "--pred", augpt, "--gold", gold, "--convention", "dstc9"]) == 0
    out = capsys.readouterr().out
    assert "JGA n/a over 7,372 turns" in out and f"augpt: JGA n/a: {reason}" in out and "gap" not in out
    assert main(["slices", "--pred", augpt, "--gold", gold, "--convention", "dstc9", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["jga"] is None and found["slices"] == [] and reason in found["note"]
    assert main(["compare", "--pred", augpt, "--pred", ubar, "--gold", gold, "--convention", "dstc9"]) == 0
    out = capsys.readouterr().out
    assert f"augpt.json: n/a: {reason}" in out and f"ubar.json: n/a: {reason}" in out and "Δ" not in out
    assert main(["compare", "--pred", augpt, "--pred", ubar, "--gold", gold, "--convention", "dstc9", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["deltas"] == [] and set(found["unread_gold"]) == {"augpt.json", "ubar.json"}
    # Under mwzeval, which reads the gold (prepared): slices found, JGA a number.
    report = find_slices(score_run(load_run(augpt, gold), "mwzeval"), resamples=20)
    assert not math.isnan(report.jga) and len(report.slices)


@pytest.mark.realdata
def test_metrics_prints_n_a_per_turn_domain_and_group(capsys: pytest.CaptureFixture[str]) -> None:
    augpt, gold = _files("augpt")
    args = ["metrics", "--pred", augpt, "--gold", gold, "--convention", "dstc9", "--group-by", "turn_index"]
    assert main(args) == 0
    out = capsys.readouterr().out
    after = out.split("JGA by turn:")[1]
    assert "Every metric n/a: DSTC9 track 2 scored MultiWOZ-zh" in out
    assert "0." not in after.split("Alignment:")[0]  # per turn, per domain and per group: n/a, no number
    assert main([*args, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert set(found["per_domain_jga"].values()) == {None} and set(found["jga_by_turn"].values()) == {None}
    assert {v["f1"] for v in found["per_slot"].values()} == {None}
    assert {v["jga"] for v in found["groups"].values()} == {None}
