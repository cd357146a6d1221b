"""The Slots page's views: per-slot scores and outcome counts, the outcome mix, value confusions and the
turns behind a slot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import metrics as M
from analysis.outcomes import OUTCOMES, Outcome
from analysis.scoring import Scored
from analysis.views.common import ABSENT, _concat, _slot_label


def slot_table(scored: Scored) -> pd.DataFrame:
    """Per slot: precision, recall, F1, gold support and the count of every outcome; worst F1 first."""
    per_slot = M.per_slot_prf(scored)
    pairs = M.slot_pairs(scored)
    codes = M.outcome_codes(scored.slots)
    if pairs is not None and codes is not None:
        # Counted per integer pair code and outcome code: the same counts as the group-by below.
        group, names = pairs
        n = len(OUTCOMES)
        cells = np.bincount(group * n + codes, minlength=len(names) * n).reshape(len(names), n)
        if _in_pair_order(per_slot, names):
            return _by_position(per_slot, cells[per_slot.index])
        counts = pd.concat([names, pd.DataFrame(cells, columns=list(OUTCOMES))], axis=1)
    else:
        counts = (
            scored.slots.groupby(["domain", "slot", "outcome"], observed=False)
            .size()
            .unstack("outcome", fill_value=0)
            .reindex(columns=list(OUTCOMES), fill_value=0)
            .reset_index()
        )
    counts.columns = [str(c) for c in counts.columns]
    table = per_slot[["domain", "slot", "precision", "recall", "f1", "support"]].merge(
        counts, on=["domain", "slot"], how="left"
    )
    table.insert(0, "slot_name", _slot_label(table["domain"], table["slot"]))
    table["support"] = table["support"].astype("int64")
    return table.reset_index(drop=True)


def _by_position(per_slot: pd.DataFrame, cells: np.ndarray) -> pd.DataFrame:
    """`slot_table` when `per_slot`'s rows are the pairs' rows (`_in_pair_order`) and `cells` their outcome
    counts in that order: one frame, the same table as the merge."""
    columns = ["domain", "slot", "precision", "recall", "f1"]
    return pd.DataFrame(
        {
            "slot_name": _slot_label(per_slot["domain"], per_slot["slot"]).array,
            **{c: per_slot[c].array for c in columns},
            "support": per_slot["support"].to_numpy().astype("int64"),
            **{str(k): cells[:, i] for i, k in enumerate(OUTCOMES)},
        }
    )


def _in_pair_order(per_slot: pd.DataFrame, names: pd.DataFrame) -> bool:
    """Whether `per_slot`'s index gives each row's position among the (domain, slot) pairs `names`."""
    index = per_slot.index.to_numpy()
    if (
        len(per_slot) != len(names)
        or index.dtype.kind not in "iu"
        or not np.array_equal(np.sort(index), np.arange(len(names)))
    ):
        return False
    return bool(
        np.array_equal(per_slot["domain"].to_numpy(dtype=object), names["domain"].to_numpy(dtype=object)[index])
        and np.array_equal(per_slot["slot"].to_numpy(dtype=object), names["slot"].to_numpy(dtype=object)[index])
    )


def outcome_mix(scoreds: Scored | Sequence[Scored], *, by: str = "slot", errors_only: bool = True) -> pd.DataFrame:
    """Outcome counts per run and slot (or domain), with each outcome's share of the group's errors
    (or of all its rows when `errors_only` is false). Groups with most errors first."""
    if by not in ("slot", "domain"):
        raise ValueError(f"by has to be one of slot, domain, got {by!r}")
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    slots = _concat([s.slots for s in items])
    if not len(slots):
        return pd.DataFrame(columns=["run_id", "group", "outcome", "n", "share"])
    group = _slot_label(slots["domain"], slots["slot"]) if by == "slot" else slots["domain"].astype(str)
    frame = pd.DataFrame({"run_id": slots["run_id"], "group": group, "outcome": slots["outcome"]})
    if errors_only:
        frame = frame[frame["outcome"] != Outcome.CORRECT.key]
        frame["outcome"] = frame["outcome"].cat.remove_categories([Outcome.CORRECT.key])
    for rare in (Outcome.UNPARSEABLE, Outcome.OFF_VOCABULARY):  # only some runs have these outcomes
        if not (frame["outcome"] == rare.key).any():
            frame["outcome"] = frame["outcome"].cat.remove_categories([rare.key])
    counts = frame.groupby(["run_id", "group", "outcome"], observed=False).size().rename("n").reset_index()
    totals = counts.groupby(["run_id", "group"])["n"].transform("sum")
    counts["share"] = counts["n"] / totals.where(totals > 0)
    counts = counts[totals > 0]
    order = counts.groupby("group")["n"].sum().sort_values(ascending=False)
    counts["_order"] = counts["group"].map({g: i for i, g in enumerate(order.index)})
    counts["outcome"] = counts["outcome"].astype(str)
    return counts.sort_values(["_order", "run_id", "outcome"]).drop(columns="_order").reset_index(drop=True)


def _slot_rows(scored: Scored, domain: str, slot: str) -> pd.DataFrame:
    slots = scored.slots
    return slots[(slots["domain"] == domain) & (slots["slot"] == slot)]


def value_confusions(scored: Scored, *, domain: str, slot: str, top: int = 15) -> pd.DataFrame:
    """The most frequent (gold value, predicted value) pairs among the errors of one slot, with an
    example turn each; values are shown as written in the files."""
    rows = _slot_rows(scored, domain, slot)
    rows = rows[rows["outcome"] != Outcome.CORRECT.key]
    columns = ["gold", "predicted", "outcome", "n", "share", "dialogue_id", "turn_index"]
    if not len(rows):
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(
        {
            "gold": rows["gold_display"].fillna(ABSENT).astype(str),
            "predicted": rows["pred_display"].fillna(ABSENT).astype(str),
            "outcome": rows["outcome"].astype(str),
            "dialogue_id": rows["dialogue_id"],
            "turn_index": rows["turn_index"],
        }
    )
    grouped = (
        frame.groupby(["gold", "predicted", "outcome"], sort=False)
        .agg(n=("dialogue_id", "size"), dialogue_id=("dialogue_id", "first"), turn_index=("turn_index", "first"))
        .reset_index()
    )
    grouped["share"] = grouped["n"] / len(frame)
    grouped = grouped.sort_values(["n", "gold", "predicted"], ascending=[False, True, True], kind="stable")
    return grouped.head(top)[columns].reset_index(drop=True)


def slot_examples(
    scored: Scored,
    *,
    domain: str,
    slot: str,
    gold: str | None = None,
    predicted: str | None = None,
    errors_only: bool = True,
    limit: int = 200,
) -> pd.DataFrame:
    """The turns behind a slot (optionally one gold -> predicted confusion), to open in the viewer."""
    rows = _slot_rows(scored, domain, slot)
    if errors_only:
        rows = rows[rows["outcome"] != Outcome.CORRECT.key]
    shown_gold = rows["gold_display"].fillna(ABSENT).astype(str)
    shown_pred = rows["pred_display"].fillna(ABSENT).astype(str)
    keep = np.ones(len(rows), dtype=bool)
    if gold is not None:
        keep &= (shown_gold == gold).to_numpy()
    if predicted is not None:
        keep &= (shown_pred == predicted).to_numpy()
    out = pd.DataFrame(
        {
            "dialogue_id": rows["dialogue_id"],
            "turn_index": rows["turn_index"],
            "gold": shown_gold,
            "predicted": shown_pred,
            "outcome": rows["outcome"].astype(str),
        }
    )[keep]
    return out.head(limit).reset_index(drop=True)


def split_slot(table: pd.DataFrame, slot_name: str) -> tuple[str, str]:
    """(domain, slot) of a `domain-slot` label of `slot_table` (slot names may hold hyphens too)."""
    hit = table[table["slot_name"] == slot_name]
    if not len(hit):
        raise ValueError(f"slot has to be one of the run's slots, got {slot_name!r}")
    return str(hit["domain"].iloc[0]), str(hit["slot"].iloc[0])


def slot_error_turns(scored: Scored, *, domain: str, slot: str) -> pd.DataFrame:
    """Every turn with an error on one slot (all confusions, no limit), with gold, predicted and outcome."""
    return slot_examples(scored, domain=domain, slot=slot, limit=len(scored.slots))
