"""Per-slot correctness vectors (TripPy's `trippy_result.json` in the FGA repository): per turn, 0/1 per slot.

SuvodipDey/FGA ships TripPy's MultiWOZ 2.1 test results as `{dialogue: {turn: [30 x 0/1]}}`: 1 when the
slot's predicted value equals gold in that turn, 0 when not, in the slot order of TripPy's
`trippy/multiwoz21.json` config; turns are numbered from 0, in order. The file holds no values and no
gold state, only right or wrong, so it is read as a run whose every slot carries a placeholder on both
sides: `VALUE` in gold and in a right prediction, `WRONG` in a wrong one. JGA, slot accuracy, per-slot
accuracy, JGA by turn depth and per-domain JGA follow from the outcomes; every metric that needs values
or the gold state (slot F1, AGA, value confusions, the change-based metrics) is n/a for such a run
(`analysis.metrics.values_missing`). A vector file carries its gold: it is never paired with another.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from analysis.formats.engine import Collector, expect, json_type_name

FORMAT = "correctness-vectors"
VALUE = "(value not in file)"  # gold, and a right prediction: the file says only that they are equal
WRONG = "(wrong)"  # a wrong prediction: it differs from gold, the file does not say how
# TripPy's MultiWOZ 2.1 slots in its config's order (trippy/multiwoz21.json, `slots`), named as the 30
# MultiWOZ slots are named here (lower case, `book_` dropped: the FGA script's own `slot_dict` keys).
TRIPPY_SLOTS: tuple[tuple[str, str], ...] = (
    ("taxi", "leaveat"),
    ("taxi", "destination"),
    ("taxi", "departure"),
    ("taxi", "arriveby"),
    ("restaurant", "people"),
    ("restaurant", "day"),
    ("restaurant", "time"),
    ("restaurant", "food"),
    ("restaurant", "pricerange"),
    ("restaurant", "name"),
    ("restaurant", "area"),
    ("hotel", "people"),
    ("hotel", "day"),
    ("hotel", "stay"),
    ("hotel", "name"),
    ("hotel", "area"),
    ("hotel", "parking"),
    ("hotel", "pricerange"),
    ("hotel", "stars"),
    ("hotel", "internet"),
    ("hotel", "type"),
    ("attraction", "type"),
    ("attraction", "name"),
    ("attraction", "area"),
    ("train", "people"),
    ("train", "leaveat"),
    ("train", "destination"),
    ("train", "day"),
    ("train", "arriveby"),
    ("train", "departure"),
)
_BITS = frozenset({0, 1})  # also True/False and 0.0/1.0, which equal them (the script multiplies and sums)


def slot_names(n: int) -> tuple[tuple[str, str], ...]:
    """The (domain, slot) of each position of a vector of `n` entries: TripPy's 30 MultiWOZ slots, or for
    any other length positions named `vector` / `position i` (the file does not say which slots they are).

    >>> slot_names(30)[:2], slot_names(2)
    ((('taxi', 'leaveat'), ('taxi', 'destination')), (('vector', 'position 0'), ('vector', 'position 1')))
    """
    if n == len(TRIPPY_SLOTS):
        return TRIPPY_SLOTS
    return tuple(("vector", f"position {i}") for i in range(n))


def _is_vector(value: Any) -> bool:
    try:
        return type(value) is list and bool(value) and set(value) <= _BITS
    except TypeError:  # an unhashable entry
        return False


def _detect(records: Any) -> bool:
    """An object of dialogues, the first an object of turns whose first value is a list of 0/1 numbers."""
    if not isinstance(records, dict) or not records:
        return False
    for turns in records.values():
        if not isinstance(turns, dict):
            return False
        if turns:
            return _is_vector(next(iter(turns.values())))
    return False


def _problem(vector: Any, length: int | None) -> tuple[str, str | None] | None:
    """What is wrong with one turn's vector (the problem and the field), or None."""
    if type(vector) is not list:
        return f"a turn must be an array of 0/1 (one per slot), got {json_type_name(vector)}", None
    for position, entry in enumerate(vector):
        if isinstance(entry, bool):
            continue  # true/false are 1/0 to the script's arithmetic
        if not isinstance(entry, int | float):
            return f"each entry must be 1 (slot right) or 0 (slot wrong), got {json_type_name(entry)}", f"[{position}]"
        if entry not in _BITS:
            return f"each entry must be 1 (slot right) or 0 (slot wrong), got {entry}", f"[{position}]"
    if not vector:
        return "a turn must list one 0/1 per slot, got an empty array", None
    if length is not None and len(vector) != length:
        return (
            f"every turn must list the same slots: {len(vector)} entries here, {length} in the file's first turn",
            None,
        )
    return None


def _parse(records: Any, c: Collector) -> None:
    expect(c, records, dict, "the top level (an object of dialogues)", None)
    ids: list[str] = []
    indices: list[int] = []
    vectors: list[list[Any]] = []
    length: int | None = None
    for dialogue_id, turns in records.items():
        c.at(dialogue_id)
        expect(c, turns, dict, "a dialogue (an object of turns, each an array of 0/1)")
        previous = -1
        for raw_turn, vector in turns.items():
            c.at(dialogue_id, raw_turn)
            turn = c.turn_index(raw_turn)
            if turn <= previous:
                raise c.error(
                    f"turns must be listed in increasing order (the FGA script reads them in file order and "
                    f"counts distances by their numbers): turn {turn} after turn {previous}"
                )
            previous = turn
            if not _is_vector(vector) or (length is not None and len(vector) != length):
                found = _problem(vector, length)
                if found is not None:
                    raise c.error(*found)
            length = len(vector) if length is None else length
            c.add_turn(str(dialogue_id), turn)
            ids.append(str(dialogue_id))
            indices.append(turn)
            vectors.append(vector)
    if not vectors:
        return  # `finish` names an empty file
    correct = np.array(vectors, dtype=bool)  # one row per turn, one column per slot
    n_turns, n_slots = correct.shape
    names = slot_names(n_slots)
    row_turn = np.repeat(np.arange(n_turns), n_slots)
    turn_ids = pa.array(ids, type=pa.large_string()).take(pa.array(row_turn))
    turn_numbers = np.asarray(indices, dtype=np.int64)[row_turn]
    domains = pa.array([d for d, _ in names] * n_turns, type=pa.large_string())
    slots = pa.array([s for _, s in names] * n_turns, type=pa.large_string())
    gold = pa.repeat(pa.scalar(VALUE, type=pa.large_string()), n_turns * n_slots)
    pred = pa.array([VALUE, WRONG], type=pa.large_string()).take(pa.array((~correct.ravel()).astype(np.int64)))
    c.add_state_arrays("gold", turn_ids, turn_numbers, domains, slots, gold)
    c.add_state_arrays("pred", turn_ids, turn_numbers, domains, slots, pred)


VECTOR_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": FORMAT,
        "container": "json",
        "sides": "both",
        "summary": "per-slot correctness vectors (the FGA repository's trippy_result.json): per dialogue and turn, "
        "0/1 per slot, no values",
        "example": '{"MUL0001.json": {"0": [1, 1, 0, 1], "1": [1, 1, 0, 1]}}',
        "detect": _detect,
        "parse": _parse,
        "default_convention": "fga-trippy",
    },
)
