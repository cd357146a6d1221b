"""The Slots page's figures: per-slot F1, the outcome mix (also the Domains page's) and the value confusions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.style import _blank_zeros, apply_style, empty_figure
from analysis.outcomes import Outcome
from analysis.palette import (
    COUNT_SCALE,
    OKABE_ITO,
)


def slot_f1_bar(
    table: pd.DataFrame, *, run_id: str = "", colour: str = OKABE_ITO[0], top: int = 40, style: str = "screen"
) -> go.Figure:
    """Per-slot F1 as horizontal bars (worst at the top, the `top` worst slots), with precision,
    recall and support on hover."""
    if not len(table):
        return empty_figure("no slots", style)
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
        return empty_figure("no errors", style)
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


def confusion_heatmap(confusions: pd.DataFrame, *, title: str = "Gold → predicted", style: str = "screen") -> go.Figure:
    """Gold values (rows) against predicted values (columns), counts of the top confusions. The colour
    scale starts at 0; a pair never confused is a blank cell, a pair confused once already coloured."""
    if not len(confusions):
        return empty_figure("no errors on this slot", style)
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
