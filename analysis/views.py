"""Scored runs -> page-ready tidy frames: what each dashboard view shows, computed without Streamlit.

Every function takes one `Scored` (a single run) or a sequence of them (one per run, each under its
own convention, so runs scored differently can still sit side by side) and returns a small frame,
list or dict. Pages only place these; the CLI and reports can export the very same frames.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import diagnostics as D
from analysis import metrics as M
from analysis import registry as R
from analysis import stats
from analysis.formats.vectors import VALUE as VECTOR_VALUE
from analysis.formats.vectors import WRONG as VECTOR_WRONG
from analysis.loading import dialogue_key
from analysis.model import INFO_FIELDS, RunMeta
from analysis.outcomes import OUTCOMES, Outcome
from analysis.scoring import COUNT_COLUMNS, Scored
from analysis.suite import headline_metrics, not_applicable, not_applicable_text

OUTCOME_LABELS = {o.key: o.label for o in Outcome}  # as the pages' outcome filters read them
LEADERBOARD_METRICS = R.NAMES  # the leaderboard's metric columns, in order: every registered metric
LEADERBOARD_SHOWN = R.LEADERBOARD_SHOWN  # the columns the Overview shows by default (a hidden one when sorted by)
ABSENT = "—"
# The run metadata shown beside every run (the convention has a column of its own: the label actually scored).
# What a run is, as tables show it: not its convention (a column of its own) nor the schema files it reads.
META_COLUMNS = [f for f in INFO_FIELDS if f not in ("convention", "schema", "train_schema")]
# Columns every scored turns table has, and `listing` (an index into the gold file's slot listings, set for
# files that list slots per turn); anything else is a dialogue attribute (e.g. CrossWOZ `type`).
STANDARD_TURN_COLUMNS = frozenset(
    {"run_id", "tid", "dialogue_id", "turn_index", "user", "system", "n_listed", "pred_missing", "is_final"}
    | {"pred_unparseable", "listing"}
    | {"joint_correct", *COUNT_COLUMNS}
)

INTERVAL_RESAMPLES = 1000  # dialogue-bootstrap resamples behind every 95% interval the pages show


def _concat(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _meta(scored: Scored) -> RunMeta:
    return scored.metas[0]


def scope(scoreds: Scored | Sequence[Scored]) -> dict[str, Any]:
    """What a view covers: the runs, conventions, turn and dialogue counts (for captions).

    >>> from analysis.demo.testing import scored_from_states
    >>> scope(scored_from_states([{}, {"hotel": {"area": "east"}}], [{}, {}]))["n_turns"]
    2
    """
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    conventions = list(dict.fromkeys(s.convention.name for s in items))
    return {
        "runs": [_meta(s).run_id for s in items],
        "conventions": conventions,
        "n_turns": int(sum(len(s.turns) for s in items)),
        "n_dialogues": int(sum(s.turns["dialogue_id"].nunique() for s in items)),
    }


def scope_caption(scoreds: Scored | Sequence[Scored]) -> str:
    """One line for a page caption: convention(s), runs, turns and dialogues."""
    info = scope(scoreds)
    return _caption(info["conventions"], len(info["runs"]), info["n_turns"], info["n_dialogues"])


def board_caption(board: pd.DataFrame, conventions: Sequence[str]) -> str:
    """`scope_caption` from a leaderboard (one row per run, `n_turns`, `n_dialogues`) and the runs'
    convention names: the caption of the stored runs, without their turns."""
    return _caption(
        list(dict.fromkeys(conventions)), len(board), int(board["n_turns"].sum()), int(board["n_dialogues"].sum())
    )


def _caption(conventions: list[str], n_runs: int, n_turns: int, n_dialogues: int) -> str:
    conv = ", ".join(conventions) or "none"
    label = "Convention" if len(conventions) <= 1 else "Conventions"
    return f"{label}: {conv} · {n_runs} run{'s' if n_runs != 1 else ''} · {n_turns:,} turns · {n_dialogues:,} dialogues"


# --- overview ------------------------------------------------------------------------------------


def leaderboard(
    scoreds: Sequence[Scored], *, sort: str | None = None, resamples: int = INTERVAL_RESAMPLES
) -> pd.DataFrame:
    """One row per run: metadata, convention, counts, every headline metric and alignment warnings;
    sorted by the metric `sort` (best first) when given, else in the order of `scoreds`. The `sort`
    metric also gets its 95% dialogue-level bootstrap interval (`<sort>_low`, `<sort>_high`). A metric
    whose definition does not apply to a run is NaN there, and `not_applicable` says which and why
    (empty when all apply; see `not_applicable_notes`)."""
    rows = []
    for scored in scoreds:
        meta = _meta(scored)
        warnings = list(scored.alignment.get(meta.run_id, {}).get("warnings", []))
        interval: dict[str, float] = {}
        if sort in stats.METRICS and resamples > 0:
            ci = stats.bootstrap_ci(scored, sort, n_resamples=resamples)
            assert isinstance(ci, dict)
            interval = {f"{sort}_low": ci["low"], f"{sort}_high": ci["high"]}
        row = {
            **{c: getattr(meta, c) for c in META_COLUMNS},
            "convention": scored.convention.label,
            "n_dialogues": int(scored.turns["dialogue_id"].nunique()),
            "n_turns": len(scored.turns),
            **headline_metrics(scored),
            **interval,
            "not_applicable": not_applicable_text(not_applicable(scored)),
            "n_warnings": len(warnings),
            "warnings": " | ".join(warnings),
        }
        if scored.convention.name == "sgd":  # JGA and AGA under the SGD evaluator's name are its own
            from analysis.sgd.views import leaderboard_values

            evaluator = leaderboard_values(scored, sort, resamples)
            note = evaluator.pop("sgd_note", "")
            row |= evaluator
            if note:
                row["not_applicable"] = "; ".join(filter(None, [row["not_applicable"], f"JGA, AGA n/a: {note}"]))
        rows.append(row)
    board = pd.DataFrame(rows)
    if sort is not None and len(board):
        if sort not in board.columns:
            raise ValueError(f"sort has to be a leaderboard column, got {sort!r}")
        best_first = R.get(sort).higher_is_better if sort in R.LABELS else True
        board = board.sort_values(sort, ascending=not best_first, kind="stable", na_position="last")
        board = board.reset_index(drop=True)
    return board


def not_applicable_notes(board: pd.DataFrame) -> list[str]:
    """One line per run with a metric shown as n/a: the run, the metrics and the reason (for captions).

    >>> not_applicable_notes(pd.DataFrame({"run_id": ["a", "b"], "not_applicable": ["", "Slot accuracy n/a: x"]}))
    ['b: Slot accuracy n/a: x']
    """
    if "not_applicable" not in board.columns:
        return []
    return [f"{run}: {text}" for run, text in zip(board["run_id"], board["not_applicable"], strict=True) if text]


# The columns that make runs comparable, as `comparability_warnings` reads them.
COMPARABLE_BY = ("dataset", "split", "convention", "history")


def comparable_groups(table: pd.DataFrame) -> pd.Series:
    """For each row of a table of runs, a label naming its group of comparable runs: the same dataset
    (family and version, as `dataset_version` reads the name), split, convention and history mode, the
    differences `comparability_warnings` names. Columns the table lacks do not split it; a table with
    none of them is one group (label ""). Best values are compared only within a group.

    >>> table = pd.DataFrame({"dataset": ["MultiWOZ 2.1", "CrossWOZ", "multiwoz-2.1"], "history": ["gold"] * 3})
    >>> comparable_groups(table).tolist()
    ['MultiWOZ 2.1, gold history', 'CrossWOZ, gold history', 'MultiWOZ 2.1, gold history']
    """
    parts = []
    for column in COMPARABLE_BY:
        if column not in table.columns:
            continue
        values = table[column].fillna("").astype(str)
        if column == "dataset":
            key = values.map(dataset_version)
            first = dict(zip(key[::-1], values[::-1], strict=True))  # the first spelling of a dataset names it
            parts.append(key.map(first))
        else:
            parts.append(values + (" history" if column == "history" else ""))
    if not parts:
        return pd.Series("", index=table.index)
    return pd.concat(parts, axis=1).apply(lambda row: ", ".join(v for v in row if v), axis=1)


_VERSION = re.compile(r"^(?P<family>.*?)[\s_-]*v?(?P<version>\d+(?:\.\d+)+|\d+)$")


def dataset_version(name: str) -> tuple[str, str]:
    """Split a dataset name into (family, version).

    >>> dataset_version("MultiWOZ 2.1"), dataset_version("CrossWOZ"), dataset_version("MultiWOZ-zh")
    (('multiwoz', '2.1'), ('crosswoz', ''), ('multiwoz-zh', ''))
    """
    text = name.strip()
    match = _VERSION.match(text)
    if match and match.group("family"):
        return match.group("family").strip().lower(), match.group("version")
    return text.lower(), ""


def _groups(board: pd.DataFrame, column: str, label: Any = None) -> str:
    parts = []
    for value, part in board.groupby(column, sort=True):
        shown = label(value) if label else value
        parts.append(f"{shown or '(unset)'} ({', '.join(map(str, part['run_id']))})")
    return " vs ".join(parts)


def run_table(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """One row per run: its metadata and the convention it was scored under (no metrics).

    >>> from analysis.demo.testing import scored_from_states
    >>> run_table([scored_from_states([{}], [{}])])[["run_id", "convention"]].to_dict("records")
    [{'run_id': 'run', 'convention': 'exact'}]
    """
    rows = [
        {**{c: getattr(meta, c) for c in META_COLUMNS}, "convention": scored.convention.name}
        for scored in scoreds
        for meta in scored.metas
    ]
    return pd.DataFrame(rows, columns=[*META_COLUMNS, "convention"])


def comparability_warnings(runs: pd.DataFrame | Sequence[Scored], *, about: Sequence[str] = COMPARABLE_BY) -> list[str]:
    """Plain sentences for every way the runs side by side differ so their numbers cannot be compared:
    dataset (or its version), split, convention, history mode. Empty when they are comparable.

    `runs`: the leaderboard (or any frame with a row per run and the `COMPARABLE_BY` columns), or the
    scored runs a table or chart sets side by side; `about`: the differences to check, e.g.
    `("convention",)` for views that only ever set runs of different datasets side by side. Each run is
    scored under its own convention unless one is chosen for all, so mixed conventions are the difference
    nobody typed: that sentence names every run's convention and says how to score them alike.

    >>> board = pd.DataFrame({"run_id": ["a", "b"], "convention": ["trade", "mwzeval"]})
    >>> comparability_warnings(board, about=("convention",))  # doctest: +NORMALIZE_WHITESPACE
    ['Scored under different conventions: a (trade), b (mwzeval). Their numbers are not comparable: score
    them under one convention to compare them.']
    """
    unknown = sorted(set(about) - set(COMPARABLE_BY))
    if unknown:
        raise ValueError(f"about has to name some of {', '.join(COMPARABLE_BY)}, got {unknown}")
    board = runs if isinstance(runs, pd.DataFrame) else run_table(runs)
    if len(board) < 2:
        return []
    lines = []
    if "dataset" in about:
        names = board["dataset"].fillna("").astype(str)
        family = names.map(lambda n: dataset_version(n)[0])
        version = names.map(lambda n: dataset_version(n)[1])
        frame = board.assign(_family=family, _version=version, _dataset=names)
        for fam, part in frame.groupby("_family", sort=True):
            if part["_version"].nunique() > 1:
                lines.append(
                    f"Dataset versions differ within {part['_dataset'].iloc[0].rsplit(' ', 1)[0] or fam}: "
                    f"{_groups(part, '_dataset')}. Their numbers are not comparable."
                )
        if frame["_family"].nunique() > 1:
            lines.append(
                f"The runs are on different datasets: {_groups(frame, '_dataset')}. "
                "Numbers are comparable only within one dataset."
            )
    if "split" in about and board["split"].nunique(dropna=False) > 1:
        lines.append(f"Splits differ: {_groups(board, 'split')}. Their numbers are not comparable.")
    if "convention" in about and board["convention"].nunique(dropna=False) > 1:
        each = ", ".join(f"{run} ({conv})" for run, conv in zip(board["run_id"], board["convention"], strict=True))
        lines.append(
            f"Scored under different conventions: {each}. Their numbers are not comparable: "
            "score them under one convention to compare them."
        )
    if "history" in about and board["history"].nunique(dropna=False) > 1:
        history = {"predicted": "predicted history (JGA)", "gold": "gold history (GJGA)"}
        lines.append(
            f"History modes differ: {_groups(board, 'history', history.get)}. Their numbers are not comparable."
        )
    return lines


def values_note(scored: Scored) -> str:
    """What a page showing slot values says of a run read from a per-slot correctness file, which holds
    right/wrong per slot and no values ("" for any other run).

    >>> from analysis.demo.testing import scored_from_states
    >>> values_note(scored_from_states([{"hotel": {"area": "east"}}], [{}]))
    ''
    """
    if not M.valueless_runs(scored):
        return ""
    return (
        "This run comes from a per-slot correctness file (0/1 per slot and turn): it holds no values and no "
        f"gold state. Gold shows {VECTOR_VALUE!r} on every slot, the prediction {VECTOR_VALUE!r} where the slot "
        f"was right and {VECTOR_WRONG!r} where it was wrong; slot precision, recall and F1, value confusions, AGA "
        "and the change-based metrics are n/a. Per-slot accuracy is right / (right + wrong value)."
    )


# --- slots ---------------------------------------------------------------------------------------


def _slot_label(domain: pd.Series, slot: pd.Series) -> pd.Series:
    return domain.astype(str) + "-" + slot.astype(str)


def slot_table(scored: Scored) -> pd.DataFrame:
    """Per slot: precision, recall, F1, gold support and the count of every outcome; worst F1 first."""
    per_slot = M.per_slot_prf(scored)
    pairs = M.slot_pairs(scored)
    codes = M.outcome_codes(scored.slots)
    if pairs is not None and codes is not None:
        # Counted per integer pair code and outcome code: the same table as the group-by below.
        group, names = pairs
        n = len(OUTCOMES)
        cells = np.bincount(group * n + codes, minlength=len(names) * n)
        counts = pd.concat([names, pd.DataFrame(cells.reshape(len(names), n), columns=list(OUTCOMES))], axis=1)
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
    if not (frame["outcome"] == Outcome.UNPARSEABLE.key).any():  # only LLM text runs have this outcome
        frame["outcome"] = frame["outcome"].cat.remove_categories([Outcome.UNPARSEABLE.key])
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


# --- domains and attributes -----------------------------------------------------------------------


def jga_interval(scored: Scored, *, by: str, resamples: int = INTERVAL_RESAMPLES) -> pd.DataFrame:
    """One run's 95% dialogue-bootstrap JGA interval per `by` group: `by`, jga_low, jga_high. Memoised on
    the scored run, so the dashboard's prefetch can compute it run by run ahead of the views below."""
    ci = stats.bootstrap_ci(scored, "jga", by=by, n_resamples=resamples)
    assert isinstance(ci, pd.DataFrame)
    return ci[[by, "low", "high"]].rename(columns={"low": "jga_low", "high": "jga_high"})


def _with_interval(frame: pd.DataFrame, scored: Scored, by: str, resamples: int) -> pd.DataFrame:
    """`frame` (one run, JGA per `by`) with the 95% dialogue-bootstrap interval as jga_low / jga_high."""
    if resamples <= 0 or not len(frame):
        return frame
    return frame.merge(jga_interval(scored, by=by, resamples=resamples), on=by, how="left")


def domain_jga(scoreds: Sequence[Scored], *, resamples: int = INTERVAL_RESAMPLES) -> pd.DataFrame:
    """Per run and domain: JGA over the turns where the domain occurs (see `joint_goal_accuracy`), with
    its 95% dialogue-bootstrap interval."""
    return _concat([_domain_jga(s, resamples) for s in scoreds])


def _domain_jga(scored: Scored, resamples: int) -> pd.DataFrame:
    if scored.convention.name == "sgd":  # per service, the SGD evaluator's joint goal accuracy
        from analysis.sgd.views import domain_rows

        rows = domain_rows(scored, resamples)
        if rows is not None:
            return rows
    return _with_interval(M.joint_goal_accuracy(scored, by=["run_id", "domain"]), scored, "domain", resamples)


def attribute_columns(scoreds: Scored | Sequence[Scored]) -> list[str]:
    """Dialogue attributes the turns carry beyond the standard columns (e.g. CrossWOZ `type`)."""
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    names: dict[str, None] = {}
    for s in items:
        for column in s.turns.columns:
            if column not in STANDARD_TURN_COLUMNS and s.turns[column].nunique() <= 100:
                names[column] = None
    return list(names)


def jga_by_attribute(scoreds: Sequence[Scored], *, attribute: str) -> pd.DataFrame:
    """JGA per run and value of a dialogue attribute; runs without the attribute are left out."""
    frames = [M.joint_goal_accuracy(s, by=["run_id", attribute]) for s in scoreds if attribute in s.turns.columns]
    return _concat(frames)


# --- turn depth and compounding -------------------------------------------------------------------


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
    groups = turns[keys].groupby(keys, sort=True, observed=True, dropna=False)
    code = groups.ngroup().to_numpy()
    out = groups.size().reset_index()[keys]
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


def _groups_of(per: pd.DataFrame, tids: pd.Index, code: np.ndarray) -> np.ndarray | None:
    """The group code of each per-turn row, None if a row names a turn the run does not have."""
    rows = tids.get_indexer(per["tid"].to_numpy())
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


# --- dialogue viewer ------------------------------------------------------------------------------


def dialogue_index(scored: Scored) -> pd.DataFrame:
    """One row per dialogue in file order: turns, turns with an error, first error turn, attributes."""
    turns = scored.turns
    attrs = [c for c in attribute_columns(scored) if c in turns.columns]
    wrong = turns["turn_index"].where(~turns["joint_correct"])
    frame = turns.assign(_wrong=~turns["joint_correct"], _first=wrong)
    index = (
        frame.groupby("dialogue_id", sort=False)
        .agg(
            n_turns=("turn_index", "size"),
            error_turns=("_wrong", "sum"),
            first_error_turn=("_first", "min"),
            **{a: (a, "first") for a in attrs},
        )
        .reset_index()
    )
    index["error_turns"] = index["error_turns"].astype("int64")
    index["label"] = (
        index["dialogue_id"].astype(str)
        + " · "
        + index["n_turns"].astype(str)
        + " turns · "
        + index["error_turns"].astype(str)
        + " with errors"
    )
    return index


def _subset(scored: Scored, dialogue_id: str) -> Scored:
    turns = scored.turns[scored.turns["dialogue_id"] == dialogue_id]
    slots = scored.slots[scored.slots["dialogue_id"] == dialogue_id]
    return Scored(scored.convention, scored.metas, turns, slots, scored.ontology, scored.alignment)


def _changes(slots: pd.DataFrame, side: str, last_turn: int) -> pd.DataFrame:
    """Per (turn, slot) how one side's state changed from the previous turn: new, changed, removed."""
    value, display = f"{side}_value", f"{side}_display"
    state = slots.loc[slots[value].notna(), ["turn_index", "domain", "slot", value, display]]
    previous = state.assign(turn_index=state["turn_index"] + 1)
    previous = previous[previous["turn_index"] <= last_turn]
    both = state.merge(previous, on=["turn_index", "domain", "slot"], how="outer", suffixes=("", "_prev"))
    now, before = both[value], both[f"{value}_prev"]
    change = np.where(before.isna(), "new", np.where(now.isna(), "removed", np.where(now != before, "changed", "")))
    both["change"] = change
    label = _slot_label(both["domain"], both["slot"])
    shown_now, shown_before = both[display].astype(str), both[f"{display}_prev"].astype(str)
    text = np.where(
        change == "new",
        "+ " + label + " = " + shown_now,
        np.where(
            change == "removed",
            "− " + label + " (was " + shown_before + ")",
            "~ " + label + ": " + shown_before + " → " + shown_now,
        ),
    )
    both["text"] = text
    return both.loc[both["change"] != "", ["turn_index", "domain", "slot", "change", "text"]]


def dialogue_view(scored: Scored, dialogue_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Everything the turn-level diff viewer shows for one dialogue of one run.

    Returns (`turns`, `diff`). `turns`: per turn the utterances, `joint_correct`, outcome counts,
    new and inherited error counts, and what changed in the gold and predicted states this turn.
    `diff`: per turn and slot present in gold or prediction, the shown values, outcome with a text
    marker (`status`), whether the error is new or inherited, and whether each side changed.
    """
    sub = _subset(scored, dialogue_id)
    slots = sub.slots
    last = int(sub.turns["turn_index"].max()) if len(sub.turns) else 0
    origins = D.error_origins(sub)[["tid", "domain", "slot", "origin"]]
    diff = slots.merge(origins, on=["tid", "domain", "slot"], how="left")
    gold_changes = _changes(slots, "gold", last)
    pred_changes = _changes(slots, "pred", last)
    key = ["turn_index", "domain", "slot"]
    diff = diff.merge(
        gold_changes[[*key, "change"]].rename(columns={"change": "gold_change"}), on=key, how="left"
    ).merge(pred_changes[[*key, "change"]].rename(columns={"change": "pred_change"}), on=key, how="left")
    outcome = diff["outcome"].astype(str)
    rows = pd.DataFrame(
        {
            "turn_index": diff["turn_index"].astype("int64"),
            "slot": _slot_label(diff["domain"], diff["slot"]),
            "status": outcome.map(lambda o: Outcome.of(o).shown),  # the marker: readable without colour
            "gold": diff["gold_display"].fillna(ABSENT).astype(str),
            "predicted": diff["pred_display"].fillna(ABSENT).astype(str),
            "origin": diff["origin"].astype(str).fillna("").replace("nan", ""),
            "gold_change": diff["gold_change"].fillna("").astype(str),
            "pred_change": diff["pred_change"].fillna("").astype(str),
            "outcome": outcome,
            "domain": diff["domain"],
        }
    )
    error_first = (rows["outcome"] == Outcome.CORRECT.key).astype(int)
    rows = rows.assign(_e=error_first).sort_values(["turn_index", "_e", "slot"], kind="stable").drop(columns="_e")

    per_turn = (
        rows.assign(
            _new=(rows["origin"] == "new"),
            _inherited=(rows["origin"] == "inherited"),
        )
        .groupby("turn_index")
        .agg(n_new=("_new", "sum"), n_inherited=("_inherited", "sum"))
    )
    gold_text = gold_changes.groupby("turn_index")["text"].agg("; ".join).rename("gold_changes")
    pred_text = pred_changes.groupby("turn_index")["text"].agg("; ".join).rename("pred_changes")
    turns = sub.turns[
        ["turn_index", "user", "system", "joint_correct", "n_gold", "n_correct", "n_wrong", "n_missed", "n_spurious"]
    ].set_index("turn_index")
    turns = turns.join(per_turn).join(gold_text).join(pred_text).reset_index()
    for column in ("n_new", "n_inherited"):
        turns[column] = turns[column].fillna(0).astype("int64")
    for column in ("gold_changes", "pred_changes"):
        turns[column] = turns[column].fillna("").astype(str)
    turns["n_errors"] = turns["n_wrong"] + turns["n_missed"] + turns["n_spurious"]
    plural = np.where(turns["n_errors"] == 1, " error", " errors")
    turns["status"] = np.where(turns["joint_correct"], "✓ correct", "✗ " + turns["n_errors"].astype(str) + plural)
    if "pred_unparseable" in sub.turns:  # a prediction whose text did not parse says so, even with 0 errors
        flags = sub.turns.set_index("turn_index")["pred_unparseable"].reindex(turns["turn_index"])
        turns.loc[flags.fillna(False).to_numpy(dtype=bool), "status"] = f"{Outcome.UNPARSEABLE.shown} prediction"
    return turns.reset_index(drop=True), rows.reset_index(drop=True)


def _matches(diff: pd.DataFrame, *, slot: str | None, outcome: str | None, errors_only: bool) -> pd.Series:
    keep = pd.Series(True, index=diff.index)
    if errors_only:
        keep &= diff["outcome"] != Outcome.CORRECT.key
    if slot:
        keep &= diff["slot"] == slot
    if outcome:
        keep &= diff["outcome"] == outcome
    return keep


def filter_turns(
    turns: pd.DataFrame,
    diff: pd.DataFrame,
    *,
    errors_only: bool = False,
    slot: str | None = None,
    outcome: str | None = None,
) -> list[int]:
    """Turn indices passing the viewer's filters (turns with errors, with a slot, with an outcome)."""
    if not (errors_only or slot or outcome):
        return [int(t) for t in turns["turn_index"]]
    hit = diff.loc[_matches(diff, slot=slot, outcome=outcome, errors_only=errors_only), "turn_index"]
    return sorted({int(t) for t in hit})


def diff_at(
    diff: pd.DataFrame,
    turn: int,
    *,
    errors_only: bool = False,
    slot: str | None = None,
    outcome: str | None = None,
) -> pd.DataFrame:
    """The diff rows of one turn under the viewer's filters."""
    keep = (diff["turn_index"] == turn) & _matches(diff, slot=slot, outcome=outcome, errors_only=errors_only)
    return diff[keep].reset_index(drop=True)


def step_turn(candidates: Sequence[int], current: int, *, direction: int) -> int | None:
    """The next (direction +1) or previous (-1) candidate turn after `current`, or None.

    >>> step_turn([1, 4, 7], 4, direction=1), step_turn([1, 4, 7], 4, direction=-1), step_turn([1], 1, direction=1)
    (7, 1, None)
    """
    if direction > 0:
        later = [t for t in candidates if t > current]
        return min(later) if later else None
    earlier = [t for t in candidates if t < current]
    return max(earlier) if earlier else None


def matching_dialogue(scored: Scored, dialogue_id: str) -> str | None:
    """The id under which `scored` holds the same dialogue (case and `.json` suffix ignored)."""
    ids = pd.Series(scored.turns["dialogue_id"].unique())
    wanted = dialogue_key(pd.Series([dialogue_id])).iloc[0]
    hit = ids[dialogue_key(ids) == wanted]
    return str(hit.iloc[0]) if len(hit) else None


def agreement_turns(a: Scored, b: Scored, *, cell: str | None = None, limit: int = 500) -> pd.DataFrame:
    """The paired turns of two runs with their agreement cell, optionally one cell only (drill-down)."""
    paired, _ = D.agreement(a, b)
    if cell is not None:
        paired = paired[paired["agreement"] == cell]
    out = paired[["dialogue_id", "turn_index", "agreement", "joint_correct_a", "joint_correct_b"]]
    out = out.assign(agreement=out["agreement"].astype(str))
    return out.head(limit).reset_index(drop=True)


def turn_row(turns: pd.DataFrame, turn: int) -> dict[str, Any] | None:
    """One turn of `dialogue_view`'s turns table as a plain dict (None when absent)."""
    hit = turns[turns["turn_index"] == turn]
    if not len(hit):
        return None
    row = hit.iloc[0].to_dict()
    row["user"] = "" if pd.isna(row.get("user")) else str(row["user"])
    row["system"] = "" if pd.isna(row.get("system")) else str(row["system"])
    return {str(k): v for k, v in row.items()}


def turns_listing(turns: pd.DataFrame, shown: Sequence[int]) -> pd.DataFrame:
    """The viewer's turn list restricted to the turns passing its filters."""
    return turns[turns["turn_index"].isin(list(shown))].reset_index(drop=True)


def split_slot(table: pd.DataFrame, slot_name: str) -> tuple[str, str]:
    """(domain, slot) of a `domain-slot` label of `slot_table` (slot names may hold hyphens too)."""
    hit = table[table["slot_name"] == slot_name]
    if not len(hit):
        raise ValueError(f"slot has to be one of the run's slots, got {slot_name!r}")
    return str(hit["domain"].iloc[0]), str(hit["slot"].iloc[0])


def history_pairs_of(scoreds: Sequence[Scored]) -> list[tuple[str, str]]:
    """`history_pairs` over the metadata of scored runs."""
    return history_pairs([_meta(s) for s in scoreds])


# --- cross-lingual and cross-ontology -------------------------------------------------------------


def default_pair(run_ids: Sequence[str], mappings: Sequence[dict[str, Any]]) -> tuple[str, str] | None:
    """The pair of runs to compare first: the first manifest mapping whose two runs are both shown,
    else the first two runs."""
    shown = list(run_ids)
    for entry in mappings:
        a, b = entry.get("a"), entry.get("b")
        if a in shown and b in shown and a != b:
            return str(a), str(b)
    return (shown[0], shown[1]) if len(shown) >= 2 else None


def crosslingual_summary(
    a: Scored, b: Scored, *, overrides: tuple[tuple[str, str], ...] = (), min_score: float = 0.5
) -> dict[str, Any]:
    """Everything the cross-lingual page shows for runs A and B: the slot and domain alignment, the
    agreement counts over paired turns, and the gaps by slot, domain and turn depth."""
    from analysis import crosslingual as X

    alignment = X.align_ontologies(a, b, overrides=dict(overrides) or None, min_score=min_score)
    _, counts = D.agreement(a, b)
    matrix = D.agreement_matrix(a, b)
    cells = {str(k): int(v) for k, v in zip(matrix["agreement"], matrix["n_turns"], strict=True)}
    return {
        "alignment": alignment,
        "domains": X.align_domains(alignment),
        "cells": cells,
        "pairing": counts,
        "gaps": {by: X.crosslingual_gaps(a, b, alignment, by=by) for by in X.GAP_BY},
    }


def crosslingual_turns(
    a: Scored,
    b: Scored,
    *,
    cell: str,
    overrides: tuple[tuple[str, str], ...] = (),
    slot_a: str | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """The paired turns of one agreement cell (optionally where one aligned slot is wrong)."""
    from analysis import crosslingual as X

    alignment = X.align_ontologies(a, b, overrides=dict(overrides) or None) if slot_a else None
    turns = X.drill_down(a, b, cell, alignment=alignment, slot_a=slot_a)
    return turns.head(limit).reset_index(drop=True)


def first_dialogue_with_errors(index: pd.DataFrame) -> str | None:
    """The first dialogue of `dialogue_index` with an error turn (the viewer's starting point)."""
    hit = index[index["error_turns"] > 0]
    return str(hit["dialogue_id"].iloc[0]) if len(hit) else None


# --- dialogue viewer: turn positions, the slot filter across ontologies (issue 17) ---------------------


def turn_position_label(turn_indices: Sequence[int], turn: int) -> str:
    """The turn selector's label: the file's turn index and its 1-based position among the dialogue's
    turns, so the last of 10 turns reads `10 of 10` whatever the indices (gaps, 1-based files).

    >>> turn_position_label([0, 1, 2, 3, 9], 9), turn_position_label(list(range(10)), 9)
    ('turn 9 · 5 of 5', 'turn 9 · 10 of 10')
    """
    ordered = sorted(int(t) for t in turn_indices)
    position = ordered.index(int(turn)) + 1 if int(turn) in ordered else None
    return f"turn {turn} · {position} of {len(ordered)}" if position else f"turn {turn}"


def aligned_slot(a: Scored, b: Scored, *, slot: str, overrides: tuple[tuple[str, str], ...] = ()) -> str | None:
    """The slot of run B aligned with run A's `slot` (`domain-slot`) through the ontology alignment of
    `analysis.crosslingual` (manifest overrides first, identical names, then inferred from the parallel
    gold); None when no slot of B is aligned with it."""
    from analysis import crosslingual as X

    mapped = dict(overrides)
    if slot in mapped:  # a manifest mapping wins (an empty target: declared unmatched)
        return mapped[slot] or None
    names_b = set(_slot_label(b.slots["domain"], b.slots["slot"]).unique())
    if slot in names_b and slot not in set(mapped.values()):
        return slot  # identical names pair without inference, as in the alignment (one schema, one language)
    alignment = X.align_ontologies(a, b, overrides=mapped or None)
    hit = alignment.loc[alignment["slot_a"] == slot, "slot_b"]
    if not len(hit) or pd.isna(hit.iloc[0]) or str(hit.iloc[0]) in ("", "nan"):
        return None
    return str(hit.iloc[0])


# --- paired comparison of runs on the same gold (issue 17; `analysis.compare`) -------------------------


def _gold_fingerprint(scored: Scored) -> tuple[str, int, int]:
    """(convention, turns, order-free hash of every turn and gold slot): equal for runs on the same gold.
    Memoised on the run: the Overview's grouping and its comparison both ask."""
    return scored.memoised(("gold_fingerprint",), lambda: _fingerprint(scored))


def _fingerprint(scored: Scored) -> tuple[str, int, int]:
    from analysis.loading import dialogue_key

    turns = scored.turns[["dialogue_id", "turn_index"]]
    columns = ["dialogue_id", "turn_index", "domain", "slot", "gold_value"]
    gold = scored.slots.loc[scored.slots["gold_value"].notna(), columns]
    parts = [
        turns.assign(dialogue_id=dialogue_key(turns["dialogue_id"])),
        gold.assign(dialogue_id=dialogue_key(gold["dialogue_id"])).astype(str),
    ]
    digest = sum(int(pd.util.hash_pandas_object(p, index=False).sum()) for p in parts) % (1 << 64)
    return scored.convention.name, len(turns), digest


def gold_groups(scoreds: Sequence[Scored]) -> list[list[str]]:
    """The runs on the same gold (same turns and gold state, scored under one convention), groups of two
    or more runs in the order given, largest group first: the runs `analysis.compare` can pair."""
    groups: dict[tuple[str, int, int], list[str]] = {}
    for scored in scoreds:
        groups.setdefault(_gold_fingerprint(scored), []).append(_meta(scored).run_id)
    found = [g for g in groups.values() if len(g) >= 2]
    return sorted(found, key=len, reverse=True)


def pairwise_comparison(
    scoreds: Sequence[Scored],
    *,
    metrics: tuple[str, ...] = ("jga",),
    scopes: tuple[str, ...] = ("overall",),
    resamples: int = INTERVAL_RESAMPLES,
) -> Any:
    """`analysis.compare.compare` of the runs (every pair, b - a in the order given), for the pages: the
    paired bootstrap only (their charts show no McNemar, which costs ~35 ms a pair: 7 s for 20 runs). The
    runs are one of `gold_groups`, whose gold fingerprint already says they hold the same gold, so the
    per-pair gold check (~0.1 s a run) is skipped."""
    from analysis.compare import compare

    named = {_meta(s).run_id: s for s in scoreds}
    if len({_gold_fingerprint(s) for s in scoreds}) > 1:
        raise ValueError("paired comparison needs runs on the same gold: pick them from gold_groups")
    return compare(named, metrics=metrics, scopes=scopes, n_resamples=resamples, mcnemar=False, check_gold=False)


def significance_table(
    scoreds: Sequence[Scored], *, metric: str = "jga", resamples: int = INTERVAL_RESAMPLES
) -> pd.DataFrame:
    """Every ordered pair of the runs (row run, column run) with the overall delta row - column of
    `metric`, its interval, Holm-corrected p over all pairs and whether it is significant; for the
    Overview's matrix. `attrs["holm_note"]` says how the p-values were corrected."""
    result = pairwise_comparison(scoreds, metrics=(metric,), resamples=resamples)
    overall = result.overall(metric)
    forward = overall.assign(row=overall["b"], column=overall["a"])
    backward = overall.assign(
        row=overall["a"],
        column=overall["b"],
        delta=-overall["delta"],
        low=-overall["high"],
        high=-overall["low"],
        estimate_a=overall["estimate_b"],
        estimate_b=overall["estimate_a"],
    )
    keep = ["row", "column", "metric", "label", "delta", "low", "high", "p_value", "p_text", "p_holm", "p_holm_text"]
    table = pd.concat([forward, backward], ignore_index=True)[[*keep, "significant", "family_size"]]
    table.attrs["holm_note"] = result.holm_note
    table.attrs["runs"] = list(result.runs)
    return table.reset_index(drop=True)


def pair_deltas(
    a: Scored, b: Scored, *, metric: str = "jga", scope: str = "slot", resamples: int = INTERVAL_RESAMPLES
) -> pd.DataFrame:
    """Per domain or per slot (`scope`): `metric` of run b minus run a with its paired interval and
    Holm-corrected p over the groups (`analysis.compare`); for the delta charts."""
    result = pairwise_comparison([a, b], metrics=(metric,), scopes=(scope,), resamples=resamples)
    rows = result.deltas[result.deltas["scope"] == scope].reset_index(drop=True)
    rows.attrs["holm_note"] = (
        f"Per {scope}: p-values Holm-corrected over this pair's {int(rows['p_value'].notna().sum())} {scope}s "
        f"(a bootstrap p of 0 counts as 1/B, B = {resamples:,}); pale bars are not significant at {result.alpha:g}."
    )
    return rows


# --- click-through: from a chart's bar, point or cell to the turns behind it (issue 17) ------------------

# The columns of a click-through list of turns (a row opens the dialogue viewer at that turn).
TURN_LIST_COLUMNS = ["dialogue_id", "turn_index", "status", "n_wrong", "n_missed", "n_spurious", "user"]
PICKER_COLUMNS = ["dialogue_id", "n_turns", "error_turns", "first_error_turn", "compounding_run"]


def chart_pick(point: dict[str, Any], trace_names: Sequence[Any]) -> tuple[str | None, Any]:
    """(run, x) of a point clicked on a chart with one trace per run (`trace_names`, each trace named
    after its run; an interval band shares its line's name), on a trace several runs share (its entry the
    run of each point, `figures.trace_runs`) or on a run x value heatmap (its trace has no name: the run is
    the row, `y`). The run is None when the point names none.

    >>> chart_pick({"curve_number": 1, "x": "3"}, ["A", "B"]), chart_pick({"curve_number": 0, "x": 2, "y": "B"}, [None])
    (('B', '3'), ('B', 2))
    >>> chart_pick({"curve_number": 0, "point_index": 3, "x": 0, "y": 0.5}, [["A", "A", None, "B"]])
    ('B', 0)
    """
    curve = point.get("curve_number")
    name = trace_names[curve] if isinstance(curve, int) and 0 <= curve < len(trace_names) else None
    if isinstance(name, (list, tuple)):  # a shared trace: the point's own run
        index = point.get("point_index", point.get("point_number"))
        name = name[index] if isinstance(index, int) and 0 <= index < len(name) else None
        return (str(name) if name else None), point.get("x")
    run = name if name else point.get("y")
    return (str(run) if run is not None else None), point.get("x")


def compounding_runs(scored: Scored) -> pd.DataFrame:
    """Per dialogue (file order): turns, turns with an error, the first error turn (NaN: never wrong) and
    the length of its compounding run: the number of consecutive jointly wrong turns that start at the first
    error, the first error included (0 for a dialogue never wrong, 1 when the next turn is right again).
    The first three are `dialogue_index`'s."""
    counted = _compounding_counted(scored.turns)
    if counted is not None:
        return counted
    turns = scored.turns[["dialogue_id", "turn_index", "joint_correct"]].sort_values("turn_index", kind="stable")
    wrong = ~turns["joint_correct"].astype(bool)
    by = turns["dialogue_id"]
    since_first = wrong.groupby(by, sort=False).cummax()  # the first error and every turn after it
    recovered = (since_first & ~wrong).groupby(by, sort=False).cummax()  # from the first right turn after it
    run = (since_first & ~recovered).groupby(by, sort=False).sum()
    out = dialogue_index(scored)
    out["compounding_run"] = out["dialogue_id"].map(run).fillna(0).astype("int64")
    out[["n_turns", "error_turns"]] = out[["n_turns", "error_turns"]].astype("int64")
    return out[PICKER_COLUMNS]


def _compounding_counted(turns: pd.DataFrame) -> pd.DataFrame | None:
    """`compounding_runs` when each dialogue's turns are consecutive rows in turn order (a scored run's
    turns), counted per integer dialogue code instead of four group-bys on the dialogue id: the same frame
    (tested). None for any other order."""
    if not len(turns) or turns["dialogue_id"].isna().any():
        return None
    codes, ids = pd.factorize(turns["dialogue_id"])  # dialogues in order of first turn, as sort=False
    turn_index = turns["turn_index"].to_numpy()
    step = np.diff(codes)
    if (step < 0).any() or (step != 0).sum() != len(ids) - 1 or (np.diff(turn_index)[step == 0] <= 0).any():
        return None  # a dialogue's turns are not one run of rows in turn order
    n = len(ids)
    wrong = ~turns["joint_correct"].to_numpy(dtype=bool)
    row = np.arange(len(turns))
    end = len(turns)
    first_error = np.full(n, end)
    np.minimum.at(first_error, codes[wrong], row[wrong])
    since_first = row >= first_error[codes]  # the first error and every turn after it
    recovered_at = np.full(n, end)
    right_after = since_first & ~wrong
    np.minimum.at(recovered_at, codes[right_after], row[right_after])
    run = since_first & (row < recovered_at[codes])
    has_error = first_error < end
    return pd.DataFrame(
        {
            "dialogue_id": pd.array(ids, dtype="str"),
            "n_turns": np.bincount(codes, minlength=n).astype("int64"),
            "error_turns": np.bincount(codes, weights=wrong, minlength=n).astype("int64"),
            "first_error_turn": np.where(has_error, turn_index[np.minimum(first_error, end - 1)], np.nan),
            "compounding_run": np.bincount(codes, weights=run, minlength=n).astype("int64"),
        }
    )


def first_error_dialogues(scored: Scored, *, label: str) -> pd.DataFrame:
    """The dialogues behind one bin of `first_error_distribution`: those whose first error is at turn
    `label` ("none": the dialogues never wrong), with their errors and compounding run (file order)."""
    table = compounding_runs(scored)
    first = table["first_error_turn"]
    hit = first.isna() if str(label) == "none" else first == float(label)
    return table[hit].reset_index(drop=True)


def _turn_list(turns: pd.DataFrame) -> pd.DataFrame:
    status = np.where(turns["joint_correct"].astype(bool), "correct", "wrong")
    out = turns.assign(status=status)
    return out[TURN_LIST_COLUMNS].reset_index(drop=True)


def turns_at_depth(scored: Scored, *, turn_index: int) -> pd.DataFrame:
    """The turns behind one point of `depth_jga`: every turn at depth `turn_index` (file order), with its
    joint status and error counts."""
    turns = scored.turns
    return _turn_list(turns[turns["turn_index"] == int(turn_index)])


def slot_error_turns(scored: Scored, *, domain: str, slot: str) -> pd.DataFrame:
    """Every turn with an error on one slot (all confusions, no limit), with gold, predicted and outcome."""
    return slot_examples(scored, domain=domain, slot=slot, limit=len(scored.slots))


def _search_hits(scored: Scored, text: str) -> pd.Index:
    """Dialogue ids whose utterances, gold or predicted values, or slot names hold `text` (a literal
    substring, case-insensitive)."""
    turns, slots = scored.turns, scored.slots

    def holds(values: pd.Series) -> pd.Series:
        return values.fillna("").astype(str).str.contains(text, case=False, regex=False)

    said = holds(turns["user"]) | holds(turns["system"])
    names = _slot_label(slots["domain"], slots["slot"])
    in_slots = holds(slots["gold_display"]) | holds(slots["pred_display"]) | holds(names)
    return pd.Index(pd.unique(pd.concat([turns.loc[said, "dialogue_id"], slots.loc[in_slots, "dialogue_id"]])))


PICKER_SORTS = {
    "file order": None,
    "first error turn (earliest first)": ("first_error_turn", True),
    "number of errors (most first)": ("error_turns", False),
    "compounding run (longest first)": ("compounding_run", False),
}


def pick_dialogues(
    scored: Scored,
    *,
    search: str = "",
    sort: str = "file order",
    first_error: tuple[int, int] | None = None,
    min_errors: int = 0,
    min_run: int = 0,
) -> pd.DataFrame:
    """The dialogue picker's list: `compounding_runs` filtered (first error turn within `first_error`,
    inclusive, which leaves out dialogues never wrong; at least `min_errors` error turns; a compounding run
    of at least `min_run`), narrowed to dialogues whose text, values or slot names hold `search` (literal,
    case-insensitive), sorted by `sort` (one of `PICKER_SORTS`; ties in file order)."""
    table = compounding_runs(scored)
    keep = (table["error_turns"] >= int(min_errors)) & (table["compounding_run"] >= int(min_run))
    if first_error is not None:
        low, high = first_error
        keep &= table["first_error_turn"].between(float(low), float(high))
    if search.strip():
        keep &= table["dialogue_id"].isin(_search_hits(scored, search.strip()))
    table = table[keep]
    if sort not in PICKER_SORTS:
        raise ValueError(f"sort has to be one of {list(PICKER_SORTS)}, got {sort!r}")
    order = PICKER_SORTS[sort]
    if order is not None:
        column, ascending = order
        table = table.sort_values(column, ascending=ascending, kind="stable", na_position="last")
    return table.reset_index(drop=True)
