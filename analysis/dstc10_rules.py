"""The DSTC10 track 2 task 1 scorer's rules (the `dstc10` convention's own numbers), over scored tables.

Learnt from alexa/alexa-with-dstc10-track2-dataset `task1/scripts/scores.py` (`Metric.update`, `scores`):
over the 19 (domain, part, slot) keys of the task, an instance's slot is *none* when the key is absent and
holds *values* when present (even an empty list). Both present: each side's list as a set, every (gold,
predicted) pair compared after lower-casing and mapping `one`..`nine` to digits; with m matching pairs,
precision m/|pred|, recall m/|gold| and their F1 (0 when m is 0). The slot is right when that F1 is 1.0;
the joint goal holds when all 19 are right (a predicted slot the gold lacks breaks it; slots outside the
19 are ignored). Slot accuracy: right slots over 19 per instance. Value precision and recall: the F1s
summed over slots both sides hold, over the slots the prediction (resp. gold) holds values for; none
precision and recall: slots absent on both sides over those the prediction (resp. gold) leaves absent.
A ratio with a zero denominator is 0.

JGA and slot accuracy are the registry's own (`jga`, `slot_accuracy`) under the convention, whose value
rules give the same verdict (see `analysis.conventions`); the six value/none numbers are here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from analysis.conventions import DSTC10_NUMBER_WORDS
from analysis.scoring import Scored

NUMBER_WORDS = DSTC10_NUMBER_WORDS  # scores.py's `normalize_dict`, applied to a whole lower-cased value
CONVENTION = "dstc10"
SCORER = "DSTC10 track 2 task 1 (task1/scripts/scores.py)"
SIDES = ("value", "none")
PARTS = ("precision", "recall", "f1")
By = str | Sequence[str] | None


def value_list(display: str) -> list[str]:
    """A slot's value list back from the value string the DSTC10 reader wrote (`a|b`, or JSON text).

    >>> value_list("Cheap|cheap"), value_list('["", "x"]'), value_list("[]")
    (['Cheap', 'cheap'], ['', 'x'], [])
    """
    if display.startswith("["):
        try:
            decoded = json.loads(display)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(v, str) for v in decoded):
            return decoded
    return display.split("|")


def normalise(value: str) -> str:
    """scores.py's `_normalize_value`: lower-cased, then a whole number word as its digit.

    >>> normalise("Two"), normalise("twenty"), normalise(" one")
    ('2', 'twenty', ' one')
    """
    lowered = value.lower()
    return NUMBER_WORDS.get(lowered, lowered)


@lru_cache(maxsize=65536)
def value_f1(gold: str, pred: str) -> float:
    """The F1 `scores.py` gives one slot both sides hold, from the two value strings as the reader wrote
    them; the same float operations in the same order, so equal to its number bit for bit. Pairs are
    counted, so a list with two spellings of one value (`Cheap`, `cheap`) can score above 1.

    >>> value_f1("cheap", "Cheap"), value_f1("a|b", "a"), value_f1("one", "1"), value_f1("Cheap|cheap", "cheap")
    (1.0, 0.6666666666666666, 1.0, 1.3333333333333333)
    """
    refs = list(set(value_list(gold)))
    preds = list(set(value_list(pred)))
    matched = 0.0
    for r in refs:
        for p in preds:
            if normalise(r) == normalise(p):
                matched += 1
    if matched > 0.0:
        precision = matched / len(preds)
        recall = matched / len(refs)
        return 2 * precision * recall / (precision + recall)
    return 0.0


def not_dstc10(scored: Scored) -> str | None:
    """Why the DSTC10 value and none P/R/F1 do not apply, or None when they do (the `dstc10` convention).

    >>> from analysis.demo.testing import scored_from_states
    >>> print(not_dstc10(scored_from_states([{"hotel": {"area": "east"}}], [{}])))
    defined by DSTC10 track 2 task 1 (task1/scripts/scores.py) only: score under the dstc10 convention
    """
    if scored.convention.name == CONVENTION:
        return None
    return f"defined by {SCORER} only: score under the {CONVENTION} convention"


def turn_counts(scored: Scored) -> pd.DataFrame:
    """Per turn (row of `turns`): `cells` (scored slots), `gold_values` / `pred_values` (those each side
    holds), `both_none` (neither holds) and `f1_sum` (the value F1s of the slots both hold).
    Only slots of the convention's ontology count (the 19 of the task under `dstc10`)."""

    def compute() -> pd.DataFrame:
        from analysis.metrics import _cells_per_turn

        n = len(scored.turns)
        slots = scored.slots[scored.slots["in_ontology"].to_numpy(dtype=bool)]
        tid = slots["tid"].to_numpy()
        gold = slots["gold_display"].notna().to_numpy()
        pred = slots["pred_display"].notna().to_numpy()
        both = gold & pred
        pairs = slots.loc[both, ["gold_display", "pred_display"]]
        codes, uniques = pd.factorize(pd.MultiIndex.from_frame(pairs))
        f1 = np.array([value_f1(str(g), str(p)) for g, p in uniques], dtype=float)[codes] if len(codes) else []
        cells = _cells_per_turn(scored).astype(float)
        union = np.bincount(tid, minlength=n)
        return pd.DataFrame(
            {
                "cells": cells,
                "gold_values": np.bincount(tid[gold], minlength=n).astype(float),
                "pred_values": np.bincount(tid[pred], minlength=n).astype(float),
                "both_none": cells - union,
                "f1_sum": np.bincount(tid[both], weights=f1, minlength=n),
            }
        )

    return scored.memoised(("dstc10_turn_counts",), compute)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """scores.py's ratios: 0 where the denominator is 0."""
    out = np.zeros(len(numerator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _prf(totals: pd.DataFrame, side: str) -> pd.DataFrame:
    if side == "value":
        matched, predicted, gold = totals["f1_sum"], totals["pred_values"], totals["gold_values"]
    else:
        matched = totals["both_none"]
        predicted = totals["cells"] - totals["pred_values"]
        gold = totals["cells"] - totals["gold_values"]
    p = _ratio(matched.to_numpy(), predicted.to_numpy())
    r = _ratio(matched.to_numpy(), gold.to_numpy())
    f = _ratio(2 * p * r, p + r)
    return pd.DataFrame({f"{side}_precision": p, f"{side}_recall": r, f"{side}_f1": f}, index=totals.index)


def _scores(scored: Scored, side: str, by: By) -> dict[str, float] | pd.DataFrame:
    columns = [f"{side}_{part}" for part in PARTS]
    keys = [by] if isinstance(by, str) else list(by or [])
    unknown = [k for k in keys if k not in scored.turns.columns]
    if unknown:
        raise ValueError(f"the DSTC10 {side} P/R/F1 are sums over turns: by has to name turn columns, got {unknown}")
    # Outside the dstc10 convention nothing is counted (every run's suite asks for these six numbers).
    if not_dstc10(scored):
        if not keys:
            return dict.fromkeys(columns, float("nan"))
        groups = scored.turns.groupby([scored.turns[k].to_numpy() for k in keys], sort=True).size()
        out = pd.DataFrame(float("nan"), index=groups.index.set_names(keys), columns=columns)
        return out.reset_index()
    counts = turn_counts(scored)
    if not keys:
        row = _prf(counts.sum().to_frame().T, side)
        return {c: float(row[c].iloc[0]) for c in columns}
    grouped = counts.groupby([scored.turns[k].to_numpy() for k in keys], sort=True).sum()
    out = _prf(grouped, side)
    out.index = grouped.index.set_names(keys)
    return out.reset_index()


def value_prf(scored: Scored, *, by: By = None) -> dict[str, float] | pd.DataFrame:
    """scores.py's `value_prediction` precision, recall and F1 (NaN outside the `dstc10` convention)."""
    return _scores(scored, "value", by)


def none_prf(scored: Scored, *, by: By = None) -> dict[str, float] | pd.DataFrame:
    """scores.py's `none_prediction` precision, recall and F1 (NaN outside the `dstc10` convention)."""
    return _scores(scored, "none", by)
