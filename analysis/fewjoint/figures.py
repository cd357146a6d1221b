"""FewJoint result frames -> Plotly figures and display tables (pure: data in, figure out, no Streamlit).

Every builder takes frames of ``analysis.fewjoint.scoring`` (a ``FewJointResult`` or its parts) and returns a
``go.Figure`` -- or, for ``tag_diff_table``, a ``pd.DataFrame`` -- so the CLI can export exactly what the
dashboard shows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.fewjoint.chunks import conlleval_chunks
from analysis.fewjoint.scoring import METRICS, FewJointResult
from analysis.palette import CATEGORICAL, COUNT_SCALE, OKABE_ITO
from analysis.wording import label

ERROR_BAR = {"type": "data", "visible": True, "color": "#444444", "thickness": 1.2, "width": 3}

__all__ = [
    "breakdown_bar",
    "intent_confusion_heatmap",
    "leaderboard_bar",
    "slot_type_prf_bar",
    "tag_diff_table",
]

_LABELS = {
    "intent_accuracy": "intent accuracy",
    "slot_f1": "slot F1",
    "sentence_accuracy": "sentence accuracy",
    "precision": "precision",
    "recall": "recall",
    "f1": "F1",
}


def _shots_label(shots: object) -> str:
    return "K unknown" if shots is None or pd.isna(shots) else f"{int(shots)}-shot"  # type: ignore[call-overload]


def leaderboard_bar(leaderboard: pd.DataFrame, *, metric: str = "sentence_accuracy") -> go.Figure:
    """Grouped bars of one metric: x = shot setting, one colour per system, error bars = std over seeds.

    ``leaderboard`` is ``fewjoint_leaderboard(results)`` (system, shots, metric, mean, std, n_seeds).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    rows = leaderboard.loc[leaderboard["metric"] == metric].copy()
    rows["shots_label"] = [_shots_label(s) for s in rows["shots"]]
    order = rows.assign(k=rows["shots"].astype("Float64").fillna(np.inf)).sort_values("k")["shots_label"].unique()
    fig = go.Figure()
    mixed = rows["averaging"].nunique() > 1
    for i, ((system, averaging), part) in enumerate(rows.groupby(["system", "averaging"], sort=True)):
        fig.add_bar(
            name=f"{system} ({averaging})" if mixed else str(system),
            x=part["shots_label"],
            y=part["mean"],
            marker_color=CATEGORICAL[i % len(CATEGORICAL)],
            error_y=ERROR_BAR | {"array": part["std"].fillna(0).to_numpy()},
            customdata=np.stack([part["std"].to_numpy(dtype=float), part["n_seeds"].to_numpy()], axis=-1),
            hovertemplate="%{x}: %{y:.4f} ± %{customdata[0]:.4f} (sample std over %{customdata[1]} seeds)"
            "<extra>%{fullData.name}</extra>",
        )
    averagings = ", ".join(sorted(rows["averaging"].astype(str).unique()))
    fig.update_layout(
        colorway=list(OKABE_ITO),  # the one palette (analysis.palette), not Plotly's default colours
        barmode="group",
        title=f"FewJoint leaderboard: {_LABELS[metric]} (mean ± std over seeds; averaging: {averagings})",
        xaxis={"title": "shot setting", "categoryorder": "array", "categoryarray": list(order)},
        yaxis={"title": _LABELS[metric], "range": [0, 1.05]},
        legend_title_text="system",
    )
    return fig


def breakdown_bar(
    result: FewJointResult,
    *,
    by: str = "domain",
    metric: str = "sentence_accuracy",
    domain: str | None = None,
) -> go.Figure:
    """Bars of one metric per domain (``by="domain"``) or per gold intent (``by="intent"``), mean ± std
    over seeds; ``domain`` restricts the intent view to one domain."""
    if by not in ("domain", "intent"):
        raise ValueError(f"by must be 'domain' or 'intent', got {by!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    frame = result.per_domain if by == "domain" else result.per_intent
    if domain is not None:
        frame = frame.loc[frame["domain"] == domain]
    key = ["domain"] if by == "domain" else ["domain", "gold_intent"]
    stats = (
        frame.groupby(key, observed=True, sort=True)
        .agg(mean=(metric, "mean"), std=(metric, lambda v: v.std(ddof=1)), n_queries=("n_queries", "first"))
        .reset_index()
    )
    labels = (
        stats["domain"] if by == "domain" else stats["domain"].astype(str) + " / " + stats["gold_intent"].astype(str)
    )
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=stats["mean"],
            marker_color=OKABE_ITO[0],
            error_y=ERROR_BAR | {"array": stats["std"].fillna(0).to_numpy()},
            customdata=np.stack([stats["std"].to_numpy(dtype=float), stats["n_queries"].to_numpy()], axis=-1),
            hovertemplate="%{x}: %{y:.4f} ± %{customdata[0]:.4f}, %{customdata[1]} queries<extra></extra>",
        )
    )
    fig.update_layout(
        colorway=list(OKABE_ITO),  # the one palette (analysis.palette), not Plotly's default colours
        title=f"{result.system}: {_LABELS[metric]} per {by} (mean ± std over {len(result.seeds)} seeds, "
        f"averaging: {result.averaging})",
        xaxis_title=label(by),
        yaxis={"title": _LABELS[metric], "range": [0, 1.05]},
    )
    return fig


