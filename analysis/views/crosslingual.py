"""The Cross-lingual page's views: runs A and B aligned, their agreement over paired turns, the gaps and
the drill-down turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis import diagnostics as D
from analysis.scoring import Scored


def default_pair(run_ids: Sequence[str], mappings: Sequence[dict[str, Any]]) -> tuple[str, str] | None:
    """The pair of runs to compare first: the first manifest mapping whose two runs are both shown,
    else the first two runs."""
    shown = list(run_ids)
    for entry in mappings:
        a, b = entry.get("a"), entry.get("b")
        if a in shown and b in shown and a != b:
            return str(a), str(b)
    return (shown[0], shown[1]) if len(shown) >= 2 else None


def crosslingual_summary(
    a: Scored, b: Scored, *, overrides: tuple[tuple[str, str], ...] = (), min_score: float = 0.5
) -> dict[str, Any]:
    """Everything the cross-lingual page shows for runs A and B: the slot and domain alignment, the
    agreement counts over paired turns, and the gaps by slot, domain and turn depth with their intervals and
    support."""
    from analysis import crosslingual as X

    alignment = X.align_ontologies(a, b, overrides=dict(overrides) or None, min_score=min_score)
    _, counts = D.agreement(a, b)
    matrix = D.agreement_matrix(a, b)
    cells = {str(k): int(v) for k, v in zip(matrix["agreement"], matrix["n_turns"], strict=True)}
    return {
        "alignment": alignment,
        "domains": X.align_domains(alignment),
        "cells": cells,
        "pairing": counts,
        "gaps": {by: X.crosslingual_gaps(a, b, alignment, by=by, support=True) for by in X.GAP_BY},
    }


def crosslingual_turns(
    a: Scored,
    b: Scored,
    *,
    cell: str,
    overrides: tuple[tuple[str, str], ...] = (),
    slot_a: str | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """The paired turns of one agreement cell (optionally where one aligned slot is wrong)."""
    from analysis import crosslingual as X

    alignment = X.align_ontologies(a, b, overrides=dict(overrides) or None) if slot_a else None
    turns = X.drill_down(a, b, cell, alignment=alignment, slot_a=slot_a)
    return turns.head(limit).reset_index(drop=True)
