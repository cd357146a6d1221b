"""Systematic causes of a run's errors as review items: a naming mismatch or a value rule, tagged once for
every error episode it causes.

`systematic_causes(scored, run)` lists, for one run under its convention:

* every **naming mismatch** of `analysis.vocabulary` (a predicted name and a gold name carrying the same
  values): its error episodes are those on either name;
* every convention switch that Reconcile finds responsible for turns wrong under the run's convention and
  right under the informative other convention (`analysis.reconcile.gap.informative_pair`: the one flipping
  the most turns), when it is a rule about values or names (value normalisation, whitespace, a predicted
  none, dontcare, fuzzy matching, slot naming): its error episodes are those of the responsible slots.

Each cause has a suggested tag from the review taxonomy (`CAUSE_TAGS`) and a comment naming it;
`cause_items` gives its episodes as the Review page's queue rows, for `AnnotationStore.annotate_many`.
"""

from __future__ import annotations

import pandas as pd

from analysis.conventions import CONVENTIONS, convention_name
from analysis.model import Run
from analysis.outcomes import ERROR_OUTCOMES
from analysis.reconcile.core import CAUSE_LABELS, reconcile
from analysis.reconcile.gap import gap_conventions, informative_pair
from analysis.review.analysis import episode_turns, error_episodes, error_items
from analysis.scoring import Scored
from analysis.vocabulary import MISMATCH, vocabulary

__all__ = ["CAUSE_COLUMNS", "CAUSE_TAGS", "cause_items", "systematic_causes"]

NAMING = "naming"
# The review tag a cause suggests (`analysis.review.items.DEFAULT_TAGS`).
CAUSE_TAGS = {
    NAMING: "normalisation mismatch",
    "slot_alias": "normalisation mismatch",
    "normaliser": "normalisation mismatch",
    "whitespace": "normalisation mismatch",
    "pred_none": "normalisation mismatch",
    "matching": "normalisation mismatch",
    "dontcare": "dontcare confusion",
}
CAUSE_COLUMNS = ["cause_id", "cause", "label", "detail", "suggested_tag", "comment", "n_episodes", "n_turns"]
_TRADE = CONVENTIONS["trade"]


def _slot_key(domain: pd.Series, slot: pd.Series) -> pd.Series:
    """A slot name as both conventions of a pair can be compared: TRADE's lower-cased aliases, no spaces."""
    pairs = pd.DataFrame({"d": domain.astype("str"), "s": slot.astype("str")})
    distinct = pairs.drop_duplicates()
    keys = [
        "-".join(convention_name(d, s.replace(" ", ""), _TRADE))
        for d, s in zip(distinct["d"], distinct["s"], strict=True)
    ]
    lookup = pd.Series(keys, index=pd.MultiIndex.from_frame(distinct))
    return pd.Series(lookup.reindex(pd.MultiIndex.from_frame(pairs)).to_numpy(), index=domain.index, dtype="str")


def _cause_turns(scored: Scored, run: Run | None) -> pd.DataFrame:
    """Error turns of the run per cause: `cause_id`, `cause`, `detail` and the error row's `item_key`."""
    errors = error_items(scored)
    parts = []
    table = vocabulary(scored, run)
    for row in table[table["kind"] == MISMATCH].itertuples(index=False):
        on = ((errors["domain"] == row.domain) & (errors["slot"] == row.slot)) | (
            (errors["domain"] == row.gold_domain) & (errors["slot"] == row.gold_slot)
        )
        detail = f"predicted {row.domain}-{row.slot} vs gold {row.gold_domain}-{row.gold_slot}"
        parts.append(
            pd.DataFrame(
                {
                    "cause_id": f"{NAMING}:{row.domain}-{row.slot}",
                    "cause": NAMING,
                    "detail": detail,
                    "item_key": errors.loc[on, "item_key"].to_numpy(),
                }
            )
        )
    if run is not None:
        rec = reconcile(run, gap_conventions(scored.convention.name))
        pair = informative_pair(rec)
        own = scored.convention.name
        if pair is not None and pair[0] == own:
            slots = rec.responsible(*pair)
            wrong_here = slots["outcome_a"].str.contains("|".join(ERROR_OUTCOMES), regex=True)
            chosen = slots[wrong_here & slots["cause"].isin(list(CAUSE_TAGS)) & (slots["slot"] != "")]
            if len(parts):  # slot naming is said by the naming mismatches already
                chosen = chosen[chosen["cause"] != "slot_alias"]
            if len(chosen):
                keys = chosen.assign(key=_slot_key(chosen["domain"], chosen["slot"]))
                rows = errors.assign(key=_slot_key(errors["domain"], errors["slot"]))
                joined = rows.merge(
                    keys[["dialogue_id", "turn_index", "key", "cause"]].drop_duplicates(),
                    on=["dialogue_id", "turn_index", "key"],
                )
                parts.append(
                    pd.DataFrame(
                        {
                            "cause_id": joined["cause"].to_numpy(),
                            "cause": joined["cause"].to_numpy(),
                            "detail": f"{own} vs {pair[1]}",
                            "item_key": joined["item_key"].to_numpy(),
                        }
                    )
                )
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="str") for c in ("cause_id", "cause", "detail", "item_key")})
    return pd.concat(parts, ignore_index=True).drop_duplicates(["cause_id", "item_key"])


def _episodes(scored: Scored) -> tuple[pd.DataFrame, pd.DataFrame]:
    errors = error_items(scored)
    return error_episodes(errors), episode_turns(errors)


def systematic_causes(scored: Scored, run: Run | str | None = None) -> pd.DataFrame:
    """One row per systematic cause of the run's errors (columns `CAUSE_COLUMNS`): `cause_id` (what
    `cause_items` takes), `cause`, `label`, `detail`, `suggested_tag`, `comment` (what a tag of all its
    items says), `n_episodes` and `n_turns` (its error episodes and error turns). Most episodes first."""
    loaded = run if isinstance(run, Run) else None
    turns = _cause_turns(scored, loaded)
    if turns.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c.startswith("n_") else "str") for c in CAUSE_COLUMNS})
    _, by_turn = _episodes(scored)
    joined = turns.merge(by_turn[["item_key", "episode_key"]], on="item_key")
    out = (
        joined.groupby(["cause_id", "cause", "detail"], sort=False)
        .agg(n_episodes=("episode_key", "nunique"), n_turns=("item_key", "nunique"))
        .reset_index()
    )
    labels = {**CAUSE_LABELS, NAMING: "naming mismatch"}
    out["label"] = out["cause"].map(labels)
    out["suggested_tag"] = out["cause"].map(CAUSE_TAGS)
    out["comment"] = "systematic cause: " + out["label"] + " (" + out["detail"] + ")"
    out = out.sort_values(["n_episodes", "cause_id"], ascending=[False, True], kind="stable")
    return out[CAUSE_COLUMNS].reset_index(drop=True).astype({"n_episodes": "int64", "n_turns": "int64"})


def cause_items(scored: Scored, run: Run | str | None, *, cause_id: str) -> pd.DataFrame:
    """The error episodes of one cause, as the Review queue's rows (`error_episodes` columns)."""
    loaded = run if isinstance(run, Run) else None
    turns = _cause_turns(scored, loaded)
    episodes, by_turn = _episodes(scored)
    keys = set(
        by_turn.loc[by_turn["item_key"].isin(set(turns.loc[turns["cause_id"] == cause_id, "item_key"])), "episode_key"]
    )
    return episodes[episodes["item_key"].isin(keys)].reset_index(drop=True)
