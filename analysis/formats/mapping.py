"""Declared mappings: any JSON or JSONL shape of per-turn records read by one engine, without code.

A `Mapping` names where a file keeps what the canonical tables need; `read_mapping` walks the records
into the shared `Collector`. The built-in families below (`FAMILIES`) are such declarations, detected
without a flag; a user declares one for any other shape (CLI `--mapping`, manifest `mapping = {...}`,
`python -m analysis sniff FILE` proposes one).

Fields (all optional but an id and a state side):

- `records`: a path to the list (or object) of records; "" is the top level. In an object the record's
  key is `@key`.
- `turns`: a path, inside a record, to the dialogue's turns (a list, or an object keyed by turn); "" when
  each record is one turn; `@` when the record itself is the dialogue's list or object of turns.
- `dialogue`, `turn`: paths to the dialogue id and the turn number (`@key`: the record's key, or the
  turn's in an object of turns; `@index`: the turn's position, from 0). Or `id`, one field holding
  both, split by `id_pattern` (named groups `dialogue` and `turn`; default: at the last hyphen before
  the final digits, `mul0003-12`, `SNG0073.json-0`). `turn_base = 1` for turns counted from 1.
- `gold`, `pred`: paths to the states (either may be absent: a file of one side). `gold_choices`: other
  fields a file holds that could serve as gold (the output names the one read; `--gold-field` picks).
- `encoding` (or `gold_encoding` / `pred_encoding`): how a state is written:
  `nested` `{domain: {slot: value}}`; `flat` `{"domain-slot": value}` (split at the first `separator`);
  `triples` `[[domain, slot, value], ...]`; `triple_strings` `["domain-slot-value", ...]` (split at the
  first two hyphens); `semi_book` MultiWOZ `{domain: {"semi": {...}, "book": {...}}}`; `linearised`
  `"hotel internet yes, hotel type guesthouse,"` (below); `span` RiSAWOZ span strings; `auto` any of
  nested, triples or span, as our JSONL reads them; `llm_text` (predictions only) an LLM's generated
  text, read by `analysis.formats.llm_text.read_text`: a text it cannot read is an unparseable turn
  (kept, flagged, counted in `unparseable_turns`, its text and reason kept in the turns table, as the
  `llm` format keeps them). A value that is a list is a set of alternatives (kept `|`-joined); `null` or
  "" is no value.
- `pred_changes`: each turn's prediction holds only the slots that turn changed; they are accumulated
  over the dialogue in turn order (`llm_text.accumulate_deltas`): a slot keeps its latest update, and an
  update to `[DELETE]` (IC-DST's), `none` or "" removes it; an unparseable turn changes nothing. The note
  `pred_changes_accumulated` says so in the report (and `--pred-deltas` is refused on such a file: it
  would accumulate the states again).
- `user`: a path to the user utterance.

A path is a dotted chain of keys and list positions (`dialog.usr.-1`: the last item of `usr` under
`dialog`); a key holding a dot is found as written first.

Linearised text is split as CheckDST's `extract_slot_from_string` (wise-east/CheckDST
`src/checkdst/utils.py`) splits it: the text is split into words; a first word among `open_marks` is
dropped, and the words from `close_mark` on; the words are joined by single spaces and split at commas
(a last empty piece dropped); each piece, stripped, is split into words, and a piece of more than two
words whose first word is a domain (any word when `domains` is empty) is `domain slot value...`, where
the slot is one word, or two when they are one of `multiword_slots` (`book day`); the value is the rest,
joined by single spaces. Other pieces are ignored, and counted in the note `linearised_pieces_ignored`.
A slot given twice with the same value is one slot (CheckDST compares sets).

Records that repeat a turn word for word (a log appended twice) are read once and counted in the note
`identical_duplicate_records`; a turn given twice with different content is refused.
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from itertools import chain, compress
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analysis.errors import InputError
from analysis.formats.engine import MAX_TURNS_PER_DIALOGUE, Collector, json_type_name
from analysis.formats.llm_text import TextTally, read_text
from analysis.formats.more import MAX_TEXT_CHARS, note_tally, unparseable_attrs
from analysis.formats.states import (
    EQ,
    MAX_VALUE_CHARS,
    StateError,
    Triple,
    any_state,
    coerce_value,
    multiwoz_metadata,
    nested_state,
    parse_span,
    triple_list,
    triple_strings,
)
from analysis.model import UNPARSEABLE_COLUMN

ENCODINGS = ("nested", "flat", "triples", "triple_strings", "semi_book", "linearised", "span", "auto", "llm_text")
LLM_TEXT = "llm_text"
CHANGES_NOTE = "pred_changes_accumulated"
DEFAULT_ID_PATTERN = r"^(?P<dialogue>.+)-(?P<turn>\d+)$"
KEY, INDEX, SELF = "@key", "@index", "@"
DUPLICATE_NOTE = "identical_duplicate_records"
IGNORED_NOTE = "linearised_pieces_ignored"
GOLD_FIELD_NOTE = "gold_field"
# A predicted flat key without the separator (an LLM's `"wifi": "yes"`) is a slot the system did emit:
# kept, under this domain, as a spurious prediction, and counted in the note below. Gold keys must split.
NO_DOMAIN = "(no domain)"
NO_DOMAIN_NOTE = "predicted_keys_without_domain"


@dataclass(frozen=True)
class Mapping:
    """Where a file keeps turns, ids and states (module docstring)."""

    records: str = ""
    turns: str = ""
    dialogue: str = ""
    turn: str = ""
    id: str = ""
    id_pattern: str = DEFAULT_ID_PATTERN
    gold: str = ""
    pred: str = ""
    encoding: str = "auto"
    gold_encoding: str = ""
    pred_encoding: str = ""
    separator: str = "-"
    user: str = ""
    turn_base: int = 0
    domains: tuple[str, ...] = ()
    multiword_slots: tuple[str, ...] = ()
    open_marks: tuple[str, ...] = ()
    close_mark: str = ""
    gold_choices: tuple[str, ...] = ()
    pred_changes: bool = False

    def problems(self) -> list[str]:
        """What makes this declaration unusable, in words; empty when it can be read."""
        out = []
        if not (self.id or (self.dialogue and self.turn)):
            out.append("name the turns: id (with id_pattern), or dialogue and turn")
        if self.id and (self.dialogue or self.turn):
            out.append("give either id or dialogue and turn, not both")
        if not (self.gold or self.pred):
            out.append("name at least one state: gold or pred")
        for name in ("encoding", "gold_encoding", "pred_encoding"):
            value = getattr(self, name)
            if value and value not in ENCODINGS:
                out.append(f"{name} {value!r} is not one of {', '.join(ENCODINGS)}")
        if self.id:
            try:
                groups = re.compile(self.id_pattern).groupindex
            except re.error as exc:
                out.append(f"id_pattern {self.id_pattern!r} is not a regular expression ({exc})")
            else:
                if not {"dialogue", "turn"} <= groups.keys():
                    out.append("id_pattern needs the named groups (?P<dialogue>...) and (?P<turn>...)")
        if self.gold and self.encoding_of("gold") == LLM_TEXT:
            out.append("encoding llm_text reads predictions only: give the gold side its own (gold_encoding)")
        if self.pred_changes and not self.pred:
            out.append("pred_changes needs a prediction (pred)")
        if self.turn_base not in (0, 1):
            out.append(f"turn_base must be 0 or 1, got {self.turn_base!r}")
        if self.turns and self.turn == INDEX and self.id:
            out.append("turn = @index needs dialogue, not id")
        return out

    def encoding_of(self, side: str) -> str:
        own = self.gold_encoding if side == "gold" else self.pred_encoding
        return own or self.encoding

    def declared(self) -> dict[str, Any]:
        """The fields that differ from the defaults, as a manifest table would write them."""
        default = Mapping()
        return {
            f.name: list(v) if isinstance(v, tuple) else v
            for f in fields(self)
            if (v := getattr(self, f.name)) != getattr(default, f.name)
        }

    def digest(self) -> str:
        """A stable text of the declaration, for cache keys."""
        return json.dumps(asdict(self), sort_keys=True)


MAPPING_FIELDS = {f.name: f for f in fields(Mapping)}


def mapping_from(raw: Any, where: str) -> Mapping:
    """A `Mapping` from a manifest table or parsed CLI option (keys as the fields); an `InputError`
    naming `where` and the key for anything unknown, mistyped or unusable."""
    if not isinstance(raw, dict):
        raise InputError(where, "mapping", f"a mapping must be a table of keys, got {json_type_name(raw)}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in MAPPING_FIELDS:
            raise InputError(where, "mapping", f"unknown mapping key {key!r}; known keys: {', '.join(MAPPING_FIELDS)}")
        default = MAPPING_FIELDS[key].default
        if isinstance(default, tuple):
            if isinstance(value, str):
                value = [part.strip() for part in value.split("|") if part.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(where, "mapping", f"mapping key {key!r} must be a list of strings")
            value = tuple(value)
        elif isinstance(default, bool):
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise InputError(where, "mapping", f"mapping key {key!r} must be true or false, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, str) and value.isascii() and value.isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(where, "mapping", f"mapping key {key!r} must be an integer, got {value!r}")
        elif not isinstance(value, str):
            raise InputError(where, "mapping", f"mapping key {key!r} must be a string, got {json_type_name(value)}")
        values[key] = value
    mapping = Mapping(**values)
    problems = mapping.problems()
    if problems:
        raise InputError(where, "mapping", "; ".join(problems))
    return mapping


def parse_mapping_option(text: str, where: str = "--mapping") -> Mapping:
    """The CLI's `--mapping`: `key=value,key=value` (list values `a|b`), or an inline TOML table
    `{key = "value", ...}`; `where` names it in errors (the upload form: the file it is for).

    >>> parse_mapping_option("id=dial_id,gold=gold,pred=pred,encoding=linearised").encoding
    'linearised'
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            raw: Any = tomllib.loads(f"mapping = {stripped}")["mapping"]
        except tomllib.TOMLDecodeError as exc:
            raise InputError(where, "mapping", f"not an inline TOML table: {exc}") from None
    else:
        raw = {}
        for part in filter(None, (p.strip() for p in stripped.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                raise InputError(where, "mapping", f"{part!r} is not key=value")
            raw[key.strip()] = value.strip()
    return mapping_from(raw, where)


# --- paths ------------------------------------------------------------------------------------------


class _Missing(Exception):
    """A path that leads nowhere in a record: the step that failed, for the message."""

    def __init__(self, step: str) -> None:
        super().__init__(step)
        self.step = step


def _getter(path: str) -> Callable[[Any], Any]:
    """A function reading `path` from a record (module docstring): one key is a plain lookup."""
    steps = path.split(".")

    def get(record: Any) -> Any:
        if type(record) is dict and path in record:
            return record[path]
        node = record
        for step in steps:
            if type(node) is dict:
                if step not in node:
                    raise _Missing(step)
                node = node[step]
            elif type(node) is list and re.fullmatch(r"-?\d+", step):
                position = int(step)
                if not -len(node) <= position < len(node):
                    raise _Missing(step)
                node = node[position]
            else:
                raise _Missing(step)
        return node

    return get


def _items(node: Any) -> Iterator[tuple[Any, Any]]:
    return iter(node.items()) if type(node) is dict else enumerate(node)


# --- states -----------------------------------------------------------------------------------------


def flat_state(state: Any, field: str, separator: str = "-", undomained: list[int] | None = None) -> Iterator[Triple]:
    """`{"domain-slot": value}`, split at the first separator. With `undomained` (a prediction), a key
    that does not split is kept under `NO_DOMAIN` and counted there.

    >>> list(flat_state({"hotel-book people": "2", "taxi-leaveat": ["17:15", "17:30"]}, "pred"))
    [('hotel', 'book people', '=', '2'), ('taxi', 'leaveat', '=', '17:15|17:30')]
    """
    if state is None:
        return
    if type(state) is not dict:
        raise StateError(
            f"state must be an object {{'domain{separator}slot': value}}, got {json_type_name(state)}", field
        )
    for key, value in state.items():
        domain, sep, slot = key.partition(separator)
        if not sep or not domain.strip() or not slot.strip():
            if undomained is None or not key.strip():
                raise StateError(f"key {key!r} is not 'domain{separator}slot'", field)
            domain, slot = NO_DOMAIN, key
            undomained[0] += 1
        text = coerce_value(value, f"{field}.{key}")
        yield domain, slot, EQ, "" if text is None else text


@dataclass(frozen=True)
class Linearised:
    """The rules of a linearised state (module docstring); `follows`, derived: each multi-word slot's
    first word -> the words that may follow it, longest first."""

    domains: frozenset[str] = frozenset()
    multiword: frozenset[tuple[str, ...]] = frozenset()
    open_marks: frozenset[str] = frozenset()
    close_mark: str = ""
    follows: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict, compare=False)
    # Each piece read so far -> its triple, or None when ignored: a cumulative state repeats most of its
    # pieces from turn to turn, so most are one lookup.
    pieces: dict[str, Triple | None] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        grouped: dict[str, list[tuple[str, ...]]] = {}
        for words in self.multiword:
            if len(words) > 1:
                grouped.setdefault(words[0], []).append(words[1:])
        self.follows.update({k: tuple(sorted(v, key=len, reverse=True)) for k, v in grouped.items()})


def split_linearised(text: str, rules: Linearised) -> tuple[list[Triple], int]:
    """(the triples of a linearised state, how many non-empty pieces were ignored) (module docstring).

    >>> rules = Linearised(frozenset({"hotel"}), frozenset({("book", "day")}), frozenset({"<bs>"}), "</bs>")
    >>> split_linearised("<bs> hotel book day sunday, hotel internet yes, bad, hotel internet yes, </bs> x", rules)
    ([('hotel', 'book day', '=', 'sunday'), ('hotel', 'internet', '=', 'yes')], 1)
    """
    words = text.split()
    if words and words[0] in rules.open_marks:
        words = words[1:]
    if rules.close_mark and rules.close_mark in words:
        words = words[: words.index(rules.close_mark)]
    pieces = " ".join(words).split(",")
    if pieces[-1] == "":
        pieces.pop()
    known = rules.pieces
    found: dict[Triple, None] = {}  # ordered, and a slot given twice with one value is one (a set)
    ignored = 0
    for piece in pieces:
        triple = known.get(piece, _UNSEEN)
        if triple is _UNSEEN:
            triple = known[piece] = _piece(piece, rules)
        if triple is None:
            ignored += bool(piece.strip())
        else:
            found[triple] = None
    return list(found), ignored


_UNSEEN: Any = object()


def _piece(piece: str, rules: Linearised) -> Triple | None:
    """One comma-separated piece as `domain slot value...`, or None when CheckDST's rule ignores it."""
    parts = piece.split()
    if len(parts) <= 2 or (rules.domains and parts[0] not in rules.domains):
        return None
    width = 1
    rests = rules.follows.get(parts[1])  # the declared multi-word slots starting with this word
    if rests is not None:
        width += next((len(rest) for rest in rests if tuple(parts[2 : 2 + len(rest)]) == rest), 0)
    return parts[0], " ".join(parts[1 : 1 + width]), EQ, " ".join(parts[1 + width :])


def _linearised_state(text: Any, field: str, rules: Linearised, counter: list[int]) -> Iterator[Triple]:
    if text is None:
        return iter(())
    if type(text) is not str:
        raise StateError(f"a linearised state must be a string, got {json_type_name(text)}", field)
    if len(text) > 50 * MAX_VALUE_CHARS:
        raise StateError(f"state text of {len(text):,} characters is too long", field)
    triples, ignored = split_linearised(text, rules)
    counter[0] += ignored
    return iter(triples)


_FLATTENERS: dict[str, Callable[..., Iterator[Triple]]] = {
    "nested": nested_state,
    "triples": triple_list,
    "triple_strings": triple_strings,
    "semi_book": multiwoz_metadata,
    "auto": any_state,
}


def _span_state(state: Any, field: str) -> Iterator[Triple]:
    if state is None:
        return iter(())
    if type(state) is not str:
        raise StateError(f"a span state must be a string, got {json_type_name(state)}", field)
    return iter(parse_span(state, field))


# --- the walk ---------------------------------------------------------------------------------------


def read_mapping(records: Any, c: Collector, *, mapping: Mapping, gold_chosen: bool = False) -> None:
    """Walk `records` as `mapping` declares into `c` (module docstring)."""
    m = mapping
    container = _records_of(records, c, m)
    rules = Linearised(
        frozenset(m.domains),
        frozenset(tuple(s.split()) for s in m.multiword_slots),
        frozenset(m.open_marks),
        m.close_mark,
    )
    ignored, undomained = [0], [0]
    tally = TextTally()
    state_readers = {
        side: _state_reader(m, side, rules, ignored, undomained, tally) for side in ("gold", "pred") if getattr(m, side)
    }
    if m.pred_changes:
        c.keep_empty_pred = True  # an update to "" removes the slot: kept until the accumulation reads it
        c.accumulate_pred = True
    get = _Getters.of(m)
    seen: dict[tuple[str, int], Any] = {}
    duplicates = 0
    pred_missing: list[bool] = []
    number = 0
    records_left = container
    if _read_columns(container, c, m, rules, ignored):
        records_left = []  # read whole by columns: nothing left for the walk
    for record_key, record in _items(records_left):
        number += 1
        for known, turn_key, turn, at in _record_turns(c, m, get, container, record_key, record, f"record {number}"):
            dialogue_id, t = _turn_place(c, m, get, known, turn_key, turn, at)
            key = (dialogue_id, t)
            if key in seen:
                if seen[key] == turn:
                    duplicates += 1
                    continue
                raise c.error(
                    f"{at}: duplicate turn: this dialogue already has a turn with this index, with other content"
                )
            seen[key] = turn
            attrs: dict[str, Any] = {}
            if get.user is not None:
                with contextlib.suppress(_Missing):  # an utterance is optional
                    attrs["user"] = get.user(turn)
            values = _state_values(c, m, get, turn, at)
            c.add_turn(dialogue_id, t, **attrs)
            pred_missing.append("pred" in values and values["pred"] is None and "gold" in values)
            for side, value in values.items():
                state_readers[side](c, dialogue_id, t, value)
    _closing_notes(c, m, tally, ignored[0], undomained[0], duplicates, pred_missing, gold_chosen=gold_chosen)


@dataclass(frozen=True)
class _Getters:
    """A mapping's field paths read into functions once (`_getter`): None where the mapping has no such
    field or reads it from a record's key or position (`@key`, `@index`, `@self`)."""

    gold: Callable[[Any], Any] | None
    pred: Callable[[Any], Any] | None
    user: Callable[[Any], Any] | None
    id: Callable[[Any], Any] | None
    dialogue: Callable[[Any], Any] | None
    turn: Callable[[Any], Any] | None
    turns: Callable[[Any], Any] | None
    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, m: Mapping) -> _Getters:
        return cls(
            gold=_getter(m.gold) if m.gold else None,
            pred=_getter(m.pred) if m.pred else None,
            user=_getter(m.user) if m.user else None,
            id=_getter(m.id) if m.id and m.id != KEY else None,
            dialogue=_getter(m.dialogue) if m.dialogue and m.dialogue != KEY else None,
            turn=_getter(m.turn) if m.turn and m.turn not in (KEY, INDEX) else None,
            turns=_getter(m.turns) if m.turns and m.turns != SELF else None,
            pattern=re.compile(m.id_pattern) if m.id else None,
        )


