"""The Dialogue viewer's views: the dialogue index and picker, one dialogue's turns and slot diff, the
viewer's filters and turn steps, and the slot filter across ontologies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import diagnostics as D
from analysis.model import UNPARSEABLE_COLUMN, UNPARSEABLE_REASON_COLUMN, UNPARSEABLE_TEXT_COLUMN, dialogue_key
from analysis.outcomes import Outcome
from analysis.scoring import Scored
from analysis.views.common import ABSENT, _slot_label, attribute_columns

OUTCOME_LABELS = {o.key: o.label for o in Outcome}  # as the pages' outcome filters read them


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
    new and inherited error counts, what changed in the gold and predicted states this turn, and for a
    turn whose predicted text could not be read, that text and the reason (`pred_unparseable_text`,
    `pred_unparseable_reason`; "" elsewhere).
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
    if UNPARSEABLE_COLUMN in sub.turns:  # a prediction whose text did not parse says so, even with 0 errors
        flags = sub.turns.set_index("turn_index")[UNPARSEABLE_COLUMN].reindex(turns["turn_index"])
        turns.loc[flags.fillna(False).to_numpy(dtype=bool), "status"] = f"{Outcome.UNPARSEABLE.shown} prediction"
    # ... and shows its text as the model wrote it, with the reason ("" on every other turn)
    for column in (UNPARSEABLE_TEXT_COLUMN, UNPARSEABLE_REASON_COLUMN):
        if column in sub.turns:
            kept = sub.turns.set_index("turn_index")[column].reindex(turns["turn_index"])
            turns[column] = kept.fillna("").astype(str).to_numpy()
        else:
            turns[column] = ""
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


def first_dialogue_with_errors(index: pd.DataFrame) -> str | None:
    """The first dialogue of `dialogue_index` with an error turn (the viewer's starting point)."""
    hit = index[index["error_turns"] > 0]
    return str(hit["dialogue_id"].iloc[0]) if len(hit) else None


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


PICKER_COLUMNS = ["dialogue_id", "n_turns", "error_turns", "first_error_turn", "compounding_run"]


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
