"""The Domains page's figures: JGA per domain or attribute, as grouped bars or, beyond four runs, a heatmap."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.escaping import plotly_text
from analysis.figures.style import _colours, apply_style, empty_figure
from analysis.palette import (
    SCORE_SCALE,
)
from analysis.wording import label


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
        return empty_figure(f"no {by} to show", style)
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
    fig.update_layout(barmode="group", title=title or f"JGA by {label(by)}", yaxis_title="JGA", xaxis_title=label(by))
    fig.update_yaxes(range=[0, 1])
    return apply_style(fig, style)


def jga_heatmap(
    frame: pd.DataFrame, *, by: str, title: str | None = None, highlight: str | None = None, style: str = "screen"
) -> go.Figure:
    """JGA per run (rows) and value of `by` (columns); blank where a run has no such value; the row of
    `highlight` (the run being looked at) outlined."""
    if not len(frame):
        return empty_figure(f"no {by} to show", style)
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
    fig.update_layout(title=title or f"JGA by {label(by)}", xaxis_title=label(by))
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
