"""The one parsing engine every format declaration feeds: records in, tidy turn and state tables out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analysis.errors import InputError
from analysis.formats.llm_text import AccumulationTooLarge, accumulate_deltas
from analysis.formats.states import (
    EQ,
    MAX_VALUE_CHARS,
    StateError,
    Triple,
    predicted_triple_strings,
    triple_strings,
)

STATE_COLUMNS = ["dialogue_id", "turn_index", "domain", "slot", "relation", "value"]
_ONLY_STR = frozenset({str})
_ONLY_DICT = frozenset({dict})
_ONLY_INT = frozenset({int})
MAX_TURNS_PER_DIALOGUE = 10_000
DIALOGUES_WITHOUT_TURNS = "dialogues_without_turns"  # the note counting dialogues a file lists with no turn
_STR = pd.Series(["x"]).dtype  # the dtype pandas infers for a list of strings (pandas 3: "str", Arrow-backed)
_ARROW_STR = isinstance(_STR, pd.StringDtype) and _STR.storage == "pyarrow"  # columns can be built in Arrow
_TURN_KEY = itemgetter("dialogue_id", "turn_index")


@dataclass
class ParsedFile:
    """One file as canonical tables. `gold`/`pred` are None when the file does not carry that side.

    A file that carries a single state per turn (raw MultiWOZ, DSTC9 gold, a bare submission) fills
    `gold` when it is gold-shaped and `pred` when it is prediction-shaped; the loader may use either as
    the side the user asked for (a gold file scored against itself gives JGA 1).
    """

    path: str
    fmt: str
    turns: pd.DataFrame
    gold: pd.DataFrame | None
    pred: pd.DataFrame | None
    listed_slots: frozenset[tuple[str, str]] = frozenset()
    notes: dict[str, Any] = field(default_factory=dict)  # counts, and a few words (the gold field read)
    # The distinct per-turn gold listings (every (domain, slot) a turn's gold state names, empty ones
    # included); `turns["listing"]` indexes them, -1 for a turn without gold. Set only for files that
    # list empty slots (see `listed_slots`); elsewhere a turn lists exactly its non-empty gold slots.
    listings: tuple[tuple[tuple[str, str], ...], ...] = ()
    # Results derived from these tables alone, shared by the copies the memory cache hands out (a gold
    # file read once per process serves every run scored against it); never part of the value.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def states(self) -> pd.DataFrame:
        """The file's one side of states (gold preferred) for files used as either side."""
        table = self.gold if self.gold is not None else self.pred
        assert table is not None  # every ParsedFile has at least one side, checked in Collector.finish
        return table


@dataclass
class _Shape:
    """A state object's shape: its (domain, slot) names flat, in order, and its gold listing id once known;
    `names` and `sizes` (its domains and their slot counts) tell it from another without a lookup."""

    domains: list[str]
    slots: list[str]
    names: list[str]
    sizes: list[int]
    listing: int = -1

    @staticmethod
    def of(key: tuple[tuple[Any, tuple[Any, ...]], ...]) -> _Shape | None:
        """The shape of `((domain, (slot, ...)), ...)`, or None when a name is not a non-empty string."""
        if not all(
            type(d) is str and d and _ONLY_STR.issuperset(map(type, slots)) and "" not in slots for d, slots in key
        ):
            return None
        return _Shape(
            [d for d, slots in key for _ in slots],
            [s for _, slots in key for s in slots],
            [d for d, _ in key],
            [len(slots) for _, slots in key],
        )


