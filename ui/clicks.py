"""Clickable heatmap cells: Streamlit returns no selection for a click on a Plotly heatmap (streamlit/streamlit
issues 8760 and 15042: the rerun comes with an empty selection), so a cell is made clickable by an invisible
marker at its centre, a scatter point Streamlit does return (its `x` and `y` are the cell's column and row)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import plotly.graph_objects as go


def numbers(values: Any) -> np.ndarray:
    """A Plotly array as numbers: plain lists, tuples, numpy arrays or typed binary (`bdata`)."""
    if isinstance(values, dict) and "bdata" in values:
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        shape = values.get("shape")
        if isinstance(shape, str):  # "12, 14"
            shape = [int(n) for n in shape.split(",")]
        return (flat.reshape(shape) if shape else flat).astype(float)
    return np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)


def clickable_cells(fig: go.Figure) -> go.Figure:
    """Add over each heatmap of `fig` one transparent marker per filled cell (a blank cell, never counted, gets
    none), with the heatmap's hover text, so a click on a cell selects a point whose `x`/`y` name that cell.
    The overlay is unnamed, so `views.chart_pick` reads a run x value heatmap's run from the row (`y`)."""
    for trace in list(fig.data):
        if trace.type != "heatmap" or trace.z is None or trace.x is None or trace.y is None:
            continue
        z = numbers(trace.z)
        rows, columns = np.nonzero(~np.isnan(z))
        if not len(rows):
            continue
        xs, ys = list(trace.x), list(trace.y)
        # customdata per point: the cell's value, then the heatmap's own customdata of that cell (if any)
        data = [z[rows, columns]]
        if trace.customdata is not None:
            data.append(numbers(trace.customdata)[rows, columns])
        template = trace.hovertemplate or "%{y} · %{x}: %{z}<extra></extra>"
        for old, new in (("%{customdata}", "%{customdata[1]}"), ("%{customdata:", "%{customdata[1]:")):
            template = template.replace(old, new)
        template = template.replace("%{z}", "%{customdata[0]}").replace("%{z:", "%{customdata[0]:")
        fig.add_scatter(
            x=[xs[c] for c in columns],
            y=[ys[r] for r in rows],
            customdata=np.stack(data, axis=-1),
            mode="markers",
            marker={"size": 18, "opacity": 0, "color": "#000000"},
            hovertemplate=template,
            showlegend=False,
            name="",
        )
    return fig
