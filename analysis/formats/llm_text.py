"""An LLM tracker's generated text read as a state (or a turn's changes), or as an unparseable turn with its shape.

The shapes are those trackers write (learned from cwyoon-99/gpt-DST's `expts/*/running_log.json`
completions and Yushi-Hu/IC-DST's SQL form):

- a JSON state: the whole text, else the first ```` ``` ```` fenced block, else the span from the first
  `{` to the last `}`; nested `{domain: {slot: value}}` or flat `{"domain-slot": value}`;
- IC-DST's SQL (the text after the prompt's `SELECT * FROM`): `hotel WHERE area = 'east' AND stars = 4`,
  `hotel AS t1, train AS t2 WHERE t1.area = 'east' AND t2.day = 'monday'`, `WHERE` alone for no state;
- assignments `domain-slot = value` or `domain-slot: value`, several on a line separated by commas,
  each or all in parentheses (`(a-b = x, c-d = y)`, `(a-b = x), (c-d = y)`), one a line with a `- `
  bullet; a comma not followed by another assignment belongs to the value (`unit g6, clifton road`);
- a prose line ending in such parenthesised groups (`Therefore, ... is (restaurant-name = nusha)`): the
  groups are read, the prose before them is not;
- `Changed domain-slots: a-b, c-d` followed by the values, as assignments (`- a-b: x`) or as a list
  in the same order (`Corresponding values: x, y`, read only when the counts agree);
- the linearised form `hotel internet yes, hotel type guesthouse,` (every piece a MultiWOZ domain, a
  one-word slot and a value);
- an explicit empty state: `none`, `()`, `{}`, `Changed domain-slots: None`, or a first line saying no
  slot changed (`No slot changed.`, `None (no slot value changed ...)`).

Prose lines before and after the state are ignored. Anything else is **unparseable**, and so is a text
where a fragment does not give a clean domain and slot name: `(16 = all saints church)` (a slot index),
`(train_id, unknown)`, `Address: unit g6` beside the state. An unparseable text yields no triple at
all, never a domain like `(taxi`; its shape (`SHAPES`) says why.

Every step is a bounded number of passes of `str` methods over the text (no backtracking pattern): the
time is linear in its length.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.formats.states import EQ, StateError, Triple, coerce_value

# Why a text is unparseable: the closed list of shapes a file's report counts.
EMPTY_TEXT = "empty text"
PROSE = "prose without a state"
NUMBERED = "numbered slots (an index, not a domain-slot name)"
NOT_DOMAIN_SLOT = "a name that is not domain-slot"
NAMES_ONLY = "slot names without values"
COUNTS_DIFFER = "slot names and values differ in number"
PROSE_BETWEEN = "prose between state lines"
BAD_SQL = "SQL without readable conditions"
SHAPES = (EMPTY_TEXT, PROSE, NUMBERED, NOT_DOMAIN_SLOT, NAMES_ONLY, COUNTS_DIFFER, PROSE_BETWEEN, BAD_SQL)

EMPTY_WORDS = frozenset({"none", "null", "empty", "{}", "()", "[]", "none.", "n/a"})
MULTIWOZ_DOMAINS = frozenset({"hotel", "restaurant", "train", "taxi", "attraction", "hospital", "police", "bus"})
MAX_NAME_CHARS = 64  # a "name" longer than this is prose
_DOMAIN = re.compile(r"[^\W\d_]\w*")  # fullmatch on at most MAX_NAME_CHARS characters
_SLOT = re.compile(r"[^\W\d_][\w ]*")
_SQL_OPERATORS = (" >= ", " <= ", " = ", " LIKE ", " < ", " > ")


@dataclass(frozen=True)
class Reading:
    """What a text holds: `triples` (None when unparseable), the `form` it was read as, or the `shape`
    that made it unparseable."""

    triples: tuple[Triple, ...] | None
    form: str = ""
    shape: str = ""

    @property
    def parsed(self) -> bool:
        return self.triples is not None


def _unparseable(shape: str) -> Reading:
    return Reading(None, shape=shape)


def split_name(name: str) -> tuple[str, str] | None:
    """A clean `domain-slot` name as (domain, slot), else None.

    >>> split_name("restaurant-book time"), split_name("(taxi"), split_name("train_id"), split_name("16")
    (('restaurant', 'book time'), None, None, None)
    """
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        return None
    domain, sep, slot = name.partition("-")
    domain, slot = domain.strip(), slot.strip()
    if not sep or _DOMAIN.fullmatch(domain) is None or _SLOT.fullmatch(slot) is None:
        return None
    return domain, slot.rstrip()


def _clean_value(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    return value


# --- JSON ---------------------------------------------------------------------------------------------


def _json_state(value: Any) -> list[Triple] | None:
    if type(value) is not dict:
        return None
    triples: list[Triple] = []
    try:
        for key, inner in value.items():
            if type(inner) is dict:
                for slot, v in inner.items():
                    if type(v) is dict:
                        return None
                    text = coerce_value(v, "state")
                    triples.append((key.strip(), str(slot).strip(), EQ, "" if text is None else text.strip()))
            else:
                domain, sep, slot = key.partition("-")
                if not sep or not domain.strip() or not slot.strip():
                    return None
                text = coerce_value(inner, "state")
                triples.append((domain.strip(), slot.strip(), EQ, "" if text is None else text.strip()))
    except StateError:
        return None
    if any(not d or not s for d, s, _, _ in triples):
        return None
    return triples


def _fenced(text: str) -> str | None:
    start = text.find("```")
    if start < 0:
        return None
    body_start = text.find("\n", start + 3)
    header = text[start + 3 : body_start if body_start >= 0 else len(text)].strip()
    if body_start < 0 or (header and not header.isalpha()):  # ```{...}``` on one line
        body_start = start + 3 + (len(header) if header.isalpha() else 0)
    end = text.find("```", body_start)
    return text[body_start:end].strip() if end >= 0 else None


def _read_json(text: str) -> tuple[list[Triple] | None, str | None]:
    """(triples, fenced body): the JSON state, if any, and the fenced block's text."""
    fence = _fenced(text)
    candidates = [text]
    if fence is not None:
        candidates.append(fence)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        if candidate.startswith("{"):
            try:
                state = _json_state(json.loads(candidate))
            except (ValueError, RecursionError):
                state = None
            if state is not None:
                return state, fence
    return None, fence


