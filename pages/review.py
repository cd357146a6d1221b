"""Review: the queue of error turns not yet reviewed (or reviewed by others, not by me), progress, tag
counts, agreement per tag between reviewers (Cohen's kappa for two, Krippendorff's alpha for more), and
export/import of the annotations (each exported row with its gold, predicted value and outcome)."""

# The agreement's packages, imported here only so that `ui.prefetch` (which imports what the pages import)
# warms them in the background at server start: sklearn.metrics takes 1-3 s to import cold, which would
# otherwise fall on the first click that shows an agreement.
import krippendorff  # noqa: F401
import sklearn.metrics  # noqa: F401
import streamlit as st

import ui
from analysis.review import figures as figures_review
from analysis.review.analysis import RATING_DEFINITION, review_progress, review_queue, tag_agreement, tag_counts
from analysis.review.store import StoreError
from analysis.scoring import OUTCOMES
from ui import review
from ui.place import COLUMN_LABELS

QUEUE_ROWS = 500
STATUS_LABELS = {
    "unreviewed": "unreviewed",
    "by-others": "reviewed by others, not by me",
    "reviewed": "reviewed",
    "all": "all",
}

st.title("Review")
runs = ui.need_runs()
try:  # the database down or locked: one short message in place, and the page reloads when it is back
    store = review.store()
    annotations = store.annotations() if store is not None else None
except StoreError as exc:
    review.unavailable(exc)
    st.stop()
except ValueError as exc:  # the manifest's [review] settings refused (e.g. a tag over the length limit)
    st.error(str(exc))
    st.stop()
if store is None or annotations is None:
    st.info("Open a workspace: annotations are stored beside its manifest (or in [review] database_url).")
    st.stop()

# --- settings -------------------------------------------------------------------------------------
head = st.columns([2, 3])
who = review.reviewer_box(container=head[0])
head[1].caption(f"Annotations: {ui.md(store.backend)} store · every value and comment below is shown as plain text")

errors = ui.compute(review.review_errors, runs)
choices = review.options(errors)
filters = st.columns([2, 2, 2, 2, 2, 2])
run_filter = ui.multiselect("Runs", runs, state="review_runs", container=filters[0], placeholder="(all selected)")
domain = ui.select(
    "Domain", ["", *choices["domain"]], state="review_domain", container=filters[1], format_func=lambda d: d or "(all)"
)
slot_names = review.options(errors, domain=domain or None)["slot"]
slot = ui.select(
    "Slot", ["", *slot_names], state="review_slot", container=filters[2], format_func=lambda s: s or "(all)"
)
outcome = ui.select(
    "Outcome",
    ["", *[o for o in OUTCOMES if o in choices["outcome"]]],
    state="review_outcome",
    container=filters[3],
    format_func=lambda o: COLUMN_LABELS.get(o, o.replace("_", " ")) if o else "(all errors)",
)
tag = ui.select("Tag", ["", *store.tags], state="review_tag", container=filters[4], format_func=lambda t: t or "(any)")
status = ui.select(
    "Status",
    list(STATUS_LABELS),
    state="review_status",
    container=filters[5],
    format_func=lambda s: STATUS_LABELS.get(s, s),
    help="'reviewed by others, not by me' is the queue of a second opinion (your name above is 'me'); "
    "a tag filter shows reviewed items only",
)
if tag and status not in ("reviewed", "by-others"):
    status = "reviewed"

queue = review_queue(
    errors,
    annotations,
    run_id=run_filter or None,
    domain=domain or None,
    slot=slot or None,
    outcome=outcome or None,
    tag=tag or None,
    status=status,
    me=who,
)
progress = review_progress(errors, annotations)
by_run = review_progress(errors, annotations, by="run_id")

# --- show -----------------------------------------------------------------------------------------
counts = st.columns(4)
counts[0].metric("Reviewed errors", f"{int(progress['n_reviewed'].iloc[0]):,} / {int(progress['n_errors'].iloc[0]):,}")
share = float(progress["share_reviewed"].iloc[0])
counts[1].metric("Share reviewed", "n/a" if share != share else f"{share:.1%}")
counts[2].metric("Tagged gold annotation error", f"{int(progress['n_gold_errors'].iloc[0]):,}")
counts[3].metric("Annotations in the store", f"{len(annotations):,}")
st.caption(
    f"Errors are the wrong, missed and spurious slots of the {len(runs)} selected run(s), each under "
    f"{'its declared convention' if ui.get('convention', 'declared') == 'declared' else ui.md(ui.get('convention'))}. "
    "An error counts as reviewed when any reviewer tagged its slot or its whole turn."
)

st.subheader("Queue")
shown = figures_review.queue_table(queue, limit=QUEUE_ROWS)
st.caption(
    f"{len(queue):,} error item(s) match ({STATUS_LABELS[status]}{', tagged ' + ui.md(tag) if tag else ''})"
    + (f"; the first {QUEUE_ROWS} are listed" if len(queue) > QUEUE_ROWS else "")
    + " · pick a row to tag it or open it in the dialogue viewer"
)
if status == "by-others" and not who:
    st.info("Enter your reviewer name above: until then this lists the items anyone reviewed.", icon=":material/badge:")
