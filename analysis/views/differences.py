"""The turns behind a difference between two runs: where exactly one of them is right, overall, in one
domain or on one slot. What a delta bar, a significance-matrix cell or a heatmap cell opens on every page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import diagnostics as D
from analysis.outcomes import Outcome
from analysis.scoring import Scored
from analysis.views.common import ABSENT

# The two lists a difference opens, in this order: turns only run A gets right, turns only run B gets right.
SIDES = ("only_a", "only_b")
DIFFERENCE_COLUMNS = ["dialogue_id", "turn_index", "user", "errors_a", "errors_b"]


def _in_group(slots: pd.DataFrame, domain: str | None, slot: str | None, own: str | None = None) -> pd.Series:
    """The slot rows of the group: `domain` (and `slot`), or, with `own`, the rows the run itself names so
    (a domain, or a `domain-slot` label when `slot` is given): another language's name of the group."""
    if own is not None:
        names = slots["domain"].astype("str")
        if slot is not None:
            names = names + "-" + slots["slot"].astype("str")
        return names == own
    keep = slots["domain"].astype("str") == domain
    if slot is not None:
        keep &= slots["slot"].astype("str") == slot
    return keep


def _group_facts(scored: Scored, domain: str, slot: str | None, own: str | None) -> tuple[pd.Index, pd.Index]:
    """(tids where the group occurs in gold or prediction, tids where it is wrong) of one run."""
    slots = scored.slots
    rows = slots.loc[_in_group(slots, domain, slot, own), ["tid", "outcome"]]
    wrong = rows.loc[rows["outcome"] != Outcome.CORRECT.key, "tid"]
    return pd.Index(rows["tid"].unique()), pd.Index(wrong.unique())


def _errors(scored: Scored, tids: pd.Series, domain: str | None, slot: str | None, own: str | None) -> pd.Series:
    """Per tid: its wrong slots (of the group, when one is given) as `domain-slot: gold → predicted`."""
    slots = scored.slots
    keep = slots["tid"].isin(tids) & (slots["outcome"] != Outcome.CORRECT.key)
    if domain is not None:
        keep &= _in_group(slots, domain, slot, own)
    errors = slots[keep]
    gold = errors["gold_display"].astype("str").fillna(ABSENT)
    pred = errors["pred_display"].astype("str").fillna(ABSENT)
    text = errors["domain"].astype("str") + "-" + errors["slot"].astype("str") + ": " + gold + " → " + pred
    frame = pd.DataFrame({"tid": errors["tid"].to_numpy(), "text": text.to_numpy()})
    return frame.groupby("tid", sort=False)["text"].agg("; ".join)