# --- SQL (IC-DST) -------------------------------------------------------------------------------------


def _read_sql(text: str) -> Reading | None:
    """IC-DST's completion: tables, `WHERE`, conditions joined by ` AND `; None when it is not SQL."""
    line = text.strip()
    if "\n" in line:
        return None
    if line.upper().startswith("SELECT * FROM"):
        line = line[len("SELECT * FROM") :].strip()
    if line.endswith(";"):
        line = line[:-1].strip()
    if line == "WHERE":
        return Reading((), form="sql")
    head, sep, body = line.partition(" WHERE ")
    if not sep or not head.strip():
        return None
    tables = {}
    for part in head.split(","):
        words = part.split()
        if len(words) == 1 and _DOMAIN.fullmatch(words[0]):
            tables[""] = words[0]
        elif len(words) == 3 and words[1].upper() == "AS" and _DOMAIN.fullmatch(words[0]):
            tables[words[2]] = words[0]
        else:
            return None
    triples: list[Triple] = []
    for condition in body.split(" AND "):
        condition = condition.strip()
        if not condition:
            continue
        found = [(condition.find(op), op) for op in _SQL_OPERATORS if op in condition]
        if not found:
            return _unparseable(BAD_SQL)
        at, op = min(found)
        column, value = condition[:at].strip(), condition[at + len(op) :]
        alias, dot, column = column.rpartition(".")
        domain = tables.get(alias if dot else "", tables.get("") if not dot else None)
        slot = column.replace("_", " ").strip()
        if domain is None or len(slot) > MAX_NAME_CHARS or _SLOT.fullmatch(slot) is None:
            return _unparseable(BAD_SQL)
        triples.append((domain, slot, EQ, _clean_value(value)))
    return Reading(tuple(triples), form="sql")


