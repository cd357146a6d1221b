"""Streamlit side of convention reconciliation: one `Reconciliation` per run file and convention list,
computed through `ui.compute` and kept whole (its per-pair attributions are computed lazily and kept with it)."""

from __future__ import annotations

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.model import Run
from analysis.reconcile.core import DEFAULT_CONVENTIONS, Reconciliation, reconcile
from analysis.reconcile.gap import gap_conventions, informative_pair


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


def default_conventions(run: Run | str) -> tuple[str, ...]:
    """The conventions the page opens with: the run's own, its lenient variant, then the default ones."""
    if isinstance(run, str):
        return DEFAULT_CONVENTIONS
    return tuple(gap_conventions(run.meta.convention))


def default_pair(rec: Reconciliation) -> tuple[str, str] | None:
    """The informative pair: the run's own convention (the first listed when it is not among them) and the
    convention that flips the most turns against it (None when fewer than two conventions)."""
    return informative_pair(rec)


def lenient_offer(rec: Reconciliation, a: str, b: str) -> str | None:
    """The lenient variant of a or b to offer when slot naming causes flips between them and it is not shown."""
    if not rec.causes(a, b).get("slot_alias"):
        return None
    for name in (a, b):
        lenient = f"{name}-lenient"
        if lenient in CONVENTIONS and lenient not in rec.conventions:
            return lenient
    return None
