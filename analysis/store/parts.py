"""The small per-run tables the store keeps beside `turns` and `slots`, all computed by the in-memory code.

Nothing here defines a metric: every number comes from `analysis.views`, `analysis.metrics` and
`analysis.stats` (the registry's functions), so the DuckDB path reads the same numbers the in-memory
path computes.

* `runs`: one row, the Overview leaderboard's row of the run (`views.leaderboard` without interval), and
  every interval metric's 95% interval (`bounds`: `metric`, `low`, `high`) for `views.INTERVAL_RESAMPLES`.
* `dialogues`: one row per dialogue of the run, in `stats` order (`d`), with each registry metric's
  per-dialogue numerator and denominator (`<metric>__num`, `<metric>__den`) and counted turns
  (`<metric>__rows`), and GCA's four label counts: what the dialogue bootstrap resamples
  (`stats._stats`), so an interval needs these few numbers per dialogue, not the turns.
* `domains`: per-domain JGA (`views.domain_jga` without interval) and `domain_parts`, its
  per-(domain, dialogue) numerator and denominator for the interval.
* `depth`, `depth_metrics`, `depth_parts`: the Turn depth page's first tab (`views.depth_jga` without
  interval, `views.depth_metrics`) and JGA's per-(turn index, dialogue) parts for the interval.
* `slot_table`: the Slots page's table (`views.slot_table`).
* `picker`: the dialogue viewer's list before its filters (`views.compounding_runs`), one row per dialogue.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis import gold_side, scorer_inputs, stats, views
from analysis import metrics as M
from analysis import registry as R
from analysis.model import dialogue_key
from analysis.scoring import Scored

_SAFE = re.compile(r"[^0-9A-Za-z_]")


def column(name: str) -> str:
    """A metric name as a Parquet/SQL column: `fga_0.5` -> `fga_0_5` (no quoting needed anywhere).

    >>> column("fga_0.25"), column("jga")
    ('fga_0_25', 'jga')
    """
    return _SAFE.sub("_", name)


METRIC_COLUMNS = {name: column(name) for name in R.NAMES}
GCA_PARTS = tuple(f"gca__{c.removeprefix('gca_')}" for c in M.GCA_COUNTS)  # correct, wrong, overpred, missed


def runs_row(scored: Scored, key: str, scorer: str, dialogues: pd.DataFrame | None = None) -> pd.DataFrame:
    """The run's leaderboard row (no interval), metric columns renamed by `column`, plus the store key,
    the scorer version and the convention's name and label (`convention_name`, `convention_label`).

    With the run's `dialogues` (`dialogue_parts`), also every interval metric's 95% interval for
    `views.INTERVAL_RESAMPLES` resamples, seed 0: `bounds`, a list of (`metric`, `low`, `high`), and that
    resample count as `bounds_resamples`. From those parts by `headline_bounds`, as a query over many runs
    computes them, so a leaderboard with every interval reads one row per run instead of its dialogues."""
    board = views.leaderboard([scored], resamples=0)
    # `convention` is the Hive partition's name (the convention's name); the label shown is its own column.
    renamed = {**METRIC_COLUMNS, "convention": "convention_label"}
    # The row's columns gathered first and made into a frame once (each column added to a frame costs pandas a
    # new column index): the same frame as inserting them one by one.
    columns: dict[str, Any] = {"store_key": [key]}
    columns.update({renamed.get(name, name): board[name] for name in board.columns})
    columns["scorer_version"] = [scorer]
    columns["convention_name"] = [scored.convention.name]
    columns["subtask"] = [scored.convention.subtask or ""]
    for name in ("seed",):  # an int or None: nullable, so every run's file has one type
        columns[name] = pd.array(board[name], dtype="Int64")
    if dialogues is not None:
        resamples = views.INTERVAL_RESAMPLES
        found = headline_bounds(dialogues.assign(run=0), 1, stats.METRICS, resamples=resamples)
        bounds = [{"metric": name, "low": float(low[0]), "high": float(high[0])} for name, (low, high) in found.items()]
        columns["bounds"] = pd.Series(pa.array([bounds], type=BOUNDS_TYPE), dtype=pd.ArrowDtype(BOUNDS_TYPE))
        columns["bounds_resamples"] = np.array([resamples], dtype="int64")
    return pd.DataFrame(columns, index=board.index)


# One Parquet column for every interval, not two per metric: a query over many runs pays for each column of
# each file (1,000 `runs` files, every interval read: 1.42 s as 38 columns, about 1.1 s as this one).
BOUNDS_TYPE = pa.list_(pa.struct([("metric", pa.string()), ("low", pa.float64()), ("high", pa.float64())]))


def _per_dialogue(st: stats._Stats) -> dict[str, np.ndarray]:
    return {"num": st.num[0], "den": st.den[0], "rows": st.rows[0]}


def dialogue_parts(scored: Scored) -> pd.DataFrame:
    """One row per dialogue (`d`: its position in `stats`' dialogue order) with every registry metric's
    per-dialogue numerator, denominator and counted turns, as `stats._stats` computes them."""
    dialogues = stats._dialogues(scored)
    out: dict[str, object] = {
        "run_id": pd.array([scored.metas[0].run_id] * len(dialogues), dtype="str"),
        "d": np.arange(len(dialogues), dtype="int64"),
        **gold_side.shared(scored, "dialogue_names", lambda: _dialogue_names(scored, dialogues)),
    }
    order = _turn_order(scored, dialogues)
    micro = _micro_parts(scored, dialogues, order)
    for name in R.NAMES:
        metric = R.get(name)
        if metric.interval is None:  # no dialogue bootstrap (DSTC10's value/none P/R/F1): no per-dialogue parts
            continue
        col = METRIC_COLUMNS[name]
        if metric.interval == "micro":
            parts = micro[metric.column]
        else:
            if order is not None and name in _BY_TID:
                st = _stats_by_tid(scored, name, order)
            else:
                st = stats._stats(scored, name, [], dialogues)
            parts = _per_dialogue(st)
            if st.counts is not None:
                for part, counts in zip(GCA_PARTS, st.counts, strict=True):
                    out[part] = counts[0]
        for suffix, values in parts.items():
            out[f"{col}__{suffix}"] = np.asarray(values, dtype="float64")
    if scorer_inputs.unread_runs(scored.alignment):  # gold its scorer never reads: no interval from these parts
        for name in list(out):
            if name.endswith("__num") or name in GCA_PARTS:
                out[name] = np.full(len(dialogues), np.nan)
    return pd.DataFrame(out)


def _dialogue_names(scored: Scored, dialogues: pd.Index) -> dict[str, object]:
    """`dialogue_parts`' `dialogue_key` and `dialogue_id` columns (the id as the turns write it), in `stats`'
    dialogue order: the same for every run of one gold file."""
    first = scored.turns.drop_duplicates("dialogue_id")
    keys = dialogue_key(first["dialogue_id"])
    shown = pd.Series(first["dialogue_id"].to_numpy(), index=keys.to_numpy())
    shown = shown[~shown.index.duplicated()]
    return {
        "dialogue_key": pd.array(dialogues.to_numpy(), dtype="str"),
        "dialogue_id": pd.array(shown.reindex(dialogues).to_numpy(), dtype="str"),
    }


# Metrics whose per-turn parts are read from their function grouped by `tid` (one integer column) instead of
# the turn key (run, dialogue, turn: two string columns), then put in the turn key's order: the same
# per-turn numbers summed per dialogue in the same order, so the same floats (tested against `stats._stats`),
# at about half the cost. JGA's own path needs no grouping.
_BY_TID = frozenset(m.name for m in R.METRICS if m.interval in ("turns", "cells", "gca") and m.name != "jga")


@dataclass(frozen=True)
class _TurnOrder:
    """Where each turn's row goes in `stats._stats`: `rows` maps a `tid` to its row of `turns`, `rank` is
    that row's rank in the turn key's sorted order (the order `stats` sums in), `d` its dialogue."""

    rows: pd.Index
    rank: np.ndarray
    d: np.ndarray
    n_dialogues: int
    sort: np.ndarray | None = None  # argsort of `rank`: the order of per-turn rows given in turn-row order


def _turn_order(scored: Scored, dialogues: pd.Index) -> _TurnOrder | None:
    """The turns' order in `stats._stats`; None when a turn key names two turns, or there are no turns
    (then the group-by path). Shared by the runs of one gold file (`gold_side`)."""
    return gold_side.shared(scored, "turn_order", lambda: _compute_turn_order(scored, dialogues))


def _compute_turn_order(scored: Scored, dialogues: pd.Index) -> _TurnOrder | None:
    turns = scored.turns
    if not len(turns):
        return None
    grouped = turns[stats.TURN_KEY].groupby(stats.TURN_KEY, sort=True, observed=True, dropna=False)
    rank = grouped.ngroup().to_numpy()
    rows = pd.Index(turns["tid"].to_numpy())
    if int(rank.max()) + 1 != len(turns) or not rows.is_unique:
        return None
    return _TurnOrder(
        rows, rank, stats.turn_dialogue_positions(scored), len(dialogues), np.argsort(rank, kind="stable")
    )


# `_stats_by_tid`'s labels: one group, no `by` column (the same frame for every call, never changed).
_ONE_GROUP = pd.DataFrame(index=range(1))


def _stats_by_tid(scored: Scored, name: str, order: _TurnOrder) -> stats._Stats:
    """`stats._stats(scored, name, [], dialogues)` for a metric of `_BY_TID`: the same arrays, bit for bit."""
    metric = R.get(name)
    gca = metric.interval == "gca"
    per = views.per_turn(scored, M.gca_counts if gca else metric.function)
    assert isinstance(per, pd.DataFrame)
    per_tid = per["tid"].to_numpy()
    # Empty slices are listed with NaN and `stats` skips them: left out by position (no filtered frame).
    listed = per["n_turns"].to_numpy() > 0 if metric.interval == "turns" else None
    if listed is not None and bool(listed.all()):
        listed = None
    if listed is not None:
        per_tid = per_tid[listed]
    if (
        listed is None
        and order.sort is not None
        and len(per_tid) == len(order.rows)
        and np.array_equal(per_tid, order.rows.to_numpy())
    ):
        # One row per turn, in the turns' order (most metrics): the rows are the turns, no lookup.
        row, sort = np.arange(len(per_tid)), order.sort
    else:
        row = order.rows.get_indexer(per_tid)
        sort = np.argsort(order.rank[row], kind="stable")
    d = order.d[row][sort]
    keep = d >= 0

    def take(name: str) -> np.ndarray:
        values = per[name].to_numpy(dtype=float)
        return (values if listed is None else values[listed])[sort][keep]

    d = d[keep]
    n = order.n_dialogues

    def total(weights: np.ndarray | None) -> np.ndarray:
        return np.bincount(d, weights=weights, minlength=n).astype(float).reshape(1, n)

    counts = None
    if gca:
        parts = [take(c) for c in M.GCA_COUNTS]
        counts = np.stack([total(p) for p in parts])
        g = np.zeros(len(d), dtype="int64")
        group_gca = M.gca_from_counts(*(np.bincount(g, weights=p, minlength=1) for p in parts))
        num = np.asarray(group_gca, dtype=float)[g] if len(g) else np.zeros(0)
        den = np.ones(len(d))
    else:
        # With "cells", the cells behind each turn's accuracy (`stats._slot_accuracy_cells`, which has NaN
        # where this has 0: a run without ontology; either way the turn adds 0 to both sums below).
        den = M._cells_per_turn(scored)[row[sort]][keep] if metric.interval == "cells" else take("n_turns")
        value = take(metric.column)
        with np.errstate(invalid="ignore"):
            num = np.where(den > 0, value * den, 0.0)
        den = np.nan_to_num(den)
    return stats._Stats(_ONE_GROUP, total(num), total(den), total(None), counts)


def _micro_parts(
    scored: Scored, dialogues: pd.Index, order: _TurnOrder | None = None
) -> dict[str, dict[str, np.ndarray]]:
    """Micro P/R/F1 parts: `stats._stats` of the three micro metrics from one `slot_prf_micro` call per
    turn (the stats module calls it once per metric). With `order`, grouped by `tid`, each turn's counts
    added to its dialogue's in the turns' own order (the sums are of whole counts, so exact in any order)."""
    if order is None:
        per = M.slot_prf_micro(scored, by=stats.TURN_KEY)
        assert isinstance(per, pd.DataFrame)
        d = dialogues.get_indexer(dialogue_key(per["dialogue_id"]))
    else:
        per = M.slot_prf_micro(scored, by=["tid"])
        assert isinstance(per, pd.DataFrame)
        # Whole counts summed per dialogue: exact in any order, so the rows need no sorting.
        d = order.d[order.rows.get_indexer(per["tid"].to_numpy())]
    tp, fp, fn = (per[c].to_numpy(dtype=float) for c in ("tp", "fp", "fn"))
    keep = d >= 0
    n = len(dialogues)

    def total(weights: np.ndarray | None) -> np.ndarray:
        w = None if weights is None else weights[keep]
        return np.bincount(d[keep], weights=w, minlength=n).astype(float)

    rows = total(None)
    return {
        "f1": {"num": total(2 * tp), "den": total(2 * tp + fp + fn), "rows": rows},
        "precision": {"num": total(tp), "den": total(tp + fp), "rows": rows},
        "recall": {"num": total(tp), "den": total(tp + fn), "rows": rows},
    }


def _jga_parts(scored: Scored, by: str) -> pd.DataFrame:
    """JGA's per-(`by` group, dialogue) numerator and denominator (`stats._stats`, dialogues in `stats`
    order `d`): what the dialogue bootstrap of JGA per `by` resamples."""
    counted = _jga_parts_counted(scored, by)
    if counted is not None:
        return counted
    dialogues = stats._dialogues(scored)
    st = stats._stats(scored, "jga", [by], dialogues)
    g, d = np.nonzero(st.rows)
    labels = st.labels[by].to_numpy() if len(st.labels.columns) else np.array([], dtype=object)
    return pd.DataFrame(
        {
            "run_id": pd.array([scored.metas[0].run_id] * len(g), dtype="str"),
            by: labels[g] if len(g) else pd.array([], dtype="str" if by == "domain" else "int64"),
            "d": d.astype("int64"),
            "num": st.num[g, d],
            "den": st.den[g, d],
            "rows": st.rows[g, d],
        }
    )


def _jga_parts_counted(scored: Scored, by: str) -> pd.DataFrame | None:
    """`_jga_parts` of one run per `turn_index` (its turns) or per `domain` (its per-(turn, domain) facts),
    counted with integer keys instead of `stats._stats`' merge with the turn key and its group-by: the
    same frame, bit for bit (the sums are of 0s and 1s, exact in any order; tested). None for anything
    else (then `stats`)."""
    turns = scored.turns
    if by not in ("turn_index", "domain") or len(scored.metas) != 1 or not len(turns):
        return None
    tids = pd.Index(turns["tid"].to_numpy())
    if tids.dtype.kind not in "iu" or not tids.is_unique:
        return None
    dialogues = stats._dialogues(scored)
    turn_d = stats.turn_dialogue_positions(scored)
    if by == "turn_index":
        labels_of = turns["turn_index"].to_numpy()
        correct = turns["joint_correct"].to_numpy(dtype=bool)
        d = turn_d
    else:
        facts = M._slot_group_counts(scored, ("domain",))
        at = tids.get_indexer(facts["tid"].to_numpy())
        if not len(facts) or (at < 0).any():
            return None
        labels_of = facts["domain"]
        correct = (facts["n_wrong"] + facts["n_missed"] + facts["n_spurious"]).to_numpy() == 0
        d = turn_d[at]
    keep = d >= 0
    if not keep.any():
        return None
    if by == "turn_index":
        labels, g = np.unique(labels_of[keep], return_inverse=True)
    else:  # factorized in Arrow, then the few names sorted
        codes, names = pd.factorize(labels_of[keep])
        order = np.argsort(np.asarray(names, dtype=object), kind="stable")
        rank = np.empty(len(order), dtype="int64")
        rank[order] = np.arange(len(order))
        labels, g = np.asarray(names, dtype=object)[order], rank[codes]
    d = d[keep]
    n = len(dialogues)
    flat = g * n + d
    size = len(labels) * n
    rows = np.bincount(flat, minlength=size).astype(float)
    num = np.bincount(flat, weights=correct[keep].astype(float), minlength=size)
    cell = np.flatnonzero(rows)  # (group, dialogue) in row-major order, as `np.nonzero` lists them
    group, dialogue = cell // n, cell % n
    return pd.DataFrame(
        {
            "run_id": pd.array([scored.metas[0].run_id] * len(cell), dtype="str"),
            by: pd.array(labels[group], dtype="str") if by == "domain" else labels[group].astype("int64"),
            "d": dialogue.astype("int64"),
            "num": num[cell],
            "den": rows[cell],
            "rows": rows[cell],
        }
    )


def jga_bounds(parts: pd.DataFrame, by: str, n_dialogues: Mapping[Any, int], resamples: int) -> pd.DataFrame:
    """JGA's 95% dialogue-bootstrap interval per (`run`, `by`) from its per-(`by`, dialogue) parts (columns
    `run`, `by`, `d`, `num`, `den`, sorted by those three), with `stats`' resample matrix of each run's
    `n_dialogues[run]` dialogues, seed 0: columns `run`, `by`, `jga_low`, `jga_high`. Runs of one test
    set share the resample matrix: their groups are stacked and resampled by one matrix product per
    dialogue count (about 5x faster than one product per run)."""
    stacked: dict[int, list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for run, part in parts.groupby("run", sort=False):
        labels, g = np.unique(part[by].to_numpy(), return_inverse=True)
        n = int(n_dialogues[run])
        num, den = np.zeros((len(labels), n)), np.zeros((len(labels), n))
        num[g, part["d"].to_numpy()] = part["num"].to_numpy()
        den[g, part["d"].to_numpy()] = part["den"].to_numpy()
        stacked.setdefault(n, []).append((run, labels, num, den))
    bounds = []
    for n, items in stacked.items():
        low, high = _jga_percentiles(
            np.vstack([i[2] for i in items]).T, np.vstack([i[3] for i in items]).T, n, resamples
        )
        at = 0
        for run, labels, _, _ in items:
            end = at + len(labels)
            bounds.append(pd.DataFrame({"run": run, by: labels, "jga_low": low[at:end], "jga_high": high[at:end]}))
            at = end
    if not bounds:
        return pd.DataFrame({"run": [], by: [], "jga_low": [], "jga_high": []})
    return pd.concat(bounds, ignore_index=True)


def _jga_percentiles(num: np.ndarray, den: np.ndarray, n: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The 95% interval of each column's JGA from its (dialogues x groups) numerators and denominators, over
    `stats`' resample matrix of `n` dialogues, seed 0."""
    weights, narrow = stats.resample_counts(n, n_resamples=resamples, seed=0), _narrow(n, resamples, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = _resampled(weights, narrow, num) / _resampled(weights, narrow, den)
    return stats._percentiles(samples, 0.95)


def headline_bounds(
    parts: pd.DataFrame, n_runs: int, metrics: Sequence[str], *, resamples: int, level: float = 0.95, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric: (low, high) arrays, one value per run `0..n_runs-1`, of `stats.bootstrap_ci(run, metric)`,
    from the runs' per-dialogue parts (`dialogue_parts`' columns with `run`, rows sorted by `run, d`). Runs
    with the same number of dialogues share one resample matrix product."""
    run_of = parts["run"].to_numpy(dtype="int64")
    out = {name: (np.full(n_runs, np.nan), np.full(n_runs, np.nan)) for name in metrics}
    sizes = np.bincount(run_of, minlength=n_runs)
    for n_dialogues in np.unique(sizes):
        runs = np.flatnonzero(sizes == n_dialogues)
        if n_dialogues == 0:
            continue
        rows = np.isin(run_of, runs)
        block = parts[rows]
        # (dialogues, runs): each run one column.
        col_of_run = np.full(n_runs, -1, dtype="int64")
        col_of_run[runs] = np.arange(len(runs))
        which = col_of_run[run_of[rows]]
        d = block["d"].to_numpy()
        weights = stats.resample_counts(int(n_dialogues), n_resamples=resamples, seed=seed)

        # Rows come sorted by (run, d); when every run lists its dialogues 0..n-1 once, a column is the
        # (runs, dialogues) matrix as it lies, transposed without a copy. Otherwise each value is placed.
        regular = bool(np.array_equal(d, np.tile(np.arange(int(n_dialogues)), len(runs))))

        def dense(
            name: str,
            block: pd.DataFrame = block,
            which: np.ndarray = which,
            d: np.ndarray = d,
            regular: bool = regular,
        ) -> np.ndarray:
            values = block[name].to_numpy(dtype=float)
            if regular:
                return values.reshape(len(runs), int(n_dialogues)).T  # noqa: B023 - used within this iteration only
            matrix = np.zeros((int(n_dialogues), len(runs)))  # noqa: B023 - used within this iteration only
            matrix[d, which] = values
            return matrix

        narrow = _narrow(int(n_dialogues), resamples, seed)
        needed = [
            part
            for name in metrics
            for part in (
                GCA_PARTS
                if R.get(name).interval == "gca"
                else (f"{METRIC_COLUMNS[name]}__num", f"{METRIC_COLUMNS[name]}__den")
            )
        ]
        # One run (a run being scored): its count columns in one float32 product, not one each.
        batched = _exact_products(narrow, {p: dense(p) for p in dict.fromkeys(needed)}) if len(runs) == 1 else {}

        def product(
            part: str, weights: np.ndarray = weights, narrow: np.ndarray = narrow, batched: dict = batched
        ) -> np.ndarray:
            found = batched.get(part)
            return found if found is not None else _resampled(weights, narrow, dense(part))

        found: dict[str, np.ndarray] = {}
        for name in metrics:
            col = METRIC_COLUMNS[name]
            if R.get(name).interval == "gca":
                counts = (product(p) for p in GCA_PARTS)
                samples = np.asarray(M.gca_from_counts(*counts), dtype=float)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    samples = product(f"{col}__num") / product(f"{col}__den")
            if len(runs) > 1:
                out[name][0][runs], out[name][1][runs] = stats._percentiles(samples, level)
            else:
                found[name] = samples
        if found:
            # One run (the store's `runs` row): every metric's percentiles in one call, column by column the
            # same numbers as one call per metric (each column is partitioned on its own), without the
            # call's overhead 23 times.
            low, high = stats._percentiles(np.hstack(list(found.values())), level)
            for i, name in enumerate(found):
                out[name][0][runs], out[name][1][runs] = low[i], high[i]
    return out


_EXACT_IN_FLOAT32 = 2**24  # every integer below this is a float32


@functools.lru_cache(maxsize=4)
def _narrow(n_dialogues: int, resamples: int, seed: int) -> np.ndarray:
    """`stats.resample_counts` as float32 (the same counts: each at most `n_dialogues`), for `_resampled`;
    memoised like the matrix itself (read-only)."""
    narrow = stats.resample_counts(n_dialogues, n_resamples=resamples, seed=seed).astype(np.float32)
    narrow.flags.writeable = False
    return narrow


def _exact_products(narrow: np.ndarray, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`_resampled(weights, narrow, column)` of each one-column matrix whose product is exact in float32
    (finite integers, `dialogues x max|value|` below 2**24: see `_resampled`), all in one matrix product:
    the resample matrix is read once, not once per column, and each result is the same exact integers.
    The other columns are left out (the caller takes `_resampled`)."""
    exact = []
    for name, matrix in columns.items():
        if matrix.shape[1] != 1 or not matrix.size or not bool(np.isfinite(matrix).all()):
            continue
        largest = float(np.abs(matrix).max())
        if largest * matrix.shape[0] < _EXACT_IN_FLOAT32 and bool((matrix == np.round(matrix)).all()):
            exact.append(name)
    if not exact:
        return {}
    product = (narrow @ np.hstack([columns[name] for name in exact]).astype(np.float32)).astype(np.float64)
    return {name: product[:, i : i + 1] for i, name in enumerate(exact)}


def _resampled(weights: np.ndarray, narrow: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """`weights @ matrix` (resamples x runs), bit for bit, with less arithmetic where that is exact.

    * Columns all alike (a denominator that depends only on the test set, e.g. turns per dialogue) are
      multiplied once and the product repeated.
    * A matrix of integers (counts: correct turns, true positives, ...) is multiplied in float32 (`narrow`,
      the same counts), about twice as fast: each row of `weights` sums to the number of dialogues, so
      every product and partial sum is an integer of at most `dialogues x max|value|`; below 2**24 each is
      a float32 exactly, whatever order the sums take, and so is the float64 result.
    Anything else is the plain float64 product."""
    if matrix.shape[1] > 1 and bool((matrix == matrix[:, :1]).all()):
        return np.broadcast_to(_resampled(weights, narrow, matrix[:, :1]), (weights.shape[0], matrix.shape[1]))
    if matrix.size and bool(np.isfinite(matrix).all()):
        largest = float(np.abs(matrix).max())
        if largest * matrix.shape[0] < _EXACT_IN_FLOAT32 and bool((matrix == np.round(matrix)).all()):
            return (narrow @ matrix.astype(np.float32)).astype(np.float64)
    return weights @ matrix


def _with_bounds(table: pd.DataFrame, parts: pd.DataFrame, by: str, scored: Scored) -> pd.DataFrame:
    """`table` (one run's JGA per `by`) with its interval columns for `views.INTERVAL_RESAMPLES`, as the
    in-memory view gives them, so the page's query reads them instead of resampling every run."""
    table = table.reset_index(drop=True)
    if not len(table):
        return table.assign(jga_low=pd.Series(dtype="float64"), jga_high=pd.Series(dtype="float64"))
    # `jga_bounds` of this one run without its frames: the same matrices, products and percentiles (so the
    # same floats), each row of `table` given its group's interval as the left merge on `by` gives it.
    n = len(stats._dialogues(scored))
    labels, g = np.unique(parts[by].to_numpy(), return_inverse=True)
    if not len(labels):  # no parts: no interval, as the merge with `jga_bounds`' empty frame gives
        return table.assign(jga_low=np.nan, jga_high=np.nan)
    d = parts["d"].to_numpy()
    num, den = np.zeros((len(labels), n)), np.zeros((len(labels), n))
    num[g, d] = parts["num"].to_numpy()
    den[g, d] = parts["den"].to_numpy()
    low, high = _jga_percentiles(num.T, den.T, n, views.INTERVAL_RESAMPLES)
    at = pd.Index(labels).get_indexer(pd.Series(table[by]).astype(parts[by].dtype).to_numpy())
    found = at >= 0
    return table.assign(
        jga_low=np.where(found, low[np.maximum(at, 0)], np.nan),
        jga_high=np.where(found, high[np.maximum(at, 0)], np.nan),
    )


def domain_tables(scored: Scored) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-domain JGA (`views.domain_jga`, its interval from `jga_bounds`) and its per-(domain, dialogue) parts."""
    counted = _jga_parts_counted(scored, "domain")
    per_domain = _domain_jga_counted(scored, counted) if counted is not None else None
    if per_domain is None:
        per_domain = views.domain_jga([scored], resamples=0)
    if not len(per_domain.columns):
        per_domain = pd.DataFrame({"run_id": pd.array([], dtype="str"), "domain": pd.array([], dtype="str")})
    parts = counted if counted is not None else _jga_parts(scored, "domain")
    parts["domain"] = pd.array(parts["domain"], dtype="str")
    return _with_bounds(per_domain, parts, "domain", scored), parts


def _domain_jga_counted(scored: Scored, parts: pd.DataFrame) -> pd.DataFrame | None:
    """`views.domain_jga([scored], resamples=0)` summed from the run's counted per-(domain, dialogue) JGA
    parts (`_jga_parts_counted`): per domain, its correct turns over its turns, both whole numbers, so the
    same quotient as the view's count of 1s over its count of turns (`metrics._mean_of_flags`), and the
    domains in the same sorted order: the same frame, bit for bit (tested). None where the view takes
    another path (SGD's evaluator, a domain that is missing, a run id that is missing)."""
    if scored.convention.name == "sgd" or not len(parts):
        return None
    facts = M._slot_group_counts(scored, ("domain",))
    run_ids = scored.turns["run_id"]
    if facts["domain"].isna().any() or run_ids.isna().any() or bool((stats.turn_dialogue_positions(scored) < 0).any()):
        return None
    domains, at = np.unique(parts["domain"].to_numpy(dtype=object), return_inverse=True)
    ones = np.bincount(at, weights=parts["num"].to_numpy(dtype=float), minlength=len(domains))
    numbers = np.bincount(at, weights=parts["rows"].to_numpy(dtype=float), minlength=len(domains)).astype("int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(numbers > 0, ones / numbers, np.nan)
    return pd.DataFrame(
        {
            "run_id": pd.Series([scored.metas[0].run_id] * len(domains), dtype=run_ids.dtype),
            "domain": pd.Series(domains, dtype=facts["domain"].dtype),
            "jga": mean,
            "n_turns": numbers,
        }
    )


def depth_tables(scored: Scored) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The Turn depth page's first tab of the run: JGA per turn depth (`views.depth_jga`, its interval), the
    metrics beside it (`views.depth_metrics`) and JGA's per-(turn index, dialogue) parts for the interval."""
    per_depth = views.depth_jga([scored], resamples=0)
    if not len(per_depth.columns):
        per_depth = pd.DataFrame({"run_id": pd.array([], dtype="str"), "turn_index": pd.array([], dtype="int64")})
    beside = views.depth_metrics([scored])
    if not len(beside.columns):
        beside = pd.DataFrame({"run_id": pd.array([], dtype="str"), "turn_index": pd.array([], dtype="int64")})
    parts = _jga_parts(scored, "turn_index")
    parts["turn_index"] = parts["turn_index"].astype("int64")
    return _with_bounds(per_depth, parts, "turn_index", scored), beside.reset_index(drop=True), parts


def slot_table(scored: Scored) -> pd.DataFrame:
    """The Slots page's table of the run, with its `run_id`."""
    table = views.slot_table(scored)
    table.insert(0, "run_id", pd.array([scored.metas[0].run_id] * len(table), dtype="str"))
    return table


def picker(scored: Scored) -> pd.DataFrame:
    """The dialogue picker's table of the run (`views.compounding_runs`: file order), with its `run_id`
    and the dialogue's position `position` (file order, for sorting ties)."""
    table = views.compounding_runs(scored)
    table.insert(0, "run_id", pd.array([scored.metas[0].run_id] * len(table), dtype="str"))
    table["position"] = np.arange(len(table), dtype="int64")
    return table