# --- lines of assignments -----------------------------------------------------------------------------


@dataclass
class _Line:
    kind: str  # "assign", "names", "header", "values", "prose", "bad"
    triples: list[Triple] = field(default_factory=list)
    names: list[tuple[str, str]] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    shape: str = ""
    empty: bool = False  # a header or values line saying None


def _key_of(piece: str) -> tuple[str, str, str] | None:
    """(kind, key, value) when `piece` opens an assignment: kind "clean", "numbered" or "other"."""
    at_eq, at_colon = piece.find("="), piece.find(":")
    at = min(a for a in (at_eq, at_colon, len(piece)) if a >= 0)
    if at == len(piece):
        return None
    key, value = piece[:at].strip(), piece[at + 1 :]
    if not key or len(key) > MAX_NAME_CHARS:
        return None
    if split_name(key) is not None:
        return "clean", key, value
    if key.isdigit():
        # `16 = x`, `16: x`; `16:00` (a time continuing a value) is not
        return ("numbered", key, value) if at == at_eq or value[:1].isspace() else None
    if " " not in key and value.strip() and not key[:1].isdigit():
        return "other", key, value
    return None


def _assignments(group: str) -> tuple[list[Triple], str] | None:
    """The assignments of one comma-separated group, with the shape of an unclean one ("" if none);
    None when the group does not open with an assignment."""
    pieces = group.split(",")
    triples: list[Triple] = []
    current: list[str] | None = None
    shape = ""
    for piece in pieces:
        opened = _key_of(piece)
        if opened is None:
            if current is None:
                return None
            current.append(piece)  # a comma inside the value
            continue
        kind, key, value = opened
        if current is not None:
            triples.append(_triple(current))
        if kind != "clean":
            shape = shape or (NUMBERED if kind == "numbered" else NOT_DOMAIN_SLOT)
            current = [key, value]
            continue
        current = [key, value]
    if current is not None:
        triples.append(_triple(current))
    return triples, shape


def _triple(parts: list[str]) -> Triple:
    key, *value = parts
    name = split_name(key)
    domain, slot = name if name is not None else (key.strip(), "")
    return domain, slot, EQ, _clean_value(",".join(value))


def _groups(line: str) -> tuple[list[str], str, str] | None:
    """A line's last run of parenthesised groups (separated by commas or `and` only), the text before
    its first and after its last; None when the parentheses do not pair."""
    groups: list[str] = []
    depth, start, first, last = 0, -1, -1, -1
    for i, char in enumerate(line):
        if char == "(":
            if depth == 0:
                if last >= 0 and line[last + 1 : i].strip(" ,;") not in ("", "and"):
                    groups, first = [], -1  # prose between: only the last run of groups counts
                start = i
                if first < 0:
                    first = i
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                groups.append(line[start + 1 : i])
                last = i
    if depth != 0 or not groups:
        return None
    return groups, line[:first], line[last + 1 :]


def _strip_bullet(line: str) -> str:
    stripped = line.strip()
    for bullet in ("- ", "* ", "• "):
        if stripped.startswith(bullet):
            return stripped[len(bullet) :].strip()
    return stripped


def _names(text: str) -> list[tuple[str, str]] | None:
    """`a-b, c-d (26), 10 (e-f)` as names; None unless every piece is one."""
    names = []
    for piece in text.split(","):
        piece = piece.strip().rstrip(".")
        if not piece:
            continue
        inner_open, inner_close = piece.find("("), piece.rfind(")")
        if 0 <= inner_open < inner_close:
            outside, inside = piece[:inner_open].strip(), piece[inner_open + 1 : inner_close].strip()
            name = split_name(outside) or split_name(inside)
        else:
            name = split_name(piece)
        if name is None:
            return None
        names.append(name)
    return names