def _records_of(records: Any, c: Collector, m: Mapping) -> Any:
    """The list or object of records the mapping walks (`records` path), or the error saying why not."""
    problems = m.problems()
    if problems:
        raise c.error("unusable mapping: " + "; ".join(problems))
    try:
        container = _getter(m.records)(records) if m.records else records
    except _Missing as missing:
        raise c.error(f"records path {m.records!r} is not in the file (no {missing.step!r})") from None
    if type(container) not in (dict, list):
        raise c.error(
            f"the records ({m.records or 'the top level'}) must be a list or an object, got {json_type_name(container)}"
        )
    return container


def _record_turns(
    c: Collector, m: Mapping, get: _Getters, container: Any, record_key: Any, record: Any, where: str
) -> list[tuple[str | None, Any, Any, str]]:
    """One record's turns as (its dialogue id when the record is a dialogue, turn key, turn, place for
    messages): a dialogue record's turns (`turns`), else the record itself as one turn."""
    if not m.turns:
        return [(None, record_key, record, where)]
    _here(c, str(record_key) if type(container) is dict else f"<{where}>")
    dialogue_raw = record_key if m.dialogue == KEY else _field(c, get.dialogue, record, m.dialogue, where)
    outer = _dialogue_id(c, dialogue_raw, where)
    c.at(outer)  # a dialogue record: listed even when it has no turn
    if m.turns == SELF:
        turns = record
    else:
        assert get.turns is not None
        turns = _field(c, get.turns, record, m.turns, where)
    if type(turns) not in (dict, list):
        raise c.error(f"{where}: the turns ({m.turns}) must be a list or an object, got {json_type_name(turns)}")
    return [
        (outer, turn_key, turn, f"{where}, turn {position + 1}")
        for position, (turn_key, turn) in enumerate(_items(turns))
    ]


