"""The Turn depth page's figures: JGA by depth (bands, highlight, merged traces for many runs), the
compounding curve, inherited against new errors, and where dialogues first go wrong."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.escaping import literal_text, plotly_text
from analysis.figures.style import (
    ORIGIN_COLOURS,
    ORIGIN_PATTERNS,
    _blank_zeros,
    _by_run,
    _colours,
    apply_style,
    empty_figure,
)
from analysis.palette import (
    COUNT_SCALE,
    MUTED_OPACITY,
    rgba,
)

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
        return empty_figure("no turns", style)
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
        return empty_figure("the two runs share no turns", style)
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
        return empty_figure("no errors", style)
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
        return empty_figure("no dialogues", style)
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
