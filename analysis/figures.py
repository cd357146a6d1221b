"""Page-ready frames (`analysis.views`) -> Plotly figures; pure builders, no Streamlit.

One fixed colour per run across every figure (`run_colours`, Okabe-Ito, colour-blind safe), outcome
colours paired with a pattern so a chart reads in grey too, hover templates on every trace, and a
`style` switch ("screen" or "paper") applied by `apply_style`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from analysis.escaping import literal_text, plain_figure_text, plotly_text
from analysis.outcomes import Outcome
from analysis.palette import (
    CATEGORICAL,
    COUNT_SCALE,
    DIVERGING_SCALE,
    MUTED_OPACITY,
    OKABE_ITO,
    SCORE_SCALE,
    TINTS,
    rgba,
)
from analysis.suite import LABELS

# The palette lives in analysis.palette (Okabe-Ito, its tints, greys and three continuous scales).
EXTRA = TINTS
OUTCOME_COLOURS = {o.key: o.colour for o in Outcome}
AGREEMENT_NAMES = {
    "both_correct": "both correct",
    "only_a": "only A correct",
    "only_b": "only B correct",
    "both_wrong": "both wrong",
}
ORIGIN_COLOURS = {"new": "#D55E00", "inherited": "#56B4E9"}
ORIGIN_PATTERNS = {"new": "", "inherited": "/"}
STYLES: dict[str, dict[str, Any]] = {
    "screen": {
        "template": "plotly_white",
        "font": {"size": 13},
        "height": 420,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
    },
    "paper": {
        "template": "simple_white",
        "font": {"size": 11, "family": "Liberation Serif, Times New Roman, serif"},
        "height": 320,
        "margin": {"l": 50, "r": 10, "t": 40, "b": 40},
    },
}


# Subplot kinds no figure of ours draws (maps, polar, 3-D, ternary): their template entries are left out.
UNDRAWN_SUBPLOTS = ("geo", "map", "mapbox", "polar", "scene", "ternary")
# The trace types the builders draw, the ones added after styling included (`ui.clicks.clickable_cells`).
DRAWN_TRACES = ("bar", "heatmap", "scatter")


@functools.lru_cache(maxsize=16)
def _template(name: str, types: tuple[str, ...]) -> go.layout.Template:
    whole = pio.templates[name].to_plotly_json()
    layout = {k: v for k, v in whole["layout"].items() if k not in UNDRAWN_SUBPLOTS}
    return go.layout.Template(layout=layout, data={t: whole["data"][t] for t in types if t in whole["data"]})


def template_for(fig: go.Figure, name: str) -> go.layout.Template:
    """Plotly's registered template `name` with what `fig` can use: the defaults of its trace types (and of
    `DRAWN_TRACES`) and the layout without `UNDRAWN_SUBPLOTS`. The figure draws exactly as with the whole
    template (the rest is never consulted), and setting it costs a third: Plotly copies and validates the
    template given to every figure (22 ms for the whole `plotly_white`, 7 ms for this one)."""
    return _template(name, tuple(sorted({str(t.type) for t in fig.data} | set(DRAWN_TRACES))))


def run_colours(run_ids: Sequence[str]) -> dict[str, str]:
    """A fixed colour for each run, by its position in the workspace's run list.

    >>> run_colours(["a", "b"])
    {'a': '#0072B2', 'b': '#E69F00'}
    """
    return {run: CATEGORICAL[i % len(CATEGORICAL)] for i, run in enumerate(dict.fromkeys(run_ids))}


def apply_style(fig: go.Figure, style: str = "screen", *, height: int | None = None) -> go.Figure:
    """Apply a named figure style; unknown names are refused with the allowed ones.

    A few legend entries sit in one row under the title; many go in a column right of the plot, so
    a legend never covers the title or the data. Every builder ends here, so this is also where the
    figure's text from data is made literal (`escaping.plain_figure_text`, once per figure).
    """
    if style not in STYLES:
        raise ValueError(f"style has to be one of {', '.join(STYLES)}, got {style!r}")
    spec = STYLES[style]
    entries = {t.legendgroup or t.name for t in fig.data if t.showlegend is not False and t.name}
    margin = dict(spec["margin"])
    if len(entries) > 4:
        legend = {"orientation": "v", "yanchor": "top", "y": 1.0, "xanchor": "left", "x": 1.01}
    else:
        legend = {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0}
        margin["t"] = margin["t"] + (24 if entries else 0)
    fig.update_layout(
        template=template_for(fig, spec["template"]),
        colorway=list(OKABE_ITO),  # a trace without a colour of its own takes the palette's, never Plotly's
        font=spec["font"],
        height=height or spec["height"],
        margin=margin,
        hoverlabel={"namelength": -1},
        legend=legend,
        title={"x": 0, "xanchor": "left", "y": 0.99, "yanchor": "top"},
    )
    return plain_figure_text(fig)


def _by_run(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each run's rows of `frame` (in frame order), split once: a mask per run costs a string comparison
    over the whole frame each time (0.4 s for 100 runs' lines)."""
    return {str(run): part for run, part in frame.groupby("run_id", sort=False)}


def _colours(runs: Sequence[str], colours: Mapping[str, str] | None) -> dict[str, str]:
    base = run_colours(runs)
    return {r: (colours or {}).get(r, base[r]) for r in runs}


def _label(metric: str) -> str:
    return LABELS.get(metric, metric.replace("_", " "))


