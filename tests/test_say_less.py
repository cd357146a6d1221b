"""Say less (issue 41 requirement 5), over every page of the demo workspace through AppTest: no chart text
under 11 px, no table header that is a machine name (`slot_a`, `jga low`, `p text`), one name per cause, the
comparability warnings as one notice that expands, and run names in the sidebar shortened only where no other
run could match."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import page_registry
from analysis.reconcile.core import CAUSE_LABELS, CAUSES
from analysis.wording import ELISION, label, short_names
from analysis.workspace import read_manifest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 300
RUNS = [
    "simulated-A-mwz-en-predicted",
    "simulated-A-mwz-zh-predicted",
    "simulated-B-mwz-en-predicted-s1",
    "simulated-C-mwz-en-predicted",
]
MIN_PX = 11
# Headers that are machine names: an underscore, a count prefix, a run letter glued on, raw metric names.
BANNED = [r"_", r"^n ", r"^\w+ [ab]$", r"^p \w", r"\bjga\b", r"\bf1\b", r"ill formed", r"^(row|column|label)$"]

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


def opened(page: str, runs: list[str] = RUNS, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["runs"] = runs
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error if "unexpected error" in e.value]  # shown in place (ui.errors)
    return at


def small_text(spec: dict) -> list[str]:
    """Where a chart's text is (or may be drawn) under `MIN_PX`: every font size the figure sets, bar text
    without a floor (`uniformtext`), heatmap cell text left to Plotly's automatic size."""
    found = []
    layout = spec.get("layout", {})

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                font = key == "size" and "font" in path.rsplit(".", 1)[-1]
                if font and isinstance(value, int | float) and value < MIN_PX:
                    found.append(f"{path}.size = {value}")
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(layout, "layout")
    if layout.get("font", {}).get("size", 0) < MIN_PX:
        found.append("layout.font.size unset or small")
    for i, trace in enumerate(spec.get("data", [])):
        walk({k: v for k, v in trace.items() if "font" in k}, f"data[{i}]")
        cell_text = trace.get("type") == "heatmap" and trace.get("texttemplate")
        if cell_text and trace.get("textfont", {}).get("size", 0) < MIN_PX:
            found.append(f"data[{i}] heatmap cell text at Plotly's automatic size")
        bar_text = trace.get("type") == "bar" and (trace.get("text") is not None or trace.get("texttemplate"))
        if bar_text and layout.get("uniformtext", {}).get("minsize", 0) < MIN_PX:
            found.append(f"data[{i}] bar text may shrink below {MIN_PX} px")
    return found


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.parametrize("page", [p.file for p in page_registry.PAGES])
def test_every_chart_and_header_says_it_in_people_s_words(page: str) -> None:
    at = opened(page)
    for i, chart in enumerate(at.get("plotly_chart")):
        spec = json.loads(chart.proto.spec)
        assert not small_text(spec), (page, i, small_text(spec))
        axes = [
            v.get("title", {}).get("text", "") for k, v in spec["layout"].items() if k.startswith(("xaxis", "yaxis"))
        ]
        assert not [a for a in axes if a and any(re.search(b, a) for b in BANNED[:3])], (page, axes)
    headers = {str(c) for d in at.dataframe for c in d.value.columns}
    # a name in parentheses is a reference (the TRADE function `compute_acc` a metric reproduces), not a header
    bad = sorted(h for h in headers if any(re.search(b, re.sub(r"\(.*?\)", "", h)) for b in BANNED))
    assert not bad, (page, bad)
    for table in at.dataframe:
        if "causes" in table.value.columns:  # one name per cause: the cause chart's
            named = {c for cell in table.value["causes"] for c in str(cell).split("; ") if c}
            assert named <= set(CAUSE_LABELS.values()) and not named & set(CAUSES), named


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_the_overview_over_seeds_names_its_columns_once() -> None:
    seeds = [f"simulated-B-mwz-en-predicted-s{i}" for i in (1, 2, 3)]
    at = opened("pages/overview.py", runs=[*seeds, "simulated-C-mwz-en-predicted"])
    table = next(d.value for d in at.dataframe if "number of seeds" in d.value.columns)
    assert sorted(table["number of seeds"].tolist()) == [1, 3] and len(set(table.columns)) == len(table.columns)


def test_the_vocabulary_names_what_the_tables_held() -> None:
    assert [label(n) for n in ("slot_a", "jga_low", "p_text", "p_holm_text", "n_turns")] == [
        "slot of A",
        "JGA 95% low",
        "p",
        "Holm p",
        "turns",
    ]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_incomparable_runs_get_one_notice_that_expands() -> None:
    manifest = read_manifest(DEMO)
    mixed = ["simulated-A-mwz-en-predicted", "simulated-A-mwz-en-gold", "crosswoz-rule-dst"]
    at = opened("pages/overview.py", runs=mixed)
    notices = [e for e in at.expander if e.label.startswith("Not comparable as they stand")]
    assert len(notices) == 1, [e.label for e in at.expander]
    inside = [w.value for w in notices[0].warning]
    assert len(inside) >= 2 and [w.value for w in at.warning] == inside  # no box outside the notice
    assert "history modes differ" in notices[0].label and "different datasets" in notices[0].label
    assert len(notices[0].label) < 200 and len(manifest.entries) > 3


def test_sidebar_run_names_are_shortened_only_into_one_run() -> None:
    names = [e.name for e in read_manifest(DEMO).entries]
    short = short_names(names)
    assert len(set(short.values())) == len(names)
    for name, shown in short.items():
        pattern = re.compile(".+".join(re.escape(p) for p in shown.split(ELISION)))
        assert [n for n in names if pattern.fullmatch(n)] == [name], (name, shown)
    siblings = [short[n] for n in names if "-predicted-s" in n]
    assert siblings == ["…-B-mwz-en-…-s1", "…-B-mwz-en-…-s2", "…-B-mwz-en-…-s3"]
    assert max(len(s) for s in short.values()) < max(len(n) for n in names)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)  # the frame's first run draws the sidebar
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["runs"] = RUNS
    at.run()
    runs = at.sidebar.multiselect(key="w_runs")
    assert list(runs.options) == [short[n] for n in names] and runs.value == RUNS  # the values stay the names
    focus = at.sidebar.selectbox(key="w_run")
    assert focus.value == RUNS[0] and focus.options == [short[n] for n in RUNS]
