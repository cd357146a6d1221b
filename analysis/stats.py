"""Statistics over scored runs: dialogue-level (cluster) bootstrap intervals, paired tests, seed summaries.

Turns of one dialogue are correlated, so every interval here resamples **dialogues** (METRICS.md,
"Statistics"). Each metric is first broken into per-turn numerators and denominators taken from the
`analysis.metrics` functions themselves (called with `by=` the turn key, so no metric is implemented
twice), summed per dialogue, and then every resample is one row of a (resamples x dialogues) matrix of
dialogue counts: a resampled metric is a ratio of weighted sums, one matrix product for all resamples.

* JGA, final-turn JGA, seed slot F1, joint F1, TRADE slot accuracy and AGA are means over turns:
  numerator the per-turn score, denominator 1 per turn that counts.
* Micro slot F1 / precision / recall: numerators 2tp / tp / tp, denominators 2tp+fp+fn / tp+fp / tp+fn.
* Slot accuracy: numerator the correct cells, denominator the cells (ontology slots) per turn.
* GCA: its four label counts (correct, wrong, over-predicted, missed) summed per dialogue; a resample's
  GCA is `metrics.gca_from_counts` of the weighted sums.

Intervals are percentile intervals of the resampled estimates; the point estimate is the metrics
module's own value. Dialogues are identified case-insensitively (`analysis.model.dialogue_key`), so
runs over the same dialogues (and the runs of one combination) share the resampled dialogues.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis import gold_side, scorer_inputs
from analysis import metrics as M
from analysis import registry as R
from analysis.diagnostics import agreement
from analysis.model import dialogue_key
from analysis.scoring import Scored

TURN_KEY = ["run_id", "dialogue_id", "turn_index"]
METHOD = "cluster bootstrap over dialogues, percentile interval"
PAIRED_METHOD = "paired cluster bootstrap over shared dialogues; p = 2 x min(share of resampled deltas <= 0, share >= 0), capped at 1"
_TIE = 1e-12  # resampled deltas within this of 0 are ties (float noise of summing in another order)

# How each metric is resampled comes from the registry (`Metric.interval`):
# a mean over turns, and GCA: key -> (metric function, its column in a grouped result), the function's
# value being the point estimate; a mean over turns is resampled from its per-turn scores (`_turn_parts`),
# GCA from its four label counts (`_GCA`, taken first in `_stats`);
_MEAN_OVER_TURNS: dict[str, tuple[Callable[..., Any], str]] = {
    m.name: (m.function, m.column) for m in R.METRICS if m.interval in ("turns", "gca")
}
# micro P/R/F1: key -> its key in `slot_prf_micro`'s result; ratios of ontology cells: key -> metric.
_MICRO = {m.name: m.column for m in R.METRICS if m.interval == "micro"}
_CELLS = {m.name: m for m in R.METRICS if m.interval == "cells"}
_GCA = {m.name: m for m in R.METRICS if m.interval == "gca"}  # a function of four summed counts
METRICS = R.INTERVAL_METRICS


@dataclass(frozen=True)
class _Stats:
    """Per-group, per-dialogue sufficient statistics of one metric."""

    labels: pd.DataFrame  # one row per group, the `by` columns (no columns without `by`)
    num: np.ndarray  # (groups, dialogues)
    den: np.ndarray  # (groups, dialogues)
    rows: np.ndarray  # (groups, dialogues): counted turns (turn-group rows) per dialogue
    counts: np.ndarray | None = None  # GCA: (4, groups, dialogues) label counts; num and den unused
    # Per counted turn (turn-group row): its group, dialogue position and turn index, and the values
    # summed into the matrices above ([num, den], GCA: its four counts); `support` compares two runs' rows.
    row_group: np.ndarray | None = None
    row_dialogue: np.ndarray | None = None
    row_turn: np.ndarray | None = None
    row_parts: tuple[np.ndarray, ...] = ()


def _check(metric: str, n_resamples: int, level: float) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric has to be one of {', '.join(METRICS)}, got {metric!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples has to be a positive number of resamples, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level has to be strictly between 0 and 1 (0.95 is a 95% interval), got {level}")


def _turn_parts(scored: Scored, metric: str, keys: list[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Per turn (and slot-level group): the turn key and `keys` columns, numerator, denominator."""
    full = list(dict.fromkeys([*TURN_KEY, *keys]))
    if metric == "jga":
        return _jga_parts(scored, full)
    if metric in _MEAN_OVER_TURNS:
        assert metric not in _GCA, "GCA is resampled from its counts (_stats)"
        fn, column = _MEAN_OVER_TURNS[metric]
        per = fn(scored, by=full)
        assert isinstance(per, pd.DataFrame)
        per = per[per["n_turns"] > 0].reset_index(drop=True)  # empty slices are listed with NaN; skip them
        den = per["n_turns"].to_numpy(dtype=float)  # turns with a defined score (a mean skips NaN)
        value = per[column].to_numpy(dtype=float)
    elif metric in _MICRO:
        per = M.slot_prf_micro(scored, by=full)
        assert isinstance(per, pd.DataFrame)
        tp, fp, fn_ = (per[c].to_numpy(dtype=float) for c in ("tp", "fp", "fn"))
        num = {"f1": 2 * tp, "precision": tp, "recall": tp}[_MICRO[metric]]
        den = {"f1": 2 * tp + fp + fn_, "precision": tp + fp, "recall": tp + fn_}[_MICRO[metric]]
        return per, num, den
    else:  # slot_accuracy: a ratio of cells, so weight each turn's accuracy by its number of cells
        cells = _CELLS[metric]
        per = cells.function(scored, by=full)
        assert isinstance(per, pd.DataFrame)
        den = _slot_accuracy_cells(scored, per, keys)
        value = per[cells.column].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        num = np.where(den > 0, value * den, 0.0)
    return per, num, np.nan_to_num(den)


