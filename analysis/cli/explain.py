"""What `metrics` adds after its numbers: the vocabulary check of every run, and (with `--published`) the
gap to the paper's number decomposed into Reconcile's causes (`analysis.vocabulary`, `analysis.reconcile.gap`).

JSON keys: `vocabulary` (`counts` per kind, `names`, and `naming_fix` when a registered convention maps the
mismatched names: its name and the JGA and micro slot F1 before and after) and `published_gap` (see
`analysis.reconcile.gap.gap_summary`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from analysis.model import Run
from analysis.scoring import Scored

__all__ = ["explain"]


def explain(args: argparse.Namespace, scored: Scored, load: Callable[[], Run], result: dict[str, Any]) -> list[str]:
    """Add the vocabulary check (and the published gap when asked for) to `result`; return its text lines."""
    from analysis.vocabulary import MISMATCH, naming_fix, vocabulary, vocabulary_lines, vocabulary_summary

    own = scored.convention.name
    # The scored slots hold every entry unless the convention's slot scope leaves some unscored (DSTC9 and
    # ConvLab-3 skip a predicted slot the gold turn does not list): only then, or to map a mismatch or
    # decompose a published gap, is the run read again (a warm store's `metrics` parses nothing otherwise).
    run = load() if scored.convention.slot_scope != "all" else None
    table = vocabulary(scored, run)
    published = args.published if args.published is not None else scored.metas[0].published_jga
    if run is None and ((table["kind"] == MISMATCH).any() or published is not None):
        run = load()
    mismatched = run is not None and (table["kind"] == MISMATCH).any()
    fix = naming_fix(run, scored.convention, table, scored) if run is not None and mismatched else None
    result["vocabulary"] = vocabulary_summary(table, fix)
    lines = ["", *vocabulary_lines(table, fix, convention=own)]
    if published is not None and run is not None:
        # Reconcile's modules only here (about 0.03 s of every `metrics` run that has no published number).
        from analysis.reconcile.core import reconcile
        from analysis.reconcile.gap import gap_conventions, gap_lines, gap_summary, published_gap

        rec = reconcile(run, gap_conventions(own))
        target, gap = published_gap(rec, own, published)
        summary = gap_summary(rec, own, published, target, gap)
        result["published_gap"] = summary
        lines += ["", *gap_lines(summary)]
    return lines