def _turn_place(
    c: Collector, m: Mapping, get: _Getters, known: str | None, turn_key: Any, turn: Any, at: str
) -> tuple[str, int]:
    """A turn record's dialogue id and turn index (from `id` by `id_pattern`, or from `dialogue` and `turn`;
    `turn_base` subtracted); the collector is left pointing at the turn, for messages."""
    if type(turn) is not dict:
        _here(c, known if known is not None else f"<{at}>")
        raise c.error(f"{at} must be an object, got {json_type_name(turn)}")
    if get.pattern is not None:
        _here(c, f"<{at}>")
        raw_id = turn_key if m.id == KEY else _field(c, get.id, turn, m.id, at)
        match = get.pattern.match(raw_id) if type(raw_id) is str else None
        if match is None:
            _here(c, str(raw_id))
            raise c.error(f"{at}: id {raw_id!r} does not match id_pattern {m.id_pattern!r}", m.id)
        dialogue_id = _dialogue_id(c, match.group("dialogue"), at)
        raw_turn: Any = match.group("turn")
    else:
        if known is None:
            _here(c, f"<{at}>")
            raw = turn_key if m.dialogue == KEY else _field(c, get.dialogue, turn, m.dialogue, at)
            dialogue_id = _dialogue_id(c, raw, at)
        else:
            dialogue_id = known
        _here(c, dialogue_id)
        if m.turn == INDEX:
            raw_turn = turn_key if type(turn_key) is int else None
            if raw_turn is None:
                raise c.error(f"{at}: turn = @index needs the turns as a list")
        elif m.turn == KEY:
            raw_turn = turn_key
        else:
            raw_turn = _field(c, get.turn, turn, m.turn, at)
    _here(c, dialogue_id, raw_turn)
    t = c.turn_index(raw_turn, m.id or m.turn)
    if m.turn_base:
        if t < m.turn_base:
            raise c.error(f"{at}: turn {t} is below turn_base {m.turn_base}", m.id or m.turn)
        t -= m.turn_base
    return dialogue_id, t