def _empty(message: str, style: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return apply_style(fig, style, height=200)


# --- overview ------------------------------------------------------------------------------------


def leaderboard_bar(
    board: pd.DataFrame,
    *,
    metric: str = "jga",
    colours: Mapping[str, str] | None = None,
    style: str = "screen",
) -> go.Figure:
    """One bar per run for `metric`; hover lists convention, turns and the other headline numbers. The bars
    are one trace (each bar its run's colour): a browser draws one trace of 100 bars in a quarter of the time
    of 100 one-bar traces (benchmarks/README.md). Runs named twice get a trace each, side by side."""
    if not len(board):
        return _empty("no runs", style)
    if metric not in board.columns:
        raise ValueError(f"metric has to be a leaderboard column, got {metric!r}")
    runs = list(board["run_id"])
    palette = _colours(runs, colours)
    fig = go.Figure()
    has_ci = f"{metric}_low" in board.columns and f"{metric}_high" in board.columns
    values = board[metric].to_numpy(float)
    hover = (
        f"<b>%{{x}}</b><br>{_label(metric)}: %{{y:.4f}}<br>system: %{{customdata[0]}}"
        "<br>dataset: %{customdata[1]}<br>convention: %{customdata[2]}<br>history: %{customdata[5]}"
        "<br>%{customdata[3]:,} turns, %{customdata[4]:,} dialogues<extra></extra>"
    )
    columns = ["system", "dataset", "convention", "n_turns", "n_dialogues", "history"]
    custom = [list(row) for row in board[columns].itertuples(index=False)]
    groups = [list(range(len(runs)))] if len(set(runs)) == len(runs) else [[i] for i in range(len(runs))]
    for rows in groups:
        error = (
            {
                "type": "data",
                "symmetric": False,
                "array": board[f"{metric}_high"].to_numpy(float)[rows] - values[rows],
                "arrayminus": values[rows] - board[f"{metric}_low"].to_numpy(float)[rows],
                "color": "#444444",
                "thickness": 1.2,
                "width": 4,
            }
            if has_ci
            else None
        )
        fig.add_bar(
            name=runs[rows[0]] if len(rows) == 1 else _label(metric),
            x=[runs[i] for i in rows],
            y=values[rows],
            error_y=error,
            marker_color=[palette[runs[i]] for i in rows] if len(rows) > 1 else palette[runs[rows[0]]],
            customdata=[custom[i] for i in rows],
            hovertemplate=hover,
        )
    for run, value in zip(runs, values, strict=True):
        if pd.isna(value):  # a metric that does not apply to this run: say so where its bar would be
            fig.add_annotation(x=run, y=0, text="n/a", showarrow=False, yanchor="bottom")
    title = f"{_label(metric)} per run" + (" (95% dialogue bootstrap interval)" if has_ci else "")
    fig.update_layout(title=title, showlegend=False, yaxis_title=_label(metric))
    fig.update_yaxes(rangemode="tozero")
    return apply_style(fig, style)


# --- slots ---------------------------------------------------------------------------------------


def slot_f1_bar(
    table: pd.DataFrame, *, run_id: str = "", colour: str = OKABE_ITO[0], top: int = 40, style: str = "screen"
) -> go.Figure:
    """Per-slot F1 as horizontal bars (worst at the top, the `top` worst slots), with precision,
    recall and support on hover."""
    if not len(table):
        return _empty("no slots", style)
    worst = table.sort_values(["f1", "support"], ascending=[True, False], na_position="first").head(top)
    frame = worst.sort_values(["f1", "support"], ascending=[False, True], na_position="last")
    fig = go.Figure(
        go.Bar(
            x=frame["f1"],
            y=frame["slot_name"],
            orientation="h",
            marker_color=colour,
            name=run_id or "F1",
            customdata=np.stack(
                [frame["precision"].to_numpy(float), frame["recall"].to_numpy(float), frame["support"].to_numpy(float)],
                axis=-1,
            ),
            hovertemplate=(
                "<b>%{y}</b><br>F1: %{x:.4f}<br>precision: %{customdata[0]:.4f}<br>recall: %{customdata[1]:.4f}"
                "<br>gold support: %{customdata[2]:,.0f}<extra></extra>"
            ),
        )
    )
    shown = f"the {top} worst slots" if len(table) > top else "all slots"
    title = f"Per-slot F1{' — ' + run_id if run_id else ''} ({shown})"
    fig.update_layout(title=title, xaxis_title="F1", showlegend=False)
    fig.update_xaxes(range=[0, 1])
    return apply_style(fig, style, height=max(320, 18 * len(frame) + 120))


def outcome_mix_bar(
    mix: pd.DataFrame, *, top: int = 25, style: str = "screen", title: str = "Outcome mix"
) -> go.Figure:
    """Stacked horizontal bars of error outcomes per group (slot or domain), most errors on top; each
    outcome has a colour and a pattern."""
    if not len(mix):
        return _empty("no errors", style)
    totals = mix.groupby("group", sort=False)["n"].sum()
    groups = list(totals.sort_values(ascending=False).index[:top])
    frame = mix[mix["group"].isin(groups)]
    runs = list(dict.fromkeys(frame["run_id"]))
    fig = go.Figure()
    present = set(frame["outcome"])
    for outcome in [o for o in Outcome if o.key in present]:
        part = frame[frame["outcome"] == outcome.key]
        label = part["group"] if len(runs) == 1 else part["run_id"] + " · " + part["group"]
        fig.add_bar(
            name=outcome.shown,
            x=part["n"],
            y=label,
            orientation="h",
            marker={"color": outcome.colour, "pattern": {"shape": outcome.pattern}},
            customdata=np.stack([part["share"].to_numpy(float)], axis=-1),
            hovertemplate=f"<b>%{{y}}</b><br>{outcome.shown}: %{{x:,}} (%{{customdata[0]:.1%}})<extra></extra>",
        )
    order = groups[::-1] if len(runs) == 1 else None
    fig.update_layout(barmode="stack", title=title, xaxis_title="slot rows")
    if order:
        fig.update_yaxes(categoryorder="array", categoryarray=order)
    return apply_style(fig, style, height=max(320, 20 * len(groups) * max(1, len(runs)) + 140))


# Counts and shares in a heatmap: the scale starts at 0, an empty cell (0) is left blank with no text, and
# the first count already has a visible colour (palette.COUNT_SCALE's low end is a mid-light blue, not white).


def _blank_zeros(values: Any) -> np.ndarray:
    """A count matrix with its zeros (and NaNs) as None: Plotly leaves those cells blank."""
    array = np.asarray(values, dtype=float)
    out = array.astype(object)
    out[(array == 0) | np.isnan(array)] = None
    return out


def confusion_heatmap(confusions: pd.DataFrame, *, title: str = "Gold → predicted", style: str = "screen") -> go.Figure:
    """Gold values (rows) against predicted values (columns), counts of the top confusions. The colour
    scale starts at 0; a pair never confused is a blank cell, a pair confused once already coloured."""
    if not len(confusions):
        return _empty("no errors on this slot", style)
    table = confusions.pivot_table(index="gold", columns="predicted", values="n", aggfunc="sum", fill_value=0)
    counts = table.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=_blank_zeros(counts),
            x=[str(c) for c in table.columns],
            y=[str(i) for i in table.index],
            zmin=0,
            zmax=max(1.0, float(counts.max())),
            colorscale=COUNT_SCALE,
            colorbar={"title": "slot rows"},
            text=[[f"{v:,.0f}" if v > 0 else "" for v in row] for row in counts],
            texttemplate="%{text}",
            hoverongaps=False,
            hovertemplate="gold: <b>%{y}</b><br>predicted: <b>%{x}</b><br>%{z:,} slot rows<extra></extra>",
        )
    )
    fig.update_layout(title=title, xaxis_title="predicted", yaxis_title="gold")
    return apply_style(fig, style, height=max(320, 24 * len(table) + 160))


