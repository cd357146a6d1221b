"""Figure builders: pure, hover on every trace, one fixed colour per run, styles."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis import figures, palette, views
from analysis.demo.testing import scored_from_states
from analysis.escaping import plotly_text

GOLD = {"d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}], "d2": [{"taxi": {"to": "x"}}]}
PRED_A = {"d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "west"}}], "d2": [{}]}
PRED_B = {"d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}], "d2": [{"taxi": {"to": "y"}}]}


@pytest.fixture
def runs():
    return [scored_from_states(GOLD, PRED_A, run_id="a"), scored_from_states(GOLD, PRED_B, run_id="b")]


def _all_figures(runs):
    a, b = runs
    board = views.leaderboard(runs)
    turns, _ = views.dialogue_view(a, "d1")
    summary = views.crosslingual_summary(a, b)
    colours = figures.run_colours(["b", "a"])
    return {
        "leaderboard": figures.leaderboard_bar(board, colours=colours),
        "slot_f1": figures.slot_f1_bar(views.slot_table(a), run_id="a"),
        "mix": figures.outcome_mix_bar(views.outcome_mix(runs, by="slot")),
        "confusion": figures.confusion_heatmap(views.value_confusions(a, domain="hotel", slot="area")),
        "domains": figures.grouped_jga_bar(views.domain_jga(runs), by="domain", colours=colours),
        "depth": figures.depth_lines(views.depth_jga(runs), colours=colours),
        "compounding": figures.compounding_figure(views.compounding_curve(a, b), predicted_run="a", gold_run="b"),
        "origins": figures.origins_bar(views.origins_by_depth(runs)),
        "first_error": figures.first_error_bar(views.first_error_distribution(runs), colours=colours),
        "agreement": figures.agreement_heatmap(summary["cells"], run_a="a", run_b="b"),
        "gap": figures.gap_bar(summary["gaps"]["turn_index"], by="turn_index"),
        "strip": figures.turn_strip(turns, current=1),
    }


def test_every_trace_has_hover_details(runs):
    for name, fig in _all_figures(runs).items():
        assert isinstance(fig, go.Figure), name
        assert fig.data, name
        for trace in fig.data:
            assert trace.hovertemplate, f"{name}: trace {trace.name!r} has no hover template"


def test_a_run_keeps_its_colour_across_figures(runs):
    colours = figures.run_colours(["b", "a"])
    made = _all_figures(runs)
    (bars,) = made["leaderboard"].data  # one trace: each bar its run's colour
    bar_colour = dict(zip(bars.x, bars.marker.color, strict=True))
    line_colour = {t.name: t.line.color for t in made["depth"].data}
    domain_colour = {t.name: t.marker.color for t in made["domains"].data}
    assert bar_colour == line_colour == domain_colour == {"a": colours["a"], "b": colours["b"]}
    assert colours["b"] == palette.OKABE_ITO[0]


def test_leaderboard_bar_shows_the_metric(runs):
    board = views.leaderboard(runs)
    fig = figures.leaderboard_bar(board, metric="jga")
    (bars,) = fig.data
    assert list(bars.x) == list(board["run_id"])
    assert list(bars.y) == pytest.approx(list(board["jga"]))
    with pytest.raises(ValueError, match="leaderboard column"):
        figures.leaderboard_bar(board, metric="nope")


def test_leaderboard_bar_is_one_trace_with_each_runs_interval_and_colour(runs):
    """One trace for every run (a browser draws it in a quarter of the time of a trace per run), each bar
    with its own interval, colour and hover details; a run named twice falls back to a trace per bar, so
    neither bar hides the other."""
    board = views.leaderboard(runs, sort="jga", resamples=50).iloc[::-1].reset_index(drop=True)
    board.loc[0, "jga"] = float("nan")  # a metric that does not apply to a run: its bar says n/a
    colours = figures.run_colours(list(board["run_id"]))
    (bars,) = figures.leaderboard_bar(board, metric="jga", colours=colours).data
    assert list(bars.x) == list(board["run_id"])
    assert list(bars.marker.color) == [colours[r] for r in board["run_id"]]
    high = (board["jga_high"] - board["jga"]).to_numpy()
    low = (board["jga"] - board["jga_low"]).to_numpy()
    assert list(bars.error_y.array) == pytest.approx(list(high), nan_ok=True)
    assert list(bars.error_y.arrayminus) == pytest.approx(list(low), nan_ok=True)
    assert [c[2] for c in bars.customdata] == list(board["convention"])
    assert [c[3] for c in bars.customdata] == list(board["n_turns"])
    fig = figures.leaderboard_bar(board, metric="jga")
    assert [a.text for a in fig.layout.annotations] == ["n/a"] and fig.layout.annotations[0].x == board["run_id"][0]
    twice = pd.concat([board, board.iloc[[1]]], ignore_index=True)
    doubled = figures.leaderboard_bar(twice, metric="jga")
    assert [t.name for t in doubled.data] == list(twice["run_id"])
    assert [t.y[0] for t in doubled.data] == pytest.approx(list(twice["jga"]), nan_ok=True)


def test_outcomes_readable_without_colour(runs):
    fig = figures.outcome_mix_bar(views.outcome_mix(runs, by="slot"))
    for trace in fig.data:
        assert trace.name[0] in "≠−+✓"
        if "correct" not in trace.name:
            assert trace.marker.pattern.shape


def test_depth_bands_are_one_closed_shape_per_run(runs):
    depth = views.depth_jga(runs)
    fig = figures.depth_lines(depth, colours=figures.run_colours(["a", "b"]))
    bands = [t for t in fig.data if t.fill == "toself"]
    lines = [t for t in fig.data if t.fill != "toself"]
    assert [t.name for t in bands] == [t.name for t in lines] == ["a", "b"]
    for band in bands:
        part = depth[depth["run_id"] == band.name]
        n = len(part)
        assert list(band.x) == [*part["turn_index"], *part["turn_index"][::-1]]
        assert list(band.y) == pytest.approx([*part["jga_high"], *part["jga_low"][::-1]])
        assert list(band.customdata) == ["upper"] * n + ["lower"] * n  # hover says which bound
        assert band.hoveron == "points" and band.showlegend is False and band.legendgroup == band.name
    assert all(t.mode == "lines+markers" for t in lines)


def test_depth_bands_skip_depths_without_an_interval(runs):
    depth = views.depth_jga(runs)
    depth.loc[depth.index[0], "jga_low"] = float("nan")
    band = figures.depth_lines(depth).data[0]
    assert band.fill == "toself" and len(band.x) == 2 * (int((depth["run_id"] == band.name).sum()) - 1)
    assert not any(pd.isna(band.y))


def test_many_runs_are_drawn_as_lines_without_markers(runs):
    depth = views.depth_jga(runs)
    many = pd.concat([depth[depth["run_id"] == "a"].assign(run_id=f"run-{i}") for i in range(figures.MARKED_RUNS + 1)])
    lines = [t for t in figures.depth_lines(many).data if t.fill != "toself"]
    assert len(lines) == figures.MARKED_RUNS + 1 and {t.mode for t in lines} == {"lines"}
    few = many[many["run_id"].isin([f"run-{i}" for i in range(figures.MARKED_RUNS)])]
    assert {t.mode for t in figures.depth_lines(few).data if t.fill != "toself"} == {"lines+markers"}


def test_beyond_merged_runs_the_muted_runs_share_traces_and_keep_their_points(runs):
    """Beyond `MERGED_RUNS` runs with one highlighted, the muted runs are one band trace per colour and one
    line trace per colour and dash (a fifth of the traces for the browser to draw), each run's points and
    bounds all there, separated by gaps, its name in the hover; a clicked point of a shared trace names its
    run, also once the figure went through the cache's JSON; the highlighted run stays alone, on top."""
    depth = views.depth_jga(runs)
    from analysis.palette import CATEGORICAL

    # colours (21) and dashes (4, by eights of runs) repeat as pairs from the 64th run on
    names = [f"run<{i}>" for i in range(max(2 * figures.MERGED_RUNS, 3 * len(CATEGORICAL) + 8))]
    many = pd.concat(
        [
            depth[depth["run_id"] == "a"].assign(run_id=n, jga=depth["jga"].iloc[0] - i / 100)
            for i, n in enumerate(names)
        ]
    )
    focus = names[3]
    fig = figures.depth_lines(many, highlight=focus)
    colours = figures.run_colours(names)
    assert fig.data[-1].name == plotly_text(focus) and fig.data[-1].opacity == 1.0  # drawn on top
    shared = [t for t in fig.data if t.legendgroup == figures.OTHERS]
    bands = [t for t in shared if t.fill == "toself"]
    lines = [t for t in shared if t.fill != "toself"]
    muted = [n for n in names if n != focus]
    assert len(bands) == len({colours[n] for n in muted}) and len(lines) < len(muted)
    assert len(fig.data) == len(shared) + 2
    assert [t.name for t in fig.data if t.showlegend is not False] == [lines[0].name, plotly_text(focus)]
    assert {t.legendgroup for t in shared} == {figures.OTHERS} and str(len(muted)) in lines[0].name
    for kind in (bands, lines):
        seen = {}
        for trace, points in [(t, figures.trace_runs(fig)[list(fig.data).index(t)]) for t in kind]:
            for i, run in enumerate(points):
                if pd.isna(trace.x[i]):
                    continue  # the gap after each run
                seen.setdefault(run, []).append((trace.x[i], trace.y[i], trace.customdata[i][1]))
                assert trace.customdata[i][1] == plotly_text(run)  # hover names the run, as text
        assert set(seen) == set(muted)
        for run in muted:
            part = many[many["run_id"] == run]
            if kind is lines:
                assert [x for x, _, _ in seen[run]] == list(part["turn_index"])
                assert [y for _, y, _ in seen[run]] == pytest.approx(list(part["jga"]))
                colour = next(t.line.color for t in lines if plotly_text(run) in {c[1] for c in t.customdata})
                assert colour == colours[run]
            else:
                assert [y for _, y, _ in seen[run]] == pytest.approx([*part["jga_high"], *part["jga_low"][::-1]])
    cached = go.Figure(fig.to_dict(), _validate=False)  # as the page gets it from the figure cache
    trace_runs = figures.trace_runs(cached)
    line = next(
        i
        for i, t in enumerate(cached.data)
        if t.fill != "toself" and isinstance(trace_runs[i], list) and muted[-1] in trace_runs[i]
    )
    point = trace_runs[line].index(muted[-1])
    picked = views.chart_pick({"curve_number": line, "point_index": point + 1, "x": 1, "y": 0.5}, trace_runs)
    assert picked == (muted[-1], 1)  # the run itself, not its escaped name
    assert views.chart_pick({"curve_number": len(cached.data) - 1, "x": 2}, trace_runs) == (focus, 2)
    fewer = many[many["run_id"].isin(names[: figures.MERGED_RUNS])]
    assert len(figures.depth_lines(fewer, highlight=focus).data) == 2 * figures.MERGED_RUNS  # a trace per run


