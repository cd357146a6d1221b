"""The Review page's systematic causes (`analysis.review.causes`): a naming mismatch or a value rule is one
item, tagged once for every error episode it causes, with the tag its cause suggests."""

from __future__ import annotations

import streamlit as st

import ui
from analysis.review.causes import cause_items, systematic_causes
from analysis.review.store import AnnotationStore, StoreError
from ui import review


def causes_panel(runs: list[str], store: AnnotationStore) -> None:
    """Pick a run, see its systematic causes, and tag all of a cause's episodes at once."""
    st.subheader("Systematic causes")
    if not ui.toggle(
        "Find the systematic causes of a run's errors (naming mismatches, value rules: scores the run under the "
        "conventions Reconcile compares, a few seconds)",
        state="review_causes",
        default=False,
    ):
        return
    run = ui.select("Run", runs, state="review_cause_run", widget="w_review_cause_run")
    causes = ui.compute(systematic_causes, run, ui.loaded(run))
    if not len(causes):
        st.caption(ui.md(f"No systematic cause found in {run}'s errors."))
        return
    st.caption(
        "One row per cause; its episodes are the queue's items it explains. Pick a cause, check the suggested tag "
        "and tag all its episodes at once (each is then reviewed, by you, with that tag and comment)."
    )
    picked = ui.show_table(
        causes,
        key="review_causes_table",
        name=f"systematic causes {run}",
        select=True,
        columns=["label", "detail", "suggested_tag", "n_episodes", "n_turns"],
        height=240,
    )
    if picked is not None:
        ui.put(review_cause=picked["cause_id"])
    chosen = ui.get("review_cause")
    rows = causes[causes["cause_id"] == chosen].to_dict("records") if chosen else []
    if not rows:
        return
    cause = rows[0]
    form = st.columns([3, 4, 2])
    tags = form[0].multiselect(
        "Tags for all its episodes",
        store.tags,
        default=[cause["suggested_tag"]] if cause["suggested_tag"] in store.tags else [],
        key=f"w_review_cause_tags_{chosen}",
    )
    comment = form[1].text_input("Comment", value=cause["comment"], key=f"w_review_cause_comment_{chosen}")
    if form[2].button(f"Tag all {cause['n_episodes']:,} episodes", key="review_cause_tag"):
        items = ui.compute(cause_items, run, ui.loaded(run), cause_id=chosen)
        try:
            written = store.annotate_many(
                [review.item_of(r) for r in items.to_dict("records")], tags, comment, reviewer=review.reviewer()
            )
        except (ValueError, StoreError) as exc:
            st.error(ui.md(f"not saved: {exc}"), icon=":material/error:")
        else:
            st.success(ui.md(f"{written:,} episodes of {cause['label']} tagged"), icon=":material/check_circle:")