_HEADERS = ("changed domain-slots", "changed domain-slot", "changed slots", "changed slot")
_VALUE_HEADERS = (
    "corresponding values",
    "corresponding value",
    "their values",
    "new values",
    "new value",
    "values",
    "value",
)


def _line(raw: str) -> _Line:
    line = _strip_bullet(raw)
    lower = line.lower()
    for header in _HEADERS:
        if lower.startswith(header) and line[len(header) :].lstrip().startswith(":"):
            rest = line[len(header) :].lstrip()[1:].strip()
            if not rest or rest.lower().rstrip(".") == "none" or rest.lower().startswith("none "):
                return _Line("header", empty=True)
            names = _names(rest)
            if names is None:
                found = _assignments(rest)
                if found is not None and found[0]:
                    return _Line("assign", triples=found[0], shape=found[1])
                return _Line("bad", shape=NAMES_ONLY if "(" in rest else NOT_DOMAIN_SLOT)
            return _Line("header", names=names)
    for header in _VALUE_HEADERS:
        if lower.startswith(header) and line[len(header) :].lstrip().startswith(":"):
            rest = line[len(header) :].lstrip()[1:].strip()
            if not rest:
                return _Line("values")
            if rest.lower().startswith("none"):
                return _Line("values", empty=True)
            found = _assignments(rest)
            if found is not None and found[0]:
                return _Line("assign", triples=found[0], shape=found[1])
            return _Line("values", values=[_clean_value(v) for v in rest.split(",")])
    grouped = _groups(line) if "(" in line else None
    if grouped is not None:
        groups, before, after = grouped
        read = [_assignments(g) if g.strip() else ([], "") for g in groups]
        if all(r is not None for r in read) and (not before.strip() or not after.strip(" .")):
            triples = [t for r in read if r is not None for t in r[0]]
            shape = next((r[1] for r in read if r is not None and r[1]), "")
            if triples or shape or not before.strip():
                # a line of groups, or prose ending in them (the answer after a chain of thought)
                kind = "assign" if not before.strip() else "tail"
                return _Line(kind, triples=triples, shape=shape)
    found = _assignments(line)
    if found is not None and found[0]:
        return _Line("assign", triples=found[0], shape=found[1])
    names = _names(line)
    if names:
        return _Line("names", names=names)
    return _Line("prose")


def _no_change(text: str) -> bool:
    """The first line says nothing changed: `None ...`, `No slot changed.`, `There are no changed slots`."""
    first = text.split("\n", 1)[0].strip().lower()
    words = first.replace(",", " ").replace(".", " ").replace("(", " ").split()
    if not words:
        return False
    if words[0] in ("none", "nothing"):
        return True
    if "chang" not in first and "update" not in first:
        return False
    return words[0] == "no" or first.startswith(("there are no", "there is no", "there were no"))


def _linearised(text: str) -> list[Triple] | None:
    pieces = [p.strip() for p in text.strip().split(",")]
    if pieces and not pieces[-1]:
        pieces.pop()
    triples = []
    for piece in pieces:
        words = piece.split(" ", 2)
        if len(words) < 3 or words[0] not in MULTIWOZ_DOMAINS or not words[1].isalpha() or not words[2].strip():
            return None
        triples.append((words[0], words[1], EQ, words[2].strip()))
    return triples or None


