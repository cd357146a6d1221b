"""Click-through from a chart to the turns behind it (issue 17 requirement 4), over the demo workspace.

AppTest cannot click a Plotly chart (Streamlit refuses a chart's selection set through session state), so each
click path is driven in two halves: the point a click returns is decoded by `views.chart_pick` against the trace
names of the chart the page really sends, and the page's listing is opened from the state a click writes
(`depth_pick`, `first_error_pick`, `slot`, `confusion`). The listed turns are compared with what the scored run
holds, computed here directly. tests/browser/test_click_through.py clicks a real bar in a browser."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from analysis import figures, views
from analysis.diagnostics import first_error_turns
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest
from ui.clicks import clickable_cells

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180
RUN = "simulated-A-mwz-en-predicted"

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(scope="module")
def scored():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return score_run(load_entry(entries[RUN]))


def opened(page: str, view: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    if view is not None:
        state[f"view_{page}"] = view
    state = {"runs": [RUN], "run": RUN, **state}
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chart(at: AppTest, index: int) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    """The one table on screen with that column label (the listing a click opened)."""
    hits = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(hits) == 1, [list(d.value.columns) for d in at.dataframe]
    return hits[0]


# --- decoding a clicked point ----------------------------------------------------------------------


def test_chart_pick_reads_the_run_from_the_trace_or_the_heatmap_row() -> None:
    assert views.chart_pick({"curve_number": 2, "x": 4}, ["A", "A", "B"]) == ("B", 4)  # band and line of A, then B
    assert views.chart_pick({"curve_number": 0, "x": "none", "y": "C"}, [None]) == ("C", "none")
    assert views.chart_pick({"x": 1}, ["A"]) == (None, 1)


def test_a_point_of_the_sent_charts_names_its_run(scored) -> None:
    at = opened("turn_depth")
    names = [t.get("name") for t in chart(at, 0)["data"]]
    curve = max(i for i, n in enumerate(names) if n == RUN)  # the line (after its interval band)
    assert views.chart_pick({"curve_number": curve, "x": 3, "y": 0.5}, names) == (RUN, 3)
    at = opened("turn_depth", view="Where errors come from")
    data = chart(at, 0)["data"]
    names = [t.get("name") for t in data]
    if data[0]["type"] == "heatmap":  # beyond four runs: a run x turn heatmap, the run is the clicked row
        assert RUN in data[0]["y"]
        point = {"curve_number": 0, "x": "2", "y": RUN}
    else:
        point = {"curve_number": names.index(RUN), "x": "2", "y": 0.1}
    assert views.chart_pick(point, names) == (RUN, "2")


def test_every_filled_heatmap_cell_gets_a_clickable_point(scored) -> None:
    """Streamlit returns no selection for a heatmap click: the invisible markers `clickable_cells` adds are what
    a click selects, one per filled cell, at the cell's column (x) and row (y)."""
    confusions = views.value_confusions(scored, domain="hotel", slot="area")
    # as the page gets it: the figure's JSON from the cache (`ui.figure`), arrays as typed binary
    fig = clickable_cells(go.Figure(figures.confusion_heatmap(confusions).to_dict(), _validate=False))
    overlay = fig.data[-1]
    assert overlay.type == "scatter" and overlay.marker.opacity == 0 and len(fig.data) == 2
    cells = {(str(p), str(g)) for p, g in zip(confusions["predicted"], confusions["gold"], strict=True)}
    assert set(zip(overlay.x, overlay.y, strict=True)) == cells
    counts = dict(zip(zip(confusions["predicted"], confusions["gold"], strict=True), confusions["n"], strict=True))
    assert [counts[c] for c in zip(overlay.x, overlay.y, strict=True)] == [row[0] for row in overlay.customdata]
    assert "%{customdata[0]:,}" in overlay.hovertemplate  # the cell's count, as the heatmap's hover says it
    names = [t.name for t in fig.data]
    point = {"curve_number": 1, "point_index": 0, "x": overlay.x[0], "y": overlay.y[0]}
    assert views.chart_pick(point, names) == (overlay.y[0], overlay.x[0])  # (gold row, predicted column)
    # beyond four runs the first-error chart is a run x turn heatmap: a cell's row is its run
    frame = pd.concat(
        [views.first_error_distribution([scored]).assign(run_id=f"run{i}") for i in range(5)], ignore_index=True
    )
    fig = clickable_cells(go.Figure(figures.first_error_bar(frame).to_dict(), _validate=False))
    overlay = fig.data[-1]
    assert len(overlay.x) == int((frame["n_dialogues"] > 0).sum())
    i = list(overlay.y).index("run3")
    assert views.chart_pick({"curve_number": 1, "x": overlay.x[i], "y": "run3"}, [t.name for t in fig.data]) == (
        "run3",
        overlay.x[i],
    )


