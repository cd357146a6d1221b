"""Metric functions over scored tables: per-turn facts first, then one aggregation for any `by=`.

Every metric takes a `Scored` and keyword-only `by` (a column or list of columns of `turns` such as
`run_id`, `turn_index`, `type`, or of `slots`: `domain`, `slot`). Without `by` it returns a float;
with `by` a tidy frame with the `by` columns, the metric and `n_turns`. An empty slice gives NaN,
never 0. Grouping by a slot-level column restricts each turn to that group's slots (see
`joint_goal_accuracy`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.formats.vectors import FORMAT as VECTOR_FORMAT
from analysis.outcomes import MISSED_CODES, MISSED_KEYS, OUTCOMES, SPURIOUS_CODES, SPURIOUS_KEYS, Outcome
from analysis.scoring import Scored, _sorted_unique

SLOT_LEVEL = ("domain", "slot")
By = str | Sequence[str] | None


def _by_list(by: By) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _check_by(scored: Scored, by: list[str]) -> None:
    known = set(scored.turns.columns) | set(SLOT_LEVEL)
    unknown = [c for c in by if c not in known]
    if unknown:
        raise ValueError(f"cannot group by {unknown}: by has to name columns of turns or slots, one of {sorted(known)}")


# --- Runs without values ------------------------------------------------------------------------------
# A per-slot correctness file (`analysis.formats.vectors`) says only whether each slot was right: its
# states are placeholders. Metrics that need values or the gold state (which slots hold a value, which
# triples are new) are NaN for such a run, with the reason `values_missing` gives, never a number
# computed from the placeholders.
VALUELESS_FORMATS = frozenset({VECTOR_FORMAT})


def valueless_runs(scored: Scored) -> list[str]:
    """The runs read from a file that holds no values (per-slot correctness vectors)."""
    return [m.run_id for m in scored.metas if VALUELESS_FORMATS.intersection(m.formats)]


def values_missing(scored: Scored) -> str | None:
    """Why a metric that needs slot values or the gold state does not apply to these runs, or None.

    >>> from analysis.demo.testing import scored_from_states
    >>> values_missing(scored_from_states([{"hotel": {"area": "east"}}], [{}])) is None
    True
    """
    runs = valueless_runs(scored)
    if not runs:
        return None
    which = "" if len(scored.metas) == 1 else f" (run{'s' if len(runs) > 1 else ''} {', '.join(runs)})"
    return (
        f"it needs slot values or the gold state, and a per-slot correctness file{which} says only whether "
        "each slot was right (0/1 per slot)"
    )


def _blank_valueless(result: Any, scored: Scored, keys: list[str], columns: tuple[str, ...]) -> Any:
    """`result` with `columns` NaN for the runs without values: per run when `keys` holds `run_id`,
    else the whole result (a pooled number over such a run is no number either)."""
    runs = valueless_runs(scored)
    if not runs:
        return result
    if isinstance(result, dict):
        return {k: (float("nan") if k in columns else v) for k, v in result.items()}
    if not isinstance(result, pd.DataFrame):
        return float("nan")
    result = result.copy()
    rows = result["run_id"].isin(runs).to_numpy() if "run_id" in keys else np.ones(len(result), dtype=bool)
    for column in columns:
        if column in result.columns:
            result[column] = result[column].astype(float).where(~rows)
    return result


def _needs_values(*columns: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A metric function that needs values: its `columns` (keys of a dict, columns of a frame; a float
    result is the value) are NaN for runs without values (`values_missing`)."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def blanked(scored: Scored, *, by: By = None) -> Any:
            return _blank_valueless(function(scored, by=by), scored, _by_list(by), columns)

        return blanked

    return wrap


def turn_facts(scored: Scored, *, by: By = None) -> pd.DataFrame:
    """One row per turn (or per turn and slot-level group) with the outcome counts of its slots.

    Slot-level groups (`domain`, `slot`) keep only the turns where the group occurs in gold or
    prediction, with counts restricted to its slots.
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    if not slot_keys:
        return scored.turns
    facts = _slot_group_counts(scored, tuple(slot_keys))
    turn_keys = [k for k in keys if k not in SLOT_LEVEL]
    facts = facts.merge(scored.turns[list(dict.fromkeys(["tid", "run_id", *turn_keys]))], on="tid")
    facts["joint_correct"] = (facts["n_wrong"] + facts["n_missed"] + facts["n_spurious"]) == 0
    return facts


def _slot_group_counts(scored: Scored, slot_keys: tuple[str, ...]) -> pd.DataFrame:
    """Outcome counts per turn and slot-level group; memoised on the Scored (per-domain JGA, its interval
    and the outcome mix all start from it)."""
    return scored.memoised(
        ("slot_group_counts", slot_keys),
        lambda: _count_slot_groups(scored.slots, slot_keys, slot_pairs(scored) if slot_keys == ("domain",) else None),
    )


def _count_slot_groups(slots: pd.DataFrame, slot_keys: tuple[str, ...], pairs: Any = None) -> pd.DataFrame:
    if slot_keys == ("domain",) and pairs is not None and outcome_codes(slots) is not None:
        return _count_domains(slots, *pairs)
    outcome = slots["outcome"]
    flags = pd.DataFrame(
        {
            "tid": slots["tid"].to_numpy(),
            **{k: slots[k].to_numpy() for k in slot_keys},
            "n_gold": slots["gold_value"].notna().to_numpy(),
            "n_pred": slots["pred_value"].notna().to_numpy(),
            "n_correct": (outcome == Outcome.CORRECT.key).to_numpy(),
            "n_wrong": (outcome == Outcome.WRONG_VALUE.key).to_numpy(),
            "n_missed": outcome.isin(MISSED_KEYS).to_numpy(),
            "n_spurious": outcome.isin(SPURIOUS_KEYS).to_numpy(),
        }
    )
    return flags.groupby(["tid", *slot_keys], sort=False, observed=True).sum().reset_index()


def _count_domains(slots: pd.DataFrame, group: np.ndarray, pairs: pd.DataFrame) -> pd.DataFrame:
    """`_count_slot_groups(slots, ("domain",))` from the rows' (domain, slot) groups (`slot_pairs`): the
    same rows, in the same order (each (turn, domain) where it first occurs), keyed by integers."""
    domain_code, domains = pd.factorize(pairs["domain"].to_numpy(dtype=object))
    n_domains = max(len(domains), 1)
    key = slots["tid"].to_numpy().astype("int64") * n_domains + domain_code[group]
    cell, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # cells in order of first appearance, as sort=False gives them
    rank = np.empty(len(cell), dtype="int64")
    rank[order] = np.arange(len(cell))
    row_group = rank[inverse]
    first = first[order]
    outcome = outcome_codes(slots)
    assert outcome is not None
    return pd.DataFrame(
        {
            "tid": slots["tid"].to_numpy()[first],
            "domain": pd.array(domains, dtype="str").take(domain_code[group[first]]),
            **_counted_outcomes(slots, outcome, row_group, len(cell)),
        }
    )