# --- per-run grouped bars and lines ---------------------------------------------------------------


def grouped_jga_bar(
    frame: pd.DataFrame,
    *,
    by: str,
    colours: Mapping[str, str] | None = None,
    title: str | None = None,
    highlight: str | None = None,
    style: str = "screen",
) -> go.Figure:
    """JGA per value of `by` (domain, dialogue type, ...), one bar colour per run; turns on hover.
    Beyond four runs the bars get too thin to read, so the same numbers become a run x value heatmap,
    where the row of `highlight` (the run being looked at) is outlined; up to four runs every bar keeps
    its full colour (a comparison of a few runs mutes none)."""
    if not len(frame):
        return _empty(f"no {by} to show", style)
    runs = list(dict.fromkeys(frame["run_id"]))
    if len(runs) > 4:
        return jga_heatmap(frame, by=by, title=title, highlight=highlight, style=style)
    palette = _colours(runs, colours)
    fig = go.Figure()
    has_ci = "jga_low" in frame.columns and "jga_high" in frame.columns
    for run in runs:
        part = frame[frame["run_id"] == run]
        error = (
            {
                "type": "data",
                "symmetric": False,
                "array": (part["jga_high"] - part["jga"]).to_numpy(float),
                "arrayminus": (part["jga"] - part["jga_low"]).to_numpy(float),
                "color": "#444444",
                "thickness": 1.2,
                "width": 3,
            }
            if has_ci
            else None
        )
        fig.add_bar(
            name=run,
            x=part[by].astype(str),
            y=part["jga"],
            error_y=error,
            marker_color=palette[run],
            customdata=np.stack([part["n_turns"].to_numpy(float)], axis=-1),
            hovertemplate=f"<b>{plotly_text(run)}</b><br>{plotly_text(by)}: %{{x}}<br>JGA: %{{y:.4f}}<br>%{{customdata[0]:,.0f}} turns<extra></extra>",
        )
    fig.update_layout(barmode="group", title=title or f"JGA by {by}", yaxis_title="JGA", xaxis_title=by)
    fig.update_yaxes(range=[0, 1])
    return apply_style(fig, style)


def jga_heatmap(
    frame: pd.DataFrame, *, by: str, title: str | None = None, highlight: str | None = None, style: str = "screen"
) -> go.Figure:
    """JGA per run (rows) and value of `by` (columns); blank where a run has no such value; the row of
    `highlight` (the run being looked at) outlined."""
    if not len(frame):
        return _empty(f"no {by} to show", style)
    runs = list(dict.fromkeys(frame["run_id"]))
    values = list(dict.fromkeys(frame[by].astype(str)))
    jga = frame.pivot_table(index="run_id", columns=frame[by].astype(str), values="jga", aggfunc="first")
    turns = frame.pivot_table(index="run_id", columns=frame[by].astype(str), values="n_turns", aggfunc="first")
    jga = jga.reindex(index=runs, columns=values)
    turns = turns.reindex(index=runs, columns=values)
    fig = go.Figure(
        go.Heatmap(
            z=jga.to_numpy(dtype=float),
            x=values,
            y=runs,
            zmin=0,
            zmax=1,
            colorscale=SCORE_SCALE,
            colorbar={"title": "JGA"},
            customdata=turns.to_numpy(dtype=float),
            text=np.vectorize(lambda v: "" if np.isnan(v) else f"{v:.2f}")(jga.to_numpy(dtype=float)),
            texttemplate="%{text}",
            hovertemplate=f"<b>%{{y}}</b><br>{plotly_text(by)}: %{{x}}<br>JGA: %{{z:.4f}}<br>%{{customdata:,.0f}} turns<extra></extra>",
        )
    )
    fig.update_layout(title=title or f"JGA by {by}", xaxis_title=by)
    fig.update_yaxes(autorange="reversed")
    if highlight in runs:
        row = runs.index(str(highlight))
        fig.add_shape(
            type="rect",
            xref="paper",
            yref="y",
            x0=0,
            x1=1,
            y0=row - 0.5,
            y1=row + 0.5,
            line={"color": "#000000", "width": 2},
            fillcolor="rgba(0,0,0,0)",
        )
    return apply_style(fig, style, height=max(320, 28 * len(runs) + 160))


