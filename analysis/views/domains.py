"""The Domains page's views: JGA per domain (with its interval) and per dialogue attribute."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis import metrics as M
from analysis.scoring import Scored
from analysis.views.common import INTERVAL_RESAMPLES, _concat, _with_interval


def domain_jga(scoreds: Sequence[Scored], *, resamples: int = INTERVAL_RESAMPLES) -> pd.DataFrame:
    """Per run and domain: JGA over the turns where the domain occurs (see `joint_goal_accuracy`), with
    its 95% dialogue-bootstrap interval."""
    return _concat([_domain_jga(s, resamples) for s in scoreds])


def _domain_jga(scored: Scored, resamples: int) -> pd.DataFrame:
    if scored.convention.name == "sgd":  # per service, the SGD evaluator's joint goal accuracy
        from analysis.sgd.views import domain_rows

        rows = domain_rows(scored, resamples)
        if rows is not None:
            return rows
    return _with_interval(M.joint_goal_accuracy(scored, by=["run_id", "domain"]), scored, "domain", resamples)


def jga_by_attribute(scoreds: Sequence[Scored], *, attribute: str) -> pd.DataFrame:
    """JGA per run and value of a dialogue attribute; runs without the attribute are left out."""
    frames = [M.joint_goal_accuracy(s, by=["run_id", attribute]) for s in scoreds if attribute in s.turns.columns]
    return _concat(frames)
