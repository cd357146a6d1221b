"""The Review page's vectorised keys and episodes against their literal definitions, on random frames.

`item_keys` (Arrow's element-wise join of components normalised once) must give every row exactly the key
`Item(...).key` gives it, under the four key variants that may cover an error; `_episodes_sorted` (a stable
sort of integer codes) must give the order and episode starts of a stable sort of the values as text.
The frames mix missing values, decomposed and composed accents, separators, `%`, CJK and padding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from analysis.review import Item, item_keys
from analysis.review.analysis import _ABSENT, _episodes_sorted
from analysis.review.items import item_key_variants

VALUES = ["a", "b|c", "é", "e\u0301", " 5%x ", "", None, "日本", "-", "Z"]
NAMES = ["hotel", "taxi", "餐厅", " a|b ", "x%y"]


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    def pick(pool: Sequence[str | None]) -> pd.Series:
        dtype = object if rng.random() < 0.5 else "str"
        return pd.Series([pool[i] for i in rng.integers(0, len(pool), n)], dtype=dtype)

    frame = pd.DataFrame(
        {
            "dataset": pick(NAMES),
            "dialogue_id": pick([*NAMES, "1001", " 7 "]),
            "turn_index": rng.integers(0, 30, n),
            "domain": pick(NAMES),
            "slot": pick(["area", "book day", "区域", "", None]),
            "run_id": pick(["r1", "r|2", "", None]),
        }
    )
    return frame.drop(columns=[c for c in ("domain", "slot", "run_id") if rng.random() < 0.2])


def _literal(frame: pd.DataFrame, with_slot: bool, with_run: bool) -> list[str]:
    keys = []
    for row in frame.astype(object).where(frame.notna(), None).to_dict("records"):
        slot = row.get("slot") if with_slot else None
        keys.append(
            Item(
                dataset=row["dataset"],
                dialogue_id=row["dialogue_id"],
                turn_index=int(row["turn_index"]),
                domain=(row.get("domain") or "") if slot else "",
                slot=slot or None,
                run_id=(row.get("run_id") or "") if with_run else "",
            ).key
        )
    return keys


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_keys_are_the_literal_keys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    combos = [(s, r) for s in (True, False) for r in (True, False)]
    for _ in range(20):
        frame = _frame(rng, int(rng.integers(0, 30)))
        variants = item_key_variants(frame, combos)
        for (with_slot, with_run), variant in zip(combos, variants, strict=True):
            keys = item_keys(frame, with_slot=with_slot, with_run=with_run)
            assert keys.dtype == "str" and keys.index.equals(frame.index)
            assert keys.tolist() == list(variant) == _literal(frame, with_slot, with_run)


def _literal_episodes(errors: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A stable sort of the values as text (missing: `_ABSENT`) and row-by-row comparisons."""
    step = "tid" if "tid" in errors.columns else "turn_index"
    group = ["run_id", "dialogue_id", "domain", "slot"]
    columns = [*group, "gold_display", "pred_display", "outcome"]
    text = {c: [_ABSENT if v is None or v != v else str(v) for v in errors[c].astype(object)] for c in columns}
    steps = errors[step].to_numpy(dtype="int64").tolist()
    order = sorted(range(len(errors)), key=lambda i: (*(text[c][i] for c in group), steps[i]))
    starts = []
    for k, i in enumerate(order):
        prev = order[k - 1] if k else None
        same = prev is not None and all(text[c][i] == text[c][prev] for c in columns) and steps[i] == steps[prev] + 1
        starts.append(not same)
    return np.array(order, dtype="int64"), np.array(starts, dtype=bool)


@pytest.mark.parametrize("seed", range(5))
def test_episode_order_and_starts_are_those_of_the_text(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(20):
        n = int(rng.integers(0, 200))

        def pick(k: int, n: int = n) -> pd.Series:
            return pd.Series([VALUES[i] for i in rng.integers(0, k, n)], dtype="str")

        errors = pd.DataFrame(
            {
                "run_id": pick(3),
                "dialogue_id": pick(5),
                "domain": pick(4),
                "slot": pick(4),
                "gold_display": pick(len(VALUES)),
                "pred_display": pick(len(VALUES)),
                "outcome": pd.Categorical(rng.choice(["wrong_value", "missed", "spurious"], n)),
                "tid": rng.integers(0, 6, n),
                "turn_index": rng.integers(0, 6, n),
            }
        )
        if trial % 3 == 0:
            errors = errors.drop(columns="tid")
        order, starts = _episodes_sorted(errors)
        want_order, want_starts = _literal_episodes(errors)
        assert order.tolist() == want_order.tolist()
        assert starts.tolist() == want_starts.tolist()
