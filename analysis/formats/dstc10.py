"""DSTC10 track 2 task 1 files (spoken MultiWOZ-style DST): a list of bare states aligned by position.

The organisers' `labels.json` and a team's entry have one shape (alexa/alexa-with-dstc10-track2-dataset,
`task1/data/output_schema.json`): a JSON list, one state per instance, `{domain: {"semi"|"book": {slot:
[values]}}}`. Instances carry no ids; the official scorer (`task1/scripts/scores.py`) pairs entry and labels
by position, so instance i is read as dialogue `i`, turn 0, on both sides.

Values are lists. One of plain values (not blank, no `|`, not starting with `[`) is written `a|b` like any
list value here; any other list (`[]`, `[""]`, a value holding `|`) is kept as its JSON text, sorted and
without duplicates, so that the scorer's rules still see it: for `scores.py` a slot whose key is present
holds a value, even an empty list (a predicted `[""]` breaks the joint goal as a spurious slot would).
`analysis.dstc10_rules.value_list` reads both forms back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import Any

from analysis.formats.engine import Collector, expect
from analysis.formats.states import EQ, MAX_VALUE_CHARS, StateError, Triple, _json_type

# The 19 (domain, part, slot) keys `scores.py` scores, in its order (the task's output schema).
DSTC10_SLOTS: tuple[tuple[str, str, str], ...] = (
    ("restaurant", "book", "people"),
    ("restaurant", "book", "day"),
    ("restaurant", "book", "time"),
    ("restaurant", "semi", "food"),
    ("restaurant", "semi", "pricerange"),
    ("restaurant", "semi", "name"),
    ("restaurant", "semi", "area"),
    ("hotel", "book", "people"),
    ("hotel", "book", "rooms"),
    ("hotel", "book", "day"),
    ("hotel", "book", "stay"),
    ("hotel", "semi", "name"),
    ("hotel", "semi", "area"),
    ("hotel", "semi", "pricerange"),
    ("hotel", "semi", "stars"),
    ("hotel", "semi", "type"),
    ("attraction", "semi", "type"),
    ("attraction", "semi", "name"),
    ("attraction", "semi", "area"),
)
_KEYS = frozenset(DSTC10_SLOTS)
_NAMES = frozenset((d, s) for d, _, s in DSTC10_SLOTS)
PARTS = ("semi", "book")
DETECT_ITEMS = 200  # instances the detector looks at


def encode_values(values: list[str]) -> str:
    """One slot's value list as one value string (see the module docstring).

    >>> encode_values(["cheap"]), encode_values(["Cheap", "cheap"]), encode_values([]), encode_values(["", "x"])
    ('cheap', 'Cheap|cheap', '[]', '["", "x"]')
    """
    if values and all(v.strip() and "|" not in v and not v.startswith("[") for v in values):
        return "|".join(values)
    return json.dumps(sorted(set(values)), ensure_ascii=False)


def slot_name(domain: str, part: str, slot: str) -> str:
    """A slot's name: its bare name (`people`, `food`), as MultiWOZ files here name them, unless that would
    give a slot outside the 19 the name of one inside (`restaurant.semi.time` beside `book.time`); such a
    slot, or one under a part other than semi/book, is named `slot (part)`.

    >>> slot_name("restaurant", "book", "time"), slot_name("restaurant", "semi", "time"), slot_name("train", "semi", "day")
    ('time', 'time (semi)', 'day')
    """
    if (domain, part, slot) in _KEYS or (part in PARTS and (domain, slot) not in _NAMES):
        return slot
    return f"{slot} ({part})"


def state_triples(state: Any, field: str = "state") -> list[Triple]:
    """One instance's state as rows; every value a list of strings, as the task's output schema says."""
    if not isinstance(state, dict):
        raise StateError(
            f"an instance must be an object {{domain: {{semi/book: {{slot: [values]}}}}}}, got {_json_type(state)}",
            field,
        )
    rows: list[Triple] = []
    for domain, parts in state.items():
        if not isinstance(parts, dict):
            raise StateError(
                f"domain {domain!r} must be an object {{semi/book: {{...}}}}, got {_json_type(parts)}", field
            )
        for part, slots in parts.items():
            where = f"{field}.{domain}.{part}"
            if not isinstance(slots, dict):
                raise StateError(
                    f"{domain}.{part} must be an object {{slot: [values]}}, got {_json_type(slots)}", where
                )
            for slot, values in slots.items():
                at = f"{where}.{slot}"
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    what = _json_type(values) if not isinstance(values, list) else "a list holding a non-string"
                    raise StateError(
                        f"a value must be a list of strings (task1/data/output_schema.json), got {what}", at
                    )
                text = encode_values(values)
                if len(text) > MAX_VALUE_CHARS:
                    raise StateError(f"value of {len(text):,} characters is too long (limit {MAX_VALUE_CHARS:,})", at)
                rows.append((str(domain), slot_name(str(domain), str(part), str(slot)), EQ, text))
    return rows


def _detect(records: Any) -> bool:
    """A JSON list of instances, each `{}` or domains of `semi`/`book` objects, some value a list."""
    if not isinstance(records, list) or not records:
        return False
    seen_list = False
    for state in records[:DETECT_ITEMS]:
        if not isinstance(state, dict):
            return False
        for parts in state.values():
            # One semi/book object holding a list value makes the shape; anything odd elsewhere is the
            # parser's to name, at its instance.
            if isinstance(parts, dict) and parts and set(parts) <= set(PARTS):
                seen_list = seen_list or any(
                    isinstance(slots, dict) and any(isinstance(v, list) for v in slots.values())
                    for slots in parts.values()
                )
    return seen_list


def _parse(records: Any, c: Collector) -> None:
    expect(c, records, list, "the top level (a list of instances)", None)
    for position, state in enumerate(records):
        dialogue_id = str(position)
        c.at(dialogue_id, 0)
        c.add_turn(dialogue_id, 0)
        c.add_state("gold", dialogue_id, 0, partial(_instance_rows, state, f"instance {position}"))


def _instance_rows(state: Any, field: str) -> Iterator[Triple]:
    """The instance's rows, and the scored slots it lacks as empty ones: all 19 are listed on every
    instance, the slot list of slot accuracy (`scores.py` counts 19 slots an instance)."""
    rows = state_triples(state, field)
    yield from rows
    present = {(d, s) for d, s, _, _ in rows}
    for domain, _, slot in DSTC10_SLOTS:
        if (domain, slot) not in present:
            yield domain, slot, EQ, ""


DSTC10_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": "dstc10",
        "container": "json",
        "sides": "gold",
        "summary": "DSTC10 track 2 task 1 labels.json or entry: a list of bare states, values as lists, "
        "paired by position",
        "example": '[{"hotel": {"semi": {"area": ["Union Square"], "type": ["hotel"]}, "book": {"day": ["Saturday"]}}}, {}]',
        "detect": _detect,
        "parse": _parse,
        "default_convention": "dstc10",
    },
)
