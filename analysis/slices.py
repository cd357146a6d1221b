"""Scored run -> per-turn features -> the worst slices (issue 17 requirement 5), found by `sliceline`.

A slice is a conjunction of feature levels ("domains = hotel AND previous turn = wrong"). The per-turn
features (`turn_features`) are categorical; `sliceline.Slicefinder` (Sagadeeva and Boehm, SIGMOD 2021: a
pruned lattice search in sparse linear algebra) searches them with the error per turn = 1 - turn JGA. Its
top slices are then ranked by their JGA gap (the run's JGA minus the slice's), each with its support (turns,
dialogues) and a 95% interval of its JGA from the dialogue-clustered bootstrap of `analysis.stats` (the
same resampled dialogues for every slice, deterministic given the seed).

Features, one categorical column per turn:

* `domains`: the gold state's domains at the turn, sorted and joined with "+" ("none": empty state);
* `turn depth`: the turn index (0 = first user turn) in bins 0, 1-2, 3-5, 6-9, 10+;
* `gold slots`: the number of slots in the gold state, in bins 0, 1-2, 3-5, 6-9, 10+;
* `dontcare in gold`: yes / no (a convention that drops gold dontcare, e.g. mwzeval, leaves only "no");
* `new value in user turn`: of the gold values new at this turn (not in the previous turn's gold state,
  dontcare left out), are all / some / none found in the user utterance (literal, case-insensitive); "no new
  value" when none is new, "no utterance" when the turn has no user text. A cumulative state's older values
  were said in earlier turns, so only the turn's new ones are looked for;
* `previous turn`: the previous turn of the dialogue jointly correct or wrong; "first" for its first turn;
* the dialogue attributes the turns carry (e.g. MultiWOZ/CrossWOZ `type`) and the run's manifest attributes
  (`RunInfo`: system, dataset, language, split, history, seed); constant within one run, these are listed
  as constant and left out of the search, and vary when runs are searched together (`combine`);
* `unseen value` (with a training run): does the gold state hold a (domain, slot, value) that no gold state
  of the training run holds (yes / no / "no gold value").

A feature with a single level cannot split the run and is left out (named in `SliceReport.constant`); one
with more than `MAX_LEVELS` levels keeps its most frequent ones and groups the rest as "(other levels)"
(named in `SliceReport.grouped`). Nothing is dropped silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis import stats, views
from analysis.errors import InputError
from analysis.model import RunInfo, dialogue_key
from analysis.scoring import Scored, combine

__all__ = [
    "FEATURES",
    "SliceReport",
    "describe",
    "find_slices",
    "pooled",
    "searchable",
    "slice_turns",
    "slices_bar",
    "training_values",
    "turn_features",
]

DEPTH_BINS = ((0, 0), (1, 2), (3, 5), (6, 9), (10, None))
SLOT_BINS = ((0, 0), (1, 2), (3, 5), (6, 9), (10, None))
MAX_LEVELS = 25  # levels kept per feature; the rarer ones are grouped into OTHER
OTHER = "(other levels)"
MISSING = "(missing)"
# Built-in features, in the order a description lists them; attributes and `unseen value` follow.
FEATURES = ("domains", "turn depth", "gold slots", "dontcare in gold", "new value in user turn", "previous turn")
UNSEEN = "unseen value"
RUN = "run"  # a feature when several runs are searched together
# RunInfo fields that say what a run is (not how it was read or scored).
RUN_FIELDS = tuple(
    f for f in ("system", "dataset", "language", "split", "history", "seed") if f in RunInfo.__dataclass_fields__
)
NOT_ATTRIBUTES = frozenset({"listing"})  # an index into the gold file's slot listings, not a dialogue attribute

TOP = 10  # slices kept from the search
MAX_PREDICATES = 3  # feature levels per slice at most (sliceline's lattice level)
ALPHA = 0.95  # sliceline's weight of the slice's error rate against its size (0 < alpha <= 1)
MIN_SUPPORT = 0.01  # share of the run's turns a slice needs at least ...
MIN_TURNS = 20  # ... and at least this many turns
RESAMPLES = 1000
LEVEL = 0.95
# Runs searched together: sliceline's cost grows faster than the turns (4 MultiWOZ-size runs, 29,488 turns: 14 s
# on two cores at load 10, against 0.6 s a run alone), so a search together stops at about 2.7 such runs.
POOLED_MAX_TURNS = 20_000
COLUMNS = ["rank", "slice", "jga", "gap", "jga_low", "jga_high", "turns", "dialogues", "wrong_turns", "score"]
COLUMNS += ["same_turns"]  # other slices of the very same turns


@dataclass(frozen=True)
class SliceReport:
    """The worst slices of a run: `slices` (one row per slice, `COLUMNS` and `predicates`, worst gap first),
    the run's own JGA and size, the features searched, the ones left out as constant or with grouped levels,
    the search settings, and `note` when no slice could be searched for (why, in one sentence)."""

    run_id: str
    jga: float
    n_turns: int
    n_dialogues: int
    slices: pd.DataFrame
    features: tuple[str, ...]
    constant: tuple[str, ...] = ()
    grouped: tuple[str, ...] = ()
    same: tuple[str, ...] = ()  # "seed = run": a feature splitting the turns as an earlier one, not searched
    settings: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for row in self.slices.to_dict("records"):
            row["predicates"] = [{"feature": f, "level": v} for f, v in row["predicates"]]
            rows.append({k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()})
        return {
            "run_id": self.run_id,
            "jga": None if np.isnan(self.jga) else self.jga,
            "n_turns": self.n_turns,
            "n_dialogues": self.n_dialogues,
            "features": list(self.features),
            "constant_features": list(self.constant),
            "grouped_features": list(self.grouped),
            "same_split_features": list(self.same),
            "settings": self.settings,
            "note": self.note,
            "slices": rows,
        }


# --- features --------------------------------------------------------------------------------------


def _bins(values: pd.Series, bins: Sequence[tuple[int, int | None]]) -> pd.Series:
    """Integer `values` as bin labels ("0", "1-2", "10+").

    >>> _bins(pd.Series([0, 2, 4, 12]), DEPTH_BINS).tolist()
    ['0', '1-2', '3-5', '10+']
    """
    labels = [str(lo) if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}") for lo, hi in bins]
    edges = [bins[0][0] - 0.5, *[(hi if hi is not None else np.inf) + 0.5 for _, hi in bins]]
    return pd.cut(values.astype(float), edges, labels=labels).astype(str)


def _previous_tid(turns: pd.DataFrame) -> pd.Series:
    """Per turn (index of `turns`): the `tid` of the previous turn of its dialogue (by turn index), or -1."""
    order = turns.sort_values(["run_id", "dialogue_id", "turn_index"], kind="stable")
    previous = order.groupby(["run_id", "dialogue_id"], sort=False)["tid"].shift(1)
    return previous.reindex(turns.index).fillna(-1).astype("int64")


def _gold_rows(scored: Scored) -> pd.DataFrame:
    slots = scored.slots
    keep = ["tid", "domain", "slot", "gold_value", "gold_display", "pair_code", "gold_code"]
    return slots.loc[slots["gold_value"].notna(), [c for c in keep if c in slots.columns]]


def training_values(train: Scored) -> pd.DataFrame:
    """The distinct (domain, slot, value) of a training run's gold states (normalised under its convention)."""
    gold = _gold_rows(train)
    return gold[["domain", "slot", "gold_value"]].drop_duplicates().reset_index(drop=True)


