"""Which of many selected runs a chart draws: the best few by a chosen metric, or those a search matches, and
the caption that says so (issue 43: a sweep of 1,000 runs is not drawn as 1,000 bars or lines)."""

from __future__ import annotations

import pandas as pd

from analysis import registry as R
from analysis.suite import LABELS

CHART_RUNS = 20  # runs a chart draws at most: beyond that, bars and lines can no longer be told apart


def chart_runs(
    board: pd.DataFrame, *, metric: str, search: str = "", limit: int = CHART_RUNS, verb: str = "Drawn"
) -> tuple[list[str], str]:
    """The run ids of `board` (a leaderboard: `run_id` and `metric` columns) a chart draws, and a caption
    saying which they are: every run when there are at most `limit`; else those whose id contains `search`
    (case-insensitive), the `limit` best by `metric` (its registry direction; a run without a value last,
    ties in the board's order). The caption (starting with `verb`) is empty when every run is drawn.

    >>> board = pd.DataFrame({"run_id": ["a", "b", "c"], "jga": [0.5, 0.7, float("nan")]})
    >>> chart_runs(board, metric="jga", limit=2)
    (['b', 'a'], 'Drawn: the 2 best of the 3 selected runs by JGA; search for others.')
    >>> chart_runs(board, metric="jga", search="C", limit=2)
    (['c'], "Drawn: the 1 run of the 3 selected whose name contains 'C'.")
    """
    n = len(board)
    if n <= limit and not search:
        return [str(r) for r in board["run_id"]], ""
    label = LABELS.get(metric, metric)
    found = board[board["run_id"].astype(str).str.contains(search, case=False, regex=False)] if search else board
    higher = R.get(metric).higher_is_better if metric in R.NAMES else True
    ranked = found.sort_values(metric, ascending=not higher, kind="stable", na_position="last")
    shown = [str(r) for r in ranked["run_id"].head(limit)]
    if search:
        more = f", the {len(shown)} best by {label}" if len(found) > limit else ""
        match = f"{len(found):,} run{'s' if len(found) != 1 else ''}"
        return shown, f"{verb}: the {match} of the {n:,} selected whose name contains {search!r}{more}."
    return shown, f"{verb}: the {len(shown)} best of the {n:,} selected runs by {label}; search for others."
