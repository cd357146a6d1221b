"""The gold side of a run, computed once per gold file and shared by every run scored against it (issue 43).

Runs scored against one gold file (a sweep: a thousand runs of one test set) have the same turns, and
the same per-dialogue structure: each turn's dialogue key, the turns' order in `stats`, the dialogue of
each turn, the turn-depth groups; and, per convention, pairing's gold side (each gold row's turn id, the
gold names' encodings, the gold values' codes: `scoring._GoldPairing`). These are computed for the first run and kept in the gold file's
`ParsedFile.derived` (as the delta check keeps its gold side there), which the parse cache hands to every
`Run` of that gold file (`Run.gold_side`) and `score_run` to its `Scored`.

A shared result is used only for the very same turns: it is kept with the turns' `tid`, `dialogue_id`
and `turn_index` columns it was computed from, and a run whose turns differ in any of them (turns not
scored, another order, a subset) computes its own; a result that depends on more than the turns is also
checked by the caller's `valid` (pairing's: the convention and the gold columns, in full). The values are read-only (numpy arrays marked so,
immutable pandas Indexes): callers copy before changing them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

T = TypeVar("T")


class Scored(Protocol):
    """What `shared` reads of a scored run (`analysis.scoring.Scored`, which this module sits below)."""

    @property
    def turns(self) -> pd.DataFrame: ...
    @property
    def metas(self) -> Any: ...
    @property
    def gold_side(self) -> dict[str, Any]: ...


KEY = "gold_side"  # the entry of `ParsedFile.derived` these results are kept under


def shared(scored: Scored, name: str, compute: Callable[[], T], valid: Callable[[T], bool] | None = None) -> T:
    """`compute()` for `scored`'s turns, shared by every single run on the same gold file whose turns are
    the same (`tid`, `dialogue_id`, `turn_index`, row for row); otherwise computed afresh. `valid`: a further
    check of a kept result against this run (what else it was computed from), else it is computed again."""
    turns = scored.turns
    if len(scored.metas) != 1 or not len(turns):
        return compute()
    store: dict[str, tuple[_Turns, Any]] = scored.gold_side.setdefault(KEY, {})
    found = store.get(name)
    if found is not None and found[0].same(turns) and (valid is None or valid(found[1])):
        return found[1]
    value = compute()
    store[name] = (_Turns.of(turns), value)
    return value


class _Turns:
    """The columns a shared result depends on, to compare another run's turns with."""

    def __init__(self, tid: np.ndarray, dialogue_id: pa.Array, turn_index: np.ndarray) -> None:
        self.tid, self.dialogue_id, self.turn_index = tid, dialogue_id, turn_index

    @classmethod
    def of(cls, turns: pd.DataFrame) -> _Turns:
        return cls(turns["tid"].to_numpy().copy(), _arrow(turns["dialogue_id"]), turns["turn_index"].to_numpy().copy())

    def same(self, turns: pd.DataFrame) -> bool:
        if len(turns) != len(self.tid):
            return False
        if not np.array_equal(turns["tid"].to_numpy(), self.tid):
            return False
        if not np.array_equal(turns["turn_index"].to_numpy(), self.turn_index):
            return False
        return bool(_arrow(turns["dialogue_id"]).equals(self.dialogue_id))


def _arrow(column: pd.Series) -> pa.Array:
    array = pa.array(column.array) if column.dtype == "str" else pa.array(column.astype("str").array)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
