"""The one parsing engine every format declaration feeds: records in, tidy turn and state tables out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.errors import InputError
from analysis.formats.states import StateProblem, Triple

STATE_COLUMNS = ["dialogue_id", "turn_index", "domain", "slot", "relation", "value"]
MAX_TURNS_PER_DIALOGUE = 10_000


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
    notes: dict[str, int] = field(default_factory=dict)

    @property
    def states(self) -> pd.DataFrame:
        """The file's one side of states (gold preferred) for files used as either side."""
        table = self.gold if self.gold is not None else self.pred
        assert table is not None  # every ParsedFile has at least one side, checked in Collector.finish
        return table


class Collector:
    """Accumulates rows while a format walks its records, with the record location for errors."""

    def __init__(self, path: str, fmt: str, *, sides: tuple[str, ...]) -> None:
        self.path = path
        self.fmt = fmt
        self.sides = sides
        self.turn_rows: list[dict[str, Any]] = []
        self.state_rows: dict[str, list[tuple[str, int, str, str, str, str]]] = {s: [] for s in sides}
        self.listed: set[tuple[str, str]] = set()
        self.notes: dict[str, int] = {}
        self._seen: set[tuple[str, int]] = set()
        # Files that list every slot (empty ones included) give slot accuracy its per-turn denominator.
        self.listed_per_turn: dict[tuple[str, int], int] = {}
        self.saw_empty_gold = False
        self.dialogue_id: str | None = None
        self.turn: int | str | None = None

    def error(self, problem: str, field: str | None = None) -> InputError:
        return InputError(self.path, self.fmt, problem, dialogue_id=self.dialogue_id, turn=self.turn, field=field)

    def at(self, dialogue_id: Any, turn: Any = None) -> None:
        self.dialogue_id = str(dialogue_id)
        self.turn = turn

    def turn_index(self, raw: Any, field: str = "turn") -> int:
        """A turn index from an int or a digit string; anything else is an error at this record."""
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise self.error(f"turn index must be an integer, got {raw!r}", field)
        try:
            index = int(raw)
        except ValueError:
            raise self.error(f"turn index must be an integer, got {raw!r}", field) from None
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

    def add_state(self, side: str, dialogue_id: str, turn_index: int, triples: Callable[[], Iterable[Triple]]) -> None:
        """Record one turn's state; empty values are dropped here but remembered as listed slots."""
        self.at(dialogue_id, turn_index)
        rows = self.state_rows[side]
        listed = 0
        try:
            for domain, slot, relation, value in triples():
                if side == "gold":
                    self.listed.add((domain, slot))
                    listed += 1
                if value == "":
                    self.saw_empty_gold |= side == "gold"
                    continue
                rows.append((dialogue_id, turn_index, domain, slot, relation, value))
        except StateProblem as problem:
            raise self.error(problem.problem, problem.field) from None
        if side == "gold":
            self.listed_per_turn[(dialogue_id, turn_index)] = listed

    def note(self, key: str, count: int = 1) -> None:
        self.notes[key] = self.notes.get(key, 0) + count

    def finish(self) -> ParsedFile:
        if not self.turn_rows:
            raise InputError(self.path, self.fmt, "file holds no dialogue turns")
        turns = pd.DataFrame(self.turn_rows)
        for name in ("user", "system"):
            if name not in turns.columns:
                turns[name] = pd.Series([None] * len(turns), dtype="str")
        turns["turn_index"] = turns["turn_index"].astype("int64")
        if self.saw_empty_gold:
            keys = zip(turns["dialogue_id"], turns["turn_index"], strict=True)
            turns["n_listed"] = [self.listed_per_turn.get(k, 0) for k in keys]
        tables: dict[str, pd.DataFrame | None] = {"gold": None, "pred": None}
        for side, rows in self.state_rows.items():
            table = pd.DataFrame(rows, columns=STATE_COLUMNS)
            table["turn_index"] = table["turn_index"].astype("int64")
            tables[side] = table
        return ParsedFile(
            path=self.path,
            fmt=self.fmt,
            turns=turns,
            gold=tables["gold"],
            pred=tables["pred"],
            listed_slots=frozenset(self.listed) if self.saw_empty_gold else frozenset(),
            notes=self.notes,
        )


def expect(collector: Collector, value: Any, kind: type | tuple[type, ...], what: str, field: str | None = None) -> Any:
    """Type check at the boundary with a message naming what was expected and what came."""
    if not isinstance(value, kind):
        names = {dict: "an object", list: "an array", str: "a string", int: "an integer"}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(names.get(k, k.__name__) for k in kinds)
        got = {dict: "object", list: "array", str: "string", type(None): "null", bool: "boolean"}.get(
            type(value), type(value).__name__
        )
        raise collector.error(f"{what} must be {wanted}, got a JSON {got}", field)
    return value