def intent_confusion_heatmap(
    result: FewJointResult, *, domain: str | None = None, seed: str | None = None, normalize: bool = True
) -> go.Figure:
    """Gold intent (rows) x predicted intent (columns), summed over seeds unless ``seed`` is given;
    ``normalize`` divides each row by its total (so the diagonal is per-intent accuracy)."""
    confusion = result.confusion
    if domain is not None:
        confusion = confusion.loc[confusion["domain"] == domain]
    if seed is not None:
        confusion = confusion.loc[confusion["seed"].astype(str) == str(seed)]
    matrix = confusion.pivot_table(
        index="gold_intent", columns="pred_intent", values="count", aggfunc="sum", fill_value=0, observed=True
    )
    labels = sorted(set(matrix.index) | set(matrix.columns), key=lambda x: (x == "<missing>", x))
    matrix = matrix.reindex(index=[x for x in labels if x in matrix.index], columns=labels, fill_value=0)
    values = matrix.to_numpy(dtype=float)
    if normalize:
        totals = values.sum(axis=1, keepdims=True)
        values = np.divide(values, totals, out=np.full_like(values, np.nan), where=totals > 0)
    counts = matrix.to_numpy(dtype=float)
    shown = values.astype(object)
    shown[counts == 0] = None  # a pair never seen is a blank cell; the first step of the scale is coloured
    fig = go.Figure(
        go.Heatmap(
            z=shown,
            x=list(matrix.columns),
            y=list(matrix.index),
            customdata=matrix.to_numpy(),
            zmin=0,
            zmax=1 if normalize else max(1.0, float(np.nanmax(values, initial=0))),
            colorscale=COUNT_SCALE,
            colorbar={"title": "share of gold" if normalize else "queries"},
            hoverongaps=False,
            hovertemplate="gold %{y}<br>pred %{x}<br>%{z:.3f} (%{customdata} queries)<extra></extra>",
        )
    )
    scope = f"domain {domain}" if domain else "all domains"
    seeds = f"seed {seed}" if seed is not None else f"{len(result.seeds)} seeds summed"
    fig.update_layout(
        colorway=list(OKABE_ITO),  # the one palette (analysis.palette), not Plotly's default colours
        title=f"{result.system}: intent confusion ({scope}, {seeds}" + (", row-normalised)" if normalize else ")"),
        xaxis_title="predicted intent",
        yaxis={"title": "gold intent", "autorange": "reversed"},
    )
    return fig


def slot_type_prf_bar(result: FewJointResult, *, top: int | None = None) -> go.Figure:
    """Precision, recall and F1 per slot type (micro over queries, mean over seeds), by gold support."""
    stats = (
        result.per_slot_type.groupby("slot_type", observed=True, sort=True)
        .agg(
            precision=("precision", "mean"),
            recall=("recall", "mean"),
            f1=("f1", "mean"),
            support=("support", "first"),
        )
        .reset_index()
        .sort_values(["support", "slot_type"], ascending=[False, True])
    )
    if top is not None:
        stats = stats.head(top)
    fig = go.Figure()
    for i, metric in enumerate(("precision", "recall", "f1")):
        fig.add_bar(
            name=_LABELS[metric],
            marker_color=OKABE_ITO[i],
            x=stats["slot_type"],
            y=stats[metric],
            customdata=stats["support"],
            hovertemplate="%{x}: %{y:.4f} (%{customdata} gold chunks)<extra>" + _LABELS[metric] + "</extra>",
        )
    fig.update_layout(
        colorway=list(OKABE_ITO),  # the one palette (analysis.palette), not Plotly's default colours
        barmode="group",
        title=f"{result.system}: slot P/R/F1 per type (conlleval chunks, mean over {len(result.seeds)} seeds)",
        xaxis_title="slot type (by gold support)",
        yaxis={"title": "score", "range": [0, 1.05]},
    )
    return fig


def _boundary_markers(tags: Sequence[str]) -> list[str]:
    marks = [""] * len(tags)
    for kind, start, end in conlleval_chunks(tags):
        if start == end:
            marks[start] = f"[{kind}]"
        else:
            marks[start] = f"[{kind}"
            marks[end] = f"{kind}]"
            for i in range(start + 1, end):
                marks[i] = "·"
    return marks


def tag_diff_table(
    result: FewJointResult, *, domain: str, episode: int, query_index: int, seed: str | None = None
) -> pd.DataFrame:
    """Token-level tag diff of one query: ``token, gold_tag, pred_tag, status, gold_chunk, pred_chunk``.

    ``status`` is ``correct``, ``missed`` (gold slot, predicted O), ``spurious`` (gold O, predicted slot)
    or ``wrong_tag``; ``*_chunk`` mark conlleval chunk boundaries (``[type`` opens, ``type]`` closes,
    ``[type]`` is a one-token chunk, ``·`` inside). ``seed`` defaults to the first seed.
    """
    seed = str(result.seeds[0]) if seed is None else str(seed)
    queries = result.queries
    row = queries.loc[
        (queries["seed"].astype(str) == seed)
        & (queries["domain"] == domain)
        & (queries["episode"] == episode)
        & (queries["query_index"] == query_index)
    ]
    if row.empty:
        raise KeyError(f"no query {domain}/{episode} #{query_index} for seed {seed!r}")
    query = row.iloc[0]
    tokens = list(query["tokens"])
    gold = list(query["gold_tags"])
    pred = list(query["pred_tags"]) if isinstance(query["pred_tags"], list) else []
    if len(pred) != len(gold):  # missing prediction or wrong token count: show what there is
        pred = (pred + [""] * len(gold))[: len(gold)]
    status = [
        "correct" if g == p else "missed" if p in ("O", "") else "spurious" if g == "O" else "wrong_tag"
        for g, p in zip(gold, pred, strict=True)
    ]
    return pd.DataFrame(
        {
            "token": tokens,
            "gold_tag": gold,
            "pred_tag": pred,
            "status": status,
            "gold_chunk": _boundary_markers(gold),
            "pred_chunk": _boundary_markers([p or "O" for p in pred]),
        }
    )