def differing_turns(
    a: Scored,
    b: Scored,
    *,
    domain: str | None = None,
    slot: str | None = None,
    own_b: str | None = None,
    within: Sequence[int] | None = None,
    limit: int = 1000,
) -> dict[str, Any]:
    """The paired turns (same dialogue and turn) where exactly one of runs A and B is right, split into
    `only_a` (A right, B wrong) and `only_b` (B right, A wrong), each sorted by dialogue and turn and cut at
    `limit` rows (their counts are whole).

    Right means the whole state (no `domain`), the state restricted to `domain` (on the turns where the
    domain occurs in gold or prediction of either run), or the slot `domain`-`slot` (on the turns where it
    occurs in either run): the turn-level facts behind JGA, per-domain JGA and a slot's accuracy. `own_b`: run
    B's own name of the group when its ontology names it otherwise (another language: a domain, or a
    `domain-slot` label with `slot`), as the cross-lingual alignment pairs them. `within`: run A's turn ids
    (`tid`) the pairs are restricted to (a slice of A's turns: `slices.slice_differences`). A delta of
    another metric (slot F1, FGA) moves with these turns but also with partial credit, which no list of whole
    turns shows. Returns `only_a`, `only_b` (columns `DIFFERENCE_COLUMNS`: `errors_a`/`errors_b` each run's
    wrong slots of the group, `gold → predicted`, `—` for absent) and `counts`: per side its turns and
    dialogues, and `paired_turns` (the turns the two lists are drawn from).

    >>> from analysis.demo.testing import scored_from_states
    >>> gold = [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}]
    >>> a = scored_from_states(gold, [{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}], run_id="a")
    >>> b = scored_from_states(gold, [{"hotel": {"area": "west"}}, gold[1]], run_id="b")
    >>> found = differing_turns(a, b)
    >>> found["only_a"][["turn_index", "errors_b"]].to_dict("records")
    [{'turn_index': 0, 'errors_b': 'hotel-area: east → west'}]
    >>> found["only_b"][["turn_index", "errors_a"]].to_dict("records")
    [{'turn_index': 1, 'errors_a': 'hotel-stars: 4 → —'}]
    >>> differing_turns(a, b, domain="hotel", slot="stars")["counts"]["only_a"]
    {'turns': 0, 'dialogues': 0}
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}] * 2, [{"旅馆": {"区域": "西"}}] * 2, run_id="zh")
    >>> differing_turns(a, zh, domain="hotel", slot="area", own_b="旅馆-区域")["only_a"]["errors_b"].tolist()
    ['旅馆-区域: 东 → 西', '旅馆-区域: 东 → 西']
    """
    if slot is not None and domain is None:
        raise ValueError(f"slot {slot!r} needs its domain: pass domain= as well")
    paired, _ = D.agreement(a, b)
    if domain is None:
        right_a = paired["joint_correct_a"].to_numpy(dtype=bool)
        right_b = paired["joint_correct_b"].to_numpy(dtype=bool)
        counted = np.ones(len(paired), dtype=bool)
    else:
        occurs_a, wrong_a = _group_facts(a, domain, slot, None)
        occurs_b, wrong_b = _group_facts(b, domain, slot, own_b)
        counted = (paired["tid_a"].isin(occurs_a) | paired["tid_b"].isin(occurs_b)).to_numpy()
        right_a = ~paired["tid_a"].isin(wrong_a).to_numpy()
        right_b = ~paired["tid_b"].isin(wrong_b).to_numpy()
    if within is not None:
        counted = counted & paired["tid_a"].isin(within).to_numpy()
    side = np.where(counted & right_a & ~right_b, 0, np.where(counted & right_b & ~right_a, 1, -1))
    found = paired.loc[side >= 0, ["dialogue_id", "turn_index", "tid_a", "tid_b"]].assign(side=side[side >= 0])
    found = found.sort_values(["dialogue_id", "turn_index"], kind="stable")
    counts: dict[str, Any] = {"paired_turns": int(counted.sum())}
    out: dict[str, Any] = {"counts": counts}
    for code, name in enumerate(SIDES):
        rows = found[found["side"] == code]
        counts[name] = {"turns": len(rows), "dialogues": int(rows["dialogue_id"].nunique())}
        rows = rows.head(limit)
        table = rows[["dialogue_id", "turn_index"]].reset_index(drop=True)
        users = rows["tid_a"].map(a.turns.set_index("tid")["user"]).astype("object").fillna("")
        table["user"] = users.astype("str").to_numpy()
        for letter, scored, own in (("a", a, None), ("b", b, own_b)):
            tids = rows[f"tid_{letter}"]
            text = tids.map(_errors(scored, tids, domain, slot, own)).astype("object").fillna("").astype("str")
            table[f"errors_{letter}"] = text.to_numpy()
        table["dialogue_id"] = table["dialogue_id"].astype("str")
        table["turn_index"] = table["turn_index"].astype("int64")
        out[name] = table[DIFFERENCE_COLUMNS]
    return out


def delta_group(deltas: pd.DataFrame, group: str) -> tuple[str | None, str | None]:
    """(domain, slot) of the row of a `pair_deltas` table whose `group` label a clicked bar names; (None,
    None) for a label the table does not hold.

    >>> delta_group(pd.DataFrame({"group": ["hotel-area"], "domain": ["hotel"], "slot": ["area"]}), "hotel-area")
    ('hotel', 'area')
    >>> delta_group(pd.DataFrame({"group": ["hotel-area"], "domain": ["hotel"], "slot": ["area"]}), "hotel-area · 3 dlg")
    ('hotel', 'area')
    """
    # A bar's name may carry its support after " · " (`figures.delta_bar`: "hotel-area · 12 dlg").
    name = str(group).split(" · ")[0]
    rows = deltas[deltas["group"].astype("str") == name]
    if rows.empty:
        return None, None
    row = rows.iloc[0]
    domain = row.get("domain")
    slot = row.get("slot")
    return (None if pd.isna(domain) else str(domain)), (None if slot is None or pd.isna(slot) else str(slot))


def language_cell(matrix: pd.DataFrame, *, by: str, column: str, key: str) -> tuple[str, str, str | None, str] | None:
    """The clicked cell of a language heatmap (`figures.language_heatmap` of a `language_matrix`): (its run,
    the pivot's domain, the pivot's slot when `by` is "slot", the run's own name of the group); None for a
    cell with no counterpart in that run or a label the matrix does not hold."""
    from analysis.figures.crosslingual import language_labels

    labels = language_labels(matrix)
    run = next((r for r, shown in labels.items() if column in (shown, f"{shown} (pivot)")), None)
    rows = matrix[(matrix["run_id"].astype("str") == run) & (matrix["key"].astype("str") == key)]
    if run is None or rows.empty or pd.isna(rows["own"].iloc[0]):
        return None
    domain = str(rows["domain"].iloc[0])
    slot = key[len(domain) + 1 :] if by == "slot" else None
    return run, domain, slot, str(rows["own"].iloc[0])
