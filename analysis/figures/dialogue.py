"""The Dialogue viewer's figure: the dialogue's turns as a strip of their errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.style import ORIGIN_COLOURS, ORIGIN_PATTERNS, apply_style, empty_figure
from analysis.outcomes import Outcome


def turn_strip(turns: pd.DataFrame, *, current: int | None = None, style: str = "screen") -> go.Figure:
    """One marker per turn of a dialogue: errors as bars (new vs inherited), the current turn outlined."""
    fig = go.Figure()
    if not len(turns):
        return empty_figure("no turns", style)
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