def _levels(values: np.ndarray | pd.Series) -> pd.Categorical:
    return pd.Categorical(np.asarray(values, dtype=object))


def turn_features(scored: Scored, train: Scored | None = None) -> pd.DataFrame:
    """One row per turn of `scored.turns` (same order): `tid`, `dialogue_id`, `turn_index`, `joint_correct`
    and one categorical column per feature (see the module's docstring), every level a string.

    >>> from analysis.demo.testing import scored_from_states
    >>> s = scored_from_states([{}, {"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}], [{}, {}, {"hotel": {"area": "east"}}])
    >>> turn_features(s)[["domains", "previous turn", "gold slots"]].astype(str).values.tolist()
    [['none', 'first', '0'], ['hotel', 'correct', '1-2'], ['hotel', 'wrong', '1-2']]
    """
    turns = scored.turns
    tid = turns["tid"]
    gold = _gold_rows(scored)
    columns: dict[str, Any] = {
        "tid": tid.to_numpy(),
        "dialogue_id": turns["dialogue_id"].to_numpy(),
        "turn_index": turns["turn_index"].to_numpy(),
        "joint_correct": turns["joint_correct"].to_numpy(dtype=bool),
    }
    columns["domains"] = _levels(tid.map(_domain_sets(gold)).astype(object).fillna("none"))
    columns["turn depth"] = _levels(_bins(turns["turn_index"], DEPTH_BINS))
    n_gold = tid.map(gold.groupby("tid").size()).fillna(0).to_numpy()
    columns["gold slots"] = _levels(_bins(pd.Series(n_gold), SLOT_BINS))

    dontcare_values = list(scored.convention.dontcare_values)
    shown = gold["gold_display"].fillna(gold["gold_value"]).str.strip().str.lower()
    is_dontcare = (shown.isin(dontcare_values) | gold["gold_value"].isin(dontcare_values)).to_numpy(dtype=bool)
    columns["dontcare in gold"] = _levels(np.where(tid.isin(gold["tid"].to_numpy()[is_dontcare]), "yes", "no"))

    previous = _previous_tid(turns)
    columns["new value in user turn"] = _levels(_new_value_said(turns, gold[~is_dontcare], previous))

    correct = pd.Series(turns["joint_correct"].to_numpy(dtype=bool), index=tid.to_numpy())
    before = previous.map(correct)
    first = previous.to_numpy() < 0
    columns["previous turn"] = _levels(np.where(first, "first", np.where(before.eq(True), "correct", "wrong")))

    for column in views.attribute_columns(scored):
        if column not in NOT_ATTRIBUTES and column not in columns:
            values = turns[column]
            columns[column] = _levels(values.astype(str).where(values.notna(), MISSING))
    metas = {m.run_id: m for m in scored.metas}
    if len(metas) > 1:  # runs searched together: the run itself is a feature
        columns[RUN] = _levels(turns["run_id"].astype(object))
    for name in RUN_FIELDS:
        if name not in columns:
            value = {
                r: ("" if getattr(m, name) is None else str(getattr(m, name))) or MISSING for r, m in metas.items()
            }
            columns[name] = _levels(turns["run_id"].map(value).astype(object).fillna(MISSING))

    if train is not None:
        known = training_values(train).assign(_seen=True)
        seen = gold.merge(known, on=["domain", "slot", "gold_value"], how="left")["_seen"].eq(True).to_numpy()
        unseen = tid.isin(gold["tid"].to_numpy()[~seen]).to_numpy()
        columns[UNSEEN] = _levels(np.where(unseen, "yes", np.where(n_gold > 0, "no", "no gold value")))
    return pd.DataFrame(columns)


