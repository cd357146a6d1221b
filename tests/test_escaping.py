"""Text from data shown literally (issue 14, requirement 3): the Plotly and Markdown escaping helpers, every
figure the dashboard draws for a run whose names carry markup, the Markdown table export, and deep-link
values checked against the workspace (AppTest)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis import export, figures, views
from analysis.demo.testing import scored_from_states
from analysis.escaping import literal_point, markdown_text, plain_figure_text, plotly_text
from ui.text import md

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"
ANCHOR = "<a href='http://127.0.0.1:9/a'>click</a>"
IMAGE = "![x](http://127.0.0.1:9/p.png)"
LINK = "[sign in](http://127.0.0.1:9/login)"
HOSTILE = f"{ANCHOR} {IMAGE} {LINK} :red[x] :material/warning: $\\href{{http://127.0.0.1:9}}{{x}}$ <img src=x>"


def test_plotly_text_escapes_markup_only():
    assert plotly_text(ANCHOR) == "&lt;a href='http://127.0.0.1:9/a'&gt;click&lt;/a&gt;"
    assert plotly_text("R&B 2.1 hotel-area") == "R&amp;B 2.1 hotel-area"


@pytest.mark.parametrize("escape", [markdown_text, md])
def test_markdown_text_leaves_no_construct(escape):
    text = escape(HOSTILE + "\nnext line www.example.org a@b.org")
    assert "\n" not in text
    for live in (r"(?<!\\)<", r"(?<!\\)\[", r"(?<!\\)\$", r"(?<!\\):red", "http://", r"www\.", r"\w@"):
        assert not re.search(live, text), (live, text)
    # what a reader sees is the text itself: drop the escapes and the invisible word joiners
    shown = re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")
    assert shown == HOSTILE + " next line www.example.org a@b.org"


@pytest.mark.parametrize("start", ["- x", "+ x", "1. x", "12) x", "# x", "> x", "* x"])
def test_a_list_or_heading_at_the_start_stays_text(start: str):
    assert re.sub(r"\\(.)", r"\1", markdown_text(start)) == start
    assert markdown_text(start) != start


def test_markdown_text_stays_readable():
    for text in ("MultiWOZ 2.1 · hotel-book_day · R&B (x)", "0.500", "-0.25", "2024-01-01"):
        assert markdown_text(text) == text


@pytest.fixture(scope="module")
def hostile_scored():
    gold = [{"hotel": {HOSTILE: "north", "area": HOSTILE}}, {IMAGE: {"name": ANCHOR}, "hotel": {"area": "x"}}]
    pred = [{"hotel": {HOSTILE: "south"}}, {IMAGE: {"name": ANCHOR}, "hotel": {"area": LINK}}]
    return [
        scored_from_states({LINK: gold, "plain": gold}, {LINK: pred, "plain": gold}, run_id=run)
        for run in (HOSTILE, f"{IMAGE} b")
    ]


# Not drawn: trace ids that only group legend entries.
NOT_DRAWN = ("legendgroup",)


def strings(value: object, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in NOT_DRAWN for s in strings(v, f"{path}.{k}")]
    if isinstance(value, list | tuple):
        return [s for i, v in enumerate(value) for s in strings(v, f"{path}[{i}]")]
    return []


def assert_literal(fig) -> None:
    found = [(p, s) for p, s in strings(fig.to_plotly_json()) if re.search(r"<(a|img|span)\b", s)]
    assert not found, found


def test_every_figure_draws_names_from_data_as_text(hostile_scored):
    a, b = hostile_scored
    board = views.leaderboard([a, b], resamples=20)
    table = views.slot_table(a)
    domain, slot = views.split_slot(table, table["slot_name"].iloc[0])
    built = [
        figures.leaderboard_bar(board, metric="jga"),
        figures.slot_f1_bar(table, run_id=a.metas[0].run_id),
        figures.outcome_mix_bar(views.outcome_mix(a, by="slot"), title=f"mix {HOSTILE}"),
        figures.confusion_heatmap(views.value_confusions(a, domain=domain, slot=slot), title=HOSTILE),
        figures.grouped_jga_bar(views.domain_jga([a, b], resamples=20), by="domain", title=HOSTILE),
        figures.jga_heatmap(views.domain_jga([a, b], resamples=20), by="domain"),
        figures.depth_lines(views.depth_jga([a, b], resamples=20)),
        figures.origins_bar(views.origins_by_depth([a, b])),
        figures.first_error_bar(views.first_error_distribution([a, b])),
        figures.agreement_heatmap({"both": 1, "only_a": 0, "only_b": 0, "neither": 1}, run_a=HOSTILE, run_b=IMAGE),
        figures.turn_strip(views.dialogue_view(a, LINK)[0]),
    ]
    for fig in built:
        assert_literal(fig)
    leaderboard = built[0]
    assert plotly_text(HOSTILE) in leaderboard.data[0].x or plotly_text(HOSTILE) == leaderboard.data[0].name
    # a cell's own line break is kept
    assert any("<br>" in t for row in built[9].data[0].text for t in row)


def test_escaping_happens_once(hostile_scored):
    fig = figures.slot_f1_bar(views.slot_table(hostile_scored[0]), run_id="r")
    again = figures.apply_style(figures.apply_style(fig, "paper"), "screen")
    assert "&amp;lt;" not in str(again.to_plotly_json())
    assert plain_figure_text(again) is again


def test_markdown_table_export_has_no_live_markup():
    frame = pd.DataFrame({"run_id": [HOSTILE, "b"], "jga": [0.5, 0.25], "jga_low": [0.4, 0.2], "jga_high": [0.6, 0.3]})
    text = export.table_bytes(frame, "markdown", caption=HOSTILE, intervals={"jga": ("jga_low", "jga_high")}).decode()
    assert not re.search(r"(?<!\\)<(a|img)\b|(?<!\\)\]\(|(?<!\\)!\[|http://", text), text
    assert "0.500** [0.400, 0.600]" in text  # numbers and their intervals unchanged


@pytest.mark.skipif(not DEMO.exists(), reason="the demo workspace is absent (make demo)")
def test_link_values_are_checked_against_the_workspace():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["workspace_path"] = str(DEMO)
    at.query_params.update(
        {"page": "overview", "runs": f"{HOSTILE}", "run": HOSTILE, "compare": IMAGE, "convention": LINK}
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [w.value for w in at.sidebar.warning]
    assert any(n.startswith("runs in the link that this session does not have") for n in notes), notes
    assert any(n.startswith("run in the link is not a run") for n in notes), notes
    assert any(n.startswith("compare in the link is not a run") for n in notes), notes
    assert any(n.startswith("convention in the link is not one of") for n in notes), notes
    assert all("\\[" in n or "[" not in n for n in notes)  # shown through ui.md: brackets escaped
    assert at.session_state["convention"] != LINK
    assert at.session_state["run"] != HOSTILE
    assert "compare" not in at.session_state or at.session_state["compare"] != IMAGE


def test_a_clicked_point_comes_back_as_the_data_has_it() -> None:
    """A figure's text is escaped, so Streamlit returns a click's x and y escaped: `B&B` as `B&amp;B`, which
    matches no turn. `literal_point` (what `ui.place.show_figure` returns) gives the data's own text back, for
    a confusion cell's values and for the run of a heatmap row, `&`, `<`, `>` and entity-like text included."""
    from ui.clicks import clickable_cells

    values = ["B&B", "<b>x</b>", "&amp; as typed", "a<br>b"]
    gold = {f"d{i}": [{"hotel": {"name": v}}] for i, v in enumerate(values)}
    pred = {f"d{i}": [{"hotel": {"name": values[(i + 1) % len(values)]}}] for i in range(len(values))}
    scored = scored_from_states(gold, pred, run_id="r")
    confusions = views.value_confusions(scored, domain="hotel", slot="name")
    fig = clickable_cells(figures.confusion_heatmap(confusions))
    overlay = fig.data[-1]
    clicked = {
        (p["y"], p["x"]) for p in (literal_point({"x": x, "y": y}) for x, y in zip(overlay.x, overlay.y, strict=True))
    }
    assert clicked == set(zip(confusions["gold"], confusions["predicted"], strict=True))
    assert ("B&B", "<b>x</b>") in clicked
    runs = [f"run {HOSTILE} &lt;{i}&gt;" for i in range(figures.HIGHLIGHT_RUNS)]
    frame = pd.concat([views.first_error_distribution([scored]).assign(run_id=run) for run in runs], ignore_index=True)
    first = clickable_cells(figures.first_error_bar(frame))
    cells = first.data[-1]
    row = list(cells.y).index(plotly_text(runs[3]))
    point = literal_point({"curve_number": len(first.data) - 1, "x": cells.x[row], "y": cells.y[row]})
    assert views.chart_pick(point, figures.trace_runs(first)) == (runs[3], cells.x[row])
