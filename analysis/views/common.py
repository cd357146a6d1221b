"""What every page's views share: the run scope and its caption, the bootstrap interval of JGA per group,
the dialogue attributes, and which run a chart click names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis import metrics as M
from analysis import stats
from analysis.formats.vectors import VALUE as VECTOR_VALUE
from analysis.formats.vectors import WRONG as VECTOR_WRONG
from analysis.model import INFO_FIELDS, RunMeta
from analysis.scoring import COUNT_COLUMNS, Scored

ABSENT = "—"


# The run metadata shown beside every run (the convention has a column of its own: the label actually scored).
# What a run is, as tables show it: not its convention (a column of its own) nor the schema files it reads.
META_COLUMNS = [f for f in INFO_FIELDS if f not in ("convention", "schema", "train_schema")]


# Columns every scored turns table has, and `listing` (an index into the gold file's slot listings, set for
# files that list slots per turn); anything else is a dialogue attribute (e.g. CrossWOZ `type`).
STANDARD_TURN_COLUMNS = frozenset(
    {"run_id", "tid", "dialogue_id", "turn_index", "user", "system", "n_listed", "pred_missing", "is_final"}
    | {"pred_unparseable", "pred_unparseable_text", "pred_unparseable_reason", "listing"}
    | {"joint_correct", *COUNT_COLUMNS}
)


INTERVAL_RESAMPLES = 1000  # dialogue-bootstrap resamples behind every 95% interval the pages show


def _concat(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _meta(scored: Scored) -> RunMeta:
    return scored.metas[0]


def _slot_label(domain: pd.Series, slot: pd.Series) -> pd.Series:
    return domain.astype(str) + "-" + slot.astype(str)


def scope(scoreds: Scored | Sequence[Scored]) -> dict[str, Any]:
    """What a view covers: the runs, conventions, turn and dialogue counts (for captions).

    >>> from analysis.demo.testing import scored_from_states
    >>> scope(scored_from_states([{}, {"hotel": {"area": "east"}}], [{}, {}]))["n_turns"]
    2
    """
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    conventions = list(dict.fromkeys(s.convention.name for s in items))
    return {
        "runs": [_meta(s).run_id for s in items],
        "conventions": conventions,
        "n_turns": int(sum(len(s.turns) for s in items)),
        "n_dialogues": int(sum(s.turns["dialogue_id"].nunique() for s in items)),
    }


def scope_caption(scoreds: Scored | Sequence[Scored]) -> str:
    """One line for a page caption: convention(s), runs, turns and dialogues."""
    info = scope(scoreds)
    return _caption(info["conventions"], len(info["runs"]), info["n_turns"], info["n_dialogues"])


def board_caption(board: pd.DataFrame, conventions: Sequence[str]) -> str:
    """`scope_caption` from a leaderboard (one row per run, `n_turns`, `n_dialogues`) and the runs'
    convention names: the caption of the stored runs, without their turns."""
    return _caption(
        list(dict.fromkeys(conventions)), len(board), int(board["n_turns"].sum()), int(board["n_dialogues"].sum())
    )


def _caption(conventions: list[str], n_runs: int, n_turns: int, n_dialogues: int) -> str:
    conv = ", ".join(conventions) or "none"
    label = "Convention" if len(conventions) <= 1 else "Conventions"
    return f"{label}: {conv} · {n_runs} run{'s' if n_runs != 1 else ''} · {n_turns:,} turns · {n_dialogues:,} dialogues"


def jga_interval(scored: Scored, *, by: str, resamples: int = INTERVAL_RESAMPLES) -> pd.DataFrame:
    """One run's 95% dialogue-bootstrap JGA interval per `by` group: `by`, jga_low, jga_high. Memoised on
    the scored run, so the dashboard's prefetch can compute it run by run ahead of the views below."""
    ci = stats.bootstrap_ci(scored, "jga", by=by, n_resamples=resamples)
    assert isinstance(ci, pd.DataFrame)
    return ci[[by, "low", "high"]].rename(columns={"low": "jga_low", "high": "jga_high"})


def _with_interval(frame: pd.DataFrame, scored: Scored, by: str, resamples: int) -> pd.DataFrame:
    """`frame` (one run, JGA per `by`) with the 95% dialogue-bootstrap interval as jga_low / jga_high."""
    if resamples <= 0 or not len(frame):
        return frame
    return frame.merge(jga_interval(scored, by=by, resamples=resamples), on=by, how="left")


def attribute_columns(scoreds: Scored | Sequence[Scored]) -> list[str]:
    """Dialogue attributes the turns carry beyond the standard columns (e.g. CrossWOZ `type`)."""
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    names: dict[str, None] = {}
    for s in items:
        for column in s.turns.columns:
            if column not in STANDARD_TURN_COLUMNS and s.turns[column].nunique() <= 100:
                names[column] = None
    return list(names)


def chart_pick(point: dict[str, Any], trace_names: Sequence[Any]) -> tuple[str | None, Any]:
    """(run, x) of a point clicked on a chart with one trace per run (`trace_names`, each trace named
    after its run; an interval band shares its line's name), on a trace several runs share (its entry the
    run of each point, `figures.trace_runs`) or on a run x value heatmap (its trace has no name: the run is
    the row, `y`). The run is None when the point names none.

    >>> chart_pick({"curve_number": 1, "x": "3"}, ["A", "B"]), chart_pick({"curve_number": 0, "x": 2, "y": "B"}, [None])
    (('B', '3'), ('B', 2))
    >>> chart_pick({"curve_number": 0, "point_index": 3, "x": 0, "y": 0.5}, [["A", "A", None, "B"]])
    ('B', 0)
    """
    curve = point.get("curve_number")
    name = trace_names[curve] if isinstance(curve, int) and 0 <= curve < len(trace_names) else None
    if isinstance(name, (list, tuple)):  # a shared trace: the point's own run
        index = point.get("point_index", point.get("point_number"))
        name = name[index] if isinstance(index, int) and 0 <= index < len(name) else None
        return (str(name) if name else None), point.get("x")
    run = name if name else point.get("y")
    return (str(run) if run is not None else None), point.get("x")


def values_note(scored: Scored) -> str:
    """What a page showing slot values says of a run read from a per-slot correctness file, which holds
    right/wrong per slot and no values ("" for any other run).

    >>> from analysis.demo.testing import scored_from_states
    >>> values_note(scored_from_states([{"hotel": {"area": "east"}}], [{}]))
    ''
    """
    return values_note_for(bool(M.valueless_runs(scored)))


def values_note_for(valueless: bool) -> str:
    """`values_note` of runs of which some (`valueless`) come from a file without values."""
    if not valueless:
        return ""
    return (
        "This run comes from a per-slot correctness file (0/1 per slot and turn): it holds no values and no "
        f"gold state. Gold shows {VECTOR_VALUE!r} on every slot, the prediction {VECTOR_VALUE!r} where the slot "
        f"was right and {VECTOR_WRONG!r} where it was wrong; slot precision, recall and F1, value confusions, AGA "
        "and the change-based metrics are n/a. Per-slot accuracy is right / (right + wrong value)."
    )