def _state_values(c: Collector, m: Mapping, get: _Getters, turn: Any, at: str) -> dict[str, Any]:
    """A turn's gold and predicted state fields, as the mapping names them; a missing one is an error."""
    values: dict[str, Any] = {}
    for side, read, name in (("gold", get.gold, m.gold), ("pred", get.pred, m.pred)):
        if read is None:
            continue
        try:
            values[side] = read(turn)
        except _Missing:
            raise c.error(f"{at} lacks the {side} field {name!r}", name) from None
    return values


def _closing_notes(
    c: Collector,
    m: Mapping,
    tally: TextTally,
    ignored: int,
    undomained: int,
    duplicates: int,
    pred_missing: list[bool],
    *,
    gold_chosen: bool,
) -> None:
    """What the walk saw, said once it is over: the notes of the report, and the turns without a prediction."""
    if m.pred and m.encoding_of("pred") == LLM_TEXT:
        note_tally(c, tally)
    if m.pred_changes:
        c.notes[CHANGES_NOTE] = (
            f"each turn's {m.pred} read as the slots that turn changed, accumulated over the dialogue "
            "([DELETE], none or an empty value removes a slot)"
        )
    if ignored:
        c.note(IGNORED_NOTE, ignored)
    if undomained:
        c.note(NO_DOMAIN_NOTE, undomained)
    if duplicates:
        c.note(DUPLICATE_NOTE, duplicates)
    if any(pred_missing):
        for row, absent in zip(c.turn_rows, pred_missing, strict=True):
            row["pred_missing"] = absent
    if m.gold and m.gold_choices:
        others = [f for f in m.gold_choices if f != m.gold]
        how = "chosen" if gold_chosen else "the default"
        c.notes[GOLD_FIELD_NOTE] = (
            f"{m.gold} ({how}; the file also holds {', '.join(others)}: --gold-field / gold_field picks)"
            if others
            else f"{m.gold} ({how})"
        )


