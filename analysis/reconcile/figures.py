"""Convention reconciliation (`analysis.reconcile.core`) -> Plotly figures and display tables: metrics
per convention, the causes of flipped turns and the responsible slots. Pure: frames in, figure or frame out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures import apply_style, empty_figure
from analysis.palette import OKABE_ITO
from analysis.reconcile.core import CAUSE_LABELS, CAUSES, METRIC_LABELS

__all__ = ["cause_bar", "convention_bar", "flips_table", "responsible_table"]


def convention_bar(
    table: pd.DataFrame, *, metrics: Sequence[str] = ("jga", "slot_f1_micro"), style: str = "screen"
) -> go.Figure:
    """Grouped bars: x = convention (in the order given), one bar per metric; `table` is
    `Reconciliation.table()`.

    >>> table = pd.DataFrame({"convention": ["exact", "mwzeval"], "jga": [0.5, 0.6], "slot_f1_micro": [0.8, 0.9]})
    >>> [t.name for t in convention_bar(table).data]
    ['JGA', 'Slot F1 (micro)']
    >>> convention_bar(table.assign(jga=[0.5, float("nan")])).data[0].text  # a convention whose scorer reads no gold
    ('0.5000', 'n/a')
    """
    unknown = [m for m in metrics if m not in table.columns]
    if unknown:
        raise ValueError(f"metrics {unknown} are not in the table; columns: {list(table.columns)}")
    fig = go.Figure()
    for i, metric in enumerate(metrics):
        label = METRIC_LABELS.get(metric, metric)
        fig.add_bar(
            name=label,
            x=table["convention"].astype("str"),
            y=table[metric].to_numpy(dtype=float),
            marker_color=OKABE_ITO[i % len(OKABE_ITO)],
            text=["n/a" if np.isnan(v) else f"{v:.4f}" for v in table[metric].to_numpy(dtype=float)],
            textposition="outside",
            hovertemplate="%{x}: %{y:.4f}<extra>" + label + "</extra>",
        )
    fig.update_layout(
        barmode="group",
        title="One run under each convention",
        xaxis_title="convention",
        yaxis={"title": "score", "range": [0, 1.1]},
    )
    return apply_style(fig, style)


def cause_bar(causes: Mapping[str, int], *, a: str, b: str, style: str = "screen") -> go.Figure:
    """Responsible slots per cause for the pair (a, b), causes in attribution order; `causes` is
    `Reconciliation.causes(a, b)`.

    >>> list(cause_bar({"normaliser": 3, "dontcare": 1}, a="exact", b="trade").data[0].y)
    [1, 3]
    """
    present = [c for c in CAUSES if causes.get(c)]
    if not present:
        return empty_figure(f"No turn flips between {a} and {b}.", style)
    labels = [CAUSE_LABELS[c] for c in present]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[int(causes[c]) for c in present],
            marker_color=OKABE_ITO[0],
            hovertemplate="%{x}: %{y} responsible slot(s)<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Why turns flip between {a} and {b}: responsible slots per cause",
        xaxis_title="cause (the one switch that alone gives b's result)",
        yaxis_title="responsible slots",
    )
    return apply_style(fig, style)


def responsible_table(responsible: pd.DataFrame, *, cause: str | None = None) -> pd.DataFrame:
    """`Reconciliation.responsible(a, b)` grouped by cause for display: rows ordered by cause (in
    attribution order) then turn, `cause` as people read it (`cause_id`: one of `CAUSES`) and `slot_name`
    (`domain-slot`); `cause` keeps the rows of one cause.
    """
    if cause is not None and cause not in CAUSES:
        raise ValueError(f"cause has to be one of {', '.join(CAUSES)}, got {cause!r}")
    rows = responsible if cause is None else responsible[responsible["cause"] == cause]
    order = rows["cause"].map({c: i for i, c in enumerate(CAUSES)})
    rows = rows.assign(_order=order.to_numpy()).sort_values(["_order", "tid"], kind="stable")
    return pd.DataFrame(
        {
            "cause": rows["cause"].map(CAUSE_LABELS).astype("str"),
            "dialogue_id": rows["dialogue_id"].astype("str"),
            "turn_index": rows["turn_index"].astype("int64"),
            "slot_name": rows["domain"].astype("str") + "-" + rows["slot"].astype("str"),
            "gold": rows["gold"].astype("str"),
            "pred": rows["pred"].astype("str"),
            "outcome_a": rows["outcome_a"].astype("str"),
            "outcome_b": rows["outcome_b"].astype("str"),
            "cause_id": rows["cause"].astype("str"),
            "domain": rows["domain"].astype("str"),
            "slot": rows["slot"].astype("str"),
        }
    ).reset_index(drop=True)


def flips_table(flips: pd.DataFrame) -> pd.DataFrame:
    """`Reconciliation.flips(a, b)` for display: `causes` named as the cause chart and the responsible table
    name them (`CAUSE_LABELS`, joined by `; `), one name per cause; `cause_ids` keeps the ids.

    >>> flips_table(pd.DataFrame({"causes": ["normaliser, dontcare", ""]}))["causes"].tolist()
    ['value normalisation; dontcare policy', '']
    """
    if "causes" not in flips.columns:
        return flips
    ids = flips["causes"].fillna("").astype("str")
    labels = {ids_: "; ".join(CAUSE_LABELS.get(c, c) for c in ids_.split(", ") if c) for ids_ in ids.unique()}
    return flips.assign(causes=ids.map(labels).to_numpy(), cause_ids=ids.to_numpy())