class Collector:
    """Accumulates rows while a format walks its records, with the record location for errors."""

    def __init__(self, path: str, fmt: str, *, sides: tuple[str, ...], keep_empty_pred: bool = False) -> None:
        self.path = path
        self.fmt = fmt
        self.sides = sides
        # Formats whose predictions name only the slots a system emitted keep a predicted "" as a
        # row: a scorer may count it as a predicted value (mwzeval does); conventions treat it as empty.
        self.keep_empty_pred = keep_empty_pred
        # Predictions that hold each turn's changes, accumulated into cumulative states when the tables are
        # built (`llm_text.accumulate_deltas`; a declared mapping's `pred_changes`).
        self.accumulate_pred = False
        self.listing_ids: dict[tuple[tuple[str, tuple[str, ...]], ...], int] = {}
        self.listing_of: dict[tuple[str, int], int] = {}
        self.turn_rows: list[dict[str, Any]] = []
        # Turns recorded at once (`add_prediction_turns`): their dialogue ids and turn indices as columns.
        self._turn_columns: tuple[pa.Array, np.ndarray] | None = None
        # One side's states as columns: a table is built from lists far faster than from one tuple per row,
        # and the fast path extends them without making any row. The (domain, slot, value) of each row, and
        # each turn's run of rows as (dialogue id, turn index, rows, their relations or None when all are
        # EQ): ids, turn indices and relations are repeated per row only when the table is built, by Arrow.
        self.state_columns: dict[str, tuple[list[str], list[str], list[str]]] = {s: ([], [], []) for s in sides}
        self.state_runs: dict[str, list[tuple[str, int, int, tuple[str, ...] | None]]] = {s: [] for s in sides}
        # A side whose every row came in one call as Arrow columns (`add_state_arrays`), instead of the lists.
        self.state_arrays: dict[str, dict[str, Any]] = {}
        # The shapes (domains and their slot names, in order) of the state objects read by
        # `add_plain_state`, each with its names laid out flat: most turns of a file share a few shapes.
        self._shapes: dict[tuple[tuple[str, tuple[str, ...]], ...], _Shape] = {}
        self._last_shape: dict[str, _Shape] = {}  # per side, the shape of the last state read
        self.notes: dict[str, Any] = {}
        self._seen: set[tuple[str, int]] = set()
        self._dialogues: set[str] = set()
        # Files that list every slot (empty ones included) give slot accuracy its per-turn denominator.
        self.listed_per_turn: dict[tuple[str, int], int] = {}
        # (domains, slots) a gold turn of triple strings names, turned into its listing only when needed.
        self._listed_names: dict[tuple[str, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.saw_empty_gold = False
        self.sides_seen: set[str] = set()
        self.dialogue_id: str | None = None
        self.turn: int | str | None = None

    def error(self, problem: str, field: str | None = None) -> InputError:
        return InputError(self.path, self.fmt, problem, dialogue_id=self.dialogue_id, turn=self.turn, field=field)

    def at(self, dialogue_id: Any, turn: Any = None) -> None:
        self.dialogue_id = str(dialogue_id)
        self.turn = turn
        if turn is None:  # a format entering a dialogue: remembered, so one without turns is counted
            self._dialogues.add(self.dialogue_id)

    def turn_index(self, raw: Any, field: str = "turn") -> int:
        """A turn index from an int or a string of ASCII digits; anything else is an error at this record.

        Only plain decimal digits: int() would also take " 1", "+1", "1_0" and other scripts' digits, so
        two spellings of one turn could collide or a typo pass. Leading zeros are read ("01" is turn 1):
        a dialogue with both "01" and "1" is then refused as a duplicate turn, never merged silently.
        """
        if isinstance(raw, int) and not isinstance(raw, bool):
            index = int(raw)
        elif type(raw) is str and raw.isascii() and raw.isdigit():  # ASCII isdigit: 0-9 only
            if len(raw) > 18:  # int() refuses thousands of digits; any such index is out of range anyway
                raise self.error(f"turn index {raw[:12]}... is out of range 0..{MAX_TURNS_PER_DIALOGUE}", field)
            index = int(raw)
        elif type(raw) is str and raw[:1] == "-" and raw[1:].isascii() and raw[1:].isdigit():
            raise self.error(f"turn index {raw[:12]} is out of range 0..{MAX_TURNS_PER_DIALOGUE}", field)
        else:
            raise self.error(f"turn index must be an integer (plain decimal digits), got {raw!r}", field)
        if index < 0 or index > MAX_TURNS_PER_DIALOGUE:
            raise self.error(f"turn index {index} is out of range 0..{MAX_TURNS_PER_DIALOGUE}", field)
        return index

    def add_turn(self, dialogue_id: str, turn_index: int, **attrs: Any) -> None:
        key = (dialogue_id, turn_index)
        if key in self._seen:
            self.at(dialogue_id, turn_index)
            raise self.error("duplicate turn: this dialogue already has a turn with this index")
        self._seen.add(key)
        for name in ("user", "system"):
            value = attrs.get(name)
            if value is not None and not isinstance(value, str):
                self.at(dialogue_id, turn_index)
                raise self.error(f"utterance must be a string, got {type(value).__name__}", name)
        self.turn_rows.append({"dialogue_id": dialogue_id, "turn_index": turn_index, **attrs})

    def add_state(
        self,
        side: str,
        dialogue_id: str,
        turn_index: int,
        triples: Callable[[], Iterable[Triple]],
        *,
        state: Any = None,
    ) -> None:
        """Record one turn's state; empty values are dropped here but remembered as listed slots.

        `state`, when given, is the `{domain: {slot: value}}` object `triples` flattens: when every name
        and value in it is a string, it is read directly (`add_plain_state`); anything else goes through
        `triples`, which checks it and names what is wrong.
        """
        if state is not None and self.add_plain_state(side, dialogue_id, turn_index, state):
            return
        self.at(dialogue_id, turn_index)
        self.sides_seen.add(side)
        # Flatteners are partials of (state, field, ...): name that field in messages raised here.
        where = triples.args[1] if isinstance(triples, partial) and len(triples.args) > 1 else side
        rows: list[tuple[str, str, str, str]] = []  # (domain, slot, value, relation)
        pairs: list[tuple[str, str]] = []
        gold = side == "gold"
        keep_empty = not gold and self.keep_empty_pred
        try:
            for domain, slot, relation, value in triples():
                if not (isinstance(domain, str) and domain and isinstance(slot, str) and slot):
                    raise StateError(f"domain and slot must be non-empty strings, got {domain!r} / {slot!r}", where)
                if len(value) > MAX_VALUE_CHARS:
                    raise StateError(
                        f"value of {len(value):,} characters is too long (limit {MAX_VALUE_CHARS:,})", where
                    )
                if gold:
                    pairs.append((domain, slot))
                if value == "" and not keep_empty:
                    self.saw_empty_gold |= gold
                    continue
                rows.append((domain, slot, value, relation))
        except StateError as problem:
            raise self.error(problem.problem, problem.field) from None
        if rows:
            domains, slots, values, relations = zip(*rows, strict=True)
            for column, items in zip(self.state_columns[side], (domains, slots, values), strict=True):
                column.extend(items)
            plain = relations.count(EQ) == len(relations)
            self.state_runs[side].append((dialogue_id, turn_index, len(rows), None if plain else relations))
        if gold:
            grouped: dict[str, list[str]] = {}
            for domain, slot in pairs:
                grouped.setdefault(domain, []).append(slot)
            self._list(dialogue_id, turn_index, tuple((d, tuple(s)) for d, s in grouped.items()), len(pairs))

    def add_plain_state(self, side: str, dialogue_id: str, turn_index: int, state: Any) -> bool:
        """Record a state object `{domain: {slot: value}}` of strings only, as `add_state` would; False,
        with nothing recorded, for anything else (the caller then flattens it with `add_state`, whose
        checks name what is wrong).

        No Python code runs per slot: the state's shape (domains and slot names, in order) is looked up
        among the shapes seen before, and its values are checked, filtered and appended by C-level passes
        (`chain`, `map`, `filter`, `compress`). On files that list every slot of the ontology at every
        turn (ConvLab-3: ~30 slots a turn, 95% empty), a per-slot loop costs several times more.
        """
        if type(state) is not dict:
            return False
        domains = state.values()
        if not _ONLY_DICT.issuperset(map(type, domains)):
            return False
        if side != "gold":
            return self._add_plain_prediction(dialogue_id, turn_index, state, domains)
        # Consecutive turns mostly share a shape: compared as flat lists first (names compare by identity,
        # json shares the strings of repeated keys), looked up by a nested key only when it changes.
        shape = self._last_shape.get(side)
        if (
            shape is None
            or [*chain.from_iterable(domains)] != shape.slots
            or [*state] != shape.names
            or [*map(len, domains)] != shape.sizes
        ):
            key = tuple(zip(state, map(tuple, domains), strict=True))
            shape = self._shapes.get(key)
            if shape is None:
                shape = _Shape.of(key)
                if shape is None:
                    return False
                self._shapes[key] = shape
            if side == "gold" and shape.listing < 0:
                # Keyed as `add_state` keys it: a domain listing no slot lists nothing.
                listed = tuple(item for item in key if item[1])
                shape.listing = self.listing_ids.setdefault(listed, len(self.listing_ids))
            self._last_shape[side] = shape
        values = _plain_values(domains)
        if values is None:
            return False
        self._append(side, dialogue_id, turn_index, shape.domains, shape.slots, values)
        where = (dialogue_id, turn_index)
        self.listed_per_turn[where] = len(values)
        self.listing_of[where] = shape.listing
        return True

    def _add_plain_prediction(self, dialogue_id: str, turn_index: int, state: dict[str, Any], domains: Any) -> bool:
        """`add_plain_state` of a prediction: laid out directly, by the same C-level passes, instead of looked
        up by shape. A prediction names only the slots the system filled, so its shape changes from turn
        to turn (AuGPT's 7,372 ConvLab-3 predictions: 1,737 shapes, a new one at two turns of three), and
        it needs no gold listing."""
        names = [*state]
        slots = [*chain.from_iterable(domains)]
        if not _plain_names(names, slots):
            return False
        values = _plain_values(domains)
        if values is None:
            return False
        domain_names = [*chain.from_iterable(map(repeat, names, map(len, domains)))]
        self._append("pred", dialogue_id, turn_index, domain_names, slots, values)
        return True

    def add_prediction_turns(
        self, dialogue_ids: Sequence[Any], turn_indices: Sequence[Any], states: Sequence[Any]
    ) -> bool:
        """Many turns at once, each with its prediction state object (`{domain: {slot: value}}`), as
        `add_turn` then `add_plain_state` would record them turn by turn, by C-level passes over all of
        them (no Python code per turn): for a predictions-only file whose every turn is plain. False, with
        nothing recorded, unless every dialogue id is a non-blank string, every turn index an int in range,
        no turn named twice, every state plain (non-empty string names, string values of at most
        MAX_VALUE_CHARS characters), and nothing recorded before: the caller then reads turn by turn,
        whose checks name what is wrong."""
        if self.turn_rows or self._turn_columns is not None or any(self.state_runs.values()) or self.state_arrays:
            return False
        n = len(dialogue_ids)
        if not (n and len(turn_indices) == n and len(states) == n):
            return False
        if not (_ONLY_STR.issuperset(map(type, dialogue_ids)) and all(map(str.strip, dialogue_ids))):
            return False
        if not _ONLY_INT.issuperset(map(type, turn_indices)):  # int only: a bool is refused turn by turn
            return False
        if min(turn_indices) < 0 or max(turn_indices) > MAX_TURNS_PER_DIALOGUE:
            return False
        if len(set(zip(dialogue_ids, turn_indices, strict=True))) != n:
            return False
        if not _ONLY_DICT.issuperset(map(type, states)):
            return False
        inner = list(chain.from_iterable(map(dict.values, states)))  # one slot object per (turn, domain)
        if not _ONLY_DICT.issuperset(map(type, inner)):
            return False
        domains = list(chain.from_iterable(states))
        slots = list(chain.from_iterable(inner))
        if not _plain_names(domains, slots):
            return False
        values = _plain_values(inner)
        if values is None:
            return False
        # Each row's turn and (turn, domain), in the order the turn-by-turn walk appends them.
        per_domain = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
        per_turn = np.fromiter(map(len, states), dtype=np.int64, count=n)
        row_domain = np.repeat(np.arange(len(inner)), per_domain)
        row_turn = np.repeat(np.repeat(np.arange(n), per_turn), per_domain)
        kept = np.fromiter(map(bool, values), dtype=bool, count=len(values))
        if not self.keep_empty_pred and not kept.all():  # empty values are dropped, as `_append` drops them
            row_domain, row_turn = row_domain[kept], row_turn[kept]
            slots, values = list(compress(slots, kept)), list(compress(values, kept))
        ids = pa.array(dialogue_ids, type=pa.large_string())
        numbers = np.array(turn_indices, dtype=np.int64)
        self._turn_columns = (ids, numbers)
        self._seen.update(zip(dialogue_ids, turn_indices, strict=True))
        self.dialogue_id, self.turn = dialogue_ids[-1], turn_indices[-1]
        self.sides_seen.add("pred")
        if len(values):
            self.add_state_arrays(
                "pred",
                ids.take(row_turn),
                numbers[row_turn],
                pa.array(domains, type=pa.large_string()).take(row_domain),
                pa.array(slots, type=pa.large_string()),
                pa.array(values, type=pa.large_string()),
            )
        return True

    def add_triple_strings(self, side: str, dialogue_id: str, turn_index: int, items: Any, field: str) -> None:
        """Record TRADE's `["domain-slot-value", ...]` as `add_state(partial(triple_strings, items, field))`
        would, with the checks and appends done by C-level passes over the whole list (`split`, `zip`,
        `compress`) rather than per triple; anything unusual (not a list of strings, a string without two
        hyphens, an empty name, a very long value) goes through `add_state`, whose checks name the problem; there
        a predicted string that is not `domain-slot-value` is kept as an off-vocabulary prediction
        (`predicted_triple_strings`), a gold one refused."""
        if type(items) is list and _ONLY_STR.issuperset(map(type, items)):
            parts = [item.split("-", 2) for item in items]
            if not parts or {3} == set(map(len, parts)):
                domains, slots, values = zip(*parts, strict=True) if parts else ((), (), ())
                if (
                    "" not in domains
                    and "" not in slots
                    and (len("".join(values)) <= MAX_VALUE_CHARS or max(map(len, values)) <= MAX_VALUE_CHARS)
                ):
                    self._add_triples(side, dialogue_id, turn_index, domains, slots, values)
                    return
        flatten = predicted_triple_strings if side == "pred" else triple_strings  # gold stays strict
        self.add_state(side, dialogue_id, turn_index, partial(flatten, items, field))

    def add_state_arrays(
        self,
        side: str,
        dialogue_ids: pa.Array,
        turn_indices: np.ndarray,
        domains: pa.Array,
        slots: pa.Array,
        values: pa.Array,
    ) -> None:
        """Record all of a side's rows at once, as `_append` would turn by turn: checked, non-empty string
        columns (see `split_triples`) with their dialogue ids and turn indices. Only for a side that has no
        other rows; one call per side."""
        if self.state_runs[side] or side in self.state_arrays:
            raise RuntimeError(f"add_state_arrays: the {side} side already has rows")
        self.sides_seen.add(side)
        if not len(values):
            return  # no rows: the empty table of the lists
        relations = pa.repeat(pa.scalar(EQ, type=pa.large_string()), len(values))
        columns = (dialogue_ids, turn_indices, domains, slots, relations, values)
        self.state_arrays[side] = dict(zip(STATE_COLUMNS, columns, strict=True))

    def _add_triples(
        self,
        side: str,
        dialogue_id: str,
        turn_index: int,
        domains: tuple[str, ...],
        slots: tuple[str, ...],
        values: tuple[str, ...],
    ) -> None:
        self._append(side, dialogue_id, turn_index, domains, slots, values)
        if side == "gold":  # the listing matters only when some gold value was empty: grouped then, in `finish`
            self._listed_names[(dialogue_id, turn_index)] = (domains, slots)

    def _append(
        self,
        side: str,
        dialogue_id: str,
        turn_index: int,
        domains: Sequence[str],
        slots: Sequence[str],
        values: Sequence[str],
    ) -> None:
        """Append one turn's checked (domain, slot, value) columns to a side's state columns by C-level
        passes, dropping empty values (kept on the prediction side when the format keeps them)."""
        self.dialogue_id, self.turn = dialogue_id, turn_index  # `at` for a known turn (its id already a str)
        self.sides_seen.add(side)
        domain_names, slot_names, kept = self.state_columns[side]
        gold = side == "gold"
        before = len(kept)
        kept.extend(values if not gold and self.keep_empty_pred else filter(None, values))
        n = len(kept) - before
        if n == len(values):
            domain_names.extend(domains)
            slot_names.extend(slots)
        else:
            domain_names.extend(compress(domains, values))
            slot_names.extend(compress(slots, values))
            self.saw_empty_gold |= gold
        if n:
            self.state_runs[side].append((dialogue_id, turn_index, n, None))

    def _list(
        self, dialogue_id: str, turn_index: int, listing: tuple[tuple[str, tuple[str, ...]], ...], n: int
    ) -> None:
        """Remember the slots a gold turn lists (grouped by domain), interned: most turns share one."""
        key = (dialogue_id, turn_index)
        self.listed_per_turn[key] = n
        self.listing_of[key] = self.listing_ids.setdefault(listing, len(self.listing_ids))

    def note(self, key: str, count: int = 1) -> None:
        before = self.notes.get(key, 0)
        self.notes[key] = (before if isinstance(before, int) else 0) + count

    def finish(self) -> ParsedFile:
        if self._turn_columns is not None:
            ids, numbers = self._turn_columns
            turns = pd.DataFrame({"dialogue_id": pd.array(ids, dtype=_STR), "turn_index": numbers})
        elif not self.turn_rows:
            raise InputError(self.path, self.fmt, "file holds no dialogue turns")
        else:
            turns = pd.DataFrame(self.turn_rows)
        if self._dialogues:
            # A dialogue listed with no turn would otherwise vanish: the alignment report counts it.
            empty = len(self._dialogues.difference(turns["dialogue_id"].unique()))
            if empty:
                self.note(DIALOGUES_WITHOUT_TURNS, empty)
        for name in ("user", "system"):
            if name not in turns.columns:
                turns[name] = pd.Series([None] * len(turns), dtype="str")
        turns["turn_index"] = turns["turn_index"].astype("int64")
        listings: tuple[tuple[tuple[str, str], ...], ...] = ()
        listed: set[tuple[str, str]] = set()
        if self.saw_empty_gold:
            for (dialogue_id, turn_index), (domains, slots) in self._listed_names.items():
                grouped: dict[str, list[str]] = {}
                for domain, slot in zip(domains, slots, strict=True):
                    grouped.setdefault(domain, []).append(slot)
                self._list(dialogue_id, turn_index, tuple((d, tuple(s)) for d, s in grouped.items()), len(domains))
            keys = list(map(_TURN_KEY, self.turn_rows))  # the rows' own keys: iterating Arrow strings is slow
            turns["n_listed"] = [self.listed_per_turn.get(k, 0) for k in keys]
            turns["listing"] = np.array([self.listing_of.get(k, -1) for k in keys], dtype="int64")
            listings = tuple(tuple((d, s) for d, slots in grouped for s in slots) for grouped in self.listing_ids)
            for listing in listings:
                listed.update(listing)
        tables: dict[str, pd.DataFrame | None] = {"gold": None, "pred": None}
        for side, columns in self.state_columns.items():
            if side not in self.sides_seen:
                continue  # a format that can carry both sides, used for one (e.g. predictions-only JSONL)
            arrays = self.state_arrays.get(side)
            if arrays is not None:
                table = pd.DataFrame(
                    {
                        name: np.asarray(array, dtype=np.int64) if name == "turn_index" else pd.array(array, dtype=_STR)
                        for name, array in arrays.items()
                    }
                )
            else:
                table = _state_table(columns, self.state_runs[side])
            table["turn_index"] = table["turn_index"].astype("int64")
            if side == "pred" and self.accumulate_pred:
                try:
                    table = accumulate_deltas(turns, table)
                except AccumulationTooLarge as problem:
                    raise InputError(self.path, self.fmt, str(problem)) from None
            tables[side] = table
        return ParsedFile(
            path=self.path,
            fmt=self.fmt,
            turns=turns,
            gold=tables["gold"],
            pred=tables["pred"],
            listed_slots=frozenset(listed),
            notes=self.notes,
            listings=listings,
        )


def _plain_names(domains: list[Any], slots: list[Any]) -> bool:
    """Whether every domain and slot name is a non-empty string (C-level passes, no loop per name)."""
    return (
        _ONLY_STR.issuperset(map(type, domains))
        and _ONLY_STR.issuperset(map(type, slots))
        and "" not in domains
        and "" not in slots
    )


def _plain_values(domains: Any) -> list[str] | None:
    """A state's values in order, if all are strings of at most MAX_VALUE_CHARS characters, else None. One
    C pass: join refuses anything but strings, and a short total bounds every value."""
    values = list(chain.from_iterable(map(dict.values, domains)))
    try:
        total = len("".join(values))
    except TypeError:
        return None
    if total > MAX_VALUE_CHARS and max(map(len, values)) > MAX_VALUE_CHARS:
        return None
    return values


def _state_table(
    columns: tuple[list[str], list[str], list[str]], runs: list[tuple[str, int, int, tuple[str, ...] | None]]
) -> pd.DataFrame:
    """One side's state table from its (domain, slot, value) columns and its runs of rows per turn (see
    `Collector.state_runs`), with the dtypes pandas infers for them, built directly: strings through one
    Arrow array each (dialogue ids taken per row from one array of the turns' ids), turn indices as one
    int64 array (inference costs 2-3 times more)."""
    if not runs:
        return pd.DataFrame([], columns=STATE_COLUMNS)  # as before: an empty row list, columns of dtype object
    domains, slots, values = columns
    ids, turn_indices, counts, relations = zip(*runs, strict=True)
    sizes = np.array(counts, dtype=np.int64)
    turns = np.repeat(np.array(turn_indices, dtype=np.int64), sizes)
    plain = relations.count(None) == len(relations)
    if _ARROW_STR:
        try:
            arrays = {
                "dialogue_id": pa.array(ids, type=pa.large_string()).take(np.repeat(np.arange(len(ids)), sizes)),
                "turn_index": turns,
                "domain": pa.array(domains, type=pa.large_string()),
                "slot": pa.array(slots, type=pa.large_string()),
                "relation": pa.repeat(pa.scalar(EQ, type=pa.large_string()), len(values))
                if plain
                else pa.array(_relations(relations, counts), type=pa.large_string()),
                "value": pa.array(values, type=pa.large_string()),
            }
            return pd.DataFrame(
                {name: array if name == "turn_index" else pd.array(array, dtype=_STR) for name, array in arrays.items()}
            )
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass  # a column of something else than strings: inferred as pandas does
    rows = {
        "dialogue_id": list(chain.from_iterable(map(repeat, ids, counts))),
        "turn_index": turns.tolist(),
        "domain": domains,
        "slot": slots,
        "relation": [EQ] * len(values) if plain else _relations(relations, counts),
        "value": values,
    }
    return pd.DataFrame(rows)


def _relations(relations: tuple[tuple[str, ...] | None, ...], counts: tuple[int, ...]) -> list[str]:
    return list(chain.from_iterable(repeat(EQ, n) if r is None else r for r, n in zip(relations, counts, strict=True)))


def split_triples(items: list[str]) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """TRADE's `"domain-slot-value"` strings as three Arrow string columns, split at their first two hyphens
    as `str.split("-", 2)` splits them, in one Arrow pass and with no Python string made per part. None
    unless every item has a non-empty domain and slot and a non-empty value of at most MAX_VALUE_CHARS
    characters: the caller then reads the items one by one (`add_triple_strings`), whose checks name what
    is wrong, and which drops an empty value as every reader does."""
    if not _ARROW_STR or not _ONLY_STR.issuperset(map(type, items)):
        return None
    try:
        strings = pa.array(items, type=pa.large_string())
    except (pa.ArrowException, TypeError, ValueError, UnicodeError):
        return None
    parts = pc.split_pattern(strings, "-", max_splits=2)
    if len(items) and not pc.all(pc.equal(pc.list_value_length(parts), 3)).as_py():
        return None
    columns = tuple(pc.list_element(parts, i) for i in range(3))
    if len(items):
        lengths = [pc.min_max(pc.utf8_length(column)) for column in columns]
        if min(length["min"].as_py() for length in lengths) < 1 or lengths[2]["max"].as_py() > MAX_VALUE_CHARS:
            return None
    domains, slots, values = columns
    return domains, slots, values


def expect(collector: Collector, value: Any, kind: type | tuple[type, ...], what: str, field: str | None = None) -> Any:
    """Type check at the boundary with a message naming what was expected and what came."""
    if not isinstance(value, kind):
        names = {dict: "an object", list: "an array", str: "a string", int: "an integer", type(None): "null"}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(names.get(k, k.__name__) for k in kinds)
        raise collector.error(f"{what} must be {wanted}, got {json_type_name(value)}", field)
    return value


def json_type_name(value: Any) -> str:
    """`a JSON object`, `a JSON number`, ... for messages about wrong types."""
    if value is None:
        return "JSON null"
    if isinstance(value, bool):
        return "a JSON boolean"
    kind = {dict: "object", list: "array", str: "string", int: "number", float: "number"}.get(type(value), "value")
    return f"a JSON {kind}"  # the article goes with "JSON", whatever the kind