def _jga_parts(scored: Scored, full: list[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """JGA's per-turn parts without a group-by: `turn_facts` already has one row per turn (per turn and
    slot-level group), and `full` starts with the turn key, so every row is its own group with one turn.
    Equal to the generic path through `joint_goal_accuracy(by=full)` (tested), about 3x faster."""
    facts = M.turn_facts(scored, by=full)
    per = facts[full].reset_index(drop=True)
    value = facts["joint_correct"].to_numpy(dtype=float)
    return per, value, np.ones(len(per))


def _slot_accuracy_cells(scored: Scored, per: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """The number of ontology cells behind each per-turn slot accuracy (the metric's denominator)."""
    slot_keys = [k for k in keys if k in M.SLOT_LEVEL]
    sizes = M._ontology_size(scored, slot_keys)
    assert isinstance(sizes, pd.DataFrame)
    cells = per[["run_id", *slot_keys]].merge(sizes, on=["run_id", *slot_keys], how="left")["n_ontology"]
    cells_arr = cells.to_numpy(dtype=float)
    if not slot_keys and scored.convention.ontology == "listed" and "n_listed" in scored.turns:
        # DSTC9: a turn counts the slots its gold lists, as `metrics.slot_accuracy` does.
        listed = per[TURN_KEY].merge(scored.turns[[*TURN_KEY, "n_listed"]], on=TURN_KEY, how="left")["n_listed"]
        listed_arr = listed.fillna(0).to_numpy(dtype=float)
        cells_arr = np.where(listed_arr > 0, listed_arr, cells_arr)
    return cells_arr


def _stats(scored: Scored, metric: str, keys: list[str], dialogues: pd.Index) -> _Stats:
    parts: list[np.ndarray] = []
    if metric in _GCA:
        per = M.gca_counts(scored, by=list(dict.fromkeys([*TURN_KEY, *keys])))
        parts = [per[c].to_numpy(dtype=float) for c in M.GCA_COUNTS]
        num, den = np.zeros(len(per)), np.ones(len(per))  # num: the group's GCA per turn, set below
    else:
        per, num, den = _turn_parts(scored, metric, keys)
    d = _dialogue_positions(scored, per, dialogues)
    keep = d >= 0  # rows of dialogues outside `dialogues` (unpaired ones) do not count
    per, num, den, d = per[keep], num[keep], den[keep], d[keep]
    parts = [p[keep] for p in parts]
    if keys:
        grouped = per.groupby(keys, sort=True, observed=True, dropna=False)
        g = grouped.ngroup().to_numpy()
        labels = grouped.size().reset_index()[keys]
    else:
        g = np.zeros(len(per), dtype="int64")
        labels = pd.DataFrame(index=range(1))
    n_groups, n_dialogues = len(labels), len(dialogues)
    flat = g * n_dialogues + d
    size = n_groups * n_dialogues

    def total(weights: np.ndarray | None) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=size).astype(float).reshape(n_groups, n_dialogues)

    counts = None
    row_parts: tuple[np.ndarray, ...] = (num, den)
    if parts:  # resamples use the counts; num / den hold the group's GCA over its turns (unit weights: GCA)
        counts = np.stack([total(p) for p in parts])
        group_gca = M.gca_from_counts(*(np.bincount(g, weights=p, minlength=n_groups) for p in parts))
        num = np.asarray(group_gca, dtype=float)[g] if len(g) else num
        row_parts = tuple(parts)
    turn = per["turn_index"].to_numpy(dtype="int64")
    return _Stats(labels.reset_index(drop=True), total(num), total(den), total(None), counts, g, d, turn, row_parts)


SUPPORT_COLUMNS = ("n_dialogues", "n_turns", "n_dialogues_differ", "n_turns_differ")


def support(
    rows_a: _Stats, rows_b: _Stats, where_a: np.ndarray, where_b: np.ndarray, n_groups: int, n_dialogues: int
) -> dict[str, np.ndarray]:
    """Per group (`n_groups` of them; `where_a`/`where_b` map each run's own groups to them): the group's
    own dialogues and turns (counted by either run: `n_dialogues`, `n_turns`), and those where the two runs
    differ (`n_dialogues_differ`, `n_turns_differ`): a turn differs when its numerator or denominator (GCA:
    any of its four counts) differs, a turn only one run counts included; a dialogue differs when one of
    its turns does. Runs over the same `n_dialogues` dialogues (positions from `_stats`)."""
    assert rows_a.row_group is not None and rows_b.row_group is not None
    assert rows_a.row_dialogue is not None and rows_b.row_dialogue is not None
    assert rows_a.row_turn is not None and rows_b.row_turn is not None
    group = np.concatenate([where_a[rows_a.row_group], where_b[rows_b.row_group]])
    dialogue = np.concatenate([rows_a.row_dialogue, rows_b.row_dialogue])
    turn = np.concatenate([rows_a.row_turn, rows_b.row_turn])
    n_a = len(rows_a.row_group)
    span = int(turn.max()) - int(turn.min()) + 1 if len(turn) else 1
    flat = (group * n_dialogues + dialogue) * span + (turn - (int(turn.min()) if len(turn) else 0))
    keys, inverse = np.unique(flat, return_inverse=True)
    differ = np.zeros(len(keys), dtype=bool)
    for part_a, part_b in zip(rows_a.row_parts, rows_b.row_parts, strict=True):
        sum_a = np.bincount(inverse[:n_a], weights=part_a, minlength=len(keys))
        sum_b = np.bincount(inverse[n_a:], weights=part_b, minlength=len(keys))
        differ |= np.abs(sum_a - sum_b) > _TIE
    key_group = keys // (n_dialogues * span)
    group_dialogue = np.unique(keys // span)
    differ_dialogue = np.unique(keys[differ] // span)
    return {
        "n_dialogues": np.bincount(group_dialogue // n_dialogues, minlength=n_groups),
        "n_turns": np.bincount(key_group, minlength=n_groups),
        "n_dialogues_differ": np.bincount(differ_dialogue // n_dialogues, minlength=n_groups),
        "n_turns_differ": np.bincount(key_group[differ], minlength=n_groups),
    }


def _dialogues(scored: Scored) -> pd.Index:
    """The run's dialogues (pairing keys) in order of first turn; memoised on the Scored (an Index is
    immutable, so sharing it is safe)."""
    return scored.memoised(
        "dialogue_keys",
        lambda: gold_side.shared(scored, "dialogue_keys", lambda: pd.Index(turn_dialogue_keys(scored).unique())),
    )


def turn_dialogue_positions(scored: Scored) -> np.ndarray:
    """Each turn's dialogue position in `_dialogues` (read-only), memoised and shared by the runs of one gold
    file."""

    def compute() -> np.ndarray:
        found = _dialogues(scored).get_indexer(turn_dialogue_keys(scored))
        found.flags.writeable = False
        return found

    return scored.memoised(("turn_dialogues",), lambda: gold_side.shared(scored, "turn_dialogues", compute))


def _dialogue_positions(scored: Scored, per: pd.DataFrame, dialogues: pd.Index) -> np.ndarray:
    """Each row of `per` its dialogue's position in `dialogues` (-1: not among them). When the rows name the
    turns' dialogues in the turns' order (JGA and every per-turn metric without a slot-level key) and
    `dialogues` are the run's own, the turns' memoised positions: the same integers without keying
    7,000 ids again (about 3 ms a MultiWOZ-size run)."""
    ids, turns = per["dialogue_id"], scored.turns["dialogue_id"]
    if dialogues is _dialogues(scored) and len(ids) == len(turns) and ids.array.equals(turns.array):
        return turn_dialogue_positions(scored)
    return dialogues.get_indexer(dialogue_key(ids))


def turn_dialogue_keys(scored: Scored) -> pd.Series:
    """Each turn's dialogue pairing key (`dialogue_key`), memoised on the Scored: shared, copy to change."""
    return scored.memoised(
        "turn_dialogue_keys",
        lambda: gold_side.shared(scored, "turn_dialogue_keys", lambda: dialogue_key(scored.turns["dialogue_id"])),
    )


def resample_counts(n_dialogues: int, *, n_resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """(n_resamples, n_dialogues) counts: how often each dialogue is drawn in each resample.

    Every row sums to `n_dialogues` (a multinomial draw, drawn as indices with replacement). The
    matrix depends only on its three arguments, so runs of one test set share it (memoised, read-only).

    >>> resample_counts(3, n_resamples=2, seed=0).sum(axis=1).tolist()
    [3.0, 3.0]
    """
    if n_dialogues * n_resamples <= _MEMO_CELLS:
        return _memo_counts(n_dialogues, n_resamples, seed)
    return _draw_counts(n_dialogues, n_resamples, seed)


_MEMO_CELLS = 5_000_000  # memoise matrices up to 40 MB (1,000 resamples of 5,000 dialogues)


def _draw_counts(n_dialogues: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if n_dialogues == 0:
        return np.zeros((n_resamples, 0))
    drawn = rng.integers(0, n_dialogues, size=(n_resamples, n_dialogues))
    drawn += (np.arange(n_resamples) * n_dialogues)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=n_resamples * n_dialogues)
    out = counts.reshape(n_resamples, n_dialogues).astype(float)
    out.flags.writeable = False
    return out


_memo_counts = functools.lru_cache(maxsize=4)(_draw_counts)


def _ratio(weights: np.ndarray, stats: _Stats) -> np.ndarray:
    """(n_resamples, groups) resampled estimates; NaN where a resample has no denominator."""
    if stats.counts is not None:
        return np.asarray(M.gca_from_counts(*(weights @ part.T for part in stats.counts)), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ stats.num.T) / (weights @ stats.den.T)


def _percentiles(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column (group) of `samples`, the central `level` interval, NaN resamples left out. The columns
    without NaN take `np.quantile` (one vectorised call: the same numbers as `np.nanquantile`, which goes
    column by column in Python as soon as one NaN is anywhere in the matrix)."""
    alpha = (1 - level) / 2
    quantiles = [alpha, 1 - alpha]
    clean = ~np.isnan(samples).any(axis=0)
    if clean.all():
        low, high = np.quantile(samples, quantiles, axis=0)
        return low, high
    out = np.empty((2, samples.shape[1]))
    out[:, clean] = np.quantile(samples[:, clean], quantiles, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN group (empty slice) gives NaN
        out[:, ~clean] = np.nanquantile(samples[:, ~clean], quantiles, axis=0)
    return out[0], out[1]


def _point(scored: Scored, metric: str, keys: list[str]) -> float | pd.DataFrame:
    """The metrics module's own value (float) or frame with `keys` and `estimate`."""
    by = keys or None
    if metric in _MICRO:
        result = M.slot_prf_micro(scored, by=by)
        column = _MICRO[metric]
        if isinstance(result, dict):
            return float(result[column])
        return result[[*keys, column]].rename(columns={column: "estimate"})
    fn, column = _MEAN_OVER_TURNS.get(metric) or (_CELLS[metric].function, _CELLS[metric].column)
    value = fn(scored, by=by)
    if isinstance(value, pd.DataFrame):
        return value[[*keys, column]].rename(columns={column: "estimate"})
    return float(value)


def _with_points(labels: pd.DataFrame, point: float | pd.DataFrame, keys: list[str]) -> np.ndarray:
    if not keys:
        assert not isinstance(point, pd.DataFrame)
        return np.array([point])
    assert isinstance(point, pd.DataFrame)
    return labels.merge(point, on=keys, how="left")["estimate"].to_numpy(dtype=float)


def bootstrap_ci(
    scored: Scored,
    metric: str = "jga",
    *,
    by: M.By = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | pd.DataFrame:
    """Cluster-bootstrap percentile interval of a metric, resampling dialogues.

    `metric` is one of `METRICS`: the registry's metrics with an interval (`analysis.registry`; `jga`,
    `slot_f1_micro`, `slot_precision`, `slot_recall`, `slot_f1_seed`, `slot_accuracy`, `aga`, ...). Without `by`: a dict with `estimate` (exactly the
    metrics module's value), `low`, `high`, `n_dialogues`, `n_turns`, `n_resamples`, `level`, `seed`,
    `method`. With `by` (e.g. `"domain"` for per-domain JGA, `"turn_index"` for JGA by turn depth,
    `"run_id"` for the runs of a combination): one row per group with the same fields, all groups
    resampled with the same dialogues. An empty slice gives NaN. `n_turns` counts the turns (per group:
    turn-group rows) the metric averages over.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states({"a": [{}, {"hotel": {"area": "east"}}], "b": [{}]}, {"a": [{}, {}], "b": [{}]})
    >>> ci = bootstrap_ci(s, "jga", n_resamples=200)
    >>> round(ci["estimate"], 4), ci["n_dialogues"], ci["low"] <= ci["estimate"] <= ci["high"]
    (0.6667, 2, True)
    """
    _check(metric, n_resamples, level)
    keys = M._by_list(by)
    # Memoised on the Scored (keyed on its tables): the leaderboard, the domain and depth pages and the
    # background prefetch ask for the same intervals. Callers get a copy, never the memo itself.
    result = scored.memoised(
        ("bootstrap_ci", metric, tuple(keys), n_resamples, level, seed),
        lambda: _bootstrap_ci(scored, metric, keys, n_resamples, level, seed),
    )
    return result.copy()


def _bootstrap_ci(
    scored: Scored, metric: str, keys: list[str], n_resamples: int, level: float, seed: int
) -> dict[str, Any] | pd.DataFrame:
    dialogues = _dialogues(scored)
    stats = _stats(scored, metric, keys, dialogues)
    point = _with_points(stats.labels, _point(scored, metric, keys), keys)
    out = _intervals(stats, point, metric, len(dialogues), n_resamples, level, seed)
    unread = scorer_inputs.unread_runs(scored.alignment)
    # A scorer's name over gold it never reads: no headline estimate, no interval (`registry.unread_gold`).
    # Slices (per domain, per turn) keep theirs, as the pages that show them compute their numbers directly.
    if unread and set(keys) <= {"run_id"}:
        rows = out["run_id"].isin(list(unread)) if "run_id" in keys else np.ones(len(out), dtype=bool)
        out.loc[rows, ["estimate", "low", "high"]] = np.nan
    if keys:
        return out
    record = out.iloc[0].to_dict()
    return {
        "metric": metric,
        "estimate": float(record["estimate"]),
        "low": float(record["low"]),
        "high": float(record["high"]),
        "n_dialogues": len(dialogues),
        "n_turns": int(record["n_turns"]),
        "n_resamples": n_resamples,
        "level": level,
        "seed": seed,
        "method": METHOD,
    }


def _intervals(
    stats: _Stats, estimate: np.ndarray, metric: str, n_dialogues: int, n_resamples: int, level: float, seed: int
) -> pd.DataFrame:
    """Per group of `stats` (its per-dialogue sums over `n_dialogues` dialogues), the cluster-bootstrap
    percentile interval around `estimate`, with the group's dialogues and turns: what `bootstrap_ci` and
    `runs_bootstrap_ci` return, one resampling for both."""
    samples = _ratio(resample_counts(n_dialogues, n_resamples=n_resamples, seed=seed), stats)
    low, high = _percentiles(samples, level)
    return stats.labels.assign(
        metric=metric,
        estimate=estimate,
        low=low,
        high=high,
        n_dialogues=(stats.rows > 0).sum(axis=1),
        n_turns=stats.rows.sum(axis=1).astype("int64"),
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        method=METHOD,
    )


def _restrict(scored: Scored, dialogues: pd.Index) -> Scored:
    """The scored tables of the given dialogues only (unchanged when every dialogue is kept)."""
    keep = dialogue_key(scored.turns["dialogue_id"]).isin(dialogues)
    if keep.all():
        return scored
    turns = scored.turns[keep.to_numpy()]
    slots = scored.slots[scored.slots["tid"].isin(turns["tid"])]
    return Scored(scored.convention, scored.metas, turns, slots, scored.ontology, scored.alignment)


def _where(stats: _Stats, labels: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per group of `stats`, its row in `labels` (the union of two runs' groups)."""
    if not keys:
        return np.zeros(len(stats.labels), dtype="int64")
    return pd.MultiIndex.from_frame(labels[keys]).get_indexer(pd.MultiIndex.from_frame(stats.labels[keys]))


def _aligned(stats: _Stats, labels: pd.DataFrame, keys: list[str]) -> _Stats:
    if not keys:
        return stats
    where = _where(stats, labels, keys)
    shape = (len(labels), stats.num.shape[1])
    arrays = []
    for part in (stats.num, stats.den, stats.rows):
        full = np.zeros(shape)
        full[where] = part
        arrays.append(full)
    counts = None
    if stats.counts is not None:
        counts = np.zeros((len(stats.counts), *shape))
        counts[:, where] = stats.counts
    return _Stats(labels, arrays[0], arrays[1], arrays[2], counts)


def paired_bootstrap(
    a: Scored,
    b: Scored,
    metric: str = "jga",
    *,
    by: M.By = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | pd.DataFrame:
    """Paired bootstrap of `b - a` over the dialogues both runs hold (paired case-insensitively).

    Both runs are resampled with the same dialogue counts. Returns `estimate_a`, `estimate_b` (the
    metrics module's values on the shared dialogues), `delta` (b - a), its percentile interval `low`,
    `high`, a two-sided `p_value` (twice the smaller share of resampled deltas on either side of 0,
    ties counting on both sides, capped at 1: identical runs give exactly 1), `p_floor` (1/B, B the
    `n_resamples`: a resampled p of 0 only says p < 1/B) and `p_text`, the p to print (`format_p`:
    `p < 0.001 (B = 1,000)` when no resample fell on the other side), and `win_ratio` (the share
    of resamples where b beats a, ties counted half), plus the dialogue counts: `n_dialogues` paired
    (resampled), and the support (`support`): the turns the metric counts (`n_turns`; per group the group's
    own, `n_group_dialogues` its dialogues) and the dialogues and turns where the two runs differ
    (`n_dialogues_differ`, `n_turns_differ`). With `by` (turn or slot-level columns other than `run_id`):
    one row per group.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states({"a": [{"hotel": {"area": "east"}}], "b": [{}]}, {"a": [{}], "b": [{}]})
    >>> paired_bootstrap(s, s, n_resamples=100)["p_value"]
    1.0
    """
    _check(metric, n_resamples, level)
    keys = M._by_list(by)
    if "run_id" in keys:
        raise ValueError("paired_bootstrap pairs two runs: by= takes turn or slot columns other than run_id")
    pair = _paired(a, b, metric, keys)
    weights = resample_counts(len(pair.shared), n_resamples=n_resamples, seed=seed)
    delta = _ratio(weights, pair.stats_b) - _ratio(weights, pair.stats_a)
    low, high = _percentiles(delta, level)
    p_value, win_ratio = _sides(delta)
    out = pair.labels.assign(
        metric=metric,
        estimate_a=pair.point_a,
        estimate_b=pair.point_b,
        delta=pair.point_b - pair.point_a,
        low=low,
        high=high,
        p_value=p_value,
        p_floor=1 / n_resamples,
        p_text=[format_p(p, n_resamples=n_resamples) for p in p_value],
        win_ratio=win_ratio,
        n_dialogues=len(pair.shared),
        n_group_dialogues=pair.support["n_dialogues"],
        n_turns=pair.support["n_turns"],
        n_dialogues_differ=pair.support["n_dialogues_differ"],
        n_turns_differ=pair.support["n_turns_differ"],
        only_in_a=pair.only_in_a,
        only_in_b=pair.only_in_b,
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        method=PAIRED_METHOD,
    )
    return out if keys else _paired_record(out)


@dataclass(frozen=True)
class _Pair:
    """Two runs on the dialogues both hold: their per-dialogue sums on the union of their groups (`labels`),
    their point estimates there, the support of each group and the dialogues only one run holds."""

    shared: pd.Index
    labels: pd.DataFrame
    stats_a: _Stats
    stats_b: _Stats
    point_a: np.ndarray
    point_b: np.ndarray
    support: dict[str, np.ndarray]
    only_in_a: int
    only_in_b: int


def _paired(a: Scored, b: Scored, metric: str, keys: list[str]) -> _Pair:
    dialogues_a, dialogues_b = _dialogues(a), _dialogues(b)
    shared = dialogues_a.intersection(dialogues_b, sort=False)
    a_shared, b_shared = _restrict(a, shared), _restrict(b, shared)
    stats_a = _stats(a_shared, metric, keys, shared)
    stats_b = _stats(b_shared, metric, keys, shared)
    labels = stats_a.labels
    if keys:
        labels = (
            pd.concat([stats_a.labels, stats_b.labels], ignore_index=True)
            .drop_duplicates()
            .sort_values(keys)
            .reset_index(drop=True)
        )
    counted = support(
        stats_a, stats_b, _where(stats_a, labels, keys), _where(stats_b, labels, keys), len(labels), len(shared)
    )
    if keys:
        stats_a, stats_b = _aligned(stats_a, labels, keys), _aligned(stats_b, labels, keys)
    point_a = _with_points(labels, _point(a_shared, metric, keys), keys)
    point_b = _with_points(labels, _point(b_shared, metric, keys), keys)
    only_in_a, only_in_b = len(dialogues_a) - len(shared), len(dialogues_b) - len(shared)
    return _Pair(shared, labels, stats_a, stats_b, point_a, point_b, counted, only_in_a, only_in_b)


def _sides(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of resampled deltas (NaN left out): the two-sided p (twice the smaller share on either side
    of 0, ties within `_TIE` on both sides, capped at 1) and the win ratio (share above 0, ties counted half)."""
    valid = (~np.isnan(delta)).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        at_most = (delta <= _TIE).sum(axis=0) / valid
        at_least = (delta >= -_TIE).sum(axis=0) / valid
        ties = (np.abs(delta) <= _TIE).sum(axis=0) / valid
        wins = (delta > _TIE).sum(axis=0) / valid
    return np.minimum(1.0, 2 * np.minimum(at_most, at_least)), wins + ties / 2


def _paired_record(out: pd.DataFrame) -> dict[str, Any]:
    """The one row of an overall `paired_bootstrap` as the dict it returns."""
    record = out.iloc[0].to_dict()
    floats = ("estimate_a", "estimate_b", "delta", "low", "high", "p_value", "p_floor", "win_ratio")
    ints = ("n_dialogues", "n_turns", "n_dialogues_differ", "n_turns_differ", "only_in_a", "only_in_b")
    return {
        "metric": str(record["metric"]),
        **{k: float(record[k]) for k in floats},
        "p_text": str(record["p_text"]),
        **{k: int(record[k]) for k in ints},
        "n_resamples": int(record["n_resamples"]),
        "level": float(record["level"]),
        "seed": int(record["seed"]),
        "method": PAIRED_METHOD,
    }


def format_p(p: float, *, n_resamples: int | None = None, log10_p: float | None = None) -> str:
    """The p-value to print. A resampled p (`n_resamples` = B given) of 0 only says that no resample fell
    on the other side: it prints as `p < 1/B` with B named, never as p = 0. An exact p prints as is, and
    one below the smallest float from its base-10 logarithm (`log10_p`).

    >>> format_p(0.0, n_resamples=1000), format_p(0.046, n_resamples=1000)
    ('p < 0.001 (B = 1,000)', 'p = 0.046 (B = 1,000)')
    >>> format_p(0.0123), format_p(3.2e-7), format_p(0.0, log10_p=-602.3)
    ('p = 0.0123', 'p = 3.2e-07', 'p = 5.0e-603')
    """
    if p is None or math.isnan(p):
        return "p n/a"
    if n_resamples is not None:
        resamples = f"(B = {n_resamples:,})"
        return f"p < {1 / n_resamples:.3g} {resamples}" if p == 0 else f"p = {p:.3g} {resamples}"
    if p == 0 and log10_p is not None and math.isfinite(log10_p):
        exponent = math.floor(log10_p)
        mantissa = 10 ** (log10_p - exponent)
        if round(mantissa, 1) >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return f"p = {mantissa:.1f}e{exponent}"
    return f"p = {p:.3g}" if p >= 1e-4 or p == 0 else f"p = {p:.1e}"


def log_binomial_two_sided_p(k: int, n: int) -> float:
    """Natural logarithm of `binomial_two_sided_p(k, n)`, finite where the p itself underflows to 0.

    >>> round(log_binomial_two_sided_p(0, 5), 6) == round(math.log(0.0625), 6)
    True
    """
    if n == 0:
        return 0.0
    k = min(k, n - k)
    j = np.arange(1, k + 1, dtype=float)
    log_comb = np.concatenate([[0.0], np.cumsum(np.log((n - j + 1) / j))])  # log C(n, 0..k)
    log_terms = log_comb - n * math.log(2)
    peak = float(log_terms.max())
    return min(0.0, math.log(2) + peak + math.log(float(np.exp(log_terms - peak).sum())))


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p-value of `k` successes in `n` fair coin flips: 2 P(X <= min(k, n-k)), capped at 1.

    Summed in log space (`log_binomial_two_sided_p`); a p below the smallest float (e.g. 0 of 2,000
    flips, 2^-1999) underflows to 0.0 here, so print it with `format_p(..., log10_p=)`.

    >>> binomial_two_sided_p(0, 5)
    0.0625
    >>> binomial_two_sided_p(3, 6)
    1.0
    """
    return math.exp(log_binomial_two_sided_p(k, n))


def mcnemar(a: Scored, b: Scored) -> dict[str, Any]:
    """McNemar's test on turn-level joint correctness of two runs over the same turns.

    Turns pair on (dialogue key, turn index). `b10`: a correct and b wrong; `b01`: a wrong and b
    correct. `p_value` is the exact two-sided binomial test on the discordant turns (the one to report;
    `p_text` prints it, also where it is below the smallest float);
    `chi2`/`p_value_chi2` the continuity-corrected chi-square approximation (fine when b01 + b10 is large).
    No discordant turn (e.g. identical runs) gives p = 1.
    """
    paired, counts = agreement(a, b)
    cells = paired["agreement"].value_counts()
    b10, b01 = int(cells["only_a"]), int(cells["only_b"])
    n = b01 + b10
    chi2 = max(abs(b01 - b10) - 1, 0) ** 2 / n if n else 0.0
    log_p = log_binomial_two_sided_p(b01, n)
    p_value = math.exp(log_p)
    return {
        "b01": b01,
        "b10": b10,
        "both_correct": int(cells["both_correct"]),
        "both_wrong": int(cells["both_wrong"]),
        "n_paired_turns": counts["paired_turns"],
        "only_in_a": counts["only_in_a"],
        "only_in_b": counts["only_in_b"],
        "p_value": p_value,
        "p_text": format_p(p_value, log10_p=log_p / math.log(10)),
        "chi2": float(chi2),
        "p_value_chi2": math.erfc(math.sqrt(chi2 / 2)),
        "method": "McNemar: exact two-sided binomial on discordant turns; chi-square with continuity correction",
    }


def seed_summary(values: Sequence[float] | Iterable[float]) -> dict[str, Any]:
    """Mean and sample standard deviation (ddof=1) of one metric over seeds; std is NaN for one seed.

    >>> round(seed_summary([0.5, 0.6, 0.7])["std"], 4)
    0.1
    >>> seed_summary([0.5])["std"]
    nan
    """
    per_seed = [float(v) for v in values]
    arr = np.asarray(per_seed, dtype=float)
    mean = float(arr.mean()) if len(arr) else float("nan")
    std = float(arr.std(ddof=1)) if len(arr) > 1 else float("nan")
    return {"mean": mean, "std": std, "n": len(arr), "per_seed": per_seed}


RUN_COLUMNS = ("run_id", "system", "dataset", "language", "split", "history", "convention", "seed")
SEED_GROUP = ("system", "dataset", "language", "split", "history")


def headline_by_run(scored: Scored) -> pd.DataFrame:
    """One row per run of a combination: its metadata (`RUN_COLUMNS`) and every headline metric."""
    from analysis.suite import headline_metrics

    rows = []
    for meta in scored.metas:
        described = {c: getattr(meta, c) for c in RUN_COLUMNS}
        rows.append({**described, **headline_metrics(scored.run(meta.run_id))})
    return pd.DataFrame(rows)


def over_seeds(
    per_run: pd.DataFrame, *, group_by: Sequence[str] = SEED_GROUP, metrics: Sequence[str] | None = None
) -> pd.DataFrame:
    """Mean ± sample std of each metric over runs that share `group_by` (same system, different seeds).

    `per_run` has one row per run (e.g. `headline_by_run`); `metrics` default to its float columns
    outside `RUN_COLUMNS`. Returns one row per group and metric with `mean`, `std` (NaN for one seed),
    `n_seeds`, `min`, `max`.
    """
    keys = list(group_by)
    if metrics is None:
        metrics = [c for c in per_run.columns if c not in RUN_COLUMNS and pd.api.types.is_float_dtype(per_run[c])]
    long = per_run.melt(id_vars=keys, value_vars=list(metrics), var_name="metric", value_name="value")
    grouped = long.groupby([*keys, "metric"], sort=False, dropna=False)["value"]
    out = grouped.agg(mean="mean", std=lambda v: v.std(ddof=1), n_seeds="count", min="min", max="max")
    return out.reset_index()


# --- intervals of many runs, one run held at a time -------------------------------------------------


@dataclass(frozen=True)
class RunParts:
    """One run's share of `bootstrap_ci(combine(runs), metric, by="run_id")`, per metric: its per-dialogue
    sums over its own dialogues (`dialogues`, in order of first turn) and its point estimate. Small (a few
    numbers per dialogue): a report keeps one per run instead of the runs' tables (`runs_bootstrap_ci`)."""

    run_id: str
    dialogues: pd.Index
    stats: dict[str, _Stats]
    points: dict[str, pd.DataFrame]


_NO_ROWS: dict[str, Any] = {"row_group": None, "row_dialogue": None, "row_turn": None, "row_parts": ()}


def run_parts(scored: Scored, metrics: Sequence[str]) -> RunParts:
    """A single run's `RunParts` for `metrics`."""
    dialogues = _dialogues(scored)
    # Only the per-dialogue sums: the per-turn rows (`support`'s) are five arrays per metric and turn, about
    # 2 MB a MultiWOZ-size run, which a report of hundreds of runs held for every run until its end.
    stats = {m: replace(_stats(scored, m, ["run_id"], dialogues), **_NO_ROWS) for m in metrics}
    points: dict[str, pd.DataFrame] = {}
    for metric in metrics:
        point = _point(scored, metric, ["run_id"])
        assert isinstance(point, pd.DataFrame)
        points[metric] = point
    return RunParts(scored.metas[0].run_id, dialogues, stats, points)


def runs_bootstrap_ci(
    parts: Sequence[RunParts], metric: str, *, n_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """`bootstrap_ci(combine(runs), metric, by="run_id", ...)` from the runs' `RunParts` (in the runs'
    order), the same numbers: every run's dialogues placed on the combination's dialogues (their union, in
    order of first turn), resampled together. Memory: the runs' per-dialogue sums, not their tables."""
    _check(metric, n_resamples, level)
    pooled = pd.Index(pd.concat([p.dialogues.to_series() for p in parts], ignore_index=True).unique())
    ordered = sorted(parts, key=lambda p: p.run_id)  # the combination's groups, sorted by run id

    def placed(part: RunParts, values: np.ndarray) -> np.ndarray:
        out = np.zeros((*values.shape[:-1], len(pooled)))
        out[..., pooled.get_indexer(part.dialogues)] = values
        return out

    shares = [p.stats[metric] for p in ordered]
    counts = None
    if shares and shares[0].counts is not None:  # GCA: every run's label counts
        counts = np.concatenate(
            [placed(p, s.counts) for p, s in zip(ordered, shares, strict=True) if s.counts is not None], axis=1
        )
    stats = _Stats(
        pd.concat([s.labels for s in shares], ignore_index=True),
        np.vstack([placed(p, s.num) for p, s in zip(ordered, shares, strict=True)]),
        np.vstack([placed(p, s.den) for p, s in zip(ordered, shares, strict=True)]),
        np.vstack([placed(p, s.rows) for p, s in zip(ordered, shares, strict=True)]),
        counts,
    )
    point = pd.concat([p.points[metric] for p in ordered], ignore_index=True)
    estimate = _with_points(stats.labels, point, ["run_id"])
    return _intervals(stats, estimate, metric, len(pooled), n_resamples, level, seed)
