"""Runs whose every scorer-named number is n/a: a convention named after a scorer over gold that scorer never
reads (`analysis.scorer_inputs`). The pages that draw per-domain, per-slot and per-turn numbers leave such a run
out and say why once, in their notice; the headline says n/a with the same reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from analysis import scorer_inputs
from analysis.scoring import Scored


def unread_gold(scoreds: Scored | Sequence[Scored]) -> dict[str, str]:
    """Run id -> why its numbers are n/a, for each run whose gold its convention's scorer never reads;
    {} when the scorer reads every run's gold (as given or prepared).

    >>> from analysis.demo.testing import scored_from_states
    >>> unread_gold(scored_from_states([{"hotel": {"area": "east"}}], [{}]))
    {}
    """
    items = [scoreds] if isinstance(scoreds, Scored) else list(scoreds)
    return unread_of([s.alignment for s in items])


def unread_of(alignments: Sequence[Mapping[str, Mapping[str, object]]]) -> dict[str, str]:
    """`unread_gold` from the runs' alignment reports (a scored run's, or a stored run's header)."""
    out: dict[str, str] = {}
    for alignment in alignments:
        out.update(scorer_inputs.unread_reasons(alignment))
    return out


def unread_notice(reasons: Mapping[str, str]) -> str:
    """The one notice a page gives for the runs it leaves out (`unread_gold`), runs of one reason together.

    >>> print(unread_notice({"a": "TRADE never reads it", "b": "TRADE never reads it"}))
    n/a, not drawn here: a, b (every number under the convention's name is n/a: TRADE never reads it).
    """
    by_reason: dict[str, list[str]] = {}
    for run, reason in reasons.items():
        by_reason.setdefault(reason, []).append(run)
    parts = [
        f"{', '.join(runs)} (every number under the convention's name is n/a: {reason})"
        for reason, runs in by_reason.items()
    ]
    return "n/a, not drawn here: " + "; ".join(parts) + "."