def searchable(runs: Scored | Sequence[Scored], train: Scored | None = None) -> list[str]:
    """The names of the features `turn_features` gives this run, or these runs together (without computing them).

    >>> from analysis.demo.testing import scored_from_states
    >>> searchable(scored_from_states([{}], [{}]))[:3]
    ['domains', 'turn depth', 'gold slots']
    """
    scored = pooled(runs)
    attributes = [c for c in views.attribute_columns(scored) if c not in NOT_ATTRIBUTES and c not in FEATURES]
    run_feature = [RUN] if len(scored.metas) > 1 else []
    names = [*FEATURES, *attributes, *run_feature, *[f for f in RUN_FIELDS if f not in attributes]]
    return [*names, UNSEEN] if train is not None else names


def _domain_sets(gold: pd.DataFrame) -> pd.Series:
    """Per turn (`tid`) with gold slots: its gold domains, sorted and joined with "+". Each distinct set is
    a bit mask of the domains, summed per turn, so only the distinct sets are joined as text."""
    pairs = gold[["tid", "domain"]].drop_duplicates()
    codes, names = pd.factorize(pairs["domain"].astype(str), sort=True)
    if len(names) > 62:  # more domains than bits: join per turn
        ordered = pairs.sort_values(["tid", "domain"], kind="stable")
        return ordered.groupby("tid", sort=False)["domain"].agg("+".join)
    masks = pd.Series(np.left_shift(np.int64(1), codes.astype(np.int64)), index=pairs["tid"].to_numpy())
    per_turn = masks.groupby(level=0).sum()
    labels = {int(m): "+".join(n for i, n in enumerate(names) if m >> i & 1) for m in per_turn.unique()}
    return per_turn.map(labels)