def test_compounding_gap_is_shaded(runs):
    fig = _all_figures(runs)["compounding"]
    assert fig.data[1].fill == "tonexty"


def test_styles_and_empty_frames(runs):
    fig = figures.apply_style(go.Figure(), "paper")
    assert fig.layout.height == figures.STYLES["paper"]["height"]
    with pytest.raises(ValueError, match="screen, paper"):
        figures.apply_style(go.Figure(), "poster")
    empty = figures.depth_lines(views.depth_jga([]))
    assert empty.layout.annotations[0].text == "no turns"


def test_run_colours_are_stable_and_distinct():
    colours = figures.run_colours([f"r{i}" for i in range(16)])
    assert len(set(colours.values())) == 16
    assert figures.run_colours(["x", "y"])["x"] == figures.run_colours(["x"])["x"]


def test_many_runs_turn_grouped_bars_into_a_heatmap(runs):
    frame = views.domain_jga(runs)
    many = pd.concat([frame.assign(run_id=f"r{i}") for i in range(6)], ignore_index=True)
    fig = figures.grouped_jga_bar(many, by="domain")
    assert fig.data[0].type == "heatmap" and list(fig.data[0].y) == [f"r{i}" for i in range(6)]
    assert fig.data[0].hovertemplate


def test_slot_f1_bar_keeps_the_worst_slots(runs):
    table = views.slot_table(runs[0])
    fig = figures.slot_f1_bar(table, top=1)
    worst = table.sort_values("f1").iloc[0]["slot_name"]
    assert list(fig.data[0].y) == [worst] and "worst" in fig.layout.title.text