# --- the columnar fast path ---------------------------------------------------------------------------

_ONLY_STR = frozenset({str})
_ONLY_DICT = frozenset({dict})
_ABSENT: Any = object()
_COLUMN_ENCODINGS = ("flat", "linearised")


def _plain_key(path: str) -> bool:
    return bool(path) and "." not in path and path not in (KEY, INDEX, SELF)


def _read_columns(container: Any, c: Collector, m: Mapping, rules: Linearised, ignored: list[int]) -> bool:
    """Read a regular file of turn records whole, as the record-by-record walk would, by C-level passes
    over all records (`map`, `zip`, `chain`, one dict lookup per distinct name or piece) and the states
    recorded as Arrow columns (`Collector.add_state_arrays`): no Python code per turn. Only for a list of
    turn records with an `id` split by the default pattern, flat or linearised states under plain keys,
    and an optional plain `user` key. False, with nothing recorded, at anything the walk refuses or
    treats specially (a missing key, an id that does not split, a duplicate turn, a null prediction, a
    flat key without the separator, a value that is not a string, an empty gold value, a very long
    text): the walk then reads the file and names the problem."""
    if type(container) is not list or not container or m.turns or m.turn_base:
        return False
    if not (_plain_key(m.id) and m.id_pattern == DEFAULT_ID_PATTERN and m.gold and m.pred):
        return False
    if not all(_plain_key(path) for path in (m.gold, m.pred)) or (m.user and not _plain_key(m.user)):
        return False
    if any(m.encoding_of(side) not in _COLUMN_ENCODINGS for side in ("gold", "pred")):
        return False
    if not _ONLY_DICT.issuperset(map(type, container)):
        return False
    try:
        ids = list(map(itemgetter(m.id), container))
        states = {side: list(map(itemgetter(getattr(m, side)), container)) for side in ("gold", "pred")}
    except KeyError:
        return False
    if not _ONLY_STR.issuperset(map(type, ids)) or "\n" in "".join(ids):
        return False
    dialogues, separators, turn_texts = zip(*map(methodcaller("rpartition", "-"), ids), strict=True)
    if "" in separators or "" in turn_texts or not all(map(str.strip, dialogues)):
        return False
    digits = "".join(turn_texts)
    if not (digits.isascii() and digits.isdigit()) or max(map(len, turn_texts)) > 5:
        return False
    numbers = list(map(int, turn_texts))
    if max(numbers) > MAX_TURNS_PER_DIALOGUE or len(set(zip(dialogues, numbers, strict=True))) != len(ids):
        return False
    users: list[Any] | None = None
    if m.user:
        users = list(map(methodcaller("get", m.user, _ABSENT), container))
        if _ONLY_STR.issuperset(map(type, users)):
            pass
        elif all(u is _ABSENT for u in users):
            users = None
        else:
            return False
    sides: dict[str, tuple[Any, Any, Any, Any]] = {}
    dropped = 0
    for side in ("gold", "pred"):
        if m.encoding_of(side) == "flat":
            empty = "refuse" if side == "gold" else "keep" if c.keep_empty_pred else "drop"
            read = _flat_columns(states[side], m.separator, empty=empty)
        else:
            read = _linearised_columns(states[side], rules)
        if read is None:
            return False
        sides[side] = read[:4]
        dropped += read[4]
    # Everything checked: recorded now, as the walk would have recorded it.
    if users is None:
        c.turn_rows.extend([{"dialogue_id": d, "turn_index": t} for d, t in zip(dialogues, numbers, strict=True)])
    else:
        c.turn_rows.extend(
            [{"dialogue_id": d, "turn_index": t, "user": u} for d, t, u in zip(dialogues, numbers, users, strict=True)]
        )
    c._seen.update(zip(dialogues, numbers, strict=True))
    c.dialogue_id, c.turn = dialogues[-1], numbers[-1]
    id_array = pa.array(dialogues, type=pa.large_string())
    number_array = np.array(numbers, dtype=np.int64)
    for side, (row_turn, domains, slots, values) in sides.items():
        at = np.asarray(row_turn, dtype=np.int64)
        c.add_state_arrays(
            side,
            id_array.take(at),
            number_array[at],
            *(pa.array(x, type=pa.large_string()) if type(x) is list else x for x in (domains, slots, values)),
        )
    ignored[0] += dropped
    return True


