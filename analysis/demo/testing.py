"""Small in-memory runs for doctests, property tests and simulations (no files involved)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.conventions import Convention
from analysis.model import STATE_COLUMNS, AlignmentReport, Run, RunMeta
from analysis.scoring import Scored, score_run

State = Mapping[str, Mapping[str, str]]


def state_rows(dialogue_id: str, turn_index: int, state: State) -> list[tuple[str, int, str, str, str, str]]:
    return [
        (dialogue_id, turn_index, domain, slot, "=", value)
        for domain, slots in state.items()
        for slot, value in slots.items()
        if value != ""
    ]


def run_from_states(
    gold: Sequence[State] | Mapping[str, Sequence[State]],
    pred: Sequence[State] | Mapping[str, Sequence[State]],
    *,
    run_id: str = "run",
    convention: str = "exact",
    history: str = "predicted",
) -> Run:
    """A run from per-turn states; a plain list is one dialogue `d1`, a mapping is {dialogue: states}."""
    gold_d = gold if isinstance(gold, Mapping) else {"d1": gold}
    pred_d = pred if isinstance(pred, Mapping) else {"d1": pred}
    turns, gold_rows, pred_rows = [], [], []
    for dialogue_id, states in gold_d.items():
        for t, state in enumerate(states):
            turns.append({"dialogue_id": dialogue_id, "turn_index": t, "user": None, "system": None})
            gold_rows += state_rows(dialogue_id, t, state)
            predicted = pred_d.get(dialogue_id, [])
            if t < len(predicted):
                pred_rows += state_rows(dialogue_id, t, predicted[t])
    table = pd.DataFrame(turns).astype({"user": "str", "system": "str"})
    table["pred_missing"] = False
    return Run(
        RunMeta(run_id=run_id, system=run_id, convention=convention, history=history),
        table,
        pd.DataFrame(gold_rows, columns=STATE_COLUMNS).astype({"turn_index": "int64"}),
        pd.DataFrame(pred_rows, columns=STATE_COLUMNS).astype({"turn_index": "int64"}),
        frozenset(),
        AlignmentReport(gold_turns=len(table), pred_turns=len(table)),
    )


def scored_from_states(
    gold: Sequence[State] | Mapping[str, Sequence[State]],
    pred: Sequence[State] | Mapping[str, Sequence[State]],
    *,
    convention: str | Convention = "exact",
    run_id: str = "run",
) -> Scored:
    return score_run(run_from_states(gold, pred, run_id=run_id), convention)


def big_jsonl_run(seed: int, n_dialogues: int = 3000) -> bytes:
    """A large run in our JSONL format, as an upload's bytes: about 8 MB (42,000 turns) with the defaults,
    different per `seed` (so every upload has its own hash); for the memory tests and benchmarks.

    >>> len(big_jsonl_run(0, n_dialogues=2).splitlines())
    28
    """
    lines = []
    for d in range(n_dialogues):
        state: dict[str, dict[str, str]] = {}
        for t in range(14):
            state.setdefault(["hotel", "train", "taxi"][t % 3], {})[f"slot{t % 7}"] = f"value{(d + t + seed) % 50}"
            pred = {dom: dict(slots) for dom, slots in state.items()}
            pred.setdefault("hotel", {})["area"] = "west" if (d + t) % 4 else "east"
            lines.append(json.dumps({"dialogue_id": f"s{seed}-d{d}", "turn_index": t, "gold": state, "pred": pred}))
    return ("\n".join(lines) + "\n").encode()