# --- the lists a click opens equal the scored run ----------------------------------------------------


def test_a_first_error_bin_lists_the_dialogues_first_wrong_at_that_turn(scored) -> None:
    first = first_error_turns(scored)
    label = str(int(first["first_error_turn"].dropna().mode().iloc[0]))
    at = opened("turn_depth", view="Where errors come from", first_error_pick=(RUN, label))
    shown = table_with(at, "compounding run")
    expected = first.loc[first["first_error_turn"] == int(label), "dialogue_id"].tolist()
    assert shown["dialogue"].tolist() == expected and len(expected) > 0
    assert (shown["first error turn"] == int(label)).all()
    assert any(f"first wrong at turn {label}: {len(expected):,}" in t.value for t in at.text)
    # the "none" bin: the dialogues never wrong
    at = opened("turn_depth", view="Where errors come from", first_error_pick=(RUN, "none"))
    never = first.loc[first["first_error_turn"].isna(), "dialogue_id"].tolist()
    assert table_with(at, "compounding run")["dialogue"].tolist() == never


def test_a_depth_point_lists_the_turns_at_that_depth(scored) -> None:
    at = opened("turn_depth", depth_pick=(RUN, 2))
    shown = table_with(at, "n wrong")
    turns = scored.turns[scored.turns["turn_index"] == 2]
    assert shown["dialogue"].tolist() == turns["dialogue_id"].tolist()
    assert shown["status"].tolist() == ["correct" if c else "wrong" for c in turns["joint_correct"]]
    depth = views.depth_jga([scored])
    n_at_depth = int(depth.loc[depth["turn_index"] == 2, "n_turns"].iloc[0])
    assert len(shown) == n_at_depth  # the point's own count of turns


def test_a_slot_bar_lists_every_turn_with_that_slots_errors(scored) -> None:
    slots = scored.slots
    wrong = slots[slots["outcome"] != "correct"]
    domain, slot = wrong.groupby(["domain", "slot"]).size().idxmax()
    at = opened("slots", view="Value confusions", slot=f"{domain}-{slot}", confusion=None)
    shown = at.dataframe[1].value  # under the confusions table
    rows = wrong[(wrong["domain"] == domain) & (wrong["slot"] == slot)]
    assert len(rows) > 0
    assert list(zip(shown["dialogue"], shown["turn"], strict=True)) == list(
        zip(rows["dialogue_id"], rows["turn_index"], strict=True)
    )


def test_a_confusion_cell_lists_its_turns(scored) -> None:
    slots = scored.slots
    wrong = slots[(slots["outcome"] != "correct") & slots["gold_display"].notna() & slots["pred_display"].notna()]
    (domain, slot, gold, predicted), n = next(
        iter(wrong.groupby(["domain", "slot", "gold_display", "pred_display"]).size().sort_values().items())
    )
    name = f"{domain}-{slot}"
    at = opened("slots", view="Value confusions", slot=name, confusion=(name, gold, predicted))
    shown = at.dataframe[1].value  # under the confusions table
    cell = wrong[
        (wrong["domain"] == domain)
        & (wrong["slot"] == slot)
        & (wrong["gold_display"] == gold)
        & (wrong["pred_display"] == predicted)
    ]
    assert len(shown) == n == len(cell)
    assert shown["dialogue"].tolist() == cell["dialogue_id"].tolist()
    assert set(shown["gold"]) == {gold} and set(shown["predicted"]) == {predicted}


# --- the dialogue picker ------------------------------------------------------------------------------


def reference_runs(scored) -> dict[str, tuple[float, int, int]]:
    """(first error turn, error turns, compounding run) per dialogue, by a plain loop over the turns."""
    out = {}
    for dialogue, turns in scored.turns.groupby("dialogue_id", sort=False):
        wrong = [not c for _, c in sorted(zip(turns["turn_index"], turns["joint_correct"], strict=True))]
        indices = sorted(turns["turn_index"])
        if True not in wrong:
            out[dialogue] = (float("nan"), 0, 0)
            continue
        start = wrong.index(True)
        length = 0
        while start + length < len(wrong) and wrong[start + length]:
            length += 1
        out[dialogue] = (float(indices[start]), sum(wrong), length)
    return out