def test_first_error_heatmap_for_many_runs(runs):
    frame = views.first_error_distribution(runs)
    many = pd.concat([frame.assign(run_id=f"r{i}") for i in range(5)], ignore_index=True)
    fig = figures.first_error_bar(many)
    assert fig.data[0].type == "heatmap" and list(fig.data[0].x)[-1] == "none"


@pytest.mark.parametrize("style", sorted(figures.STYLES))
def test_each_figure_carries_its_registered_template_less_what_it_cannot_use(runs, style: str) -> None:
    """`apply_style` gives every figure Plotly's registered template without the entries the figure never
    consults (other trace types, subplot kinds none of ours draws): the defaults it uses are the whole
    template's, value for value, so it draws the same."""
    import plotly.io as pio

    whole = pio.templates[figures.STYLES[style]["template"]].to_plotly_json()
    for name, fig in _all_figures(runs).items():
        fig = figures.apply_style(fig, style)
        kept = fig.layout.template.to_plotly_json()
        assert kept["layout"] == {k: v for k, v in whole["layout"].items() if k not in figures.UNDRAWN_SUBPLOTS}, name
        types = {t.type for t in fig.data}
        assert types <= set(kept["data"]), name
        assert all(kept["data"][t] == whole["data"][t] for t in kept["data"]), name
        drawn = fig.to_plotly_json()["layout"]
        assert not [k for k in drawn if k.rstrip("0123456789") in figures.UNDRAWN_SUBPLOTS], name
