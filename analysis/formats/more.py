"""SOM-DST per-turn outputs, LLM trackers' raw text, and turn-level (delta) predictions.

`somdst` is the `preds_<epoch>.json` clovaai/som-dst's `evaluation.py` dumps: one JSON object keyed by
`<dialogue id>_<turn id>` (the id as its test file writes it, e.g. `PMUL4398.json_0`; the turn id counts
from 0), each value the pair `[predicted, gold]` of `domain-slot-value` string lists (the
cumulative state, `none` slots already left out). The key is split at its last underscore (SGD ids such
as `1_00000` keep theirs); a triple is split at its first two hyphens, as TRADE's are.

`llm` is a JSON Lines file (or a JSON array) of one record per turn with a tracker's raw generated text:

- the dialogue id under `dialogue_id` (or `dial_id`, `dialog_id`), the turn under `turn_index` (or
  `turn_id`, `turn`), counting from 0;
- the text under `output` (or `generation`, `response`, `text`: the first of these the first record holds
  names the text for the whole file);
- optionally the gold state under `gold` (or `gold_state`): a state object, a triple list or a RiSAWOZ
  span, as in our JSONL. Without it the file holds predictions only (pass `--gold`);
- optionally `user` and `system` utterances.

The text is read by `analysis.formats.llm_text.read_text`: a JSON state (maybe fenced or with prose
around), IC-DST's SQL, `(domain-slot = value)` groups and `domain-slot: value` lines (several on a line),
`Changed domain-slots` prose, the linearised form, or an explicitly empty state. A fragment that does not
give a clean domain and slot name makes the whole text unparseable (never a domain like `(taxi`).

Anything else, an empty text included, is an **unparseable turn**: the turn is kept (turn column
`pred_unparseable`, with its text and the reason in `pred_unparseable_text` and `pred_unparseable_reason`
for the dialogue viewer), holds no predicted slot, and is counted in the note `unparseable_turns`; the notes
`parsed_turns` and `unparseable_shapes` (the most common shapes, each with its first text) complete the
file's report. Scoring
gives its gold slots the outcome `unparseable` (an error, counted with the misses in slot metrics) and
never counts the turn as joint-correct, even when its gold state is empty. Values are kept as written
(`none`, `dontcare`): the convention decides what they mean.

Turn-level (delta) predictions (`load_run(..., pred_deltas=True)`, CLI `--pred-deltas`, manifest
`pred_deltas = true`): each turn's prediction holds only the slots that turn changed, in any format. They
are accumulated in turn order into cumulative states (`accumulate_deltas`): a slot keeps the value of its
latest update at or before the turn; an update to `none` (any case) or to "" (in formats that keep a
predicted "", e.g. mwzeval) deletes the slot. `delta_suspicion` measures whether a prediction file read
as cumulative looks like deltas (see there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis.formats.engine import Collector, json_type_name
from analysis.formats.llm_text import Reading, TextTally, read_text
from analysis.formats.llm_text import accumulate_deltas as accumulate_changes
from analysis.formats.states import StateError, Triple, any_state, predicted_triple_strings, triple_strings
from analysis.model import UNPARSEABLE_COLUMN, UNPARSEABLE_REASON_COLUMN, UNPARSEABLE_TEXT_COLUMN

UNPARSEABLE_NOTE = "unparseable_turns"
PARSED_NOTE = "parsed_turns"  # an LLM file's turns whose text was read
SHAPES_NOTE = "unparseable_shapes"  # the most common shapes of its unparseable texts, with examples

# --- somdst ---------------------------------------------------------------------------------------

_SOMDST_KEY = re.compile(r"^(.+)_(\d+)$")


def _is_triples(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def detect_somdst(records: Any) -> bool:
    if type(records) is not dict or not records:
        return False
    key, value = next(iter(records.items()))
    return (
        _SOMDST_KEY.match(str(key)) is not None
        and type(value) is list
        and len(value) == 2
        and _is_triples(value[0])
        and _is_triples(value[1])
    )


def parse_somdst(records: Any, c: Collector) -> None:
    """Each entry `"<id>_<turn>": [predicted, gold]`; `(id, turn)` pairs are checked unique by the engine."""
    if type(records) is not dict:
        raise c.error(
            f"the top level must be an object keyed by '<dialogue id>_<turn id>', got {json_type_name(records)}"
        )
    for key, value in records.items():
        match = _SOMDST_KEY.match(key)
        if match is None:
            c.at(key)
            raise c.error(f"key {key!r} is not '<dialogue id>_<turn id>' (the turn id a number after the last '_')")
        dialogue_id, raw_turn = match.groups()
        c.at(dialogue_id, raw_turn)
        t = c.turn_index(raw_turn)
        if type(value) is not list or len(value) != 2:
            raise c.error(
                f"entry {key!r} must be the pair [predicted, gold] of 'domain-slot-value' lists, "
                f"got {json_type_name(value)}" + (f" of {len(value)} items" if type(value) is list else "")
            )
        c.add_turn(dialogue_id, t)
        c.add_state("pred", dialogue_id, t, partial(predicted_triple_strings, value[0], "predicted (item 0)"))
        c.add_state("gold", dialogue_id, t, partial(triple_strings, value[1], "gold (item 1)"))


# --- llm ------------------------------------------------------------------------------------------

DIALOGUE_KEYS = ("dialogue_id", "dial_id", "dialog_id")
TURN_KEYS = ("turn_index", "turn_id", "turn")
TEXT_KEYS = ("output", "generation", "response", "text")
GOLD_KEYS = ("gold", "gold_state")
MAX_TEXT_CHARS = 200_000  # a generation longer than this is a broken file


def _key_of(record: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in record), None)


def detect_llm(records: Any) -> bool:
    first = records[0] if isinstance(records, list) and records else None
    if not isinstance(first, dict) or "pred" in first or "prediction" in first:
        return False
    text_key = _key_of(first, TEXT_KEYS)
    return (
        _key_of(first, DIALOGUE_KEYS) is not None
        and _key_of(first, TURN_KEYS) is not None
        and text_key is not None
        and isinstance(first[text_key], str)
    )


def parse_generation(text: str) -> list[Triple] | None:
    """The state an LLM's generated text holds, or None when it does not parse (`llm_text.read_text`).

    >>> parse_generation('Sure! ```json\\n{"hotel": {"area": "east"}}\\n``` Done.')
    [('hotel', 'area', '=', 'east')]
    >>> parse_generation("State:\\nhotel-price range=cheap\\n- train-day: monday")
    [('hotel', 'price range', '=', 'cheap'), ('train', 'day', '=', 'monday')]
    >>> parse_generation("NONE"), parse_generation("I am not sure."), parse_generation("")
    ([], None, None)
    >>> parse_generation("(taxi-departure = x), (taxi-destination = y)")
    [('taxi', 'departure', '=', 'x'), ('taxi', 'destination', '=', 'y')]
    """
    triples = read_text(text).triples
    return None if triples is None else list(triples)


def _where_llm(line: int, record: dict[str, Any], key: str | None) -> Any:
    return record.get(key, f"<record {line}>") if key is not None else f"<record {line}>"


def parse_llm(records: Any, c: Collector) -> None:
    if type(records) is not list:
        raise c.error(f"the top level must be a list of turn records, got {json_type_name(records)}")
    first = records[0]
    text_key = _key_of(first, TEXT_KEYS)
    gold_key = _key_of(first, GOLD_KEYS)
    dialogue_key = _key_of(first, DIALOGUE_KEYS)
    turn_key = _key_of(first, TURN_KEYS)
    assert text_key is not None and dialogue_key is not None and turn_key is not None  # detection checks
    tally = TextTally()
    for line, record in enumerate(records, start=1):
        if type(record) is not dict:
            c.at(f"<record {line}>")
            raise c.error(f"record {line} must be an object, got {json_type_name(record)}")
        c.at(_where_llm(line, record, dialogue_key), record.get(turn_key))
        for key in (dialogue_key, turn_key, text_key, *((gold_key,) if gold_key else ())):
            if key not in record:
                raise c.error(f"record {line} lacks a required key (the first record has it)", key)
        raw_id = record[dialogue_key]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
            raise c.error(f"record {line}: dialogue id must be a non-empty string or an integer, got {raw_id!r}")
        dialogue_id = str(raw_id)
        t = c.turn_index(record[turn_key], turn_key)
        text = record[text_key]
        if type(text) is not str:
            raise c.error(f"record {line}: generated text must be a string, got {json_type_name(text)}", text_key)
        if len(text) > MAX_TEXT_CHARS:
            raise c.error(f"record {line}: generated text of {len(text):,} characters (limit {MAX_TEXT_CHARS:,})")
        reading = read_text(text)
        tally.add(reading, text)
        attrs = {k: record[k] for k in ("user", "system") if k in record}
        c.add_turn(dialogue_id, t, **attrs, **unparseable_attrs(reading, text))
        if gold_key is not None:
            c.add_state("gold", dialogue_id, t, partial(any_state, record[gold_key], gold_key))
        # An unparseable turn holds no predicted slot; its flag, not an empty state, decides its score.
        c.add_state("pred", dialogue_id, t, partial(_checked, list(reading.triples or ()), text_key))
    note_tally(c, tally)


def unparseable_attrs(reading: Reading, text: str) -> dict[str, Any]:
    """A turn's columns for its text's reading: the flag, and for an unparseable text the text itself and
    the reason (its shape), for the dialogue viewer; a parsed turn leaves those two out (null)."""
    if reading.parsed:
        return {UNPARSEABLE_COLUMN: False}
    return {UNPARSEABLE_COLUMN: True, UNPARSEABLE_TEXT_COLUMN: text, UNPARSEABLE_REASON_COLUMN: reading.shape}


def note_tally(c: Collector, tally: TextTally) -> None:
    """A file's report of its texts: turns parsed, unparseable, and the most common unparseable shapes."""
    c.note(PARSED_NOTE, tally.parsed)
    if tally.unparseable:
        c.note(UNPARSEABLE_NOTE, tally.unparseable)
        c.notes[SHAPES_NOTE] = tally.summary()