def _flat_columns(
    states: list[Any], separator: str, *, empty: str
) -> tuple[list[int], list[str], list[str], list[str], int] | None:
    """(each row's turn position, domains, slots, values, 0) of flat states `{"domain-slot": value}`, split
    once per distinct key; None unless every state is an object of string values under keys that split,
    with no value longer than MAX_VALUE_CHARS. An empty value is `empty`: "refuse"d (None: a gold one, whose
    turn's listing of slots the walk keeps), "drop"ped or "keep"t (predictions, as the collector does)."""
    if not _ONLY_DICT.issuperset(map(type, states)):
        return None
    keys = list(chain.from_iterable(states))
    values = list(chain.from_iterable(map(dict.values, states)))
    try:
        total = len("".join(values))
    except TypeError:
        return None
    if total > MAX_VALUE_CHARS and max(map(len, values)) > MAX_VALUE_CHARS:
        return None
    split: dict[str, tuple[str, str]] = {}
    for key in set(keys):
        domain, sep, slot = key.partition(separator)
        if not sep or not domain.strip() or not slot.strip():
            return None
        split[key] = (domain, slot)
    counts = np.fromiter(map(len, states), dtype=np.int64, count=len(states))
    row_turn = np.repeat(np.arange(len(states)), counts)
    names = list(map(split.__getitem__, keys))
    domains, slots = (list(column) for column in zip(*names, strict=True)) if names else ([], [])
    if "" in values and empty != "keep":
        if empty == "refuse":
            return None
        kept = list(map(bool, values))
        row_turn = row_turn[np.array(kept, dtype=bool)]
        domains, slots, values = (list(compress(column, kept)) for column in (domains, slots, values))
    return row_turn.tolist(), domains, slots, values, 0


