"""The Overview's, Slots' and Domains' explanation of a run's number: the vocabulary check (naming
mismatches marked), and the gap to the paper's number decomposed into Reconcile's causes, each cause a
click away from its turns in the Dialogue viewer (`analysis.vocabulary`, `analysis.reconcile.gap`)."""

from __future__ import annotations

from typing import Any

import streamlit as st

import ui
from analysis.reconcile.gap import GAP_LABELS, gap_conventions, gap_lines, gap_summary, gap_turns, published_gap
from analysis.vocabulary import VocabularyReport, mismatch_warning, vocabulary_report
from ui import reconcile as reconcile_data


def report(run: str) -> VocabularyReport:
    """The run's vocabulary check under the sidebar's convention (cached)."""
    return ui.compute(vocabulary_report, run, ui.loaded(run))


def mark_slots(run: str) -> None:
    """One warning naming every slot a naming mismatch concerns, with the number under the convention that
    maps the names (the Slots and Domains pages; `analysis.vocabulary.mismatch_warning`)."""
    text = mismatch_warning(report(run))
    if text:
        st.warning(ui.md(text), icon=":material/warning:")


def overview_section(run: str) -> None:
    """The Overview's section of the focus run: its vocabulary check, and the gap to a published number."""
    found = report(run)
    st.subheader(ui.md(f"Vocabulary and the published number — {run}"))
    mark_slots(run)
    st.caption(ui.md(found.lines[0]))
    if len(found.table):
        ui.show_table(
            found.table,
            key="overview_vocabulary",
            name=f"vocabulary {run}",
            columns=[
                "kind",
                "domain",
                "slot",
                "gold_domain",
                "gold_slot",
                "entries",
                "turns",
                "shared_turns",
                "examples",
            ],
            height=240,
        )
    published = st.number_input(
        "Published JGA (the paper's number, a fraction or a percentage)",
        min_value=0.0,
        max_value=100.0,
        value=found.published_jga,
        step=0.01,
        format="%.4f",
        key=f"published_jga_{run}",
        help="The manifest key published_jga fills this in; the gap is decomposed into Reconcile's causes.",
    )
    if published is None:
        st.caption("Give the paper's number to see the gap to it decomposed into causes.")
        return
    rec = ui.compute(reconcile_data.reconciled, ui.loaded(run), conventions=tuple(gap_conventions(found.convention)))
    if isinstance(rec, str):
        st.error(ui.md(f"{run} cannot be reconciled: {rec}"))
        return
    target, table = published_gap(rec, found.convention, published)
    summary = gap_summary(rec, found.convention, published, target, table)
    if summary.get("not_decomposed"):  # no JGA under the run's own convention: no gap, and why
        st.info(ui.md(gap_lines(summary)[0]), icon=":material/info:")
        return
    base = float(rec.metrics.loc[found.convention, "jga"])
    st.caption(
        ui.md(
            f"Gap {published if published <= 1 else published / 100:.4f} − {base:.4f} under {found.convention}; the "
            f"nearest convention is {target} ({float(rec.metrics.loc[target, 'jga']):.4f}). Each cause's share is "
            "exact turn by turn; what no convention switch explains is its own row. Pick a cause to list its turns."
        )
    )
    picked = ui.show_table(
        table,
        key="overview_gap",
        name=f"gap to the published JGA {run}",
        select=True,
        columns=["label", "jga_change", "share", "turns", "turns_up", "turns_down"],
    )
    cause = _picked_cause(picked)
    if cause is None:
        return
    turns = gap_turns(rec, found.convention, target, cause)
    st.text(f"{GAP_LABELS[cause]}: {len(turns)} turn(s); pick one to open it in the dialogue viewer")
    turn = ui.show_table(turns, key="overview_gap_turns", name=f"gap turns {run} {cause}", select=True, height=280)
    if turn is not None:
        ui.open_dialogue(run, str(turn["dialogue_id"]), int(turn["turn_index"]))


def _picked_cause(row: dict[str, Any] | None) -> str | None:
    if row is not None:
        ui.put(overview_gap_cause=row["cause"])
    cause = ui.get("overview_gap_cause")
    return cause if cause in GAP_LABELS and cause != "unexplained" else None