def read_text(text: str) -> Reading:
    """The state (or changes) an LLM's text holds, or why it is unparseable (module docstring).

    >>> read_text("(taxi-departure = saint johns college), (taxi-destination = pizza hut)").triples
    (('taxi', 'departure', '=', 'saint johns college'), ('taxi', 'destination', '=', 'pizza hut'))
    >>> read_text("taxi-destination, taxi-departure").shape, read_text("(16 = all saints church)").shape
    ('slot names without values', 'numbered slots (an index, not a domain-slot name)')
    >>> read_text("No slot changed.").triples, read_text(" hotel WHERE area = 'east' AND stars = 4").triples
    ((), (('hotel', 'area', '=', 'east'), ('hotel', 'stars', '=', '4')))
    """
    stripped = text.strip()
    if not stripped:
        return _unparseable(EMPTY_TEXT)
    if stripped.lower() in EMPTY_WORDS:
        return Reading((), form="empty")
    state, fence = _read_json(stripped)
    if state is not None:
        return Reading(tuple(state), form="json")
    sql = _read_sql(stripped)
    if sql is not None:
        return sql
    body = fence if fence is not None and "{" not in fence else stripped
    lines = [_line(raw) for raw in body.splitlines() if raw.strip() and raw.strip() != "```"]
    state_kinds = ("assign", "header", "values", "names", "bad")
    at = [i for i, ln in enumerate(lines) if ln.kind in state_kinds]
    if not at:
        tails = [ln for ln in lines if ln.kind == "tail"]
        if tails:  # prose ending in groups: the last such line is the answer
            answer = tails[-1]
            return _unparseable(answer.shape) if answer.shape else Reading(tuple(answer.triples), form="prose")
        if _no_change(stripped):
            return Reading((), form="empty")
        linear = _linearised(stripped) if "\n" not in stripped and "=" not in stripped else None
        if linear is not None:
            return Reading(tuple(linear), form="linearised")
        return _unparseable(PROSE)
    block = lines[at[0] : at[-1] + 1]
    if any(ln.kind in ("prose", "tail") for ln in block):
        return _unparseable(PROSE_BETWEEN)
    bad = next((ln.shape for ln in block if ln.shape), "")
    if bad:
        return _unparseable(bad)
    triples = [t for ln in block if ln.kind == "assign" for t in ln.triples]
    if triples:
        return Reading(tuple(triples), form="assignments")
    names = [n for ln in block if ln.kind in ("header", "names") for n in ln.names]
    values = [v for ln in block if ln.kind == "values" for v in ln.values]
    if not names and any(ln.empty for ln in block):
        return Reading((), form="empty")
    if names and values:
        if len(names) != len(values):
            return _unparseable(COUNTS_DIFFER)
        return Reading(tuple((d, s, EQ, v) for (d, s), v in zip(names, values, strict=True)), form="names and values")
    if not names and not values and all(ln.kind in ("header", "values") for ln in block):
        return Reading((), form="empty")
    return _unparseable(NAMES_ONLY)


# --- a file's tally -----------------------------------------------------------------------------------

EXAMPLE_CHARS = 80


@dataclass
class TextTally:
    """A file's count of parsed and unparseable texts, by shape, with each shape's first text."""

    parsed: int = 0
    unparseable: int = 0
    shapes: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reading: Reading, text: str) -> None:
        if reading.parsed:
            self.parsed += 1
            return
        self.unparseable += 1
        self.shapes[reading.shape] += 1
        self.examples.setdefault(reading.shape, text)

    def summary(self, top: int = 3) -> str:
        """The most common unparseable shapes, each with its count and first text (cut short).

        >>> tally = TextTally()
        >>> for text in ("16 = x", "12 = y", "hi"):
        ...     tally.add(read_text(text), text)
        >>> tally.summary()
        "2 numbered slots (an index, not a domain-slot name), e.g. '16 = x'; 1 prose without a state, e.g. 'hi'"
        """
        parts = []
        for shape, n in self.shapes.most_common(top):
            example = " ".join(self.examples[shape].split())
            if len(example) > EXAMPLE_CHARS:
                example = example[:EXAMPLE_CHARS] + "…"
            parts.append(f"{n} {shape}, e.g. {example!r}")
        return "; ".join(parts)


# --- accumulating a dialogue's changes ----------------------------------------------------------------

DELETE_VALUES = frozenset({"", "none", "[delete]"})  # IC-DST writes `[DELETE]` for a slot the turn removed
MAX_ACCUMULATED_ROWS = 5_000_000  # cumulative state rows a file of changes may spread into


class AccumulationTooLarge(ValueError):
    """The cumulative states of a file of changes would exceed MAX_ACCUMULATED_ROWS rows."""