def _checked(triples: list[Triple], field: str) -> Iterator[Triple]:
    for domain, slot, relation, value in triples:
        if len(value) > 10_000:
            raise StateError(f"value of {len(value):,} characters is too long", field)
        yield domain, slot, relation, value


# --- delta predictions ----------------------------------------------------------------------------

DELETE_VALUES = frozenset({"", "none"})
DELTA_NOTE = "looks_like_deltas_scored_as_cumulative"
# The warning's heuristic: among gold slots carried unchanged from the previous turn that the prediction
# held at the previous turn, the share the prediction no longer holds. Cumulative trackers rarely drop
# a slot they held (real files: under 10%); a delta file drops nearly all of them.
DELTA_DROP_SHARE = 0.5
DELTA_MIN_CARRIED = 10
DENSE_KEYS = 20_000_000  # (slot pair x turn) keys up to which the check uses a lookup table (20 MB)


def accumulate_deltas(turns: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    """Cumulative predicted states from per-turn updates, over the turns of `turns` (module docstring), laid
    out by `llm_text.accumulate_deltas` (linear in the updates; refused beyond its row limit).

    >>> turns = pd.DataFrame({"dialogue_id": ["d"] * 3, "turn_index": [0, 1, 2]})
    >>> pred = pd.DataFrame({"dialogue_id": ["d", "d", "d"], "turn_index": [0, 1, 2], "domain": ["hotel"] * 3,
    ...     "slot": ["area", "stars", "area"], "relation": ["="] * 3, "value": ["east", "4", "none"]})
    >>> accumulate_deltas(turns, pred)[["turn_index", "slot", "value"]].values.tolist()
    [[0, 'area', 'east'], [1, 'area', 'east'], [1, 'stars', '4'], [2, 'stars', '4']]
    """
    return accumulate_changes(turns, pred, delete_values=DELETE_VALUES)


@dataclass(frozen=True)
class _GoldCarried:
    """The gold side of `delta_suspicion`, the same for every prediction file scored against one gold file:
    the turns' dialogue ids and positions, the gold (domain, slot) names, and the key (slot pair x turn
    position) of each gold slot kept unchanged from the dialogue's previous turn (`own`) and of that slot
    at the previous turn (`previous`)."""

    dialogue_ids: pd.Index
    span: int
    positions: np.ndarray
    domains: pd.Index
    slots: pd.Index
    n_positions: int
    own: np.ndarray
    previous: np.ndarray


def _gold_carried(turns: pd.DataFrame, gold: pd.DataFrame) -> _GoldCarried:
    dialogue, ids = pd.factorize(turns["dialogue_id"].astype("str"))
    turn_index = turns["turn_index"].to_numpy(dtype="int64")
    span = int(max(turn_index.max(initial=0), gold["turn_index"].to_numpy(dtype="int64").max(initial=0))) + 1
    positions = np.unique(dialogue.astype("int64") * span + turn_index)
    n = len(positions)
    first_of_dialogue = np.ones(n, dtype=bool)
    first_of_dialogue[1:] = positions[1:] // span != positions[:-1] // span
    position = _positions(ids, span, positions, gold)
    domain, domains = pd.factorize(gold["domain"].astype("str"))
    slot, slots = pd.factorize(gold["slot"].astype("str"))
    pair = domain.astype("int64") * max(len(slots), 1) + slot
    gold_key = np.where(position >= 0, pair * n + position, -1)
    value = pd.factorize(gold["value"])[0]
    order = np.argsort(gold_key, kind="stable")
    sorted_key, sorted_value = gold_key[order], value[order]
    has_previous = (gold_key >= 0) & ~first_of_dialogue[np.maximum(position, 0)] if n else gold_key >= 0
    previous = np.where(has_previous, gold_key - 1, -1)
    found = np.minimum(np.searchsorted(sorted_key, previous), len(sorted_key) - 1)
    carried = has_previous & (sorted_key[found] == previous) & (sorted_value[found] == value)
    return _GoldCarried(
        pd.Index(ids), span, positions, pd.Index(domains), pd.Index(slots), n, gold_key[carried], previous[carried]
    )


DELTA_GOLD = "delta_gold"  # the entry of a file's `ParsedFile.derived` holding `_GoldCarried`


def delta_gold_side(turns: pd.DataFrame, gold: pd.DataFrame | None, derived: dict[str, Any]) -> _GoldCarried | None:
    """`delta_suspicion`'s gold side of a file that carries gold (None without turns or gold rows), computed
    once and kept in its `derived`: the parse cache stores it with the file's tables (`delta_gold_table`),
    so a process that reads the file from the cache does not compute it again (17 ms of a 0.75 s `metrics`
    on MultiWOZ)."""
    if gold is None or gold.empty or turns.empty:
        return None
    if DELTA_GOLD not in derived:
        derived[DELTA_GOLD] = _gold_carried(turns, gold)
    side: _GoldCarried = derived[DELTA_GOLD]
    return side


_NAMES = pa.large_list(pa.large_string())
_NUMBERS = pa.large_list(pa.int64())


def delta_gold_table(side: _GoldCarried) -> pa.Table:
    """`side` as a one-row Arrow table, a column per field (names as strings, exactly as the file's tables
    hold them; numbers as int64 lists), for the parse cache; `delta_gold_from_table` gives it back."""
    columns = {}
    for name in _CARRIED_FIELDS:
        value = getattr(side, name)
        if isinstance(value, pd.Index):
            columns[name] = pa.array([pa.array(value, type=pa.large_string())], type=_NAMES)
        else:
            columns[name] = pa.array([np.atleast_1d(value)], type=_NUMBERS)
    return pa.table(columns)


def delta_gold_from_table(table: pa.Table) -> _GoldCarried:
    """The `_GoldCarried` of `delta_gold_table`'s table, equal field for field; a table of another shape is a
    `ValueError`."""
    if table.num_rows != 1 or table.column_names != list(_CARRIED_FIELDS):
        raise ValueError("not the gold side of the delta check")
    values: dict[str, Any] = {}
    for name in _CARRIED_FIELDS:
        column = table.column(name)
        row = column.chunk(0).values
        if column.type == _NAMES:
            values[name] = pd.Index(pd.array(row, dtype="str"))
        else:
            numbers = row.to_numpy(zero_copy_only=False).astype(np.int64, copy=True)
            values[name] = int(numbers[0]) if _CARRIED_TYPES[name] == "int" else numbers
    return _GoldCarried(**values)


_CARRIED_FIELDS = tuple(f.name for f in fields(_GoldCarried))
_CARRIED_TYPES = {f.name: str(f.type) for f in fields(_GoldCarried)}


def _positions(ids: pd.Index | np.ndarray, span: int, positions: np.ndarray, states: pd.DataFrame) -> np.ndarray:
    """Each state row's turn position (its index in `positions`), -1 for a row of no listed turn."""
    codes, uniques = pd.factorize(states["dialogue_id"].astype("str"))
    dialogue = pd.Index(ids).get_indexer(uniques)[codes] if len(uniques) else np.zeros(0, dtype="int64")
    turn_index = states["turn_index"].to_numpy(dtype="int64")
    at = dialogue.astype("int64") * span + turn_index
    if not len(positions):
        return np.full(len(at), -1, dtype="int64")
    where = np.minimum(np.searchsorted(positions, at), len(positions) - 1)
    listed = (dialogue >= 0) & (turn_index >= 0) & (turn_index < span) & (positions[where] == at)
    return np.where(listed, where, -1)


def delta_suspicion(
    turns: pd.DataFrame, gold: pd.DataFrame, pred: pd.DataFrame, derived: dict[str, Any] | None = None
) -> tuple[float, int]:
    """(share dropped, slots considered): of the gold slots kept unchanged from a dialogue's previous turn
    to this one that the prediction held at the previous turn, the share the prediction no longer holds
    at this turn. High on delta files read as cumulative, low on cumulative ones. Integer keys only
    (slot pair x turn position): it runs on every load. The gold side depends on the gold file alone:
    with `derived` (the gold file's `ParsedFile.derived`), it is computed once per gold file.

    >>> turns = pd.DataFrame({"dialogue_id": ["d", "d"], "turn_index": [0, 1]})
    >>> gold = pd.DataFrame({"dialogue_id": ["d", "d"], "turn_index": [0, 1], "domain": ["hotel"] * 2,
    ...     "slot": ["area"] * 2, "value": ["east"] * 2})
    >>> delta_suspicion(turns, gold, gold.iloc[:1]), delta_suspicion(turns, gold, gold)
    ((1.0, 1), (0.0, 1))
    """
    if gold.empty or pred.empty or turns.empty:
        return 0.0, 0
    side = delta_gold_side(turns, gold, derived if derived is not None else {})
    if side is None or not len(side.own):
        return 0.0, 0
    # The prediction's (slot pair x turn position) keys, in the gold's code spaces; a slot the gold never
    # names, or a turn the turns do not list, cannot match a gold key and is left out.
    position = _positions(side.dialogue_ids, side.span, side.positions, pred)
    domain_codes, domain_names = pd.factorize(pred["domain"].astype("str"))
    slot_codes, slot_names = pd.factorize(pred["slot"].astype("str"))
    domain = side.domains.get_indexer(domain_names)[domain_codes] if len(domain_names) else domain_codes
    slot = side.slots.get_indexer(slot_names)[slot_codes] if len(slot_names) else slot_codes
    keep = (position >= 0) & (domain >= 0) & (slot >= 0)
    n = side.n_positions
    pred_key = (domain[keep].astype("int64") * max(len(side.slots), 1) + slot[keep]) * n + position[keep]
    n_keys = len(side.domains) * max(len(side.slots), 1) * n
    if n_keys <= DENSE_KEYS:  # one byte per key: a lookup table
        table = np.zeros(n_keys, dtype=bool)
        table[pred_key] = True

        def held(keys: np.ndarray) -> np.ndarray:
            return table[keys]
    else:  # SGD-size ontologies over large files: sorted keys instead
        held = partial(np.isin, test_elements=np.unique(pred_key))
    held_before = held(side.previous)
    considered = int(held_before.sum())
    if not considered:
        return 0.0, 0
    return float(1.0 - held(side.own[held_before]).mean()), considered


def delta_warning(
    turns: pd.DataFrame, gold: pd.DataFrame, pred: pd.DataFrame, derived: dict[str, Any] | None = None
) -> str | None:
    """The note's text when a cumulative reading looks like deltas, else None (`derived`: `delta_suspicion`'s)."""
    share, n = delta_suspicion(turns, gold, pred, derived)
    if n >= DELTA_MIN_CARRIED and share > DELTA_DROP_SHARE:
        return (
            f"{share:.0%} of {n} gold slots carried from the previous turn, which the prediction held there, "
            "are gone from the prediction: these look like turn-level (delta) predictions scored as "
            "cumulative states; if they are, load them with --pred-deltas (manifest: pred_deltas = true)"
        )
    return None


MORE_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": "llm",
        "container": "jsonl",
        "sides": "both",
        "summary": "an LLM tracker's raw text per turn (output/generation/response/text): a JSON state, maybe "
        "fenced or with prose around, or domain-slot=value lines; gold optional; unparseable turns counted",
        "example": '{"dialogue_id": "MUL0001", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, '
        '"output": "The state is {\\"hotel\\": {\\"area\\": \\"east\\"}}."}',
        "detect": detect_llm,
        "parse": parse_llm,
    },
    {
        "name": "somdst",
        "container": "json",
        "sides": "both",
        "summary": "SOM-DST evaluation.py preds_<epoch>.json: '<dialogue id>_<turn id>' -> "
        "[predicted, gold] 'domain-slot-value' lists",
        "example": '{"MUL0001.json_0": [["hotel-area-east"], ["hotel-area-east", "hotel-stars-4"]]}',
        "detect": detect_somdst,
        "parse": parse_somdst,
    },
)
