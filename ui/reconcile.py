"""Streamlit side of convention reconciliation: one `Reconciliation` per run file and convention list,
computed through `ui.compute` and kept whole (its per-pair attributions are computed lazily and kept with it)."""

from __future__ import annotations

from analysis.errors import InputError
from analysis.model import Run
from analysis.reconcile.core import Reconciliation, reconcile


def reconciled(run: Run | str, *, conventions: tuple[str, ...]) -> Reconciliation | str:
    """The run (as loaded from its files, not a scored table: `ui.loaded`) reconciled across `conventions`,
    or the one-line error of its files or of a convention. Through `ui.compute`, which keeps the result
    whole (`data.KEPT_VIEWS`: its per-pair attributions are computed when asked and kept with it), cached
    on the run's files and the convention list."""
    if isinstance(run, str):
        return run
    try:
        return reconcile(run, conventions)
    except (InputError, ValueError) as exc:
        return str(exc)


def default_pair(rec: Reconciliation) -> tuple[str, str] | None:
    """The pair of conventions with the most flipped turns (the first pair when none flips)."""
    counts = rec.flip_counts()
    if counts.empty:
        return None
    best = counts.sort_values("count", ascending=False, kind="stable").iloc[0]
    return str(best["a"]), str(best["b"])
