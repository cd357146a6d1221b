"""The Turn depth page's views: JGA and the compounding-robust metrics by turn depth, predicted against
gold history, inherited against new errors, where dialogues first go wrong, and the turns behind a point."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import diagnostics as D
from analysis import gold_side
from analysis import metrics as M
from analysis import registry as R
from analysis.model import RunMeta
from analysis.scoring import Scored
from analysis.views.common import INTERVAL_RESAMPLES, _concat, _meta, _with_interval
from analysis.views.dialogue import compounding_runs


def depth_jga(scoreds: Sequence[Scored], *, resamples: int = INTERVAL_RESAMPLES) -> pd.DataFrame:
    """JGA per run and turn index (0 = first user turn) with the number of turns at that depth and its
    95% dialogue-bootstrap interval."""
    return _concat([_depth_jga(s, resamples) for s in scoreds])


def _depth_jga(scored: Scored, resamples: int) -> pd.DataFrame:
    if scored.convention.name == "sgd":  # per depth, the SGD evaluator's joint goal accuracy of the frames
        from analysis.sgd.views import depth_rows

        rows = depth_rows(scored, resamples)
        if rows is not None:
            return rows
    return _with_interval(M.jga_by_turn_depth(scored, by="run_id"), scored, "turn_index", resamples)


# JGA beside the metrics that judge a turn's own changes, so a falling JGA can be read as compounding:
# where JGA falls with depth and these stay level, the errors are inherited.
DEPTH_METRICS = ("jga", "iaga", "rsa", "fga_0.5", "turn_accuracy", "gca")


def depth_metrics(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """Per run and turn index: `n_turns` and the `DEPTH_METRICS` (JGA and the metrics robust to
    compounding: IAGA, RSA, FGA at λ 0.5, turn-level accuracy, GCA of the changes made at that depth)."""
    frames = []
    keys = ["run_id", "turn_index"]
    for s in scoreds:
        frame = M.jga_by_turn_depth(s, by="run_id")
        assert isinstance(frame, pd.DataFrame)
        frame = frame[[*keys, "n_turns", "jga"]]
        if s.convention.name == "sgd":  # JGA as depth_jga shows it: the evaluator's, where it can run
            from analysis.sgd.views import depth_rows

            evaluator = depth_rows(s, 0)
            if evaluator is not None:
                frame = frame.drop(columns="jga").merge(evaluator[[*keys, "jga"]], on=keys, how="left")
                frame = frame[[*keys, "n_turns", "jga"]]
        by_depth = _depth_from_turns(s, keys)
        if by_depth is not None:
            frame = frame.merge(by_depth, on=keys, how="left")
        else:
            results: dict[Any, Any] = {}
            for name in DEPTH_METRICS[1:]:
                metric = R.get(name)
                if metric.function not in results:
                    results[metric.function] = metric.function(s, by=keys)
                per = results[metric.function]
                renamed = per[[*keys, metric.column]].rename(columns={metric.column: name})
                frame = frame.merge(renamed, on=keys, how="left")
        frames.append(frame)
    return _concat(frames)


def per_turn(scored: Scored, function: Any) -> pd.DataFrame:
    """`function(scored, by=["tid"])`, once per run's tables (`Scored.memoised`): a metric's per-turn numbers,
    which the Turn depth view and the store's per-dialogue parts both aggregate. Shared: copy to change."""
    return scored.memoised(("per_turn", function), lambda: function(scored, by=["tid"]))


def _depth_from_turns(s: Scored, keys: list[str]) -> pd.DataFrame | None:
    """`DEPTH_METRICS[1:]` per `keys` group, summed from each metric's per-turn numbers (`per_turn`) instead
    of one group-by of the metric per group: a group's value is the mean of its counted turns' values
    weighted by their `n_turns` (what the metric's own mean over its rows is), GCA's from its summed label
    counts. The same numbers as `function(s, by=keys)` (to rounding, tested), read from tables the store
    computes anyway. None when a turn id names two turns (then the group-by path)."""
    turns = s.turns
    tids = pd.Index(turns["tid"].to_numpy())
    if not len(turns) or not tids.is_unique:
        return None
    code, out = gold_side.shared(s, f"depth_groups {keys}", lambda: _groups(turns, keys))
    out = out.copy()
    if "run_id" in keys and len(s.metas) == 1:  # shared by runs of one gold file: this run's own id
        out["run_id"] = pd.array([s.metas[0].run_id] * len(out), dtype=out["run_id"].dtype)
    n = len(out)
    for name in DEPTH_METRICS[1:]:
        metric = R.get(name)
        if metric.interval == "gca":
            per = per_turn(s, M.gca_counts)
            at = _groups_of(per, tids, code)
            if at is None:
                return None
            sums = [np.bincount(at, weights=per[c].to_numpy(dtype=float), minlength=n) for c in M.GCA_COUNTS]
            value = np.asarray(M.gca_from_counts(*sums), dtype=float)
        else:
            per = per_turn(s, metric.function)
            at = _groups_of(per, tids, code)
            if at is None:
                return None
            weight = per["n_turns"].to_numpy(dtype=float)
            values = per[metric.column].to_numpy(dtype=float)
            counted = np.bincount(at, weights=weight, minlength=n)
            with np.errstate(invalid="ignore", divide="ignore"):
                total = np.bincount(at, weights=np.where(weight > 0, values * weight, 0.0), minlength=n)
                value = np.where(counted > 0, total / counted, np.nan)
        out[name] = value
    return out


