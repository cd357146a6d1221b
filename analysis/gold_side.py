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


def shared(
    scored: Scored,
    name: str,
    compute: Callable[[], T],
    valid: Callable[[T], bool] | None = None,
    *,
    family: str | None = None,
    kept: int = 0,
) -> T:
    """`compute()` for `scored`'s turns, shared by every single run on the same gold file whose turns are
    the same (`tid`, `dialogue_id`, `turn_index`, row for row); otherwise computed afresh. `valid`: a further
    check of a kept result against this run (what else it was computed from, e.g. with `Columns`), else it
    is computed again. `family`: results whose names start with it, of which the gold file keeps the last
    `kept` (one per convention, say, where each is megabytes)."""
    turns = scored.turns
    if len(scored.metas) != 1 or not len(turns):
        return compute()
    store: dict[str, tuple[Columns, Any]] = scored.gold_side.setdefault(KEY, {})
    found = store.get(name)
    if found is not None and found[0].same(turns) and (valid is None or valid(found[1])):
        return found[1]
    value = compute()
    store[name] = (Columns(turns, TURN_COLUMNS), value)
    if family is not None:
        for older in [n for n in store if n.startswith(family)][:-kept]:
            store.pop(older, None)
    return value


TURN_COLUMNS = ("tid", "dialogue_id", "turn_index")  # what every shared result is computed from


class Columns:
    """A frame's `names` columns as they are now (an absent one as None), to compare another frame with:
    integer and flag columns as numpy copies, others as Arrow strings; equal only if every value is."""

    def __init__(self, frame: pd.DataFrame, names: tuple[str, ...]) -> None:
        self.names = names
        self.data = tuple(_data(frame, name, copy=True) for name in names)

    def same(self, frame: pd.DataFrame) -> bool:
        for name, kept in zip(self.names, self.data, strict=True):
            now = _data(frame, name)
            if kept is None or now is None:
                if kept is not now:
                    return False
            elif isinstance(kept, np.ndarray):
                if not isinstance(now, np.ndarray) or kept.dtype != now.dtype or not np.array_equal(kept, now):
                    return False
            elif isinstance(now, np.ndarray) or not kept.equals(now):
                return False
        return True


def _data(frame: pd.DataFrame, name: str, *, copy: bool = False) -> np.ndarray | pa.Array | None:
    if name not in frame.columns:
        return None
    column = frame[name]
    if column.dtype.kind in "iub":
        values = column.to_numpy()
        return values.copy() if copy else values
    return arrow_strings(column)


def arrow_strings(column: pd.Series) -> pa.Array:
    """A column as one pyarrow string array (no copy for a single-chunk `str` column)."""
    array = pa.array(column.array) if column.dtype == "str" else pa.array(column.astype("str").array)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