def _linearised_columns(texts: list[Any], rules: Linearised) -> tuple[Any, Any, Any, Any, int] | None:
    """`split_linearised` over every text at once. Splitting a text's words and joining them by single
    spaces changes only whitespace, which the reading of a piece ignores (`_piece` splits it into words, an
    ignored piece counts when it is not blank): the pieces are the texts split at commas, by one Arrow pass,
    and each distinct piece is read once (`rules.pieces`). A text holding an open or close mark is cut at
    its words first, as `split_linearised` cuts it. A triple given twice in one text is kept once. Returns
    (each row's turn position, domains, slots, values, pieces ignored); None unless every text is a string
    of at most MAX_VALUE_CHARS characters."""
    if not _ONLY_STR.issuperset(map(type, texts)) or max(map(len, texts)) > MAX_VALUE_CHARS:
        return None
    marks = rules.open_marks | ({rules.close_mark} if rules.close_mark else set())
    joined_texts = "\n".join(texts)
    if any(mark in joined_texts for mark in marks):  # (a mark across two texts only costs the cut below)
        texts = list(map(partial(_cut_marks, rules=rules), texts))
    split = pc.split_pattern(pa.array(texts, type=pa.large_string()), ",")
    counts = pc.list_value_length(split).to_numpy(zero_copy_only=False).astype(np.int64)
    encoded = pc.list_flatten(split).dictionary_encode()
    distinct = encoded.dictionary.to_pylist()
    piece_code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    known = rules.pieces
    for piece in set(distinct).difference(known):
        known[piece] = _piece(piece, rules)
    read = list(map(known.__getitem__, distinct))
    ignored_code = np.fromiter(
        (triple is None and bool(piece.strip()) for piece, triple in zip(distinct, read, strict=True)),
        dtype=bool,
        count=len(distinct),
    )
    ignored = int(ignored_code[piece_code].sum()) if len(piece_code) else 0
    # Each distinct piece's triple as a code among the distinct triples (-1: ignored).
    triple_ids: dict[Triple, int] = {}
    code_of = np.fromiter(
        (-1 if t is None else triple_ids.setdefault(t, len(triple_ids)) for t in read), dtype=np.int64, count=len(read)
    )
    empty = np.zeros(0, dtype=np.int64)
    if not triple_ids or not len(piece_code):
        none = pa.array([], type=pa.large_string())
        return empty, none, none, none, ignored
    piece_turn = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    triple_code = code_of[piece_code]
    keep = triple_code >= 0
    key = piece_turn[keep] * len(triple_ids) + triple_code[keep]
    _, first = np.unique(key, return_index=True)  # a text's repeated triple once, at its first place
    first.sort()
    row_turn, row_triple = piece_turn[keep][first], triple_code[keep][first]
    columns = list(zip(*triple_ids, strict=True))
    domains, slots, values = (pa.array(columns[i], type=pa.large_string()).take(row_triple) for i in (0, 1, 3))
    return row_turn, domains, slots, values, ignored


def _cut_marks(text: str, rules: Linearised) -> str:
    words = text.split()
    if words and words[0] in rules.open_marks:
        words = words[1:]
    if rules.close_mark and rules.close_mark in words:
        words = words[: words.index(rules.close_mark)]
    return " ".join(words)


def _here(c: Collector, dialogue_id: str, turn: Any = None) -> None:
    """The record being read, for messages; unlike `Collector.at`, never lists a dialogue of its own (a
    turn record names its dialogue; only a dialogue record with no turns lists one)."""
    c.dialogue_id, c.turn = dialogue_id, turn


