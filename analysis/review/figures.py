"""Team-review results -> Plotly figures and display tables (pure: frames in, figure or frame out).

Reviewers' tags (`analysis.review.analysis`: tag counts, the review queue, disagreements between
reviewers). No Streamlit here, so the CLI can export what the dashboard shows. (Convention
reconciliation's figures are `analysis.reconcile.figures`.)
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.escaping import plotly_text
from analysis.figures import apply_style, empty_figure
from analysis.palette import tag_colours
from analysis.review.analysis import Agreement, TagAgreement
from analysis.review.items import DEFAULT_TAGS

__all__ = [
    "TURN_LEVEL",
    "confusion_heatmap",
    "disagreement_table",
    "queue_table",
    "reviewer_disagreement_table",
    "tag_agreement_table",
    "tag_counts_bar",
]

TURN_LEVEL = "(whole turn)"
_BY = ("domain", "slot")


def _joined(values: pd.Series, sep: str = "; ") -> pd.Series:
    """Tuples of strings -> one readable string per row (empty tuple: empty string)."""
    return pd.Series([sep.join(map(str, v)) for v in values], index=values.index, dtype="str")


def _group_labels(counts: pd.DataFrame, by: str) -> pd.Series:
    domain = counts["domain"].astype("str").fillna("")
    slot = counts["slot"].astype("str").fillna("")
    turn_level = slot.isin(["", "None", "nan"])
    label = domain if by == "domain" else domain.where(domain != "", "?") + "-" + slot
    return label.where(~turn_level, TURN_LEVEL)


def tag_counts_bar(counts: pd.DataFrame, *, by: str = "domain", top: int = 30, style: str = "screen") -> go.Figure:
    """Stacked bars of annotation counts per tag, one bar per domain (`by="domain"`) or per slot
    (`by="slot"`, labelled `domain-slot`); turn-level annotations form their own bar.

    `counts` is `analysis.review.analysis.tag_counts(store, by=("domain", "slot"))`; `top` keeps the groups
    with most annotations.

    >>> counts = pd.DataFrame({"domain": ["hotel", "hotel"], "slot": ["area", "name"],
    ...                        "tag": ["wrong value", "wrong value"], "n": [2, 1], "n_items": [2, 1]})
    >>> [[int(v) for v in t.y] for t in tag_counts_bar(counts).data]
    [[3]]
    """
    if by not in _BY:
        raise ValueError(f"by has to be one of {', '.join(_BY)}, got {by!r}")
    if counts.empty:
        return empty_figure("No annotations yet: tag error turns to see counts here.", style)
    frame = counts.assign(group=_group_labels(counts, by).to_numpy())
    sums = frame.groupby(["group", "tag"], sort=True, observed=True)["n"].sum().reset_index()
    order = sums.groupby("group", sort=True)["n"].sum().sort_values(ascending=False, kind="stable")
    groups = list(order.index[:top])
    tags = list(sums.groupby("tag", sort=True)["n"].sum().sort_values(ascending=False, kind="stable").index)
    fig = go.Figure()
    colours = tag_colours(tags, DEFAULT_TAGS)  # a tag keeps its colour whatever the counts; no two share one
    for tag in tags:
        part = sums[sums["tag"] == tag].set_index("group")["n"].reindex(groups)
        fig.add_bar(
            name=str(tag),
            x=groups,
            y=part.to_numpy(),
            marker_color=colours[tag],
            hovertemplate="%{x}<br>" + plotly_text(tag) + ": %{y} annotation(s)<extra></extra>",
        )
    shown = f"top {top} of {len(order)}" if len(order) > top else f"{len(order)}"
    fig.update_layout(
        barmode="stack",
        title=f"Tags given per {by} ({shown} {by}s, most annotated first)",
        xaxis={"title": "domain-slot" if by == "slot" else "domain", "categoryorder": "array", "categoryarray": groups},
        yaxis_title="annotations",
        legend_title_text="tag",
        showlegend=True,
    )
    return apply_style(fig, style)


def queue_table(queue: pd.DataFrame, *, limit: int | None = None) -> pd.DataFrame:
    """The review queue (`analysis.review.analysis.review_queue`) for display: `slot_name` (`domain-slot`),
    `gold` / `predicted` as written, tags and reviewers joined by `; `; an episode's span (`last_turn`,
    `n_turns`; a turn item: its own turn, 1); `error`, the outcome as read (a column of its own: a table
    with an `outcome` column gets a tint per cell, 0.3 s for 500 rows on every redraw); the item columns
    kept so a row can be turned back into an `Item`. `limit` keeps the first rows."""
    rows = queue if limit is None else queue.head(limit)
    turn = rows["turn_index"].astype("int64")
    return pd.DataFrame(
        {
            "run_id": rows["run_id"].astype("str"),
            "dataset": rows["dataset"].astype("str"),
            "dialogue_id": rows["dialogue_id"].astype("str"),
            "turn_index": turn,
            "last_turn": rows["last_turn"].astype("int64") if "last_turn" in rows.columns else turn,
            "n_turns": rows["n_turns"].astype("int64") if "n_turns" in rows.columns else turn * 0 + 1,
            "slot_name": rows["domain"].astype("str") + "-" + rows["slot"].astype("str"),
            "outcome": rows["outcome"].astype("str"),
            "error": rows["outcome"].astype("str").str.replace("_", " "),
            "gold": rows["gold_display"].astype("str").fillna("—"),
            "predicted": rows["pred_display"].astype("str").fillna("—"),
            "tags": _joined(rows["tags"]),
            "reviewers": _joined(rows["reviewers"], ", "),
            "domain": rows["domain"].astype("str"),
            "slot": rows["slot"].astype("str"),
            "item_key": rows["item_key"].astype("str"),
        }
    ).reset_index(drop=True)


def confusion_heatmap(counts: pd.DataFrame, *, unit: str = "episodes", style: str = "screen") -> go.Figure:
    """Gold (rows) against predicted (columns) values of review items, counted in `unit` (`episodes` or
    `turns`): `counts` is `analysis.review.analysis.confusion_counts`. The dashboard's count heatmap
    (`analysis.figures.confusion_heatmap`: scale from 0, an empty cell blank) with the unit in its colour
    bar and hover. A cell is (`row`, `predicted`) of one row of `counts`: the click-through looks it up there.

    >>> counts = pd.DataFrame({"domain": "hotel", "slot": "area", "gold": ["n", "s"], "predicted": "e",
    ...                        "n": [3, 1], "row": ["n", "s"]})
    >>> fig = confusion_heatmap(counts)
    >>> fig.data[0].colorbar.title.text, list(fig.data[0].y)
    ('episodes', ['n', 's'])
    """
    from analysis.figures import confusion_heatmap as count_heatmap

    if not len(counts):
        return empty_figure("No error in the queue: nothing to count.", style)
    frame = counts.rename(columns={"gold": "gold_value", "row": "gold"})
    what = "episodes" if unit == "episodes" else "error turns"
    fig = count_heatmap(frame, title=f"Gold → predicted in the queue ({what}, top {len(counts)} pairs)", style=style)
    fig.update_traces(
        colorbar={"title": {"text": what}},
        hovertemplate="gold: <b>%{y}</b><br>predicted: <b>%{x}</b><br>%{z:,} " + what + "<extra></extra>",
    )
    return fig


def disagreement_table(agreement: Agreement) -> pd.DataFrame:
    """The items two reviewers tagged differently, tag sets joined by `; ` for display."""
    rows = agreement.disagreements
    out = rows.drop(columns=["tags_a", "tags_b", "only_a", "only_b"]).copy()
    for column in ("tags_a", "tags_b", "only_a", "only_b"):
        out[column] = _joined(rows[column])
    return out.reset_index(drop=True)


def tag_agreement_table(result: TagAgreement) -> pd.DataFrame:
    """Agreement per tag for display: the statistic's value rounded to 3 places ('n/a' when undefined,
    the reason in `note`), observed agreement, counts; `(all tags)` last.

    >>> frame = pd.DataFrame({"item_key": ["i1", "i1"], "reviewer": ["a", "b"], "tags": [("other",), ("other",)]})
    >>> from analysis.review.analysis import tag_agreement
    >>> tag_agreement_table(tag_agreement(frame))[["tag", "Cohen's kappa"]].to_dict("records")[0]
    {'tag': 'other', "Cohen's kappa": 'n/a'}
    """
    rows = result.per_tag
    value = rows["value"].to_numpy(dtype=float)
    observed = rows["observed"].to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "tag": rows["tag"].astype("str"),
            result.statistic: ["n/a" if v != v else f"{v:.3f}" for v in value],
            "observed agreement": ["n/a" if v != v else f"{v:.3f}" for v in observed],
            "items": rows["n_items"].astype("int64"),
            "ratings": rows["n_ratings"].astype("int64"),
            "yes ratings": rows["n_yes"].astype("int64"),
            "items disagreeing": rows["n_items_disagreeing"].astype("int64"),
            "note": rows["note"].astype("str"),
        }
    ).reset_index(drop=True)


def reviewer_disagreement_table(result: TagAgreement) -> pd.DataFrame:
    """The items the chosen reviewers tagged differently, one row each: the item, `reviewers` (who
    annotated it), `their tags` (`name: tag; tag` per reviewer, ` | ` between reviewers) and `disputed`
    (tags some but not all of them gave)."""
    rows = result.disagreements
    out = rows.drop(columns=["reviewers", "tag_sets", "disputed"]).copy()
    out["reviewers"] = _joined(rows["reviewers"], ", ")
    out["their tags"] = pd.Series(
        [
            " | ".join(f"{name}: {'; '.join(tags)}" for name, tags in zip(names, sets, strict=True))
            for names, sets in zip(rows["reviewers"], rows["tag_sets"], strict=True)
        ],
        index=rows.index,
        dtype="str",
    )
    out["disputed"] = _joined(rows["disputed"])
    return out.reset_index(drop=True)
