"""Review analysis: error items to review, the review queue and progress, tag counts, agreement
between reviewers (Cohen's kappa between two; per tag, Cohen's kappa or Krippendorff's alpha from
scikit-learn and the krippendorff package, `tag_agreement`), and the run context of annotations for the export
(`annotation_context`).

Every function takes the annotations as an `AnnotationStore` (`analysis.review.store`) or as the frame
its `annotations()` returns, so a page that has read the store once passes the frame on. An item counts
as reviewed when an annotation covers it: same dataset and dialogue; same slot or a turn-level
annotation; same run or a run-independent annotation; and turns that overlap (an annotation covers the
turns of its span, from `turn_index` to `last_turn`; an item, a turn or an episode, covers its own).

Error episodes (`error_episodes`): an error carried over several turns is one review item. Definition:
the error rows (`error_items`) of one run, dialogue and slot (domain + slot) on *consecutive* turns (the
run's scored turns of the dialogue in order: `tid` differs by one, so a turn the run did not score does
not break an episode) with the *same error*: the same gold value, the same predicted value (as the files
write them; absent is a value of its own) and the same outcome. Any change ends the episode and starts a
new one: a correct turn (or a turn where the slot is absent on both sides) in between, a new predicted
value, or a new gold value. So a wrong value the tracker carries over while the gold changes (the user
asked for something else and the tracker kept the old value) is a new episode: it is another confusion
(another cell of the gold -> predicted heatmap), and reviewers tag it differently (a missed update, not
the first wrong value). An episode is keyed by its first turn (`item_key` of that turn, so a one-turn
episode is the old turn item) and carries its span: `last_turn` (turn index) and `n_turns`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.outcomes import ERROR_OUTCOMES
from analysis.review.items import (
    CONTEXT_COLUMNS,
    ITEM_COLUMNS,
    _check_tags,
    _norm,
    item_key_variants,
    item_keys,
)

if TYPE_CHECKING:
    from analysis.review.store import AnnotationStore
    from analysis.scoring import Scored


def _as_frame(annotations: AnnotationStore | pd.DataFrame) -> pd.DataFrame:
    """The annotations as a frame: a frame as given, a store read (`AnnotationStore.annotations()`)."""
    return annotations if isinstance(annotations, pd.DataFrame) else annotations.annotations()


ERROR_ITEM_READ = [
    "run_id",
    "dialogue_id",
    "turn_index",
    "domain",
    "slot",
    "outcome",
    "gold_display",
    "pred_display",
    "tid",
]


def error_items(scored: Scored, *, outcomes: Sequence[str] = ERROR_OUTCOMES) -> pd.DataFrame:
    """The slot errors of a `Scored` as review items, one per error turn: run_id, dataset (from the run's
    meta), dialogue_id, turn_index, domain, slot, outcome, gold/pred display values, `item_key` (slot +
    run grain) and `tid` (the turn's row in the run: consecutive turns of a dialogue differ by one)."""
    slots = scored.slots
    errors = slots[slots["outcome"].isin(list(outcomes))]
    return as_error_items(errors[ERROR_ITEM_READ], {m.run_id: m.dataset for m in scored.metas})


def as_error_items(rows: pd.DataFrame, datasets: dict[str, str]) -> pd.DataFrame:
    """Slot rows with the columns `ERROR_ITEM_READ` (from a scored run or the score store's query) as
    `error_items`: their dataset (`datasets`: run id to dataset), `item_key`, in the items' column order."""
    errors = rows[ERROR_ITEM_READ].reset_index(drop=True)
    errors.insert(1, "dataset", errors["run_id"].map(datasets).astype("str"))
    errors["item_key"] = item_keys(errors)
    keep = ERROR_ITEM_READ[:-1]
    return errors[[*keep[:1], "dataset", *keep[1:], "item_key", "tid"]]


def review_errors(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """The error items of several scored runs (each under its own convention), one frame: the Review
    page's queue (`ui.compute(review_errors, runs)`; the score store answers it, `analysis.store.views`)."""
    frames = [error_items(s) for s in scoreds]
    return pd.concat(frames, ignore_index=True) if frames else error_items_empty()


def review_episodes(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """The error episodes of several scored runs (`error_episodes` of `review_errors`), one frame."""
    return error_episodes(review_errors(scoreds))


def error_items_empty() -> pd.DataFrame:
    """`error_items` of no run: its columns, no row."""
    columns = ["run_id", "dataset", "dialogue_id", "turn_index", "domain", "slot", "outcome", "gold_display",
               "pred_display", "item_key", "tid"]  # fmt: skip
    return pd.DataFrame({c: pd.Series([], dtype="int64" if c in ("turn_index", "tid") else "str") for c in columns})


_ABSENT = "\x00absent"  # a missing gold or predicted value, as compared between turns (never a real value)


def _codes(values: pd.Series) -> np.ndarray:
    """Integer codes of a column's values as text (missing: `_ABSENT`), in the values' sorted order: equal
    values get equal codes, and codes sort as the values do (Arrow's dictionary of the column, sorted)."""
    codes, _ = pd.factorize(values.astype("str").fillna(_ABSENT), sort=True)
    return codes.astype("int64", copy=False)


def _episodes_sorted(errors: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The error rows in (run, dialogue, slot, turn) order and, in that order, whether each row starts an
    episode (module docstring): one stable sort and shifted comparisons, no loop over turns. Consecutive
    turns are told by `tid` (`turn_index` when absent). Values are compared as integer codes, which sort
    as the values do: the order of a stable sort of the text, at a tenth of its cost on 400k rows."""
    step = "tid" if "tid" in errors.columns else "turn_index"
    group = ["run_id", "dialogue_id", "domain", "slot"]
    columns = [*group, "gold_display", "pred_display", "outcome"]
    codes = {c: _codes(errors[c]) for c in columns}
    steps = errors[step].to_numpy(dtype="int64")
    order = np.lexsort([steps, *(codes[c] for c in reversed(group))])  # a stable sort, last key first
    same = np.ones(len(order), dtype=bool)
    for column in columns:
        array = codes[column][order]
        same[1:] &= array[1:] == array[:-1]
    steps = steps[order]
    same[1:] &= steps[1:] == steps[:-1] + 1
    same[:1] = False
    return order, ~same


def error_episodes(errors: pd.DataFrame) -> pd.DataFrame:
    """The error turns of `error_items` (one or several runs) grouped into episodes (module docstring):
    one row per episode, in the order of its first turn in `errors`, with the first turn's columns (its
    `item_key` is the episode's key), `last_turn` (turn index of its last turn), `n_turns` and `episode`
    (its number, as `episode_turns` gives it to each turn).

    >>> errors = pd.DataFrame({"run_id": "r", "dataset": "d", "dialogue_id": "x", "turn_index": [1, 2, 3, 5],
    ...     "domain": "hotel", "slot": "area", "outcome": "wrong_value", "gold_display": ["n", "n", "s", "s"],
    ...     "pred_display": "e"})
    >>> error_episodes(errors)[["turn_index", "last_turn", "n_turns"]].values.tolist()
    [[1, 2, 2], [3, 3, 1], [5, 5, 1]]
    """
    order, starts = _episodes_sorted(errors)
    begin = np.flatnonzero(starts)
    end = np.append(begin[1:], len(order))[: len(begin)] - 1
    first, last = order[begin], order[end]
    number = np.arange(1, len(begin) + 1, dtype="int64")  # as `episode_turns` numbers them
    by_row = np.argsort(first, kind="stable")
    out = errors.iloc[first[by_row]].reset_index(drop=True)
    out["last_turn"] = errors["turn_index"].to_numpy(dtype="int64")[last[by_row]]
    out["n_turns"] = (end - begin + 1)[by_row].astype("int64")
    out["episode"] = number[by_row]
    return out


def episode_turns(errors: pd.DataFrame) -> pd.DataFrame:
    """The error turns of `errors`, each with `episode` (its episode's number, as in `error_episodes`)
    and `episode_key` (its episode's `item_key`, the first turn's): what an episode stands for."""
    order, starts = _episodes_sorted(errors)
    episode = np.empty(len(order), dtype="int64")
    episode[order] = np.cumsum(starts)
    first_sorted = order[np.flatnonzero(starts)]  # the first turn's row of episode 1, 2, ...
    keys = errors["item_key"].to_numpy()[first_sorted[episode - 1]] if len(errors) else np.array([], dtype=object)
    return errors.assign(episode=episode, episode_key=keys).reset_index(drop=True)


def _span_of(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) turn index of each row: an annotation's or an episode's span, a turn's own turn."""
    first = frame["turn_index"].to_numpy(dtype="int64")
    if "last_turn" not in frame.columns:
        return first, first
    last = pd.to_numeric(frame["last_turn"], errors="coerce").to_numpy(dtype="float64")
    return first, np.where(np.isnan(last), first, last).astype("int64")


def _coverage(errors: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """(error row, annotation row) pairs where the annotation covers the item (module docstring): same
    dataset and dialogue, slot equal or a turn-level annotation, run equal or a run-independent one, and
    overlapping turns (the annotation's span `turn_index`..`last_turn` against the item's, an episode's
    `turn_index`..`last_turn` or a turn's own)."""
    none = pd.DataFrame({"row": pd.Series([], dtype="int64"), "ann": pd.Series([], dtype="int64")})
    if not len(errors) or not len(annotations):
        return none
    # Only the rows of an annotated dialogue can be covered: keys are built for those alone (a few of the
    # queue's rows while a review is young; building every row's keys is most of a queue's cost).
    # Each distinct dialogue id is normalised once (a queue has thousands of rows, a few hundred dialogues).
    dialogues = {_norm(d) for d in annotations["dialogue_id"].unique()}
    codes, uniques = pd.factorize(errors["dialogue_id"], use_na_sentinel=False)
    annotated = np.fromiter((_norm(d) in dialogues for d in uniques), dtype=bool, count=len(uniques))
    candidate = np.flatnonzero(annotated[codes])
    if not len(candidate):
        return none
    # Keys without the turn (turn 0 in every key), matched first, then the spans compared.
    combos = [(s, r) for s in (True, False) for r in (True, False)]
    variants = item_key_variants(errors.iloc[candidate].assign(turn_index=0), combos)
    first, last = _span_of(errors.iloc[candidate])
    rows = np.tile(candidate, len(variants))
    wanted = pd.DataFrame(
        {"row": rows, "base": np.concatenate(variants), "first": np.tile(first, 4), "last": np.tile(last, 4)}
    ).drop_duplicates(["row", "base"])
    ann_first, ann_last = _span_of(annotations)
    ann = pd.DataFrame(
        {
            "ann": np.arange(len(annotations)),
            "base": item_keys(annotations.assign(turn_index=0)).to_numpy(),
            "ann_first": ann_first,
            "ann_last": ann_last,
        }
    )
    pairs = wanted.merge(ann, on="base")
    overlap = (pairs["ann_first"] <= pairs["last"]) & (pairs["ann_last"] >= pairs["first"])
    return pairs.loc[overlap, ["row", "ann"]].drop_duplicates()


_REVIEWED: list[tuple[pd.DataFrame, pd.DataFrame, str | None, tuple[int, int], pd.DataFrame]] = []
_REVIEWED_KEEP = 8
_REVIEWED_LOCK = threading.Lock()


def _with_review(errors: pd.DataFrame, annotations: pd.DataFrame, reviewer: str | None) -> pd.DataFrame:
    """Errors with n_annotations, reviewers and tags (union, taxonomy order of first use) attached.

    The last few answers are kept by the identity of their two frames (and their lengths): the Review
    page asks the same question of the same frames several times a click (the queue, progress in turns
    and in episodes, progress per run), and each answer matches every error to every annotation. The
    frames are never changed in place once made (the page's are cached), and the answer is not either:
    every caller derives new frames from it."""
    sizes = (len(errors), len(annotations))
    with _REVIEWED_LOCK:
        for known_errors, known_annotations, known_reviewer, known_sizes, answer in _REVIEWED:
            same = known_errors is errors and known_annotations is annotations
            if same and known_reviewer == reviewer and known_sizes == sizes:
                return answer
    answer = _with_review_now(errors, annotations, reviewer)
    with _REVIEWED_LOCK:
        _REVIEWED.insert(0, (errors, annotations, reviewer, sizes, answer))
        del _REVIEWED[_REVIEWED_KEEP:]
    return answer


def _with_review_now(errors: pd.DataFrame, annotations: pd.DataFrame, reviewer: str | None) -> pd.DataFrame:
    if reviewer is not None:
        annotations = annotations[annotations["reviewer"] == _norm(reviewer)].reset_index(drop=True)
    pairs = _coverage(errors, annotations)
    pairs = pairs.assign(
        reviewer=annotations["reviewer"].to_numpy()[pairs["ann"].to_numpy()],
        tags=annotations["tags"].to_numpy()[pairs["ann"].to_numpy()],
    )
    grouped = pairs.groupby("row", sort=False)
    covered = grouped.size()
    out = errors.reset_index(drop=True)
    # Every row gets its columns, the covered ones their values: no Python per row of the whole queue
    # (a save asks this again of every error turn, 10,000 on the demo, 415,000 at 100 runs).
    counts = np.zeros(len(out), dtype="int64")
    reviewers, tags = _empty_tuples(len(out)), _empty_tuples(len(out))
    if len(covered):
        at = covered.index.to_numpy(dtype="int64")
        counts[at] = covered.to_numpy(dtype="int64")
        reviewers[at] = grouped["reviewer"].agg(lambda r: tuple(sorted(set(r)))).reindex(covered.index).to_numpy()
        tags[at] = (
            grouped["tags"]
            .agg(lambda ts: tuple(dict.fromkeys(t for tags in ts for t in tags)))
            .reindex(covered.index)
            .to_numpy()
        )
    out["n_annotations"] = counts
    out["reviewers"] = reviewers
    out["tags"] = tags
    out["reviewed"] = counts > 0
    return out


def _empty_tuples(n: int) -> np.ndarray:
    """An object array of `n` empty tuples (the review columns of a row no annotation covers)."""
    values = np.empty(n, dtype=object)
    values.fill(())
    return values


def _holding(queue: pd.DataFrame, column: str, value: str) -> np.ndarray:
    """Rows whose tuple in `column` (`tags`, `reviewers`) holds `value`, as a boolean array: only the
    reviewed rows are looked at (an unreviewed row's tuples are empty)."""
    found = np.zeros(len(queue), dtype=bool)
    reviewed = np.flatnonzero(queue["reviewed"].to_numpy(dtype=bool))
    if len(reviewed):
        found[reviewed] = [value in held for held in queue[column].to_numpy(dtype=object)[reviewed]]
    return found


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
    me: str | None = None,
    confusion: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Error items to review, in the order given, with their review state.

    The items are error turns (`error_items`) or error episodes (`error_episodes`); an annotation covers
    an item when their turns overlap (module docstring). `confusion`: (domain, slot, gold, predicted), the
    values as `confusion_counts` shows them, keeps the items of one heatmap cell.

    `scored_slots_errors`: `error_items(scored)` (or any frame with ITEM_COLUMNS; `dataset`, `run_id`
    optional). An item counts as reviewed when an annotation covers it: same dataset, dialogue and turn;
    same slot or a turn-level annotation; same run or a run-independent annotation. With `reviewer`,
    only that reviewer's annotations count (a second reviewer's queue for agreement studies).
    `status`: `unreviewed` (default), `reviewed`, `by-others` (reviewed by someone, not by `me`: a
    second opinion's queue; an annotation of the whole turn by `me` counts as mine; `me` empty or None:
    reviewed by anyone) or `all`; `tag` keeps items whose annotations hold the tag (so it implies
    reviewed items). Filters take one value or several.
    """
    statuses = ("unreviewed", "reviewed", "all", "by-others")
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
    if confusion is not None:
        domain_, slot_, gold, predicted = (str(v) for v in confusion)
        keep = (errors["domain"].astype("str") == domain_) & (errors["slot"].astype("str") == slot_)
        keep &= _shown(errors["gold_display"]) == gold
        errors = errors[keep.to_numpy(dtype=bool) & (_shown(errors["pred_display"]) == predicted).to_numpy(dtype=bool)]
    annotations = _as_frame(store)
    queue = _with_review(errors, annotations, reviewer)
    if tag is not None:
        wanted_tag = _norm(tag) if isinstance(store, pd.DataFrame) else _check_tags([tag], store.tags)[0]
        queue = queue[_holding(queue, "tags", wanted_tag)]
    if status == "unreviewed":
        queue = queue[~queue["reviewed"]]
    elif status == "reviewed":
        queue = queue[queue["reviewed"]]
    elif status == "by-others":
        queue = queue[queue["reviewed"].to_numpy(dtype=bool) & ~_holding(queue, "reviewers", _norm(me))]
    return queue.reset_index(drop=True)


ABSENT = "—"  # a missing gold or predicted value as the heatmap and the queue show it (as `analysis.views`)
UNITS = ("episodes", "turns")


def _shown(values: pd.Series) -> pd.Series:
    return values.astype("str").fillna(ABSENT)


def confusion_counts(items: pd.DataFrame, *, unit: str = "episodes", top: int = 15) -> pd.DataFrame:
    """The gold -> predicted pairs of review items (`error_episodes` rows, or `error_items` turns), counted
    in `unit`: `episodes` (one per item) or `turns` (an episode's `n_turns`; a turn item counts 1), the
    `top` pairs, most first. Columns: domain, slot, gold, predicted (values as written, `—` when absent),
    n, and `row` (the heatmap's row label: the gold value, prefixed `domain-slot: ` when the items span
    more than one slot). The cell's items are `review_queue(..., confusion=(domain, slot, gold, predicted))`,
    so `n` is their number (episodes) or the sum of their `n_turns` (turns).

    >>> items = pd.DataFrame({"domain": "hotel", "slot": "area", "gold_display": ["n", "n", None],
    ...     "pred_display": "s", "n_turns": [3, 1, 2]})
    >>> confusion_counts(items, unit="turns")[["row", "predicted", "n"]].values.tolist()
    [['n', 's', 4], ['—', 's', 2]]
    """
    if unit not in UNITS:
        raise ValueError(f"unit has to be one of {', '.join(UNITS)}, got {unit!r}")
    columns = ["domain", "slot", "gold", "predicted", "n", "row"]
    if not len(items):
        return pd.DataFrame({c: pd.Series([], dtype="int64" if c == "n" else "str") for c in columns})
    weight = items["n_turns"] if unit == "turns" and "n_turns" in items.columns else pd.Series(1, index=items.index)
    frame = pd.DataFrame(
        {
            "domain": items["domain"].astype("str").fillna(""),
            "slot": items["slot"].astype("str").fillna(""),
            "gold": _shown(items["gold_display"]),
            "predicted": _shown(items["pred_display"]),
            "n": weight.to_numpy(dtype="int64"),
        }
    )
    counts = frame.groupby(["domain", "slot", "gold", "predicted"], sort=True).agg(n=("n", "sum")).reset_index()
    counts = counts.sort_values(["n", "domain", "slot", "gold", "predicted"], ascending=[False, True, True, True, True])
    counts = counts.head(top).reset_index(drop=True)
    counts["n"] = counts["n"].astype("int64")
    several = counts[["domain", "slot"]].drop_duplicates().shape[0] > 1
    prefix = counts["domain"] + "-" + counts["slot"] + ": "
    counts["row"] = (prefix + counts["gold"]) if several else counts["gold"]
    return counts[columns]


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
    queue = queue.assign(gold_error=_holding(queue, "tags", "gold annotation error"))
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


def review_progress_per_run(
    error_turns: pd.DataFrame, episodes: pd.DataFrame, store: AnnotationStore | pd.DataFrame
) -> pd.DataFrame:
    """Per run: its error turns reviewed (`review_progress` columns) beside its error episodes and the
    episodes reviewed (`episodes`, `episodes reviewed`)."""
    turns = review_progress(error_turns, store, by="run_id")
    spans = review_progress(episodes, store, by="run_id")
    return turns.merge(
        spans[["run_id", "n_errors", "n_reviewed"]].rename(
            columns={"n_errors": "episodes", "n_reviewed": "episodes reviewed"}
        ),
        on="run_id",
        how="left",
    )


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
        observed, expected = _binary_chance(yes_a, yes_b)
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
    kappa = _kappa(observed, expected)
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


# ---------------------------------------------------------------------------------- agreement per tag

COHEN = "Cohen's kappa"
KRIPPENDORFF = "Krippendorff's alpha"
ALL_TAGS = "(all tags)"
RATING_DEFINITION = (
    "A rating is one reviewer's yes/no on one tag of one item: for every item (an annotation key: turn, "
    "slot and run) that at least two of the chosen reviewers annotated, and every tag, each of those "
    "reviewers rates 1 if their tag set on the item holds the tag and 0 if it does not; a reviewer who "
    "did not annotate the item gives no rating there (missing, never 0). With two reviewers the "
    "statistic is Cohen's kappa (scikit-learn) over the items both annotated; with three or more it is "
    "Krippendorff's alpha, nominal (the krippendorff package), over the items at least two annotated, "
    "missing ratings allowed. '(all tags)' pools every (item, tag) pair as one unit. A tag on which "
    "every rating is the same has no defined agreement (chance agreement is 1): n/a."
)


@dataclass(frozen=True)
class TagAgreement:
    """Agreement between `reviewers` per tag (`RATING_DEFINITION`).

    `per_tag`: one row per tag the chosen reviewers gave on a shared item, then `(all tags)`: tag,
    statistic (`Cohen's kappa` or `Krippendorff's alpha`), value (NaN when undefined), observed
    (share of agreeing rating pairs within items), n_items, n_ratings, n_yes, n_items_disagreeing, note.
    `disagreements`: the shared items whose reviewers' tag sets differ: item_key, the item columns,
    reviewers (who annotated it, in the chosen order), tag_sets (their tag sets, same order) and
    disputed (tags some but not all of them gave).
    """

    reviewers: tuple[str, ...]
    statistic: str
    per_tag: pd.DataFrame
    disagreements: pd.DataFrame
    n_items: int


def _observed(ratings: np.ndarray) -> float:
    """Share of agreeing pairs of ratings within units (columns), over all pairable ratings; NaN for none."""
    present = ~np.isnan(ratings)
    m = present.sum(axis=0)
    ones = np.where(present, ratings, 0.0).sum(axis=0)
    zeros = m - ones
    pairs = m * (m - 1) / 2
    agree = ones * (ones - 1) / 2 + zeros * (zeros - 1) / 2
    total = float(pairs.sum())
    return float(agree.sum()) / total if total else math.nan


def _binary_chance(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two reviewers' yes/no decisions on the same units: `p_o`, the share decided alike, and `p_e =
    pa * pb + (1 - pa) * (1 - pb)` from each one's own share of yes; NaN for both without a unit."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not a.size:
        return math.nan, math.nan
    pa, pb = float(a.mean()), float(b.mean())
    return float((a == b).mean()), pa * pb + (1 - pa) * (1 - pb)


def _kappa(observed: float, expected: float) -> float:
    """``(p_o - p_e) / (1 - p_e)``; NaN when ``p_e`` is 1 (or NaN: no unit)."""
    return (observed - expected) / (1 - expected) if expected < 1 else math.nan


def _statistic(ratings: np.ndarray, statistic: str) -> tuple[float, str]:
    """The agreement of a reviewers x units matrix of 0/1 ratings (NaN: no rating), and a note."""
    values = ratings[~np.isnan(ratings)]
    if ratings.shape[1] == 0:
        return math.nan, "no item annotated by two of the chosen reviewers"
    if np.unique(values).size < 2:
        return math.nan, "every rating is the same: chance agreement is 1, agreement undefined"
    if statistic == COHEN:
        # Imported here, at a server's first agreement, not by the pages' prefetch: with SciPy it costs about
        # 1.7 s of CPU, which held the GIL while a server's first page was being drawn.
        from sklearn.metrics import cohen_kappa_score

        return float(cohen_kappa_score(ratings[0].astype(int), ratings[1].astype(int), labels=[0, 1])), ""
    import krippendorff

    return float(krippendorff.alpha(ratings, level_of_measurement="nominal", value_domain=[0.0, 1.0])), ""


def tag_agreement(
    annotations: AnnotationStore | pd.DataFrame,
    reviewers: Sequence[str] | None = None,
    *,
    tags: Sequence[str] | None = None,
) -> TagAgreement:
    """Agreement per tag between `reviewers` (default: everyone in the annotations, sorted): Cohen's kappa
    for two, Krippendorff's alpha (nominal) for three or more, over binary ratings (`RATING_DEFINITION`).

    `tags` fixes the tags rated (default: those the chosen reviewers gave on items two of them annotated,
    in the order of `DEFAULT_TAGS` then of first use). Fewer than two reviewers: ValueError.

    >>> frame = pd.DataFrame({"item_key": ["i1", "i2", "i1", "i2"], "reviewer": ["a", "a", "b", "b"],
    ...                       "tags": [("wrong value",), ("other",), ("wrong value",), ("wrong value",)]})
    >>> result = tag_agreement(frame)
    >>> result.statistic, result.per_tag[["tag", "value", "n_items_disagreeing"]].to_dict("records")[0]
    ("Cohen's kappa", {'tag': 'wrong value', 'value': 0.0, 'n_items_disagreeing': 1})
    """
    from analysis.review.items import DEFAULT_TAGS

    frame = _as_frame(annotations)
    names = (
        list(dict.fromkeys(_norm(r) for r in reviewers)) if reviewers is not None else sorted(set(frame["reviewer"]))
    )
    if len(names) < 2:
        raise ValueError(f"agreement needs at least two reviewers, got {names}")
    statistic = COHEN if len(names) == 2 else KRIPPENDORFF
    chosen = frame[frame["reviewer"].isin(names)].drop_duplicates(["item_key", "reviewer"])
    shared = chosen[chosen.groupby("item_key")["reviewer"].transform("size").to_numpy() >= 2]
    units = list(dict.fromkeys(shared["item_key"]))
    r_at = {r: i for i, r in enumerate(names)}
    u_at = {u: j for j, u in enumerate(units)}
    rows = shared["reviewer"].map(r_at).to_numpy(dtype=int)
    cols = shared["item_key"].map(u_at).to_numpy(dtype=int)
    annotated = np.zeros((len(names), len(units)), dtype=bool)
    annotated[rows, cols] = True
    used = dict.fromkeys(t for ts in shared["tags"] for t in ts)
    vocabulary = (
        [_norm(t) for t in tags]
        if tags is not None
        else [t for t in DEFAULT_TAGS if t in used] + [t for t in used if t not in DEFAULT_TAGS]
    )
    per_tag = _per_tag(shared, vocabulary, rows, cols, annotated, statistic, n_items=len(units))
    disagreements, n_differing = _disagreements(shared, rows, units)
    # The pooled row counts items whose reviewers' tag sets differ, not (item, tag) pairs.
    per_tag.loc[per_tag["tag"] == ALL_TAGS, "n_items_disagreeing"] = n_differing
    return TagAgreement(tuple(names), statistic, per_tag, disagreements, len(units))


def _per_tag(
    shared: pd.DataFrame,
    vocabulary: Sequence[str],
    rows: np.ndarray,
    cols: np.ndarray,
    annotated: np.ndarray,
    statistic: str,
    *,
    n_items: int,
) -> pd.DataFrame:
    """One row per tag of `vocabulary`, then the pooled row (`ALL_TAGS`): the statistic over the binary
    ratings (reviewer x item, NaN where a reviewer did not annotate the item) and its counts."""
    matrices = []
    records = []
    for tag in vocabulary:
        yes = np.zeros_like(annotated)
        holds = shared["tags"].map(lambda ts, tag=tag: tag in ts).to_numpy(dtype=bool)
        yes[rows[holds], cols[holds]] = True
        ratings = np.where(annotated, yes.astype(float), np.nan)
        matrices.append(ratings)
        records.append((tag, ratings))
    pooled = np.concatenate(matrices, axis=1) if matrices else np.empty((annotated.shape[0], 0))
    records.append((ALL_TAGS, pooled))
    table = []
    for tag, ratings in records:
        value, note = _statistic(ratings, statistic)
        present = ~np.isnan(ratings)
        rated = np.where(present, ratings, 0.0)
        differ = (rated.sum(axis=0) > 0) & (rated.sum(axis=0) < present.sum(axis=0))
        table.append(
            {
                "tag": tag,
                "statistic": statistic,
                "value": value,
                "observed": _observed(ratings),
                "n_items": n_items,
                "n_ratings": int(present.sum()),
                "n_yes": int(rated.sum()),
                "n_items_disagreeing": int(differ.sum()) if tag != ALL_TAGS else 0,
                "note": note,
            }
        )
    return pd.DataFrame(table)


def _disagreements(shared: pd.DataFrame, rows: np.ndarray, units: list[str]) -> tuple[pd.DataFrame, int]:
    """The items whose reviewers' tag sets differ, one row each (its reviewers, their tag sets and the tags
    not all of them gave), and their number."""
    ordered = shared.assign(_r=rows).sort_values(["_r"], kind="stable")
    grouped = ordered.groupby("item_key", sort=False)
    sets = grouped["tags"].agg(lambda ts: tuple(tuple(t) for t in ts))
    who = grouped["reviewer"].agg(tuple)
    differs = sets.map(lambda s: len({frozenset(t) for t in s}) > 1)
    keys = [k for k in units if bool(differs.get(k, False))]
    extra = [c for c in ITEM_COLUMNS if c in shared.columns]
    first = shared.drop_duplicates("item_key").set_index("item_key")
    disputed = [
        tuple(t for t in dict.fromkeys(x for s in sets[k] for x in s) if not all(t in s for s in sets[k])) for k in keys
    ]
    disagreements = pd.DataFrame({"item_key": pd.Series(keys, dtype="str")})
    for column in extra:
        disagreements[column] = first.loc[keys, column].to_numpy() if keys else pd.Series([], dtype="str")
    disagreements["reviewers"] = pd.Series([who[k] for k in keys], dtype=object)
    disagreements["tag_sets"] = pd.Series([sets[k] for k in keys], dtype=object)
    disagreements["disputed"] = pd.Series(disputed, dtype=object)
    return disagreements, int(differs.sum())


# ------------------------------------------------------------------------------- context of the export

TURN_OUTCOMES = ("turn_correct", "turn_wrong")


def _joined_state(rows: pd.DataFrame, side: str) -> pd.Series:
    """Per (run, dialogue, turn): `domain-slot=value; ...` of the side's values as written, slots sorted."""
    present = rows[rows[side].notna()]
    text = present["domain"] + "-" + present["slot"] + "=" + present[side].astype("str")
    keys = [present["run_id"], present["dialogue_id"], present["turn_index"]]
    return text.groupby(keys, sort=False).agg(lambda parts: "; ".join(sorted(parts)))


def annotation_context(annotations: AnnotationStore | pd.DataFrame, scoreds: Sequence[Scored]) -> pd.DataFrame:
    """Per annotation row (same order): convention, outcome, gold and predicted from the scored runs, under
    the convention each was scored with: what the annotation export adds (`CONTEXT_COLUMNS`).

    * an item of one slot in one run: that slot's outcome and its gold and predicted values as the files
      write them (None for the side that lacks the slot); a slot neither side names in a turn the run
      has: outcome `absent`;
    * an item of a whole turn in one run: outcome `turn_correct` / `turn_wrong` (the turn's joint goal),
      gold and predicted the turn's states as `domain-slot=value; ...`;
    * an item of no run, or of a run or turn not loaded: all None (nothing to compare against).
    """
    frame = _as_frame(annotations)
    out = pd.DataFrame({c: pd.Series([None] * len(frame), dtype=object) for c in CONTEXT_COLUMNS})
    if not len(frame) or not scoreds:
        return out

    def norm(values: pd.Series) -> pd.Series:
        return values.astype("str").fillna("").str.normalize("NFC").str.strip()

    annotated_runs = set(_norm(r) for r in frame["run_id"])
    scoreds = [s for s in scoreds if annotated_runs.intersection(_norm(r) for r in s.run_ids)]
    if not scoreds:
        return out
    keys = ["run_id", "dialogue_id", "turn_index"]
    slot_keys = [*keys, "domain", "slot"]
    slots = pd.concat(
        [
            s.slots[[*slot_keys, "outcome", "gold_display", "pred_display"]].assign(convention=s.convention.name)
            for s in scoreds
        ],
        ignore_index=True,
    )
    turns = pd.concat(
        [s.turns[[*keys, "joint_correct"]].assign(convention=s.convention.name) for s in scoreds], ignore_index=True
    )
    for table in (slots, turns):
        for column in ("run_id", "dialogue_id", *(["domain", "slot"] if "slot" in table.columns else [])):
            table[column] = norm(table[column])
        table["turn_index"] = table["turn_index"].astype("int64")
    slots = slots.drop_duplicates(slot_keys)
    turns = turns.drop_duplicates(keys)
    wanted = pd.DataFrame({c: norm(frame[c]) for c in ("run_id", "dialogue_id", "domain", "slot")})
    wanted["turn_index"] = frame["turn_index"].astype("int64").to_numpy()
    wanted["row"] = np.arange(len(frame))
    with_run = wanted[wanted["run_id"] != ""]
    found = with_run.merge(turns, on=keys, how="inner")
    is_slot = found["slot"] != ""
    # Slot items: the slot's row, or `absent` when the turn is there but neither side names the slot.
    slot_items = found[is_slot].merge(slots, on=slot_keys, how="left", suffixes=("", "_slot"))
    rows = slot_items["row"].to_numpy()
    named = slot_items["outcome"].notna()
    out.loc[rows, "convention"] = slot_items["convention"].to_numpy(dtype=object)
    out.loc[rows, "outcome"] = slot_items["outcome"].astype("object").where(named, "absent").to_numpy()
    for column, side in (("gold", "gold_display"), ("predicted", "pred_display")):
        values = slot_items[side].astype("object")
        out.loc[rows, column] = values.where(values.notna(), None).to_numpy()
    # Whole-turn items: the turn's joint outcome and both states.
    turn_items = found[~is_slot]
    if len(turn_items):
        needed = slots.merge(turn_items[keys].drop_duplicates(), on=keys)
        index = pd.MultiIndex.from_frame(turn_items[keys])
        rows = turn_items["row"].to_numpy()
        out.loc[rows, "convention"] = turn_items["convention"].to_numpy(dtype=object)
        out.loc[rows, "outcome"] = np.where(turn_items["joint_correct"].to_numpy(dtype=bool), *TURN_OUTCOMES)
        for column, side in (("gold", "gold_display"), ("predicted", "pred_display")):
            states = _joined_state(needed, side).reindex(index)
            out.loc[rows, column] = states.where(states.notna(), "").to_numpy(dtype=object)
    return out