def _field(c: Collector, get: Callable[[Any], Any] | None, record: Any, name: str, where: str) -> Any:
    assert get is not None
    try:
        return get(record)
    except _Missing as missing:
        step = "" if missing.step == name else f" (no {missing.step!r})"
        raise c.error(f"{where} lacks the field {name!r}{step}", name) from None


def _dialogue_id(c: Collector, raw: Any, where: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int) or (isinstance(raw, str) and not raw.strip()):
        raise c.error(f"{where}: dialogue id must be a non-empty string or an integer, got {raw!r}")
    return str(raw)


def _state_reader(
    m: Mapping, side: str, rules: Linearised, ignored: list[int], undomained: list[int], tally: TextTally
) -> Callable[[Collector, str, int, Any], None]:
    """How one side's state is recorded: the collector's fast paths where the encoding has one."""
    encoding = m.encoding_of(side)
    name = m.gold if side == "gold" else m.pred
    if encoding == LLM_TEXT:

        def llm_text(c: Collector, dialogue_id: str, t: int, text: Any) -> None:
            # Called right after `add_turn`: the turn's row is the last one, and takes the reading's columns.
            row = c.turn_rows[-1]
            if text is None:  # no prediction at this turn (`pred_missing`), not an unparseable one
                row[UNPARSEABLE_COLUMN] = False
                return
            if type(text) is not str:
                raise c.error(f"the generated text must be a string, got {json_type_name(text)}", name)
            if len(text) > MAX_TEXT_CHARS:
                raise c.error(f"generated text of {len(text):,} characters (limit {MAX_TEXT_CHARS:,})", name)
            reading = read_text(text)
            tally.add(reading, text)
            row.update(unparseable_attrs(reading, text))
            c.add_state(side, dialogue_id, t, partial(iter, reading.triples or ()))

        return llm_text
    if encoding == "flat":
        separator = m.separator
        split_cache: dict[str, tuple[str, str]] = {}

        def flat(c: Collector, dialogue_id: str, t: int, state: Any) -> None:
            if not _add_flat(c, side, dialogue_id, t, state, separator, split_cache):
                kept = undomained if side == "pred" else None
                c.add_state(side, dialogue_id, t, partial(flat_state, state, name, separator, kept))

        return flat
    if encoding == "nested":
        return lambda c, d, t, state: c.add_state(side, d, t, partial(nested_state, state, name), state=state)
    if encoding == "auto":
        return lambda c, d, t, state: c.add_state(side, d, t, partial(any_state, state, name), state=state)
    if encoding == "triple_strings":
        return lambda c, d, t, state: c.add_triple_strings(side, d, t, state, name)
    if encoding == "linearised":

        def linearised(c: Collector, dialogue_id: str, t: int, text: Any) -> None:
            if type(text) is str and len(text) <= MAX_VALUE_CHARS:  # no value can be too long: appended at once
                triples, dropped = split_linearised(text, rules)
                ignored[0] += dropped
                domains, slots, _, values = zip(*triples, strict=True) if triples else ((), (), (), ())
                c._add_triples(side, dialogue_id, t, domains, slots, values)
            else:
                c.add_state(side, dialogue_id, t, partial(_linearised_state, text, name, rules, ignored))

        return linearised
    if encoding == "span":
        return lambda c, d, t, state: c.add_state(side, d, t, partial(_span_state, state, name))
    flatten = _FLATTENERS[encoding]
    return lambda c, d, t, state: c.add_state(side, d, t, partial(flatten, state, name))


def _add_flat(
    c: Collector,
    side: str,
    dialogue_id: str,
    t: int,
    state: Any,
    separator: str,
    split_cache: dict[str, tuple[str, str]],
) -> bool:
    """A flat state of string values recorded by the collector's column appends (`_add_triples`), its
    keys split once per file; False, with nothing recorded, for anything else (the caller then reads it
    with `flat_state`, whose checks name the problem)."""
    if type(state) is not dict:
        return False
    values = list(state.values())
    try:
        total = len("".join(values))
    except TypeError:
        return False
    if total > MAX_VALUE_CHARS and max(map(len, values)) > MAX_VALUE_CHARS:
        return False
    names = []
    for key in state:
        split = split_cache.get(key)
        if split is None:
            domain, sep, slot = key.partition(separator)
            if not sep or not domain.strip() or not slot.strip():
                return False
            split = split_cache[key] = (domain, slot)
        names.append(split)
    domains, slots = (tuple(column) for column in zip(*names, strict=True)) if names else ((), ())
    c._add_triples(side, dialogue_id, t, domains, slots, tuple(values))
    return True


def mapping_summary(m: Mapping) -> str:
    """One line saying what a mapping reads, for messages and listings."""
    ids = f"id {m.id}" if m.id else f"dialogue {m.dialogue}, turn {m.turn}"
    sides = ", ".join(
        f"{side} {getattr(m, side)} ({m.encoding_of(side)})" for side in ("gold", "pred") if getattr(m, side)
    )
    return f"records {m.records or '(top level)'}{', turns ' + m.turns if m.turns else ''}; {ids}; {sides}"