def accumulate_deltas(
    turns: pd.DataFrame, pred: pd.DataFrame, *, delete_values: frozenset[str] = DELETE_VALUES
) -> pd.DataFrame:
    """Cumulative predicted states from per-turn changes, over the turns of `turns`: a slot keeps the value
    of its latest update at or before the turn; an update to one of `delete_values` (any case) removes it.

    The changes stay one row each, with the span of turns each holds (linear in the changes); the
    cumulative rows are laid out once, by array passes, and refused beyond MAX_ACCUMULATED_ROWS (a
    dialogue of n turns each adding a slot holds n(n+1)/2 of them). An unparseable turn adds no change:
    the turns after it carry what came before.

    >>> turns = pd.DataFrame({"dialogue_id": ["d"] * 3, "turn_index": [0, 1, 2]})
    >>> pred = pd.DataFrame({"dialogue_id": ["d", "d", "d"], "turn_index": [0, 1, 2], "domain": ["hotel"] * 3,
    ...     "slot": ["area", "stars", "area"], "relation": ["="] * 3, "value": ["east", "4", "[DELETE]"]})
    >>> accumulate_deltas(turns, pred)[["turn_index", "slot", "value"]].values.tolist()
    [[0, 'area', 'east'], [1, 'area', 'east'], [1, 'stars', '4'], [2, 'stars', '4']]
    """
    columns = list(pred.columns)
    if pred.empty:
        return pred
    updates = pred.reset_index(drop=True)
    updates = updates.assign(_order=np.arange(len(updates))).sort_values(
        ["dialogue_id", "domain", "slot", "turn_index", "_order"], kind="stable"
    )
    # A slot updated twice in one turn: the last update wins.
    updates = updates.drop_duplicates(["dialogue_id", "domain", "slot", "turn_index"], keep="last")
    names = updates[["dialogue_id", "domain", "slot"]]
    same_slot = (names.shift(-1) == names).all(axis=1).to_numpy()
    turn_from = updates["turn_index"].to_numpy(dtype="int64")
    following = np.append(turn_from[1:], -1)
    kept = ~updates["value"].astype("str").str.strip().str.lower().isin(delete_values).to_numpy()
    grid = turns[["dialogue_id", "turn_index"]].drop_duplicates()
    dialogue_ids, grid_codes = np.unique(grid["dialogue_id"].astype("str").to_numpy(), return_inverse=True)
    grid_turns = grid["turn_index"].to_numpy(dtype="int64")
    span = int(max(grid_turns.max(initial=0), turn_from.max(initial=0))) + 2
    keys = np.sort(grid_codes.astype("int64") * span + grid_turns)
    position = np.searchsorted(dialogue_ids, updates["dialogue_id"].astype("str").to_numpy())
    position = np.minimum(position, max(len(dialogue_ids) - 1, 0))
    listed = (
        (dialogue_ids[position] == updates["dialogue_id"].astype("str").to_numpy())
        if len(dialogue_ids)
        else np.zeros(len(updates), dtype=bool)
    )
    start = position * span + np.maximum(turn_from, 0)
    stop = np.where(same_slot, position * span + np.clip(following, 0, span - 1), position * span + span)
    lo = np.searchsorted(keys, start, side="left")
    hi = np.searchsorted(keys, stop, side="left")
    lengths = np.where(kept & listed, np.maximum(hi - lo, 0), 0)
    total = int(lengths.sum())
    if total > MAX_ACCUMULATED_ROWS:
        raise AccumulationTooLarge(
            f"the turn-level changes accumulate into {total:,} cumulative state rows (limit {MAX_ACCUMULATED_ROWS:,})"
        )
    source = np.repeat(np.arange(len(updates)), lengths)
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    at_key = keys[np.repeat(lo, lengths) + offsets]
    spread = updates.iloc[source].assign(turn_index=at_key % span)
    spread = spread.sort_values(["dialogue_id", "turn_index", "_order"], kind="stable")
    return spread[columns].reset_index(drop=True).astype({"turn_index": "int64"})
