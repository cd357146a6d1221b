"""The report's explanation of each run's number: its vocabulary check (naming mismatches among the
comparability warnings at the top) and, for a run whose manifest entry gives `published_jga`, the gap to
it decomposed into Reconcile's causes (`analysis.vocabulary`, `analysis.reconcile.gap`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

from analysis.model import Run
from analysis.reconcile.core import reconcile
from analysis.reconcile.gap import gap_conventions, gap_lines, gap_summary, published_gap
from analysis.scoring import Scored
from analysis.vocabulary import MISMATCH, four_decimals, vocabulary_report
from analysis.workspace import Workspace, load_entry

__all__ = ["explain_tables"]

VOCABULARY_SHOWN = {
    "kind": "kind",
    "domain": "domain",
    "slot": "slot",
    "gold_domain": "gold domain",
    "gold_slot": "gold slot",
    "entries": "entries",
    "turns": "turns",
    "shared_turns": "same value, same turn",
    "examples": "examples",
}
GAP_SHOWN = {
    "label": "cause",
    "jga_change": "JGA change",
    "share": "share of the gap",
    "turns": "turns",
    "turns_up": "right only under the reference",
    "turns_down": "right only here",
}


def _slug(text: str) -> str:
    return re.sub(r"[^\w.]+", "-", text.lower(), flags=re.UNICODE).strip("-.") or "x"


def _loaded(workspace: Workspace, name: str) -> Run | None:
    if name in workspace.runs:
        return workspace.runs[name]
    entry = next((e for e in workspace.entries if e.name == name), None)
    return load_entry(entry) if entry is not None else None


def explain_tables(
    workspace: Workspace, scoreds: Mapping[str, Scored]
) -> tuple[list[tuple[str, str, pd.DataFrame]], list[str]]:
    """(tables as (name, caption, frame), warnings): per run with names only one side uses, its vocabulary
    table; per run with a published number, its gap table; one warning per run with a naming mismatch."""
    tables: list[tuple[str, str, pd.DataFrame]] = []
    warnings: list[str] = []
    for name, scored in scoreds.items():
        run = _loaded(workspace, name)
        found = vocabulary_report(scored, run)
        slug = _slug(name)
        if len(found.table):
            tables.append(
                (
                    f"vocabulary-{slug}",
                    f"Vocabulary of run {name} under {found.convention}: " + found.lines[0].split(": ", 1)[1] + ".",
                    found.table[list(VOCABULARY_SHOWN)].rename(columns=VOCABULARY_SHOWN),
                )
            )
        mismatches = int((found.table["kind"] == MISMATCH).sum())
        if mismatches:
            text = f"run {name}: {mismatches} naming mismatch(es) under {found.convention} (" + "; ".join(
                f"{r.domain}-{r.slot} vs gold {r.gold_domain}-{r.gold_slot}"
                for r in found.table[found.table["kind"] == MISMATCH].itertuples()
            )
            if found.fix is not None and found.fix.convention:
                jga = four_decimals(found.fix.metrics.get("jga"))
                text += f"); JGA {jga} under {found.fix.convention}, which maps the names"
            else:
                text += ")"
            warnings.append(text)
        if found.published_jga is not None and run is not None:
            rec = reconcile(run, gap_conventions(found.convention))
            target, gap = published_gap(rec, found.convention, found.published_jga)
            summary = gap_summary(rec, found.convention, found.published_jga, target, gap)
            if summary.get("not_decomposed"):  # no JGA under its own convention: said, no table
                warnings.append(f"run {name}: " + gap_lines(summary)[0])
                continue
            tables.append(
                (
                    f"published-gap-{slug}",
                    f"Gap of run {name} to its published JGA {summary['published']:.4f}: {summary['jga']:.4f} under "
                    f"{found.convention}, {summary['reference_jga']:.4f} under the nearest convention {target}; "
                    "each cause's share is exact turn by turn, the last row is what no convention switch explains.",
                    gap[list(GAP_SHOWN)].rename(columns=GAP_SHOWN),
                )
            )
    return tables, warnings
