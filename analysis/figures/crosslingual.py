"""The Cross-lingual page's figures: the agreement matrix of runs A and B, the gaps, and the language matrix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.escaping import plotly_text
from analysis.figures.style import _blank_zeros, apply_style, empty_figure, metric_label
from analysis.palette import (
    COUNT_SCALE,
    DIVERGING_SCALE,
    OKABE_ITO,
)
from analysis.wording import label

AGREEMENT_NAMES = {
    "both_correct": "both correct",
    "only_a": "only A correct",
    "only_b": "only B correct",
    "both_wrong": "both wrong",
}


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
    """Cross-lingual gap (A − B) per slot, domain or turn depth; positive means A is better. With the
    support columns of `crosslingual_gaps(..., support=True)`: the 95% paired interval as error bars, the
    dialogues where the sides differ in the hover, and the gaps too thin to test pale, without interval
    (the tested ones first)."""
    if not len(gaps) or value not in gaps.columns:
        return empty_figure("nothing to compare", style)
    label_col = by if by in gaps.columns else gaps.columns[0]
    frame = gaps.dropna(subset=[value])
    supported = value == "gap" and "tested" in frame.columns
    if by != "turn_index":
        tested = frame["tested"].astype(bool) if supported else pd.Series(True, index=frame.index)
        order = pd.DataFrame({"tested": tested, "size": frame[value].abs()})
        frame = frame.reindex(order.sort_values(["tested", "size"], ascending=False, kind="stable").index).head(top)
    shown = [c for c in gaps.columns if c not in (label_col, value, "low", "high", "tested", "n_turns_differ")]
    support = ["n_dialogues_differ", "n_dialogues"] if supported else []
    extra = [c for c in shown if c not in support][:4] + support
    custom = np.stack([frame[c].astype(str).to_numpy() for c in extra], axis=-1) if extra else None
    hover = "".join(f"<br>{plotly_text(label(c))}: %{{customdata[{i}]}}" for i, c in enumerate(extra))
    colours = np.where(frame[value].to_numpy(float) >= 0, OKABE_ITO[0], OKABE_ITO[5])
    error = None
    opacity: Any = 1.0
    if supported:
        error = {
            "type": "data",
            "symmetric": False,
            "array": (frame["high"] - frame[value]).to_numpy(float),
            "arrayminus": (frame[value] - frame["low"]).to_numpy(float),
        }
        opacity = np.where(frame["tested"].to_numpy(bool), 1.0, 0.35)
    fig = go.Figure(
        go.Bar(
            x=frame[label_col].astype(str),
            y=frame[value],
            marker={"color": colours, "opacity": opacity},
            error_y=error,
            customdata=custom,
            hovertemplate=f"<b>%{{x}}</b><br>{plotly_text(label(value))}: %{{y:.4f}}{hover}<extra></extra>",
        )
    )
    title: dict[str, Any] = {"text": f"Gap by {label(by)} (A − B)"}
    if supported:
        title["subtitle"] = {
            "text": "95% paired interval over dialogues; pale, no interval: the sides differ in fewer than "
            f"{gaps.attrs.get('min_support', 'enough')} dialogues"
        }
    fig.update_layout(title=title, yaxis_title=label(value), xaxis_title=label(by))
    if by == "turn_index":
        fig.update_xaxes(type="linear")
    return apply_style(fig, style)


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
        return empty_figure(f"no {by} to compare", style)
    labels = language_labels(matrix)
    runs = list(dict.fromkeys(matrix["run_id"].astype(str)))
    keys = list(dict.fromkeys(matrix.sort_values(["domain", "key"], kind="stable")["key"].astype(str)))
    gap = f"{metric}_gap"
    name = LANGUAGE_METRIC_NAMES.get(metric, metric_label(metric))
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
        yaxis_title=label(by),
    )
    fig.update_yaxes(autorange="reversed")
    apply_style(fig, style, height=max(360, 22 * len(keys) + 180))
    if len(keys) > 20:  # a tall matrix (slots): the languages on top, where the reader starts
        fig.update_xaxes(side="top")
        fig.update_layout(margin={"t": 150})
    else:
        fig.update_layout(margin={"t": 90})
    return fig