def _new_value_said(turns: pd.DataFrame, gold: pd.DataFrame, previous: pd.Series) -> np.ndarray:
    """Per turn: "all" / "some" / "none" of its new gold values found in the user text, "no new value",
    "no utterance" (see the module's docstring)."""
    prev, tids = previous.to_numpy(), turns["tid"].to_numpy()
    # A gold row is new unless the previous turn's gold holds the same slot with the same value. Keyed on the
    # scored tables' integer codes of the slot pair and the value (valid within a run, and a turn's previous
    # turn is of its run): the previous turn's rows, moved onto the turn after them, are the old ones.
    next_tid = np.full(int(tids.max()) + 1 if len(tids) else 0, -1, dtype="int64")
    next_tid[prev[prev >= 0]] = tids[prev >= 0]
    row_tid = gold["tid"].to_numpy(dtype="int64")
    pair = gold["pair_code"].to_numpy(dtype="int64")
    value = gold["gold_code"].to_numpy(dtype="int64")
    width = int(value.max()) + 2 if len(value) else 1
    span = (int(pair.max()) + 1) * width if len(pair) else 1
    here = row_tid * span + pair * width + value
    moved = next_tid[row_tid] if len(row_tid) else row_tid
    old = np.isin(here, (moved * span + pair * width + value)[moved >= 0])
    new = gold[~old]
    user = turns["user"].fillna("").astype(str).str.lower()
    user_by_tid = pd.Series(user.to_numpy(), index=tids)
    said_text = new["tid"].map(user_by_tid).fillna("").to_numpy(dtype=str)
    value_text = new["gold_display"].fillna(new["gold_value"]).str.lower().str.strip().fillna("").to_numpy(dtype=str)
    found = np.char.find(said_text, value_text) >= 0
    per_turn = pd.DataFrame({"tid": new["tid"].to_numpy(), "found": found}).groupby("tid")["found"].agg(["all", "any"])
    tid = turns["tid"]
    level = np.where(
        tid.map(per_turn["all"]).eq(True),
        "all",
        np.where(tid.map(per_turn["any"]).eq(True), "some", np.where(tid.isin(per_turn.index), "none", "no new value")),
    )
    return np.where(user.str.strip().eq("").to_numpy(), "no utterance", level)


def _top_levels(column: pd.Series) -> list[str]:
    """A feature's `MAX_LEVELS - 1` most frequent levels (ties by name): the ones kept when it has more."""
    counts = column.astype(object).value_counts()
    order = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    return [str(level) for level, _ in order[: MAX_LEVELS - 1]]