# Beyond this many runs, JGA-by-depth lines carry no markers: a dozen overlapping marker sets hide the lines
# they sit on (and each marker is one more SVG node for the browser to draw).
MARKED_RUNS = 8
# From this many runs, the run being looked at is highlighted and the others muted (issue 18: 8 or more
# lines merge into one mass; from 5 the per-domain bars already become a heatmap).
HIGHLIGHT_RUNS = 5


# Beyond this many runs, the muted runs (all but the highlighted one) are drawn as one line trace per colour
# and dash and one band trace per colour, each run a stretch of points separated by a gap, under one legend
# entry: a browser draws 100 runs' lines and bands as 200 traces in 0.6-0.9 s and as 50 in 0.16-0.25 s
# (benchmarks/README.md); a legend of that many runs is a list nobody reads (hover names each line's run).
MERGED_RUNS = 20
OTHERS = "__other_runs__"  # the legend group of the merged runs: one click on its entry hides them all


def depth_lines(
    frame: pd.DataFrame,
    *,
    colours: Mapping[str, str] | None = None,
    highlight: str | None = None,
    style: str = "screen",
) -> go.Figure:
    """JGA by turn depth, one line per run (markers up to `MARKED_RUNS` runs); the number of turns at each
    depth on hover; the 95% interval as a band behind each line when the frame has one (a filled area with
    no edge line). From `HIGHLIGHT_RUNS` runs on, `highlight` (the run being looked at) is drawn thicker
    at full opacity and on top, the others muted and their bands paler, so one run stands out among many;
    fewer runs are all drawn alike. Beyond `MERGED_RUNS` runs the muted ones share traces (legend group
    `OTHERS`; each point's run is its `customdata[1]`: `trace_runs`)."""
    if not len(frame):
        return _empty("no turns", style)
    runs = list(dict.fromkeys(frame["run_id"]))
    palette = _colours(runs, colours)
    dashes = ("solid", "dash", "dot", "dashdot")
    bands = "jga_low" in frame.columns and "jga_high" in frame.columns
    focus = highlight if highlight in runs and len(runs) >= HIGHLIGHT_RUNS else None
    fig = go.Figure()
    parts = _by_run(frame)
    merged = focus is not None and len(runs) > MERGED_RUNS
    if merged:
        _merged_depth_lines(fig, [(i, r) for i, r in enumerate(runs) if r != focus], parts, palette, dashes, bands)
    # The highlighted run is drawn last, on top of the others (its traces added last: rebuilding the figure
    # in that order would validate every trace again, a third of the figure's cost at 100 runs).
    behind = [] if merged else [i for i, run in enumerate(runs) if run != focus]
    order = behind + [i for i, run in enumerate(runs) if run == focus]
    for i in order:
        run = runs[i]
        part = parts[run]
        muted = focus is not None and run != focus
        if bands:  # the 95% dialogue-bootstrap interval as a translucent band behind the line
            # One closed shape per run (upper bounds left to right, lower bounds back): a third fewer traces
            # for the browser to draw than two bound lines filled between. No edge line: only the fill.
            known = part[part["jga_low"].notna() & part["jga_high"].notna()]
            depths = known["turn_index"].to_numpy()
            fig.add_scatter(
                name=run,
                x=np.concatenate([depths, depths[::-1]]),
                y=np.concatenate([known["jga_high"].to_numpy(float), known["jga_low"].to_numpy(float)[::-1]]),
                customdata=["upper"] * len(known) + ["lower"] * len(known),
                mode="lines",
                fill="toself",
                fillcolor=rgba(palette[run], 0.06 if muted else 0.15),
                hoveron="points",
                line={"width": 0, "color": palette[run]},
                showlegend=False,
                legendgroup=run,
                hovertemplate=f"<b>{plotly_text(run)}</b><br>turn %{{x}}<br>95% interval, %{{customdata}} bound: %{{y:.4f}}<extra></extra>",
            )
        line: dict[str, Any] = {"color": palette[run], "dash": dashes[(i // 8) % len(dashes)]}
        if focus is not None:
            line["width"] = 3.0 if run == focus else 1.25
        fig.add_scatter(
            legendgroup=run,
            name=run,
            x=part["turn_index"].to_numpy(),
            y=part["jga"].to_numpy(),
            mode="lines+markers" if len(runs) <= MARKED_RUNS else "lines",
            line=line,
            opacity=MUTED_OPACITY if muted else 1.0,
            legendrank=i + 1,  # the legend keeps the run order when the highlighted run is drawn last
            customdata=np.stack([part["n_turns"].to_numpy(float)], axis=-1),
            hovertemplate=f"<b>{plotly_text(run)}</b><br>turn %{{x}}<br>JGA: %{{y:.4f}}<br>%{{customdata[0]:,.0f}} turns<extra></extra>",
        )
    title = "JGA by turn depth" + (" (bands: 95% dialogue bootstrap interval)" if bands else "")
    fig.update_layout(title=title, xaxis_title="turn index (0 = first user turn)", yaxis_title="JGA")
    fig.update_yaxes(range=[0, 1.02])
    return apply_style(fig, style)


def _merged_depth_lines(
    fig: go.Figure,
    muted: list[tuple[int, str]],
    parts: Mapping[str, pd.DataFrame],
    palette: Mapping[str, str],
    dashes: Sequence[str],
    bands: bool,
) -> None:
    """`depth_lines`' muted runs (`(position, run)`) as shared traces: each run's band one closed shape and
    its line one stretch, a gap (None) after each; runs of one colour share a band trace, of one colour
    and dash a line trace. Each point's run is its `customdata[1]` (in the hover; "" at a gap)."""
    shapes: dict[str, list[tuple[str, pd.DataFrame]]] = {}
    lines: dict[tuple[str, str], list[tuple[str, pd.DataFrame]]] = {}
    for i, run in muted:
        shapes.setdefault(palette[run], []).append((run, parts[run]))
        lines.setdefault((palette[run], dashes[(i // 8) % len(dashes)]), []).append((run, parts[run]))
    gap = np.array([np.nan])
    if bands:
        for colour, members in shapes.items():
            xs, ys, where, who = [], [], [], []
            for run, part in members:
                known = part[part["jga_low"].notna() & part["jga_high"].notna()]
                depths = known["turn_index"].to_numpy(float)
                xs += [depths, depths[::-1], gap]
                ys += [known["jga_high"].to_numpy(float), known["jga_low"].to_numpy(float)[::-1], gap]
                where += ["upper"] * len(known) + ["lower"] * len(known) + [""]
                who += [run] * (2 * len(known) + 1)
            fig.add_scatter(
                name="",
                x=np.concatenate(xs),
                y=np.concatenate(ys),
                customdata=np.stack([np.array(where, dtype=object), np.array(who, dtype=object)], axis=-1),
                mode="lines",
                fill="toself",
                fillcolor=rgba(colour, 0.06),
                hoveron="points",
                line={"width": 0, "color": colour},
                showlegend=False,
                legendgroup=OTHERS,
                hovertemplate="<b>%{customdata[1]}</b><br>turn %{x}<br>95% interval, %{customdata[0]} bound: %{y:.4f}<extra></extra>",
            )
    for number, ((colour, dash), members) in enumerate(lines.items()):
        xs, ys, turns, who = [], [], [], []
        for run, part in members:
            xs += [part["turn_index"].to_numpy(float), gap]
            ys += [part["jga"].to_numpy(float), gap]
            turns += [part["n_turns"].to_numpy(float), gap]
            who += [run] * (len(part) + 1)
        fig.add_scatter(
            name=f"{len(muted)} other runs (hover a line for its run)",
            showlegend=number == 0,
            legendgroup=OTHERS,
            legendrank=0,
            x=np.concatenate(xs),
            y=np.concatenate(ys),
            mode="lines",
            line={"color": colour, "dash": dash, "width": 1.25},
            opacity=MUTED_OPACITY,
            customdata=np.stack([np.concatenate(turns).astype(object), np.array(who, dtype=object)], axis=-1),
            hovertemplate="<b>%{customdata[1]}</b><br>turn %{x}<br>JGA: %{y:.4f}<br>%{customdata[0]:,.0f} turns<extra></extra>",
        )


def trace_runs(fig: go.Figure) -> list[Any]:
    """Per trace of a chart with a trace per run (`depth_lines`, `first_error_bar`): the trace's run, or,
    for a trace that several runs share (legend group `OTHERS`), the run of each of its points (None at a
    gap): what `views.chart_pick` reads a clicked point's run from. Names and hover data are escaped for
    drawing (`plain_figure_text`); this is the run itself."""
    found: list[Any] = []
    for trace in fig.data:
        if trace.legendgroup == OTHERS and trace.customdata is not None:
            found.append([literal_text(str(row[1])) or None for row in trace.customdata])
        else:
            found.append(literal_text(trace.name))
    return found


def compounding_figure(
    curve: pd.DataFrame,
    *,
    predicted_run: str,
    gold_run: str,
    colours: Mapping[str, str] | None = None,
    style: str = "screen",
) -> go.Figure:
    """JGA (predicted history) against GJGA (gold history) by turn, the gap between them shaded."""
    if not len(curve):
        return _empty("the two runs share no turns", style)
    palette = _colours([predicted_run, gold_run], colours)
    fig = go.Figure()
    fig.add_scatter(
        name=f"GJGA ({gold_run})",
        x=curve["turn_index"],
        y=curve["gjga"],
        mode="lines+markers",
        line={"color": palette[gold_run], "dash": "dash"},
        customdata=np.stack([curve["n_turns"].to_numpy(float)], axis=-1),
        hovertemplate="turn %{x}<br>GJGA: %{y:.4f}<br>%{customdata[0]:,.0f} paired turns<extra></extra>",
    )
    fig.add_scatter(
        name=f"JGA ({predicted_run}); shaded: gap",
        x=curve["turn_index"],
        y=curve["jga"],
        mode="lines+markers",
        fill="tonexty",
        fillcolor="rgba(213,94,0,0.18)",
        line={"color": palette[predicted_run]},
        customdata=np.stack([curve["gap"].to_numpy(float), curve["n_turns"].to_numpy(float)], axis=-1),
        hovertemplate="turn %{x}<br>JGA: %{y:.4f}<br>gap (GJGA − JGA): %{customdata[0]:.4f}"
        "<br>%{customdata[1]:,.0f} paired turns<extra></extra>",
    )
    fig.update_layout(
        title="Error compounding: JGA vs GJGA by turn", xaxis_title="turn index", yaxis_title="joint goal accuracy"
    )
    fig.update_yaxes(range=[0, 1.02])
    return apply_style(fig, style)


def origins_bar(frame: pd.DataFrame, *, style: str = "screen") -> go.Figure:
    """New vs inherited errors by turn depth, one panel per run (stacked bars with patterns)."""
    if not len(frame):
        return _empty("no errors", style)
    runs = list(dict.fromkeys(frame["run_id"]))
    spacing = min(0.08, 0.4 / len(runs))
    fig = make_subplots(rows=len(runs), cols=1, shared_xaxes=True, subplot_titles=runs, vertical_spacing=spacing)
    for row, run in enumerate(runs, start=1):
        for origin in ("new", "inherited"):
            part = frame[(frame["run_id"] == run) & (frame["origin"] == origin)]
            fig.add_bar(
                name=f"{origin} errors",
                legendgroup=origin,
                showlegend=row == 1,
                x=part["turn_index"],
                y=part["n_errors"],
                marker={"color": ORIGIN_COLOURS[origin], "pattern": {"shape": ORIGIN_PATTERNS[origin]}},
                hovertemplate=f"<b>{plotly_text(run)}</b><br>turn %{{x}}<br>{origin} errors: %{{y:,}}<extra></extra>",
                row=row,
                col=1,
            )
    fig.update_layout(barmode="stack", title="Inherited vs new errors by turn depth")
    fig.update_xaxes(title_text="turn index", row=len(runs), col=1)
    return apply_style(fig, style, height=max(320, 150 * len(runs) + 120))


def first_error_bar(
    frame: pd.DataFrame, *, colours: Mapping[str, str] | None = None, style: str = "screen"
) -> go.Figure:
    """Share of dialogues whose first error is at each turn ("none": never wrong), one colour per run;
    beyond four runs a run x turn heatmap of the same shares."""
    if not len(frame):
        return _empty("no dialogues", style)
    runs = list(dict.fromkeys(frame["run_id"]))
    palette = _colours(runs, colours)
    order = [*sorted({lab for lab in frame["label"] if lab != "none"}, key=int), "none"]
    if len(runs) > 4:
        share = frame.pivot_table(index="run_id", columns="label", values="share", aggfunc="first")
        count = frame.pivot_table(index="run_id", columns="label", values="n_dialogues", aggfunc="first")
        share, count = share.reindex(index=runs, columns=order), count.reindex(index=runs, columns=order)
        shares = share.to_numpy(dtype=float)
        fig = go.Figure(
            go.Heatmap(
                z=_blank_zeros(shares),  # no dialogue first wrong at that turn: blank, not the palest colour
                x=order,
                y=runs,
                zmin=0,
                colorscale=COUNT_SCALE,
                colorbar={"title": "share of dialogues", "tickformat": ".0%"},
                hoverongaps=False,
                customdata=count.to_numpy(dtype=float),
                hovertemplate="<b>%{y}</b><br>first error at turn %{x}<br>%{z:.1%} of dialogues "
                "(%{customdata:,.0f})<extra></extra>",
            )
        )
        fig.update_layout(title="Where dialogues first go wrong", xaxis_title="first turn with an error")
        fig.update_xaxes(type="category")
        fig.update_yaxes(autorange="reversed")
        return apply_style(fig, style, height=max(320, 26 * len(runs) + 160))
    fig = go.Figure()
    for run in runs:
        part = frame[frame["run_id"] == run]
        fig.add_bar(
            name=run,
            x=part["label"],
            y=part["share"],
            marker_color=palette[run],
            customdata=np.stack([part["n_dialogues"].to_numpy(float)], axis=-1),
            hovertemplate=f"<b>{plotly_text(run)}</b><br>first error at turn %{{x}}<br>%{{y:.1%}} of dialogues "
            "(%{customdata[0]:,.0f})<extra></extra>",
        )
    fig.update_layout(
        barmode="group",
        title="Where dialogues first go wrong",
        xaxis_title="first turn with an error",
        yaxis_title="share of dialogues",
    )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    fig.update_yaxes(tickformat=".0%")
    return apply_style(fig, style)


# --- cross-lingual --------------------------------------------------------------------------------


def agreement_heatmap(counts: Mapping[str, int], *, run_a: str, run_b: str, style: str = "screen") -> go.Figure:
    """The 2x2 agreement matrix of two runs over paired turns: counts and shares on hover."""
    total = sum(counts.values()) or 1
    z = [
        [counts.get("both_correct", 0), counts.get("only_a", 0)],
        [counts.get("only_b", 0), counts.get("both_wrong", 0)],
    ]
    names = [["both correct", "only A correct"], ["only B correct", "both wrong"]]
    text = [[f"{names[i][j]}<br>{z[i][j]:,} ({z[i][j] / total:.1%})" for j in range(2)] for i in range(2)]
    fig = go.Figure(
        go.Heatmap(
            z=_blank_zeros(z),  # an empty cell is blank; one turn is already coloured
            x=["B correct", "B wrong"],
            y=["A correct", "A wrong"],
            text=text,
            texttemplate="%{text}",
            zmin=0,
            zmax=max(1, *(v for row in z for v in row)),
            colorscale=COUNT_SCALE,
            colorbar={"title": "paired turns"},
            hoverongaps=False,
            hovertemplate="%{text}<extra></extra>",
        )
    )
    # The runs as the title's subtitle: a `<br>` inside the title text got its first line cut off at the top.
    fig.update_layout(title={"text": "Agreement over paired turns", "subtitle": {"text": f"A = {run_a}, B = {run_b}"}})
    fig.update_yaxes(autorange="reversed")
    fig.update_traces(textfont={"size": 14})
    apply_style(fig, style, height=400)
    fig.update_layout(margin={"t": 90})  # room for the title and its subtitle
    return fig


def gap_bar(gaps: pd.DataFrame, *, by: str, value: str = "gap", top: int = 30, style: str = "screen") -> go.Figure:
    """Cross-lingual gap (A − B) per slot, domain or turn depth; positive means A is better."""
    if not len(gaps) or value not in gaps.columns:
        return _empty("nothing to compare", style)
    label_col = by if by in gaps.columns else gaps.columns[0]
    frame = gaps.dropna(subset=[value])
    if by != "turn_index":
        frame = frame.reindex(frame[value].abs().sort_values(ascending=False).index).head(top)
    extra = [c for c in gaps.columns if c not in (label_col, value)][:4]
    custom = np.stack([frame[c].astype(str).to_numpy() for c in extra], axis=-1) if extra else None
    hover = "".join(f"<br>{plotly_text(c)}: %{{customdata[{i}]}}" for i, c in enumerate(extra))
    colours = np.where(frame[value].to_numpy(float) >= 0, OKABE_ITO[0], OKABE_ITO[5])
    fig = go.Figure(
        go.Bar(
            x=frame[label_col].astype(str),
            y=frame[value],
            marker_color=colours,
            customdata=custom,
            hovertemplate=f"<b>%{{x}}</b><br>{plotly_text(value)}: %{{y:.4f}}{hover}<extra></extra>",
        )
    )
    fig.update_layout(title=f"Gap by {by.replace('_', ' ')} (A − B)", yaxis_title=value, xaxis_title=by)
    if by == "turn_index":
        fig.update_xaxes(type="linear")
    return apply_style(fig, style)


# --- dialogue viewer ------------------------------------------------------------------------------


def turn_strip(turns: pd.DataFrame, *, current: int | None = None, style: str = "screen") -> go.Figure:
    """One marker per turn of a dialogue: errors as bars (new vs inherited), the current turn outlined."""
    fig = go.Figure()
    if not len(turns):
        return _empty("no turns", style)
    for origin, column in (("new", "n_new"), ("inherited", "n_inherited")):
        fig.add_bar(
            name=f"{origin} errors",
            x=turns["turn_index"],
            y=turns[column],
            marker={"color": ORIGIN_COLOURS[origin], "pattern": {"shape": ORIGIN_PATTERNS[origin]}},
            customdata=np.stack([turns["status"].astype(str).to_numpy()], axis=-1),
            hovertemplate=f"turn %{{x}}: %{{customdata[0]}}<br>{origin}: %{{y}}<extra></extra>",
        )
    correct = turns[turns["joint_correct"]]
    fig.add_scatter(
        name="✓ jointly correct",
        x=correct["turn_index"],
        y=np.zeros(len(correct)),
        mode="markers",
        marker={"symbol": "circle", "color": Outcome.CORRECT.colour, "size": 10},
        hovertemplate="turn %{x}: ✓ correct<extra></extra>",
    )
    if current is not None:
        fig.add_vrect(
            x0=current - 0.5, x1=current + 0.5, line_width=2, line_color="#000000", fillcolor="rgba(0,0,0,0.05)"
        )
    fig.update_layout(
        barmode="stack", title="Errors per turn (click a turn to open it)", xaxis_title="turn", yaxis_title="errors"
    )
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(
        rangemode="tozero", range=[-0.3, max(1.0, float((turns["n_new"] + turns["n_inherited"]).max()) + 0.5)]
    )
    return apply_style(fig, style, height=260)


# --- paired comparison (issue 17; frames of `analysis.views.significance_table` / `pair_deltas`) --------


def significance_heatmap(table: pd.DataFrame, *, style: str = "screen") -> go.Figure:
    """Runs x runs: the overall delta row run − column run where it is significant after Holm's
    correction (blank otherwise), its interval and p on hover; a caption line says how p was corrected."""
    if not len(table):
        return _empty("fewer than two runs on the same gold", style)
    runs = list(table.attrs.get("runs") or dict.fromkeys([*table["row"], *table["column"]]))
    cell = table.set_index(["row", "column"])
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    hover: list[list[str]] = []
    for row in runs:
        z_row: list[float | None] = []
        text_row: list[str] = []
        hover_row: list[str] = []
        for column in runs:
            if row == column or (row, column) not in cell.index:
                z_row.append(None)
                text_row.append("")
                hover_row.append("")
                continue
            r = cell.loc[(row, column)]
            significant = bool(r["significant"])
            z_row.append(float(r["delta"]) if significant else None)
            text_row.append(f"{r['delta']:+.3f}" if significant else "n.s.")
            hover_row.append(
                f"{plotly_text(row)} − {plotly_text(column)}: {r['delta']:+.4f} "
                f"[{r['low']:+.4f}, {r['high']:+.4f}]<br>{r['p_text']}; {r['p_holm_text']}"
                + ("" if significant else "<br>not significant after Holm")
            )
        z.append(z_row)
        text.append(text_row)
        hover.append(hover_row)
    limit = float(np.nanmax(np.abs(table["delta"].to_numpy(float)))) if len(table) else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=runs,
            y=runs,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=DIVERGING_SCALE,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            colorbar={"title": "Δ"},
        )
    )
    metric = str(table["metric"].iloc[0])
    pairs = int(table["family_size"].iloc[0])
    fig.update_layout(
        title={
            "text": f"Significant differences in {_label(metric)} (row − column)",
            "subtitle": {"text": f"paired bootstrap over dialogues, Holm over {pairs} pairs"},
        }
    )
    fig.update_yaxes(autorange="reversed")
    apply_style(fig, style, height=max(360, 60 * len(runs) + 160))
    fig.update_layout(margin={"t": 90})
    return fig


def delta_bar(deltas: pd.DataFrame, *, top: int = 40, style: str = "screen") -> go.Figure:
    """Per domain or slot: the delta b − a with its paired 95% interval as error bars; significant
    deltas (Holm over the groups) solid, the others pale. Largest |delta| first (up to `top`)."""
    frame = deltas.dropna(subset=["delta"]) if len(deltas) else deltas
    if not len(frame):
        return _empty("no delta to show", style)
    frame = frame.reindex(frame["delta"].abs().sort_values(ascending=False).index).head(top)
    frame = frame.iloc[::-1]  # largest at the top of a horizontal bar chart
    significant = frame["significant"].to_numpy(dtype=bool)
    colours = np.where(frame["delta"].to_numpy(float) >= 0, OKABE_ITO[0], OKABE_ITO[5])
    fig = go.Figure(
        go.Bar(
            y=frame["group"].astype(str),
            x=frame["delta"],
            orientation="h",
            marker={"color": colours, "opacity": np.where(significant, 1.0, 0.35)},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (frame["high"] - frame["delta"]).to_numpy(float),
                "arrayminus": (frame["delta"] - frame["low"]).to_numpy(float),
            },
            customdata=np.stack(
                [
                    frame["low"].to_numpy(float),
                    frame["high"].to_numpy(float),
                    frame["p_holm_text"].astype(str).to_numpy(),
                    np.where(significant, "significant", "not significant").astype(object),
                ],
                axis=-1,
            ),
            hovertemplate=(
                "<b>%{y}</b><br>Δ %{x:+.4f} [%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]"
                "<br>%{customdata[2]} (%{customdata[3]})<extra></extra>"
            ),
        )
    )
    first = frame.iloc[0]
    scope = str(first["scope"])
    fig.update_layout(
        title={
            "text": f"{_label(str(first['metric']))} per {scope}: {first['b']} − {first['a']}",
            "subtitle": {"text": "95% paired interval; pale: not significant after Holm over the groups"},
        },
        xaxis_title="delta (b − a)",
    )
    fig.add_vline(x=0, line_width=1, line_color="#666")
    apply_style(fig, style, height=max(320, 22 * len(frame) + 160))
    fig.update_layout(margin={"t": 90})
    return fig


LANGUAGE_METRIC_NAMES = {"jga": "JGA", "slot_f1": "slot F1"}


def language_labels(matrix: pd.DataFrame) -> dict[str, str]:
    """Each run's row label in a language matrix: its language, with the run id when two runs share one.

    >>> language_labels(pd.DataFrame({"run_id": ["a", "b", "c"], "language": ["en", "zh", "zh"]}))
    {'a': 'en', 'b': 'zh (b)', 'c': 'zh (c)'}
    """
    runs = matrix[["run_id", "language"]].drop_duplicates("run_id")
    twice = runs["language"].duplicated(keep=False)
    labels = np.where(twice, runs["language"].astype(str) + " (" + runs["run_id"].astype(str) + ")", runs["language"])
    return {str(run): str(label) for run, label in zip(runs["run_id"], labels, strict=True)}


def language_heatmap(
    matrix: pd.DataFrame, *, by: str, pivot: str, metric: str = "jga", style: str = "screen"
) -> go.Figure:
    """Languages (columns) x domains or slots in the pivot's names (rows) from
    `analysis.crosslingual.language_matrix`: each cell's colour is the gap `metric` − the pivot's (red:
    below the pivot), its text the value and the gap; hover adds the run's own name and what the value
    counts. Blank where a language has no counterpart or no turn."""
    if not len(matrix):
        return _empty(f"no {by} to compare", style)
    labels = language_labels(matrix)
    runs = list(dict.fromkeys(matrix["run_id"].astype(str)))
    keys = list(dict.fromkeys(matrix.sort_values(["domain", "key"], kind="stable")["key"].astype(str)))
    gap = f"{metric}_gap"
    name = LANGUAGE_METRIC_NAMES.get(metric, _label(metric))
    count = "n_turns" if metric == "jga" else "support"

    def grid(column: str) -> np.ndarray:
        table = matrix.pivot_table(index="key", columns="run_id", values=column, aggfunc="first", dropna=False)
        return table.reindex(index=keys, columns=runs).to_numpy(dtype=float)

    values, gaps, counts = grid(metric), grid(gap), grid(count)
    gaps_shown = np.where(np.asarray(runs) == pivot, np.nan, gaps)  # the pivot's own gap is 0 by definition
    own = matrix.pivot_table(index="key", columns="run_id", values="own", aggfunc="first").reindex(
        index=keys, columns=runs
    )
    own_text = own.astype(object).where(own.notna(), "(no counterpart)").to_numpy()
    text = np.where(
        np.isnan(values),
        "",
        np.char.add(
            np.vectorize(lambda v: f"{v:.3f}")(np.nan_to_num(values)),
            np.vectorize(lambda g: "" if np.isnan(g) else f" ({g:+.3f})")(gaps_shown),
        ),
    )
    what = "turns" if metric == "jga" else "gold triples"
    hover = np.vectorize(
        lambda own_name, v, g, n: (
            f"{plotly_text(str(own_name))}<br>{name}: "
            + ("n/a" if np.isnan(v) else f"{v:.4f}")
            + ("" if np.isnan(g) else f"<br>gap to the pivot: {g:+.4f}")
            + f"<br>{0 if np.isnan(n) else int(n):,} {what}"
        ),
        otypes=[object],
    )(own_text, values, gaps, counts)
    limit = float(np.nanmax(np.abs(gaps))) if np.isfinite(gaps).any() else 0.0
    limit = max(limit, 0.01)
    x = [f"{labels[r]} (pivot)" if r == pivot else labels[r] for r in runs]
    fig = go.Figure(
        go.Heatmap(
            z=gaps,
            x=x,
            y=keys,
            text=text,
            texttemplate="%{text}" if len(keys) * len(runs) <= 600 else None,
            customdata=hover,
            hovertemplate="<b>%{y}</b> · %{x}<br>%{customdata}<extra></extra>",
            colorscale=DIVERGING_SCALE,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            colorbar={"title": "gap"},
        )
    )
    fig.update_layout(
        title={
            "text": f"{name} by {by} and language",
            "subtitle": {"text": f"colour: gap to the pivot {plotly_text(labels.get(pivot, pivot))} (value − pivot)"},
        },
        xaxis_title="language",
        yaxis_title=by,
    )
    fig.update_yaxes(autorange="reversed")
    apply_style(fig, style, height=max(360, 22 * len(keys) + 180))
    if len(keys) > 20:  # a tall matrix (slots): the languages on top, where the reader starts
        fig.update_xaxes(side="top")
        fig.update_layout(margin={"t": 150})
    else:
        fig.update_layout(margin={"t": 90})
    return fig