def _counted_outcomes(slots: pd.DataFrame, outcome: np.ndarray, group: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per group (each slot row's `group`, 0..n-1): its gold and predicted values and its rows of each
    outcome (`outcome`: `outcome_codes`), as int64 counts named like `turn_facts`' columns."""

    def total(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group[mask], minlength=n).astype("int64")

    return {
        "n_gold": total(slots["gold_value"].notna().to_numpy()),
        "n_pred": total(slots["pred_value"].notna().to_numpy()),
        "n_correct": total(outcome == Outcome.CORRECT),
        "n_wrong": total(outcome == Outcome.WRONG_VALUE),
        "n_missed": total(np.isin(outcome, MISSED_CODES)),
        "n_spurious": total(np.isin(outcome, SPURIOUS_CODES)),
    }


def _aggregate(
    facts: pd.DataFrame, value: pd.Series, keys: list[str], name: str, *, universe: pd.DataFrame | None = None
) -> float | pd.DataFrame:
    """Mean of `value` per group of `keys`; groups of `universe` with no rows get NaN and n_turns 0."""
    if not keys:
        return float(value.mean()) if len(value) else float("nan")
    if keys == ["tid"]:
        one_each = _one_row_per_turn(facts, value, name, universe)
        if one_each is not None:
            return one_each
    out = _mean_of_flags(facts, value.to_numpy(dtype=float), keys, name)
    if out is None:
        frame = facts[keys].assign(**{name: value.to_numpy(dtype=float)})
        grouped = frame.groupby(keys, sort=True, observed=True, dropna=False)[name]
        out = grouped.agg(["mean", "count"]).reset_index().rename(columns={"mean": name, "count": "n_turns"})
    if universe is not None:
        out = universe[keys].drop_duplicates().merge(out, on=keys, how="left")
        out["n_turns"] = out["n_turns"].fillna(0).astype("int64")
        out = out.sort_values(keys, kind="stable").reset_index(drop=True)
    return out


def _mean_of_flags(facts: pd.DataFrame, values: np.ndarray, keys: list[str], name: str) -> pd.DataFrame | None:
    """`_aggregate`'s sorted group-by mean and count when every value is 0, 1 or NaN (JGA and the like),
    counted per integer group code: a group's mean is then its count of 1s over its count of numbers, an
    exact quotient however the sum is taken, so the same frame (tested). None when a value is anything
    else, or a key is missing somewhere (then the group-by)."""
    counted = ~np.isnan(values)
    if not bool(((values == 0) | (values == 1) | ~counted).all()):
        return None
    combined = np.zeros(len(facts), dtype="int64")
    levels = []
    for key in keys:
        column = facts[key]
        if column.isna().any():
            return None
        codes, uniques = pd.factorize(column)
        try:
            order = uniques.argsort()
        except TypeError:  # values that do not sort together
            return None
        rank = np.empty(len(order), dtype="int64")
        rank[order] = np.arange(len(order))
        ordered = uniques.take(order)
        if len(ordered) and combined.max(initial=0) > np.iinfo("int64").max // max(len(ordered), 1):
            return None
        combined = combined * len(ordered) + rank[codes]
        levels.append(ordered)
    cells, inverse = np.unique(combined, return_inverse=True)
    ones = np.bincount(inverse, weights=np.where(counted, values, 0.0), minlength=len(cells))
    numbers = np.bincount(inverse, weights=counted, minlength=len(cells)).astype("int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(numbers > 0, ones / numbers, np.nan)
    columns: dict[str, Any] = {}
    rest = cells
    for key, ordered in zip(reversed(keys), reversed(levels), strict=True):
        columns[key] = ordered.take(rest % len(ordered)).to_numpy() if len(ordered) else ordered.to_numpy()
        rest = rest // max(len(ordered), 1)
    out = pd.DataFrame({key: pd.Series(columns[key], dtype=facts[key].dtype) for key in keys})
    out[name] = mean
    out["n_turns"] = numbers
    return out


def _one_row_per_turn(
    facts: pd.DataFrame, value: pd.Series, name: str, universe: pd.DataFrame | None
) -> pd.DataFrame | None:
    """`_aggregate` by `tid` when each turn id has at most one row (per-turn facts): every group's mean is
    its one value and its count 1, or 0 for NaN, so the group-by (and the universe's merge) is a lookup.
    The same frame, bit for bit (tested); None for any other shape (then the group-by)."""
    tids = facts["tid"].to_numpy()
    index = pd.Index(tids)
    if tids.dtype.kind not in "iu" or not index.is_unique:
        return None
    values = value.to_numpy(dtype=float)
    if universe is None:
        order = np.argsort(tids, kind="stable")
        ids, per = tids[order], values[order]
    else:
        ids = universe["tid"].to_numpy()
        if ids.dtype != tids.dtype or not pd.Index(ids).is_unique:
            return None
        found = index.get_indexer(ids)
        per = np.full(len(ids), np.nan)
        per[found >= 0] = values[found[found >= 0]]
        order = np.argsort(ids, kind="stable")
        ids, per = ids[order], per[order]
    return pd.DataFrame({"tid": ids, name: per, "n_turns": (~np.isnan(per)).astype("int64")})


def _universe(scored: Scored, keys: list[str]) -> pd.DataFrame | None:
    """Every group a turn-level `by` can take, so that an empty slice shows as NaN, not as a gap."""
    if not keys or any(k in SLOT_LEVEL for k in keys):
        return None
    return scored.turns[keys]


def joint_goal_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """Share of turns whose normalised predicted state equals the gold state; all turns count.

    Grouped by `domain` (per-domain JGA): over turns where the domain occurs in gold or prediction,
    correct when both states restricted to the domain are equal. (Alternatives in the literature
    count only turns whose *gold* has the domain, or all turns; both inflate JGA for rare domains.)

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {}, {"hotel": {"area": "west"}}],
    ...                        [{"hotel": {"area": "east"}}, {}, {"hotel": {"area": "east"}}])
    >>> round(joint_goal_accuracy(s), 4)
    0.6667
    """
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    return _aggregate(facts, facts["joint_correct"], keys, "jga")


def final_turn_jga(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """JGA over the last turn of every dialogue only (the state the system would act on)."""
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    facts = facts.merge(scored.turns[["tid", "is_final"]], on="tid") if "is_final" not in facts else facts
    final = facts["is_final"].to_numpy(dtype=bool)
    value = pd.Series(facts["joint_correct"].to_numpy()[final])
    return _aggregate(facts[keys][final], value, keys, "final_turn_jga", universe=_universe(scored, keys))


def jga_by_turn_depth(scored: Scored, *, by: By = None) -> pd.DataFrame:
    """JGA per turn index (0 is the first user turn), optionally further split (e.g. by run)."""
    result = joint_goal_accuracy(scored, by=[*_by_list(by), "turn_index"])
    assert isinstance(result, pd.DataFrame)
    return result


def _prf(tp: Any, fp: Any, fn: Any, *, empty: float | None = None) -> tuple[Any, Any, Any]:
    """Precision, recall and F1 of series or arrays of counts; 0/0 is NaN, or `empty` when the
    convention's scorer prints a number there (DSTC9 1, ConvLab-3 and mwzeval 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / (tp + fp)
        recall = tp / (tp + fn)
        f1 = 2 * tp / (2 * tp + fp + fn)
    if empty is not None:
        precision, recall, f1 = (
            x.fillna(empty) if isinstance(x, pd.Series) else np.where(np.isnan(x), empty, x)
            for x in (precision, recall, f1)
        )
    return precision, recall, f1


@_needs_values("precision", "recall", "f1", "tp", "fp", "fn")
def slot_prf_micro(scored: Scored, *, by: By = None) -> dict[str, float] | pd.DataFrame:
    """Micro precision, recall and F1 over triples pooled across turns; a wrong value is one FP and
    one FN. `support` is the number of gold triples. Undefined ratios (no gold, no prediction) are NaN.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east", "stars": "4"}}], [{"hotel": {"area": "west"}}])
    >>> {k: round(v, 4) for k, v in slot_prf_micro(s).items()}
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 2.0}
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    counts = ["n_correct", "n_wrong", "n_missed", "n_spurious", "n_gold"]
    if not keys:
        turns = scored.turns
        totals = {c: np.array([turns[c].to_numpy().sum()]) for c in counts}
        precision, recall, f1 = _prf(
            totals["n_correct"],
            totals["n_wrong"] + totals["n_spurious"],
            totals["n_wrong"] + totals["n_missed"],
            empty=scored.convention.empty_ratio,
        )
        return {
            "precision": float(precision[0]),
            "recall": float(recall[0]),
            "f1": float(f1[0]),
            "support": float(totals["n_gold"][0]),
        }
    elif (
        keys == list(SLOT_LEVEL)
        and (pairs := slot_pairs(scored)) is not None
        and (outcome := outcome_codes(scored.slots)) is not None
    ):
        # Per (domain, slot), the Slots page's table: counted per integer pair code, not grouped on two
        # string columns (the same sums, in the same sorted order).
        group, names = pairs
        counted = _counted_outcomes(scored.slots, outcome, group, len(names))
        sums = names.assign(**{c: counted[c] for c in counts}).set_index(keys)
    elif keys == ["tid"] and (per_turn := _counted_per_turn(scored)) is not None:
        sums = per_turn
    else:
        sums = _grouped_counts(scored, keys, counts)
    tp = sums["n_correct"]
    fp = sums["n_wrong"] + sums["n_spurious"]
    fn = sums["n_wrong"] + sums["n_missed"]
    precision, recall, f1 = _prf(tp, fp, fn, empty=scored.convention.empty_ratio)
    out = pd.DataFrame(
        {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": sums["n_gold"],
            "tp": tp,
            "fp": fp,
            "fn": fn,
        }
    )
    return out.reset_index()


def _grouped_counts(scored: Scored, keys: list[str], counts: list[str]) -> pd.DataFrame:
    """`slot_prf_micro`'s outcome counts per group of `keys`, by a group-by of the slot rows (every group of
    the turn-level `keys`' universe listed, with zeros)."""
    # Micro counts are sums over slot rows, so no per-turn step is needed: group the rows directly.
    slots = scored.slots
    codes = slots["outcome"].cat.codes.to_numpy()
    rows = pd.DataFrame(
        {
            "n_correct": codes == Outcome.CORRECT,
            "n_wrong": codes == Outcome.WRONG_VALUE,
            "n_missed": np.isin(codes, MISSED_CODES),
            "n_spurious": np.isin(codes, SPURIOUS_CODES),
            "n_gold": slots["gold_value"].notna().to_numpy(),
        }
    )
    turn_keys = [k for k in keys if k not in SLOT_LEVEL]
    if turn_keys:
        position = pd.Index(scored.turns["tid"]).get_indexer(slots["tid"])
        for k in turn_keys:
            rows[k] = scored.turns[k].to_numpy()[position]
    for k in keys:
        if k in SLOT_LEVEL:
            rows[k] = slots[k].to_numpy()
    sums = rows.groupby(keys, observed=True, sort=True)[counts].sum()
    universe = _universe(scored, keys)
    if universe is not None:  # a group with no slot rows still shows, with NaN ratios
        groups = universe.drop_duplicates().sort_values(keys)
        index = pd.MultiIndex.from_frame(groups) if len(keys) > 1 else pd.Index(groups[keys[0]], name=keys[0])
        sums = sums.reindex(index, fill_value=0)
    return sums


def _counted_per_turn(scored: Scored) -> pd.DataFrame | None:
    """`slot_prf_micro`'s sums by `tid` (every turn, sorted by `tid`, as the group-by reindexed to the turns
    gives them), counted per turn position with `np.bincount` instead of grouped; None (then the group-by)
    unless the outcomes are the scorer's codes and every slot row's turn is one of the turns."""
    slots = scored.slots
    outcome = outcome_codes(slots)
    if outcome is None:
        return None
    tids = np.unique(scored.turns["tid"].to_numpy())
    row_tid = slots["tid"].to_numpy()
    position = np.searchsorted(tids, row_tid)
    if len(row_tid) and (int(position.max()) >= len(tids) or not np.array_equal(tids[position], row_tid)):
        return None
    counted = _counted_outcomes(slots, outcome, position, len(tids))
    counts = ("n_correct", "n_wrong", "n_missed", "n_spurious", "n_gold")
    return pd.DataFrame({c: counted[c] for c in counts}, index=pd.Index(tids, name="tid"))


def outcome_codes(slots: pd.DataFrame) -> np.ndarray | None:
    """The rows' outcome codes (`Outcome`), when `outcome` is the scorer's categorical column with no
    missing value; None for anything else (then compare the outcome keys)."""
    outcome = slots["outcome"]
    if not isinstance(outcome.dtype, pd.CategoricalDtype) or list(outcome.cat.categories) != list(OUTCOMES):
        return None
    codes = outcome.cat.codes.to_numpy()
    return codes if int(codes.min(initial=0)) >= 0 else None


def slot_pairs(scored: Scored) -> tuple[np.ndarray, pd.DataFrame] | None:
    """Each slot row's (domain, slot) group and the groups (`domain`, `slot`), sorted by domain then slot as
    a sorted group-by orders them, from the rows' integer `pair_code` (memoised). None when a pair code
    names two (domain, slot) pairs (rows of several runs), or there are no rows: then group the strings."""
    return scored.memoised(("slot_pairs",), lambda: _slot_pairs(scored.slots))


def _slot_pairs(slots: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame] | None:
    if not len(slots) or "pair_code" not in slots:
        return None
    codes = slots["pair_code"].to_numpy()
    if codes.dtype.kind not in "iu" or int(codes.min()) < 0:
        return None
    pairs, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    domain, slot = (slots[c].astype("str").array for c in SLOT_LEVEL)
    # One (domain, slot) per code: every row's names equal its code's first row's.
    for names in (domain, slot):
        if names.isna().any() or not bool((names == names.take(first[inverse])).all()):
            return None
    names = pd.DataFrame({"domain": domain.take(first), "slot": slot.take(first)})
    order = np.lexsort((names["slot"].to_numpy(dtype=object), names["domain"].to_numpy(dtype=object)))
    position = np.empty(len(pairs), dtype="int64")
    position[order] = np.arange(len(pairs))
    return position[inverse], names.take(order).reset_index(drop=True)


def per_slot_prf(scored: Scored, *, by: By = None) -> pd.DataFrame:
    """Per (domain, slot) precision, recall, F1 and gold support, sorted by F1 ascending."""
    result = slot_prf_micro(scored, by=[*_by_list(by), "domain", "slot"])
    assert isinstance(result, pd.DataFrame)
    return result.sort_values(["f1", "support"], ascending=[True, False], na_position="first", kind="stable")


@_needs_values("slot_f1_seed")
def slot_f1_seed(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """Slot F1 exactly as the crosswoz-dst-eval recipe: per turn, for each slot *name* in the gold
    state, F1 of the value sets (slot names pool across domains: `hotel-area` and `restaurant-area`
    are one slot, and equal values in two domains count once); the turn's score is the mean over
    those slots, 0 for a turn with empty gold; the run's score is the mean over turns.

    Values are compared after the convention (a prediction that matched gold under fuzzy matching or
    an accepted alternative counts as the gold value). Grouped by a slot-level column, turns without
    gold in the group are left out instead of scoring 0.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}, "restaurant": {"area": "east"}}, {}],
    ...                        [{"hotel": {"area": "east"}}, {}])
    >>> slot_f1_seed(s)  # turn 1: area {east} vs {east} -> 1; turn 2: empty gold -> 0
    0.5
    """
    return _set_f1(scored, by=by, key="slot", name="slot_f1_seed")


@_needs_values("slot_f1_domain_slot")
def slot_f1_domain_slot(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """The seed recipe keyed by (domain, slot): per turn, the share of gold domain-slots predicted with
    the right value; 0 for empty gold; mean over turns."""
    if by is None:
        # A (turn, domain, slot) cell holds at most one value per side, so a turn with gold scores
        # n_correct / n_gold: no set arithmetic needed for the headline number.
        turns = scored.turns
        n_gold = turns["n_gold"].to_numpy()
        has_gold = n_gold > 0
        total = (turns["n_correct"].to_numpy()[has_gold] / n_gold[has_gold]).sum()
        return float(total / len(turns)) if len(turns) else float("nan")
    return _set_f1(scored, by=by, key="domain_slot", name="slot_f1_domain_slot")


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted array: each element's index among the distinct values, and the distinct values."""
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    return np.cumsum(new) - 1, ordered[new]


def _codes(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Dense integer codes of the value combinations of `columns`, and the combinations themselves."""
    if not columns:
        return np.zeros(len(frame), dtype="int64"), pd.DataFrame(index=[0])
    codes, uniques = pd.MultiIndex.from_frame(frame[columns]).factorize()
    return codes.astype("int64"), uniques.to_frame(index=False, name=columns)


def _set_f1(scored: Scored, *, by: By, key: str, name: str) -> float | pd.DataFrame:
    keys = _by_list(by)
    _check_by(scored, keys)
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    # The per-(turn, slot-level group) scores depend on the slot-level keys only: the headline number and
    # the per-turn numbers (the stored parts) share one computation.
    score, groups, n_s, s_values = scored.memoised(
        ("set_f1", key, tuple(slot_keys)), lambda: _set_f1_scores(scored, key, slot_keys)
    )
    if not keys:  # the recipe's mean over all turns; a turn with empty gold contributes 0
        return float(score.sum() / len(scored.turns)) if len(scored.turns) else float("nan")
    turn_keys = [k for k in keys if k not in SLOT_LEVEL]
    turn_cols = scored.turns[list(dict.fromkeys(["tid", "run_id", *turn_keys]))]
    if slot_keys:
        facts = pd.DataFrame({"tid": groups // n_s, name: score})
        facts = pd.concat([facts, s_values.iloc[groups % n_s].reset_index(drop=True)], axis=1).merge(
            turn_cols, on="tid"
        )
    else:
        # The recipe's rule: a turn with empty gold scores 0 (groups are turn ids here).
        per_turn = pd.Series(score, index=groups // n_s)
        facts = turn_cols.assign(**{name: per_turn.reindex(turn_cols["tid"].to_numpy(), fill_value=0.0).to_numpy()})
    return _aggregate(facts, facts[name], keys, name)


def _set_f1_scores(scored: Scored, key: str, slot_keys: list[str]) -> tuple[np.ndarray, np.ndarray, int, pd.DataFrame]:
    """`_set_f1`'s score per (turn, slot-level group) with a gold value, the groups (turn id x `n_s` +
    slot-level group code), `n_s` and the slot-level groups' values."""
    slots = scored.slots
    correct = slots["outcome"].cat.codes.to_numpy() == Outcome.CORRECT
    # Integer codes: group s (slot-level by values), name n (slot name, or domain-slot), value v.
    # Value and name codes come from scoring and are comparable within a run, hence within a turn.
    s_code, s_values = _codes(slots, slot_keys)
    n_code = slots["slot_code" if key == "slot" else "pair_code"].to_numpy()
    gold_code = slots["gold_code"].to_numpy()
    resolved = np.where(correct, gold_code, slots["pred_code"].to_numpy())  # a match counts as the gold value
    n_s = len(s_values)
    n_n = int(n_code.max()) + 1 if len(n_code) else 1
    n_v = int(max(gold_code.max(initial=0), resolved.max(initial=0))) + 1
    tid = slots["tid"].to_numpy()
    group = (tid * n_s + s_code) * n_n + n_code  # one (turn, slot-level group, slot name) cell
    has_gold = gold_code >= 0
    has_pred = resolved >= 0
    if key == "domain_slot" and not slot_keys and len(group) > 1 and bool((group[1:] > group[:-1]).all()):
        # Each (turn, domain-slot) cell is one row, in order (a run's slots table): a cell's F1 is 1 for a
        # matched gold value, else 0, and turns come in order, so no sort is needed. The same numbers.
        tp = has_gold & has_pred & (resolved == gold_code)
        f1 = 2 * tp[has_gold] / (1 + has_pred[has_gold])
        inverse, groups = _runs(group[has_gold] // n_n)
    else:
        # One sorted list of the distinct (cell, value, side) entries, gold side 0 and prediction side 1:
        # a gold value the prediction also holds is directly followed by its prediction entry. One sort
        # instead of a sort per side plus searchsorted lookups (several times slower on ~40k keys).
        entries = _sorted_unique(
            np.concatenate(
                [
                    (group[has_gold] * n_v + gold_code[has_gold]) * 2,
                    (group[has_pred] * n_v + resolved[has_pred]) * 2 + 1,
                ]
            )
        )
        is_pred = (entries & 1).astype(bool)
        value_key = entries >> 1
        hit = np.zeros(len(entries), dtype=bool)
        hit[:-1] = value_key[1:] == value_key[:-1]
        cell_of, cells = _runs(value_key // n_v)
        n_gold = np.bincount(cell_of[~is_pred], minlength=len(cells))
        n_pred = np.bincount(cell_of[is_pred], minlength=len(cells))
        tp = np.bincount(cell_of, weights=hit, minlength=len(cells))
        keep = n_gold > 0
        f1 = 2 * tp[keep] / (n_gold[keep] + n_pred[keep])
        inverse, groups = _runs(cells[keep] // n_n)  # (turn, slot-level group)
    score = np.bincount(inverse, weights=f1) / np.bincount(inverse)
    score.flags.writeable = groups.flags.writeable = False  # memoised: shared
    return score, groups, n_s, s_values


@_needs_values("joint_f1_trade")
def joint_f1_trade(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """TRADE's `compute_prf`: per-turn F1 over triples, averaged over turns; empty gold with empty
    prediction scores 1, empty gold with any prediction 0, and a turn with no true positive 0."""
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    tp, fp, fn = _triple_counts(scored, facts, keys)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    f1 = np.where(facts["n_gold"].to_numpy() > 0, f1, (facts["n_pred"].to_numpy() == 0).astype(float))
    return _aggregate(facts, pd.Series(f1), keys, "joint_f1_trade")


def _triple_counts(scored: Scored, facts: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, ...]:
    """Per row of `facts`: true positives, false positives and false negatives of its triples (TRADE's
    literal sets: a slot predicted with two values has one right and one wrong triple)."""
    slots = scored.slots
    tp, wrong, missed, spurious = (facts[c].to_numpy() for c in ("n_correct", "n_wrong", "n_missed", "n_spurious"))
    if "set_tp" not in slots or not slots["set_tp"].notna().any():
        return tp, wrong + spurious, wrong + missed
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    # Rows of runs with no slot named twice carry no set counts (NaN once combined): their outcomes count.
    codes = slots["outcome"].cat.codes.to_numpy()
    derived = {
        "set_tp": codes == Outcome.CORRECT,
        "set_fp": (codes == Outcome.WRONG_VALUE) | np.isin(codes, SPURIOUS_CODES),
        "set_fn": (codes == Outcome.WRONG_VALUE) | np.isin(codes, MISSED_CODES),
    }
    counts = pd.DataFrame(
        {"tid": slots["tid"].to_numpy(), **{k: slots[k].to_numpy() for k in slot_keys}}
        | {c: slots[c].fillna(pd.Series(derived[c], index=slots.index)).to_numpy(dtype="int64") for c in derived}
    )
    sums = counts.groupby(["tid", *slot_keys], observed=True, sort=False)[list(derived)].sum()
    index = pd.MultiIndex.from_frame(facts[["tid", *slot_keys]]) if slot_keys else pd.Index(facts["tid"])
    aligned = sums.reindex(index, fill_value=0)
    return tuple(aligned[c].to_numpy() for c in ("set_tp", "set_fp", "set_fn"))


def _ontology_size(scored: Scored, keys: list[str]) -> pd.DataFrame | int:
    onto = scored.ontology
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    if not slot_keys:
        return onto.groupby("run_id").size().rename("n_ontology").reset_index()
    return onto.groupby(["run_id", *slot_keys]).size().rename("n_ontology").reset_index()


def _run_ontology_size(scored: Scored, run_ids: pd.Series) -> np.ndarray:
    """Ontology size of each row's run (0 for a run without ontology), as floats."""
    codes, runs = pd.factorize(run_ids)
    sizes = scored.ontology["run_id"].value_counts().reindex(runs, fill_value=0).to_numpy(dtype=float)
    return sizes[codes] if len(codes) else np.zeros(0)


def _cells_per_turn(scored: Scored) -> np.ndarray:
    """Ontology slots each turn counts: its run's ontology size, or the slots the gold file lists for it.
    Memoised (read-only): slot accuracy's number, its per-turn numbers and their interval parts share it."""
    return scored.memoised(("cells_per_turn",), lambda: _count_cells_per_turn(scored))


def _count_cells_per_turn(scored: Scored) -> np.ndarray:
    cells = _run_ontology_size(scored, scored.turns["run_id"])
    if scored.convention.ontology == "listed" and "n_listed" in scored.turns:
        listed = scored.turns["n_listed"].fillna(0).to_numpy(dtype=float)
        cells = np.where(listed > 0, listed, cells)
    cells.flags.writeable = False
    return cells


# Slot accuracy counts errors over the convention's ontology only, so it means something only when the
# run's gold slots lie inside it. Measured on ../shared/realdata under `trade` and `mwzeval` (the 30
# MultiWOZ slots): every MultiWOZ run has 100% of its gold slot values inside (MultiWOZ 2.1 val: 99.98%,
# 7 hospital-department values), every other dataset at most 37% (CrossWOZ and MultiWOZ-zh 0%,
# X-RiSAWOZ 29-30%, CrossWOZ-en 24-37%). 90% sits in that gap with room on the MultiWOZ side for a
# variant with a few slots outside the 30, and a run with more than a tenth of its gold outside would
# have that tenth of its errors go uncounted.
ONTOLOGY_MIN_SHARE = 0.9
_ONTOLOGY_NAMES = {
    "multiwoz30": "the 30 MultiWOZ slots",
    "listed": "the slots the gold file lists",
    "observed": "the slots seen in the run",
}


def ontology_fit(scored: Scored) -> pd.DataFrame:
    """Per run: how many of its gold slot values (`n_gold`, one per turn and slot) fall inside the
    convention's ontology (`n_inside`), their `share`, and whether the ontology `applies` (share at
    least `ONTOLOGY_MIN_SHARE`; a run without gold values has nothing to contradict it, so it applies).

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"餐馆": {"名称": "x"}}, {"hotel": {"area": "east"}}], [{}, {}], convention="trade")
    >>> ontology_fit(s)[["n_gold", "n_inside", "applies"]].to_dict("records")
    [{'n_gold': 2, 'n_inside': 1, 'applies': False}]
    """
    return scored.memoised(("ontology_fit",), lambda: _ontology_fit(scored))


def _ontology_fit(scored: Scored) -> pd.DataFrame:
    gold = scored.slots["gold_value"].notna().to_numpy()
    inside = scored.slots["in_ontology"].to_numpy(dtype=bool)
    if len(scored.metas) == 1:  # one run: two sums, no grouping on the string column (~10 ms on MultiWOZ)
        n_gold, n_inside = int(gold.sum()), int((gold & inside).sum())
        fit = pd.DataFrame({"run_id": scored.run_ids, "n_gold": [n_gold], "n_inside": [n_inside]})
    else:
        counts = (
            pd.DataFrame({"run_id": scored.slots["run_id"].to_numpy(), "n_gold": gold, "n_inside": gold & inside})
            .groupby("run_id", sort=False, observed=True)[["n_gold", "n_inside"]]
            .sum()
        )
        fit = counts.reindex(scored.run_ids, fill_value=0).astype("int64").rename_axis("run_id").reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        fit["share"] = fit["n_inside"] / fit["n_gold"].where(fit["n_gold"] > 0)
    fit["applies"] = (fit["n_gold"] == 0) | (fit["share"] >= ONTOLOGY_MIN_SHARE)
    return fit


def ontology_mismatch(scored: Scored) -> str | None:
    """Why slot accuracy over the convention's ontology does not apply to these runs, or None when it does.

    It does not apply when fewer than `ONTOLOGY_MIN_SHARE` (90%) of a run's gold slot values, named as
    the convention names them, fall inside the ontology: the MultiWOZ 30-slot ontology of `trade` and
    `mwzeval` over a CrossWOZ or RiSAWOZ run, whose slots lie outside it, would count none of their
    errors and report about 1.0. Slot accuracy (`slot_accuracy`, `slot_accuracy_trade`) is then NaN.

    >>> from analysis.demo.testing import scored_from_states
    >>> ontology_mismatch(scored_from_states([{"hotel": {"area": "east"}}], [{}], convention="trade")) is None
    True
    >>> print(ontology_mismatch(scored_from_states([{"餐馆": {"名称": "x"}}], [{}], convention="trade")))
    the trade convention's ontology (the 30 MultiWOZ slots) does not fit: 0 of 1 gold slot values (0%) fall inside it, 90% needed; errors on slots outside it would go uncounted
    """
    fit = ontology_fit(scored)
    unfit = fit[~fit["applies"]]
    if unfit.empty:
        return None
    conv = scored.convention
    where = f"the {conv.name} convention's ontology ({_ONTOLOGY_NAMES.get(conv.ontology, conv.ontology)})"
    parts = [
        f"{'' if len(fit) == 1 else f'run {row.run_id}: '}{row.n_inside:,} of {row.n_gold:,} gold slot values "
        f"({row.share:.0%}) fall inside it"
        for row in unfit.itertuples(index=False)
    ]
    return (
        f"{where} does not fit: {'; '.join(parts)}, {ONTOLOGY_MIN_SHARE:.0%} needed; "
        "errors on slots outside it would go uncounted"
    )


def _unfit_runs(scored: Scored) -> tuple[str, ...]:
    """The runs whose gold lies outside the ontology (`ontology_fit`), memoised: asked by every slot-accuracy
    call."""

    def compute() -> tuple[str, ...]:
        fit = ontology_fit(scored)
        return tuple(fit.loc[~fit["applies"], "run_id"].tolist())

    return scored.memoised(("unfit_runs",), compute)


def _blank_unfit(scored: Scored, result: float | pd.DataFrame, keys: list[str], column: str) -> float | pd.DataFrame:
    """NaN for the runs whose gold lies outside the ontology (`ontology_mismatch`): per run when `by`
    holds `run_id`, else for the whole result (a pooled number over an unfit run is no number either)."""
    unfit = _unfit_runs(scored)
    if not unfit:
        return result
    if not isinstance(result, pd.DataFrame):
        return float("nan")
    result = result.copy()
    rows = result["run_id"].isin(list(unfit)) if "run_id" in keys else slice(None)
    result.loc[rows, column] = np.nan
    return result


def slot_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """The multiwoz-dst-eval recipe: over every slot of the convention's ontology in every turn, the
    share where the predicted value equals gold (both absent counts as correct). Predictions outside
    the ontology do not count. True negatives dominate this number: an empty prediction scores about
    0.8 on MultiWOZ.

    Under a `listed` ontology (DSTC9) the slots a turn counts are the ones the gold file lists for
    that turn (`n_listed`); errors are counted on slots listed anywhere in the file.

    NaN for a run whose gold slots lie outside the ontology (see `ontology_mismatch`), never ~1.0.
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    return _blank_unfit(scored, _slot_accuracy(scored, keys), keys, "slot_accuracy")


def _slot_accuracy(scored: Scored, keys: list[str]) -> float | pd.DataFrame:
    if not keys:
        cells = _cells_per_turn(scored)
        total = cells.sum()
        return float(1 - scored.turns["n_err_ontology"].sum() / total) if total else float("nan")
    if keys == ["tid"]:
        per_turn = _slot_accuracy_per_turn(scored)
        if per_turn is not None:
            return per_turn
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    turn_keys = [k for k in keys if k not in SLOT_LEVEL]
    per_turn_listing = not slot_keys and scored.convention.ontology == "listed" and "n_listed" in scored.turns
    extra = ["n_listed"] if per_turn_listing else []
    turns = scored.turns[list(dict.fromkeys(["tid", "run_id", *turn_keys, *extra]))]
    errors = scored.slots.loc[
        (scored.slots["outcome"] != Outcome.CORRECT.key) & scored.slots["in_ontology"], ["tid", *slot_keys]
    ]
    n_ontology = _ontology_size(scored, keys)
    assert isinstance(n_ontology, pd.DataFrame)
    # One row per turn (and slot-level group); a run with an empty ontology has 0 cells -> NaN.
    cells = turns.merge(n_ontology, on="run_id", how="left")
    cells["n_ontology"] = cells["n_ontology"].fillna(0)
    if per_turn_listing:
        # DSTC9: every slot the gold file lists for that turn counts, so the denominator is per turn.
        listed = cells["n_listed"].fillna(0).to_numpy()
        cells["n_ontology"] = np.where(listed > 0, listed, cells["n_ontology"].to_numpy())
    err = errors.groupby(["tid", *slot_keys], observed=True).size().rename("n_err").reset_index()
    cells = cells.merge(err, on=["tid", *slot_keys], how="left")
    cells["n_err"] = cells["n_err"].fillna(0)
    if not keys:
        total = cells["n_ontology"].sum()
        return float(1 - cells["n_err"].sum() / total) if total else float("nan")
    sums = cells.groupby(keys, observed=True).agg(
        n_err=("n_err", "sum"), cells=("n_ontology", "sum"), n_turns=("tid", "nunique")
    )
    sums["slot_accuracy"] = 1 - sums["n_err"] / sums["cells"].where(sums["cells"] > 0)
    return sums[["slot_accuracy", "n_turns"]].reset_index()


def _slot_accuracy_per_turn(scored: Scored) -> pd.DataFrame | None:
    """`_slot_accuracy(scored, ["tid"])` when each turn id names one turn, without its merges and group-by:
    per turn, its errors on ontology slots over its cells (`_cells_per_turn`; none: NaN), `n_turns` 1.
    The same frame, bit for bit (tested); None for any other shape."""
    turns, slots = scored.turns, scored.slots
    tids = turns["tid"].to_numpy()
    index = pd.Index(tids)
    if tids.dtype.kind not in "iu" or not index.is_unique:
        return None
    codes = outcome_codes(slots)
    if codes is None:
        return None
    error = (codes != Outcome.CORRECT) & slots["in_ontology"].to_numpy(dtype=bool)
    at = index.get_indexer(slots["tid"].to_numpy()[error])
    n_err = np.bincount(at[at >= 0], minlength=len(tids)).astype(float)
    cells = _cells_per_turn(scored)
    order = np.argsort(tids, kind="stable")
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 1 - n_err / np.where(cells > 0, cells, np.nan)
    return pd.DataFrame(
        {"tid": tids[order], "slot_accuracy": value[order], "n_turns": np.ones(len(tids), dtype="int64")}
    )


def slot_accuracy_trade(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """TRADE's `compute_acc`: per turn (N - missed - wrong - spurious) / N with N the ontology size
    (30 on MultiWOZ), so a predicted slot outside the ontology also costs one; averaged over turns.
    TRADE's quirk of finding a slot by `rsplit('-', 1)` on the triple string is reproduced, and so is
    the formula's lack of a floor: a turn with more errors than ontology slots scores below 0.
    NaN for a run whose gold slots lie outside the ontology (see `ontology_mismatch`)."""
    keys = _by_list(by)
    if any(k in SLOT_LEVEL for k in keys):
        raise ValueError("slot_accuracy_trade is a per-turn formula over the whole ontology: by= takes turn columns")
    facts = turn_facts(scored, by=keys)
    n = _run_ontology_size(scored, facts["run_id"])
    n[n == 0] = np.nan
    errors = sum(facts[c].to_numpy() for c in ("n_missed", "n_wrong", "n_spurious", "n_trade_extra"))
    result = _aggregate(facts, pd.Series(1 - errors / n), keys, "slot_accuracy_trade")
    return _blank_unfit(scored, result, keys, "slot_accuracy_trade")


@_needs_values("aga")
def average_goal_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """AGA: over turns with non-empty gold, the mean share of gold triples that are predicted."""
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    n_gold = facts["n_gold"].to_numpy()
    has_gold = n_gold > 0
    value = pd.Series(facts["n_correct"].to_numpy()[has_gold] / n_gold[has_gold])
    return _aggregate(facts[keys][has_gold], value, keys, "aga", universe=_universe(scored, keys))


# --- Metrics robust to compounding: IAGA, RSA, FGA, turn-level accuracy, GCA -------------------------
# Definitions follow the code of the papers' repositories (cuthalionn/Granular_Change_Accuracy
# `src/compute_accuracies.py`, `src/gca.py`; SuvodipDey/FGA), reproduced on ../shared/realdata/gca_poc
# (tests/test_new_metrics.py). They need each turn's previous turn: the previous row of `turns` in the same
# dialogue (scoring lists a dialogue's turns together, in turn order).

FGA_LAMBDAS = (0.25, 0.5, 0.75, 1.0)  # FGA's default penalties, as the FGA paper reports them
GCA_ALPHA = 1 - 1 / 11  # GCA's weight of value precision/recall against label precision/recall (src/gca.py)
_ABSENT, _NONE = -1, -2  # GCA's label states besides a value code: never seen so far, seen and now dropped


def _dialogue_codes(turns: pd.DataFrame) -> np.ndarray:
    """Each turn's dialogue as a number (a dialogue's turns are consecutive rows of `turns`)."""
    run, dialogue = turns["run_id"].to_numpy(), turns["dialogue_id"].to_numpy()
    new = np.ones(len(run), dtype=bool)
    new[1:] = (dialogue[1:] != dialogue[:-1]) | (run[1:] != run[:-1])
    return np.cumsum(new) - 1


def _previous_tid(turns: pd.DataFrame, dialogue: np.ndarray) -> np.ndarray:
    """Each turn's previous turn in its dialogue (its tid), -1 for a dialogue's first turn."""
    tid = turns["tid"].to_numpy()
    previous = np.full(len(tid), -1, dtype="int64")
    same = np.zeros(len(tid), dtype=bool)
    same[1:] = dialogue[1:] == dialogue[:-1]
    previous[same] = tid[:-1][same[1:]]
    return previous


class _Rows:
    """Per slot row: its turn's position, its previous-turn row of the same domain-slot, the codes."""

    def __init__(self, scored: Scored) -> None:
        turns, slots = scored.turns, scored.slots
        self.turn_index = pd.Index(turns["tid"])
        self.tid = slots["tid"].to_numpy()
        self.turn_pos = self.turn_index.get_indexer(self.tid)
        self.dialogue = _dialogue_codes(turns)
        self.prev_tid_of_turn = _previous_tid(turns, self.dialogue)
        self.prev_tid = self.prev_tid_of_turn[self.turn_pos] if len(self.tid) else np.zeros(0, dtype="int64")
        self.n_pair = int(slots["pair_code"].max()) + 1 if len(slots) else 1
        pair = slots["pair_code"].to_numpy()
        keys = pd.Index(self.tid * self.n_pair + pair)
        self.prev_row = np.where(self.prev_tid >= 0, keys.get_indexer(self.prev_tid * self.n_pair + pair), -1)
        self.correct = slots["outcome"].cat.codes.to_numpy() == Outcome.CORRECT
        self.gold, self.pred = slots["gold_code"].to_numpy(), slots["pred_code"].to_numpy()
        has_prev = self.prev_row >= 0
        self.prev_gold = np.where(has_prev, self.gold[np.maximum(self.prev_row, 0)], -1)
        self.prev_pred = np.where(has_prev, self.pred[np.maximum(self.prev_row, 0)], -1)


def _rows(scored: Scored) -> _Rows:
    return scored.memoised(("change_rows",), lambda: _Rows(scored))


def _fga_column(lam: float) -> str:
    return f"fga_{lam}"


def _fga_facts(scored: Scored, slot_keys: tuple[str, ...]) -> pd.DataFrame:
    """FGA per unit: a turn, or with slot-level keys a turn restricted to one group's slots (the turns where
    the group occurs in gold or prediction, as per-domain JGA); memoised."""
    return scored.memoised(("fga_facts", slot_keys), lambda: _compute_fga_facts(scored, slot_keys))


def _fga_units(
    scored: Scored, slot_keys: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
    """The units both FGA rules judge: each turn, or with slot-level keys each turn restricted to one group's
    slots, sorted by (group, tid) so a dialogue's units of one group are consecutive in turn order. Returns
    each slot row's unit, each unit's turn position, whether it is right, its previous turn's tid (-1: the
    dialogue's first), its previous unit (-1: none; for a group without a slot there, both states were
    empty, so it was right) and the group labels; memoised."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
        turns, slots, r = scored.turns, scored.slots, _rows(scored)
        if not slot_keys:
            n = len(turns)
            prev_tid = r.prev_tid_of_turn
            joint = turns["joint_correct"].to_numpy(dtype=bool)
            prev_unit = r.turn_index.get_indexer(prev_tid)
            return r.turn_pos, np.arange(n), joint, prev_tid, prev_unit, pd.DataFrame(index=range(n))
        g_code, g_values = _codes(slots, list(slot_keys))
        n_t = int(r.tid.max()) + 1 if len(r.tid) else 1
        units, unit_of_row = np.unique(g_code * n_t + r.tid, return_inverse=True)
        n = len(units)
        unit_tid, unit_g = units % n_t, units // n_t
        unit_pos = r.turn_index.get_indexer(unit_tid)
        joint = np.bincount(unit_of_row, weights=~r.correct, minlength=n) == 0
        prev_tid = r.prev_tid_of_turn[unit_pos]
        where = np.searchsorted(units, unit_g * n_t + prev_tid)
        found = (prev_tid >= 0) & (where < n) & (units[np.minimum(where, n - 1)] == unit_g * n_t + prev_tid)
        prev_unit = np.where(found, where, -1)
        return unit_of_row, unit_pos, joint, prev_tid, prev_unit, g_values.iloc[unit_g].reset_index(drop=True)

    return scored.memoised(("fga_units", slot_keys), compute)


def _compute_fga_facts(scored: Scored, slot_keys: tuple[str, ...]) -> pd.DataFrame:
    turns, r = scored.turns, _rows(scored)
    # FGA: a wrong unit is a type-1 error (FGA 0) when it is in the dialogue's first turn, follows a right
    # one, or one of its own new triples (gold or predicted, absent from the previous turn's state) is not
    # matched; otherwise its errors are inherited (type 2) and it scores 1 - exp(-lambda * distance) to the
    # last type-1 error of the dialogue (and group).
    new_gold = (r.gold >= 0) & (r.prev_gold != r.gold)
    new_pred = (r.pred >= 0) & (r.prev_pred != r.pred)
    violation = (new_gold | new_pred) & ~r.correct
    unit_of_row, unit_pos, joint, prev_tid, prev_unit, labels = _fga_units(scored, slot_keys)
    n = len(unit_pos)
    own_error = np.bincount(unit_of_row[violation], minlength=n) > 0
    first = prev_tid < 0
    prev_joint = np.where(prev_unit >= 0, joint[np.maximum(prev_unit, 0)], True)
    type1 = ~joint & (first | prev_joint | own_error)
    # The last type-1 error at or before each unit: a type-2 unit follows a chain of wrong units of its
    # dialogue (and group) that starts with a type-1 one, and the chain is contiguous in unit order.
    last_error = np.maximum.accumulate(np.where(type1, np.arange(n), -1)) if n else np.zeros(0, dtype="int64")
    turn_index = turns["turn_index"].to_numpy()[unit_pos]
    distance = np.where(joint | type1, 0, turn_index - turn_index[np.maximum(last_error, 0)]).astype(float)
    return _with_columns(
        labels,
        {
            "tid": turns["tid"].to_numpy()[unit_pos],
            "fga_type1": type1,
            **{
                _fga_column(lam): np.where(joint, 1.0, np.where(type1, 0.0, 1 - np.exp(-lam * distance)))
                for lam in FGA_LAMBDAS
            },
        },
    )


def _with_columns(frame: pd.DataFrame, columns: dict[str, Any]) -> pd.DataFrame:
    """`frame.assign(**columns)` built as one frame (a column insert at a time costs pandas a new column
    index each; FGA's facts had six)."""
    return pd.DataFrame({**{c: frame[c] for c in frame.columns}, **columns}, index=frame.index)


def _unit_means(scored: Scored, facts: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """Both FGA rules' per-group mean of `columns` over their units (`facts`), with each group's `n_turns`
    (its units). By `tid` with one unit per turn (no slot-level keys) a group's mean is its one value and its
    size 1, so a sort gives the group-by's frame, bit for bit (tested)."""
    if keys == ["tid"] and (one_each := _one_unit_per_turn(facts, columns)) is not None:
        return one_each
    frame = _with_turn_keys(scored, facts, keys)
    grouped = frame.groupby(keys, sort=True, observed=True, dropna=False)
    out = grouped[columns].mean()
    out["n_turns"] = grouped.size()
    return out.reset_index()


def _one_unit_per_turn(facts: pd.DataFrame, columns: list[str]) -> pd.DataFrame | None:
    """`_unit_means` by `tid` when each turn id has one unit, sorted instead of grouped; None otherwise."""
    tids = facts["tid"].to_numpy()
    if tids.dtype.kind not in "iu" or not pd.Index(tids).is_unique:
        return None
    order = np.argsort(tids, kind="stable")
    out = {"tid": tids[order], **{c: facts[c].to_numpy(dtype="float64")[order] for c in columns}}
    return pd.DataFrame({**out, "n_turns": np.ones(len(tids), dtype="int64")})


def _with_turn_keys(scored: Scored, facts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`facts` (one row per turn in turn order, or per unit with a `tid`) with the turn-level `keys`."""
    turn_keys = [k for k in keys if k not in SLOT_LEVEL and k not in facts.columns]
    if not turn_keys:
        return facts
    position = pd.Index(scored.turns["tid"]).get_indexer(facts["tid"].to_numpy())
    return facts.assign(**{k: scored.turns[k].to_numpy()[position] for k in turn_keys})


GCA_COUNTS = ("gca_correct", "gca_wrong", "gca_overpred", "gca_missed")


def _gca_events(scored: Scored, *, once: bool = False) -> pd.DataFrame:
    """GCA's judged label changes: one row per (turn, label) event with its slot row, turn position and
    the four 0/1 counts (`GCA_COUNTS`); memoised. `once`: a label changed on both sides counts once (by
    its gold change), not twice as the GCA repository's src/gca.py counts it in three cases."""
    return scored.memoised(("gca_events", once), lambda: _compute_gca_events(scored, once=once))


def _compute_gca_events(scored: Scored, *, once: bool) -> pd.DataFrame:
    # The judgements both countings share, made once per run (memoised): `once` changes only the last step.
    tid_of, row_of, g, p, eq, g_changed, p_changed, first, second = scored.memoised(
        ("gca_judgements",), lambda: _gca_judgements(scored)
    )
    second = dict(second)
    if not once:
        # src/gca.py's second loop also judges a label that changed on both sides, and counts it a second
        # time in three cases: both drop it (correct, then missed: a right drop costs a miss); gold changes
        # it as the prediction drops it (wrong, then missed); gold drops it as the prediction changes it
        # (over-predicted, then wrong). Its other cases it skips, as the label was judged already.
        both = g_changed & p_changed
        second["gca_missed"] = second["gca_missed"] | (both & (p == _NONE) & ((g == _NONE) | ~eq))
        second["gca_wrong"] = second["gca_wrong"] | (both & (g == _NONE) & (p != _NONE) & ~eq)
    judged = g_changed | p_changed
    return pd.DataFrame(
        {
            "tid": tid_of[judged],
            "row": row_of[judged],
            # A column is 0/1 per event: the second count of a label always falls in another column.
            **{k: (first[k] | second[k])[judged].astype(float) for k in GCA_COUNTS},
        }
    )


def _first_seen(label: np.ndarray, tid: np.ndarray, seen: np.ndarray, never: int) -> np.ndarray:
    """Per row, the smallest `tid` of a row with its `label` where `seen` holds (`never` where none does):
    one pass of `np.minimum.at` over a dense array of the labels (a quarter of a pandas group-by's cost);
    a group-by where the labels are too sparse for that array (more than 4 per row and over a million)."""
    if not len(label):
        return np.zeros(0, dtype="int64")
    size = int(label.max()) + 1
    if size > max(4 * len(label), 1 << 20) or int(label.min()) < 0:
        first = pd.Series(tid[seen]).groupby(label[seen]).min()
        return first.reindex(label, fill_value=never).to_numpy(dtype="int64")
    first = np.full(size, never, dtype="int64")
    np.minimum.at(first, label[seen], tid[seen].astype("int64"))
    return first[label]


def _gca_judgements(scored: Scored) -> tuple[Any, ...]:
    """Every (turn, label) event's turn id and slot row, both sides' states then (`g`, `p`), whether they
    match (`eq`), which side changed, and the counts of src/gca.py's two loops as if each label changed on
    one side only (`first`, `second`): what `_compute_gca_events` counts, with or without `once`."""
    # Per dialogue, every label (domain-slot) seen so far holds a value, "none" once dropped, or is absent
    # before it is first seen. A turn judges the labels whose gold or predicted state changed.
    slots, r = scored.slots, _rows(scored)
    tid, turn_pos, gold, pred = r.tid, r.turn_pos, r.gold, r.pred
    label = r.dialogue[turn_pos].astype("int64") * r.n_pair + slots["pair_code"].to_numpy()
    never = len(scored.turns) + 1  # after every tid: the label is never seen on that side
    seen_gold = _first_seen(label, tid, gold >= 0, never)
    seen_pred = _first_seen(label, tid, pred >= 0, never)

    # A label with a row in turn t-1 and none in turn t was dropped from both states at t: one more event.
    next_tid = np.full(len(scored.turns), -1, dtype="int64")
    has = r.prev_tid_of_turn >= 0
    next_tid[r.turn_index.get_indexer(r.prev_tid_of_turn[has])] = scored.turns["tid"].to_numpy()[has]
    followed = np.zeros(len(tid), dtype=bool)
    followed[r.prev_row[r.prev_row >= 0]] = True
    drop = ~followed & (next_tid[turn_pos] >= 0)
    n_drop = int(drop.sum())

    def state(code: np.ndarray, seen: np.ndarray, at: np.ndarray) -> np.ndarray:
        return np.where(code >= 0, code, np.where(seen < at, _NONE, _ABSENT))

    event_tid = np.concatenate([tid, next_tid[turn_pos][drop]])
    seen_g = np.concatenate([seen_gold, seen_gold[drop]])
    seen_p = np.concatenate([seen_pred, seen_pred[drop]])
    g = state(np.concatenate([gold, np.full(n_drop, -1)]), seen_g, event_tid)
    p = state(np.concatenate([pred, np.full(n_drop, -1)]), seen_p, event_tid)
    before = np.concatenate([r.prev_tid, tid[drop]])
    g_prev = state(np.concatenate([r.prev_gold, gold[drop]]), seen_g, before)
    p_prev = state(np.concatenate([r.prev_pred, pred[drop]]), seen_p, before)
    match = np.concatenate([r.correct, np.zeros(n_drop, dtype=bool)])
    eq = ((g == p) & (g == _NONE)) | match  # both dropped, or values that match

    g_changed = (g != _ABSENT) & (g != g_prev)
    p_changed = (p != _ABSENT) & (p != p_prev)
    g_here, p_here = g != _ABSENT, p != _ABSENT
    # A label whose gold changed is judged against the prediction (src/gca.py's first loop) ...
    first = {
        "gca_correct": g_changed & ((~p_here & (g == _NONE)) | (p_here & eq)),
        "gca_wrong": g_changed & p_here & ~eq & (g != _NONE),
        "gca_overpred": g_changed & p_here & ~eq & (g == _NONE),
        "gca_missed": g_changed & ~p_here & (g != _NONE),
    }
    # ... one whose prediction alone changed, against gold (its second loop).
    by_pred = p_changed & ~g_changed
    second = {
        "gca_correct": by_pred & ((~g_here & (p == _NONE)) | (g_here & eq)),
        "gca_wrong": by_pred & g_here & ~eq & (p != _NONE),
        "gca_overpred": by_pred & ~g_here & (p != _NONE),
        "gca_missed": by_pred & g_here & ~eq & (p == _NONE),
    }
    row = np.concatenate([np.arange(len(tid)), np.flatnonzero(drop)])
    return event_tid, row, g, p, eq, g_changed, p_changed, first, second


@_needs_values("iaga")
def improved_average_goal_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """IAGA: over AGA's turns (non-empty gold), the mean of |gold ∩ predicted| / |gold ∪ predicted| over
    triples: AGA with false positives counted. A wrong value is one gold and one predicted triple.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {}], [{"hotel": {"area": "east", "stars": "4"}}, {}])
    >>> improved_average_goal_accuracy(s)
    0.5
    """
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    c, w, m, s = (facts[k].to_numpy() for k in ("n_correct", "n_wrong", "n_missed", "n_spurious"))
    has_gold = facts["n_gold"].to_numpy() > 0
    value = pd.Series(c[has_gold] / (c + 2 * w + m + s)[has_gold])
    return _aggregate(facts[keys][has_gold], value, keys, "iaga", universe=_universe(scored, keys))


@_needs_values("rsa")
def relative_slot_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """RSA: per turn (T* - missed - wrong) / T* over the T* slots in gold or prediction, i.e. the share of
    those slots predicted right; a turn with neither scores 0 (as the GCA repository computes it); mean over
    all turns.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east", "stars": "4"}}, {}], [{"hotel": {"area": "east"}}, {}])
    >>> relative_slot_accuracy(s)
    0.25
    """
    keys = _by_list(by)
    facts = turn_facts(scored, by=keys)
    c, w, m, s = (facts[k].to_numpy() for k in ("n_correct", "n_wrong", "n_missed", "n_spurious"))
    total = c + w + m + s
    value = pd.Series(np.where(total > 0, c / np.maximum(total, 1), 0.0))
    return _aggregate(facts, value, keys, "rsa")


@_needs_values(*(f"fga_{lam}" for lam in FGA_LAMBDAS))
def flexible_goal_accuracy(scored: Scored, *, by: By = None) -> dict[str, float] | pd.DataFrame:
    """FGA at each penalty λ of `FGA_LAMBDAS` (keys `fga_0.25` ... `fga_1.0`): a right turn scores 1, a
    turn with its own error (type 1) 0, and a turn whose only errors are inherited (type 2: the previous
    turn was wrong and every triple new in this turn's gold or prediction is right)
    1 - exp(-λ·d), d turns after the dialogue's last type-1 error; mean over turns. Grouped by a
    slot-level column, each turn is restricted to the group's slots (turns where it occurs).

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    ...                        [{"hotel": {"area": "west"}}, {"hotel": {"area": "west", "stars": "4"}}])
    >>> round(flexible_goal_accuracy(s)["fga_1.0"], 4)  # turn 1: 0; turn 2 inherits: 1 - e^-1
    0.3161
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    facts = _fga_facts(scored, tuple(k for k in keys if k in SLOT_LEVEL))
    columns = [_fga_column(lam) for lam in FGA_LAMBDAS]
    if not keys:
        return {c: float(facts[c].mean()) if len(facts) else float("nan") for c in columns}
    return _unit_means(scored, facts, keys, columns)


def _fga_at(
    lam: float, function: Callable[..., Any] | None = None, prefix: str = "fga"
) -> Callable[..., float | pd.DataFrame]:
    """One penalty's column of an FGA function that computes all four (`flexible_goal_accuracy`, or
    `flexible_goal_accuracy_sets` with prefix `fga_sets`)."""
    column = f"{prefix}_{lam}"
    whole = function if function is not None else flexible_goal_accuracy
    name = whole.__name__

    def fga(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
        # The four penalties come from one pass: computed once per run and grouping, then each takes its column.
        key = (name, tuple(_by_list(by)))
        result = scored.memoised(key, lambda: whole(scored, by=by))
        if isinstance(result, dict):
            return result[column]
        return result[[*_by_list(by), column, "n_turns"]]

    fga.__name__ = fga.__qualname__ = f"{name}_{str(lam).replace('.', '_')}"
    fga.__doc__ = f"FGA at λ = {lam} alone (`{name}`): a float, or a frame with `{column}`."
    return fga


FGA_AT = {lam: _fga_at(lam) for lam in FGA_LAMBDAS}  # one function per penalty, as the registry holds them


@_needs_values("turn_accuracy")
def turn_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """Turn-level accuracy: the share of turns whose own changes are right, whatever they inherited (no
    type-1 error in FGA's sense: a right turn, or one whose errors all come from earlier turns).

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    ...                        [{"hotel": {"area": "west"}}, {"hotel": {"area": "west", "stars": "4"}}])
    >>> turn_accuracy(s)
    0.5
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    facts = _with_turn_keys(scored, _fga_facts(scored, tuple(k for k in keys if k in SLOT_LEVEL)), keys)
    value = pd.Series((~facts["fga_type1"]).to_numpy(dtype=float))
    return _aggregate(facts, value, keys, "turn_accuracy")


# FGA as the FGA repository scores TripPy's per-slot correctness vectors (SuvodipDey/FGA
# compute_accuracy_trippy.py), which carry no values: the existing FGA above judges a turn by its new
# triples (the Granular_Change_Accuracy repository's code, and the FGA repository's own script for states,
# compute_accuracy_trade_somdst.py), this one by the set of wrong slots.
FGA_SETS_PREFIX = "fga_sets"
# The script decides "the previous turn was right" by that turn's score at its last penalty (1.0) equalling
# 1, and a type-2 score 1 - e^(-d) rounds to exactly 1.0 from this distance on: the next wrong turn is then
# a type-1 error again. Reproduced; it takes a run of 38 turns with one unchanged set of wrong slots.
_SATURATED = next(d for d in range(1, 100) if 1 - math.exp(-FGA_LAMBDAS[-1] * d) == 1.0)


def _fga_sets_facts(scored: Scored, slot_keys: tuple[str, ...]) -> pd.DataFrame:
    """FGA by wrong-slot sets per unit (a turn, or with slot-level keys a turn restricted to one group's
    slots, as `_fga_facts`); memoised."""
    return scored.memoised(("fga_sets_facts", slot_keys), lambda: _compute_fga_sets_facts(scored, slot_keys))


def _compute_fga_sets_facts(scored: Scored, slot_keys: tuple[str, ...]) -> pd.DataFrame:
    turns, slots, r = scored.turns, scored.slots, _rows(scored)
    wrong = ~r.correct
    unit_of_row, unit_pos, joint, prev_tid, prev_unit, labels = _fga_units(scored, slot_keys)
    n = len(unit_pos)
    # The unit's set of wrong slots equals its previous unit's when both hold as many wrong slots and each
    # of this unit's is wrong there too (one sorted lookup of (unit, slot) keys, no per-unit sets).
    wrong_unit = unit_of_row[wrong]
    wrong_pair = slots["pair_code"].to_numpy()[wrong]
    n_wrong = np.bincount(wrong_unit, minlength=n)
    wrong_keys = np.sort(wrong_unit.astype("int64") * r.n_pair + wrong_pair)
    prev_of_row = prev_unit[wrong_unit]
    wanted = prev_of_row.astype("int64") * r.n_pair + wrong_pair
    at = np.searchsorted(wrong_keys, wanted)
    hit = np.zeros(len(wanted), dtype=bool)
    if len(wrong_keys):
        hit = (prev_of_row >= 0) & (at < len(wrong_keys)) & (wrong_keys[np.minimum(at, len(wrong_keys) - 1)] == wanted)
    n_shared = np.bincount(wrong_unit[hit], minlength=n)
    has_prev = prev_unit >= 0
    prev = np.maximum(prev_unit, 0)
    same_set = has_prev & (n_wrong == np.where(has_prev, n_wrong[prev], -1)) & (n_shared == n_wrong)
    # A wrong unit is a type-1 error (FGA 0) in the dialogue's first turn, after a right unit, or when its
    # set of wrong slots differs from the previous unit's (in a run of wrong units, each type-2 unit has the
    # set of the type-1 error that began the run, which the script compares with).
    prev_right = np.where(has_prev, joint[prev], True)
    first = prev_tid < 0
    type1 = ~joint & (first | prev_right | ~same_set)
    turn_index = turns["turn_index"].to_numpy()[unit_pos]
    distance = _distances(type1, joint, turn_index)
    saturated = ~joint & ~type1 & (distance >= _SATURATED)
    while saturated.any():
        # Rare (see `_SATURATED`): the unit after the first saturated one starts a new run, if it continues it.
        u = int(np.flatnonzero(saturated)[0])
        after = np.flatnonzero(prev_unit == u)
        if len(after) and not joint[after[0]] and not type1[after[0]]:
            type1[after[0]] = True
            distance = _distances(type1, joint, turn_index)
        saturated[: u + 1] = False
        saturated &= ~joint & ~type1 & (distance >= _SATURATED)
    return _with_columns(
        labels,
        {
            "tid": turns["tid"].to_numpy()[unit_pos],
            "fga_sets_type1": type1,
            **{
                f"{FGA_SETS_PREFIX}_{lam}": np.where(joint, 1.0, np.where(type1, 0.0, 1 - np.exp(-lam * distance)))
                for lam in FGA_LAMBDAS
            },
        },
    )


def _distances(type1: np.ndarray, joint: np.ndarray, turn_index: np.ndarray) -> np.ndarray:
    """Per unit, turns since the last type-1 error before it (0 for right and type-1 units): a type-2 unit
    follows a contiguous chain of wrong units that starts with a type-1 one."""
    n = len(type1)
    last_error = np.maximum.accumulate(np.where(type1, np.arange(n), -1)) if n else np.zeros(0, dtype="int64")
    return np.where(joint | type1, 0, turn_index - turn_index[np.maximum(last_error, 0)]).astype(float)


def flexible_goal_accuracy_sets(scored: Scored, *, by: By = None) -> dict[str, float] | pd.DataFrame:
    """FGA as the FGA repository computes it on per-slot correctness (SuvodipDey/FGA
    compute_accuracy_trippy.py), at each penalty λ of `FGA_LAMBDAS` (keys `fga_sets_0.25` ...): a right
    turn scores 1; a wrong turn is a type-1 error (0) when it is the dialogue's first turn, follows a right
    turn, or its set of wrong slots differs from the set at the last type-1 error; otherwise (type 2: the
    same slots still wrong) it scores 1 - exp(-λ·d), d turns after that error. Mean over turns. It needs
    no values, so it applies to every run (a slot is wrong when its outcome is not `correct`). Grouped by a
    slot-level column, each turn is restricted to the group's slots (turns where it occurs). Unlike
    `flexible_goal_accuracy`, a turn that keeps an old error and fixes or adds nothing is type 2 even when
    a new gold value arrived right; a turn that fixes one of two inherited errors is a type-1 error.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    ...                        [{"hotel": {"area": "west"}}, {"hotel": {"area": "west", "stars": "4"}}])
    >>> round(flexible_goal_accuracy_sets(s)["fga_sets_1.0"], 4)  # turn 1: 0; turn 2, area still wrong: 1 - e^-1
    0.3161
    """
    keys = _by_list(by)
    _check_by(scored, keys)
    facts = _fga_sets_facts(scored, tuple(k for k in keys if k in SLOT_LEVEL))
    columns = [f"{FGA_SETS_PREFIX}_{lam}" for lam in FGA_LAMBDAS]
    if not keys:
        return {c: float(facts[c].mean()) if len(facts) else float("nan") for c in columns}
    return _unit_means(scored, facts, keys, columns)


# One function per penalty, as the registry holds them.
FGA_SETS_AT = {lam: _fga_at(lam, flexible_goal_accuracy_sets, FGA_SETS_PREFIX) for lam in FGA_LAMBDAS}


def gca_from_counts(correct: Any, wrong: Any, overpred: Any, missed: Any) -> Any:
    """GCA from its four label counts: the weighted harmonic mean of value precision and recall (weight
    α = 10/11) and label precision and recall (1 - α), each weighted by its denominator; 0 when any of
    the four is 0, NaN with no label at all. Works on numbers and arrays (the bootstrap's resamples)."""
    c, w, o, m = (np.asarray(x, dtype=float) for x in (correct, wrong, overpred, missed))
    p_den, r_den = c + w + o, c + w + m
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (p_den + r_den) / ((p_den**2 + r_den**2) * (GCA_ALPHA / c + (1 - GCA_ALPHA) / (c + w)))
    value = np.where(c > 0, value, np.where(p_den + r_den > 0, 0.0, np.nan))
    return float(value) if value.ndim == 0 else value


@_needs_values(*GCA_COUNTS)
def gca_counts(scored: Scored, *, by: By = None) -> pd.DataFrame:
    """Per `by` group: GCA's four label counts (`GCA_COUNTS`) as the GCA repository's src/gca.py counts
    them (a label changed on both sides of a turn counted twice in three cases) and `n_turns` (turns, or
    with a slot-level column turns where the group has a judged change); the dialogue bootstrap resamples
    them per turn."""
    return _gca_counts(scored, _by_list(by), once=False)


@_needs_values(*GCA_COUNTS)
def gca_counts_once(scored: Scored, *, by: By = None) -> pd.DataFrame:
    """`gca_counts` with every judged label change counted once (`granular_change_accuracy_once`)."""
    return _gca_counts(scored, _by_list(by), once=True)


def _gca_counts(scored: Scored, keys: list[str], *, once: bool) -> pd.DataFrame:
    _check_by(scored, keys)
    events = _gca_events(scored, once=once)
    counts = list(GCA_COUNTS)
    slot_keys = [k for k in keys if k in SLOT_LEVEL]
    if slot_keys:
        rows = events["row"].to_numpy()
        frame = events.assign(**{k: scored.slots[k].to_numpy()[rows] for k in slot_keys})
        frame = frame.groupby(["tid", *slot_keys], sort=False, observed=True)[counts].sum().reset_index()
    else:  # every turn counts, with or without a judged change
        position = pd.Index(scored.turns["tid"]).get_indexer(events["tid"].to_numpy())
        n = len(scored.turns)
        frame = pd.DataFrame(
            {"tid": scored.turns["tid"].to_numpy()}
            | {c: np.bincount(position, weights=events[c].to_numpy(), minlength=n) for c in counts}
        )
    frame = _with_turn_keys(scored, frame, keys)
    if not keys:
        return pd.DataFrame({c: [frame[c].sum()] for c in counts} | {"n_turns": [len(frame)]})
    if keys == ["tid"] and not slot_keys:
        # One row per turn already (every turn counts): each group is its row, in turn id order.
        tids = frame["tid"].to_numpy()
        if tids.dtype.kind in "iu" and pd.Index(tids).is_unique:
            order = np.argsort(tids, kind="stable")
            one_each = frame.iloc[order].reset_index(drop=True) if (order != np.arange(len(order))).any() else frame
            return one_each.assign(n_turns=np.ones(len(one_each), dtype="int64"))
    grouped = frame.groupby(keys, sort=True, observed=True, dropna=False)
    out = grouped[counts].sum()
    out["n_turns"] = grouped.size()
    return out.reset_index()


@_needs_values("gca")
def granular_change_accuracy(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """GCA as the GCA repository's src/gca.py computes it: judges only what changes. Per dialogue, each
    label (domain-slot) seen so far holds a value, or "none" once dropped; in each turn the labels whose
    gold state changed are judged against the prediction (its first loop), then those whose predicted
    state changed against gold (its second loop). A label changed on both sides is judged by both loops
    and counted twice in three cases: both drop it (correct and missed), gold changes it as the
    prediction drops it (wrong and missed), gold drops it as the prediction changes it (over-predicted
    and wrong); so a prediction right at every turn can score below 1. Correct, wrong, over-predicted
    and missed counts over all turns give GCA (`gca_from_counts`). `granular_change_accuracy_once`
    counts each change once.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}],
    ...                        [{"hotel": {"area": "west"}}, {"hotel": {"area": "west"}}])
    >>> granular_change_accuracy(s)  # the one change was wrong
    0.0
    >>> both_drop = scored_from_states([{"hotel": {"area": "east"}}, {}], [{"hotel": {"area": "east"}}, {}])
    >>> round(granular_change_accuracy(both_drop), 4), granular_change_accuracy_once(both_drop)
    (0.7692, 1.0)
    """
    return _gca_value(scored, _by_list(by), once=False)


@_needs_values("gca_once")
def granular_change_accuracy_once(scored: Scored, *, by: By = None) -> float | pd.DataFrame:
    """GCA with each judged label change counted once: a label changed on both sides of a turn is judged
    by its gold change alone (`granular_change_accuracy` is the repository's count, which judges it twice
    in three cases). A prediction right at every turn scores 1. Not a number the GCA repository prints.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}],
    ...                        [{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}])
    >>> granular_change_accuracy_once(s)
    1.0
    """
    return _gca_value(scored, _by_list(by), once=True)


def _gca_value(scored: Scored, keys: list[str], *, once: bool) -> float | pd.DataFrame:
    out = _gca_counts(scored, keys, once=once)
    value = gca_from_counts(*(out[c].to_numpy() for c in GCA_COUNTS))
    name = "gca_once" if once else "gca"
    if not keys:
        return float(value[0])
    out[name] = value
    return out[[*keys, name, "n_turns"]]