def _prepared(
    features: pd.DataFrame,
) -> tuple[pd.DataFrame, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The feature columns to search (levels beyond `MAX_LEVELS` grouped), the constant ones, the grouped ones,
    and those splitting the turns exactly as an earlier one does ("seed = run": searched as the earlier one)."""
    names = [c for c in features.columns if c not in ("tid", "dialogue_id", "turn_index", "joint_correct")]
    kept: dict[str, np.ndarray] = {}
    codes: dict[str, tuple[np.ndarray, int]] = {}
    constant, grouped, same = [], [], []
    for name in names:
        column = features[name].astype(object)
        code, levels = pd.factorize(column)
        if len(levels) < 2:
            constant.append(name)
            continue
        twin = next((k for k, (c, n) in codes.items() if n == len(levels) and _same_split(c, n, code)), None)
        if twin is not None:
            same.append(f"{name} = {twin}")
            continue
        codes[name] = (code, len(levels))
        if len(levels) > MAX_LEVELS:
            column = column.where(column.isin(_top_levels(column)), OTHER)
            grouped.append(name)
        kept[name] = column.to_numpy(dtype=object)
    return pd.DataFrame(kept, dtype=object), tuple(kept), tuple(constant), tuple(grouped), tuple(same)


def _same_split(a: np.ndarray, n: int, b: np.ndarray) -> bool:
    """Whether two factorized columns of `n` levels each pair their levels one to one (the same split)."""
    return len(np.unique(a.astype(np.int64) * n + b)) == n


# --- search ---------------------------------------------------------------------------------------


def describe(predicates: Sequence[tuple[str, str]]) -> str:
    """A slice as text, in the order of its predicates.

    >>> describe([("domains", "hotel"), ("previous turn", "wrong")])
    'domains = hotel AND previous turn = wrong'
    """
    return " AND ".join(f"{feature} = {level}" for feature, level in predicates) or "(all turns)"


def _memo_features(scored: Scored, train: Scored | None) -> pd.DataFrame:
    key = ("slice_features", None if train is None else (tuple(train.run_ids), id(train.turns), len(train.slots)))
    return scored.memoised(key, lambda: turn_features(scored, train))


def pooled(scoreds: Scored | Sequence[Scored]) -> Scored:
    """One run, or several combined (`scoring.combine`: same convention) so that their manifest attributes
    (system, language, seed, ...) and the run itself become features of one search."""
    if isinstance(scoreds, Scored):
        return scoreds
    items = list(scoreds)
    if len(items) == 1:
        return items[0]
    try:
        return combine(items)
    except ValueError as exc:
        where = ", ".join(r for s in items for r in s.run_ids) or "runs"
        raise InputError(where, None, f"these runs cannot be searched together: {exc}") from None


def _where(scored: Scored) -> tuple[str, str | None]:
    meta = scored.metas[0] if scored.metas else None
    if meta is None:
        return "run", None
    return (", ".join(meta.sources) or meta.run_id), ("+".join(meta.formats) or None)


def find_slices(
    runs: Scored | Sequence[Scored],
    train: Scored | None = None,
    *,
    top: int = TOP,
    max_predicates: int = MAX_PREDICATES,
    min_support: float = MIN_SUPPORT,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: int = 0,
    exclude: Sequence[str] = (),
) -> SliceReport:
    """The worst slices of a run (see the module's docstring): sliceline's `top` slices of at most
    `max_predicates` feature levels and at least `min_support` of the turns (a share, or a number of turns
    when >= 1; never fewer than `MIN_TURNS`), ranked by JGA gap, each with its dialogue-bootstrap interval.
    `exclude` names features to leave out of the search (e.g. "previous turn", whose compounding errors
    dominate most runs' worst slices).

    `runs`: one scored run, or several searched together (`pooled`, at most `POOLED_MAX_TURNS` turns). An
    empty run is an `InputError`; a run without an error, or whose features all have one level, gives no slice
    and says why in `note`.
    """
    scored = pooled(runs)
    where, fmt = _where(scored)
    n_turns = len(scored.turns)
    _check_search(
        scored,
        where,
        fmt,
        top=top,
        max_predicates=max_predicates,
        min_support=min_support,
        alpha=alpha,
        resamples=resamples,
    )
    support = int(max(MIN_TURNS, min_support if min_support >= 1 else np.ceil(min_support * n_turns)))
    settings = _search_settings(top, max_predicates, support, alpha, exclude, resamples=resamples, seed=seed)
    unread = _unread_report(scored, settings)
    if unread is not None:
        return unread
    features = _memo_features(scored, train)
    known = list(features.columns[4:])
    unknown = [name for name in exclude if name not in known]
    if unknown:
        raise InputError(where, fmt, f"cannot leave out features {unknown}: the features are {', '.join(known)}")
    search, names, constant, grouped, same = _prepared(features.drop(columns=list(exclude)))
    correct = features["joint_correct"].to_numpy(dtype=bool)
    n_dialogues = int(features["dialogue_id"].nunique())
    jga = float(correct.mean())
    report = SliceReport(
        run_id=", ".join(scored.run_ids),
        jga=jga,
        n_turns=n_turns,
        n_dialogues=n_dialogues,
        slices=_no_slices(),
        features=names,
        constant=constant,
        grouped=grouped,
        same=same,
        settings=settings,
    )
    why_none = _why_no_slice(correct, names, n_turns=n_turns, support=support)
    if why_none:
        return replace(report, note=why_none)
    # twice the slices asked for: slices of the very same turns become one row (`_measure`)
    found = _sliceline(search, 1.0 - correct, top=2 * top, max_predicates=max_predicates, support=support, alpha=alpha)
    if not found:
        note = (
            f"sliceline found no slice of at least {support} turns whose error rate outweighs its size "
            f"(alpha {alpha}): no group of turns stands out."
        )
        return replace(report, note=note)
    measured = _measure(features, found, jga=jga, resamples=resamples, seed=seed)
    return replace(report, slices=measured[measured["rank"] <= top].reset_index(drop=True))


def _search_settings(
    top: int, max_predicates: int, support: int, alpha: float, exclude: Sequence[str], *, resamples: int, seed: int
) -> dict[str, Any]:
    """The search's settings as the report shows them."""
    return {
        "method": "sliceline (Slicefinder), error = 1 - turn JGA",
        "top": top,
        "max_predicates": max_predicates,
        "min_support_turns": support,
        "alpha": alpha,
        "excluded": list(exclude),
        "interval": f"{LEVEL:.0%} {stats.METHOD}, {resamples} resamples, seed {seed}",
    }


def _unread_report(scored: Scored, settings: dict[str, Any]) -> SliceReport | None:
    """A scorer's name over gold it never reads (`views.unread_gold`): no JGA under that name and no slice, the
    reason in `note`; None when every run's gold is read."""
    unread = views.unread_gold(scored)
    if not unread:
        return None
    note = "; ".join(f"{run}: JGA n/a: {reason}" for run, reason in unread.items())
    n_dialogues = int(dialogue_key(scored.turns["dialogue_id"]).nunique())
    n_turns = len(scored.turns)
    return SliceReport(
        ", ".join(scored.run_ids), float("nan"), n_turns, n_dialogues, _no_slices(), (), settings=settings, note=note
    )


def _check_search(
    scored: Scored,
    where: str,
    fmt: str | None,
    *,
    top: int,
    max_predicates: int,
    min_support: float,
    alpha: float,
    resamples: int,
) -> None:
    """Refuse an empty run, too many turns searched together and settings out of range (`InputError`)."""
    n_turns = len(scored.turns)
    if n_turns == 0:
        raise InputError(where, fmt, "the run has no turns: there is nothing to find slices in")
    if len(scored.metas) > 1 and n_turns > POOLED_MAX_TURNS:
        raise InputError(
            ", ".join(scored.run_ids),
            None,
            f"{len(scored.metas)} runs together hold {n_turns:,} turns, more than the {POOLED_MAX_TURNS:,} a search "
            "of runs together takes within seconds: select fewer runs, or search each run alone",
        )
    if top < 1 or max_predicates < 1 or not 0 < alpha <= 1 or min_support <= 0 or resamples < 1:
        raise InputError(
            where,
            fmt,
            "slice search settings: top, max_predicates and resamples must be positive, 0 < alpha <= 1 and "
            f"min_support > 0 (got top={top}, max_predicates={max_predicates}, alpha={alpha}, "
            f"min_support={min_support}, resamples={resamples})",
        )


def _no_slices() -> pd.DataFrame:
    empty = pd.DataFrame({c: pd.Series(dtype=object if c in ("slice", "same_turns") else float) for c in COLUMNS})
    return empty.assign(predicates=pd.Series(dtype=object))


def _why_no_slice(correct: np.ndarray, names: Sequence[str], *, n_turns: int, support: int) -> str:
    """Why no slice can be worse than the run, before any search ("" when one may be)."""
    if correct.all():
        return f"Every one of the {n_turns:,} turns is jointly correct: no slice is worse than the run."
    if not names:
        return "No feature has two levels in this run (every turn looks alike): there is nothing to split on."
    if support > n_turns:
        return f"The run has {n_turns:,} turns, fewer than a slice's minimum support of {support}."
    return ""


def _sliceline(
    search: pd.DataFrame, errors: np.ndarray, *, top: int, max_predicates: int, support: int, alpha: float
) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    """sliceline's top slices as (predicates in feature order, score)."""
    from sliceline import Slicefinder

    finder = Slicefinder(alpha=alpha, k=top, max_l=min(max_predicates, search.shape[1]), min_sup=support, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba absent (the NumPy path is used) and 0/0 of empty candidates
        finder.fit(search.to_numpy(dtype=object), errors)
    names = list(search.columns)
    out = []
    for levels, statistics in zip(finder.top_slices_, finder.top_slices_statistics_, strict=True):
        predicates = tuple((names[i], str(v)) for i, v in enumerate(levels) if v is not None)
        out.append((predicates, float(statistics["slice_score"])))
    return out


def _mask(features: pd.DataFrame, predicates: Sequence[tuple[str, str]]) -> np.ndarray:
    mask = np.ones(len(features), dtype=bool)
    for feature, level in predicates:
        if feature not in features:
            raise ValueError(f"feature has to be one of {', '.join(map(str, features.columns[4:]))}, got {feature!r}")
        column = features[feature]
        if level == OTHER and not column.eq(OTHER).any():  # a grouped level: every level outside the top ones
            mask &= ~column.isin(_top_levels(column)).to_numpy(dtype=bool)
        else:
            mask &= column.eq(level).to_numpy(dtype=bool)
    return mask


def _measure(
    features: pd.DataFrame,
    found: Sequence[tuple[tuple[tuple[str, str], ...], float]],
    *,
    jga: float,
    resamples: int,
    seed: int,
) -> pd.DataFrame:
    """JGA, gap, support and the dialogue-bootstrap interval of each slice; worst gap first. Slices of the very
    same turns (e.g. `run = B` and `system = B` when searched together) are one row: the one with the fewest
    feature levels, the others named in `same_turns`."""
    correct = features["joint_correct"].to_numpy(dtype=float)
    dialogues = pd.Index(dialogue_key(features["dialogue_id"]).unique())
    d = dialogues.get_indexer(dialogue_key(features["dialogue_id"]))
    masks = np.stack([_mask(features, predicates) for predicates, _ in found])
    groups: dict[bytes, list[int]] = {}
    order = {name: k for k, name in enumerate(features.columns)}  # equal length: the earlier features

    def simplest(i: int) -> tuple[int, list[int], int]:
        return len(found[i][0]), sorted(order[f] for f, _ in found[i][0]), i

    for i in sorted(range(len(found)), key=simplest):
        groups.setdefault(np.packbits(masks[i]).tobytes(), []).append(i)
    kept = sorted(members[0] for members in groups.values())
    same = {members[0]: " | ".join(describe(found[j][0]) for j in members[1:]) for members in groups.values()}
    masks = masks[kept]
    same_turns = [same[i] for i in kept]
    found = [found[i] for i in kept]
    n_dialogues = len(dialogues)
    # per slice and dialogue: correct turns and turns in the slice; every slice resampled with the same dialogues
    num = np.stack([np.bincount(d[m], weights=correct[m], minlength=n_dialogues) for m in masks])
    den = np.stack([np.bincount(d[m], minlength=n_dialogues).astype(float) for m in masks])
    weights = stats.resample_counts(n_dialogues, n_resamples=resamples, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (weights @ num.T) / (weights @ den.T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(samples, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2], axis=0)
    turns = masks.sum(axis=1)
    slice_jga = num.sum(axis=1) / turns
    table = pd.DataFrame(
        {
            "slice": [describe(p) for p, _ in found],
            "jga": slice_jga,
            "gap": jga - slice_jga,
            "jga_low": low,
            "jga_high": high,
            "turns": turns.astype("int64"),
            "dialogues": (den > 0).sum(axis=1).astype("int64"),
            "wrong_turns": (turns - num.sum(axis=1)).round().astype("int64"),
            "score": [score for _, score in found],
            "same_turns": same_turns,
            "predicates": [p for p, _ in found],
        }
    )
    table = table.sort_values(["gap", "turns", "slice"], ascending=[False, False, True], kind="stable")
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table.reset_index(drop=True)


# --- click-through and export ---------------------------------------------------------------------


def slice_turns(
    runs: Scored | Sequence[Scored], train: Scored | None = None, *, predicates: Sequence[Sequence[str]]
) -> pd.DataFrame:
    """The turns of one slice (file order) as a click-through list (`views.TURN_LIST_COLUMNS`, and `run_id`
    first when several runs are searched together: a row opens the dialogue viewer at that turn)."""
    scored = pooled(runs)
    features = _memo_features(scored, train)
    mask = _mask(features, [(str(f), str(v)) for f, v in predicates])
    turns = scored.turns[mask]
    listed = turns.assign(status=np.where(turns["joint_correct"].to_numpy(dtype=bool), "correct", "wrong"))
    columns = views.TURN_LIST_COLUMNS if len(scored.metas) < 2 else ["run_id", *views.TURN_LIST_COLUMNS]
    return listed[columns].reset_index(drop=True)


def slice_differences(
    a: Scored, b: Scored, train: Scored | None = None, *, predicates: Sequence[Sequence[str]], limit: int = 1000
) -> dict[str, Any]:
    """The turns of one slice of run A (its predicates over A's features, as `find_slices` found it) that
    exactly one of runs A and B gets right (whole state), paired by dialogue and turn: `views.differing_turns`
    restricted to the slice (`only_a`, `only_b`, `counts`; `paired_turns` counts the slice's turns B holds too).

    >>> from analysis.demo.testing import scored_from_states
    >>> gold = [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}]
    >>> a = scored_from_states(gold, [{}, gold[1]], run_id="a")
    >>> b = scored_from_states(gold, [gold[0], {}], run_id="b")
    >>> found = slice_differences(a, b, predicates=[("gold slots", "1-2")])
    >>> found["counts"]["only_a"]["turns"], found["counts"]["only_b"]["turns"], found["counts"]["paired_turns"]
    (1, 1, 2)
    >>> slice_differences(a, b, predicates=[("turn depth", "0")])["counts"]["only_b"]
    {'turns': 1, 'dialogues': 1}
    """
    mask = _mask(_memo_features(a, train), [(str(f), str(v)) for f, v in predicates])
    return views.differing_turns(a, b, within=a.turns.loc[mask, "tid"].to_numpy(), limit=limit)


COMPARE_BY = "jga"  # beyond a chart's worth of other runs, the Slices page offers the best by this metric


def comparison_runs(focus: Scored, others: Sequence[Scored]) -> list[str]:
    """The runs of `others` on the focus run's gold (`views.gold_fingerprint`: same turns, gold and
    convention), best JGA first (ties: in the order given): what a slice of the focus run can be compared with.

    >>> from analysis.demo.testing import scored_from_states
    >>> gold = [{"hotel": {"area": "east"}}]
    >>> focus = scored_from_states(gold, [{}], run_id="focus")
    >>> good, bad = (scored_from_states(gold, p, run_id=n) for n, p in (("good", gold), ("bad", [{}])))
    >>> comparison_runs(focus, [bad, good, scored_from_states(gold * 2, gold * 2, run_id="longer")])
    ['good', 'bad']
    """
    fingerprint = views.gold_fingerprint(focus)
    same = [s for s in others if views.gold_fingerprint(s) == fingerprint]
    jga = [float(s.turns["joint_correct"].mean()) for s in same]
    order = sorted(range(len(same)), key=lambda i: -jga[i])
    return [same[i].metas[0].run_id for i in order]


def slices_bar(
    slices: pd.DataFrame, *, jga: float, run_id: str = "", colour: str | None = None, style: str = "screen"
) -> Any:
    """The slices' JGA as horizontal bars (rank 1 on top) with their 95% intervals, and the run's JGA as a
    line; hover: the slice, gap, turns and dialogues. A bar's `point_index` is its row in `slices`."""
    import plotly.graph_objects as go

    from analysis import figures as F
    from analysis.palette import OKABE_ITO

    if not len(slices):
        fig = go.Figure()
        fig.add_annotation(text="no slice", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
        return F.apply_style(fig, style, height=200)
    labels = [f"{rank}. {text}" for rank, text in zip(slices["rank"], slices["slice"], strict=True)]
    jgas = slices["jga"].to_numpy(dtype=float)
    fig = go.Figure(
        go.Bar(
            x=jgas,
            y=labels,
            orientation="h",
            marker_color=colour or OKABE_ITO[0],
            name=run_id or "JGA",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": slices["jga_high"].to_numpy(dtype=float) - jgas,
                "arrayminus": jgas - slices["jga_low"].to_numpy(dtype=float),
            },
            customdata=np.stack(
                [
                    slices["gap"].to_numpy(dtype=float),
                    slices["turns"].to_numpy(float),
                    slices["dialogues"].to_numpy(float),
                ],
                axis=-1,
            ),
            hovertemplate=(
                "<b>%{y}</b><br>JGA: %{x:.4f}<br>gap to the run: %{customdata[0]:.4f}<br>%{customdata[1]:,.0f} turns, "
                "%{customdata[2]:,.0f} dialogues<extra></extra>"
            ),
        )
    )
    fig.add_vline(x=jga, line_dash="dash", line_color="#555555", annotation_text=f"run JGA {jga:.3f}")
    fig.update_layout(
        title=f"Worst slices{' — ' + run_id if run_id else ''}: JGA with 95% intervals", xaxis_title="JGA"
    )
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(autorange="reversed", automargin=True)
    return F.apply_style(fig, style, height=max(320, 28 * len(slices) + 140))


def table_frame(report: SliceReport) -> pd.DataFrame:
    """The slices as an exported table: readable columns, the interval as JGA low / JGA high."""
    columns = ["rank", "slice", "jga", "jga_low", "jga_high", "gap", "turns", "dialogues"]
    same = ["same_turns"] if report.slices["same_turns"].ne("").any() else []  # only when a slice has another name
    frame = report.slices[[*columns, *same]].rename(
        columns={"jga": "JGA", "jga_low": "JGA low", "jga_high": "JGA high", "same_turns": "same turns as"}
    )
    return frame.assign(run=report.run_id)[["run", *frame.columns]]
