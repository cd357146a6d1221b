"""Support and intervals for the cross-lingual gaps: per group, where the two languages differ, and a
dialogue-clustered paired bootstrap interval of the gap.

`analysis.crosslingual.crosslingual_gaps` gives per slot, domain or turn depth each side's accuracy over
its own paired turns and the gap A − B. Here each side's per-turn rows of a group (the paired turn, its
dialogue, whether it is correct) become the sums `analysis.stats` resamples: the same dialogues drawn for both
sides, a percentile interval of the gap, and the support of `analysis.stats.support` (the group's dialogues and
turns, those where the two sides' correctness differs). As in `analysis.compare`, a gap whose sides differ in
fewer than `compare.MIN_SUPPORT` dialogues, or whose interval has no width, gets no interval (`tested`
False). No p-value is printed here: the chart shows intervals, one per group, not a test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import stats as S
from analysis.compare import MIN_SUPPORT

GAP_SUPPORT_COLUMNS = ["low", "high", "n_dialogues", "n_dialogues_differ", "n_turns_differ", "tested"]


def _side(rows: pd.DataFrame, groups: pd.Index, dialogues: pd.Index) -> S._Stats:
    """One side's rows (`group`, `dialogue`, `pair`, `ok`) as `_Stats` on `groups` and `dialogues`."""
    g = groups.get_indexer(rows["group"])
    d = dialogues.get_indexer(rows["dialogue"])
    keep = (g >= 0) & (d >= 0)
    g, d = g[keep], d[keep]
    ok = rows["ok"].to_numpy(dtype=float)[keep]
    ones = np.ones(len(g))
    shape = (len(groups), len(dialogues))
    flat = g * len(dialogues) + d

    def total(weights: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=shape[0] * shape[1]).reshape(shape)

    labels = pd.DataFrame({"group": groups})
    pair = rows["pair"].to_numpy(dtype="int64")[keep]
    return S._Stats(labels, total(ok), total(ones), total(ones), None, g, d, pair, (ok, ones))


def gap_support(
    rows_a: pd.DataFrame,
    rows_b: pd.DataFrame,
    groups: pd.Index,
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    min_support: int = MIN_SUPPORT,
) -> pd.DataFrame:
    """Per group of `groups` (in order): the gap's interval (`low`, `high`), the group's dialogues, the
    dialogues and paired turns where the two sides' correctness differs, and whether the gap is `tested`.

    `rows_a` / `rows_b`: one row per (group, paired turn) a side counts: `group` (named as in `groups`),
    `dialogue` (a key both sides share), `pair` (the paired turn's number) and `ok` (correct).

    >>> a = pd.DataFrame({"group": ["x"] * 3, "dialogue": ["d1", "d2", "d3"], "pair": [0, 1, 2], "ok": [1, 1, 0]})
    >>> b = a.assign(ok=[1, 0, 0])
    >>> gap_support(a, b, pd.Index(["x"]), n_resamples=50, min_support=1)[["n_dialogues", "n_dialogues_differ"]]
       n_dialogues  n_dialogues_differ
    0            3                   1
    """
    dialogues = pd.Index(pd.unique(pd.concat([rows_a["dialogue"], rows_b["dialogue"]], ignore_index=True)))
    side_a, side_b = _side(rows_a, groups, dialogues), _side(rows_b, groups, dialogues)
    identity = np.arange(len(groups))
    counted = S.support(side_a, side_b, identity, identity, len(groups), len(dialogues))
    weights = S.resample_counts(len(dialogues), n_resamples=n_resamples, seed=seed)
    gap = S._ratio(weights, side_a) - S._ratio(weights, side_b)
    low, high = S._percentiles(gap, level)
    tested = (counted["n_dialogues_differ"] >= min_support) & (high - low > S._TIE)
    return pd.DataFrame(
        {
            "low": np.where(tested, low, np.nan),
            "high": np.where(tested, high, np.nan),
            "n_dialogues": counted["n_dialogues"],
            "n_dialogues_differ": counted["n_dialogues_differ"],
            "n_turns_differ": counted["n_turns_differ"],
            "tested": tested,
        }
    )