def _groups(turns: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Each turn's group code among the sorted `keys` groups, and those groups (one row each)."""
    groups = turns[keys].groupby(keys, sort=True, observed=True, dropna=False)
    code = groups.ngroup().to_numpy()
    code.flags.writeable = False
    return code, groups.size().reset_index()[keys]


def _groups_of(per: pd.DataFrame, tids: pd.Index, code: np.ndarray) -> np.ndarray | None:
    """The group code of each per-turn row, None if a row names a turn the run does not have."""
    found = per["tid"].to_numpy()
    if len(found) == len(tids) and np.array_equal(found, tids.to_numpy()):
        return code  # one row per turn, in the turns' order (most metrics): no lookup
    rows = tids.get_indexer(found)
    return None if bool((rows < 0).any()) else code[rows]


def history_pairs(metas: Sequence[RunMeta] | Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """(predicted-history run, gold-history run) pairs of one system on the same data and seed. `metas`:
    the runs' metadata, or its `to_dict()` (as the score store's headers keep it)."""
    frame = pd.DataFrame([m if isinstance(m, dict) else m.to_dict() for m in metas])
    if frame.empty:
        return []
    keys = ["system", "dataset", "language", "split", "seed"]
    frame["seed"] = frame["seed"].astype("object")
    predicted = frame[frame["history"] == "predicted"]
    gold = frame[frame["history"] == "gold"]
    pairs = predicted.merge(gold, on=keys, suffixes=("_pred", "_gold"), how="inner")
    return list(zip(pairs["run_id_pred"], pairs["run_id_gold"], strict=True))


def history_pairs_of(scoreds: Sequence[Scored]) -> list[tuple[str, str]]:
    """`history_pairs` over the metadata of scored runs."""
    return history_pairs([_meta(s) for s in scoreds])


def compounding_curve(predicted_history: Scored, gold_history: Scored) -> pd.DataFrame:
    """Per turn index JGA (predicted history), GJGA (gold history), the gap and the paired turns;
    the overall numbers are in `attrs` (`jga`, `gjga`, `gap`, `paired_turns`)."""
    result = D.compounding(predicted_history, gold_history)
    by_turn = result["by_turn"]
    assert isinstance(by_turn, pd.DataFrame)
    by_turn = by_turn.copy()
    by_turn.attrs = {k: v for k, v in result.items() if k != "by_turn"}
    return by_turn


def origins_by_depth(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """Counts of new and inherited errors per run and turn index."""
    frames = [D.origins_by_turn_depth(s) for s in scoreds]
    out = _concat(frames)
    if len(out):
        out["origin"] = out["origin"].astype(str)
    return out


def first_error_distribution(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """Per run, how many dialogues first go wrong at each turn (`label` "none" for no error at all)."""
    return first_error_counts(_concat([D.first_error_turns(s) for s in scoreds]))


def first_error_counts(first: pd.DataFrame) -> pd.DataFrame:
    """`first_error_distribution` of per-dialogue first error turns (`run_id`, `dialogue_id`,
    `first_error_turn`: NaN when never wrong; from the scored runs, or the score store's picker tables)."""
    if not len(first):
        return pd.DataFrame(columns=["run_id", "first_error_turn", "label", "n_dialogues", "share"])
    label = first["first_error_turn"].map(lambda t: "none" if pd.isna(t) else str(int(t)))
    frame = first.assign(label=label, first_error_turn=first["first_error_turn"].astype(float))
    counts = (
        frame.groupby(["run_id", "label"], sort=False)
        .agg(n_dialogues=("dialogue_id", "size"), first_error_turn=("first_error_turn", "first"))
        .reset_index()
    )
    counts["share"] = counts["n_dialogues"] / counts.groupby("run_id")["n_dialogues"].transform("sum")
    counts = counts.sort_values(["run_id", "first_error_turn"], na_position="last", kind="stable")
    return counts[["run_id", "first_error_turn", "label", "n_dialogues", "share"]].reset_index(drop=True)


def first_error_dialogues(scored: Scored, *, label: str) -> pd.DataFrame:
    """The dialogues behind one bin of `first_error_distribution`: those whose first error is at turn
    `label` ("none": the dialogues never wrong), with their errors and compounding run (file order)."""
    table = compounding_runs(scored)
    first = table["first_error_turn"]
    hit = first.isna() if str(label) == "none" else first == float(label)
    return table[hit].reset_index(drop=True)


# The columns of a click-through list of turns (a row opens the dialogue viewer at that turn).
TURN_LIST_COLUMNS = ["dialogue_id", "turn_index", "status", "n_wrong", "n_missed", "n_spurious", "user"]


def _turn_list(turns: pd.DataFrame) -> pd.DataFrame:
    status = np.where(turns["joint_correct"].astype(bool), "correct", "wrong")
    out = turns.assign(status=status)
    return out[TURN_LIST_COLUMNS].reset_index(drop=True)


def turns_at_depth(scored: Scored, *, turn_index: int) -> pd.DataFrame:
    """The turns behind one point of `depth_jga`: every turn at depth `turn_index` (file order), with its
    joint status and error counts."""
    turns = scored.turns
    return _turn_list(turns[turns["turn_index"] == int(turn_index)])
