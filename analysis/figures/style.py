"""What every figure shares: the named styles (`apply_style`, screen or paper) and their trimmed Plotly
templates, one fixed colour per run, outcome and origin colours, and the empty-figure message."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from analysis.escaping import plain_figure_text
from analysis.outcomes import Outcome
from analysis.palette import (
    CATEGORICAL,
    OKABE_ITO,
)
from analysis.suite import LABELS

# The palette lives in analysis.palette (Okabe-Ito, its tints, greys and three continuous scales).


OUTCOME_COLOURS = {o.key: o.colour for o in Outcome}


ORIGIN_COLOURS = {"new": "#D55E00", "inherited": "#56B4E9"}


ORIGIN_PATTERNS = {"new": "", "inherited": "/"}


STYLES: dict[str, dict[str, Any]] = {
    "screen": {
        "template": "plotly_white",
        "font": {"size": 13},
        "min_text": 11,  # px: Plotly shrinks bar and heatmap text to fit (down to 7 px), never below this here
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
    if spec.get("min_text"):
        least_legible(fig, spec["min_text"])
    return plain_figure_text(fig)


def least_legible(fig: go.Figure, size: int) -> go.Figure:
    """No text of `fig` drawn below `size` px: bar labels keep at least that size (`uniformtext`, shown even
    when they overflow their bar rather than shrunk to fit) and a heatmap's cell text gets that size instead of
    Plotly's automatic one, which shrinks it to the cell (about 7 px in a crowded matrix)."""
    fig.update_layout(uniformtext={"minsize": size, "mode": "show"})
    for trace in fig.data:
        if trace.type == "heatmap" and (trace.texttemplate or trace.text is not None):
            if trace.textfont.size is None or trace.textfont.size < size:
                trace.textfont.size = size
        elif trace.type in ("bar", "scatter") and trace.textfont.size is not None and trace.textfont.size < size:
            trace.textfont.size = size
    return fig


def _by_run(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each run's rows of `frame` (in frame order), split once: a mask per run costs a string comparison
    over the whole frame each time (0.4 s for 100 runs' lines)."""
    return {str(run): part for run, part in frame.groupby("run_id", sort=False)}


def _colours(runs: Sequence[str], colours: Mapping[str, str] | None) -> dict[str, str]:
    base = run_colours(runs)
    return {r: (colours or {}).get(r, base[r]) for r in runs}


def metric_label(metric: str) -> str:
    """A metric as figures name it: its registered label, else its name in words."""
    return LABELS.get(metric, metric.replace("_", " "))


def empty_figure(message: str, style: str) -> go.Figure:
    """A figure that says `message` where its chart would be (no data, nothing to compare, ...)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return apply_style(fig, style, height=200)


def _blank_zeros(values: Any) -> np.ndarray:
    """A count matrix with its zeros (and NaNs) as None: Plotly leaves those cells blank."""
    array = np.asarray(values, dtype=float)
    out = array.astype(object)
    out[(array == 0) | np.isnan(array)] = None
    return out