def test_compounding_runs_equal_a_plain_loop(scored) -> None:
    table = views.compounding_runs(scored)
    expected = reference_runs(scored)
    assert table["dialogue_id"].tolist() == list(expected)
    for row in table.itertuples():
        first, errors, run = expected[row.dialogue_id]
        assert (row.first_error_turn == first or (pd.isna(first) and pd.isna(row.first_error_turn))) and (
            row.error_turns,
            row.compounding_run,
        ) == (errors, run)
    assert (table["compounding_run"] > 1).any() and (table["compounding_run"] == 1).any()


def test_picker_sorts_and_filters(scored) -> None:
    expected = reference_runs(scored)
    longest = views.pick_dialogues(scored, sort="compounding run (longest first)")
    assert longest["compounding_run"].is_monotonic_decreasing
    earliest = views.pick_dialogues(scored, sort="first error turn (earliest first)", first_error=(1, 2))
    assert earliest["first_error_turn"].is_monotonic_increasing and len(earliest)
    assert set(earliest["dialogue_id"]) == {d for d, v in expected.items() if 1 <= v[0] <= 2}
    kept = views.pick_dialogues(scored, min_errors=3, min_run=2, sort="number of errors (most first)")
    assert set(kept["dialogue_id"]) == {d for d, v in expected.items() if v[1] >= 3 and v[2] >= 2}
    assert kept["error_turns"].is_monotonic_decreasing
    with pytest.raises(ValueError, match="sort has to be one of"):
        views.pick_dialogues(scored, sort="by magic")


def test_picker_search_is_a_literal_case_insensitive_substring(scored) -> None:
    turns, slots = scored.turns, scored.slots
    word = str(turns["user"].dropna().iloc[5]).split()[2]
    said = set(turns.loc[turns["user"].str.lower().str.contains(word.lower(), regex=False), "dialogue_id"])
    assert set(views.pick_dialogues(scored, search=word.upper())["dialogue_id"]) >= said and said
    value = str(slots.loc[slots["pred_display"].notna(), "pred_display"].iloc[0])
    holds = slots["gold_display"].fillna("").str.lower().str.contains(value.lower(), regex=False) | slots[
        "pred_display"
    ].fillna("").str.lower().str.contains(value.lower(), regex=False)
    assert set(slots.loc[holds, "dialogue_id"]) <= set(views.pick_dialogues(scored, search=value)["dialogue_id"])
    # a slot name (domain-slot) finds the dialogues that have that slot, not only those with the word said
    name = f"{slots['domain'].iloc[0]}-{slots['slot'].iloc[0]}"
    with_slot = set(slots.loc[(slots["domain"] + "-" + slots["slot"]) == name, "dialogue_id"])
    assert with_slot <= set(views.pick_dialogues(scored, search=name.upper())["dialogue_id"])
    # regex and markdown characters are plain text: nothing matches, nothing raises
    assert views.pick_dialogues(scored, search="(*[").empty
    assert views.pick_dialogues(scored, search=".*").empty


def test_picker_on_the_page_orders_the_dialogue_choices(scored) -> None:
    at = opened("dialogue", picker_sort="compounding run (longest first)", picker_min_errors=2, picker_show_table=True)
    expected = views.pick_dialogues(scored, sort="compounding run (longest first)", min_errors=2)
    options = at.selectbox(key="w_dialogue").options
    assert [o.split(" · ")[0] for o in options][: len(expected)] == expected["dialogue_id"].tolist()
    shown = table_with(at, "compounding run")
    assert shown["dialogue"].tolist() == expected["dialogue_id"].tolist()
    assert any(f"{len(expected):,} of " in t.value for t in at.text)
    word = str(scored.turns["user"].dropna().iloc[0]).split()[1]
    at.text_input(key="picker_search").input(word.upper()).run()
    assert not at.exception
    searched = views.pick_dialogues(scored, search=word, sort="compounding run (longest first)", min_errors=2)
    assert table_with(at, "compounding run")["dialogue"].tolist() == searched["dialogue_id"].tolist()
    # regex and markdown characters are text: nothing matches, the page says so and keeps every dialogue listed
    at.text_input(key="picker_search").input("(*[").run()
    assert not at.exception
    assert any("0 of " in t.value and "shows them all" in t.value for t in at.text)
    assert len(at.selectbox(key="w_dialogue").options) == len(views.dialogue_index(scored))
