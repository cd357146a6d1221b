"""Runs on one gold with turns missing: which turns they share, and the runs restricted to those turns.

A run that lacks a turn (PPTOD's mwzeval output has no PMUL3688 turn 5) is not on "the same gold" as the
runs that hold it, so `analysis.compare` refuses the pair. Asked to (`shared_turns=True`, CLI
`compare --shared-turns`, the Overview's "Compare on shared turns"), every run is restricted to the turns all
of them hold, after checking that the gold states agree on those turns, and every turn left out is named
with the run that lacks it. A restricted run is scored exactly as before on the turns it keeps: metrics
that look back a turn (FGA, GCA, inherited errors) see the same gap in every run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.errors import InputError
from analysis.model import dialogue_key
from analysis.scoring import Scored

TURN = ["key", "turn_index"]
SHOWN = 3  # turns named in a sentence before "and N more"


def turn_gold(scored: Scored) -> pd.DataFrame:
    """One row per turn: `key` (dialogue pairing key), `turn_index`, `dialogue_id` and `gold` (an
    order-free hash of the turn's gold slots after the convention's normalisation; 0 for an empty state).
    Memoised on the run."""
    return scored.memoised(("turn_gold",), lambda: _turn_gold(scored))


def _turn_gold(scored: Scored) -> pd.DataFrame:
    turns = scored.turns[["tid", "dialogue_id", "turn_index"]]
    gold = scored.slots.loc[scored.slots["gold_value"].notna(), ["tid", "domain", "slot", "gold_value"]]
    hashed = pd.util.hash_pandas_object(gold[["domain", "slot", "gold_value"]].astype(str), index=False)
    per_turn = pd.Series(hashed.to_numpy(dtype="uint64"), index=gold["tid"].to_numpy()).groupby(level=0).sum()
    return pd.DataFrame(
        {
            "key": dialogue_key(turns["dialogue_id"]).to_numpy(),
            "turn_index": turns["turn_index"].to_numpy(),
            "dialogue_id": turns["dialogue_id"].to_numpy(),
            "gold": per_turn.reindex(turns["tid"].to_numpy(), fill_value=0).to_numpy(dtype="uint64"),
        }
    )


def gold_agrees(a: Scored, b: Scored) -> tuple[bool, int]:
    """(whether the two runs' gold states agree on every turn both hold, how many turns they share).

    >>> from analysis.demo.testing import scored_from_states
    >>> gold = {"d": [{}, {"hotel": {"area": "east"}}]}
    >>> gold_agrees(scored_from_states(gold, gold), scored_from_states({"d": [{}]}, {"d": [{}]}))
    (True, 1)
    """
    both = turn_gold(a).merge(turn_gold(b), on=TURN, suffixes=("_a", "_b"))
    return bool((both["gold_a"] == both["gold_b"]).all()), len(both)


def _source(scored: Scored) -> tuple[str, str | None]:
    meta = scored.metas[0]
    return (", ".join(meta.sources) or meta.run_id, "+".join(meta.formats) or None)


def _named(turns: pd.DataFrame) -> str:
    """`PMUL3688 turn 5`, `a turn 1, b turn 0 and 3 more`."""
    ordered = turns.sort_values(TURN)
    head = ordered.head(SHOWN)
    shown = [f"{d} turn {int(t)}" for d, t in zip(head["dialogue_id"], head["turn_index"], strict=True)]
    more = len(ordered) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


def restrict(scored: Scored, turns: pd.DataFrame) -> Scored:
    """The run on the turns (`key`, `turn_index`) given only; the run itself when it holds no other."""
    mine = turn_gold(scored)
    keep = pd.MultiIndex.from_frame(mine[TURN]).isin(pd.MultiIndex.from_frame(turns[TURN]))
    if keep.all():
        return scored
    kept_turns = scored.turns[keep]
    slots = scored.slots[scored.slots["tid"].isin(kept_turns["tid"])]
    return Scored(scored.convention, scored.metas, kept_turns, slots, scored.ontology, scored.alignment)


def on_shared_turns(runs: Mapping[str, Scored]) -> tuple[dict[str, Scored], dict[str, str]]:
    """Every run restricted to the turns all of them hold, and per run what was left out and why.

    The gold states must agree on the shared turns (else an `InputError` naming the run's file and the
    first turn whose gold differs), and the runs must share at least one turn.
    """
    names = list(runs)
    tables = {name: turn_gold(runs[name]) for name in names}
    first = names[0]
    shared = tables[first][[*TURN, "gold"]]
    for name in names[1:]:
        both = shared.merge(tables[name][[*TURN, "dialogue_id", "gold"]], on=TURN, suffixes=("", "_other"))
        odd = both[both["gold"] != both["gold_other"]]
        if len(odd):
            path, fmt = _source(runs[name])
            turn = odd.sort_values(TURN).iloc[0]
            raise InputError(
                path,
                fmt,
                f"not on the same gold as run {first!r}: gold states differ on {len(odd)} of the turns both hold "
                "(shared turns are compared only when their gold agrees)",
                dialogue_id=str(turn["dialogue_id"]),
                turn=int(turn["turn_index"]),
            )
        shared = both[[*TURN, "gold"]]
    if not len(shared):
        path, fmt = _source(runs[names[-1]])
        raise InputError(path, fmt, f"shares no turn with run {first!r}: nothing to compare")
    restricted = {name: restrict(runs[name], shared) for name in names}
    left_out: dict[str, str] = {}
    index = pd.MultiIndex.from_frame(shared[TURN])
    for name in names:
        mine = tables[name]
        extra = mine[~pd.MultiIndex.from_frame(mine[TURN]).isin(index)]
        if not len(extra):
            continue
        lacking = [
            other
            for other in names
            if other != name
            and not pd.MultiIndex.from_frame(extra[TURN]).isin(pd.MultiIndex.from_frame(tables[other][TURN])).all()
        ]
        turns = "turn" if len(extra) == 1 else "turns"
        left_out[name] = (
            f"{len(extra):,} {turns} of {len(mine):,} not compared ({_named(extra)}): missing from {', '.join(lacking)}"
        )
    return restricted, left_out


def missing_turns(a: Scored, b: Scored) -> tuple[int, int, str]:
    """(turns only a holds, turns only b holds, the first few of them named) for two runs."""
    both = turn_gold(a)[[*TURN, "dialogue_id"]].merge(
        turn_gold(b)[[*TURN, "dialogue_id"]], on=TURN, how="outer", indicator=True, suffixes=("", "_b")
    )
    both["dialogue_id"] = both["dialogue_id"].fillna(both["dialogue_id_b"])
    odd = both[both["_merge"] != "both"]
    return int((odd["_merge"] == "left_only").sum()), int((odd["_merge"] == "right_only").sum()), _named(odd)


def group_by_gold(scoreds: Sequence[tuple[str, Scored]], *, shared_turns: bool) -> tuple[list[list[str]], dict]:
    """Runs grouped by gold: without `shared_turns`, the same turns and gold; with it, gold that agrees on
    the turns both hold (and at least half of each run's turns shared), missing turns allowed. Returns the
    groups of two or more runs (largest first) and, per run in no group, why (a sentence)."""
    groups: list[list[tuple[str, Scored]]] = []
    reasons: dict[str, str] = {}
    near_heads: set[str] = set()  # runs another run's sentence already names (on their gold, turns differ)
    for name, scored in scoreds:
        placed = False
        near: tuple[str, int, int, str] | None = None
        for group in groups:
            head_name, head = group[0]
            if head.convention.name != scored.convention.name:
                continue
            agrees, n_shared = gold_agrees(head, scored)
            if not agrees:
                continue
            only_head, only_run, named = missing_turns(head, scored)
            if not only_head and not only_run:
                group.append((name, scored))
                placed = True
                break
            mine, theirs = len(turn_gold(scored)), len(turn_gold(head))
            if n_shared * 2 < min(mine, theirs):
                continue
            if shared_turns:
                group.append((name, scored))
                placed = True
                break
            near = near or (head_name, only_head, only_run, named)
        if not placed:
            groups.append([(name, scored)])
            if near:
                head_name, only_head, only_run, named = near
                near_heads.add(head_name)
                reasons[name] = (
                    f"{name} is on the gold of {head_name} but the turns differ ({only_head:,} only in {head_name}, "
                    f"{only_run:,} only in {name}: {named}); turn on “Compare on shared turns” to compare them on "
                    "the turns both hold"
                )
    found = [[n for n, _ in g] for g in groups if len(g) >= 2]
    grouped = {n for g in found for n in g}
    for group in groups:
        name, scored = group[0]
        if len(group) == 1 and name not in reasons and name not in near_heads:
            reasons[name] = f"{name} shares its gold (turns and gold states, convention) with no other selected run"
    return sorted(found, key=len, reverse=True), {n: r for n, r in reasons.items() if n not in grouped}