picked = ui.show_table(
    shown,
    key="review_queue",
    name="review queue",
    select=True,
    height=320,
    columns=["run_id", "dialogue_id", "turn_index", "slot_name", "outcome", "gold", "predicted", "tags", "reviewers"],
)
if picked is not None:
    ui.put(review_item=picked)
current = ui.get("review_item")
if current is None and len(shown):
    current = {str(k): v for k, v in shown.iloc[0].to_dict().items()}
if current is not None:
    item = review.item_of(current)
    left, right = st.columns([3, 1])
    with left:
        review.tag_form(item, key="review_tag_form", ask_reviewer=False)
    with right:
        st.text(f"gold: {current['gold']}\npredicted: {current['predicted']}\noutcome: {current['outcome']}")
        if st.button("Open in dialogue viewer", key="review_open", icon=":material/forum:"):
            ui.open_dialogue(
                str(current["run_id"]), str(current["dialogue_id"]), int(current["turn_index"]), current["slot_name"]
            )

st.subheader("Tags by domain and slot")
group_by = ui.select("Count per", ["domain", "slot"], state="review_group_by", format_func=str)
ui.show_figure(
    figures_review.tag_counts_bar(tag_counts(annotations, by=("domain", "slot")), by=group_by),
    key="review_tag_counts",
    name="tag counts",
)
st.caption("Progress per run")
ui.show_table(by_run, key="review_progress", name="review progress per run")

st.subheader("Agreement per tag")
reviewers = sorted(set(annotations["reviewer"]))
if len(reviewers) < 2:
    st.info("Agreement needs annotations from two reviewers on the same items.")
else:
    chosen = ui.multiselect("Reviewers", reviewers, state="review_reviewers", placeholder="(all reviewers)")
    if len(chosen) == 1:
        st.info("Agreement needs two reviewers or more: all reviewers are compared.")
    names = chosen if len(chosen) >= 2 else reviewers
    agreement = tag_agreement(annotations, names)
    overall = agreement.per_tag.iloc[-1]
    stats = st.columns(4)
    stats[0].metric(agreement.statistic, "n/a" if overall["value"] != overall["value"] else f"{overall['value']:.3f}")
    stats[1].metric(
        "Observed agreement", "n/a" if overall["observed"] != overall["observed"] else f"{overall['observed']:.3f}"
    )
    stats[2].metric("Items two or more annotated", f"{agreement.n_items:,}")
    stats[3].metric("Items tagged differently", f"{len(agreement.disagreements):,}")
    st.caption(
        f"{ui.md(agreement.statistic)} between {ui.md(', '.join(names))} (all tags: the first line above; "
        f"per tag: the table). {ui.md(RATING_DEFINITION)}"
    )
    ui.show_table(figures_review.tag_agreement_table(agreement), key="review_agreement", name="agreement per tag")
    disagreements = figures_review.reviewer_disagreement_table(agreement)
    st.caption(f"{len(disagreements):,} item(s) tagged differently: who annotated each and the tags each gave")
    ui.show_table(disagreements, key="review_disagreements", name="disagreements between reviewers")

st.subheader("Export and import")
scoreds = review.scored_runs(runs)
ports = st.columns(3)
ports[0].download_button(  # the file is written when the button is clicked, not on every rerun
    "Download CSV",
    lambda: review.export_bytes(annotations, "csv", scoreds),
    file_name="annotations.csv",
    mime="text/csv",
    key="review_csv",
)
ports[1].download_button(
    "Download JSON",
    lambda: review.export_bytes(annotations, "json", scoreds),
    file_name="annotations.json",
    mime="application/json",
    key="review_json",
)


def import_file() -> None:
    upload = st.session_state.get("w_review_import")
    if upload is None:
        st.session_state["review_import_result"] = ("error", "choose a CSV or JSON export first")
        return
    st.session_state["review_import_result"] = review.import_upload(store, upload.name, upload.getvalue())


with ports[2]:
    st.file_uploader("Annotations export (CSV or JSON)", type=["csv", "json"], key="w_review_import")
    st.button("Import", key="review_import", on_click=import_file)
result = st.session_state.pop("review_import_result", None)
if result:
    (st.success if result[0] == "ok" else st.error)(result[1])
st.caption(
    "Each exported row carries the item (run, dialogue, turn, domain, slot), its convention, outcome, gold "
    "and predicted value from the selected runs under the convention in force (empty for an item of no run "
    "or of a run not selected; a whole-turn item: the turn's joint outcome and states), and the reviewer, "
    "tags, comment, times and version. Import reads the stored columns back (the context is recomputed, not "
    "stored) and merges by time: a row replaces the stored one only when it is newer, so importing twice is "
    "a no-op."
)
