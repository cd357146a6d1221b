"""Review analysis: error items to review, the review queue and progress, tag counts, and agreement
between reviewers (Cohen's kappa).

Every function takes the annotations as an `AnnotationStore` (`analysis.review.store`) or as the frame
its `annotations()` returns, so a page that has read the store once passes the frame on. An item counts
as reviewed when an annotation covers it: same dataset, dialogue and turn; same slot or a turn-level
annotation; same run or a run-independent annotation (keys: `analysis.review.items.item_keys`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.outcomes import ERROR_OUTCOMES
from analysis.review.items import ITEM_COLUMNS, _check_tags, _norm, item_keys

if TYPE_CHECKING:
    from analysis.review.store import AnnotationStore
    from analysis.scoring import Scored


def _as_frame(annotations: AnnotationStore | pd.DataFrame) -> pd.DataFrame:
    """The annotations as a frame: a frame as given, a store read (`AnnotationStore.annotations()`)."""
    return annotations if isinstance(annotations, pd.DataFrame) else annotations.annotations()


def error_items(scored: Scored, *, outcomes: Sequence[str] = ERROR_OUTCOMES) -> pd.DataFrame:
    """The slot errors of a `Scored` as review items: run_id, dataset (from the run's meta), dialogue_id,
    turn_index, domain, slot, outcome, gold/pred display values and `item_key` (slot + run grain)."""
    slots = scored.slots
    datasets = {m.run_id: m.dataset for m in scored.metas}
    errors = slots[slots["outcome"].isin(list(outcomes))]
    keep = ["run_id", "dialogue_id", "turn_index", "domain", "slot", "outcome", "gold_display", "pred_display"]
    errors = errors[keep].reset_index(drop=True)
    errors.insert(1, "dataset", errors["run_id"].map(datasets).astype("str"))
    errors["item_key"] = item_keys(errors)
    return errors


def _coverage(errors: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Pairs (error row position, annotation row) where the annotation covers the error item: same
    turn, slot equal or a turn-level annotation, run equal or a run-independent annotation."""
    if not len(errors) or not len(annotations):
        return pd.DataFrame({"row": pd.Series([], dtype="int64"), "ann": pd.Series([], dtype="int64")})
    variants = [item_keys(errors, with_slot=s, with_run=r).to_numpy() for s in (True, False) for r in (True, False)]
    rows = np.tile(np.arange(len(errors)), len(variants))
    wanted = pd.DataFrame({"row": rows, "item_key": np.concatenate(variants)})
    ann = pd.DataFrame({"ann": np.arange(len(annotations)), "item_key": annotations["item_key"].to_numpy()})
    return wanted.merge(ann, on="item_key")[["row", "ann"]].drop_duplicates()


def _with_review(errors: pd.DataFrame, annotations: pd.DataFrame, reviewer: str | None) -> pd.DataFrame:
    """Errors with n_annotations, reviewers and tags (union, taxonomy order of first use) attached."""
    if reviewer is not None:
        annotations = annotations[annotations["reviewer"] == _norm(reviewer)].reset_index(drop=True)
    pairs = _coverage(errors, annotations)
    pairs = pairs.assign(
        reviewer=annotations["reviewer"].to_numpy()[pairs["ann"].to_numpy()],
        tags=annotations["tags"].to_numpy()[pairs["ann"].to_numpy()],
    )
    grouped = pairs.groupby("row", sort=False)
    summary = pd.DataFrame(
        {
            "n_annotations": grouped.size(),
            "reviewers": grouped["reviewer"].agg(lambda r: tuple(sorted(set(r)))),
            "tags": grouped["tags"].agg(lambda ts: tuple(dict.fromkeys(t for tags in ts for t in tags))),
        }
    )
    out = errors.reset_index(drop=True)
    summary = summary.reindex(np.arange(len(out)))
    out["n_annotations"] = summary["n_annotations"].fillna(0).astype("int64").to_numpy()
    empty: tuple[str, ...] = ()
    out["reviewers"] = [r if isinstance(r, tuple) else empty for r in summary["reviewers"]]
    out["tags"] = [t if isinstance(t, tuple) else empty for t in summary["tags"]]
    out["reviewed"] = out["n_annotations"] > 0
    return out


def review_queue(
    scored_slots_errors: pd.DataFrame,
    store: AnnotationStore | pd.DataFrame,
    *,
    run_id: str | Sequence[str] | None = None,
    domain: str | Sequence[str] | None = None,
    slot: str | Sequence[str] | None = None,
    outcome: str | Sequence[str] | None = None,
    tag: str | None = None,
    reviewer: str | None = None,
    status: str = "unreviewed",
) -> pd.DataFrame:
    """Error items to review, in the order given, with their review state.

    `scored_slots_errors`: `error_items(scored)` (or any frame with ITEM_COLUMNS; `dataset`, `run_id`
    optional). An item counts as reviewed when an annotation covers it: same dataset, dialogue and turn;
    same slot or a turn-level annotation; same run or a run-independent annotation. With `reviewer`,
    only that reviewer's annotations count (a second reviewer's queue for agreement studies).
    `status`: `unreviewed` (default), `reviewed` or `all`; `tag` keeps items whose annotations hold the
    tag (so it implies reviewed items). Filters take one value or several.
    """
    statuses = ("unreviewed", "reviewed", "all")
    if status not in statuses:
        raise ValueError(f"status has to be one of {', '.join(statuses)}, got {status!r}")
    errors = scored_slots_errors
    for column, wanted in (("run_id", run_id), ("domain", domain), ("slot", slot), ("outcome", outcome)):
        if wanted is None:
            continue
        if column not in errors.columns:
            raise ValueError(f"cannot filter by {column}: the error items have no {column!r} column")
        values = [wanted] if isinstance(wanted, str) else list(wanted)
        errors = errors[errors[column].astype("str").isin(values)]
    annotations = _as_frame(store)
    queue = _with_review(errors, annotations, reviewer)
    if tag is not None:
        wanted_tag = _norm(tag) if isinstance(store, pd.DataFrame) else _check_tags([tag], store.tags)[0]
        queue = queue[queue["tags"].map(lambda tags: wanted_tag in tags).astype(bool)]
    if status == "unreviewed":
        queue = queue[~queue["reviewed"]]
    elif status == "reviewed":
        queue = queue[queue["reviewed"]]
    return queue.reset_index(drop=True)


def review_progress(
    scored_slots_errors: pd.DataFrame,
    store: AnnotationStore | pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    reviewer: str | None = None,
) -> pd.DataFrame:
    """Errors reviewed so far: n_errors, n_reviewed, share_reviewed (NaN for no errors), and
    n_gold_errors (reviewed items tagged `gold annotation error`), overall or `by` columns."""
    queue = _with_review(scored_slots_errors, _as_frame(store), reviewer)
    queue = queue.assign(gold_error=queue["tags"].map(lambda tags: "gold annotation error" in tags).astype(bool))
    keys = [by] if isinstance(by, str) else list(by or [])
    if keys:
        grouped = queue.groupby(keys, observed=True, sort=True, dropna=False)
        result = grouped.agg(
            n_errors=("reviewed", "size"), n_reviewed=("reviewed", "sum"), n_gold_errors=("gold_error", "sum")
        ).reset_index()
    else:
        result = pd.DataFrame(
            {
                "n_errors": [len(queue)],
                "n_reviewed": [int(queue["reviewed"].sum())],
                "n_gold_errors": [int(queue["gold_error"].sum())],
            }
        )
    result["share_reviewed"] = result["n_reviewed"] / result["n_errors"].where(result["n_errors"] > 0)
    return result


def tag_counts(
    annotations: AnnotationStore | pd.DataFrame,
    *,
    by: str | Sequence[str] = ("domain", "slot"),
    reviewer: str | None = None,
) -> pd.DataFrame:
    """How often each tag was given, by `by` columns (turn-level annotations have empty domain/slot):
    columns by + tag + n (annotations) + n_items (distinct items), largest first.

    >>> from analysis.review import AnnotationStore, Item
    >>> store = AnnotationStore("sqlite://")
    >>> for n, who in enumerate(["ana", "bo"]):
    ...     _ = store.annotate(Item("d", "x", n, domain="hotel", slot="area"), ["wrong value"], reviewer=who)
    >>> tag_counts(store).to_dict("records")
    [{'domain': 'hotel', 'slot': 'area', 'tag': 'wrong value', 'n': 2, 'n_items': 2}]
    """
    frame = _as_frame(annotations)
    if reviewer is not None:
        frame = frame[frame["reviewer"] == _norm(reviewer)]
    keys = [by] if isinstance(by, str) else list(by)
    unknown = [k for k in keys if k not in frame.columns]
    if unknown:
        raise ValueError(f"cannot count tags by {unknown}; columns: {list(frame.columns)}")
    long = frame[[*keys, "item_key", "tags"]].explode("tags").dropna(subset=["tags"]).rename(columns={"tags": "tag"})
    long["tag"] = long["tag"].astype("str")
    counts = (
        long.groupby([*keys, "tag"], sort=True, dropna=False)
        .agg(n=("item_key", "size"), n_items=("item_key", "nunique"))
        .reset_index()
    )
    counts[["n", "n_items"]] = counts[["n", "n_items"]].astype("int64")
    return counts.sort_values(["n", *keys, "tag"], ascending=[False, *[True] * (len(keys) + 1)]).reset_index(drop=True)


@dataclass(frozen=True)
class Agreement:
    """Cohen's kappa between two reviewers and what it was computed over.

    `unit` is `item-tag` (one binary decision per shared item and tag) or `primary` (one category per
    shared item: the first tag the reviewer gave). `disagreements` lists the shared items whose tag
    sets (or primary tags) differ, with `tags_a`, `tags_b`, `only_a`, `only_b`.
    """

    kappa: float
    observed: float
    expected: float
    n_items: int
    n_decisions: int
    unit: str
    tags: tuple[str, ...]
    disagreements: pd.DataFrame


def cohens_kappa(
    annotations: AnnotationStore | pd.DataFrame,
    reviewer_a: str,
    reviewer_b: str,
    *,
    unit: str = "item-tag",
    tags: Sequence[str] | None = None,
) -> Agreement:
    """Cohen's kappa, ``(p_o - p_e) / (1 - p_e)``, between two reviewers over the items both annotated.

    `unit="item-tag"` (default, suits tag *sets*): every (shared item, tag) pair is one yes/no decision
    per reviewer, over `tags` (default: the tags either reviewer used on the shared items; tags nobody
    used would only add agreed "no"s). `p_o` is the share of decisions that agree and
    ``p_e = pa_yes * pb_yes + pa_no * pb_no`` from each reviewer's own yes rate.
    `unit="primary"`: one category per shared item, the reviewer's first tag; ``p_e = sum_c pa_c * pb_c``.
    No shared item, or ``p_e == 1`` (both reviewers constant and equal), gives NaN.

    >>> frame = pd.DataFrame({"item_key": ["i1", "i2", "i1", "i2"], "reviewer": ["a", "a", "b", "b"],
    ...                       "tags": [("wrong value",), ("other",), ("wrong value",), ("other",)]})
    >>> cohens_kappa(frame, "a", "b").kappa
    1.0
    """
    units = ("item-tag", "primary")
    if unit not in units:
        raise ValueError(f"unit has to be one of {', '.join(units)}, got {unit!r}")
    frame = _as_frame(annotations)
    a = frame[frame["reviewer"] == _norm(reviewer_a)].drop_duplicates("item_key").set_index("item_key")
    b = frame[frame["reviewer"] == _norm(reviewer_b)].drop_duplicates("item_key").set_index("item_key")
    shared = a.index.intersection(b.index, sort=False)
    extra = [c for c in ITEM_COLUMNS if c in a.columns]
    pairs = pd.DataFrame(
        {"tags_a": a.loc[shared, "tags"].map(tuple), "tags_b": b.loc[shared, "tags"].map(tuple)}, index=shared
    )
    if unit == "item-tag":
        used = (
            tags
            if tags is not None
            else list(dict.fromkeys(t for ts in (*pairs["tags_a"], *pairs["tags_b"]) for t in ts))
        )
        vocabulary = tuple(used)
        shape = (len(pairs), len(vocabulary))
        yes_a = np.array([[t in ts for t in vocabulary] for ts in pairs["tags_a"]], dtype=bool).reshape(shape)
        yes_b = np.array([[t in ts for t in vocabulary] for ts in pairs["tags_b"]], dtype=bool).reshape(shape)
        n = yes_a.size
        observed = float((yes_a == yes_b).mean()) if n else math.nan
        pa, pb = (float(yes_a.mean()), float(yes_b.mean())) if n else (math.nan, math.nan)
        expected = pa * pb + (1 - pa) * (1 - pb)
        differ = pairs["tags_a"].map(frozenset) != pairs["tags_b"].map(frozenset)
    else:
        first_a = pairs["tags_a"].map(lambda ts: ts[0] if ts else "")
        first_b = pairs["tags_b"].map(lambda ts: ts[0] if ts else "")
        vocabulary = tuple(dict.fromkeys([*first_a, *first_b]))
        n = len(pairs)
        observed = float((first_a == first_b).mean()) if n else math.nan
        share_a = first_a.value_counts(normalize=True)
        share_b = first_b.value_counts(normalize=True)
        expected = float((share_a * share_b.reindex(share_a.index, fill_value=0.0)).sum()) if n else math.nan
        differ = first_a != first_b
    kappa = (observed - expected) / (1 - expected) if n and expected < 1 else math.nan
    disagreements = pairs[differ.to_numpy(dtype=bool)].copy()
    disagreements["only_a"] = [
        tuple(t for t in x if t not in y) for x, y in zip(disagreements["tags_a"], disagreements["tags_b"], strict=True)
    ]
    disagreements["only_b"] = [
        tuple(t for t in y if t not in x) for x, y in zip(disagreements["tags_a"], disagreements["tags_b"], strict=True)
    ]
    disagreements = disagreements.join(a[extra]).rename_axis("item_key").reset_index()
    return Agreement(
        kappa=float(kappa),
        observed=observed,
        expected=expected,
        n_items=len(pairs),
        n_decisions=int(n),
        unit=unit,
        tags=vocabulary,
        disagreements=disagreements[["item_key", *extra, "tags_a", "tags_b", "only_a", "only_b"]],
    )
