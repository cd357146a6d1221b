"""Error diagnostics over scored tables: error origins, first errors, and pairings of two runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.model import dialogue_key
from analysis.outcomes import Outcome
from analysis.scoring import Scored

AGREEMENT = ("both_correct", "only_a", "only_b", "both_wrong")
AGREEMENT_DTYPE = pd.CategoricalDtype(list(AGREEMENT))


def error_origins(scored: Scored) -> pd.DataFrame:
    """Every error (slot row not `correct`) marked `inherited` or `new`.

    Inherited: the same wrong triple (same outcome, gold value and predicted value) was already wrong
    at the previous turn of the dialogue and the gold value of that slot did not change; everything
    else (including every error at turn 0) is new. Inherited errors are what error compounding looks
    like: the tracker carried an old mistake forward.
    """
    slots = scored.slots
    errors = slots.loc[
        slots["outcome"] != Outcome.CORRECT.key,
        [
            "run_id",
            "tid",
            "dialogue_id",
            "turn_index",
            "domain",
            "slot",
            "gold_value",
            "pred_value",
            "outcome",
        ],
    ]
    previous = errors.assign(turn_index=errors["turn_index"] + 1)[
        ["run_id", "dialogue_id", "turn_index", "domain", "slot", "gold_value", "pred_value", "outcome"]
    ].rename(columns={"gold_value": "prev_gold", "pred_value": "prev_pred", "outcome": "prev_outcome"})
    joined = errors.merge(previous, on=["run_id", "dialogue_id", "turn_index", "domain", "slot"], how="left")
    same_gold = (joined["gold_value"] == joined["prev_gold"]).fillna(False) | (
        joined["gold_value"].isna() & joined["prev_gold"].isna() & joined["prev_outcome"].notna()
    )
    same_pred = (joined["pred_value"] == joined["prev_pred"]).fillna(False) | (
        joined["pred_value"].isna() & joined["prev_pred"].isna() & joined["prev_outcome"].notna()
    )
    inherited = (joined["outcome"].astype("str") == joined["prev_outcome"].astype("str")) & same_gold & same_pred
    joined["origin"] = pd.Categorical(np.where(inherited, "inherited", "new"), categories=["new", "inherited"])
    return joined.drop(columns=["prev_gold", "prev_pred", "prev_outcome"])


def origins_by_turn_depth(scored: Scored) -> pd.DataFrame:
    """Counts of new and inherited errors per run and turn index."""
    origins = error_origins(scored)
    table = origins.groupby(["run_id", "turn_index", "origin"], observed=False).size().rename("n_errors")
    return table.reset_index()


def first_error_turns(scored: Scored) -> pd.DataFrame:
    """Per dialogue, the first turn that is not jointly correct (NaN when the dialogue has none)."""
    turns = scored.turns
    wrong = turns[~turns["joint_correct"]]
    first = wrong.groupby(["run_id", "dialogue_id"], sort=False)["turn_index"].min().rename("first_error_turn")
    dialogues = turns.groupby(["run_id", "dialogue_id"], sort=False).agg(n_turns=("turn_index", "size"))
    return dialogues.join(first).reset_index()


def _turn_join(a: Scored, b: Scored) -> tuple[pd.DataFrame, dict[str, int]]:
    cols = ["dialogue_id", "turn_index", "joint_correct"]
    left = a.turns[[*cols, "tid"]].assign(_key=dialogue_key(a.turns["dialogue_id"]))
    right = b.turns[[*cols, "tid"]].assign(_key=dialogue_key(b.turns["dialogue_id"]))
    joined = left.merge(right, on=["_key", "turn_index"], how="outer", suffixes=("_a", "_b"), indicator=True)
    counts = {
        "paired_turns": int((joined["_merge"] == "both").sum()),
        "only_in_a": int((joined["_merge"] == "left_only").sum()),
        "only_in_b": int((joined["_merge"] == "right_only").sum()),
    }
    paired = joined[joined["_merge"] == "both"].drop(columns=["_merge", "_key", "dialogue_id_b"])
    return paired.rename(columns={"dialogue_id_a": "dialogue_id"}), counts


def compounding(predicted_history: Scored, gold_history: Scored) -> dict[str, object]:
    """Pair the predicted-history (JGA) and gold-history (GJGA) runs of one system on the same turns.

    Returns `jga`, `gjga`, `gap` (GJGA - JGA, the cost of error compounding), the unpaired turn
    counts, and `by_turn`: per turn index both accuracies and the gap. Only paired turns count.
    """
    paired, counts = _turn_join(predicted_history, gold_history)
    by_turn = (
        paired.groupby("turn_index")
        .agg(jga=("joint_correct_a", "mean"), gjga=("joint_correct_b", "mean"), n_turns=("tid_a", "size"))
        .reset_index()
    )
    by_turn["gap"] = by_turn["gjga"] - by_turn["jga"]
    jga = float(paired["joint_correct_a"].mean()) if len(paired) else float("nan")
    gjga = float(paired["joint_correct_b"].mean()) if len(paired) else float("nan")
    return {"jga": jga, "gjga": gjga, "gap": gjga - jga, **counts, "by_turn": by_turn}


def agreement(a: Scored, b: Scored) -> tuple[pd.DataFrame, dict[str, int]]:
    """Cross-lingual (or cross-ontology) pairing of two runs over the same dialogues and turns.

    Correctness is judged within each run first (values differ across languages), then compared:
    per paired turn one of `both_correct`, `only_a`, `only_b`, `both_wrong`. Returns the per-turn
    table (with both runs' `tid`) and the unpaired counts.
    """
    paired, counts = _turn_join(a, b)
    ca = paired["joint_correct_a"].to_numpy(dtype=bool)
    cb = paired["joint_correct_b"].to_numpy(dtype=bool)
    codes = np.where(ca & cb, 0, np.where(ca, 1, np.where(cb, 2, 3)))
    paired["agreement"] = pd.Categorical.from_codes(codes, dtype=AGREEMENT_DTYPE)
    return paired.reset_index(drop=True), counts


def agreement_matrix(a: Scored, b: Scored, *, by: str | None = None) -> pd.DataFrame:
    """Counts and shares of the four agreement cells, overall or per turn-level column `by`."""
    paired, _ = agreement(a, b)
    if by is not None:
        paired = paired.merge(a.turns[["tid", by]], left_on="tid_a", right_on="tid")
    keys = [by] if by else []
    counts = paired.groupby([*keys, "agreement"], observed=False).size().rename("n_turns").reset_index()
    total = counts.groupby(keys)["n_turns"].transform("sum") if keys else counts["n_turns"].sum()
    counts["share"] = counts["n_turns"] / total
    return counts
